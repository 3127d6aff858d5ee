/* SPDX-License-Identifier: GPL-2.0 */
/*
 * m5ops.h - gem5's "m5 ops": pseudo-instructions a guest executes to talk
 * to the simulator (mark a region of interest, reset or dump statistics,
 * take a checkpoint, end the simulation).
 *
 * Written from gem5's documented x86 ABI, not from its code:
 *  - the function code is a 16-bit number (below);
 *  - arguments travel in the integer argument registers of the x86-64
 *    calling convention (%rdi, %rsi, %rdx, ...; the ops here take at
 *    most three), the result comes back in %rax;
 *  - "inst" form: the two-byte opcode 0F 04 followed by the 16-bit
 *    function code. Only simulated CPUs decode it; under KVM (or on a
 *    real CPU) it is an invalid opcode.
 *  - "addr" form: a load from the m5 ops page, physical 0xFFFF0000
 *    (reserved in gem5's X86Board E820 map), at offset func << 8. The
 *    guest maps the page from /dev/mem; gem5 decodes the access in its
 *    TLB and in the KVM MMIO path, so this form works on KVM CPUs too.
 *  - "off": do nothing (QEMU, native runs).
 *
 * The form is chosen at run time by m5ops_init(), from an argument or
 * the LOCKSTUDY_M5OPS environment variable that /init sets from
 * lockstudy.m5ops= on the kernel command line.
 */
#ifndef LOCKSTUDY_M5OPS_H
#define LOCKSTUDY_M5OPS_H

#include <stdint.h>

#define M5OPS_ENV		"LOCKSTUDY_M5OPS"
#define M5OPS_PAGE_PHYS		0xFFFF0000UL
#define M5OPS_PAGE_BYTES	0x10000UL
#define M5OPS_FUNC_SHIFT	8

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

enum m5_func {
	M5_EXIT		= 0x21,
	M5_RESET_STATS	= 0x40,
	M5_DUMP_STATS	= 0x41,
	M5_CHECKPOINT	= 0x43,
	M5_READ_FILE	= 0x50,
	M5_SWITCH_CPU	= 0x52,
	M5_WORK_BEGIN	= 0x5a,
	M5_WORK_END	= 0x5b,
};

enum m5ops_mode {
	M5OPS_OFF,
	M5OPS_INST,
	M5OPS_ADDR,
};

/*
 * Select the call form: `name` is "off", "inst" or "addr"; NULL or ""
 * means the environment variable, and "off" when that is unset.
 * Returns 0, or -1 with a message in `err` (an unknown name, or the m5
 * ops page could not be mapped).
 */
int m5ops_init(const char *name, char *err, unsigned long errlen);
enum m5ops_mode m5ops_mode(void);
const char *m5ops_mode_name(void);

/* Issue one op; a no-op returning 0 when the mode is off. */
uint64_t m5op3(enum m5_func func, uint64_t arg0, uint64_t arg1, uint64_t arg2);

static inline uint64_t m5op(enum m5_func func, uint64_t arg0, uint64_t arg1)
{
	return m5op3(func, arg0, arg1, 0);
}

/*
 * gem5's readfile: copy up to `len` bytes of the file the simulation
 * was given (gem5's `readfile` system parameter), from byte `offset`
 * on, to the guest's virtual address `buf`; returns the bytes copied,
 * 0 at the end of the file, when there is no file, or when the mode is
 * off. gem5 writes through the guest's page tables: every page of `buf`
 * must be mapped (touched) before the call.
 */
static inline uint64_t m5_read_file(void *buf, uint64_t len, uint64_t offset)
{
	return m5op3(M5_READ_FILE, (uint64_t)(uintptr_t)buf, len, offset);
}

/*
 * Ask gem5 to hand over from its fast-forward CPUs to the detailed ones
 * (gem5's `switchcpu` exit). A testcase asks as soon as it starts, so
 * that its own set-up and warm-up run on the detailed CPUs and leave the
 * caches as the region of interest will find them, while everything
 * before it (the init script, exec) may run fast-forward. gem5 ignores a
 * second request, and a simulation without fast-forward CPUs ignores it.
 */
static inline void m5_switch_cpu(void)
{
	m5op(M5_SWITCH_CPU, 0, 0);
}

/* The region of interest: stats reset at begin, dumped at end. */
static inline void m5_work_begin(uint64_t work_id, uint64_t thread_id)
{
	m5op(M5_WORK_BEGIN, work_id, thread_id);
}

static inline void m5_work_end(uint64_t work_id, uint64_t thread_id)
{
	m5op(M5_WORK_END, work_id, thread_id);
}

#endif /* LOCKSTUDY_M5OPS_H */
