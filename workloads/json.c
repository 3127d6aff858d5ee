// SPDX-License-Identifier: GPL-2.0
/*
 * json.c - the JSON writer shared by the testcases (see json.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"

void json_raw(struct json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(j->buf + j->len, j->cap - j->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			die(errno, "internal: formatting the result");
		if ((size_t)n < j->cap - j->len)
			break;
		if (j->cap * 2 > JSON_MAX_BYTES)
			die(0, "internal: result larger than %d bytes", JSON_MAX_BYTES);
		j->cap *= 2;
		j->buf = realloc(j->buf, j->cap);
		if (!j->buf)
			die(errno, "out of memory");
	}
	j->len += n;
}

/* The comma before a field or element, and the key when there is one. */
static void json_key(struct json *j, const char *key)
{
	json_raw(j, "%s", j->need_comma ? "," : "");
	if (key)
		json_raw(j, "\"%s\":", key);
	j->need_comma = true;
}

void json_begin(struct json *j)
{
	j->cap = JSON_FIRST_BYTES;
	j->buf = malloc(j->cap);
	if (!j->buf)
		die(errno, "out of memory");
	j->len = 0;
	j->need_comma = false;
	json_raw(j, "{");
}

void json_end_print(struct json *j)
{
	json_raw(j, "}");
	printf("%s\n", j->buf);
	fflush(stdout);
	free(j->buf);
	j->buf = NULL;
}

void json_uint(struct json *j, const char *key, unsigned long long v)
{
	json_key(j, key);
	json_raw(j, "%llu", v);
}

void json_int(struct json *j, const char *key, long long v)
{
	json_key(j, key);
	json_raw(j, "%lld", v);
}

void json_double(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_raw(j, "%.6f", v);
}

void json_str(struct json *j, const char *key, const char *v)
{
	const char *s;

	json_key(j, key);
	json_raw(j, "\"");
	for (s = v; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			json_raw(j, "\\%c", ch);
		else if (ch < 0x20)
			json_raw(j, "\\u%04x", ch);
		else
			json_raw(j, "%c", ch);
	}
	json_raw(j, "\"");
}

void json_object_begin(struct json *j, const char *key)
{
	json_key(j, key);
	json_raw(j, "{");
	j->need_comma = false;
}

void json_object_end(struct json *j)
{
	json_raw(j, "}");
	j->need_comma = true;
}

void json_array_begin(struct json *j, const char *key)
{
	json_key(j, key);
	json_raw(j, "[");
	j->need_comma = false;
}

void json_array_end(struct json *j)
{
	json_raw(j, "]");
	j->need_comma = true;
}
