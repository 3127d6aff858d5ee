/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report.h - a testcase's result on /init's console: the result block and
 * everything that follows it (the console protocol is in /init).
 *
 * Outside /init a program prints its one JSON line on stdout and nothing
 * else. Under /init (LOCKSTUDY_ITEM set) stdout is the console, and the
 * program prints, after its region of interest:
 *
 *   LOCKSTUDY-RESULT-BEGIN <item>, the JSON line, LOCKSTUDY-RESULT-END;
 *   the kernel's lock registry block (and it forgets the testcase's locks);
 *   the kernel's memory map block, when LOCKSTUDY_MEMORY_MAP=1;
 *   the LOCKSTUDY-LOCKEVENTS line, when the kernel counts lock events.
 *
 * Why here and not in /init: under gem5 everything after the last region
 * of interest runs on the detailed CPUs. Done by /init, the end of a
 * calibration run on altix-numa (2 nodes, timing CPU) took 17.5 simulated
 * ms: 7.5 before the first byte (this program's exit, a fork and exec of
 * cat), 7.3 to print 1.9 KB (2.7 us a byte, one UART interrupt each) and
 * the shell's lock event lines, then 2.6 for a fork and exec of m5 exit.
 * So the last item of a run under gem5 (LOCKSTUDY_END_RUN=<results>)
 * also prints LOCKSTUDY-DONE, waits for the console to drain and ends the
 * simulation itself (m5 exit), without exiting. Where the exit op ends
 * nothing (the address form under QEMU) report_end() returns, and /init
 * knows that LOCKSTUDY-DONE is out.
 */
#ifndef LOCKSTUDY_REPORT_H
#define LOCKSTUDY_REPORT_H

/* Before the JSON line: the block's opening marker, under /init. */
void report_begin(void);

/*
 * After the JSON line: its closing marker and the blocks that follow,
 * then, for the last item under gem5, the end of the run. The program's
 * m5 ops must be set up (m5ops_init) before.
 */
void report_end(void);

#endif /* LOCKSTUDY_REPORT_H */
