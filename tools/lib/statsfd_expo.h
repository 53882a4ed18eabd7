/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libstatsfd-expo: the Prometheus exposition of stats fds read with
 * libstatsfd (statsfd.h): a growable text buffer, the metric names, types
 * and conflicts decided once, the text writer, the walkers every other
 * output format visits the same result with (statsfd-collector's
 * OpenMetrics and protobuf writers), and the host's stats under
 * node_exporter's names.
 *
 *	struct statsfd_buf out = { 0 };
 *	struct statsfd_prom_series s = { sf, values, "kvm_vcpu",
 *					 "vm=\"web\",vcpu=\"0\"" };
 *
 *	if (!statsfd_prom_write(&out, &s, 1, NULL))
 *		fwrite(out.data, 1, out.len, stdout);
 *	statsfd_buf_free(&out);
 *
 * Link with libstatsfd-expo and libstatsfd (pkg-config statsfd-expo).
 */
#ifndef STATSFD_EXPO_H
#define STATSFD_EXPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statsfd.h"

/**
 * struct statsfd_buf - growable text buffer
 * @data: NUL-terminated text, or NULL before the first append
 * @len: bytes used, excluding the NUL
 * @cap: bytes allocated
 * @oom: an append failed; the content is truncated
 */
struct statsfd_buf {
	char *data;
	size_t len;
	size_t cap;
	bool oom;
};

/**
 * statsfd_buf_printf() - append formatted text
 * @b: buffer
 * @fmt: printf format
 *
 * On allocation failure sets @b->oom and leaves the text unchanged.
 */
__attribute__((format(printf, 2, 3)))
void statsfd_buf_printf(struct statsfd_buf *b, const char *fmt, ...);
/**
 * statsfd_buf_append() - append @len bytes of @s
 * @b: buffer
 * @s: bytes
 * @len: count
 */
void statsfd_buf_append(struct statsfd_buf *b, const char *s, size_t len);
/** statsfd_buf_free() - release @b's memory and reset it. @b: buffer */
void statsfd_buf_free(struct statsfd_buf *b);

/**
 * statsfd_prom_escape() - append @s as a Prometheus label value body
 * @b: buffer
 * @s: raw value; backslash, double quote and newline are escaped
 */
void statsfd_prom_escape(struct statsfd_buf *b, const char *s);

/**
 * statsfd_prom_name() - Prometheus metric family name of @st
 * @prefix: "<provider>_<target>", e.g. "kvm_vcpu"; sanitized here
 * @st: descriptor
 * @buf: output
 * @len: size of @buf
 *
 * The stat name is sanitized to [a-z0-9_] (lower case), a time unit suffix such as
 * "_ns" is replaced by "_seconds" (values are converted to seconds), bytes
 * get "_bytes", counters "_total"; an aggregate's "_sum"/"_max"/... suffix
 * stays before the unit ("halt_wait_ns_max" -> "halt_wait_max_seconds").
 * A name in the collector's own namespace, "statsfd_collector" or
 * "statsfd_collector_*", becomes "statsfd_stat_collector...": no stat can
 * shadow a metric of the collector.  Tokens `promtool check metrics`
 * refuses (abbreviated units such as "ms", metric types, non-base units
 * such as "milliseconds") get an "x" in front ("wait_xms"), and a gauge
 * or histogram whose name ends in a suffix reserved for other families' samples
 * (_bucket, _sum, _count, _total, _created, _info) gets "_value" appended.
 * Return: the Prometheus type: "counter", "gauge" or "histogram".
 */
const char *statsfd_prom_name(const char *prefix,
			      const struct statsfd_stat *st, char *buf,
			      size_t len);

/**
 * struct statsfd_prom_series - one source to expose
 * @sf: its handle
 * @values: its values, as statsfd_read() filled them
 * @prefix: metric name prefix, "<provider>_<target>"
 * @labels: preformatted, escaped labels without braces, e.g.
 *	"vm=\"web\",vcpu=\"0\"", or "" for none
 * @key: series with the same non-NULL @key share @prefix, @skip and a
 *	schema, so their names are computed once; NULL to compute them per
 *	series
 * @skip: per stat of @sf, nonzero to leave it out; NULL to write all
 */
