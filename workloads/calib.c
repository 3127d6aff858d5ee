// SPDX-License-Identifier: GPL-2.0
/*
 * calib.c - the calibration testcases' shared pieces (see calib.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/mempolicy.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"

#define OVERHEAD_SAMPLES	64
#define TSC_CAL_NS		20000000L	/* 20 ms: long enough for 0.1% */
#define NSEC_PER_SEC		1000000000.0
#define MASK_LONGS		16		/* nodes 0..1023 */
#define MASK_BITS		(MASK_LONGS * 8 * sizeof(unsigned long))
#define NODE_DIR		"/sys/devices/system/node"
#define LINE_TEXT		4096
#define XORSHIFT_STAR		0x2545F4914F6CDD1DULL	/* Vigna's xorshift64* multiplier */

uint64_t cal_timer_overhead(void)
{
	uint64_t v[OVERHEAD_SAMPLES];
	size_t i;

	for (i = 0; i < OVERHEAD_SAMPLES; i++) {
		uint64_t t0 = cal_tsc();

		v[i] = cal_tsc() - t0;
	}
	return cal_median(v, OVERHEAD_SAMPLES);
}

static double monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

double cal_tsc_mhz(void)
{
	struct timespec pause = { 0, TSC_CAL_NS };
	double n0, n1;
	uint64_t t0, t1;

	n0 = monotonic_ns();
	t0 = cal_tsc();
	nanosleep(&pause, NULL);
	n1 = monotonic_ns();
	t1 = cal_tsc();
	if (n1 <= n0 || t1 <= t0)
		die(0, "the TSC or CLOCK_MONOTONIC did not advance over %ld ns", TSC_CAL_NS);
	return (t1 - t0) * 1000.0 / (n1 - n0);
}

int cal_param_node(const struct run_ctx *run, const char *name)
{
	const char *text = param_str(run, name);
	unsigned long v;
	char *end;

	if (!strcmp(text, "local"))
		return CAL_NODE_LOCAL;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (*text < '0' || *text > '9' || errno || *end || v >= MASK_BITS)
		die(0, "%s=%s: expected local or a node number below %zu", name, text, MASK_BITS);
	return (int)v;
}

/* get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR): the node of the page at `addr` (move_pages needs CONFIG_MIGRATION) */
static long page_node(const void *addr, int *node)
{
	return syscall(SYS_get_mempolicy, node, NULL, 0UL, addr, (unsigned long)(MPOL_F_NODE | MPOL_F_ADDR));
}

int cal_page_node(const void *addr)
{
	int node = -1;

	if (page_node(addr, &node))
		return -1;	/* a kernel without NUMA */
	return node;
}

static void check_on_node(char *base, size_t bytes, int node)
{
	size_t page = sysconf(_SC_PAGESIZE), off;
	int where;

	for (off = 0; off < bytes; off += page) {
		if (page_node(base + off, &where))
			die(errno, "get_mempolicy (which node holds the page?)");
		if (where != node)
			die(0, "page %zu of %zu bytes is on node %d, not on node %d", off / page, bytes, where, node);
	}
}

void *cal_map(size_t bytes, int node)
{
	size_t page = sysconf(_SC_PAGESIZE), off;
	unsigned long mask[MASK_LONGS] = { 0 };
	char *p;

	bytes = (bytes + page - 1) / page * page;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die(errno, "mmap of %zu bytes", bytes);
	if (madvise(p, bytes, MADV_NOHUGEPAGE) && errno != EINVAL)
		die(errno, "madvise(MADV_NOHUGEPAGE)");
	if (node != CAL_NODE_LOCAL) {
		mask[node / (8 * sizeof(long))] = 1UL << (node % (8 * sizeof(long)));
		/* maxnode counts one more than the mask's bits (mm/mempolicy.c get_nodes) */
		if (syscall(SYS_mbind, p, bytes, MPOL_BIND, mask, MASK_BITS + 1, MPOL_MF_STRICT))
			die(errno, "mbind of %zu bytes to node %d", bytes, node);
	}
	for (off = 0; off < bytes; off += page)
		p[off] = 0;	/* a write fault: a page of its own */
	if (node != CAL_NODE_LOCAL)
		check_on_node(p, bytes, node);
	return p;
}

void cal_where(int *cpu, int *node)
{
	unsigned int c, n;

	if (syscall(SYS_getcpu, &c, &n, NULL))
		die(errno, "getcpu");
	*cpu = (int)c;
	*node = (int)n;
}

int cal_distance(int from, int to)
{
	char path[128], text[LINE_TEXT], *tok, *save;
	FILE *f;
	int i = 0;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/distance", from);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(text, sizeof(text), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	for (tok = strtok_r(text, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), i++)
		if (i == to)
			return atoi(tok);
	return -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t cal_median(uint64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

double cal_mean(const uint64_t *v, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += v[i];
	return n ? s / n : 0;
}

double cal_ns(double cycles, double tsc_mhz)
{
	return tsc_mhz > 0 ? cycles * 1000.0 / tsc_mhz : 0;
}

void cal_report_place(struct json *j, const char *prefix, int cpu, int cpu_node, int mem_node)
{
	char key[64];

	snprintf(key, sizeof(key), "%scpu", prefix);
	json_int(j, key, cpu);
	snprintf(key, sizeof(key), "%scpu_node", prefix);
	json_int(j, key, cpu_node);
	snprintf(key, sizeof(key), "%smem_node", prefix);
	json_int(j, key, mem_node);
	snprintf(key, sizeof(key), "%sdistance", prefix);
	json_int(j, key, mem_node < 0 ? -1 : cal_distance(cpu_node, mem_node));
}

double cal_window_span(const struct run_ctx *run)
{
	uint64_t first = UINT64_MAX, last = 0;
	int i;

	for (i = 0; i < run->copies; i++) {
		const struct cal_span *span = run->copy[i].priv;

		if (span->first < first)
			first = span->first;
		if (span->last > last)
			last = span->last;
	}
	return last > first ? (double)(last - first) : 0;
}

uint64_t cal_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * XORSHIFT_STAR;
}
