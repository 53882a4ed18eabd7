// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: what every output format shares.  The Accept
 * negotiation of a scrape, as the Prometheus client libraries do it
 * (client_golang's expfmt.Negotiate), and the adapters that hand the
 * library's families (statsfd_prom_walk(), statsfd_host_prom_walk()) to a
 * format's operations.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expo.h"
#include "statsfd_expo.h"

const struct expo_ops *const expo_formats[EXPO_NFORMATS] = {
	[EXPO_TEXT] = &expo_text,
	[EXPO_OPENMETRICS] = &expo_openmetrics,
	[EXPO_PROTOBUF] = &expo_protobuf,
};

/* One media range of an Accept header. */
struct media {
	char type[64];
	char version[64];
	char proto[64];
	char encoding[64];
	double q;
	unsigned int pos;
};

#define MEDIA_MAX	16

static void copy_trim(char *dst, size_t len, const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* One "type/subtype;k=v;..." of @s (@n bytes) into @m. */
static void parse_media(const char *s, size_t n, struct media *m)
{
	const char *end = s + n, *p, *eq;
	char key[32], val[64];
	size_t k;

	k = strcspn(s, ";");
	if (k > n)
		k = n;
	copy_trim(m->type, sizeof(m->type), s, k);
	m->q = 1;
	for (p = s + k; p < end;) {
		p++;
		k = strcspn(p, ";");
		if (p + k > end)
			k = (size_t)(end - p);
		eq = memchr(p, '=', k);
		if (eq) {
			copy_trim(key, sizeof(key), p, (size_t)(eq - p));
			copy_trim(val, sizeof(val), eq + 1, (size_t)(p + k - eq - 1));
			if (!strcasecmp(key, "q"))
				m->q = strtod(val, NULL);
			else if (!strcasecmp(key, "version"))
				snprintf(m->version, sizeof(m->version), "%s", val);
			else if (!strcasecmp(key, "proto"))
				snprintf(m->proto, sizeof(m->proto), "%s", val);
			else if (!strcasecmp(key, "encoding"))
				snprintf(m->encoding, sizeof(m->encoding), "%s", val);
		}
		p += k;
	}
	if (!(m->q >= 0 && m->q <= 1))	/* NaN and out of range */
		m->q = 0;
}

/* The format a media range asks for, or NULL. */
static const struct expo_ops *media_format(const struct media *m)
{
	if (!strcasecmp(m->type, "application/vnd.google.protobuf") &&
	    !strcmp(m->proto, "io.prometheus.client.MetricFamily") &&
	    !strcasecmp(m->encoding, "delimited"))
		return expo_formats[EXPO_PROTOBUF];
	if (!strcasecmp(m->type, "application/openmetrics-text") &&
	    (!*m->version || !strcmp(m->version, "1.0.0") ||
	     !strcmp(m->version, "0.0.1")))
		return expo_formats[EXPO_OPENMETRICS];
	if (!strcasecmp(m->type, "text/plain") &&
	    (!*m->version || !strcmp(m->version, "0.0.4")))
		return expo_formats[EXPO_TEXT];
	if (!strcmp(m->type, "*/*") || !strcasecmp(m->type, "text/*"))
		return expo_formats[EXPO_TEXT];
	return NULL;
}

static int cmp_media(const void *a, const void *b)
{
	const struct media *x = a, *y = b;

	if (x->q != y->q)
		return x->q > y->q ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/**
 * expo_negotiate() - the format a scrape's Accept header asks for
 * @accept: the header, or NULL
 *
 * Media ranges by decreasing q-value (the header's order among equal
 * ones); the first one a format serves wins: the protobuf exposition
 * (application/vnd.google.protobuf with proto=io.prometheus.client.MetricFamily
 * and encoding=delimited), OpenMetrics 1.0.0 (also for version 0.0.1 or
 * none), the text format 0.0.4 (text/plain, text/ *,
 * * / *).  A range with q=0 is refused.  Without a header, or when nothing
 * matches, the text format, as the client libraries do.  Only the first
 * MEDIA_MAX ranges are looked at.
 *
 * Return: the format.
 */
const struct expo_ops *expo_negotiate(const char *accept)
{
	struct media m[MEDIA_MAX];
	const struct expo_ops *f;
	unsigned int n = 0, i;
	size_t k;

	while (accept && *accept && n < MEDIA_MAX) {
		k = strcspn(accept, ",");
		memset(&m[n], 0, sizeof(m[n]));
		parse_media(accept, k, &m[n]);
		m[n].pos = n;
		if (m[n].q > 0 && *m[n].type)
			n++;
		accept += k;
		if (*accept == ',')
			accept++;
	}
	qsort(m, n, sizeof(*m), cmp_media);
	for (i = 0; i < n; i++) {
		f = media_format(&m[i]);
		if (f)
			return f;
	}
	return expo_formats[EXPO_TEXT];
}

/**
 * expo_begin() - start a rendering
 * @x: the rendering
 * @ops: its format
 * @out: the body to fill
 *
 * Return: 0, or a negative errno (expo_destroy() is still called).
 */
int expo_begin(struct expo *x, const struct expo_ops *ops,
	       struct statsfd_buf *out)
{
	*x = (struct expo){ .ops = ops, .out = out };
	return ops->begin ? ops->begin(x) : 0;
}

/**
 * expo_end() - complete a rendering
 * @x: the rendering
 *
 * Return: 0, or a negative errno (out of memory included).
 */
int expo_end(struct expo *x)
{
	int ret = x->err;

	if (!ret && x->ops->end)
		ret = x->ops->end(x);
	return ret ? ret : x->out->oom ? -ENOMEM : 0;
}

/**
 * expo_destroy() - release a format's state
 * @x: the rendering
 */
void expo_destroy(struct expo *x)
{
	if (x->ops && x->ops->destroy)
		x->ops->destroy(x);
	x->priv = NULL;
}

/**
 * expo_name_unit() - does a family's name end in a unit?
 * @name: the family's name, as the text format has it
 * @unit: a base unit ("seconds"), or "" for none
 *
 * A counter's name is looked at without its _total.
 * Return: @unit when @name ends in "_" @unit, else NULL.
 */
const char *expo_name_unit(const char *name, const char *unit)
{
	size_t n = strlen(name), m = strlen(unit);

	if (n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	if (!m || n <= m + 1 || name[n - m - 1] != '_' ||
	    strncmp(name + n - m, unit, m))
		return NULL;
	return unit;
}

static int stat_family(void *ctx, const char *name, const char *type,
		       const struct statsfd_stat *st)
{
	struct expo *x = ctx;
	struct statsfd_buf help = { 0 };
	int ret;

	statsfd_prom_help(&help, st);
	/* The stat's own unit, not a word of its name ("bytes" of a flag). */
	ret = help.oom ? -ENOMEM : x->ops->family(x, name, type, help.data,
						   expo_name_unit(name, statsfd_base_unit(st)));
	statsfd_buf_free(&help);
	return ret;
}

static int stat_series(void *ctx, const char *name, const char *type,
		       const struct statsfd_prom_series *s,
		       const struct statsfd_stat *st)
{
	struct expo *x = ctx;

	return x->ops->stat(x, name, type, s, st);
}

/**
 * expo_stats() - the families of the sources' stats
 * @x: the rendering
 * @series: as for statsfd_prom_write_ranked()
 * @ranks: as for statsfd_prom_write_ranked()
 * @n: as for statsfd_prom_write_ranked()
 * @conflicts: as for statsfd_prom_write_ranked()
 *
 * Return: 0, or a negative errno.
 */
int expo_stats(struct expo *x, const struct statsfd_prom_series *series,
	       const uint64_t *ranks, size_t n, unsigned long *conflicts)
{
	static const struct statsfd_prom_visitor v = {
		.family = stat_family,
		.series = stat_series,
	};

	return statsfd_prom_walk(series, ranks, n, conflicts, &v, x);
}

static int host_family(void *ctx, const char *name, const char *type,
		       const char *help)
{
	struct expo *x = ctx;

	expo_family(x, name, type, help);
	return x->err;
}

static int host_sample(void *ctx, const char *name, const char *labels,
		       const char *value)
{
	struct expo *x = ctx;

	/*
	 * No _created: a device or network counter counts since the device
	 * appeared, which the stats do not say (node_exporter gives none).
	 */
	return x->ops->sample(x, name, labels, value, 0);
}

/**
 * expo_host() - the host's families under node_exporter's names
 * @x: the rendering
 * @series: the host's sources
 * @n: how many
 *
 * Return: 0, or a negative errno.
 */
int expo_host(struct expo *x, const struct statsfd_host_series *series,
	      size_t n)
{
	static const struct statsfd_host_visitor v = {
		.family = host_family,
		.sample = host_sample,
	};

	return statsfd_host_prom_walk(series, n, &v, x);
}
