// SPDX-License-Identifier: GPL-2.0
/*
 * m5ops.c - issue gem5 m5 ops in the form chosen at run time (see m5ops.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "m5ops.h"

static enum m5ops_mode mode = M5OPS_OFF;
static volatile uint8_t *m5_page;	/* the mapped m5 ops page, "addr" form */

static const char *const mode_names[] = {
	[M5OPS_OFF] = "off",
	[M5OPS_INST] = "inst",
	[M5OPS_ADDR] = "addr",
};

enum m5ops_mode m5ops_mode(void)
{
	return mode;
}

const char *m5ops_mode_name(void)
{
	return mode_names[mode];
}

static int map_m5_page(char *err, unsigned long errlen)
{
	void *page;
	int fd;

	fd = open("/dev/mem", O_RDWR | O_SYNC);
	if (fd < 0) {
		snprintf(err, errlen, "m5ops=addr: cannot open /dev/mem (the kernel needs CONFIG_DEVMEM): %s",
			 strerror(errno));
		return -1;
	}
	page = mmap(NULL, M5OPS_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, M5OPS_PAGE_PHYS);
	close(fd);
	if (page == MAP_FAILED) {
		snprintf(err, errlen, "m5ops=addr: cannot map physical 0x%lx from /dev/mem: %s",
			 M5OPS_PAGE_PHYS, strerror(errno));
		return -1;
	}
	m5_page = page;
	return 0;
}

int m5ops_init(const char *name, char *err, unsigned long errlen)
{
	unsigned int i;

	if (!name || !*name)
		name = getenv(M5OPS_ENV);
	if (!name || !*name)
		name = mode_names[M5OPS_OFF];
	for (i = 0; i < ARRAY_SIZE(mode_names); i++) {
		if (strcmp(name, mode_names[i]) != 0)
			continue;
		if (i == M5OPS_ADDR && !m5_page && map_m5_page(err, errlen))
			return -1;
		mode = i;
		return 0;
	}
	snprintf(err, errlen, "m5ops: unknown form '%s' (expected off, inst or addr)", name);
	return -1;
}

/*
 * The magic instruction carries its function code as an immediate, so
 * each op needs its own copy of the instruction: one switch case each.
 */
#define M5_INST(func, a0, a1, a2) ({					\
	uint64_t __ret;							\
	asm volatile(".byte 0x0f, 0x04\n\t.word %c4"			\
		     : "=a"(__ret)					\
		     : "D"(a0), "S"(a1), "d"(a2), "i"(func)		\
		     : "memory");					\
	__ret;								\
})

static uint64_t m5op_inst(enum m5_func func, uint64_t arg0, uint64_t arg1, uint64_t arg2)
{
	switch (func) {
	case M5_EXIT:
		return M5_INST(M5_EXIT, arg0, arg1, arg2);
	case M5_RESET_STATS:
		return M5_INST(M5_RESET_STATS, arg0, arg1, arg2);
	case M5_DUMP_STATS:
		return M5_INST(M5_DUMP_STATS, arg0, arg1, arg2);
	case M5_CHECKPOINT:
		return M5_INST(M5_CHECKPOINT, arg0, arg1, arg2);
	case M5_READ_FILE:
		return M5_INST(M5_READ_FILE, arg0, arg1, arg2);
	case M5_SWITCH_CPU:
		return M5_INST(M5_SWITCH_CPU, arg0, arg1, arg2);
	case M5_WORK_BEGIN:
		return M5_INST(M5_WORK_BEGIN, arg0, arg1, arg2);
	case M5_WORK_END:
		return M5_INST(M5_WORK_END, arg0, arg1, arg2);
	}
	return 0;
}

/* The address form: the load itself is the op; the arguments ride in %rdi/%rsi/%rdx. */
static uint64_t m5op_addr(enum m5_func func, uint64_t arg0, uint64_t arg1, uint64_t arg2)
{
	const volatile uint8_t *slot = m5_page + ((uint64_t)func << M5OPS_FUNC_SHIFT);
	uint64_t ret;

	asm volatile("movq (%4), %0"
		     : "=r"(ret)
		     : "D"(arg0), "S"(arg1), "d"(arg2), "r"(slot)
		     : "memory");
	return ret;
}

uint64_t m5op3(enum m5_func func, uint64_t arg0, uint64_t arg1, uint64_t arg2)
{
	switch (mode) {
	case M5OPS_INST:
		return m5op_inst(func, arg0, arg1, arg2);
	case M5OPS_ADDR:
		return m5op_addr(func, arg0, arg1, arg2);
	case M5OPS_OFF:
		break;
	}
	return 0;
}
