// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: decoding of the flag fields, unit scaling, histogram buckets
 * and human-readable formatting.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsfd.h"

/* The names of the values of the flag fields, by field (its mask). */
static const struct {
	uint32_t mask;
	uint32_t value;
	const char *name;
} flag_names[] = {
	{ STATSFD_TYPE_MASK, STATSFD_TYPE_CUMULATIVE, "cumulative" },
	{ STATSFD_TYPE_MASK, STATSFD_TYPE_INSTANT, "instant" },
	{ STATSFD_TYPE_MASK, STATSFD_TYPE_PEAK, "peak" },
	{ STATSFD_TYPE_MASK, STATSFD_TYPE_LINEAR_HIST, "linear-histogram" },
	{ STATSFD_TYPE_MASK, STATSFD_TYPE_LOG_HIST, "log2-histogram" },
	{ STATSFD_UNIT_MASK, STATSFD_UNIT_NONE, "none" },
	{ STATSFD_UNIT_MASK, STATSFD_UNIT_BYTES, "bytes" },
	{ STATSFD_UNIT_MASK, STATSFD_UNIT_SECONDS, "seconds" },
	{ STATSFD_UNIT_MASK, STATSFD_UNIT_CYCLES, "cycles" },
	{ STATSFD_UNIT_MASK, STATSFD_UNIT_BOOLEAN, "boolean" },
	{ STATSFD_BASE_MASK, STATSFD_BASE_POW10, "pow10" },
	{ STATSFD_BASE_MASK, STATSFD_BASE_POW2, "pow2" },
	{ STATSFD_AGG_MASK, STATSFD_AGG_NONE, "" },
	{ STATSFD_AGG_MASK, STATSFD_AGG_SUM, "sum" },
	{ STATSFD_AGG_MASK, STATSFD_AGG_MINIMUM, "min" },
	{ STATSFD_AGG_MASK, STATSFD_AGG_MAXIMUM, "max" },
	{ STATSFD_AGG_MASK, STATSFD_AGG_AVERAGE, "avg" },
	{ STATSFD_AGG_MASK, STATSFD_AGG_COUNT_NONZERO, "count_nonzero" },
};

