// SPDX-License-Identifier: GPL-2.0
/*
 * The Prometheus exposition of libstatsfd (lib/prom.c) against names a
 * hostile or careless provider could choose: HELP escaping, the reserved
 * statsfd_collector namespace, two stats of one schema mapping to one
 * name, and the per-stat skip mask the collector's --include, --exclude
 * and --histograms use.  Each exposition is also checked by
 * `promtool check metrics` (Debian package prometheus).
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

int main(void)
{
	if (system("command -v promtool >/dev/null")) {
		tap_ok(0, "promtool (Debian package prometheus) is needed");
		return tap_done();
	}
	test_names();
	test_write();
	return tap_done();
}
