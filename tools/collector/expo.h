/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: the exposition interface.  One struct expo_ops per
 * output format (expo_*.c), chosen per scrape by the Accept header
 * (expo_negotiate()); render.c walks the collector's data once per format
 * and read tick and calls the format's operations, so a new format is
 * one new file and one line in expo_formats[].
 */
#ifndef STATSFD_EXPO_H_COLLECTOR
#define STATSFD_EXPO_H_COLLECTOR

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statsfd_expo.h"

/* The formats, also the index of their cached rendering. */
enum expo_id {
	EXPO_TEXT,
	EXPO_OPENMETRICS,
	EXPO_PROTOBUF,
	EXPO_NFORMATS,
};

struct expo;
struct statsfd_host_series;

/**
 * struct expo_ops - one output format
 * @id: its index in expo_formats[] and in the render cache
 * @name: for logs and documentation
 * @content_type: the Content-Type of its responses
 * @begin: the rendering starts (may be NULL)
 * @family: a family starts: @name as the text exposition names it
 *	(counters end in _total), @type "counter", "gauge" or "histogram",
 *	@help unescaped, @unit the base unit its name ends in ("seconds",
 *	"bytes") or NULL
 * @sample: one sample of a counter or gauge of the collector or of the
 *	host's families: @name, @labels without braces or NULL for none
 *	(escaped as in the text format), @value as text (an integer or a
 *	double as the text format writes it), @created the time its counter
 *	started at in seconds since the epoch, or 0 when there is no such
 *	time
 * @stat: one series of a stat of a source (a scalar or a histogram):
 *	@name and @type of its family, @s the source, @st the descriptor
 * @end: the rendering is complete (may be NULL)
 * @destroy: release what the format keeps in &struct expo.priv, after
 *	@end or on failure (may be NULL)
 *
 * An operation returns 0, or a negative errno that aborts the rendering.
 * Output goes to &struct expo.out.
 */
struct expo_ops {
	enum expo_id id;
	const char *name;
	const char *content_type;
	int (*begin)(struct expo *x);
	int (*family)(struct expo *x, const char *name, const char *type,
		      const char *help, const char *unit);
	int (*sample)(struct expo *x, const char *name, const char *labels,
		      const char *value, double created);
	int (*stat)(struct expo *x, const char *name, const char *type,
		    const struct statsfd_prom_series *s,
		    const struct statsfd_stat *st);
	int (*end)(struct expo *x);
	void (*destroy)(struct expo *x);
};

/**
 * struct expo - one rendering in progress
 * @ops: its format
 * @out: the response body being built
 * @priv: the format's state
 * @err: the first error of an operation called through expo_family() or
 *	expo_sample(); the later ones are not called
 */
struct expo {
	const struct expo_ops *ops;
	struct statsfd_buf *out;
	void *priv;
	int err;
};

const char *expo_name_unit(const char *name, const char *unit);

/*
 * A family of the collector or of the host starts (see &struct
 * expo_ops.family), its unit read from its name's suffix: those names
 * are chosen, not made from a stat's; errors go to @x->err.
 */
static inline void expo_family(struct expo *x, const char *name,
			       const char *type, const char *help)
{
	const char *unit = expo_name_unit(name, "seconds");

	if (!unit)
		unit = expo_name_unit(name, "bytes");
	if (!x->err)
		x->err = x->ops->family(x, name, type, help, unit);
}

/* One sample (see &struct expo_ops.sample); errors go to @x->err. */
static inline void expo_sample(struct expo *x, const char *name,
			       const char *labels, const char *value,
			       double created)
{
	if (!x->err)
		x->err = x->ops->sample(x, name, labels, value, created);
}

extern const struct expo_ops expo_text;
extern const struct expo_ops expo_openmetrics;
extern const struct expo_ops expo_protobuf;
extern const struct expo_ops *const expo_formats[EXPO_NFORMATS];

const struct expo_ops *expo_negotiate(const char *accept);
int expo_begin(struct expo *x, const struct expo_ops *ops,
	       struct statsfd_buf *out);
int expo_end(struct expo *x);
void expo_destroy(struct expo *x);
int expo_stats(struct expo *x, const struct statsfd_prom_series *series,
	       const uint64_t *ranks, size_t n, unsigned long *conflicts);
int expo_host(struct expo *x, const struct statsfd_host_series *series,
	      size_t n);
void expo_escape_help(struct statsfd_buf *b, const char *s, bool quote);

#endif /* STATSFD_EXPO_H_COLLECTOR */
