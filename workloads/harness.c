// SPDX-License-Identifier: GPL-2.0
/*
 * harness.c - runs one testcase (see harness.h) as N pinned copies and
 * prints one JSON line with what it measured.
 *
 * Arguments are key=value words, the same words /init passes from
 * lockstudy.run=; `--help` lists them, `--check` only validates them.
 *
 * Copies meet at three barriers that the parent joins too:
 *   ready  every copy has done its warm-up; the parent starts the ROI
 *   go     the measured window starts
 *   done   every copy has ended its window; the parent ends the ROI
 * The barriers are futex-based and live in shared memory, so the same
 * code serves threads and processes. A waiter wakes every
 * FAILURE_POLL_NS to look for a copy that failed, so a failing process
 * copy can never leave the others waiting forever.
 *
 * With pin=1 the parent runs on copy 0's CPU from the start, so that
 * the memory it allocates and first touches (the barriers, the copies'
 * contexts, the threads' stacks) is on copy 0's NUMA node, and the
 * wake-ups at the ROI's edges stay there. Left to the scheduler, the
 * parent lands on whichever CPU is idle: on another node, the ROI then
 * carries a varying amount of node-crossing traffic that no copy made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "harness.h"
#include "m5ops.h"
#include "report.h"

#define FAILURE_POLL_NS		100000000L	/* 100 ms */
#define MAX_COPIES		4096
#define MAX_SECONDS		86400.0
#define ROI_WORK_ID		0

struct barrier {
	unsigned int count;
	unsigned int arrived;
	unsigned int generation;
};

/* The part of a run that all copies and the parent share. */
struct shared {
	struct barrier ready, go, done;
	struct barrier copies;		/* copy_barrier(): copies only */
	int stop;			/* seconds mode: the window is over */
	int failed;			/* a process copy died */
	struct copy_ctx copy[];
};

struct param_value {
	unsigned long long uint;
	const char *str;
};

static struct run_ctx run;
static struct shared *shared;
static struct param_value values[TC_MAX_PARAMS];
static bool in_copy_process;
static bool pin = true;
static int *pin_cpus;
static int pin_ncpus;

void die(int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_error(testcase.name, errnum, fmt, ap);
	va_end(ap);
	/* process copies poll this flag in their barriers: let them go too */
	if (shared)
		__atomic_store_n(&shared->failed, 1, __ATOMIC_RELEASE);
	if (in_copy_process)
		_exit(1);
	exit(1);
}

/* ---- parameters -------------------------------------------------------- */

