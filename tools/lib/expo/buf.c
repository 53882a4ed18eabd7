// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd-expo: the growable text buffer the writers append to.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsfd_expo.h"
#include "statsfd_priv.h"

static bool buf_reserve(struct statsfd_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void statsfd_buf_append(struct statsfd_buf *b, const char *s, size_t len)
{
	if (!buf_reserve(b, len))
		return;
	memcpy(b->data + b->len, s, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void statsfd_buf_printf(struct statsfd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void statsfd_buf_free(struct statsfd_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/**
 * statsfd__buf_double() - append the shortest text that parses back to @v
 * @b: buffer
 * @v: value
 *
 * "%.15g" when it round-trips, else "%.17g" (which always does): the
 * Prometheus writer's and the node_exporter mapping's sample values.
 */
void statsfd__buf_double(struct statsfd_buf *b, double v)
{
	char tmp[40];

	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	statsfd_buf_append(b, tmp, strlen(tmp));
}
