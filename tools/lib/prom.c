// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: Prometheus text exposition (format 0.0.4) of stats sources.
 *
 * Shared by `statsfd show --prometheus` and statsfd-collector so that both
 * name and convert every stat the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsfd.h"

void statsfd_prom_escape(struct statsfd_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			statsfd_buf_append(b, "\\\\", 2);
		else if (*s == '"')
			statsfd_buf_append(b, "\\\"", 2);
		else if (*s == '\n')
			statsfd_buf_append(b, "\\n", 2);
		else
			statsfd_buf_append(b, s, 1);
	}
}

/* HELP text: backslash and newline are escaped, as the text format says. */
static void escape_help(struct statsfd_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			statsfd_buf_append(b, "\\\\", 2);
		else if (*s == '\n')
			statsfd_buf_append(b, "\\n", 2);
		else
			statsfd_buf_append(b, s, 1);
	}
}

static void sanitize(char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			*s = '_';
}

static bool strip_suffix(char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	if (n <= m || strcmp(s + n - m, suffix))
		return false;
	s[n - m] = '\0';
	return true;
}

#define RESERVED_PREFIX	"statsfd_collector"

const char *statsfd_prom_name(const char *prefix,
			      const struct statsfd_stat *st, char *buf,
			      size_t len)
{
	static const char *const time_suffixes[] = {
		"_seconds", "_nsec", "_usec", "_msec", "_secs", "_sec",
		"_ns", "_us", "_ms", "_s",
	};
	char stat[STATSFD_LIB_NAME_SIZE_MAX + 32];
	const char *type;
	size_t i;

	char agg[24] = "";
	const char *unit = "";

	snprintf(stat, sizeof(stat), "%s", st->name);
	sanitize(stat);
	/* "halt_wait_ns_sum" becomes "halt_wait_sum_seconds": unit last. */
	if (st->agg) {
		snprintf(agg, sizeof(agg), "_%s", statsfd_agg_name(st->agg));
		if (!strip_suffix(stat, agg))
			agg[0] = '\0';
	}
	if (st->unit == STATSFD_UNIT_SECONDS) {
		for (i = 0; i < sizeof(time_suffixes) / sizeof(*time_suffixes); i++)
			if (strip_suffix(stat, time_suffixes[i]))
				break;
		unit = "_seconds";
	} else if (st->unit == STATSFD_UNIT_BYTES) {
		strip_suffix(stat, "_bytes");
		unit = "_bytes";
	}
	strcat(stat, agg);
	strcat(stat, unit);
	if (statsfd_stat_is_hist(st)) {
		type = "histogram";
	} else if (st->type == STATSFD_TYPE_CUMULATIVE) {
		strip_suffix(stat, "_total");
		strcat(stat, "_total");
		type = "counter";
	} else {
		type = "gauge";
	}
	snprintf(buf, len, "%s_%s", prefix && *prefix ? prefix : "statsfd",
		 stat);
	sanitize(buf);
	/* A metric name must not start with a digit. */
	if (buf[0] >= '0' && buf[0] <= '9')
		buf[0] = '_';
	/*
	 * statsfd_collector_* is the collector's own namespace: a stat whose
	 * name would land there is moved to statsfd_stat_collector_*, so no
	 * stat can ever shadow a metric of the collector.
	 */
	if (!strncmp(buf, RESERVED_PREFIX, strlen(RESERVED_PREFIX)) &&
	    (buf[strlen(RESERVED_PREFIX)] == '_' || !buf[strlen(RESERVED_PREFIX)])) {
		snprintf(stat, sizeof(stat), "statsfd_stat_%s", buf + strlen("statsfd_"));
		snprintf(buf, len, "%s", stat);
	}
	return type;
}

/* Shortest text that parses back to the same double. */
static void put_double(struct statsfd_buf *b, double v)
{
	char tmp[40];

	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	statsfd_buf_append(b, tmp, strlen(tmp));
}

