// SPDX-License-Identifier: GPL-2.0
/*
 * report.c - the result block and what follows it on /init's console
 * (see report.h; the markers and their order are /init's protocol).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "m5ops.h"
#include "report.h"

/* What /init exports for the item it runs. */
#define ITEM_ENV	"LOCKSTUDY_ITEM"
#define MEMORY_MAP_ENV	"LOCKSTUDY_MEMORY_MAP"
#define END_RUN_ENV	"LOCKSTUDY_END_RUN"

/* The kernel's lock registry and memory map (the lockstudy patches). */
#define LOCKS_FILE	"/sys/kernel/lockstudy/locks"
#define LOCKS_REQUEST	"/sys/kernel/lockstudy/locks_request"
#define MEMORY_FILE	"/sys/kernel/lockstudy/memory"
/* kernel/locking/lock_events.c: one file per event (and a hidden .reset_counts). */
#define LOCK_EVENTS_DIR	"/sys/kernel/debug/lock_event_counts"

/* One buffer for the whole report: it leaves in as few writes as it fits. */
#define REPORT_BUFFER_BYTES	(64 * 1024)
#define COPY_CHUNK_BYTES	4096

static char report_buffer[REPORT_BUFFER_BYTES];

static const char *item(void)
{
	const char *name = getenv(ITEM_ENV);

	return name && *name ? name : NULL;
}

void report_begin(void)
{
	if (!item())
		return;
	/* the console is line-buffered: one write per line would cost a syscall each */
	setvbuf(stdout, report_buffer, _IOFBF, sizeof(report_buffer));
	printf("LOCKSTUDY-RESULT-BEGIN %s\n", item());
}

/* Copy a kernel file to stdout as it reads; a file that is not there copies nothing. */
static void copy_file(const char *path)
{
	char chunk[COPY_CHUNK_BYTES];
	ssize_t got;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	while ((got = read(fd, chunk, sizeof(chunk))) > 0)
		fwrite(chunk, 1, got, stdout);
	close(fd);
}

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The lock registry; then forget the locks the testcase asked to register. */
static void print_locks(const char *name)
{
	int fd;

	if (!is_file(LOCKS_FILE))
		return;
	printf("LOCKSTUDY-LOCKS-BEGIN %s\n", name);
	copy_file(LOCKS_FILE);
	printf("LOCKSTUDY-LOCKS-END\n");
	fd = open(LOCKS_REQUEST, O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "clear\n", 6) < 0)
			perror("report: clearing the lock registry's requested locks");
		close(fd);
	}
}

/* The memory map, when asked for: the kernel walks every page frame to write it. */
static void print_memory_map(const char *name)
{
	const char *asked = getenv(MEMORY_MAP_ENV);

	if (!asked || strcmp(asked, "1") || !is_file(MEMORY_FILE))
		return;
	printf("LOCKSTUDY-MEMORY-BEGIN %s\n", name);
	copy_file(MEMORY_FILE);
	printf("LOCKSTUDY-MEMORY-END\n");
}

static int visible(const struct dirent *entry)
{
	return entry->d_name[0] != '.';
}

/* Every lock event counter on one line, <event>=<count> in name order. */
static void print_lock_events(const char *name)
{
	struct dirent **entries;
	char path[PATH_MAX], count[64];
	int n, i;
	FILE *f;

	n = scandir(LOCK_EVENTS_DIR, &entries, visible, alphasort);
	if (n < 0)
		return;
	printf("LOCKSTUDY-LOCKEVENTS %s", name);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", LOCK_EVENTS_DIR, entries[i]->d_name);
		if (is_file(path) && (f = fopen(path, "r"))) {
			if (fgets(count, sizeof(count), f)) {
				count[strcspn(count, "\n")] = '\0';
				printf(" %s=%s", entries[i]->d_name, count);
			}
			fclose(f);
		}
		free(entries[i]);
	}
	free(entries);
	printf("\n");
}

/* The first field of /proc/uptime, as /init prints it. */
static void read_uptime(char *uptime, size_t len)
{
	FILE *f = fopen("/proc/uptime", "r");

	snprintf(uptime, len, "?");
	if (!f)
		return;
	if (fscanf(f, "%31s", uptime) != 1)
		snprintf(uptime, len, "?");
	fclose(f);
}

/* The last item under gem5: the run's LOCKSTUDY-DONE line, then gem5's exit. */
static void end_run(const char *results)
{
	char uptime[32];

	read_uptime(uptime, sizeof(uptime));
	printf("LOCKSTUDY-DONE status=ok reason=none results=%s uptime=%s\n", results, uptime);
	fflush(stdout);
	/* the exit ends the simulation: the console's last bytes must be out first */
	tcdrain(STDOUT_FILENO);
	m5op(M5_EXIT, 0, 0);
}

void report_end(void)
{
	const char *name = item(), *results;

	if (!name)
		return;
	printf("LOCKSTUDY-RESULT-END\n");
	print_locks(name);
	print_memory_map(name);
	print_lock_events(name);
	fflush(stdout);
	results = getenv(END_RUN_ENV);
	if (results && *results)
		end_run(results);
}
