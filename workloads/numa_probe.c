// SPDX-License-Identifier: GPL-2.0
/*
 * numa_probe - print the NUMA topology the running kernel reports.
 *
 * The image's /init runs it after every boot, so each gem5 and QEMU run
 * records the topology its guest saw (lockstudy/guest_output.py parses it;
 * gem5-configs/run.py compares it with the machine file), and
 * tests/test_numa_layout.py runs it to compare our command-line layout
 * with QEMU's ACPI tables.  For every CPU it pins itself there and asks
 * getcpu() for the node (what numa_node_id() says in the kernel); then,
 * for every node in /sys/devices/system/node, its cpulist, its MemTotal
 * and its distance row.  One fact per line:
 *
 *   LOCKSTUDY-NUMA cpu <cpu> node <node>
 *   LOCKSTUDY-NUMA node <node> cpulist <list>
 *   LOCKSTUDY-NUMA node <node> memtotal_kb <kB>
 *   LOCKSTUDY-NUMA node <node> distance <d0> <d1> ...
 *   LOCKSTUDY-NUMA done            (or "failed", after a message on stderr)
 *
 * A kernel without NUMA has no node directory: that is "failed".
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NODE_DIR	"/sys/devices/system/node"
#define PREFIX		"LOCKSTUDY-NUMA"

static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int probe_cpus(void)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int cpu, node;
	cpu_set_t set;
	long i;

	for (i = 0; i < ncpus; i++) {
		CPU_ZERO(&set);
		CPU_SET(i, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return -1;
		}
		if (syscall(SYS_getcpu, &cpu, &node, NULL)) {
			perror("getcpu");
			return -1;
		}
		if (cpu != (unsigned int)i) {
			fprintf(stderr, "pinned to %ld but running on %u\n",
				i, cpu);
			return -1;
		}
		printf(PREFIX " cpu %u node %u\n", cpu, node);
	}
	return 0;
}

static void probe_meminfo(int node)
{
	char path[128], line[256];
	unsigned long kb;
	FILE *f;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* "Node 0 MemTotal:       252376 kB" */
		char *p = strstr(line, "MemTotal:");

		if (p && sscanf(p, "MemTotal: %lu", &kb) == 1)
			printf(PREFIX " node %d memtotal_kb %lu\n", node, kb);
	}
	fclose(f);
}

static int probe_nodes(void)
{
	char path[128], buf[1024];
	char *tok, *save;
	int node;

	for (node = 0; ; node++) {
		snprintf(path, sizeof(path), NODE_DIR "/node%d/cpulist", node);
		if (read_line(path, buf, sizeof(buf)))
			break;
		printf(PREFIX " node %d cpulist %s\n", node, buf);
		probe_meminfo(node);
		snprintf(path, sizeof(path), NODE_DIR "/node%d/distance", node);
		if (read_line(path, buf, sizeof(buf)))
			return -1;
		printf(PREFIX " node %d distance", node);
		for (tok = strtok_r(buf, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save))
			printf(" %s", tok);
		printf("\n");
	}
	return node ? 0 : -1;
}

int main(void)
{
	int ret = 0;

	if (probe_cpus() || probe_nodes())
		ret = 1;
	printf(PREFIX " %s\n", ret ? "failed" : "done");
	fflush(stdout);
	return ret;
}