static const struct tc_param common_params[] = {
	{ "threads", TC_UINT, "1", 1, MAX_COPIES, "run N copies as threads of one process" },
	{ "processes", TC_UINT, NULL, 1, MAX_COPIES, "run N copies as processes (instead of threads=)" },
	{ "warmup", TC_UINT, NULL, 0, ULLONG_MAX, "iterations per copy before the measured window" },
	{ "iterations", TC_UINT, NULL, 1, ULLONG_MAX, "measured window: iterations per copy" },
	{ "seconds", TC_STR, NULL, 0, 0, "measured window: seconds (decimal; instead of iterations=)" },
	{ "pin", TC_UINT, "1", 0, 1, "1: pin copy i to the i-th allowed CPU (round-robin)" },
	{ "m5ops", TC_STR, NULL, 0, 0, "gem5 m5 ops form: off, inst or addr (default: $" M5OPS_ENV ", else off)" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

static const struct tc_param *find_param(const struct tc_param *list, const char *name, size_t len)
{
	for (; list && list->name; list++)
		if (strlen(list->name) == len && !strncmp(list->name, name, len))
			return list;
	return NULL;
}

static unsigned long long parse_uint(const struct tc_param *p, const char *text)
{
	unsigned long long v;
	char *end;

	if (*text < '0' || *text > '9')
		die(0, "%s=%s: not a decimal number", p->name, text);
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end)
		die(0, "%s=%s: not a decimal number", p->name, text);
	if (v < p->min || v > p->max)
		die(0, "%s=%s: out of range [%llu, %llu]", p->name, text, p->min, p->max);
	return v;
}

static double parse_seconds(const char *text)
{
	double v;
	char *end;

	errno = 0;
	v = strtod(text, &end);
	if (errno || *end || end == text || !(v > 0) || v > MAX_SECONDS)
		die(0, "seconds=%s: expected a number of seconds in (0, %.0f]", text, MAX_SECONDS);
	return v;
}

unsigned long long param_uint(const struct run_ctx *r, const char *name)
{
	const struct tc_param *p = find_param(r->tc->params, name, strlen(name));

	if (!p || p->type != TC_UINT)
		die(0, "internal: no integer parameter '%s'", name);
	return values[p - r->tc->params].uint;
}

const char *param_str(const struct run_ctx *r, const char *name)
{
	const struct tc_param *p = find_param(r->tc->params, name, strlen(name));

	if (!p || p->type != TC_STR)
		die(0, "internal: no string parameter '%s'", name);
	return values[p - r->tc->params].str;
}

static void print_param(const struct tc_param *p)
{
	char range[64] = "";

	if (p->type == TC_UINT)
		snprintf(range, sizeof(range), " [%llu..%llu]", p->min, p->max);
	printf("  %s=%s%s\n      %s%s%s\n", p->name, p->type == TC_UINT ? "N" : "S",
	       range, p->help, p->def ? "; default " : "", p->def ? p->def : "");
}

static void usage(void)
{
	const struct testcase *tc = &testcase;
	const struct tc_param *p;

	printf("usage: %s [key=value ...] [--check] [--help]\n\n", tc->name);
	printf("%s (seed %s). One op = %s.\n", tc->summary, tc->seed, tc->ops_unit);
	printf("Prints one JSON line on stdout; exits non-zero with a message on any error.\n");
	printf("--check validates the arguments and exits.\n\nRun parameters:\n");
	for (p = common_params; p->name; p++) {
		if (!strcmp(p->name, "processes") && !(tc->modes & TC_PROCESSES))
			continue;
		if (!strcmp(p->name, "seconds") && !(tc->windows & TC_WINDOW_SECONDS))
			continue;
		print_param(p);
	}
	printf("  defaults: warmup=%llu, ", tc->default_warmup);
	if (tc->default_iterations)
		printf("iterations=%llu\n", tc->default_iterations);
	else
		printf("seconds=%s\n", tc->default_seconds);
	printf("\nTestcase parameters:\n");
	for (p = tc->params; p && p->name; p++)
		print_param(p);
}

static void parse_args(int argc, char **argv, bool *check_only)
{
	const struct testcase *tc = &testcase;
	const char *threads = NULL, *processes = NULL, *m5 = NULL, *secs = NULL;
	const char *warmup = NULL, *iters = NULL;
	const struct tc_param *p;
	char err[256];
	int i;

	for (p = tc->params; p && p->name; p++) {
		size_t k = p - tc->params;

		if (k >= TC_MAX_PARAMS)
			die(0, "internal: more than %d parameters", TC_MAX_PARAMS);
		values[k].str = p->def;
		if (p->type == TC_UINT)
			values[k].uint = parse_uint(p, p->def);
	}

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *value;
		size_t len = split_argument(arg, usage, check_only, &value);

		if (!len)
			continue;
		p = find_param(common_params, arg, len);
		if (p) {
			const char **slot = !strcmp(p->name, "threads") ? &threads :
					    !strcmp(p->name, "processes") ? &processes :
					    !strcmp(p->name, "warmup") ? &warmup :
					    !strcmp(p->name, "iterations") ? &iters :
					    !strcmp(p->name, "seconds") ? &secs :
					    !strcmp(p->name, "m5ops") ? &m5 : NULL;
			if (slot)
				*slot = value;
			else
				pin = parse_uint(p, value);
			continue;
		}
		p = find_param(tc->params, arg, len);
		if (!p)
			die(0, "argument '%s': unknown parameter '%.*s' (see --help)", arg, (int)len, arg);
		values[p - tc->params].str = value;
		if (p->type == TC_UINT)
			values[p - tc->params].uint = parse_uint(p, value);
	}

	if (threads && processes)
		die(0, "give threads= or processes=, not both");
	if (processes && !(tc->modes & TC_PROCESSES))
		die(0, "processes=: this testcase runs its copies as threads only");
	if (threads && !(tc->modes & TC_THREADS))
		die(0, "threads=: this testcase runs its copies as processes only");
	run.processes = processes || !(tc->modes & TC_THREADS);
	run.copies = 1;
	if (threads)
		run.copies = parse_uint(&common_params[0], threads);
	if (processes)
		run.copies = parse_uint(&common_params[1], processes);

	if (iters && secs)
		die(0, "give iterations= or seconds=, not both");
	if (secs && !(tc->windows & TC_WINDOW_SECONDS))
		die(0, "seconds=: this testcase measures a number of iterations only");
	if (iters && !(tc->windows & TC_WINDOW_ITERATIONS))
		die(0, "iterations=: this testcase measures seconds only");
	if (iters)
		run.iterations = parse_uint(&common_params[3], iters);
	else if (secs)
		run.seconds = parse_seconds(secs);
	else if (tc->default_iterations)
		run.iterations = tc->default_iterations;
	else
		run.seconds = parse_seconds(tc->default_seconds);
	run.warmup = warmup ? parse_uint(&common_params[2], warmup) : tc->default_warmup;

	if (m5ops_init(m5, err, sizeof(err)))
		die(0, "%s", err);
}

