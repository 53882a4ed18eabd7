// SPDX-License-Identifier: GPL-2.0
/*
 * The Prometheus exposition of libstatsfd (lib/expo/prom.c) against names a
 * hostile or careless provider could choose: HELP escaping, the reserved
 * statsfd_collector namespace, two stats of one schema mapping to one
 * name, and the per-stat skip mask the collector's --include, --exclude
 * and --histograms use.  Each exposition is also checked by
 * `promtool check metrics` (Debian package prometheus).
 *
 * Then a property test: random schemas whose names are made of the words
 * that break expositions (reserved suffixes, abbreviated units, metric
 * types, camelCase, the collector's namespace), several sources each,
 * rendered in random registration orders: promtool accepts every result,
 * the result does not depend on the order of the series, and nothing the
 * first-registered schema exports alone is hidden by the others.  Each
 * is also rendered as OpenMetrics by the collector's format
 * (collector/expo_openmetrics.c): its samples are the text format's (but
 * for canonical bucket bounds), and Prometheus' own OpenMetrics parser
 * (`promtool tsdb create-blocks-from openmetrics`; `promtool check
 * metrics` reads only the text format) accepts it.  And as the protobuf
 * exposition (collector/expo_protobuf.c), decoded with protobuf-c: the
 * text's families, types, label sets and values; log2 histograms as
 * native histograms whose buckets are the kernel's, linear ones as the
 * text's classic buckets.
 * Rounds: 50, 600 with STRESS=1 (CI); the seed is fixed, so a plain run
 * checks the first 50 of CI's schemas (each round runs promtool, about a
 * quarter of a second of CPU).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../collector/expo.h"
#include "image.h"
#include "metrics.pb-c.h"
#include "statsfd.h"
#include "tap.h"

static const struct img_stat stats[] = {
	{ "back\\slash", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "collector_sources", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "collector", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "collectors", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "dup.name", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "dup_name", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "lat_hist", STATSFD_TYPE_LOG_HIST, 0, 4, 0 },
};
#define NSTATS (sizeof(stats) / sizeof(*stats))

static struct statsfd *open_image(uint64_t **values)
{
	static unsigned char img[1 << 13];
	size_t len = img_build(img, sizeof(img), "t", 32, stats, NSTATS, NULL, 0);
	struct statsfd *sf = statsfd_open_fd(img_memfd(img, len),
					     STATSFD_OPEN_CLOSE_FD, NULL);

	*values = sf ? calloc(1, statsfd_data_size(sf) + 8) : NULL;
	if (sf)
		statsfd_read(sf, *values, NULL);
	return sf;
}

/* `promtool check metrics` on @text: true when it accepts it. */
static bool promtool_ok(const char *text)
{
	char path[] = "/tmp/statsfd-prom-test.XXXXXX", cmd[128];
	int fd = mkstemp(path), st;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return false;
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s >/dev/null 2>&1", path);
	st = system(cmd);
	unlink(path);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * Prometheus' OpenMetrics parser accepts @text: every sample gets a
 * timestamp (backfilling needs one) and promtool makes TSDB blocks of it.
 */
static bool om_promtool_ok(const char *text)
{
	char dir[] = "/tmp/statsfd-om-test.XXXXXX", cmd[512], path[64];
	const char *p, *nl;
	FILE *f;
	int st;

	if (!mkdtemp(dir))
		return false;
	snprintf(path, sizeof(path), "%s/om.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return false;
	for (p = text; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		if (*p == '#')
			fprintf(f, "%.*s\n", (int)(nl - p), p);
		else
			fprintf(f, "%.*s 1700000000\n", (int)(nl - p), p);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "promtool tsdb create-blocks-from openmetrics %s %s/blocks >%s/log 2>&1; r=$?; "
		 "[ $r = 0 ] || sed 's/^/# /' %s/log >&2; rm -rf %s; exit $r",
		 path, dir, dir, dir, dir);
	st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A rendering of @n series in @ops's format. */
static int expo_write(const struct expo_ops *ops, struct statsfd_buf *out,
		      const struct statsfd_prom_series *ser, const uint64_t *ranks,
		      size_t n)
{
	struct expo x;
	int ret = expo_begin(&x, ops, out);

	if (!ret)
		ret = expo_stats(&x, ser, ranks, n, NULL);
	if (!ret)
		ret = expo_end(&x);
	expo_destroy(&x);
	return ret;
}

/* The OpenMetrics exposition of @n series, as the collector renders it. */
static int om_write(struct statsfd_buf *out, const struct statsfd_prom_series *ser,
		    const uint64_t *ranks, size_t n)
{
	return expo_write(&expo_openmetrics, out, ser, ranks, n);
}

/*
 * The sample lines of @om are those of @text, the bucket bounds made
 * canonical floats ("le=\"3.0\"" for "le=\"3\""); the samples of a
 * counter family F are F_total, and each # UNIT names a suffix of its
 * family.  @om ends with "# EOF".
 */
static bool om_matches_text(const char *om, const char *text)
{
	struct statsfd_buf a = { 0 }, b = { 0 };
	const char *p, *nl, *q;
	bool ok = true;

	for (p = text; (nl = strchr(p, '\n')); p = nl + 1)
		if (*p != '#')
			statsfd_buf_append(&a, p, (size_t)(nl - p + 1));
	for (p = om; (nl = strchr(p, '\n')); p = nl + 1) {
		char fam[256], unit[32], type[16];

		if (sscanf(p, "# TYPE %255s %15s", fam, type) == 2 && !strcmp(type, "counter")) {
			size_t n = strlen(fam);

			snprintf(fam + n, sizeof(fam) - n, "_total");
			ok &= !strncmp(nl + 1, fam, strlen(fam)) ||
			      !strncmp(nl + 1, "# UNIT ", 7);
		}
		if (sscanf(p, "# UNIT %255s %31s", fam, unit) == 2) {
			size_t n = strlen(fam), m = strlen(unit);

			ok &= n > m + 1 && fam[n - m - 1] == '_' && !strcmp(fam + n - m, unit);
		}
		if (*p == '#')
			continue;
		q = strstr(p, ".0\"} ");
		if (q && q < nl && strstr(p, "_bucket")) {
			statsfd_buf_append(&b, p, (size_t)(q - p));
			statsfd_buf_append(&b, q + 2, (size_t)(nl - q - 1));
		} else {
			statsfd_buf_append(&b, p, (size_t)(nl - p + 1));
		}
	}
	ok &= strlen(om) >= 6 && !strcmp(om + strlen(om) - 6, "# EOF\n");
	ok &= !a.oom && !b.oom && a.len == b.len && (!a.len || !memcmp(a.data, b.data, a.len));

	statsfd_buf_free(&a);
	statsfd_buf_free(&b);
	return ok;
}

/* The value of the text sample "@name{@labels@extra} V", or NAN. */
static double text_value(const char *text, const char *name, const char *labels,
			 const char *extra)
{
	char key[1024];
	const char *p;

	snprintf(key, sizeof(key), "\n%s{%s%s} ", name, labels, extra);
	p = strstr(text - 1, key);
	return p ? strtod(p + strlen(key), NULL) : NAN;
}

/*
 * Where the samples of the @occ-th series with @labels of family @name
 * start in @text (two schemas may feed one family with the same labels):
 * after the sample that ends the previous one.
 */
static const char *series_start(const char *text, const char *name, bool hist,
				const char *labels, unsigned int occ)
{
	char key[1024];
	const char *p = text;

	snprintf(key, sizeof(key), "\n%s%s{%s} ", name, hist ? "_count" : "", labels);
	while (occ-- && p)
		p = strstr(p + 1, key);
	return p && p != text ? p + strlen(key) : text;
}

/*
 * The @occ-th decoded metric with its labels of family @f against the
 * text: its value, or its histogram's count, sum and buckets.
 */
static bool pb_metric_ok(const Io__Prometheus__Client__MetricFamily *f,
			 const Io__Prometheus__Client__Metric *m, const char *text,
			 unsigned int occ)
{
	const Io__Prometheus__Client__Histogram *h = m->histogram;
	struct statsfd_buf lab = { 0 };
	char name[512], le[64];
	double cum[80], c, prev = 0;
	uint64_t kern[80], nat[80] = { 0 };
	size_t i, j, nk = 0, nn = 0;
	bool ok = true;
	int k, shift = 0;

	for (i = 0; i < m->n_label; i++) {
		statsfd_buf_printf(&lab, "%s%s=\"", i ? "," : "", m->label[i]->name);
		statsfd_prom_escape(&lab, m->label[i]->value);
		statsfd_buf_append(&lab, "\"", 1);
	}
	statsfd_buf_append(&lab, "", 0);
	text = series_start(text, f->name, f->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM,
			    lab.data, occ);
	if (f->type != IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM) {
		c = m->counter ? m->counter->value : m->gauge ? m->gauge->value : NAN;
		ok = c == text_value(text, f->name, lab.data, "");
		goto out;
	}
	snprintf(name, sizeof(name), "%s_count", f->name);
	ok &= h && (double)h->sample_count == text_value(text, name, lab.data, "");
	snprintf(name, sizeof(name), "%s_sum", f->name);
	ok &= h && h->sample_sum == text_value(text, name, lab.data, "");
	if (!ok)
		goto out;
	/* The text's cumulative buckets, +Inf last. */
	snprintf(name, sizeof(name), "%s_bucket", f->name);
	for (;;) {
		char key[1024];
		const char *p;

		snprintf(key, sizeof(key), "\n%s{%s%sle=\"", name, lab.data, *lab.data ? "," : "");
		p = text - 1;
		for (i = 0; i <= nk && p; i++)
			p = strstr(p + 1, key);
		if (!p || nk >= 80)
			break;
		p += strlen(key);
		snprintf(le, sizeof(le), "%.*s", (int)strcspn(p, "\""), p);
		cum[nk] = strtod(strchr(p, ' ') + 1, NULL);
		kern[nk] = (uint64_t)(cum[nk] - prev);
		prev = cum[nk];
		if (!h->has_schema && strcmp(le, "+Inf")) {
			ok &= nk < h->n_bucket && h->bucket[nk]->cumulative_count == cum[nk] &&
			      h->bucket[nk]->upper_bound == strtod(le, NULL);
		}
		nk++;
		/* A series' buckets end with +Inf. */
		if (!strcmp(le, "+Inf"))
			break;
	}
	if (!h->has_schema) {
		/* Linear: the text's buckets but +Inf. */
		ok &= nk && h->n_bucket == nk - 1;
		goto out;
	}
	/* Log2: the zero bucket is the kernel's bucket 0, the others follow. */
	ok &= h->schema == 0 && nk >= 2 && h->zero_count == kern[0] && !h->n_negative_span;
	for (i = 0, j = 0, k = 0; ok && i < h->n_positive_span; i++) {
		k += h->positive_span[i]->offset;
		for (c = 0; c < h->positive_span[i]->length && j < h->n_positive_delta; c++) {
			nat[nn] = (nn ? nat[nn - 1] : 0) + (uint64_t)h->positive_delta[j++];
			if (nat[nn] && nn < 80) {
				/*
				 * Native bucket k holds kernel bucket k - shift; the
				 * random schemas have exponent 0: shift 0.
				 */
				ok &= k - shift >= 1 && (size_t)(k - shift) < nk &&
				      nat[nn] == kern[k - shift];
			}
			nn++;
			k++;
		}
	}
	for (i = 1, prev = 0; i < nk; i++)
		prev += (double)kern[i];
	for (i = 0, c = 0; i < nn; i++)
		c += (double)nat[i];
	ok &= c == prev && j == h->n_positive_delta;
out:
	statsfd_buf_free(&lab);
	return ok;
}

/* How many metrics of @f before the @i-th have its labels. */
static unsigned int same_labels(const Io__Prometheus__Client__MetricFamily *f, size_t i)
{
	const Io__Prometheus__Client__Metric *m = f->metric[i], *o;
	unsigned int n = 0;
	size_t j, k;

	for (j = 0; j < i; j++) {
		o = f->metric[j];
		if (o->n_label != m->n_label)
			continue;
		for (k = 0; k < m->n_label; k++)
			if (strcmp(o->label[k]->name, m->label[k]->name) ||
			    strcmp(o->label[k]->value, m->label[k]->value))
				break;
		n += k == m->n_label;
	}
	return n;
}

/*
 * The protobuf stream @pb decodes into the families of @text, in its
 * order, with its types, label sets and values.
 */
static bool pb_matches_text(const struct statsfd_buf *pb, const char *text)
{
	static const char *const types[] = {
		[IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER] = "counter",
		[IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE] = "gauge",
		[IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM] = "histogram",
	};
	const uint8_t *p = (const uint8_t *)pb->data, *end = p + pb->len;
	const char *t = text;
	unsigned int fams = 0;
	bool ok = true;
	size_t i;

	while (ok && p < end) {
		Io__Prometheus__Client__MetricFamily *f;
		uint64_t len = 0;
		char key[600];
		int sh = 0;

		while (p < end && (*p & 0x80))
			len |= (uint64_t)(*p++ & 0x7f) << sh, sh += 7;
		if (p >= end)
			return false;
		len |= (uint64_t)*p++ << sh;
		if (len > (uint64_t)(end - p))
			return false;
		f = io__prometheus__client__metric_family__unpack(NULL, len, p);
		p += len;
		if (!f || f->type > IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM ||
		    !types[f->type]) {
			ok = false;
		} else {
			/* The text's next family is this one. */
			snprintf(key, sizeof(key), "# TYPE %s %s\n", f->name, types[f->type]);
			t = strstr(t, key);
			ok &= t && f->n_metric;
			for (i = 0; ok && i < f->n_metric; i++)
				ok &= pb_metric_ok(f, f->metric[i], t - 1,
						   same_labels(f, i));


		}
		if (f)
			io__prometheus__client__metric_family__free_unpacked(f, NULL);
		fams++;
	}
	/* As many families as the text. */
	for (t = text; (t = strstr(t, "# TYPE ")); t++)
		fams--;
	return ok && !fams;
}

static void test_names(void)
{
	const struct { const char *stat; const char *prefix; const char *want; } cases[] = {
		{ "collector_sources", "statsfd", "statsfd_stat_collector_sources" },
		{ "collector", "statsfd", "statsfd_stat_collector_total" },
		{ "collectors", "statsfd", "statsfd_collectors" },
		{ "collector_sources", "kvm", "kvm_collector_sources" },
		{ "back\\slash", "statsfd", "statsfd_back_slash_total" },
	};
	uint64_t *values;
	struct statsfd *sf = open_image(&values);
	unsigned int i;
	char name[128];

	if (!tap_ok(sf != NULL, "image with hostile names opens"))
		return;
	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		statsfd_prom_name(cases[i].prefix, statsfd_find(sf, cases[i].stat),
				  name, sizeof(name));
		tap_ok(!strcmp(name, cases[i].want), "statsfd_prom_name(%s, %s) = %s (got %s)",
		       cases[i].prefix, cases[i].stat, cases[i].want, name);
	}
	/* The CLI's prefixes too: provider statsfd, target collector. */
	statsfd_prom_name("statsfd_collector", statsfd_find(sf, "collectors"), name,
			  sizeof(name));
	tap_ok(!strcmp(name, "statsfd_stat_collector_collectors"),
	       "a prefix in the reserved namespace moves too (got %s)", name);
	free(values);
	statsfd_close(sf);
}

static void test_write(void)
{
	unsigned char skip[NSTATS] = { 0 };
	struct statsfd_prom_series ser[2];
	struct statsfd_buf out = { 0 };
	unsigned long conflicts = 99;
	uint64_t *values;
	struct statsfd *sf = open_image(&values);

	if (!sf)
		return;
	ser[0] = (struct statsfd_prom_series){
		.sf = sf, .values = values, .prefix = "statsfd",
		.labels = "target=\"a\\\"b\"", .key = sf,
	};
	ser[1] = ser[0];
	ser[1].labels = "target=\"c\"";
	tap_ok(!statsfd_prom_write(&out, ser, 2, &conflicts) && out.data,
	       "two series of one schema written");
	tap_ok(strstr(out.data, "# HELP statsfd_back_slash_total statsfd stat back\\\\slash (") != NULL,
	       "HELP: the backslash of the stat name is escaped");
	tap_ok(conflicts == 1 && strstr(out.data, "\nstatsfd_dup_name{target=\"c\"} ") &&
	       !strstr(strstr(out.data, "\nstatsfd_dup_name{target=\"c\"} ") + 1,
		       "\nstatsfd_dup_name{target=\"c\"} "),
	       "dup.name and dup_name: one family, one series per label set, 1 conflict (got %lu)",
	       conflicts);
	tap_ok(!strstr(out.data, "\nstatsfd_collector_") && !strstr(out.data, "\nstatsfd_collector{") &&
	       !strstr(out.data, "# TYPE statsfd_collector_") &&
	       strstr(out.data, "\nstatsfd_collectors{"),
	       "nothing in the statsfd_collector namespace (statsfd_collectors is not in it)");
	tap_ok(promtool_ok(out.data), "promtool check metrics accepts it");
	statsfd_buf_free(&out);

	skip[1] = skip[6] = 1;	/* collector_sources and the histogram */
	ser[0].skip = skip;
	ser[1].skip = skip;
	tap_ok(!statsfd_prom_write(&out, ser, 2, NULL) &&
	       !strstr(out.data, "collector_sources") && !strstr(out.data, "lat_hist") &&
	       strstr(out.data, "statsfd_stat_collector_total"),
	       "the skip mask leaves out exactly its stats");
	tap_ok(promtool_ok(out.data), "promtool check metrics accepts that too");
	statsfd_buf_free(&out);
	free(values);
	statsfd_close(sf);
}

static struct statsfd *open_stats(const struct img_stat *st, unsigned int n,
				  uint64_t **values)
{
	static unsigned char img[1 << 15];
	size_t len = img_build(img, sizeof(img), "p", 64, st, n, NULL, 0);
	struct statsfd *sf = len ? statsfd_open_fd(img_memfd(img, len),
						   STATSFD_OPEN_CLOSE_FD, NULL) : NULL;

	*values = sf ? calloc(1, statsfd_data_size(sf) + 8) : NULL;
	if (sf)
		statsfd_read(sf, *values, NULL);
	return sf;
}

/* Two schemas, @a registered before @b, with @n and @m stats. */
static char *render_two(const struct img_stat *a, unsigned int n,
			const struct img_stat *b, unsigned int m, bool swap,
			unsigned long *conflicts)
{
	struct statsfd_prom_series ser[2];
	struct statsfd_buf out = { 0 };
	uint64_t *va, *vb, ranks[2];
	struct statsfd *sa = open_stats(a, n, &va), *sb = open_stats(b, m, &vb);

	if (!sa || !sb)
		return NULL;
	ser[swap] = (struct statsfd_prom_series){ sa, va, "statsfd", "vm=\"a\"", sa, NULL };
	ser[!swap] = (struct statsfd_prom_series){ sb, vb, "statsfd", "vm=\"b\"", sb, NULL };
	ranks[swap] = 1;
	ranks[!swap] = 2;
	statsfd_prom_write_ranked(&out, ser, ranks, 2, conflicts);
	statsfd_close(sa);
	statsfd_close(sb);
	free(va);
	free(vb);
	return out.data;
}

static void test_reserved(void)
{
	static const struct img_stat hist[] = {
		{ "lat", STATSFD_TYPE_LINEAR_HIST, 0, 4, 10 },
	};
	static const struct img_stat gauge[] = {
		{ "lat_count", STATSFD_TYPE_INSTANT, 0, 1, 0 },
		{ "x_total", STATSFD_TYPE_INSTANT, 0, 1, 0 },
		{ "wait_ms", STATSFD_TYPE_INSTANT, 0, 1, 0 },
		{ "fooBar", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	};
	unsigned long conflicts = 0, c2 = 0;
	char *t, *t2;

	t = render_two(hist, 1, gauge, 4, false, &conflicts);
	tap_ok(t && conflicts == 0 && strstr(t, "# TYPE statsfd_lat histogram\n") &&
	       strstr(t, "# TYPE statsfd_lat_count_value gauge\n") &&
	       strstr(t, "# TYPE statsfd_x_total_value gauge\n") &&
	       strstr(t, "# TYPE statsfd_wait_xms gauge\n") &&
	       strstr(t, "# TYPE statsfd_foobar_total counter\n"),
	       "histogram lat and gauge lat_count: both kept (lat_count_value), x_total exported as x_total_value, wait_ms as wait_xms, fooBar as foobar_total");
	tap_ok(t && promtool_ok(t), "promtool accepts it");
	t2 = render_two(hist, 1, gauge, 4, true, &c2);
	tap_ok(t && t2 && !strcmp(t, t2) && c2 == conflicts,
	       "the same exposition with the series in the other order");
	free(t);
	free(t2);
	{
		static const struct img_stat h2[] = {
			{ "lat_count", STATSFD_TYPE_LOG_HIST, 0, 4, 0 },
			{ "io", STATSFD_TYPE_INSTANT, 0, 1, 0 },
		};
		static const struct img_stat g2[] = {
			{ "lat", STATSFD_TYPE_INSTANT, 0, 1, 0 },
		};

		/* Histogram lat_count would be named like histogram lat's _count. */
		t = render_two(h2, 2, hist, 1, false, &conflicts);
		t2 = render_two(hist, 1, h2, 2, false, &c2);
		tap_ok(t && t2 && conflicts == 0 && c2 == 0 &&
		       strstr(t, "# TYPE statsfd_lat_count_value histogram\n") &&
		       strstr(t, "# TYPE statsfd_lat histogram") &&
		       strstr(t2, "# TYPE statsfd_io gauge\n"),
		       "histograms lat and lat_count: lat_count exported as lat_count_value, no collision");
		tap_ok(t && t2 && promtool_ok(t) && promtool_ok(t2), "promtool accepts both");
		free(t);
		free(t2);
		t = render_two(g2, 1, hist, 1, false, &conflicts);
		t2 = render_two(g2, 1, hist, 1, true, &c2);
		tap_ok(t && t2 && conflicts == 1 && !strcmp(t, t2) &&
		       strstr(t, "# TYPE statsfd_lat gauge\n") && !strstr(t, "statsfd_lat_bucket"),
		       "gauge lat first, then histogram lat: the gauge stays, whatever the series order");
		free(t);
		free(t2);
	}
}

/* Words that break expositions, for the random names below. */
static const char *const words[] = {
	"lat", "count", "sum", "bucket", "total", "created", "info", "ms", "s",
	"ns", "kb", "bits", "milliseconds", "seconds", "bytes", "gauge",
	"counter", "histogram", "collector", "statsfd", "Foo", "barBaz", "9x",
	"le", "quantile", "a.b", "x-y", "io", "exits", "value", "max", "sec",
};

static unsigned int rnd(unsigned int *seed, unsigned int n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) % n;
}

static void random_name(unsigned int *seed, char *buf, size_t len)
{
	unsigned int k = 1 + rnd(seed, 3), i;
	size_t o = 0;

	buf[0] = '\0';
	for (i = 0; i < k && o + 16 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? (rnd(seed, 4) ? "_" : ".") : "",
				      words[rnd(seed, sizeof(words) / sizeof(*words))]);
}

static void random_schema(unsigned int *seed, struct img_stat *st, char (*names)[48],
			  unsigned int n)
{
	static const uint32_t types[] = {
		STATSFD_TYPE_CUMULATIVE, STATSFD_TYPE_INSTANT, STATSFD_TYPE_PEAK,
		STATSFD_TYPE_LINEAR_HIST, STATSFD_TYPE_LOG_HIST,
	};
	static const uint32_t units[] = {
		STATSFD_UNIT_NONE, STATSFD_UNIT_SECONDS, STATSFD_UNIT_BYTES,
		STATSFD_UNIT_CYCLES, STATSFD_UNIT_BOOLEAN,
	};
	static const uint32_t aggs[] = { 0, STATSFD_AGG_SUM, STATSFD_AGG_MAXIMUM };
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint32_t t = types[rnd(seed, 5)];
		bool hist = t == STATSFD_TYPE_LINEAR_HIST || t == STATSFD_TYPE_LOG_HIST;

		random_name(seed, names[i], sizeof(names[i]));
		st[i] = (struct img_stat){
			.name = names[i],
			.flags = t | units[rnd(seed, 5)] | (hist ? 0 : aggs[rnd(seed, 3)]),
			.exponent = 0,
			.size = hist ? 4 : 1,
			.bucket_size = t == STATSFD_TYPE_LINEAR_HIST ? 10 : 0,
		};
	}
}

/* Every "# TYPE" line of @alone is in @all. */
static bool types_kept(const char *alone, const char *all)
{
	const char *p;

	for (p = alone; (p = strstr(p, "# TYPE ")); p++) {
		char line[256];
		size_t n = strcspn(p, "\n");

		if (n >= sizeof(line) - 1)
			return false;
		memcpy(line, p, n);
		line[n] = '\n';
		line[n + 1] = '\0';
		if (!strstr(all, line))
			return false;
	}
	return true;
}

static void test_property(unsigned int rounds)
{
	enum { NSCH = 3, NST = 6 };
	unsigned int seed = 20261202, r, i, bad_promtool = 0, bad_order = 0,
		     bad_hidden = 0, done = 0, bad_om = 0, bad_om_parse = 0, om_parsed = 0,
		     bad_pb = 0;
	unsigned long conflicts = 0;

	for (r = 0; r < rounds; r++) {
		static struct img_stat st[NSCH][NST];
		static char names[NSCH][NST][48];
		struct statsfd_prom_series ser[2 * NSCH], rev[2 * NSCH];
		uint64_t ranks[2 * NSCH], rranks[2 * NSCH], *vals[NSCH] = { 0 };
		struct statsfd *sf[NSCH] = { 0 };
		struct statsfd_buf a = { 0 }, b = { 0 }, alone = { 0 }, om = { 0 }, pb = { 0 };
		unsigned long c = 0;
		bool ok = true;

		for (i = 0; i < NSCH; i++) {
			random_schema(&seed, st[i], names[i], NST);
			sf[i] = open_stats(st[i], NST, &vals[i]);
			ok &= !!sf[i];
		}
		if (!ok)
			goto next;
		for (i = 0; i < 2 * NSCH; i++) {
			ser[i] = (struct statsfd_prom_series){
				sf[i / 2], vals[i / 2], rnd(&seed, 2) ? "statsfd" : "kvm",
				i % 2 ? "vm=\"b\"" : "vm=\"a\"", sf[i / 2], NULL,
			};
			/* Same key, same prefix. */
			if (i % 2)
				ser[i].prefix = ser[i - 1].prefix;
			ranks[i] = 1 + i / 2;
			rev[2 * NSCH - 1 - i] = ser[i];
			rranks[2 * NSCH - 1 - i] = ranks[i];
		}
		statsfd_prom_write_ranked(&a, ser, ranks, 2 * NSCH, &c);
		statsfd_prom_write_ranked(&b, rev, rranks, 2 * NSCH, NULL);
		statsfd_prom_write_ranked(&alone, ser, ranks, 2, NULL);
		conflicts += c;
		done++;
		if (!a.data || !promtool_ok(a.data)) {
			if (!bad_promtool++)
				tap_diag("round %u refused by promtool:\n%s", r,
					 a.data ? a.data : "");
		}
		if (!a.data || !b.data || strcmp(a.data, b.data))
			bad_order++;
		if (alone.data && a.data && !types_kept(alone.data, a.data))
			bad_hidden++;
		if (om_write(&om, ser, ranks, 2 * NSCH) || !a.data ||
		    !om_matches_text(om.data, a.data)) {
			if (!bad_om++)
				tap_diag("round %u: OpenMetrics differs:\n%s", r,
					 om.data ? om.data : "");
		}
		/* Prometheus' parser costs 0.3 s a run: every 10th round. */
		if (!(r % 10) && om.data && ++om_parsed && !om_promtool_ok(om.data)) {
			if (!bad_om_parse++)
				tap_diag("round %u: refused by the OpenMetrics parser:\n%s", r,
					 om.data);
		}
		if (expo_write(&expo_protobuf, &pb, ser, ranks, 2 * NSCH) || !a.data ||
		    !pb_matches_text(&pb, a.data)) {
			if (!bad_pb++)
				tap_diag("round %u: the protobuf exposition differs from:\n%s", r,
					 a.data ? a.data : "");
		}
		statsfd_buf_free(&pb);
		statsfd_buf_free(&om);
		statsfd_buf_free(&a);
		statsfd_buf_free(&b);
		statsfd_buf_free(&alone);
next:
		for (i = 0; i < NSCH; i++) {
			if (sf[i])
				statsfd_close(sf[i]);
			free(vals[i]);
		}
	}
	tap_ok(done >= rounds / 2, "%u of %u random rounds rendered (%lu conflicts refused)",
	       done, rounds, conflicts);
	tap_ok(!bad_promtool, "promtool check metrics accepts every rendering (%u refused)",
	       bad_promtool);
	tap_ok(!bad_order, "every rendering is the same with the series reversed (%u differ)",
	       bad_order);
	tap_ok(!bad_hidden, "the first schema's families are all there (%u hidden)", bad_hidden);
	tap_ok(!bad_om, "OpenMetrics: the text's samples, counter F's samples F_total, units as suffixes, # EOF (%u differ)",
	       bad_om);
	tap_ok(!bad_pb, "protobuf: the text's families, labels and values; log2 histograms native with the kernel's buckets, linear ones classic (%u differ)",
	       bad_pb);
	tap_ok(om_parsed && !bad_om_parse,
	       "Prometheus' OpenMetrics parser accepts every rendering tried (%u of %u refused)",
	       bad_om_parse, om_parsed);
}

int main(void)
{
	if (system("command -v promtool >/dev/null")) {
		tap_ok(0, "promtool (Debian package prometheus) is needed");
		return tap_done();
	}
	test_names();
	test_write();
	test_reserved();
	test_property(getenv("STRESS") && !strcmp(getenv("STRESS"), "1") ? 600 : 50);
	return tap_done();
}