struct statsfd_prom_series {
	const struct statsfd *sf;
	const uint64_t *values;
	const char *prefix;
	const char *labels;
	const void *key;
	const unsigned char *skip;
};

/**
 * statsfd_prom_write() - append the text exposition of @n series
 * @out: buffer
 * @series: sources
 * @n: number of @series
 * @conflicts: set to the number of stats refused because their family's
 *	name, or for a histogram one of its samples' names (_bucket, _sum,
 *	_count), is taken by a family of an earlier series (lower @rank) of
 *	another type or shape, or by another stat of the same schema; the
 *	earlier one (here: earlier in @series) is always kept; may be NULL
 *
 * Samples of one family are grouped under one HELP (escaped) and TYPE line,
 * families
 * sorted by name.  Counters and gauges are converted to base units.
 * Histograms get cumulative buckets: a bucket's `le` is its largest
 * integer raw value (kernel buckets exclude their upper bound, samples are
 * integers, so this is exact) scaled to base units, then +Inf; _count is the
 * total and _sum an estimate from bucket midpoints (the kernel keeps no
 * sum; see Documentation/statsfd-lib.rst).
 * Return: 0, or -ENOMEM.
 */
int statsfd_prom_write(struct statsfd_buf *out,
		       const struct statsfd_prom_series *series, size_t n,
		       unsigned long *conflicts);

/**
 * statsfd_prom_write_ranked() - statsfd_prom_write() in registration order
 * @out: buffer
 * @series: sources
 * @ranks: per series, its registration order (lower is earlier; series
 *	sharing a key share it), or NULL for the order of @series
 * @n: number of @series
 * @conflicts: as for statsfd_prom_write()
 *
 * When two families conflict, the one of the lowest rank is kept and the
 * later one refused (and counted), whatever the order of @series or the
 * memory layout: a source that registered without conflict is never
 * hidden by one that came later.
 * Return: 0, or -ENOMEM.
 */
int statsfd_prom_write_ranked(struct statsfd_buf *out,
			      const struct statsfd_prom_series *series,
			      const uint64_t *ranks, size_t n,
			      unsigned long *conflicts);

/**
 * struct statsfd_prom_visitor - what statsfd_prom_walk() calls
 * @family: a family starts: @name, its Prometheus @type ("counter",
 *	"gauge", "histogram") and the descriptor @st of its first series
 * @series: one series of the current family: its source @s and @st, the
 *	descriptor of the stat in @s's schema
 *
 * A nonzero return stops the walk and is returned by it.
 */
struct statsfd_prom_visitor {
	int (*family)(void *ctx, const char *name, const char *type,
		      const struct statsfd_stat *st);
	int (*series)(void *ctx, const char *name, const char *type,
		      const struct statsfd_prom_series *s,
		      const struct statsfd_stat *st);
};

/**
 * statsfd_prom_walk() - the families of statsfd_prom_write_ranked(), visited
 * @series: sources
 * @ranks: as for statsfd_prom_write_ranked()
 * @n: number of @series
 * @conflicts: as for statsfd_prom_write_ranked()
 * @v: the visitor
 * @ctx: its argument
 *
 * Families in the order, with the names and the conflicts, of the text
 * exposition.
 * Return: 0, -ENOMEM, or the visitor's nonzero return.
 */
int statsfd_prom_walk(const struct statsfd_prom_series *series,
		      const uint64_t *ranks, size_t n, unsigned long *conflicts,
		      const struct statsfd_prom_visitor *v, void *ctx);

/**
 * statsfd_prom_help() - append the HELP text of @st's family, unescaped
 * @b: buffer
 * @st: descriptor
 */
void statsfd_prom_help(struct statsfd_buf *b, const struct statsfd_stat *st);

