// SPDX-License-Identifier: GPL-2.0
/*
 * samefile - an AIM7 short-like mix on one file and one directory (seed
 * 004: the dentry's reference count, updated under d_lock or by lockref
 * cmpxchg, on the file and on its parent).
 *
 * setup makes one directory under dir= holding one file, and makes it
 * the working directory of every copy. One iteration: stat() the file
 * and check its inode and size; open() and close() it; getcwd() and
 * check the path; create a file of the copy's own in the same directory
 * and unlink it. All names are relative, so every lookup starts at the
 * shared directory's dentry.
 *
 * ops=stat makes an iteration four stat()s of the file and nothing else:
 * each leaves the RCU path walk by taking a reference on the file's
 * dentry (lockref_get_not_dead()) and drops it (dput()), so the dentry's
 * lockref is the line every CPU updates, with no directory lock or block
 * allocation in between (seed 004's precondition).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "harness.h"

#define TARGET		"target"
#define TARGET_BYTES	512
#define OPS_PER_ITERATION	4

static char workdir[PATH_MAX], olddir[PATH_MAX];
static ino_t target_ino;
static bool stat_only;

static const struct tc_param params[] = {
	{ "dir", TC_STR, ".", 0, 0, "directory in which the shared directory is made (ext2 or tmpfs)" },
	{ "ops", TC_STR, "mix", 0, 0, "mix: stat, open+close, getcwd, create+unlink; stat: four stat()s of the file" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void samefile_setup(struct run_ctx *run)
{
	char buf[TARGET_BYTES], path[PATH_MAX];
	char request[sizeof("path ") + PATH_MAX + sizeof(TARGET)];
	struct stat st;
	int fd;

	if (strcmp(param_str(run, "ops"), "mix") && strcmp(param_str(run, "ops"), "stat"))
		die(0, "ops=%s: expected mix or stat", param_str(run, "ops"));
	stat_only = !strcmp(param_str(run, "ops"), "stat");
	if (!getcwd(olddir, sizeof(olddir)))
		die(errno, "getcwd");
	snprintf(path, sizeof(path), "%s/samefile.%d", param_str(run, "dir"), (int)getpid());
	if (mkdir(path, 0755))
		die(errno, "mkdir %s", path);
	if (chdir(path))
		die(errno, "chdir %s", path);
	if (!getcwd(workdir, sizeof(workdir)))
		die(errno, "getcwd");
	memset(buf, 's', sizeof(buf));
	fd = open(TARGET, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != sizeof(buf) || close(fd))
		die(errno, "create %s/%s", workdir, TARGET);
	if (stat(TARGET, &st))
		die(errno, "stat %s", TARGET);
	target_ino = st.st_ino;
	/* seed 004: the file's dentry lockref, and its directory's */
	snprintf(request, sizeof(request), "path %s/%s", workdir, TARGET);
	register_locks(request);
}

static void stat_target(void)
{
	struct stat st;

	if (stat(TARGET, &st))
		die(errno, "stat %s", TARGET);
	if (st.st_ino != target_ino || st.st_size != TARGET_BYTES)
		die(0, "stat %s: inode %lu size %lld, expected %lu and %d", TARGET,
		    (unsigned long)st.st_ino, (long long)st.st_size,
		    (unsigned long)target_ino, TARGET_BYTES);
}

static unsigned long long samefile_iteration(struct copy_ctx *c)
{
	char cwd[PATH_MAX], name[32];
	int fd, i;

	if (stat_only) {
		for (i = 0; i < OPS_PER_ITERATION; i++)
			stat_target();
		c->counters[0]++;
		return OPS_PER_ITERATION;
	}
	stat_target();
	fd = open(TARGET, O_RDONLY);
	if (fd < 0)
		die(errno, "open %s", TARGET);
	if (close(fd))
		die(errno, "close %s", TARGET);
	if (!getcwd(cwd, sizeof(cwd)))
		die(errno, "getcwd");
	if (strcmp(cwd, workdir))
		die(0, "getcwd: '%s', expected '%s'", cwd, workdir);
	snprintf(name, sizeof(name), "c%d", c->index);
	fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die(errno, "create %s", name);
	if (close(fd))
		die(errno, "close %s", name);
	if (unlink(name))
		die(errno, "unlink %s", name);
	c->counters[0]++;
	return OPS_PER_ITERATION;
}

static void samefile_teardown(struct run_ctx *run)
{
	struct dirent *de;
	int entries = 0;
	DIR *d;

	(void)run;
	d = opendir(".");
	if (!d)
		die(errno, "opendir %s", workdir);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries++;
	closedir(d);
	if (entries != 1)
		die(0, "%s: %d entries left, expected only %s", workdir, entries, TARGET);
	if (unlink(TARGET))
		die(errno, "unlink %s", TARGET);
	if (chdir(olddir))
		die(errno, "chdir %s", olddir);
	if (rmdir(workdir))
		die(errno, "rmdir %s", workdir);
}

static void samefile_report(const struct run_ctx *run, struct json *json)
{
	json_double(json, "iterations_per_s",
		    run->wall_s > 0 ? sum_ops(run) / OPS_PER_ITERATION / run->wall_s : 0);
}

static const char *const counters[] = { "iterations", NULL };

const struct testcase testcase = {
	.name = "samefile",
	.seed = "004",
	.summary = "stat, open+close and getcwd on one file, create+unlink in one directory (ops=stat: stat only)",
	.ops_unit = "one stat, open+close, getcwd or create+unlink (ops=stat: one stat)",
	.params = params,
	.counter_names = counters,
	.modes = TC_THREADS | TC_PROCESSES,
	.windows = TC_WINDOW_ITERATIONS | TC_WINDOW_SECONDS,
	.default_warmup = 100,
	.default_iterations = 5000,
	.setup = samefile_setup,
	.iteration = samefile_iteration,
	.copy_fini = NULL,
	.teardown = samefile_teardown,
	.report = samefile_report,
};
