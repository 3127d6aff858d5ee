// SPDX-License-Identifier: GPL-2.0
/*
 * mmapsem - an AIM7 high_systime-like mix that makes the mm's mmap_lock
 * (an rwsem) the hot lock (seed 003: rwsem wakeups under contention).
 *
 * Copies with an even index are faulters: one job drops the pages of
 * their region (MADV_DONTNEED) and writes them again, one fault each,
 * with mmap_lock held for read. Copies with an odd index are mappers:
 * one job maps a small region, writes it, mprotect()s it read-only,
 * reads it back and unmaps it, taking mmap_lock for write three times.
 * A single copy does both halves. Every forkevery= jobs a copy also
 * forks, the child execs this program (which exits at once) and the
 * copy waits for it: fork copies the mm under mmap_lock. The score is
 * jobs per minute, like AIM7's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define EXEC_SELF	"/proc/self/exe"

enum { C_FAULT_JOBS, C_MAP_JOBS, C_FORKS, C_PAGES_FAULTED };

struct mmapsem_copy {
	char *region;		/* faulters' region */
	size_t pages, map_pages, page_bytes;
	unsigned long long fork_every;
	bool faulter, mapper;
};

static const struct tc_param params[] = {
	{ "pages", TC_UINT, "64", 1, 1 << 20, "pages a faulter job drops and faults in again" },
	{ "mappages", TC_UINT, "16", 1, 1 << 20, "pages a mapper job maps, protects and unmaps" },
	{ "forkevery", TC_UINT, "16", 0, 1 << 30, "jobs between two fork/exec/wait (0: never)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void mmapsem_copy_init(struct copy_ctx *c)
{
	struct mmapsem_copy *m = calloc(1, sizeof(*m));

	if (!m)
		die(errno, "out of memory");
	m->page_bytes = sysconf(_SC_PAGESIZE);
	m->pages = param_uint(c->run, "pages");
	m->map_pages = param_uint(c->run, "mappages");
	m->fork_every = param_uint(c->run, "forkevery");
	m->faulter = c->run->copies == 1 || c->index % 2 == 0;
	m->mapper = c->run->copies == 1 || c->index % 2 == 1;
	if (m->faulter) {
		m->region = mmap(NULL, m->pages * m->page_bytes, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m->region == MAP_FAILED)
			die(errno, "mmap of the faulter region");
		madvise(m->region, m->pages * m->page_bytes, MADV_NOHUGEPAGE);
	}
	c->priv = m;
}

static void fault_job(struct copy_ctx *c, struct mmapsem_copy *m)
{
	size_t p;

	if (madvise(m->region, m->pages * m->page_bytes, MADV_DONTNEED))
		die(errno, "madvise(MADV_DONTNEED)");
	for (p = 0; p < m->pages; p++) {
		if (m->region[p * m->page_bytes] != 0)
			die(0, "page %zu still holds data after MADV_DONTNEED", p);
		m->region[p * m->page_bytes] = 1;
	}
	c->counters[C_FAULT_JOBS]++;
	c->counters[C_PAGES_FAULTED] += m->pages;
}

static void map_job(struct copy_ctx *c, struct mmapsem_copy *m)
{
	size_t bytes = m->map_pages * m->page_bytes, p;
	char *area;

	area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		die(errno, "mmap of %zu bytes", bytes);
	for (p = 0; p < m->map_pages; p++)
		area[p * m->page_bytes] = (char)(p + c->index);
	if (mprotect(area, bytes, PROT_READ))
		die(errno, "mprotect(PROT_READ)");
	for (p = 0; p < m->map_pages; p++)
		if (area[p * m->page_bytes] != (char)(p + c->index))
			die(0, "mapped page %zu lost its content after mprotect", p);
	if (munmap(area, bytes))
		die(errno, "munmap");
	c->counters[C_MAP_JOBS]++;
}

static void fork_exec_wait(struct copy_ctx *c)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		die(errno, "fork");
	if (pid == 0) {
		char *const argv[] = { "mmapsem", "--exec-child", NULL };

		execv(EXEC_SELF, argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		die(errno, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die(0, "the exec'd child failed (status 0x%x; is /proc mounted?)", status);
	c->counters[C_FORKS]++;
}

static unsigned long long mmapsem_iteration(struct copy_ctx *c)
{
	struct mmapsem_copy *m = c->priv;

	if (m->faulter)
		fault_job(c, m);
	if (m->mapper)
		map_job(c, m);
	if (m->fork_every && c->iterations % m->fork_every == 0)
		fork_exec_wait(c);
	return 1;
}

static void mmapsem_copy_fini(struct copy_ctx *c)
{
	struct mmapsem_copy *m = c->priv;
	long faults = window_minflt(c);

	/* each faulter job in the window faulted every page of the region */
	if (m->faulter && faults >= 0 && (unsigned long long)faults < c->ops * m->pages)
		die(0, "copy %d: %ld minor faults in the window, expected at least %llu",
		    c->index, faults, c->ops * m->pages);
	if (m->region)
		munmap(m->region, m->pages * m->page_bytes);
	free(m);
}

static void mmapsem_report(const struct run_ctx *run, struct json *json)
{
	json_double(json, "jobs_per_minute", run->wall_s > 0 ? sum_ops(run) * 60.0 / run->wall_s : 0);
}

static const char *const counters[] = { "fault_jobs", "map_jobs", "forks", "pages_faulted", NULL };

/* seed 003: the mmap_lock rwsem and its wait_lock */
static const char *const lock_requests[] = { "mm", NULL };

const struct testcase testcase = {
	.name = "mmapsem",
	.lock_requests = lock_requests,
	.seed = "003",
	.summary = "page faults against mmap/mprotect/munmap and fork/exec/wait in one mm (mmap_lock rwsem)",
	.ops_unit = "one job",
	.params = params,
	.counter_names = counters,
	.modes = TC_THREADS | TC_PROCESSES,
	.windows = TC_WINDOW_ITERATIONS | TC_WINDOW_SECONDS,
	.default_warmup = 8,
	.default_iterations = 500,
	.copy_init = mmapsem_copy_init,
	.iteration = mmapsem_iteration,
	.copy_fini = mmapsem_copy_fini,
	.report = mmapsem_report,
};
