// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd-expo: Prometheus text exposition (format 0.0.4) of stats sources.
 *
 * Shared by `statsfd show --prometheus` and statsfd-collector so that both
 * name and convert every stat the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsfd_expo.h"
#include "statsfd_priv.h"

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

/*
 * Words `promtool check metrics` refuses as a token of a metric name
 * (client_golang's promlint): abbreviated units, metric types, and units
 * that are not base units (with or without an SI prefix).  A stat name's
 * token among them gets an "x" in front: no such word starts with "x",
 * and the name stays readable and distinct.
 */
static const char *const lint_words[] = {
	"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h",
	"d", "counter", "gauge", "histogram", "summary", "untyped",
};

static const char *const lint_units[] = {
	"amperes", "bytes", "celsius", "grams", "joules", "kelvin", "meters",
	"metres", "seconds", "volts", "minutes", "hours", "days", "weeks",
	"kelvins", "fahrenheit", "rankine", "inches", "yards", "miles", "bits",
	"calories", "pounds", "ounces",
};

static const char *const lint_base[] = {
	"amperes", "bytes", "celsius", "grams", "joules", "kelvin", "meters",
	"metres", "seconds", "volts",
};

static const char *const lint_prefixes[] = {
	"pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto",
	"kilo", "kibi", "mega", "mibi", "giga", "gibi", "tera", "tebi", "peta",
	"pebi",
};

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

static bool word_in(const char *w, size_t n, const char *const *list, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (strlen(list[i]) == n && !strncmp(list[i], w, n))
			return true;
	return false;
}

/* Would promtool object to the token @w (@n bytes)? */
static bool lint_token(const char *w, size_t n)
{
	size_t i, p;

	if (word_in(w, n, lint_words, ARRAY_LEN(lint_words)))
		return true;
	if (word_in(w, n, lint_units, ARRAY_LEN(lint_units)))
		return !word_in(w, n, lint_base, ARRAY_LEN(lint_base));
	for (i = 0; i < ARRAY_LEN(lint_prefixes); i++) {
		p = strlen(lint_prefixes[i]);
		if (n > p && !strncmp(w, lint_prefixes[i], p) &&
		    word_in(w + p, n - p, lint_units, ARRAY_LEN(lint_units)))
			return true;
	}
	return false;
}

/*
 * The stat part of a name, made clean for promtool: each refused token
 * prefixed with "x" ("wait_ms" of a stat without a unit becomes
 * "wait_xms").  @s has room for twice its length.
 */
static void lint_clean(char *s)
{
	char tmp[2 * (STATSFD_LIB_NAME_SIZE_MAX + 32)];
	size_t i = 0, o = 0, n;

	for (i = 0; s[i] && o < sizeof(tmp) - 3;) {
		n = strcspn(s + i, "_");
		if (n && lint_token(s + i, n))
			tmp[o++] = 'x';
		if (o + n >= sizeof(tmp) - 2)
			n = sizeof(tmp) - 2 - o;
		memcpy(tmp + o, s + i, n);
		o += n;
		i += n;
		if (s[i] == '_')
			tmp[o++] = s[i++];
	}
	tmp[o] = '\0';
	strcpy(s, tmp);
}

/* Lower case: promtool refuses camelCase ("fooBar" becomes "foobar"). */
static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* Suffixes of the samples of histograms, summaries, counters and infos. */
static const char *const reserved_suffixes[] = {
	"_bucket", "_sum", "_count", "_total", "_created", "_info",
};

static bool has_reserved_suffix(const char *s)
{
	size_t i, n = strlen(s), m;

	for (i = 0; i < ARRAY_LEN(reserved_suffixes); i++) {
		m = strlen(reserved_suffixes[i]);
		if (n > m && !strcmp(s + n - m, reserved_suffixes[i]))
			return true;
	}
	return false;
}