/* ---- barriers ---------------------------------------------------------- */

static long futex(unsigned int *addr, int op, unsigned int val, const struct timespec *timeout)
{
	return syscall(SYS_futex, addr, op, val, timeout, NULL, 0);
}

static void barrier_init(struct barrier *b, unsigned int count)
{
	b->count = count;
	b->arrived = 0;
	b->generation = 0;
}

/* Has a process copy failed or ended too early? Never reaps: the parent joins later. */
static bool run_failed(void)
{
	siginfo_t info;

	if (__atomic_load_n(&shared->failed, __ATOMIC_ACQUIRE))
		return true;
	if (run.processes && !in_copy_process) {
		memset(&info, 0, sizeof(info));
		if (!waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) && info.si_pid)
			__atomic_store_n(&shared->failed, 1, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&shared->failed, __ATOMIC_ACQUIRE);
}

static void give_up(void)
{
	if (in_copy_process)
		_exit(1);
	/* the parent: the failing copy printed why; collect everyone, then stop */
	while (wait(NULL) > 0)
		;
	die(0, "a copy failed or ended before the window was over");
}

static void barrier_wait(struct barrier *b)
{
	unsigned int gen = __atomic_load_n(&b->generation, __ATOMIC_ACQUIRE);
	struct timespec poll = { 0, FAILURE_POLL_NS };

	if (__atomic_add_fetch(&b->arrived, 1, __ATOMIC_ACQ_REL) == b->count) {
		__atomic_store_n(&b->arrived, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&b->generation, 1, __ATOMIC_RELEASE);
		futex(&b->generation, FUTEX_WAKE, INT_MAX, NULL);
		return;
	}
	while (__atomic_load_n(&b->generation, __ATOMIC_ACQUIRE) == gen) {
		if (run_failed())
			give_up();
		futex(&b->generation, FUTEX_WAIT, gen, &poll);
	}
}

void copy_barrier(const struct copy_ctx *copy)
{
	(void)copy;
	if (run.seconds > 0)
		die(0, "internal: copy_barrier() in seconds mode");
	barrier_wait(&shared->copies);
}

/* ---- one copy ---------------------------------------------------------- */

void pin_self(int cpu, const char *who)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die(errno, "%s: cannot pin to CPU %d", who, cpu);
}

static void pin_copy(struct copy_ctx *c)
{
	char who[32];

	c->cpu = -1;
	if (!pin || pin_ncpus == 0)
		return;
	c->cpu = pin_cpus[c->index % pin_ncpus];
	snprintf(who, sizeof(who), "copy %d", c->index);
	pin_self(c->cpu, who);
}

#define LOCK_REQUEST_FILE	"/sys/kernel/lockstudy/locks_request"

void register_locks(const char *request)
{
	size_t len = strlen(request);
	int fd = open(LOCK_REQUEST_FILE, O_WRONLY);

	if (fd < 0) {
		if (errno == ENOENT || errno == EACCES || errno == EPERM)
			return;	/* not the lockstudy kernel, or not root */
		die(errno, "open %s", LOCK_REQUEST_FILE);
	}
	if (write(fd, request, len) != (ssize_t)len)
		die(errno, "lock registry request '%s'", request);
	close(fd);
}

static void register_process_locks(void)
{
	const char *const *request;

	for (request = testcase.lock_requests; request && *request; request++)
		register_locks(*request);
}

