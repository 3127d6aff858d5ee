// SPDX-License-Identifier: GPL-2.0
/* errors.c - see errors.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

void vprint_error(const char *program, int errnum, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: error: ", program);
	vfprintf(stderr, fmt, ap);
	if (errnum)
		fprintf(stderr, ": %s", strerror(errnum));
	fputc('\n', stderr);
}

size_t split_argument(const char *arg, void (*usage)(void), bool *check_only, const char **value)
{
	const char *eq = strchr(arg, '=');

	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		usage();
		exit(0);
	}
	if (!strcmp(arg, "--check")) {
		*check_only = true;
		return 0;
	}
	if (!eq || eq == arg)
		die(0, "argument '%s': expected key=value (see --help)", arg);
	*value = eq + 1;
	return eq - arg;
}
