// SPDX-License-Identifier: GPL-2.0
/*
 * kbench - drive the kernel's in-kernel lock bench and print what it
 * measured as one JSON line.
 *
 * The bench (/sys/kernel/lockstudy/bench/, documented in
 * kernel/patches/README.md, "Lock bench") runs one kernel thread per
 * CPU of a list, each taking and releasing one static spinlock with the
 * lock code of a chosen variant (lock=spinlock), or one static rwsem,
 * the first writers= threads for write and the others for read
 * (lock=rwsem), for a duration. This program writes
 * the settings, does one unmeasured warm-up run of warmup_ms, then,
 * inside the m5 region of interest, triggers `run` repeat= times and
 * reads `result` after each run.
 *
 * The warm-up is what the harness's warm-up iterations are to its
 * testcases: under gem5 the detailed CPUs take over as this program
 * starts (m5ops.h), with caches the fast-forward left cold on Ruby, so
 * without it the region would open with every CPU missing on the
 * kernel's wake-up and scheduling paths and on the bench's own lines.
 *
 * It has no copies of its own (the kernel runs the threads), so it does
 * not use the harness; its JSON has the harness's shape: the kernel
 * threads are the copies, an acquisition of the bench lock is one op,
 * and metrics.runs holds every key of every run's result, the
 * per-thread lines as an array.
 *
 * The variants are the kernel's business: a name the kernel does not
 * know is refused by the kernel (EINVAL) and reported as such; nothing
 * here lists them.
 *
 * Checks, on every run: the result echoes the settings written; mutual
 * exclusion held ("exclusion ok", guarded_count = write_acquisitions,
 * which are all the acquisitions of a spinlock; no reader overlapped a
 * writer); the
 * thread lines are one per CPU asked and add up to the totals;
 * handoffs_local + handoffs_remote = handoffs; acquisitions_per_sec is
 * acquisitions over elapsed_ns. Any failure: a message, exit status 1,
 * no JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "json.h"
#include "m5ops.h"
#include "report.h"

#define NAME			"kbench"
#define BENCH_DIR		"/sys/kernel/lockstudy/bench"
/* Tests point this at a fake bench directory (natively, no kernel bench). */
#define BENCH_DIR_ENV		"LOCKSTUDY_KBENCH_DIR"
/* The boot variant, next to the bench directory: <bench>/../spinlock. */
#define SPINLOCK_FILE		"spinlock"
#define ONLINE_FILE		"/sys/devices/system/cpu/online"
#define MAX_CPUS		4096
#define MAX_REPEAT		100
#define VALUE_BYTES		256
#define LIST_BYTES		(8 * MAX_CPUS)
#define RESULT_BYTES		8192	/* the kernel writes at most a page */
#define MAX_FIELDS		64
#define MAX_THREAD_FIELDS	16
#define NSEC_PER_SEC		1000000000ULL
#define ROI_WORK_ID		0

/* The bench's own limits (kernel/patches/README.md, "Lock bench"). */
#define BENCH_MAX_MS		10000
#define BENCH_MAX_LOOPS		1000000

enum param_type { P_UINT, P_STR };

struct param {
	const char *name;
	enum param_type type;
	const char *def;
	unsigned long long min, max;	/* P_UINT */
	const char *help;
	const char *value;		/* as given, or def */
	unsigned long long uint;	/* P_UINT, parsed */
};

#define STR_PARAM(n, d, h)		{ .name = n, .type = P_STR, .def = d, .help = h }
#define UINT_PARAM(n, d, lo, hi, h)	{ .name = n, .type = P_UINT, .def = d, .min = lo, .max = hi, .help = h }

static struct param params[] = {
	STR_PARAM("variant", "boot",
		  "lock code run on the bench lock: a variant the kernel knows, or boot: the one lockstudy.spinlock= chose"),
	STR_PARAM("cpus", "all",
		  "one bench thread per CPU of this list (0-3, 0-1.4-5: '.' or ',' between parts), or all: every online CPU"),
	UINT_PARAM("duration_ms", "1000", 1, BENCH_MAX_MS, "length of one run, ms"),
	UINT_PARAM("hold_loops", "0", 0, BENCH_MAX_LOOPS, "cpu_relax() iterations inside the critical section"),
	UINT_PARAM("think_loops", "0", 0, BENCH_MAX_LOOPS, "cpu_relax() iterations between two acquisitions"),
	STR_PARAM("placement", "padded",
		  "padded: the lock alone in its cache line; shared: the line also holds a counter every thread increments; "
		  "pair-padded, pair-packed: every other thread takes a second lock, on a line of its own or on the first "
		  "lock's (the smp-bench-pair build; two CPUs or more)"),
	STR_PARAM("lock", "spinlock",
		  "spinlock: the bench spinlock of variant=; rwsem: one rwsem, its wait_lock of the boot variant (variant=boot)"),
	UINT_PARAM("writers", "1", 0, MAX_CPUS,
		   "lock=rwsem: the threads, the first in CPU order, that take the rwsem for write; the others read"),
	UINT_PARAM("repeat", "1", 1, MAX_REPEAT, "runs, one after the other"),
	UINT_PARAM("warmup_ms", "1", 0, BENCH_MAX_MS, "length of one unmeasured run before the region of interest, ms (0: none)"),
	STR_PARAM("m5ops", NULL, "gem5 m5 ops form: off, inst or addr (default: $" M5OPS_ENV ", else off)"),
	{ .name = NULL },
};

