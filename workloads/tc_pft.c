// SPDX-License-Identifier: GPL-2.0
/*
 * pft - the page-fault scalability test of seed 002: T threads fault in
 * their share of one anonymous mapping of G bytes (here mb=, scaled
 * down), R times (iterations=). Every fault takes the mm's locks and
 * the page allocator's, so on a NUMA machine the fault rate per CPU
 * shows what the spinlocks cost.
 *
 * One iteration is one repetition: copy 0 maps the region (huge pages
 * off, so each page is one fault), all copies write one byte per page
 * of their contiguous share, then copy 0 unmaps it. The check: each
 * copy's minor-fault count over the window (getrusage, per thread) is
 * at least the pages it touched, and not much more.
 *
 * The JSON carries the seed's columns under "seed_columns":
 * Gb Rep Threads User System Wall flt/cpu/s fault/wsec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define MIB			(1024ULL * 1024)
#define EXTRA_FAULTS_ALLOWED	256	/* stack, barrier and libc pages */
#define EXTRA_FAULTS_PERMILLE	50	/* and 5% on top */

static char *region;	/* the current repetition's mapping, set by copy 0 */
static size_t region_bytes, page_bytes, region_pages;

static const struct tc_param params[] = {
	{ "mb", TC_UINT, "64", 1, 1 << 20, "size of the region faulted in per repetition, MiB (the seed's Gb)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void pft_setup(struct run_ctx *run)
{
	page_bytes = sysconf(_SC_PAGESIZE);
	region_bytes = param_uint(run, "mb") * MIB;
	region_pages = region_bytes / page_bytes;
	if (region_pages < (size_t)run->copies)
		die(0, "mb=%llu: fewer pages than threads", param_uint(run, "mb"));
}

static unsigned long long pft_iteration(struct copy_ctx *c)
{
	size_t first = region_pages * c->index / c->run->copies;
	size_t last = region_pages * (c->index + 1) / c->run->copies;
	size_t page;

	if (c->index == 0) {
		region = mmap(NULL, region_bytes, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region == MAP_FAILED)
			die(errno, "mmap of %zu bytes", region_bytes);
		if (madvise(region, region_bytes, MADV_NOHUGEPAGE) && errno != EINVAL)
			die(errno, "madvise(MADV_NOHUGEPAGE)");
	}
	copy_barrier(c);
	for (page = first; page < last; page++)
		region[page * page_bytes] = (char)page;
	copy_barrier(c);
	if (c->index == 0 && munmap(region, region_bytes))
		die(errno, "munmap");
	c->counters[0] += last - first;
	return last - first;
}

static void pft_copy_fini(struct copy_ctx *c)
{
	long faults = window_minflt(c);
	unsigned long long touched = c->ops;
	unsigned long long most = touched + touched * EXTRA_FAULTS_PERMILLE / 1000 + EXTRA_FAULTS_ALLOWED;

	if (faults < 0 || (unsigned long long)faults < touched)
		die(0, "thread %d: %ld minor faults for %llu pages touched (huge pages?)",
		    c->index, faults, touched);
	if ((unsigned long long)faults > most)
		die(0, "thread %d: %ld minor faults for %llu pages touched (more than %llu)",
		    c->index, faults, touched, most);
	c->counters[1] = faults;
}

static void pft_report(const struct run_ctx *run, struct json *json)
{
	double user = window_user_s(run), sys = window_system_s(run);
	double faults = sum_ops(run);

	json_uint(json, "page_bytes", page_bytes);
	json_double(json, "faults_per_cpu_s", user + sys > 0 ? faults / (user + sys) : 0);
	json_double(json, "faults_per_wall_s", run->wall_s > 0 ? faults / run->wall_s : 0);
	json_object_begin(json, "seed_columns");
	json_double(json, "Gb", param_uint(run, "mb") / 1024.0);
	json_uint(json, "Rep", run->iterations);
	json_uint(json, "Threads", run->copies);
	json_double(json, "User", user);
	json_double(json, "System", sys);
	json_double(json, "Wall", run->wall_s);
	json_double(json, "flt/cpu/s", user + sys > 0 ? faults / (user + sys) : 0);
	json_double(json, "fault/wsec", run->wall_s > 0 ? faults / run->wall_s : 0);
	json_object_end(json);
}

static const char *const counters[] = { "pages_touched", "window_minor_faults", NULL };

/* seed 002: every page fault takes mmap_lock for reading */
static const char *const lock_requests[] = { "mm", NULL };

const struct testcase testcase = {
	.name = "pft",
	.lock_requests = lock_requests,
	.seed = "002",
	.summary = "page-fault test: T threads fault in their share of an anonymous region, R repetitions",
	.ops_unit = "one page faulted in",
	.params = params,
	.counter_names = counters,
	.modes = TC_THREADS,
	.windows = TC_WINDOW_ITERATIONS,
	.default_warmup = 1,
	.default_iterations = 3,
	.setup = pft_setup,
	.iteration = pft_iteration,
	.copy_fini = pft_copy_fini,
	.report = pft_report,
};
