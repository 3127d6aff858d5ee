/* SPDX-License-Identifier: GPL-2.0 */
/*
 * json.h - a tiny writer for the one JSON line each program prints.
 *
 * One object, fields in call order. A NULL key writes a bare value: an
 * element of the array or object-list opened by json_array_begin().
 * Strings are escaped; numbers are written as they are. The buffer
 * grows as needed, up to JSON_MAX_BYTES (beyond: an internal error, die()).
 */
#ifndef LOCKSTUDY_JSON_H
#define LOCKSTUDY_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define JSON_FIRST_BYTES	(64 * 1024)
#define JSON_MAX_BYTES		(16 * 1024 * 1024)

struct json {
	char *buf;
	size_t len;
	size_t cap;
	bool need_comma;
};

#include "errors.h"	/* die() */

/* Open the top-level object. */
void json_begin(struct json *json);
/* Close it, print it as one line on stdout, free it. */
void json_end_print(struct json *json);

void json_raw(struct json *json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void json_uint(struct json *json, const char *key, unsigned long long value);
void json_int(struct json *json, const char *key, long long value);
void json_double(struct json *json, const char *key, double value);
void json_str(struct json *json, const char *key, const char *value);
void json_object_begin(struct json *json, const char *key);
void json_object_end(struct json *json);
void json_array_begin(struct json *json, const char *key);
void json_array_end(struct json *json);

#endif /* LOCKSTUDY_JSON_H */