static const char *const placements[] = { "padded", "shared", "pair-padded", "pair-packed" };
static const char *const locks[] = { "spinlock", "rwsem" };

/* One "key value" line of a result, or one "key value" pair of a thread line. */
struct field {
	char *key;
	char *value;
};

struct thread {
	struct field field[MAX_THREAD_FIELDS];
	int nfields;
	unsigned long long cpu, acquisitions, handoffs_local, handoffs_remote;
};

struct run {
	char text[RESULT_BYTES];
	struct field field[MAX_FIELDS];
	int nfields;
	struct thread *thread;		/* one per CPU asked */
	int nthreads;
	unsigned long long acquisitions, handoffs_local, handoffs_remote, handoffs;
	unsigned long long elapsed_ns;
};

static const char *bench_dir = BENCH_DIR;
static bool want_cpu[MAX_CPUS];
static int ncpus;
static char cpu_list[LIST_BYTES];	/* what is written to the kernel */
static char variant[VALUE_BYTES];
static struct run *runs;
static double wall_s;
static char warmup_text[RESULT_BYTES];
static unsigned long long warmup_ops;	/* the warm-up's acquisitions */

void die(int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_error(NAME, errnum, fmt, ap);
	va_end(ap);
	exit(1);
}

/* ---- parameters -------------------------------------------------------- */

static struct param *param(const char *name)
{
	struct param *p;

	for (p = params; p->name; p++)
		if (!strcmp(p->name, name))
			return p;
	die(0, "internal: no parameter '%s'", name);
}

static bool is_rwsem(void)
{
	return !strcmp(param("lock")->value, "rwsem");
}

/* placement=pair-*: two bench locks, every other thread on the second */
static bool is_pair(void)
{
	return !strncmp(param("placement")->value, "pair-", strlen("pair-"));
}

static unsigned long long parse_number(const char *what, const char *text)
{
	unsigned long long v;
	char *end;

	if (*text < '0' || *text > '9')
		die(0, "%s=%s: not a decimal number", what, text);
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end)
		die(0, "%s=%s: not a decimal number", what, text);
	return v;
}

/*
 * A CPU list as the kernel writes it (0-3,6) or as a run spec must
 * (0-3.6: ',' separates a spec's KEY=VALUE pairs), into `set`; returns
 * the number of CPUs. `what` names the list in messages.
 */
static int parse_cpu_list(const char *what, const char *text, bool *set)
{
	char copy[LIST_BYTES], *part, *save = NULL;
	int count = 0;

	if (strlen(text) >= sizeof(copy))
		die(0, "%s=%s: too long", what, text);
	strcpy(copy, text);
	memset(set, 0, MAX_CPUS * sizeof(*set));
	for (part = strtok_r(copy, ",.\n", &save); part; part = strtok_r(NULL, ",.\n", &save)) {
		char *dash = strchr(part, '-');
		unsigned long long first, last, cpu;

		if (dash)
			*dash = '\0';
		first = parse_number(what, part);
		last = dash ? parse_number(what, dash + 1) : first;
		if (first > last || last >= MAX_CPUS)
			die(0, "%s=%s: bad range %llu-%llu (CPUs are 0..%d)", what, text, first, last, MAX_CPUS - 1);
		for (cpu = first; cpu <= last; cpu++) {
			if (!set[cpu])
				count++;
			set[cpu] = true;
		}
	}
	if (!count)
		die(0, "%s=%s: no CPU in the list", what, text);
	return count;
}

