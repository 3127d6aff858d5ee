// SPDX-License-Identifier: GPL-2.0
/*
 * m5 - issue one gem5 m5 op from a shell script (/init): the form comes
 * from m5ops= or $LOCKSTUDY_M5OPS (off: do nothing, exit 0).
 *
 * `m5 readfile` copies the file gem5 was given for the guest (its
 * `readfile` parameter; lockstudy's gem5 run passes the run spec) to
 * stdout, chunk by chunk until gem5 returns 0 bytes. Without a file, or
 * with the form off, it prints nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m5ops.h"

#define READFILE_CHUNK	(64 * 1024)
/*
 * More than this is not a run spec: the op did not reach gem5 (under
 * QEMU the "addr" page is the BIOS ROM, and the load returns its bytes).
 */
#define READFILE_MAX	(1024 * 1024)

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
	{ "readfile", M5_READ_FILE },
};

static char chunk[READFILE_CHUNK];

static int read_file(void)
{
	uint64_t offset = 0, got;

	for (;;) {
		/* gem5 writes through the page tables: map every page first */
		memset(chunk, 0, sizeof(chunk));
		got = m5_read_file(chunk, sizeof(chunk), offset);
		if (!got)
			break;
		if (got > sizeof(chunk) || offset + got > READFILE_MAX) {
			fprintf(stderr, "m5: error: readfile returned %llu bytes at offset %llu for a %zu-byte buffer (at most %d in all): not gem5?\n",
				(unsigned long long)got, (unsigned long long)offset, sizeof(chunk), READFILE_MAX);
			return 1;
		}
		if (fwrite(chunk, 1, got, stdout) != got) {
			perror("m5: error: readfile: writing stdout");
			return 1;
		}
		offset += got;
	}
	if (fflush(stdout)) {
		perror("m5: error: readfile: writing stdout");
		return 1;
	}
	return 0;
}

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
			if (ops[i].func == M5_READ_FILE)
				return read_file();
			m5op(ops[i].func, 0, 0);
			return 0;
		}
	}
	fprintf(stderr, "m5: error: unknown op '%s'\n", argv[a]);
	usage(stderr);
	return 2;
}
