/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* abi_probe() as a program: abi_probe SOCKET, the lines on stdout; exit 0, or 1 on a FAIL. */
#include <stdio.h>

#include "abi_probe.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SOCKET\n", argv[0]);
		return 2;
	}
	return abi_probe(argv[1], stdout) == 0 ? 0 : 1;
}