/* The name of @value of the field @mask; "unknown" for any other. */
static const char *flag_name(uint32_t mask, uint32_t value)
{
	size_t i;

	for (i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (flag_names[i].mask == mask && flag_names[i].value == value)
			return flag_names[i].name;
	return "unknown";
}

const char *statsfd_type_name(uint32_t type)
{
	return flag_name(STATSFD_TYPE_MASK, type);
}

const char *statsfd_unit_name(uint32_t unit)
{
	return flag_name(STATSFD_UNIT_MASK, unit);
}

const char *statsfd_base_name(uint32_t base)
{
	return flag_name(STATSFD_BASE_MASK, base);
}

const char *statsfd_agg_name(uint32_t agg)
{
	return flag_name(STATSFD_AGG_MASK, agg);
}

bool statsfd_stat_is_hist(const struct statsfd_stat *st)
{
	return st->type == STATSFD_TYPE_LINEAR_HIST ||
	       st->type == STATSFD_TYPE_LOG_HIST;
}

/* base^|exponent|, exact for every power of two and powers of ten to 1e22. */
static double pow_abs(const struct statsfd_stat *st)
{
	double b = st->base == STATSFD_BASE_POW2 ? 2.0 : 10.0;
	double f = 1.0;
	int e = st->exponent < 0 ? -st->exponent : st->exponent;

	/* No libm; the exponent is bounded by STATSFD_LIB_EXPONENT_MAX. */
	for (; e > 0; e--)
		f *= b;
	return f;
}

double statsfd_scale(const struct statsfd_stat *st)
{
	return st->exponent < 0 ? 1.0 / pow_abs(st) : pow_abs(st);
}

double statsfd_scale_value(const struct statsfd_stat *st, double v)
{
	/*
	 * Divide rather than multiply by a rounded 1e-9: 1500 ns gives
	 * exactly the double nearest 1.5e-06.
	 */
	return st->exponent < 0 ? v / pow_abs(st) : v * pow_abs(st);
}

double statsfd_to_base(const struct statsfd_stat *st, uint64_t raw)
{
	return statsfd_scale_value(st, (double)raw);
}

const char *statsfd_base_unit(const struct statsfd_stat *st)
{
	switch (st->unit) {
	case STATSFD_UNIT_BYTES:	return "bytes";
	case STATSFD_UNIT_SECONDS:	return "seconds";
	case STATSFD_UNIT_CYCLES:	return "cycles";
	case STATSFD_UNIT_BOOLEAN:	return "boolean";
	}
	return "";
}

/* Pick a prefix so the mantissa lands in [1, step). */
static int format_prefixed(double v, double step, const char *const *pfx,
			   int npfx, const char *unit, char *buf, size_t len)
{
	double a = v < 0 ? -v : v;
	int i = 0;

	while (a >= step && i < npfx - 1) {
		a /= step;
		v /= step;
		i++;
	}
	return snprintf(buf, len, "%.4g %s%s", v, pfx[i], unit);
}

int statsfd_format_scaled(const struct statsfd_stat *st, double v, char *buf,
			  size_t len)
{
	static const char *const iec[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	static const char *const si[] = { "", "k", "M", "G", "T", "P", "E" };
	double a = v < 0 ? -v : v;

	switch (st->unit) {
	case STATSFD_UNIT_SECONDS:
		if (a == 0)
			return snprintf(buf, len, "0 s");
		if (a >= 1)
			return snprintf(buf, len, "%.4g s", v);
		if (a >= 1e-3)
			return snprintf(buf, len, "%.4g ms", v * 1e3);
		if (a >= 1e-6)
			return snprintf(buf, len, "%.4g us", v * 1e6);
		return snprintf(buf, len, "%.4g ns", v * 1e9);
	case STATSFD_UNIT_BYTES:
		return format_prefixed(v, 1024, iec, 7, "B", buf, len);
	case STATSFD_UNIT_CYCLES:
		return format_prefixed(v, 1000, si, 7, "cycles", buf, len);
	case STATSFD_UNIT_BOOLEAN:
		return snprintf(buf, len, "%s", v != 0 ? "true" : "false");
	}
	if (a < 1e6)
		return snprintf(buf, len, "%.4g", v);
	return format_prefixed(v, 1000, si, 7, "", buf, len);
}

int statsfd_format_value(const struct statsfd_stat *st, uint64_t raw,
			 char *buf, size_t len)
{
	if (st->unit == STATSFD_UNIT_BOOLEAN)
		return snprintf(buf, len, "%s", raw ? "true" : "false");
	if (st->unit == STATSFD_UNIT_NONE && !st->exponent)
		return snprintf(buf, len, "%" PRIu64, raw);
	return statsfd_format_scaled(st, statsfd_to_base(st, raw), buf, len);
}

int statsfd_bucket(const struct statsfd_stat *st, unsigned int i,
		   struct statsfd_bucket *b)
{
	if (!statsfd_stat_is_hist(st) || i >= st->size)
		return -EINVAL;
	b->open = i == st->size - 1;
	if (st->type == STATSFD_TYPE_LINEAR_HIST) {
		/* size < 2^16 and bucket_size < 2^32: no overflow. */
		b->lo = (uint64_t)st->bucket_size * i;
		b->hi = b->lo + st->bucket_size;
		return 0;
	}
	b->lo = i ? 1ULL << (i - 1) : 0;
	if (i >= 64) {
		/* [2^63, 2^64): the bound is beyond u64, nothing is above. */
		b->hi = 0;
		b->open = true;
	} else {
		b->hi = 1ULL << i;
	}
	return 0;
}

int statsfd_format_bucket(const struct statsfd_stat *st, unsigned int i,
			  char *buf, size_t len)
{
	struct statsfd_bucket b;
	char lo[48], hi[48];

	if (statsfd_bucket(st, i, &b))
		return -EINVAL;
	statsfd_format_value(st, b.lo, lo, sizeof(lo));
	if (b.open)
		return snprintf(buf, len, "[%s, inf)", lo);
	statsfd_format_value(st, b.hi, hi, sizeof(hi));
	return snprintf(buf, len, "[%s, %s)", lo, hi);
}
