/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* c_api_smoke.c's entry point: 0, or -1 with the failed check in err. */
#ifndef C_API_SMOKE_H
#define C_API_SMOKE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int c_api_smoke(const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