/* The kernel's form of a CPU set: ascending ranges joined by ','. */
static void format_cpu_list(const bool *set, char *out, size_t len)
{
	size_t used = 0;
	int cpu = 0, last;

	out[0] = '\0';
	while (cpu < MAX_CPUS) {
		if (!set[cpu]) {
			cpu++;
			continue;
		}
		for (last = cpu; last + 1 < MAX_CPUS && set[last + 1]; last++)
			;
		used += snprintf(out + used, len - used, "%s%d", used ? "," : "", cpu);
		if (last > cpu)
			used += snprintf(out + used, len - used, "-%d", last);
		if (used >= len)
			die(0, "internal: CPU list longer than %zu bytes", len);
		cpu = last + 1;
	}
}

static bool is_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static void usage(void)
{
	const struct param *p;
	char range[64];

	printf("usage: " NAME " [key=value ...] [--check] [--help]\n\n");
	printf("Drives the kernel's lock bench (" BENCH_DIR "/, a kernel with CONFIG_LOCKSTUDY_BENCH):\n");
	printf("writes the settings, runs it repeat= times inside the m5 region of interest and\n");
	printf("prints one JSON line with every key of every run's result. Exits non-zero with a\n");
	printf("message when the kernel refuses a setting or a run's numbers do not add up.\n");
	printf("--check validates the arguments and exits.\n\nParameters:\n");
	for (p = params; p->name; p++) {
		range[0] = '\0';
		if (p->type == P_UINT)
			snprintf(range, sizeof(range), " [%llu..%llu]", p->min, p->max);
		printf("  %s=%s%s\n      %s%s%s\n", p->name, p->type == P_UINT ? "N" : "S", range,
		       p->help, p->def ? "; default " : "", p->def ? p->def : "");
	}
}

static void parse_args(int argc, char **argv, bool *check_only)
{
	struct param *p;
	char err[256];
	unsigned int k;
	bool known;
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *value;
		size_t len = split_argument(arg, usage, check_only, &value);

		if (!len)
			continue;
		for (p = params; p->name; p++)
			if (strlen(p->name) == len && !strncmp(p->name, arg, len))
				break;
		if (!p->name)
			die(0, "argument '%s': unknown parameter '%.*s' (see --help)", arg, (int)len, arg);
		p->value = value;
	}
	for (p = params; p->name; p++) {
		if (!p->value)
			p->value = p->def;
		if (p->type != P_UINT)
			continue;
		p->uint = parse_number(p->name, p->value);
		if (p->uint < p->min || p->uint > p->max)
			die(0, "%s=%s: out of range [%llu, %llu]", p->name, p->value, p->min, p->max);
	}

	/* which variants exist is the kernel's to say; here only the form */
	if (!is_word(param("variant")->value))
		die(0, "variant=%s: expected a variant name ([a-z0-9_]+) or boot", param("variant")->value);
	known = false;
	for (k = 0; k < ARRAY_SIZE(placements); k++)
		known |= !strcmp(param("placement")->value, placements[k]);
	if (!known)
		die(0, "placement=%s: expected padded, shared, pair-padded or pair-packed", param("placement")->value);
	known = false;
	for (k = 0; k < ARRAY_SIZE(locks); k++)
		known |= !strcmp(param("lock")->value, locks[k]);
	if (!known)
		die(0, "lock=%s: expected spinlock or rwsem", param("lock")->value);
	if (is_rwsem()) {
		/* the rwsem's wait_lock is the kernel's own spinlock: the boot variant */
		if (strcmp(param("variant")->value, "boot"))
			die(0, "variant=%s: lock=rwsem runs the boot variant (its wait_lock is the kernel's); leave variant= out",
			    param("variant")->value);
		if (param("placement")->value != param("placement")->def)
			die(0, "placement=%s: lock=rwsem has its cache line to itself; leave placement= out",
			    param("placement")->value);
	} else if (param("writers")->value != param("writers")->def) {
		die(0, "writers=%s: only lock=rwsem has readers and writers; every spinlock thread writes",
		    param("writers")->value);
	}
	if (strcmp(param("cpus")->value, "all"))
		ncpus = parse_cpu_list("cpus", param("cpus")->value, want_cpu);
	if (is_pair() && strcmp(param("cpus")->value, "all") && ncpus < 2)
		die(0, "placement=%s: a lock pair needs two bench threads or more; cpus=%s gives %d",
		    param("placement")->value, param("cpus")->value, ncpus);

	if (m5ops_init(param("m5ops")->value, err, sizeof(err)))
		die(0, "%s", err);
}

/* ---- the kernel's files ------------------------------------------------ */