/**
 * statsfd_prom_put_series() - append the text samples of one series
 * @out: buffer
 * @name: its family's name
 * @s: the source
 * @st: the stat's descriptor in @s's schema
 *
 * One sample for a counter or gauge; _bucket, _sum and _count samples for
 * a histogram (see statsfd_prom_write()).
 */
void statsfd_prom_put_series(struct statsfd_buf *out, const char *name,
			     const struct statsfd_prom_series *s,
			     const struct statsfd_stat *st);

/**
 * statsfd_prom_hist_sum() - the estimated sum of a histogram, in base units
 * @st: a histogram descriptor
 * @v: its bucket counts
 *
 * The kernel keeps no sum: bucket midpoints times their counts (the lower
 * bound for the open bucket).
 * Return: the estimate.
 */
double statsfd_prom_hist_sum(const struct statsfd_stat *st, const uint64_t *v);

/* The host's stats fds under node_exporter's names. */

/**
 * statsfd_host_mapped() - whether a stat has a node_exporter name
 * @kind: the kind of its source
 * @stat: the stat's name
 *
 * Return: true when statsfd_host_prom_write() exports it (alone or summed
 * with others); the others are left to the usual statsfd_* naming.
 */
bool statsfd_host_mapped(unsigned int kind, const char *stat);

/**
 * statsfd_host_not_generic() - whether a stat stays out of the statsfd_*
 *	series of a host source
 * @kind: the kind of its source
 * @stat: the stat's name
 *
 * The mapped stats (statsfd_host_mapped()), and those left out: the
 * node's online_sum (the number of node_cpu_seconds_total's cpu label
 * values; an aggregate named *_sum, which Prometheus reserves for
 * summaries and histograms).  The other stats of a host source are
 * exported as any source's, statsfd_<stat> with the labels provider
 * ("statsfd_host"), target and cpu or device.
 * Return: true to leave @stat out of the statsfd_* series.
 */
bool statsfd_host_not_generic(unsigned int kind, const char *stat);

/**
 * struct statsfd_host_series - one host source to expose
 * @sf: its handle
 * @values: its values, as statsfd_read() filled them
 * @kind: enum statsfd_host_kind of the source
 * @name: its label value (struct statsfd_host_obj's @name): the cpu label
 *	of a CPU, the device label of an interface or a disk
 */
struct statsfd_host_series {
	const struct statsfd *sf;
	const uint64_t *values;
	unsigned int kind;
	const char *name;
};

/**
 * statsfd_host_prom_write() - append the node_exporter families of @n series
 * @out: buffer
 * @series: the host's sources, in the order their samples are wanted
 * @n: how many
 *
 * Every family of the mapping with at least one sample gets node_exporter
 * 1.5.0's HELP and TYPE once, then one sample per series (and mode) that
 * has the stats it is made of; a series lacking one of them (a view, an
 * older kernel) is left out of that family.
 * Return: 0, or -ENOMEM.
 */
int statsfd_host_prom_write(struct statsfd_buf *out,
			    const struct statsfd_host_series *series, size_t n);

/**
 * struct statsfd_host_visitor - what statsfd_host_prom_walk() calls
 * @family: a family with at least one sample starts
 * @sample: one sample: @labels without braces (NULL for none) and its
 *	value as text
 *
 * A nonzero return stops the walk and is returned by it.
 */
struct statsfd_host_visitor {
	int (*family)(void *ctx, const char *name, const char *type,
		      const char *help);
	int (*sample)(void *ctx, const char *name, const char *labels,
		      const char *value);
};

/**
 * statsfd_host_prom_walk() - statsfd_host_prom_write()'s samples, visited
 * @series: the host's sources
 * @n: how many
 * @v: the visitor
 * @ctx: its argument
 *
 * Return: 0, -ENOMEM, or the visitor's nonzero return.
 */
int statsfd_host_prom_walk(const struct statsfd_host_series *series, size_t n,
			   const struct statsfd_host_visitor *v, void *ctx);

#endif /* STATSFD_EXPO_H */