static void put_value(struct statsfd_buf *b, const struct statsfd_stat *st,
		      uint64_t raw)
{
	if (!st->exponent)
		statsfd_buf_printf(b, "%" PRIu64, raw);
	else
		put_double(b, statsfd_to_base(st, raw));
}

static void put_labels(struct statsfd_buf *b, const char *labels,
		       const char *extra)
{
	bool has = labels && *labels;

	if (!has && !extra)
		return;
	statsfd_buf_append(b, "{", 1);
	if (has)
		statsfd_buf_printf(b, "%s", labels);
	if (extra)
		statsfd_buf_printf(b, "%s%s", has ? "," : "", extra);
	statsfd_buf_append(b, "}", 1);
}

static void put_hist(struct statsfd_buf *out, const char *name,
		     const struct statsfd_prom_series *s,
		     const struct statsfd_stat *st)
{
	const uint64_t *v = statsfd_values(st, s->values);
	uint64_t cum = 0;
	double sum = 0;
	unsigned int i;
	char le[64];

	for (i = 0; i < st->size; i++) {
		struct statsfd_bucket bk;

		statsfd_bucket(st, i, &bk);
		cum += v[i];
		/*
		 * Kernel buckets are [lo, hi) over integers, so the largest
		 * value a bucket holds is hi - 1: that is an exact `le`.
		 */
		if (bk.open) {
			sum += (double)bk.lo * (double)v[i];
			continue;
		}
		sum += ((double)bk.lo + (double)(bk.hi - 1)) / 2 * (double)v[i];
		statsfd_buf_printf(out, "%s_bucket", name);
		if (!st->exponent)
			snprintf(le, sizeof(le), "le=\"%" PRIu64 "\"", bk.hi - 1);
		else
			snprintf(le, sizeof(le), "le=\"%.15g\"",
				 statsfd_to_base(st, bk.hi - 1));
		put_labels(out, s->labels, le);
		statsfd_buf_printf(out, " %" PRIu64 "\n", cum);
	}
	statsfd_buf_printf(out, "%s_bucket", name);
	put_labels(out, s->labels, "le=\"+Inf\"");
	statsfd_buf_printf(out, " %" PRIu64 "\n", cum);
	statsfd_buf_printf(out, "%s_sum", name);
	put_labels(out, s->labels, NULL);
	statsfd_buf_append(out, " ", 1);
	put_double(out, statsfd_scale_value(st, sum));
	statsfd_buf_append(out, "\n", 1);
	statsfd_buf_printf(out, "%s_count", name);
	put_labels(out, s->labels, NULL);
	statsfd_buf_printf(out, " %" PRIu64 "\n", cum);
}

/* One (family, group of series sharing a schema, stat) triple. */
struct prom_entry {
	char *name;
	const char *type;
	size_t group;
	unsigned int stat;
	size_t order;
};

struct prom_group {
	size_t first;	/* index into the sorted series order */
	size_t count;
};

static int cmp_series(const void *a, const void *b, void *ctx)
{
	const struct statsfd_prom_series *s = ctx;
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	const void *ka = s[ia].key ? s[ia].key : (const void *)&s[ia];
	const void *kb = s[ib].key ? s[ib].key : (const void *)&s[ib];

	if (ka != kb)
		return ka < kb ? -1 : 1;
	return (ia > ib) - (ia < ib);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct prom_entry *ea = a, *eb = b;
	int c = strcmp(ea->name, eb->name);

	if (c)
		return c;
	return (ea->order > eb->order) - (ea->order < eb->order);
}