static bool read_text(const char *path, char *buf, size_t len)
{
	ssize_t got;
	size_t used = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	while ((got = read(fd, buf + used, len - 1 - used)) > 0) {
		used += got;
		if (used == len - 1)
			die(0, "%s: more than %zu bytes", path, len - 1);
	}
	if (got < 0)
		die(errno, "reading %s", path);
	close(fd);
	buf[used] = '\0';
	return true;
}

static void bench_path(char *out, size_t len, const char *file)
{
	if ((size_t)snprintf(out, len, "%s/%s", bench_dir, file) >= len)
		die(0, "path %s/%s too long", bench_dir, file);
}

/* Write one setting; the kernel checks it (EINVAL, ERANGE) and we say so. */
static void write_setting(const char *file, const char *value, const char *asked)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	ssize_t done;
	int fd;

	bench_path(path, sizeof(path), file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		die(errno, "opening %s", path);
	done = write(fd, value, len);
	if (done < 0 && errno == EINVAL && !strcmp(file, "placement") && is_pair())
		die(0, "placement=%s: this kernel's bench has no lock pair (only the smp-bench-pair build applies lockstudy-bench-lock-pair.patch; writing %s: %s)",
		    value, path, strerror(EINVAL));
	if (done < 0 && errno == EINVAL && !strcmp(file, "variant"))
		die(0, "variant=%s: the kernel's lock bench does not know this variant (writing %s: %s)",
		    value, path, strerror(EINVAL));
	if (done < 0 && !strcmp(file, "run"))
		die(errno, "writing %s: the bench did not run", path);
	if (done < 0)
		die(errno, "%s: the kernel refused '%s' (writing %s)", asked, value, path);
	if ((size_t)done != len)
		die(0, "writing %s: %zd of %zu bytes", path, done, len);
	if (close(fd))
		die(errno, "writing %s", path);
}

static bool bench_has(const char *file)
{
	char path[PATH_MAX];
	struct stat st;

	bench_path(path, sizeof(path), file);
	return !stat(path, &st);
}

static void trim(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

static void find_bench(void)
{
	const char *env = getenv(BENCH_DIR_ENV);
	struct stat st;

	if (env && *env)
		bench_dir = env;
	if (stat(bench_dir, &st) || !S_ISDIR(st.st_mode))
		die(0, "%s is absent: this kernel has no in-kernel lock bench (it was built without CONFIG_LOCKSTUDY_BENCH)",
		    bench_dir);
}

/* variant=boot: the first word of <bench>/../spinlock ("hbo", "qspinlock (invalid value ...)"). */
static void resolve_variant(void)
{
	char path[PATH_MAX], text[VALUE_BYTES];
	const char *asked = param("variant")->value;

	if (strcmp(asked, "boot")) {
		snprintf(variant, sizeof(variant), "%s", asked);
		return;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/../%s", bench_dir, SPINLOCK_FILE) >= sizeof(path))
		die(0, "path %s/../%s too long", bench_dir, SPINLOCK_FILE);
	if (!read_text(path, text, sizeof(text)))
		die(errno, "variant=boot: cannot read the boot variant from %s (a kernel without CONFIG_LOCKSTUDY_SPINLOCK?); give variant=",
		    path);
	text[strcspn(text, " \n")] = '\0';
	if (!is_word(text))
		die(0, "variant=boot: %s holds '%s', not a variant name", path, text);
	snprintf(variant, sizeof(variant), "%s", text);
}

static void resolve_cpus(void)
{
	static bool online[MAX_CPUS];
	char text[LIST_BYTES];
	int cpu;

	if (!read_text(ONLINE_FILE, text, sizeof(text)))
		die(errno, "reading %s", ONLINE_FILE);
	trim(text);
	parse_cpu_list(ONLINE_FILE, text, online);
	if (!strcmp(param("cpus")->value, "all")) {
		ncpus = parse_cpu_list(ONLINE_FILE, text, want_cpu);
	} else {
		for (cpu = 0; cpu < MAX_CPUS; cpu++)
			if (want_cpu[cpu] && !online[cpu])
				die(0, "cpus=%s: CPU %d is not online (online: %s)", param("cpus")->value, cpu, text);
	}
	format_cpu_list(want_cpu, cpu_list, sizeof(cpu_list));
	if (is_rwsem() && param("writers")->uint > (unsigned long long)ncpus)
		die(0, "writers=%llu: more writers than the %d bench threads (cpus=%s)", param("writers")->uint, ncpus,
		    param("cpus")->value);
	if (is_pair() && ncpus < 2)
		die(0, "placement=%s: a lock pair needs two bench threads or more; cpus=%s gives %d",
		    param("placement")->value, param("cpus")->value, ncpus);
}

/* ---- one run's result ---------------------------------------------------- */

static const char *field_value(const struct field *f, int n, const char *key)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(f[i].key, key))
			return f[i].value;
	return NULL;
}

