// SPDX-License-Identifier: GPL-2.0
/*
 * cal_contend - throughput of `lock xadd` on one line shared by every
 * copy (calibration: how fast the machine passes one contended line
 * around, against the number of CPUs).
 *
 * Every copy (threads=N, one per CPU) adds 1 to the same counter with
 * `lock xadd`, reps= times per iteration, between two reads of the TSC.
 * The window's span runs from the earliest copy's first timed loop to
 * the latest copy's last one (cal_window_span()); the throughput is the window's
 * RMWs over that span, and its inverse is what one RMW costs the line.
 * The counter must end at the sum of every copy's RMWs (checked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "calib.h"

#define UNROLL		4
#define KILO		1000.0

struct contend_copy {
	struct cal_span span;		/* first: cal_window_span() reads it */
	uint64_t ticks;			/* summed over the window's loops */
	int cpu, cpu_node;
};

static uint64_t *counter;
static double tsc_mhz;

static const struct tc_param params[] = {
	{ "reps", TC_UINT, "64", UNROLL, 1ULL << 24, "lock xadd per timed loop and copy (a multiple of 4)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

#define STEP	"movq $1, %%rax\n\tlock xaddq %%rax, %0\n\t"

static void contend_setup(struct run_ctx *run)
{
	if (param_uint(run, "reps") % UNROLL)
		die(0, "reps=%llu: not a multiple of %d", param_uint(run, "reps"), UNROLL);
	if (posix_memalign((void **)&counter, CAL_ALIGN, CAL_ALIGN))
		die(ENOMEM, "out of memory");
	*counter = 0;
	tsc_mhz = cal_tsc_mhz();
}

static void contend_copy_init(struct copy_ctx *c)
{
	struct contend_copy *s = calloc(1, sizeof(*s));

	if (!s)
		die(errno, "out of memory");
	cal_where(&s->cpu, &s->cpu_node);
	c->priv = s;
}

static unsigned long long contend_iteration(struct copy_ctx *c)
{
	struct contend_copy *s = c->priv;
	unsigned long long reps = param_uint(c->run, "reps"), i;
	uint64_t t0, t1;

	t0 = cal_tsc();
	for (i = 0; i < reps; i += UNROLL)
		__asm__ __volatile__(STEP STEP STEP STEP : "+m"(*counter) : : "rax", "cc", "memory");
	t1 = cal_tsc();
	cal_span_add(&s->span, c, t0, t1);
	if (c->in_window)
		s->ticks += t1 - t0;
	return reps;
}

static void contend_teardown(struct run_ctx *run)
{
	unsigned long long expected = 0;
	int i;

	for (i = 0; i < run->copies; i++)
		expected += run->copy[i].iterations * param_uint(run, "reps");
	if (*counter != expected)
		die(0, "the counter is %llu, expected %llu", (unsigned long long)*counter, expected);
}

static void contend_report(const struct run_ctx *run, struct json *j)
{
	double ops = sum_ops(run), span = cal_window_span(run), busy = 0;
	int i;

	for (i = 0; i < run->copies; i++)
		busy += ((const struct contend_copy *)run->copy[i].priv)->ticks;
	json_double(j, "rmw_per_kcycle", span > 0 ? ops * KILO / span : 0);
	json_double(j, "cycles_per_rmw", ops > 0 ? span / ops : 0);
	json_double(j, "ns_per_rmw", ops > 0 ? cal_ns(span / ops, tsc_mhz) : 0);
	json_double(j, "copy_cycles_per_rmw", ops > 0 ? busy / ops : 0);
	json_double(j, "span_cycles", span);
	json_double(j, "tsc_mhz", tsc_mhz);
	json_array_begin(j, "cpu_node");
	for (i = 0; i < run->copies; i++)
		json_int(j, NULL, ((const struct contend_copy *)run->copy[i].priv)->cpu_node);
	json_array_end(j);
	json_int(j, "mem_node", cal_page_node(counter));
}

const struct testcase testcase = {
	.name = "cal_contend",
	.seed = CAL_SEED,
	.summary = "calibration: lock xadd throughput on one line shared by every copy",
	.ops_unit = "one lock xadd on the shared line",
	.params = params,
	.modes = TC_THREADS,
	.windows = TC_WINDOW_ITERATIONS,
	.default_warmup = 4,
	.default_iterations = 32,
	.setup = contend_setup,
	.copy_init = contend_copy_init,
	.iteration = contend_iteration,
	.teardown = contend_teardown,
	.report = contend_report,
};
