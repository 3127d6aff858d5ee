// SPDX-License-Identifier: GPL-2.0
/*
 * runtimed - run an outside program as a testcase: time it inside the
 * m5 region of interest and print one JSON line like the harness does.
 *
 * /init uses it for the literal `dd if=/dev/zero of=f bs=1 count=N`
 * (testcase dd1b, seed 001) and for Debian's dbench (seed 000).
 *
 *   runtimed name=NAME seed=SEED log=PATH [ops=N ops_unit=TEXT]
 *            [expect_size=PATH:BYTES] [metric=KEY:PREFIX] [m5ops=FORM]
 *            -- PROGRAM ARGS...
 *
 * The program's stdout and stderr go to log=. It must exit 0; with
 * expect_size=, PATH must then be BYTES long; with metric=, the number
 * that follows PREFIX on the last log line holding PREFIX becomes
 * metrics.KEY (dbench: metric=throughput_mb_s:Throughput).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "m5ops.h"
#include "report.h"

#define LINE_BYTES	4096
#define TAIL_LINES	20
#define ROI_WORK_ID	0

static const char *name = "runtimed", *seed = "", *log_path, *ops_unit = "";
static const char *expect_size, *metric;
static unsigned long long ops;

void die(int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_error(name, errnum, fmt, ap);
	va_end(ap);
	exit(1);
}

static void usage(void)
{
	printf("usage: runtimed name=NAME seed=SEED log=PATH [ops=N ops_unit=TEXT]\n"
	       "                [expect_size=PATH:BYTES] [metric=KEY:PREFIX] [m5ops=off|inst|addr]\n"
	       "                -- PROGRAM ARGS...\n\n"
	       "Runs PROGRAM inside the m5 region of interest, its output to log=, and prints\n"
	       "one JSON line: wall, user and system seconds, exit status, ops per second\n"
	       "(with ops=), and metrics.KEY: the number after PREFIX on the last log line\n"
	       "holding it (with metric=). Fails if PROGRAM fails, if expect_size= does not\n"
	       "match, or if metric= finds nothing.\n");
}

/* Print the last lines of the log to stderr: why the program failed. */
static void print_tail(void)
{
	char lines[TAIL_LINES][256];
	int n = 0, i;
	FILE *f = fopen(log_path, "r");

	if (!f)
		return;
	while (fgets(lines[n % TAIL_LINES], sizeof(lines[0]), f))
		n++;
	fclose(f);
	fprintf(stderr, "%s: last lines of %s:\n", name, log_path);
	for (i = n > TAIL_LINES ? n - TAIL_LINES : 0; i < n; i++)
		fputs(lines[i % TAIL_LINES], stderr);
}

static double find_metric(const char *prefix)
{
	char line[LINE_BYTES];
	bool found = false;
	double value = 0;
	FILE *f = fopen(log_path, "r");

	if (!f)
		die(errno, "open %s", log_path);
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, prefix), *end;
		double v;

		if (!at)
			continue;
		v = strtod(at + strlen(prefix), &end);
		if (end != at + strlen(prefix)) {
			value = v;
			found = true;
		}
	}
	fclose(f);
	if (!found) {
		print_tail();
		die(0, "metric: no number after '%s' in %s", prefix, log_path);
	}
	return value;
}

static void check_size(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	unsigned long long want;
	char path[LINE_BYTES];
	struct stat st;
	char *end;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(path))
		die(0, "expect_size=%s: expected PATH:BYTES", spec);
	want = strtoull(colon + 1, &end, 10);
	if (*end || end == colon + 1)
		die(0, "expect_size=%s: BYTES is not a number", spec);
	memcpy(path, spec, colon - spec);
	path[colon - spec] = '\0';
	if (stat(path, &st))
		die(errno, "stat %s", path);
	if ((unsigned long long)st.st_size != want)
		die(0, "%s: %lld bytes, expected %llu", path, (long long)st.st_size, want);
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *m5 = NULL, *metric_key = NULL, *metric_prefix = NULL;
	char err[256], keybuf[128];
	struct rusage ru;
	double t0, wall, value = 0;
	int i, status, fd;
	pid_t pid;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i], *v = strchr(a, '=');

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage();
			return 0;
		}
		if (!v)
			die(0, "argument '%s': expected key=value or -- (see --help)", a);
		v++;
		if (!strncmp(a, "name=", 5))
			name = v;
		else if (!strncmp(a, "seed=", 5))
			seed = v;
		else if (!strncmp(a, "log=", 4))
			log_path = v;
		else if (!strncmp(a, "ops=", 4))
			ops = strtoull(v, NULL, 10);
		else if (!strncmp(a, "ops_unit=", 9))
			ops_unit = v;
		else if (!strncmp(a, "expect_size=", 12))
			expect_size = v;
		else if (!strncmp(a, "metric=", 7))
			metric = v;
		else if (!strncmp(a, "m5ops=", 6))
			m5 = v;
		else
			die(0, "argument '%s': unknown key (see --help)", a);
	}
	if (i + 1 >= argc)
		die(0, "no program to run after -- (see --help)");
	if (!log_path)
		die(0, "log= is required");
	if (metric) {
		const char *colon = strchr(metric, ':');

		if (!colon || colon == metric || !colon[1] || (size_t)(colon - metric) >= sizeof(keybuf))
			die(0, "metric=%s: expected KEY:PREFIX", metric);
		memcpy(keybuf, metric, colon - metric);
		keybuf[colon - metric] = '\0';
		metric_key = keybuf;
		metric_prefix = colon + 1;
	}
	if (m5ops_init(m5, err, sizeof(err)))
		die(0, "%s", err);
	/* detailed CPUs from here on, as in the harness (m5ops.h) */
	m5_switch_cpu();
	argv += i + 1;

	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(errno, "open %s", log_path);
	fflush(stdout);
	m5_work_begin(ROI_WORK_ID, 0);
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		die(errno, "fork");
	if (pid == 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		die(errno, "wait4");
	wall = now_s() - t0;
	m5_work_end(ROI_WORK_ID, 0);
	close(fd);

	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		print_tail();
		die(0, "%s failed (wait status 0x%x)", argv[0], status);
	}
	if (expect_size)
		check_size(expect_size);
	if (metric)
		value = find_metric(metric_prefix);

	report_begin();
	printf("{\"testcase\":");
	json_string(name);
	printf(",\"seed\":");
	json_string(seed);
	printf(",\"status\":\"ok\",\"command\":[");
	for (i = 0; argv[i]; i++) {
		printf(i ? "," : "");
		json_string(argv[i]);
	}
	printf("],\"wall_s\":%.6f,\"user_s\":%.6f,\"system_s\":%.6f,\"exit_status\":0",
	       wall, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	printf(",\"ops_unit\":");
	json_string(ops_unit);
	printf(",\"ops\":%llu,\"ops_per_s\":%.6f,\"metrics\":{", ops, wall > 0 ? ops / wall : 0);
	if (metric) {
		json_string(metric_key);
		printf(":%.6f", value);
	}
	printf("},\"m5ops\":\"%s\"}\n", m5ops_mode_name());
	report_end();
	return 0;
}
