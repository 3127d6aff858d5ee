// SPDX-License-Identifier: GPL-2.0
/*
 * write1b - one-byte write() calls into a file, what `dd bs=1` does
 * (seed 001: the cost of fget()/fput() and the page-cache path per
 * write, SMP against UP).
 *
 * Each copy writes its own file in dir=; byte n of the file is
 * n % PATTERN_MODULUS, so the check at the end reads the file back and
 * knows every byte. Threads share one fd table (fget/fput contention
 * on files_struct), processes do not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define PATTERN_MODULUS	251	/* prime: the pattern never lines up with pages */
#define VERIFY_CHUNK	65536

struct write1b_copy {
	int fd;
	unsigned long long written;
	char path[PATH_MAX];
};

static const struct tc_param params[] = {
	{ "dir", TC_STR, ".", 0, 0, "directory for the per-copy files (ext2 or tmpfs)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void write1b_copy_init(struct copy_ctx *c)
{
	struct write1b_copy *w = calloc(1, sizeof(*w));

	if (!w)
		die(errno, "out of memory");
	snprintf(w->path, sizeof(w->path), "%s/write1b.%d.%d",
		 param_str(c->run, "dir"), (int)getpid(), c->index);
	w->fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (w->fd < 0)
		die(errno, "open %s", w->path);
	c->priv = w;
}

static unsigned long long write1b_iteration(struct copy_ctx *c)
{
	struct write1b_copy *w = c->priv;
	char byte = w->written % PATTERN_MODULUS;
	ssize_t n = write(w->fd, &byte, 1);

	if (n != 1)
		die(n < 0 ? errno : 0, "write of byte %llu to %s returned %zd",
		    w->written, w->path, n);
	w->written++;
	return 1;
}

static void write1b_copy_fini(struct copy_ctx *c)
{
	static __thread char buf[VERIFY_CHUNK];
	struct write1b_copy *w = c->priv;
	unsigned long long off = 0;
	struct stat st;
	ssize_t n, i;
	int fd;

	if (fstat(w->fd, &st))
		die(errno, "fstat %s", w->path);
	if ((unsigned long long)st.st_size != w->written)
		die(0, "%s: size %lld, expected %llu bytes written",
		    w->path, (long long)st.st_size, w->written);
	if (close(w->fd))
		die(errno, "close %s", w->path);
	fd = open(w->path, O_RDONLY);
	if (fd < 0)
		die(errno, "reopen %s", w->path);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++, off++)
			if ((unsigned char)buf[i] != off % PATTERN_MODULUS)
				die(0, "%s: byte %llu is %u, expected %llu", w->path, off,
				    (unsigned char)buf[i], off % PATTERN_MODULUS);
	}
	if (n < 0)
		die(errno, "read %s", w->path);
	if (off != w->written)
		die(0, "%s: read back %llu bytes, expected %llu", w->path, off, w->written);
	close(fd);
	if (unlink(w->path))
		die(errno, "unlink %s", w->path);
	c->counters[0] = w->written;
	free(w);
}

static void write1b_report(const struct run_ctx *run, struct json *json)
{
	json_double(json, "writes_per_s", run->wall_s > 0 ? sum_ops(run) / run->wall_s : 0);
	json_double(json, "us_per_write", sum_ops(run) ? run->wall_s * 1e6 * run->copies / sum_ops(run) : 0);
}

static const char *const counters[] = { "bytes_verified", NULL };

/* seed 001: the fd lookup lock is the files_struct lock (lockstudy.fdlock=) */
static const char *const lock_requests[] = { "files", NULL };

const struct testcase testcase = {
	.name = "write1b",
	.lock_requests = lock_requests,
	.seed = "001",
	.summary = "1-byte write() loop into a per-copy file, verified by reading it back",
	.ops_unit = "one 1-byte write()",
	.params = params,
	.counter_names = counters,
	.modes = TC_THREADS | TC_PROCESSES,
	.windows = TC_WINDOW_ITERATIONS | TC_WINDOW_SECONDS,
	.default_warmup = 1000,
	.default_iterations = 100000,
	.copy_init = write1b_copy_init,
	.iteration = write1b_iteration,
	.copy_fini = write1b_copy_fini,
	.report = write1b_report,
};
