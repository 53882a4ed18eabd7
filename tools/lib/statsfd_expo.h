/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libstatsfd: the exposition walkers, private to the library and
 * statsfd-collector (not installed, not in libstatsfd.map).  The library
 * decides names, types, order and conflicts once; each output format of
 * the collector (tools/collector/expo*.c) is a visitor of the result, the
 * library's own text writer one of them.
 */
#ifndef STATSFD_EXPO_H
#define STATSFD_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include "statsfd.h"
#include "statsfd_hostfd.h"

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
