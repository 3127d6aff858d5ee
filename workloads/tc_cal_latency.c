// SPDX-License-Identifier: GPL-2.0
/*
 * cal_latency - load-to-use latency by pointer chase (calibration: L1
 * hit, L2 hit, local and remote memory, chosen by the working set and
 * the node its memory is bound to).
 *
 * The working set (kib=) is cut into lines of line= bytes; each line's
 * first word points to the next line of one cycle through all of them.
 * The cycle visits the pages in order and the lines of each page in a
 * random order (fixed seed), so every load depends on the one before,
 * no stride is there to prefetch, and a TLB miss comes once per page,
 * not once per load (as lmbench's lat_mem_rd strides keep it).
 *
 * One iteration follows steps= pointers between two reads of the TSC
 * (unrolled by UNROLL); the per-load cost is (ticks - timer overhead) /
 * steps. A working set below the L1 measures the L1 hit, one between
 * the L1 and the L2 the L2 hit, one several times the caches (the
 * campaign sizes it from the machine) memory; node= binds the memory to
 * a node (local: first touch by the copy's own CPU), and the JSON says
 * which node the CPU and the memory are on and their distance.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "calib.h"

#define UNROLL		8
#define CHASE_SEED	0x6c6f636b73747564ULL	/* any fixed value: the same order every run */
#define KIB		1024ULL

struct latency_copy {
	void **next;			/* where the chase stands */
	uint64_t *samples;		/* ticks per iteration in the window */
	size_t nsamples;
	uint64_t overhead;
	int cpu, cpu_node, mem_node;
};

static double tsc_mhz;

static const struct tc_param params[] = {
	{ "kib", TC_UINT, "8", 1, 4 * KIB * KIB, "working set, KiB (below the L1: L1 hits; above all caches: memory)" },
	{ "line", TC_UINT, "64", 8, 4096, "bytes between two chased pointers: the cache line" },
	{ "steps", TC_UINT, "1024", UNROLL, 1ULL << 24, "loads per timed iteration (a multiple of 8)" },
	{ "node", TC_STR, "local", 0, 0, "node the working set is bound to: local or a node number" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void latency_setup(struct run_ctx *run)
{
	unsigned long long line = param_uint(run, "line");

	if (run->copies != 1)
		die(0, "threads=%d: the chase runs on one copy", run->copies);
	if (line & (line - 1))
		die(0, "line=%llu: not a power of two", line);
	if (param_uint(run, "steps") % UNROLL)
		die(0, "steps=%llu: not a multiple of %d", param_uint(run, "steps"), UNROLL);
	if (param_uint(run, "kib") * KIB < 2 * line)
		die(0, "kib=%llu: fewer than two lines", param_uint(run, "kib"));
	cal_param_node(run, "node");
	tsc_mhz = cal_tsc_mhz();
}

/* One cycle through every line: pages in order, lines of a page shuffled. */
static void **build_chase(char *base, size_t bytes, size_t line)
{
	size_t lines = bytes / line, group = sysconf(_SC_PAGESIZE) / line, i, g;
	size_t *order = malloc(lines * sizeof(*order));
	uint64_t state = CHASE_SEED;
	void **start;

	if (!order)
		die(errno, "out of memory");
	if (group < 1)
		group = 1;
	for (i = 0; i < lines; i++)
		order[i] = i;
	for (g = 0; g < lines; g += group) {
		size_t n = lines - g < group ? lines - g : group;

		for (i = n - 1; i > 0; i--) {
			size_t k = cal_random(&state) % (i + 1), t = order[g + i];

			order[g + i] = order[g + k];
			order[g + k] = t;
		}
	}
	for (i = 0; i < lines; i++)
		*(void **)(base + order[i] * line) = base + order[(i + 1) % lines] * line;
	start = (void **)(base + order[0] * line);
	free(order);
	return start;
}

static void latency_copy_init(struct copy_ctx *c)
{
	const struct run_ctx *run = c->run;
	struct latency_copy *l = calloc(1, sizeof(*l));
	size_t bytes = param_uint(run, "kib") * KIB;
	int node = cal_param_node(run, "node");
	char *base;

	if (!l)
		die(errno, "out of memory");
	l->samples = calloc(run->iterations, sizeof(*l->samples));
	if (!l->samples)
		die(errno, "out of memory");
	base = cal_map(bytes, node);
	l->next = build_chase(base, bytes, param_uint(run, "line"));
	l->overhead = cal_timer_overhead();
	cal_where(&l->cpu, &l->cpu_node);
	l->mem_node = cal_page_node(base);
	c->priv = l;
}

static unsigned long long latency_iteration(struct copy_ctx *c)
{
	struct latency_copy *l = c->priv;
	unsigned long long steps = param_uint(c->run, "steps"), k;
	void **p = l->next;
	uint64_t t0, t1;

	t0 = cal_tsc();
	for (k = 0; k < steps; k += UNROLL) {
		p = *p; p = *p; p = *p; p = *p;
		p = *p; p = *p; p = *p; p = *p;
	}
	t1 = cal_tsc();
	l->next = p;
	if (c->in_window && l->nsamples < c->run->iterations)
		l->samples[l->nsamples++] = t1 - t0;
	return steps;
}

static double per_load(uint64_t ticks, uint64_t overhead, unsigned long long steps)
{
	return ticks > overhead ? (double)(ticks - overhead) / steps : 0;
}

static void latency_report(const struct run_ctx *run, struct json *j)
{
	struct latency_copy *l = run->copy[0].priv;
	unsigned long long steps = param_uint(run, "steps");
	double median, mean, min;

	mean = per_load(cal_mean(l->samples, l->nsamples), l->overhead, steps);
	median = per_load(cal_median(l->samples, l->nsamples), l->overhead, steps);
	min = per_load(l->samples[0], l->overhead, steps);	/* sorted by the median */
	json_double(j, "cycles_per_load", median);
	json_double(j, "cycles_per_load_mean", mean);
	json_double(j, "cycles_per_load_min", min);
	json_double(j, "ns_per_load", cal_ns(median, tsc_mhz));
	json_double(j, "tsc_mhz", tsc_mhz);
	json_uint(j, "timer_overhead_cycles", l->overhead);
	json_uint(j, "working_set_bytes", param_uint(run, "kib") * KIB);
	json_uint(j, "line_bytes", param_uint(run, "line"));
	json_uint(j, "samples", l->nsamples);
	cal_report_place(j, "", l->cpu, l->cpu_node, l->mem_node);
}

const struct testcase testcase = {
	.name = "cal_latency",
	.seed = CAL_SEED,
	.summary = "calibration: load-to-use latency by pointer chase over kib= KiB bound to node=",
	.ops_unit = "one dependent load",
	.params = params,
	.modes = TC_THREADS,
	.windows = TC_WINDOW_ITERATIONS,
	.default_warmup = 2,
	.default_iterations = 20,
	.setup = latency_setup,
	.copy_init = latency_copy_init,
	.iteration = latency_iteration,
	.report = latency_report,
};