static const char *result_str(const struct run *r, int index, const char *key)
{
	const char *v = field_value(r->field, r->nfields, key);

	if (!v)
		die(0, "run %d: the result has no '%s' line (see kernel/patches/README.md, \"Lock bench\")",
		    index, key);
	return v;
}

static unsigned long long result_uint(const struct run *r, int index, const char *key)
{
	const char *v = result_str(r, index, key);
	char what[VALUE_BYTES];

	snprintf(what, sizeof(what), "run %d: result %s", index, key);
	return parse_number(what, v);
}

static unsigned long long thread_uint(const struct thread *t, int index, int k, const char *key)
{
	const char *v = field_value(t->field, t->nfields, key);
	char what[VALUE_BYTES];

	if (!v)
		die(0, "run %d: thread line %d has no '%s'", index, k, key);
	snprintf(what, sizeof(what), "run %d: thread line %d %s", index, k, key);
	return parse_number(what, v);
}

/* "thread cpu 0 node 0 acquisitions 14274 ...": key value pairs after "thread". */
static void parse_thread(struct run *r, int index, char *rest)
{
	struct thread *t;
	char *key, *value, *save = NULL;

	if (r->nthreads == ncpus)
		die(0, "run %d: more thread lines than the %d CPUs asked", index, ncpus);
	t = &r->thread[r->nthreads++];
	for (key = strtok_r(rest, " ", &save); key; key = strtok_r(NULL, " ", &save)) {
		value = strtok_r(NULL, " ", &save);
		if (!value)
			die(0, "run %d: thread line %d: '%s' without a value", index, r->nthreads - 1, key);
		if (t->nfields == MAX_THREAD_FIELDS)
			die(0, "run %d: thread line %d: more than %d fields", index, r->nthreads - 1,
			    MAX_THREAD_FIELDS);
		t->field[t->nfields].key = key;
		t->field[t->nfields++].value = value;
	}
}

