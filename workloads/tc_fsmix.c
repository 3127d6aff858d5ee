// SPDX-License-Identifier: GPL-2.0
/*
 * fsmix - a dbench-like file-system mix (seed 000: create, write, read,
 * stat, rename and unlink from a number of clients, mostly in the page
 * and dentry caches).
 *
 * Each copy (a "client") works in its own directory under dir= on a
 * ring of files= slots. One iteration takes the next slot and, if it
 * holds a file, reads it back and checks every byte, stat()s it, renames
 * it and unlinks it; then it creates a new file there and writes size=
 * bytes of a pattern that names the client, the slot and the file's
 * generation, so a read can never pass on stale or foreign data.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

enum { C_CREATE, C_WRITE_BYTES, C_READ_BYTES, C_UNLINK };

#define NAME_BYTES	32	/* room for "/f<slot>" after the directory */

struct fsmix_copy {
	char dir[PATH_MAX - NAME_BYTES];
	unsigned long long *generation;	/* per slot; 0 = empty */
	unsigned long long next_generation;
	unsigned char *buf;
	size_t size;
	unsigned int files;
};

static const struct tc_param params[] = {
	{ "dir", TC_STR, ".", 0, 0, "directory under which each client makes its own (ext2 or tmpfs)" },
	{ "files", TC_UINT, "16", 1, 65536, "files in each client's working set" },
	{ "size", TC_UINT, "4096", 1, 1 << 20, "bytes per file" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void fill(unsigned char *buf, size_t size, int client, unsigned int slot,
		 unsigned long long gen)
{
	uint32_t x = (uint32_t)(client * 2654435761u) ^ (slot * 40503u) ^ (uint32_t)gen;
	size_t i;

	for (i = 0; i < size; i++) {
		x = x * 1103515245u + 12345u;	/* a cheap, deterministic byte stream */
		buf[i] = x >> 24;
	}
}

static void slot_path(const struct fsmix_copy *f, char *path, const char *prefix, unsigned int slot)
{
	snprintf(path, PATH_MAX, "%s/%s%u", f->dir, prefix, slot);
}

static void check_file(struct copy_ctx *c, unsigned int slot, unsigned long long *ops)
{
	struct fsmix_copy *f = c->priv;
	unsigned char *want = f->buf + f->size;
	char path[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	slot_path(f, path, "f", slot);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(errno, "open %s", path);
	n = read(fd, f->buf, f->size + 1);
	if (n != (ssize_t)f->size)
		die(n < 0 ? errno : 0, "read %s: got %zd bytes, expected %zu", path, n, f->size);
	close(fd);
	fill(want, f->size, c->index, slot, f->generation[slot]);
	if (memcmp(f->buf, want, f->size))
		die(0, "%s: content differs from what was written", path);
	c->counters[C_READ_BYTES] += n;
	if (stat(path, &st))
		die(errno, "stat %s", path);
	if ((size_t)st.st_size != f->size || !S_ISREG(st.st_mode))
		die(0, "stat %s: size %lld, expected %zu", path, (long long)st.st_size, f->size);
	*ops += 2;
}

static void fsmix_copy_init(struct copy_ctx *c)
{
	struct fsmix_copy *f = calloc(1, sizeof(*f));

	if (!f)
		die(errno, "out of memory");
	f->files = param_uint(c->run, "files");
	f->size = param_uint(c->run, "size");
	f->generation = calloc(f->files, sizeof(*f->generation));
	f->buf = malloc(2 * f->size + 1);
	if (!f->generation || !f->buf)
		die(errno, "out of memory");
	if (snprintf(f->dir, sizeof(f->dir), "%s/fsmix.%d.%d", param_str(c->run, "dir"),
		     (int)getpid(), c->index) >= (int)sizeof(f->dir))
		die(0, "dir=%s: path too long", param_str(c->run, "dir"));
	if (mkdir(f->dir, 0755))
		die(errno, "mkdir %s", f->dir);
	c->priv = f;
}

static unsigned long long fsmix_iteration(struct copy_ctx *c)
{
	struct fsmix_copy *f = c->priv;
	unsigned int slot = c->iterations % f->files;
	char path[PATH_MAX], renamed[PATH_MAX];
	unsigned long long ops = 0;
	ssize_t n;
	int fd;

	slot_path(f, path, "f", slot);
	if (f->generation[slot]) {
		check_file(c, slot, &ops);
		slot_path(f, renamed, "r", slot);
		if (rename(path, renamed))
			die(errno, "rename %s %s", path, renamed);
		if (unlink(renamed))
			die(errno, "unlink %s", renamed);
		c->counters[C_UNLINK]++;
		ops += 2;
	}
	f->generation[slot] = ++f->next_generation;
	fill(f->buf, f->size, c->index, slot, f->generation[slot]);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die(errno, "create %s", path);
	n = write(fd, f->buf, f->size);
	if (n != (ssize_t)f->size)
		die(n < 0 ? errno : 0, "write %s: %zd of %zu bytes", path, n, f->size);
	if (close(fd))
		die(errno, "close %s", path);
	c->counters[C_CREATE]++;
	c->counters[C_WRITE_BYTES] += n;
	return ops + 2;
}

static void fsmix_copy_fini(struct copy_ctx *c)
{
	struct fsmix_copy *f = c->priv;
	unsigned long long ops = 0;
	char path[PATH_MAX];
	unsigned int slot;

	for (slot = 0; slot < f->files; slot++) {
		if (!f->generation[slot])
			continue;
		check_file(c, slot, &ops);
		slot_path(f, path, "f", slot);
		if (unlink(path))
			die(errno, "unlink %s", path);
		c->counters[C_UNLINK]++;
	}
	if (rmdir(f->dir))	/* fails if anything unexpected is left */
		die(errno, "rmdir %s", f->dir);
	if (c->counters[C_CREATE] != c->counters[C_UNLINK])
		die(0, "client %d: %llu files created, %llu unlinked", c->index,
		    c->counters[C_CREATE], c->counters[C_UNLINK]);
	free(f->generation);
	free(f->buf);
	free(f);
}

static const char *const counters[] = { "files_created", "bytes_written", "bytes_read_verified", "files_unlinked", NULL };

const struct testcase testcase = {
	.name = "fsmix",
	.seed = "000",
	.summary = "dbench-like mix: create, write, read, stat, rename, unlink in per-client directories",
	.ops_unit = "one create, write, read, stat, rename or unlink",
	.params = params,
	.counter_names = counters,
	.modes = TC_THREADS | TC_PROCESSES,
	.windows = TC_WINDOW_ITERATIONS | TC_WINDOW_SECONDS,
	.default_warmup = 64,
	.default_iterations = 2000,
	.copy_init = fsmix_copy_init,
	.iteration = fsmix_iteration,
	.copy_fini = fsmix_copy_fini,
};