static void copy_main(struct copy_ctx *c)
{
	const struct testcase *tc = &testcase;
	unsigned long long k, ops = 0;

	if (run.processes)
		register_process_locks();
	pin_copy(c);
	if (tc->copy_init)
		tc->copy_init(c);
	for (k = 0; k < run.warmup; k++) {
		tc->iteration(c);
		c->iterations++;
	}
	barrier_wait(&shared->ready);
	barrier_wait(&shared->go);

	c->in_window = true;
	getrusage(RUSAGE_THREAD, &c->usage_begin);
	if (run.iterations) {
		for (k = 0; k < run.iterations; k++) {
			ops += tc->iteration(c);
			c->iterations++;
		}
	} else {
		while (!__atomic_load_n(&shared->stop, __ATOMIC_RELAXED)) {
			ops += tc->iteration(c);
			c->iterations++;
		}
	}
	getrusage(RUSAGE_THREAD, &c->usage_end);
	c->in_window = false;
	c->ops = ops;
	barrier_wait(&shared->done);

	if (tc->copy_fini)
		tc->copy_fini(c);
}

static void *copy_thread(void *arg)
{
	copy_main(arg);
	return NULL;
}

/* ---- results ----------------------------------------------------------- */

static void json_uint_array(struct json *j, const char *key, int n,
			    unsigned long long (*get)(const struct copy_ctx *c))
{
	int i;

	json_array_begin(j, key);
	for (i = 0; i < n; i++)
		json_uint(j, NULL, get(&run.copy[i]));
	json_array_end(j);
}

static unsigned long long copy_ops(const struct copy_ctx *c) { return c->ops; }
static unsigned long long copy_cpu(const struct copy_ctx *c) { return (unsigned long long)c->cpu; }

static double tv_s(const struct timeval *tv)
{
	return tv->tv_sec + tv->tv_usec / 1e6;
}

unsigned long long sum_ops(const struct run_ctx *r)
{
	unsigned long long s = 0;
	int i;

	for (i = 0; i < r->copies; i++)
		s += r->copy[i].ops;
	return s;
}

unsigned long long sum_counter(const struct run_ctx *r, int counter)
{
	unsigned long long s = 0;
	int i;

	for (i = 0; i < r->copies; i++)
		s += r->copy[i].counters[counter];
	return s;
}

double window_user_s(const struct run_ctx *r)
{
	double s = 0;
	int i;

	for (i = 0; i < r->copies; i++)
		s += tv_s(&r->copy[i].usage_end.ru_utime) - tv_s(&r->copy[i].usage_begin.ru_utime);
	return s;
}

double window_system_s(const struct run_ctx *r)
{
	double s = 0;
	int i;

	for (i = 0; i < r->copies; i++)
		s += tv_s(&r->copy[i].usage_end.ru_stime) - tv_s(&r->copy[i].usage_begin.ru_stime);
	return s;
}

long window_minflt(const struct copy_ctx *c)
{
	return c->usage_end.ru_minflt - c->usage_begin.ru_minflt;
}

