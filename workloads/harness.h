/* SPDX-License-Identifier: GPL-2.0 */
/*
 * harness.h - the interface between the lockstudy harness and a testcase.
 *
 * A testcase is one small file that defines `const struct testcase
 * testcase`. The harness (harness.c) owns everything else: argument
 * parsing, starting N copies as threads or processes, pinning them
 * round-robin to the allowed CPUs, the warm-up, the measured window (a
 * number of iterations per copy, or seconds), the m5 region-of-interest
 * markers around that window, per-copy counts and the one JSON result
 * line on stdout.
 *
 * Life of a run:
 *
 *   parent:  setup()
 *   copy i:  copy_init()  warm-up iterations  | window iterations |  copy_fini()
 *   parent:                             ROI begin            ROI end          teardown()  report()
 *
 * Every hook reports failure by calling die(): a testcase that finds
 * its own work wrong (a size, a content, a fault count) stops the whole
 * run with a message and a non-zero exit status; no JSON is printed.
 */
#ifndef LOCKSTUDY_HARNESS_H
#define LOCKSTUDY_HARNESS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>

#include "json.h"

#define TC_MAX_PARAMS	8
#define TC_MAX_COUNTERS	4

enum tc_param_type {
	TC_UINT,	/* a decimal integer in [min, max] */
	TC_STR,		/* a string (a path, a mode) */
};

struct tc_param {
	const char *name;
	enum tc_param_type type;
	const char *def;		/* default, as it would be written */
	unsigned long long min, max;	/* TC_UINT only */
	const char *help;
};

/* Which ways of running copies a testcase supports. */
#define TC_THREADS	(1u << 0)
#define TC_PROCESSES	(1u << 1)

/* Which measured windows a testcase supports. */
#define TC_WINDOW_ITERATIONS	(1u << 0)
#define TC_WINDOW_SECONDS	(1u << 1)

struct run_ctx;

/*
 * One copy. Lives in memory shared by all copies and the parent, so
 * the counters a copy writes are visible to the parent in both modes.
 */
struct copy_ctx {
	int index;			/* 0 .. copies-1 */
	int cpu;			/* the CPU it is pinned to, -1 if not */
	const struct run_ctx *run;
	void *priv;			/* the testcase's per-copy state */
	unsigned long long iterations;	/* done so far (warm-up included) */
	unsigned long long ops;		/* operations in the measured window */
	unsigned long long counters[TC_MAX_COUNTERS];	/* testcase-defined */
	struct rusage usage_begin, usage_end;	/* this copy, over the window */
	bool in_window;
} __attribute__((aligned(128)));	/* no false sharing between copies */

struct testcase {
	const char *name;
	const char *seed;		/* the seed it stands for, e.g. "001" */
	const char *summary;		/* one line for --help */
	const char *ops_unit;		/* what one counted op is */
	const struct tc_param *params;	/* terminated by a NULL name */
	const char *const *counter_names;	/* NULL-terminated, <= TC_MAX_COUNTERS */
	unsigned int modes;		/* TC_THREADS | TC_PROCESSES */
	unsigned int windows;		/* TC_WINDOW_* */
	unsigned long long default_warmup;
	unsigned long long default_iterations;	/* 0: default window is seconds */
	const char *default_seconds;		/* used when default_iterations is 0 */

	/* In the parent, before any copy starts. Optional. */
	void (*setup)(struct run_ctx *run);
	/* In the copy, before its warm-up. Optional. */
	void (*copy_init)(struct copy_ctx *copy);
	/* One iteration; returns the number of ops it did. Required. */
	unsigned long long (*iteration)(struct copy_ctx *copy);
	/* In the copy, after the window: check and clean up its work. Optional. */
	void (*copy_fini)(struct copy_ctx *copy);
	/* In the parent, after all copies ended. Optional. */
	void (*teardown)(struct run_ctx *run);
	/* Extra fields of the JSON "metrics" object. Optional. */
	void (*report)(const struct run_ctx *run, struct json *json);
	/*
	 * Per-process locks to list in the kernel's lock registry
	 * ("mm", "files"; NULL-terminated), requested by every process that
	 * runs copies, before the warm-up. Optional.
	 */
	const char *const *lock_requests;
};

/* What the harness knows about a run; read-only for testcases except `priv`. */
struct run_ctx {
	const struct testcase *tc;
	int copies;
	bool processes;
	unsigned long long warmup;
	unsigned long long iterations;	/* per copy; 0 in seconds mode */
	double seconds;			/* 0 in iterations mode */
	double wall_s;			/* the measured window, set after it */
	struct copy_ctx *copy;		/* copies[copies] in shared memory */
	void *priv;			/* the testcase's run-wide state */
};

/* Parameter values, after validation. */
unsigned long long param_uint(const struct run_ctx *run, const char *name);
const char *param_str(const struct run_ctx *run, const char *name);

/*
 * Ask the lockstudy kernel to list locks of this process in its lock
 * registry (/sys/kernel/lockstudy/locks_request: "mm", "files",
 * "path /abs/path"), so that the analysis can attribute coherence traffic
 * to them. A kernel without the registry (or not root) is not an error:
 * the request is skipped; a request the registry refuses is.
 */
void register_locks(const char *request);

/* Pin the calling thread to `cpu`; die() naming `who` if it cannot run there. */
void pin_self(int cpu, const char *who);

/* Wait for every copy (not the parent) to arrive; iterations mode only. */
void copy_barrier(const struct copy_ctx *copy);

/* die() (json.h): print "<testcase>: error: ..." (with errno text if errnum) and stop the run. */

/* Sum of one counter, or of ops, over all copies. */
unsigned long long sum_counter(const struct run_ctx *run, int counter);
unsigned long long sum_ops(const struct run_ctx *run);
/* Sums over the window of all copies, from their own getrusage(). */
double window_user_s(const struct run_ctx *run);
double window_system_s(const struct run_ctx *run);
long window_minflt(const struct copy_ctx *copy);

/* report() writes its fields with the JSON writer of json.h. */

extern const struct testcase testcase;

#endif /* LOCKSTUDY_HARNESS_H */
