/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* abi_probe.c's entry point. */
#ifndef ABI_PROBE_H
#define ABI_PROBE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the calls against the daemon at path and writes every value they return to out, one
 * "key=value" line each. Returns 0, or -1 after a "FAIL ..." line when a call did not do what
 * the script (test_abi_compat.cpp) makes it do, or memory past a structure was written. */
int abi_probe(const char *path, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
