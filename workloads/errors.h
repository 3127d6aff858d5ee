/* SPDX-License-Identifier: GPL-2.0 */
/*
 * errors.h - the one format of the workloads' fatal errors:
 * "<program>: error: <message>[: <errno text>]" on stderr, stdout flushed
 * first so that a partial result line never follows the message.
 */
#ifndef LOCKSTUDY_ERRORS_H
#define LOCKSTUDY_ERRORS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* die() is each program's own: print with vprint_error() and exit non-zero. */
void die(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

void vprint_error(const char *program, int errnum, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * One command-line word of a testcase: "--help"/"-h" calls usage() and
 * exits 0; "--check" sets *check_only; otherwise it must be key=value:
 * returns the key's length and points *value after the '='. Returns 0
 * for the flags; dies on anything else.
 */
size_t split_argument(const char *arg, void (*usage)(void), bool *check_only, const char **value);

#endif
