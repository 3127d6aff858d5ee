// SPDX-License-Identifier: GPL-2.0
/*
 * cal_c2c - cache-to-cache transfer latency between two chosen CPUs
 * (calibration: same node, other node by distance; dirty and clean).
 *
 * Two copies: copy 0 is the owner, pinned to owner=, copy 1 the reader,
 * pinned to reader=. Iteration k uses line k of a buffer of fresh lines
 * (one per iteration, warm-up included, GAP_LINES lines apart, taken in
 * a shuffled order so that no stride prefetcher fetches them ahead),
 * homed on the owner's node (first touch by the owner). In turn:
 *
 *   owner:  wait for turn 2k;   state=dirty: store to line k (M)
 *                               state=clean: load line k (E: nobody else has it)
 *           turn = 2k+1
 *   reader: wait for turn 2k+1; TSC; load line k; TSC; turn = 2k+2
 *
 * The turn word lives on its own line, so the reader's timed load is the
 * only access to line k it ever makes: a miss served by the owner's
 * cache (or, where the protocol does not forward clean lines, the P6
 * bus for one, by memory after the snoop).
 *
 * Nothing else moves between the CPUs, or to another node, in an
 * iteration: each word written in the iterations sits on a page that
 * the CPU writing it touched first (the turn word and the order: the
 * owner's node; the samples and their count: the reader's), and the
 * struct both read is not written after set-up. On a NUMA machine an
 * iteration between two CPUs of one node therefore stays on that node,
 * which is what a router-crossing count per iteration checks.
 *
 * For state=clean the lines must not be in any cache when the owner
 * first loads them: the owner's first touch wrote them (the kernel
 * zeroes new pages), so before the first iteration the owner reads
 * through evict_kib= KiB of its own to push them out to memory; the
 * campaign sizes it above the caches the owner's writes can sit in.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"

#define OWNER		0
#define READER		1
#define GAP_LINES	2	/* lines between two used ones: no adjacent-line effects */
#define KIB		1024ULL
#define EVICT_PASSES	2
#define ORDER_SEED	0x63326320636c6561ULL	/* any fixed value: the same order every run */

/* The reader's own page: written by it alone, in every iteration. */
struct c2c_samples {
	size_t count;			/* in the window */
	uint64_t cycles[];
};

/* Written in set-up and copy_init only; both copies read it in the iterations. */
struct c2c_run {
	unsigned long *turn;		/* the owner's page */
	char *lines;
	size_t *slot;			/* iteration -> line of the buffer; the owner's pages */
	size_t stride;
	bool dirty;
	struct c2c_samples *samples;	/* the reader's page(s) */
	uint64_t overhead;
	double tsc_mhz;
	int cpu[2], node[2];
};

static struct c2c_run *shared_run;