int statsfd_prom_write(struct statsfd_buf *out,
		       const struct statsfd_prom_series *series, size_t n,
		       unsigned long *conflicts)
{
	struct prom_entry *ents = NULL;
	struct prom_group *groups = NULL;
	size_t *order = NULL, ngroups = 0, nents = 0, i, j;
	const char *fam = NULL, *fam_type = NULL;
	size_t fam_first = 0, k;
	char name[STATSFD_LIB_NAME_SIZE_MAX + 128];
	unsigned long skipped = 0;
	int ret = -ENOMEM;

	order = malloc((n + 1) * sizeof(*order));
	groups = malloc((n + 1) * sizeof(*groups));
	if (!order || !groups)
		goto out;
	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), cmp_series, (void *)series);
	for (i = 0; i < n; i++) {
		const struct statsfd_prom_series *s = &series[order[i]];
		const struct statsfd_prom_series *p = i ? &series[order[i - 1]] : NULL;

		if (!p || !s->key || s->key != p->key) {
			groups[ngroups].first = i;
			groups[ngroups].count = 0;
			ngroups++;
		}
		groups[ngroups - 1].count++;
	}

	for (i = 0; i < ngroups; i++)
		nents += statsfd_num_stats(series[order[groups[i].first]].sf);
	ents = calloc(nents + 1, sizeof(*ents));
	if (!ents)
		goto out;
	nents = 0;
	for (i = 0; i < ngroups; i++) {
		const struct statsfd_prom_series *s = &series[order[groups[i].first]];

		for (j = 0; j < statsfd_num_stats(s->sf); j++) {
			struct prom_entry *e = &ents[nents];

			if (s->skip && s->skip[j])
				continue;
			e->type = statsfd_prom_name(s->prefix,
						    statsfd_stat(s->sf, j),
						    name, sizeof(name));
			e->name = strdup(name);
			if (!e->name)
				goto out;
			e->group = i;
			e->stat = j;
			e->order = nents++;
		}
	}
	qsort(ents, nents, sizeof(*ents), cmp_entry);

	for (i = 0; i < nents; i++) {
		const struct prom_entry *e = &ents[i];
		const struct prom_group *g = &groups[e->group];
		const struct statsfd_prom_series *s0 = &series[order[g->first]];
		const struct statsfd_stat *st = statsfd_stat(s0->sf, e->stat);

		if (!fam || strcmp(fam, e->name)) {
			fam = e->name;
			fam_type = e->type;
			fam_first = i;
			statsfd_buf_printf(out, "# HELP %s statsfd stat ", e->name);
			escape_help(out, st->name);
			statsfd_buf_printf(out, " (%s, unit %s%s%s)\n",
					   statsfd_type_name(st->type),
					   statsfd_unit_name(st->unit),
					   st->agg ? ", aggregate " : "",
					   statsfd_agg_name(st->agg));
			statsfd_buf_printf(out, "# TYPE %s %s\n", e->name,
					   e->type);
		} else if (strcmp(fam_type, e->type)) {
			/* Two schemas disagree on a family's type: keep the first. */
			skipped++;
			continue;
		} else {
			/*
			 * Two stats of one schema map to one name ("a.b" and
			 * "a_b"): their series would be duplicates.  Keep the
			 * first.
			 */
			for (k = fam_first; k < i && ents[k].group != e->group; k++)
				;
			if (k < i) {
				skipped++;
				continue;
			}
		}
		for (j = 0; j < g->count; j++) {
			const struct statsfd_prom_series *s = &series[order[g->first + j]];
			const struct statsfd_stat *sst = statsfd_stat(s->sf, e->stat);

			if (statsfd_stat_is_hist(sst)) {
				put_hist(out, e->name, s, sst);
				continue;
			}
			statsfd_buf_printf(out, "%s", e->name);
			put_labels(out, s->labels, NULL);
			statsfd_buf_append(out, " ", 1);
			put_value(out, sst, statsfd_values(sst, s->values)[0]);
			statsfd_buf_append(out, "\n", 1);
		}
	}
	ret = out->oom ? -ENOMEM : 0;
out:
	if (ents)
		for (i = 0; i < nents; i++)
			free(ents[i].name);
	free(ents);
	free(groups);
	free(order);
	if (conflicts)
		*conflicts = skipped;
	return ret;
}
