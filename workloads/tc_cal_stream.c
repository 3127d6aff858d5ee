// SPDX-License-Identifier: GPL-2.0
/*
 * cal_stream - streaming read bandwidth (calibration: what the bus, a
 * memory controller or a link delivers).
 *
 * Every copy reads its own buffer of kib= KiB, bound to node= (local:
 * first touch by the copy's CPU), one word per line= bytes, so each
 * load moves a whole line; one iteration is one pass between two reads
 * of the TSC. The campaign sizes the buffer above the caches, so every
 * line comes from memory. The window's span runs from the earliest
 * copy's first pass to the latest copy's last; the bandwidth is the
 * bytes of lines all copies read in the window over that span. A CPU
 * that keeps one miss outstanding (gem5's timing CPU) reads at one line
 * per memory latency: the bus's bandwidth shows with several copies, or
 * on the O3 CPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "calib.h"

#define KIB		1024ULL

struct stream_copy {
	struct cal_span span;		/* first: cal_window_span() reads it */
	const volatile uint64_t *buf;
	uint64_t sum;			/* of what was read: keeps the loads */
	int cpu, cpu_node, mem_node;
};

static double tsc_mhz;

static const struct tc_param params[] = {
	{ "kib", TC_UINT, "4096", 1, 4 * KIB * KIB, "buffer per copy, KiB (above the caches)" },
	{ "line", TC_UINT, "64", 8, 4096, "bytes between two loads: the cache line" },
	{ "node", TC_STR, "local", 0, 0, "node the buffers are bound to: local or a node number" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static void stream_setup(struct run_ctx *run)
{
	unsigned long long line = param_uint(run, "line");

	if (line & (line - 1))
		die(0, "line=%llu: not a power of two", line);
	cal_param_node(run, "node");
	tsc_mhz = cal_tsc_mhz();
}

static void stream_copy_init(struct copy_ctx *c)
{
	struct stream_copy *s = calloc(1, sizeof(*s));
	int node = cal_param_node(c->run, "node");

	if (!s)
		die(errno, "out of memory");
	s->buf = cal_map(param_uint(c->run, "kib") * KIB, node);
	cal_where(&s->cpu, &s->cpu_node);
	s->mem_node = cal_page_node((const void *)s->buf);
	c->priv = s;
}

static unsigned long long stream_iteration(struct copy_ctx *c)
{
	struct stream_copy *s = c->priv;
	size_t words = param_uint(c->run, "kib") * KIB / sizeof(uint64_t);
	size_t step = param_uint(c->run, "line") / sizeof(uint64_t), i;
	uint64_t t0, t1, sum = 0;

	t0 = cal_tsc();
	for (i = 0; i < words; i += step)
		sum += s->buf[i];
	t1 = cal_tsc();
	s->sum += sum;
	cal_span_add(&s->span, c, t0, t1);
	return words / step;
}

static void stream_copy_fini(struct copy_ctx *c)
{
	struct stream_copy *s = c->priv;

	if (s->sum)	/* cal_map() leaves zeroes; nobody writes */
		die(0, "read a non-zero sum %llu from a zeroed buffer", (unsigned long long)s->sum);
}

static void stream_report(const struct run_ctx *run, struct json *j)
{
	double bytes = (double)sum_ops(run) * param_uint(run, "line"), span = cal_window_span(run);
	json_double(j, "bytes_per_cycle", span > 0 ? bytes / span : 0);
	json_double(j, "mb_per_s", span > 0 ? bytes / span * tsc_mhz : 0);	/* bytes per us */
	json_double(j, "span_cycles", span);
	json_double(j, "tsc_mhz", tsc_mhz);
	json_uint(j, "buffer_bytes", param_uint(run, "kib") * KIB);
	json_uint(j, "line_bytes", param_uint(run, "line"));
	if (run->copies == 1) {
		const struct stream_copy *s = run->copy[0].priv;

		cal_report_place(j, "", s->cpu, s->cpu_node, s->mem_node);
	}
}

const struct testcase testcase = {
	.name = "cal_stream",
	.seed = CAL_SEED,
	.summary = "calibration: streaming read bandwidth over kib= KiB per copy bound to node=",
	.ops_unit = "one line read",
	.params = params,
	.modes = TC_THREADS,
	.windows = TC_WINDOW_ITERATIONS,
	.default_warmup = 1,
	.default_iterations = 4,
	.setup = stream_setup,
	.copy_init = stream_copy_init,
	.iteration = stream_iteration,
	.copy_fini = stream_copy_fini,
	.report = stream_report,
};