const char *statsfd_prom_name(const char *prefix,
			      const struct statsfd_stat *st, char *buf,
			      size_t len)
{
	static const char *const time_suffixes[] = {
		"_seconds", "_nsec", "_usec", "_msec", "_secs", "_sec",
		"_ns", "_us", "_ms", "_s",
	};
	char stat[2 * (STATSFD_LIB_NAME_SIZE_MAX + 32)];
	const char *type;
	size_t i;

	char agg[24] = "";
	const char *unit = "";

	snprintf(stat, sizeof(stat), "%s", st->name);
	sanitize(stat);
	lower(stat);
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
	lint_clean(stat);
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
	 * A gauge or histogram never ends like the samples of a histogram, a
	 * summary, a counter or an info ("queue_count" is exported as
	 * "queue_count_value"): no _total but on counters, and no collision
	 * with the series of another family.
	 */
	if (strcmp(type, "counter") && has_reserved_suffix(buf) &&
	    strlen(buf) + 7 <= len - 1)
		strcat(buf, "_value");
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

static void put_value(struct statsfd_buf *b, const struct statsfd_stat *st,
		      uint64_t raw)
{
	if (!st->exponent)
		statsfd_buf_printf(b, "%" PRIu64, raw);
	else
		statsfd__buf_double(b, statsfd_to_base(st, raw));
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

double statsfd_prom_hist_sum(const struct statsfd_stat *st, const uint64_t *v)
{
	struct statsfd_bucket bk;
	double sum = 0;
	unsigned int i;

	for (i = 0; i < st->size; i++) {
		statsfd_bucket(st, i, &bk);
		if (bk.open)
			sum += (double)bk.lo * (double)v[i];
		else
			sum += ((double)bk.lo + (double)(bk.hi - 1)) / 2 * (double)v[i];
	}
	return statsfd_scale_value(st, sum);
}

static void put_hist(struct statsfd_buf *out, const char *name,
		     const struct statsfd_prom_series *s,
		     const struct statsfd_stat *st)
{
	const uint64_t *v = statsfd_values(st, s->values);
	uint64_t cum = 0;
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
		if (bk.open)
			continue;
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
	statsfd__buf_double(out, statsfd_prom_hist_sum(st, v));
	statsfd_buf_append(out, "\n", 1);
	statsfd_buf_printf(out, "%s_count", name);
	put_labels(out, s->labels, NULL);
	statsfd_buf_printf(out, " %" PRIu64 "\n", cum);
}

void statsfd_prom_put_series(struct statsfd_buf *out, const char *name,
			     const struct statsfd_prom_series *s,
			     const struct statsfd_stat *st)
{
	if (statsfd_stat_is_hist(st)) {
		put_hist(out, name, s, st);
		return;
	}
	statsfd_buf_printf(out, "%s", name);
	put_labels(out, s->labels, NULL);
	statsfd_buf_append(out, " ", 1);
	put_value(out, st, statsfd_values(st, s->values)[0]);
	statsfd_buf_append(out, "\n", 1);
}

void statsfd_prom_help(struct statsfd_buf *b, const struct statsfd_stat *st)
{
	statsfd_buf_printf(b, "statsfd stat %s (%s, unit %s%s%s)", st->name,
			   statsfd_type_name(st->type), statsfd_unit_name(st->unit),
			   st->agg ? ", aggregate " : "", statsfd_agg_name(st->agg));
}

/* One (family, group of series sharing a schema, stat) triple. */
struct prom_entry {
	char *name;
	const char *type;
	size_t group;
	unsigned int stat;
	uint64_t rank;
	bool refused;
};

struct prom_group {
	size_t first;	/* index into the sorted series order */
	size_t count;
	uint64_t rank;	/* the earliest of its series' */
};

/*
 * The names the families accepted so far use: a family's own name, and
 * for a histogram the names of its _bucket, _sum and _count samples.  An
 * open-addressing table of claims, sized for every entry's four names.
 */
struct prom_claim {
	char *name;		/* NULL: free slot */
	const char *type;	/* the family's, for its own name; NULL for a sample's */
	size_t group;
	bool own;		/* the family's own name (@name is the entry's) */
};

struct prom_claims {
	struct prom_claim *v;
	size_t mask;
};

static size_t hash_name(const char *s)
{
	size_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct prom_claim *claim_find(struct prom_claims *t, const char *name)
{
	size_t i = hash_name(name) & t->mask;

	while (t->v[i].name && strcmp(t->v[i].name, name))
		i = (i + 1) & t->mask;
	return &t->v[i];
}

/* Effective rank of a series: its own, else its position (1-based). */
static uint64_t series_rank(const uint64_t *ranks, size_t i)
{
	return ranks ? ranks[i] : (uint64_t)i + 1;
}

static int cmp_series(const void *a, const void *b, void *ctx)
{
	const struct statsfd_prom_series *s = ctx;
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	const void *ka = s[ia].key ? s[ia].key : (const void *)&s[ia];
	const void *kb = s[ib].key ? s[ib].key : (const void *)&s[ib];
	int c;

	if (ka != kb)
		return ka < kb ? -1 : 1;
	/* Within a family, series by their labels: the same every time. */
	c = strcmp(s[ia].labels ? s[ia].labels : "", s[ib].labels ? s[ib].labels : "");
	if (c)
		return c;
	return (ia > ib) - (ia < ib);
}

/* Registration order: rank, then the stat's index in its schema. */
static int cmp_rank(const void *a, const void *b)
{
	const struct prom_entry *ea = a, *eb = b;

	if (ea->rank != eb->rank)
		return ea->rank < eb->rank ? -1 : 1;
	if (ea->group != eb->group)
		return ea->group < eb->group ? -1 : 1;
	return (ea->stat > eb->stat) - (ea->stat < eb->stat);
}

/* Output order: by family name, then registration order. */
static int cmp_entry(const void *a, const void *b)
{
	const struct prom_entry *ea = a, *eb = b;
	int c = strcmp(ea->name, eb->name);

	return c ? c : cmp_rank(a, b);
}

static const char *const hist_suffixes[] = { "_bucket", "_sum", "_count" };

/*
 * Accept @e, or refuse it: a family is accepted when its name is free, or
 * is the name of a family of the same type that no stat of its own schema
 * took; and, for a histogram, when none of its samples' names is taken.
 * Entries come in registration order, so what registered first is never
 * hidden by what came later.  Return: -ENOMEM, else 0.
 */
static int claim_entry(struct prom_claims *t, struct prom_entry *e)
{
	char buf[STATSFD_LIB_NAME_SIZE_MAX * 2 + 160];
	bool hist = !strcmp(e->type, "histogram");
	struct prom_claim *c = claim_find(t, e->name), *d;
	size_t i;

	if (c->name) {
		if (!c->own || strcmp(c->type, e->type) || c->group == e->group)
			e->refused = true;
		else
			c->group = e->group;	/* the family's latest schema */
		return 0;
	}
	for (i = 0; hist && i < ARRAY_LEN(hist_suffixes); i++) {
		snprintf(buf, sizeof(buf), "%s%s", e->name, hist_suffixes[i]);
		if (claim_find(t, buf)->name) {
			e->refused = true;
			return 0;
		}
	}
	/* Nor may a family be named like another histogram's samples. */
	*c = (struct prom_claim){ e->name, e->type, e->group, true };
	for (i = 0; hist && i < ARRAY_LEN(hist_suffixes); i++) {
		snprintf(buf, sizeof(buf), "%s%s", e->name, hist_suffixes[i]);
		d = claim_find(t, buf);
		d->name = strdup(buf);
		if (!d->name)
			return -ENOMEM;
		d->group = e->group;
	}
	return 0;
}

int statsfd_prom_write(struct statsfd_buf *out,
		       const struct statsfd_prom_series *series, size_t n,
		       unsigned long *conflicts)
{
	return statsfd_prom_write_ranked(out, series, NULL, n, conflicts);
}

/* The text exposition as a visitor of statsfd_prom_walk(). */
static int text_family(void *ctx, const char *name, const char *type,
		       const struct statsfd_stat *st)
{
	struct statsfd_buf *out = ctx;
	struct statsfd_buf help = { 0 };

	statsfd_prom_help(&help, st);
	statsfd_buf_printf(out, "# HELP %s ", name);
	if (help.data)
		escape_help(out, help.data);
	statsfd_buf_printf(out, "\n# TYPE %s %s\n", name, type);
	if (help.oom)
		out->oom = true;
	statsfd_buf_free(&help);
	return 0;
}

static int text_series(void *ctx, const char *name, const char *type,
		       const struct statsfd_prom_series *s,
		       const struct statsfd_stat *st)
{
	statsfd_prom_put_series(ctx, name, s, st);
	return 0;
}

static const struct statsfd_prom_visitor text_visitor = {
	.family = text_family,
	.series = text_series,
};

int statsfd_prom_write_ranked(struct statsfd_buf *out,
			      const struct statsfd_prom_series *series,
			      const uint64_t *ranks, size_t n,
			      unsigned long *conflicts)
{
	int ret = statsfd_prom_walk(series, ranks, n, conflicts, &text_visitor,
				    out);

	if (!ret && out->oom)
		ret = -ENOMEM;
	return ret;
}

/*
 * The series in @order, sorted so that series sharing a key are adjacent,
 * cut into groups of one key (one schema, one set of names), each with the
 * earliest rank of its series.  @order and @groups hold @n + 1 entries.
 * Return: the number of groups.
 */
static size_t group_series(const struct statsfd_prom_series *series,
			   const uint64_t *ranks, size_t n, size_t *order,
			   struct prom_group *groups)
{
	size_t i, ngroups = 0;

	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), cmp_series, (void *)series);
	for (i = 0; i < n; i++) {
		const struct statsfd_prom_series *s = &series[order[i]];
		const struct statsfd_prom_series *p = i ? &series[order[i - 1]] : NULL;
		uint64_t r = series_rank(ranks, order[i]);

		if (!p || !s->key || s->key != p->key) {
			groups[ngroups].first = i;
			groups[ngroups].count = 0;
			groups[ngroups].rank = r;
			ngroups++;
		}
		groups[ngroups - 1].count++;
		if (r < groups[ngroups - 1].rank)
			groups[ngroups - 1].rank = r;
	}
	return ngroups;
}

/*
 * One entry per stat of each group's schema (but the skipped ones), named
 * once for the group, into @ents; *@nents counts those made so far, so
 * that the caller frees their names on failure too.
 * Return: 0, or -ENOMEM.
 */
static int name_entries(const struct statsfd_prom_series *series,
			const size_t *order, const struct prom_group *groups,
			size_t ngroups, struct prom_entry *ents, size_t *nents)
{
	char name[2 * (STATSFD_LIB_NAME_SIZE_MAX + 64)];
	size_t i, j;

	for (i = 0; i < ngroups; i++) {
		const struct statsfd_prom_series *s = &series[order[groups[i].first]];

		for (j = 0; j < statsfd_num_stats(s->sf); j++) {
			struct prom_entry *e = &ents[*nents];

			if (s->skip && s->skip[j])
				continue;
			e->type = statsfd_prom_name(s->prefix,
						    statsfd_stat(s->sf, j),
						    name, sizeof(name));
			e->name = strdup(name);
			if (!e->name)
				return -ENOMEM;
			e->group = i;
			e->stat = (unsigned int)j;
			e->rank = groups[i].rank;
			(*nents)++;
		}
	}
	return 0;
}

/*
 * The accepted entries, sorted by name, to the visitor: a family's first
 * entry starts it, then each series of each entry's group.
 * Return: 0, or the visitor's nonzero return.
 */
static int visit_entries(const struct statsfd_prom_series *series,
			 const size_t *order, const struct prom_group *groups,
			 const struct prom_entry *ents, size_t nents,
			 const struct statsfd_prom_visitor *v, void *ctx)
{
	const char *fam = NULL;
	size_t i, j;
	int ret;

	for (i = 0; i < nents; i++) {
		const struct prom_entry *e = &ents[i];
		const struct prom_group *g = &groups[e->group];
		const struct statsfd_prom_series *s0 = &series[order[g->first]];

		if (e->refused)
			continue;
		if (!fam || strcmp(fam, e->name)) {
			fam = e->name;
			ret = v->family(ctx, e->name, e->type,
					statsfd_stat(s0->sf, e->stat));
			if (ret)
				return ret;
		}
		for (j = 0; j < g->count; j++) {
			const struct statsfd_prom_series *s = &series[order[g->first + j]];

			ret = v->series(ctx, e->name, e->type, s,
					statsfd_stat(s->sf, e->stat));
			if (ret)
				return ret;
		}
	}
	return 0;
}

int statsfd_prom_walk(const struct statsfd_prom_series *series,
		      const uint64_t *ranks, size_t n, unsigned long *conflicts,
		      const struct statsfd_prom_visitor *v, void *ctx)
{
	struct prom_entry *ents = NULL;
	struct prom_group *groups = NULL;
	struct prom_claims claims = { NULL, 0 };
	size_t *order = NULL, ngroups = 0, nents = 0, i, size;
	unsigned long skipped = 0;
	int ret = -ENOMEM;

	order = malloc((n + 1) * sizeof(*order));
	groups = malloc((n + 1) * sizeof(*groups));
	if (!order || !groups)
		goto out;
	ngroups = group_series(series, ranks, n, order, groups);

	for (i = 0; i < ngroups; i++)
		nents += statsfd_num_stats(series[order[groups[i].first]].sf);
	ents = calloc(nents + 1, sizeof(*ents));
	for (size = 16; size < 8 * (nents + 1); size *= 2)
		;
	claims.v = calloc(size, sizeof(*claims.v));
	claims.mask = size - 1;
	nents = 0;
	if (!ents || !claims.v ||
	    name_entries(series, order, groups, ngroups, ents, &nents))
		goto out;
	/* Conflicts are decided in registration order, the same every time. */
	qsort(ents, nents, sizeof(*ents), cmp_rank);
	for (i = 0; i < nents; i++) {
		if (claim_entry(&claims, &ents[i]))
			goto out;
		skipped += ents[i].refused;
	}
	qsort(ents, nents, sizeof(*ents), cmp_entry);
	ret = visit_entries(series, order, groups, ents, nents, v, ctx);
out:
	if (ents)
		for (i = 0; i < nents; i++)
			free(ents[i].name);
	if (claims.v)
		for (i = 0; i <= claims.mask; i++)
			if (claims.v[i].name && !claims.v[i].own)
				free(claims.v[i].name);
	free(claims.v);
	free(ents);
	free(groups);
	free(order);
	if (conflicts)
		*conflicts = skipped;
	return ret;
}