static void print_result(void)
{
	const struct testcase *tc = &testcase;
	struct json j;
	const struct tc_param *p;
	unsigned long long ops = sum_ops(&run);
	int i;

	json_begin(&j);
	json_str(&j, "testcase", tc->name);
	json_str(&j, "seed", tc->seed);
	json_str(&j, "status", "ok");
	json_str(&j, "mode", run.processes ? "processes" : "threads");
	json_uint(&j, "copies", run.copies);
	json_uint(&j, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
	json_uint_array(&j, "copy_cpu", run.copies, copy_cpu);
	json_int(&j, "parent_cpu", pin && pin_ncpus ? pin_cpus[0] : -1);
	json_uint(&j, "warmup", run.warmup);
	json_str(&j, "window", run.iterations ? "iterations" : "seconds");
	if (run.iterations)
		json_uint(&j, "iterations", run.iterations);
	else
		json_double(&j, "seconds", run.seconds);
	json_double(&j, "wall_s", run.wall_s);
	json_double(&j, "user_s", window_user_s(&run));
	json_double(&j, "system_s", window_system_s(&run));
	json_str(&j, "ops_unit", tc->ops_unit);
	json_uint(&j, "ops", ops);
	json_double(&j, "ops_per_s", run.wall_s > 0 ? ops / run.wall_s : 0);
	json_uint_array(&j, "copy_ops", run.copies, copy_ops);
	json_object_begin(&j, "params");
	for (p = tc->params; p && p->name; p++) {
		if (p->type == TC_UINT)
			json_uint(&j, p->name, values[p - tc->params].uint);
		else
			json_str(&j, p->name, values[p - tc->params].str);
	}
	json_object_end(&j);
	json_object_begin(&j, "counters");
	for (i = 0; tc->counter_names && tc->counter_names[i]; i++)
		json_uint(&j, tc->counter_names[i], sum_counter(&run, i));
	json_object_end(&j);
	json_object_begin(&j, "metrics");
	if (tc->report)
		tc->report(&run, &j);
	json_object_end(&j);
	json_str(&j, "m5ops", m5ops_mode_name());
	/* the block opens only once nothing can fail before its end */
	report_begin();
	json_end_print(&j);
	report_end();
}

/* ---- the run ----------------------------------------------------------- */

/* pin=1: the parent runs where copy 0 will run (see the comment at the top) */
static void pin_parent(void)
{
	if (pin && pin_ncpus > 0)
		pin_self(pin_cpus[0], "the parent");
}

static void find_cpus(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		die(errno, "sched_getaffinity");
	pin_cpus = calloc(CPU_SETSIZE, sizeof(*pin_cpus));
	if (!pin_cpus)
		die(errno, "out of memory");
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			pin_cpus[pin_ncpus++] = cpu;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_window(double seconds)
{
	double end = now_s() + seconds;
	double left;

	while ((left = end - now_s()) > 0) {
		struct timespec ts;

		if (left > FAILURE_POLL_NS / 1e9)
			left = FAILURE_POLL_NS / 1e9;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);
		if (run_failed())
			give_up();
	}
}

static void start_copies(pthread_t *threads)
{
	int i, err;

	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < run.copies; i++) {
		struct copy_ctx *c = &run.copy[i];

		if (run.processes) {
			pid_t pid = fork();

			if (pid < 0)
				die(errno, "fork of copy %d", i);
			if (pid == 0) {
				in_copy_process = true;
				copy_main(c);
				fflush(stdout);
				_exit(0);
			}
		} else {
			err = pthread_create(&threads[i], NULL, copy_thread, c);
			if (err)
				die(err, "pthread_create of copy %d", i);
		}
	}
}

static void join_copies(pthread_t *threads)
{
	int i, status;
	bool failed = false;

	if (!run.processes) {
		for (i = 0; i < run.copies; i++)
			pthread_join(threads[i], NULL);
		return;
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed = true;
	if (failed)
		die(0, "a copy process failed");
}

int main(int argc, char **argv)
{
	const struct testcase *tc = &testcase;
	bool check_only = false;
	pthread_t *threads;
	size_t bytes;
	double t0;
	int i;

	/* mmapsem's fork/exec child: exec of ourselves that exits at once */
	if (argc == 2 && !strcmp(argv[1], "--exec-child"))
		return 0;

	parse_args(argc, argv, &check_only);
	if (check_only)
		return 0;
	/* from here on, detailed CPUs: the set-up and warm-up shape the caches the ROI starts from */
	m5_switch_cpu();

	run.tc = tc;
	find_cpus();
	pin_parent();
	bytes = sizeof(*shared) + run.copies * sizeof(struct copy_ctx);
	shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		die(errno, "mmap of %zu shared bytes", bytes);
	barrier_init(&shared->ready, run.copies + 1);
	barrier_init(&shared->go, run.copies + 1);
	barrier_init(&shared->done, run.copies + 1);
	barrier_init(&shared->copies, run.copies);
	run.copy = shared->copy;
	for (i = 0; i < run.copies; i++) {
		run.copy[i].index = i;
		run.copy[i].run = &run;
	}
	threads = calloc(run.copies, sizeof(*threads));
	if (!threads)
		die(errno, "out of memory");

	if (tc->setup)
		tc->setup(&run);
	if (!run.processes)
		register_process_locks();
	start_copies(threads);

	barrier_wait(&shared->ready);
	m5_work_begin(ROI_WORK_ID, 0);
	t0 = now_s();
	barrier_wait(&shared->go);
	if (run.seconds > 0) {
		sleep_window(run.seconds);
		__atomic_store_n(&shared->stop, 1, __ATOMIC_RELAXED);
	}
	barrier_wait(&shared->done);
	run.wall_s = now_s() - t0;
	m5_work_end(ROI_WORK_ID, 0);

	join_copies(threads);
	if (tc->teardown)
		tc->teardown(&run);
	print_result();
	return 0;
}