static const struct tc_param params[] = {
	{ "owner", TC_UINT, "0", 0, 4095, "CPU that puts the line in its cache" },
	{ "reader", TC_UINT, "1", 0, 4095, "CPU that times its load of the line" },
	{ "state", TC_STR, "dirty", 0, 0, "dirty: the owner stored (M); clean: it only loaded (E)" },
	{ "line", TC_UINT, "64", 8, 4096, "cache line bytes" },
	{ "evict_kib", TC_UINT, "0", 0, 4 * KIB * KIB, "KiB the owner reads before the first iteration (clean: above its caches)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void c2c_setup(struct run_ctx *run)
{
	const char *state = param_str(run, "state");
	struct c2c_run *r;

	if (run->copies != 2)
		die(0, "threads=%d: a transfer needs threads=2 (owner and reader)", run->copies);
	if (param_uint(run, "owner") == param_uint(run, "reader"))
		die(0, "owner= and reader= name the same CPU %llu", param_uint(run, "owner"));
	if (strcmp(state, "dirty") && strcmp(state, "clean"))
		die(0, "state=%s: expected dirty or clean", state);
	if (posix_memalign((void **)&r, CAL_ALIGN, sizeof(*r)))
		die(ENOMEM, "out of memory");
	memset(r, 0, sizeof(*r));
	r->dirty = !strcmp(state, "dirty");
	r->stride = GAP_LINES * param_uint(run, "line");
	r->tsc_mhz = cal_tsc_mhz();
	shared_run = r;
	run->priv = r;
}

static void evict(size_t bytes, size_t line)
{
	volatile char *p;
	size_t off;
	int pass;

	if (!bytes)
		return;
	p = cal_map(bytes, CAL_NODE_LOCAL);
	for (pass = 0; pass < EVICT_PASSES; pass++)
		for (off = 0; off < bytes; off += line)
			(void)p[off];
}

static void shuffle_slots(struct c2c_run *r, size_t n)
{
	uint64_t state = ORDER_SEED;
	size_t i;

	r->slot = cal_map(n * sizeof(*r->slot), CAL_NODE_LOCAL);
	for (i = 0; i < n; i++)
		r->slot[i] = i;
	for (i = n - 1; i > 0; i--) {
		size_t k = cal_random(&state) % (i + 1), t = r->slot[i];

		r->slot[i] = r->slot[k];
		r->slot[k] = t;
	}
}

static void c2c_copy_init(struct copy_ctx *c)
{
	struct c2c_run *r = shared_run;
	const struct run_ctx *run = c->run;
	int role = c->index, cpu = (int)param_uint(run, role == OWNER ? "owner" : "reader");
	unsigned long *turn;

	pin_self(cpu, role == OWNER ? "the owner" : "the reader");
	c->cpu = cpu;
	cal_where(&r->cpu[role], &r->node[role]);
	if (role == READER) {
		r->samples = cal_map(sizeof(*r->samples) + run->iterations * sizeof(r->samples->cycles[0]),
				     CAL_NODE_LOCAL);
		r->overhead = cal_timer_overhead();
		/* the warm-up follows copy_init at once: wait for the owner's set-up */
		while (!__atomic_load_n(&r->turn, __ATOMIC_ACQUIRE))
			;
		return;
	}
	shuffle_slots(r, run->warmup + run->iterations);
	r->lines = cal_map((run->warmup + run->iterations) * r->stride, CAL_NODE_LOCAL);
	evict(param_uint(run, "evict_kib") * KIB, param_uint(run, "line"));
	turn = cal_map(sizeof(*turn), CAL_NODE_LOCAL);	/* holds turn 0 */
	__atomic_store_n(&r->turn, turn, __ATOMIC_RELEASE);	/* publishes all of the above */
}

static void wait_turn(const struct c2c_run *r, unsigned long turn)
{
	while (__atomic_load_n(r->turn, __ATOMIC_ACQUIRE) != turn)
		;
}

static unsigned long long c2c_iteration(struct copy_ctx *c)
{
	struct c2c_run *r = shared_run;
	unsigned long k = c->iterations;
	volatile unsigned long *line;
	unsigned long seen, expected = r->dirty ? k + 1 : 0;
	uint64_t t0, t1;

	if (c->index == OWNER) {
		wait_turn(r, 2 * k);
		line = (volatile unsigned long *)(r->lines + r->slot[k] * r->stride);
		if (r->dirty)
			*line = k + 1;
		else
			(void)*line;
		__atomic_store_n(r->turn, 2 * k + 1, __ATOMIC_RELEASE);
		return 0;
	}
	wait_turn(r, 2 * k + 1);
	line = (volatile unsigned long *)(r->lines + r->slot[k] * r->stride);
	t0 = cal_tsc();
	seen = *line;
	t1 = cal_tsc();
	if (seen != expected)
		die(0, "line %lu holds %lu, expected %lu", k, seen, expected);
	if (c->in_window && r->samples->count < c->run->iterations)
		r->samples->cycles[r->samples->count++] = t1 - t0;
	__atomic_store_n(r->turn, 2 * k + 2, __ATOMIC_RELEASE);
	return 1;
}

static void c2c_report(const struct run_ctx *run, struct json *j)
{
	struct c2c_run *r = run->priv;
	uint64_t *samples = r->samples->cycles;	/* sorted by cal_median: [0] is the least */
	size_t nsamples = r->samples->count;
	double mean = cal_mean(samples, nsamples);
	uint64_t median = cal_median(samples, nsamples);
	double cycles = median > r->overhead ? (double)(median - r->overhead) : 0;

	json_double(j, "cycles", cycles);
	json_double(j, "cycles_mean", mean > r->overhead ? mean - r->overhead : 0);
	json_double(j, "cycles_min", nsamples && samples[0] > r->overhead ? (double)(samples[0] - r->overhead) : 0);
	json_double(j, "ns", cal_ns(cycles, r->tsc_mhz));
	json_double(j, "tsc_mhz", r->tsc_mhz);
	json_uint(j, "timer_overhead_cycles", r->overhead);
	json_str(j, "state", r->dirty ? "dirty" : "clean");
	json_uint(j, "dirty", r->dirty);	/* the state as a number: tables keep numeric measures */
	json_uint(j, "samples", nsamples);
	json_int(j, "owner_cpu", r->cpu[OWNER]);
	json_int(j, "owner_node", r->node[OWNER]);
	json_int(j, "reader_cpu", r->cpu[READER]);
	json_int(j, "reader_node", r->node[READER]);
	json_int(j, "mem_node", cal_page_node(r->lines));
	json_int(j, "distance", cal_distance(r->node[READER], r->node[OWNER]));
}

const struct testcase testcase = {
	.name = "cal_c2c",
	.seed = CAL_SEED,
	.summary = "calibration: latency of a load served by another CPU's cache (owner= -> reader=)",
	.ops_unit = "one timed load of a line the other CPU holds",
	.params = params,
	.modes = TC_THREADS,
	.windows = TC_WINDOW_ITERATIONS,
	.default_warmup = 4,
	.default_iterations = 64,
	.setup = c2c_setup,
	.copy_init = c2c_copy_init,
	.iteration = c2c_iteration,
	.report = c2c_report,
};
