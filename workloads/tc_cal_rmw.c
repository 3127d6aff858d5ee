// SPDX-License-Identifier: GPL-2.0
/*
 * cal_rmw - the cost of an uncontended locked read-modify-write
 * (calibration: `lock xadd` and `lock cmpxchg` against the same
 * instruction without the lock prefix and against a plain add).
 *
 * One copy increments one counter that only it touches, so the line
 * stays in its L1 in M: what is left is what the lock prefix itself
 * costs. On the P6 a locked instruction drained the store buffer and
 * held the bus or the line (Intel's P6 manuals); on gem5 the timing CPU
 * runs one instruction at a time, so there is nothing to drain, and O3
 * models the lock as a load and a store that keep the line, which is
 * why the campaign runs this on both CPU models.
 *
 * One iteration times five loops of reps= operations each (unrolled by
 * UNROLL): `add`, `xadd`, `lock xadd`, `cmpxchg`, `lock cmpxchg`. The
 * add and xadd steps are the same two instructions (mov $1; op); each
 * cmpxchg step computes the next value in registers and always
 * succeeds. The counter must end at the total of every step (checked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "calib.h"

#define UNROLL		4
#define KIND_COUNT	5

enum kind { ADD, XADD, LOCK_XADD, CMPXCHG, LOCK_CMPXCHG };

static const char *const kind_names[KIND_COUNT] = { "add", "xadd", "lock_xadd", "cmpxchg", "lock_cmpxchg" };

struct rmw_copy {
	uint64_t counter __attribute__((aligned(CAL_ALIGN)));
	uint64_t *samples[KIND_COUNT];	/* ticks per loop, in the window */
	size_t nsamples;
	uint64_t overhead;
	int cpu, cpu_node;
};

static double tsc_mhz;

static const struct tc_param params[] = {
	{ "reps", TC_UINT, "256", UNROLL, 1ULL << 24, "operations per timed loop (a multiple of 4)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

#define STEP_ADD	"movq $1, %%rax\n\taddq %%rax, %0\n\t"
#define STEP_XADD(lock)	"movq $1, %%rax\n\t" lock "xaddq %%rax, %0\n\t"
#define STEP_CMPXCHG(lock) "movq %1, %%rax\n\tleaq 1(%%rax), %1\n\t" lock "cmpxchgq %1, %0\n\t"
#define FOUR(step)	step step step step

static uint64_t timed_loop(enum kind kind, uint64_t *counter, unsigned long long reps)
{
	uint64_t next = __atomic_load_n(counter, __ATOMIC_RELAXED), t0, t1;
	unsigned long long i;

	t0 = cal_tsc();
	for (i = 0; i < reps; i += UNROLL) {
		switch (kind) {
		case ADD:
			__asm__ __volatile__(FOUR(STEP_ADD) : "+m"(*counter) : : "rax", "cc", "memory");
			break;
		case XADD:
			__asm__ __volatile__(FOUR(STEP_XADD("")) : "+m"(*counter) : : "rax", "cc", "memory");
			break;
		case LOCK_XADD:
			__asm__ __volatile__(FOUR(STEP_XADD("lock ")) : "+m"(*counter) : : "rax", "cc", "memory");
			break;
		case CMPXCHG:
			__asm__ __volatile__(FOUR(STEP_CMPXCHG("")) : "+m"(*counter), "+r"(next) : : "rax", "cc", "memory");
			break;
		case LOCK_CMPXCHG:
			__asm__ __volatile__(FOUR(STEP_CMPXCHG("lock ")) : "+m"(*counter), "+r"(next) : : "rax", "cc", "memory");
			break;
		}
	}
	t1 = cal_tsc();
	return t1 - t0;
}

static void rmw_setup(struct run_ctx *run)
{
	if (run->copies != 1)
		die(0, "threads=%d: the uncontended cost is one copy's", run->copies);
	if (param_uint(run, "reps") % UNROLL)
		die(0, "reps=%llu: not a multiple of %d", param_uint(run, "reps"), UNROLL);
	tsc_mhz = cal_tsc_mhz();
}

static void rmw_copy_init(struct copy_ctx *c)
{
	struct rmw_copy *r;
	int k;

	if (posix_memalign((void **)&r, CAL_ALIGN, sizeof(*r)))
		die(ENOMEM, "out of memory");
	*r = (struct rmw_copy){ 0 };
	for (k = 0; k < KIND_COUNT; k++) {
		r->samples[k] = calloc(c->run->iterations, sizeof(uint64_t));
		if (!r->samples[k])
			die(errno, "out of memory");
	}
	r->overhead = cal_timer_overhead();
	cal_where(&r->cpu, &r->cpu_node);
	c->priv = r;
}

static unsigned long long rmw_iteration(struct copy_ctx *c)
{
	struct rmw_copy *r = c->priv;
	unsigned long long reps = param_uint(c->run, "reps");
	bool keep = c->in_window && r->nsamples < c->run->iterations;
	int k;

	for (k = 0; k < KIND_COUNT; k++) {
		uint64_t ticks = timed_loop(k, &r->counter, reps);

		if (keep)
			r->samples[k][r->nsamples] = ticks;
	}
	r->nsamples += keep;
	return KIND_COUNT * reps;
}

static void rmw_copy_fini(struct copy_ctx *c)
{
	struct rmw_copy *r = c->priv;
	uint64_t expected = c->iterations * KIND_COUNT * param_uint(c->run, "reps");

	if (r->counter != expected)
		die(0, "the counter is %llu, expected %llu", (unsigned long long)r->counter,
		    (unsigned long long)expected);
}

static void rmw_report(const struct run_ctx *run, struct json *j)
{
	struct rmw_copy *r = run->copy[0].priv;
	unsigned long long reps = param_uint(run, "reps");
	double per_op[KIND_COUNT];
	char key[64];
	int k;

	for (k = 0; k < KIND_COUNT; k++) {
		uint64_t median = cal_median(r->samples[k], r->nsamples);

		per_op[k] = median > r->overhead ? (double)(median - r->overhead) / reps : 0;
		snprintf(key, sizeof(key), "cycles_%s", kind_names[k]);
		json_double(j, key, per_op[k]);
		snprintf(key, sizeof(key), "ns_%s", kind_names[k]);
		json_double(j, key, cal_ns(per_op[k], tsc_mhz));
	}
	json_double(j, "extra_cycles_lock_xadd", per_op[LOCK_XADD] - per_op[XADD]);
	json_double(j, "extra_cycles_lock_cmpxchg", per_op[LOCK_CMPXCHG] - per_op[CMPXCHG]);
	json_double(j, "tsc_mhz", tsc_mhz);
	json_uint(j, "timer_overhead_cycles", r->overhead);
	json_uint(j, "samples", r->nsamples);
	cal_report_place(j, "", r->cpu, r->cpu_node, cal_page_node(&r->counter));
}

const struct testcase testcase = {
	.name = "cal_rmw",
	.seed = CAL_SEED,
	.summary = "calibration: uncontended lock xadd / lock cmpxchg against the same without lock and a plain add",
	.ops_unit = "one add, xadd or cmpxchg on a line in the copy's own cache",
	.params = params,
	.modes = TC_THREADS,
	.windows = TC_WINDOW_ITERATIONS,
	.default_warmup = 2,
	.default_iterations = 16,
	.setup = rmw_setup,
	.copy_init = rmw_copy_init,
	.iteration = rmw_iteration,
	.copy_fini = rmw_copy_fini,
	.report = rmw_report,
};
