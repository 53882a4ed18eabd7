// SPDX-License-Identifier: GPL-2.0
/*
 * The Prometheus exposition of libstatsfd (lib/prom.c) against names a
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
 * first-registered schema exports alone is hidden by the others.
 * Rounds: 50, 600 with STRESS=1 (CI); the seed is fixed, so a plain run
 * checks the first 50 of CI's schemas (each round runs promtool, about a
 * quarter of a second of CPU).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image.h"
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
		     bad_hidden = 0, done = 0;
	unsigned long conflicts = 0;

	for (r = 0; r < rounds; r++) {
		static struct img_stat st[NSCH][NST];
		static char names[NSCH][NST][48];
		struct statsfd_prom_series ser[2 * NSCH], rev[2 * NSCH];
		uint64_t ranks[2 * NSCH], rranks[2 * NSCH], *vals[NSCH] = { 0 };
		struct statsfd *sf[NSCH] = { 0 };
		struct statsfd_buf a = { 0 }, b = { 0 }, alone = { 0 };
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
