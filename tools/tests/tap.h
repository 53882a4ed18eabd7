/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP producer for the host tests; tools/tests/run.sh renumbers
 * the lines of every test into one stream.
 */
#ifndef STATSFD_TAP_H
#define STATSFD_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count;
static int tap_failed;

__attribute__((format(printf, 2, 3), unused))
static int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 2, 3), unused))
static void tap_skip(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - %s # SKIP ", ++tap_count, name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 1, 2), unused))
static void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((unused))
static int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif /* STATSFD_TAP_H */
