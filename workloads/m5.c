// SPDX-License-Identifier: GPL-2.0
/*
 * m5 - issue one gem5 m5 op from a shell script (/init): the form comes
 * from m5ops= or $LOCKSTUDY_M5OPS (off: do nothing, exit 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m5ops.h"

static const struct {
	const char *name;
	enum m5_func func;
} ops[] = {
	{ "exit", M5_EXIT },
	{ "resetstats", M5_RESET_STATS },
	{ "dumpstats", M5_DUMP_STATS },
	{ "checkpoint", M5_CHECKPOINT },
	{ "workbegin", M5_WORK_BEGIN },
	{ "workend", M5_WORK_END },
};

static void usage(FILE *out)
{
	unsigned int i;

	fprintf(out, "usage: m5 [m5ops=off|inst|addr] OP\nOP:");
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		fprintf(out, " %s", ops[i].name);
	fprintf(out, "\nThe form defaults to $%s, else off (a no-op).\n", M5OPS_ENV);
}

int main(int argc, char **argv)
{
	const char *form = NULL;
	char err[256];
	unsigned int i;
	int a = 1;

	if (a < argc && !strncmp(argv[a], "m5ops=", 6))
		form = argv[a++] + 6;
	if (a < argc && (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (a + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (m5ops_init(form, err, sizeof(err))) {
		fprintf(stderr, "m5: error: %s\n", err);
		return 1;
	}
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		if (!strcmp(argv[a], ops[i].name)) {
			m5op(ops[i].func, 0, 0);
			return 0;
		}
	}
	fprintf(stderr, "m5: error: unknown op '%s'\n", argv[a]);
	usage(stderr);
	return 2;
}
