/* SPDX-License-Identifier: GPL-2.0 */
/*
 * calib.h - what the calibration testcases (tc_cal_*.c) share: a cycle
 * timer, memory placed on a chosen NUMA node, where a CPU sits and how
 * far two nodes are, and the summary of a run's samples.
 *
 * The timer is the TSC, read between LFENCEs so that the instructions
 * before it have completed and the ones after it have not started (the
 * O3 CPU would otherwise move loads across it). On gem5's x86 the TSC
 * is the CPU's cycle count (src/arch/x86/isa.cc: TSC = offset +
 * curCycle()), so a TSC difference is CPU cycles there; under QEMU or on
 * a real CPU it ticks at the TSC's own rate. Each testcase reports
 * `tsc_mhz`, the TSC's rate against CLOCK_MONOTONIC measured by the
 * guest, and every time in TSC ticks ("cycles") and in ns.
 *
 * Memory placement uses the kernel's system calls directly (no libnuma):
 * mbind(MPOL_BIND) on a fresh mapping before its first touch, then
 * get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) to read back the node of
 * every page (move_pages() would need CONFIG_MIGRATION).
 */
#ifndef LOCKSTUDY_CALIB_H
#define LOCKSTUDY_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

#define CAL_SEED		"cal"	/* the "seed" of every calibration testcase */
#define CAL_NODE_LOCAL		(-1)	/* node=local: no policy, first touch */
#define CAL_ALIGN		128	/* keeps two objects off one line (64- or 128-byte lines) */

static inline uint64_t cal_tsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Median of `n` empty timed regions (two back-to-back cal_tsc()). */
uint64_t cal_timer_overhead(void);

/* The TSC rate against CLOCK_MONOTONIC, MHz, over a short sleep. */
double cal_tsc_mhz(void);

/*
 * node= of a testcase: "local" (CAL_NODE_LOCAL) or a node number. Dies
 * with the parameter named on anything else.
 */
int cal_param_node(const struct run_ctx *run, const char *name);

/*
 * `bytes` of fresh anonymous memory (no huge pages), bound to `node`
 * unless it is CAL_NODE_LOCAL, every page written once. With a node,
 * every page is checked to be on it (die() otherwise).
 */
void *cal_map(size_t bytes, int node);

/* The node of the page holding `addr` (get_mempolicy), -1 without NUMA. */
int cal_page_node(const void *addr);

/* The caller's CPU and node (getcpu). */
void cal_where(int *cpu, int *node);

/* The distance from node `from` to node `to` (sysfs), -1 if unknown. */
int cal_distance(int from, int to);

/* Sort `v` and return its median. */
uint64_t cal_median(uint64_t *v, size_t n);
double cal_mean(const uint64_t *v, size_t n);

/* TSC ticks -> ns at the measured rate. */
double cal_ns(double cycles, double tsc_mhz);

/*
 * The placement fields every calibration JSON carries: the CPU and its
 * node, the memory's node and the distance between them.
 */
void cal_report_place(struct json *json, const char *prefix, int cpu, int cpu_node, int mem_node);

/*
 * A copy's share of a multi-copy window: its first timed start and its
 * last timed end. A testcase whose per-copy state begins with a
 * struct cal_span calls cal_span_add() for every timed loop and
 * cal_window_span() for the window of all copies (the TSCs agree: gem5
 * has one clock, and the machines boot with tsc=reliable).
 */
struct cal_span {
	uint64_t first, last;
};

static inline void cal_span_add(struct cal_span *span, const struct copy_ctx *c, uint64_t t0, uint64_t t1)
{
	if (!c->in_window)
		return;
	if (!span->first)
		span->first = t0;
	span->last = t1;
}

/* From the earliest copy's first start to the latest copy's last end, in ticks. */
double cal_window_span(const struct run_ctx *run);

/* Deterministic pseudo-random numbers (xorshift64*), for chase orders. */
uint64_t cal_random(uint64_t *state);

#endif /* LOCKSTUDY_CALIB_H */