static void parse_result(struct run *r, int index)
{
	char *line, *save = NULL;

	for (line = strtok_r(r->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *space = strchr(line, ' ');

		if (!space)
			die(0, "run %d: result line '%s' is not 'key value'", index, line);
		*space = '\0';
		if (!strcmp(line, "thread")) {
			parse_thread(r, index, space + 1);
			continue;
		}
		if (r->nfields == MAX_FIELDS)
			die(0, "run %d: more than %d result lines", index, MAX_FIELDS);
		r->field[r->nfields].key = line;
		r->field[r->nfields++].value = space + 1;
	}
}

/* The acquisitions of the first `writers` threads in CPU order: the writers. */
static unsigned long long thread_writes(const struct run *r, unsigned long long writers)
{
	unsigned long long cpu, seen = 0, sum = 0;
	int k;

	for (cpu = 0; cpu < MAX_CPUS && seen < writers; cpu++) {
		for (k = 0; k < r->nthreads; k++) {
			if (r->thread[k].cpu == cpu) {
				sum += r->thread[k].acquisitions;
				seen++;
			}
		}
	}
	return sum;
}

static void check_run(struct run *r, int index)
{
	static bool echoed[MAX_CPUS], seen[MAX_CPUS];
	unsigned long long acq = 0, local = 0, remote = 0, guarded, per_sec, expected, writes, writers, overlaps;
	const char *exclusion;
	bool rwsem_lines;
	int k;

	/* the result describes the run we asked for */
	if (strcmp(result_str(r, index, "variant"), variant))
		die(0, "run %d: the result says variant %s, %s was written", index,
		    result_str(r, index, "variant"), variant);
	if (strcmp(result_str(r, index, "placement"), param("placement")->value))
		die(0, "run %d: the result says placement %s, %s was written", index,
		    result_str(r, index, "placement"), param("placement")->value);
	/* a kernel without the bench's rwsem prints no lock lines: a spinlock's, every thread writing */
	rwsem_lines = field_value(r->field, r->nfields, "lock") != NULL;
	if (!rwsem_lines && is_rwsem())
		die(0, "run %d: the result has no 'lock' line: this kernel's bench has no rwsem", index);
	if (rwsem_lines && strcmp(result_str(r, index, "lock"), param("lock")->value))
		die(0, "run %d: the result says lock %s, %s was written", index,
		    result_str(r, index, "lock"), param("lock")->value);
	writers = rwsem_lines ? result_uint(r, index, "writers") : (unsigned long long)ncpus;
	if (writers != (is_rwsem() ? param("writers")->uint : (unsigned long long)ncpus))
		die(0, "run %d: the result says writers %llu, not the %llu asked (a spinlock's threads all write)", index,
		    writers, is_rwsem() ? param("writers")->uint : (unsigned long long)ncpus);
	parse_cpu_list("result cpus", result_str(r, index, "cpus"), echoed);
	if (memcmp(echoed, want_cpu, sizeof(echoed)))
		die(0, "run %d: the result says cpus %s, %s was written", index,
		    result_str(r, index, "cpus"), cpu_list);
	if (result_uint(r, index, "hold_loops") != param("hold_loops")->uint ||
	    result_uint(r, index, "think_loops") != param("think_loops")->uint)
		die(0, "run %d: the result's hold_loops/think_loops are not the ones written", index);
	result_str(r, index, "lock_address");
	result_uint(r, index, "lock_size");
	if (is_pair())
		result_str(r, index, "pair_lock_address");

	r->elapsed_ns = result_uint(r, index, "elapsed_ns");
	r->acquisitions = result_uint(r, index, "acquisitions");
	r->handoffs_local = result_uint(r, index, "handoffs_local");
	r->handoffs_remote = result_uint(r, index, "handoffs_remote");
	r->handoffs = result_uint(r, index, "handoffs");
	guarded = result_uint(r, index, "guarded_count");
	exclusion = result_str(r, index, "exclusion");
	writes = rwsem_lines ? result_uint(r, index, "write_acquisitions") : r->acquisitions;
	overlaps = rwsem_lines ? result_uint(r, index, "reader_overlaps") : 0;

	/* mutual exclusion: every write counted once, no reader beside a writer */
	if (strcmp(exclusion, "ok") || guarded != writes || overlaps)
		die(0, "run %d: mutual exclusion BROKEN with lock %s, variant %s: exclusion %s, guarded_count %llu, write_acquisitions %llu, reader_overlaps %llu",
		    index, param("lock")->value, variant, exclusion, guarded, writes, overlaps);
	if (writes > r->acquisitions || (!is_rwsem() && writes != r->acquisitions))
		die(0, "run %d: write_acquisitions %llu of %llu acquisitions with lock %s", index, writes,
		    r->acquisitions, param("lock")->value);
	/* the totals */
	if (r->handoffs_local + r->handoffs_remote != r->handoffs)
		die(0, "run %d: handoffs_local %llu + handoffs_remote %llu != handoffs %llu",
		    index, r->handoffs_local, r->handoffs_remote, r->handoffs);
	if (!r->elapsed_ns)
		die(0, "run %d: elapsed_ns is 0", index);
	per_sec = result_uint(r, index, "acquisitions_per_sec");
	expected = (unsigned long long)((unsigned __int128)r->acquisitions * NSEC_PER_SEC / r->elapsed_ns);
	if (per_sec != expected)
		die(0, "run %d: acquisitions_per_sec %llu, but %llu acquisitions in %llu ns make %llu",
		    index, per_sec, r->acquisitions, r->elapsed_ns, expected);

	/* one thread per CPU asked, adding up to the totals */
	if (r->nthreads != ncpus)
		die(0, "run %d: %d thread lines for the %d CPUs asked (%s)", index, r->nthreads, ncpus, cpu_list);
	memset(seen, 0, sizeof(seen));
	for (k = 0; k < r->nthreads; k++) {
		struct thread *t = &r->thread[k];

		t->cpu = thread_uint(t, index, k, "cpu");
		thread_uint(t, index, k, "node");
		t->acquisitions = thread_uint(t, index, k, "acquisitions");
		t->handoffs_local = thread_uint(t, index, k, "handoffs_local");
		t->handoffs_remote = thread_uint(t, index, k, "handoffs_remote");
		if (t->cpu >= MAX_CPUS || !want_cpu[t->cpu] || seen[t->cpu])
			die(0, "run %d: thread line %d is on CPU %llu: not one of %s, or twice", index, k,
			    t->cpu, cpu_list);
		seen[t->cpu] = true;
		acq += t->acquisitions;
		local += t->handoffs_local;
		remote += t->handoffs_remote;
	}
	if (acq != r->acquisitions || local != r->handoffs_local || remote != r->handoffs_remote)
		die(0, "run %d: the thread lines add up to acquisitions %llu, handoffs_local %llu, handoffs_remote %llu; the totals say %llu, %llu, %llu",
		    index, acq, local, remote, r->acquisitions, r->handoffs_local, r->handoffs_remote);
	if (thread_writes(r, writers) != writes)
		die(0, "run %d: the first %llu thread lines (the writers) add up to %llu acquisitions; write_acquisitions says %llu",
		    index, writers, thread_writes(r, writers), writes);
}

/* ---- the bench ----------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The warm-up's acquisitions, from its result's "acquisitions" line: a
 * count the kernel keeps over the whole testcase (its lock events) covers
 * the warm-up's operations as well as the runs'.
 */
static unsigned long long warmup_acquisitions(void)
{
	static const char key[] = "acquisitions ";
	const char *line = warmup_text;
	char value[VALUE_BYTES];
	size_t len;

	while (line && *line) {
		if (!strncmp(line, key, strlen(key))) {
			len = strcspn(line + strlen(key), "\n");
			if (len >= sizeof(value))
				die(0, "warm-up result: acquisitions value too long");
			memcpy(value, line + strlen(key), len);
			value[len] = '\0';
			return parse_number("warm-up result acquisitions", value);
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	die(0, "the warm-up's result has no 'acquisitions' line (see kernel/patches/README.md, \"Lock bench\")");
}

static void bench(void)
{
	unsigned long long repeat = param("repeat")->uint, i;
	char path[PATH_MAX];
	double t0;

	write_setting("variant", variant, "variant");
	write_setting("placement", param("placement")->value, "placement");
	if (is_rwsem()) {
		if (!bench_has("lock"))
			die(0, "lock=rwsem: this kernel's bench has no rwsem (%s/lock is absent: only the smp-rwsem-bench build applies lockstudy-bench-rwsem.patch)",
			    bench_dir);
		write_setting("lock", "rwsem", "lock");
		write_setting("writers", param("writers")->value, "writers");
	} else if (bench_has("lock")) {
		/* the bench keeps its settings from one testcase to the next */
		write_setting("lock", "spinlock", "lock");
	}
	write_setting("cpus", cpu_list, "cpus");
	write_setting("hold_loops", param("hold_loops")->value, "hold_loops");
	write_setting("think_loops", param("think_loops")->value, "think_loops");
	if (param("warmup_ms")->uint) {
		/* the warm-up, with every setting of the runs but their length; its result is left out */
		write_setting("duration_ms", param("warmup_ms")->value, "warmup_ms");
		write_setting("run", "1", "run");
		bench_path(path, sizeof(path), "result");
		if (!read_text(path, warmup_text, sizeof(warmup_text)))
			die(errno, "reading %s after the warm-up", path);
		warmup_ops = warmup_acquisitions();
	}
	write_setting("duration_ms", param("duration_ms")->value, "duration_ms");

	runs = calloc(repeat, sizeof(*runs));
	if (!runs)
		die(errno, "out of memory");
	for (i = 0; i < repeat; i++) {
		runs[i].thread = calloc(ncpus, sizeof(*runs[i].thread));
		if (!runs[i].thread)
			die(errno, "out of memory");
	}

	bench_path(path, sizeof(path), "result");
	m5_work_begin(ROI_WORK_ID, 0);
	t0 = now_s();
	for (i = 0; i < repeat; i++) {
		write_setting("run", "1", "run");
		if (!read_text(path, runs[i].text, sizeof(runs[i].text)))
			die(errno, "reading %s", path);
	}
	wall_s = now_s() - t0;
	m5_work_end(ROI_WORK_ID, 0);

	for (i = 0; i < repeat; i++) {
		parse_result(&runs[i], i);
		check_run(&runs[i], i);
	}
}

/* ---- the JSON line ------------------------------------------------------- */

/* Values that are lists or words even when they look like a number ("cpus 2"). */
static bool is_text_key(const char *key)
{
	static const char *const text_keys[] = { "variant", "placement", "lock", "cpus", "lock_address", "pair_lock_address",
						  "exclusion" };
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(text_keys); k++)
		if (!strcmp(key, text_keys[k]))
			return true;
	return false;
}

static void json_field(struct json *j, const struct field *f)
{
	const char *s = f->value;

	if (!is_text_key(f->key) && *s && strspn(s, "0123456789") == strlen(s))
		json_uint(j, f->key, strtoull(s, NULL, 10));
	else
		json_str(j, f->key, s);
}

/* Acquisitions of the thread on `cpu`, over all runs. */
static unsigned long long cpu_acquisitions(unsigned long long cpu)
{
	unsigned long long i, sum = 0;
	int k;

	for (i = 0; i < param("repeat")->uint; i++)
		for (k = 0; k < runs[i].nthreads; k++)
			if (runs[i].thread[k].cpu == cpu)
				sum += runs[i].thread[k].acquisitions;
	return sum;
}

static void print_result(void)
{
	unsigned long long repeat = param("repeat")->uint, i;
	unsigned long long ops = 0, local = 0, remote = 0, handoffs = 0, elapsed_ns = 0;
	const struct param *p;
	struct json j;
	int k, f;

	for (i = 0; i < repeat; i++) {
		ops += runs[i].acquisitions;
		local += runs[i].handoffs_local;
		remote += runs[i].handoffs_remote;
		handoffs += runs[i].handoffs;
		elapsed_ns += runs[i].elapsed_ns;
	}

	json_begin(&j);
	json_str(&j, "testcase", NAME);
	/* the seeds whose locks it compares: 000 (padded lock lines), 002 (NUMA-aware lock), 003 (rwsem wakers) */
	json_str(&j, "seed", is_rwsem() ? "003" : "000,002");
	json_str(&j, "status", "ok");
	json_str(&j, "mode", "kthreads");
	json_uint(&j, "copies", ncpus);
	json_uint(&j, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
	json_array_begin(&j, "copy_cpu");
	for (k = 0; k < runs[0].nthreads; k++)
		json_uint(&j, NULL, runs[0].thread[k].cpu);
	json_array_end(&j);
	json_str(&j, "window", "duration_ms");
	json_uint(&j, "duration_ms", param("duration_ms")->uint);
	json_uint(&j, "repeat", repeat);
	json_double(&j, "wall_s", wall_s);
	json_str(&j, "ops_unit", is_rwsem() ? "one acquisition of the bench rwsem, for read or write" : "one acquisition of the bench lock");
	json_uint(&j, "ops", ops);
	/* the warm-up's acquisitions, outside the window: counts over the whole testcase cover them too */
	json_uint(&j, "warmup_ops", warmup_ops);
	/* the kernel's clock: from the last thread ready to the last thread done */
	json_double(&j, "ops_per_s", (double)ops * NSEC_PER_SEC / elapsed_ns);
	json_array_begin(&j, "copy_ops");
	for (k = 0; k < runs[0].nthreads; k++)
		json_uint(&j, NULL, cpu_acquisitions(runs[0].thread[k].cpu));
	json_array_end(&j);

	json_object_begin(&j, "params");
	for (p = params; p->name; p++) {
		if (!strcmp(p->name, "m5ops") || (!strcmp(p->name, "writers") && !is_rwsem()))
			continue;
		if (!strcmp(p->name, "variant"))
			json_str(&j, p->name, variant);
		else if (!strcmp(p->name, "cpus"))
			json_str(&j, p->name, cpu_list);
		else if (p->type == P_UINT)
			json_uint(&j, p->name, p->uint);
		else
			json_str(&j, p->name, p->value);
	}
	json_object_end(&j);

	json_object_begin(&j, "counters");
	json_uint(&j, "handoffs_local", local);
	json_uint(&j, "handoffs_remote", remote);
	json_uint(&j, "handoffs", handoffs);
	json_object_end(&j);

	json_object_begin(&j, "metrics");
	json_double(&j, "elapsed_s", elapsed_ns / 1e9);
	json_double(&j, "acquisitions_per_sec", (double)ops * NSEC_PER_SEC / elapsed_ns);
	json_double(&j, "handoffs_local_share", handoffs ? (double)local / handoffs : 0);
	json_array_begin(&j, "runs");
	for (i = 0; i < repeat; i++) {
		json_object_begin(&j, NULL);
		for (f = 0; f < runs[i].nfields; f++)
			json_field(&j, &runs[i].field[f]);
		json_array_begin(&j, "threads");
		for (k = 0; k < runs[i].nthreads; k++) {
			json_object_begin(&j, NULL);
			for (f = 0; f < runs[i].thread[k].nfields; f++)
				json_field(&j, &runs[i].thread[k].field[f]);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_str(&j, "m5ops", m5ops_mode_name());
	/* the block opens only once nothing can fail before its end */
	report_begin();
	json_end_print(&j);
	report_end();
}

int main(int argc, char **argv)
{
	bool check_only = false;

	parse_args(argc, argv, &check_only);
	if (check_only)
		return 0;
	/* detailed CPUs from here on, as in the harness (m5ops.h) */
	m5_switch_cpu();
	find_bench();
	resolve_variant();
	resolve_cpus();
	bench();
	print_result();
	return 0;
}
