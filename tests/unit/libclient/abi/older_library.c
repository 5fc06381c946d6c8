/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* A stand-in for a librdmamcast.so.1 older than RDMAMCAST_1.5: the soname and the version nodes
 * of librdmamcast 0.1.0 (0.1.0/librdmamcast.map), which is all the dynamic loader looks at
 * before it refuses a program that needs a node the library does not have. */
int rdmamcast_older_library(void);
int rdmamcast_older_library(void) { return 0; }
