// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: OpenMetrics 1.0.0 text, for scrapers that ask for it
 * (Prometheus does, first).  The same families, names and samples as the
 * text format, with what OpenMetrics adds:
 *
 *  - a counter's family is named without _total, its samples keep it
 *    ("# TYPE x counter", "x_total 3"): the series Prometheus stores are
 *    the text format's;
 *  - "# UNIT" when the family's name ends in its unit (_seconds, _bytes:
 *    a stat's own unit, not a word of its name);
 *  - _created for the counters that have a known start: the collector's
 *    own (they start from 0 with the process).  The stats of a source
 *    count since its VM or vCPU was created, which no stats file says,
 *    and the host's since boot or since a device appeared: no _created;
 *  - statsfd_collector_build_info is an info family;
 *  - HELP escapes double quotes too, bucket bounds are canonical floats
 *    ("1.0"), and "# EOF" ends the exposition.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expo.h"
#include "statsfd_expo.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

static int om_family(struct expo *x, const char *name, const char *type,
		     const char *help, const char *unit)
{
	size_t len = strlen(name);
	const char *om_type = type;

	if (!strcmp(type, "counter") && ends_with(name, "_total")) {
		len -= strlen("_total");
	} else if (!strcmp(type, "counter")) {
		/* Not named like an OpenMetrics counter's samples. */
		om_type = "unknown";
	} else if (!strcmp(type, "gauge") && ends_with(name, "_info")) {
		len -= strlen("_info");
		om_type = "info";
	} else if (!strcmp(type, "untyped")) {
		/*
		 * OpenMetrics has no "untyped" (node_exporter's vmstat
		 * families): Prometheus refuses the whole scrape for it.
		 */
		om_type = "unknown";
	}
	statsfd_buf_printf(x->out, "# HELP %.*s ", (int)len, name);
	expo_escape_help(x->out, help, true);
	statsfd_buf_printf(x->out, "\n# TYPE %.*s %s\n", (int)len, name, om_type);
	/* expo_name_unit() checked that it is a suffix of the family. */
	if (unit)
		statsfd_buf_printf(x->out, "# UNIT %.*s %s\n", (int)len, name, unit);
	return 0;
}

static int om_sample(struct expo *x, const char *name, const char *labels,
		     const char *value, double created)
{
	size_t len = strlen(name);

	if (labels)
		statsfd_buf_printf(x->out, "%s{%s} %s\n", name, labels, value);
	else
		statsfd_buf_printf(x->out, "%s %s\n", name, value);
	if (created <= 0 || !ends_with(name, "_total"))
		return 0;
	len -= strlen("_total");
	if (labels)
		statsfd_buf_printf(x->out, "%.*s_created{%s} %.3f\n", (int)len,
				   name, labels, created);
	else
		statsfd_buf_printf(x->out, "%.*s_created %.3f\n", (int)len, name,
				   created);
	return 0;
}

/*
 * Append @line (@n bytes, without its newline) with the value of its last
 * le label made a canonical float: "1.0" for the text format's "1".
 */
static void om_bucket_line(struct statsfd_buf *out, const char *line, size_t n)
{
	const char *le = NULL, *p, *end;

	for (p = line; (p = memmem(p, (size_t)(line + n - p), "le=\"", 4)); p += 4)
		le = p + 4;
	if (!le) {
		statsfd_buf_append(out, line, n);
		return;
	}
	end = memchr(le, '"', (size_t)(line + n - le));
	if (!end || strcspn(le, ".eEIn\"") < (size_t)(end - le)) {
		statsfd_buf_append(out, line, n);
		return;
	}
	statsfd_buf_append(out, line, (size_t)(end - line));
	statsfd_buf_append(out, ".0", 2);
	statsfd_buf_append(out, end, (size_t)(line + n - end));
}

static int om_stat(struct expo *x, const char *name, const char *type,
		   const struct statsfd_prom_series *s,
		   const struct statsfd_stat *st)
{
	struct statsfd_buf tmp = { 0 };
	const char *p, *nl;

	if (!statsfd_stat_is_hist(st)) {
		statsfd_prom_put_series(x->out, name, s, st);
		return 0;
	}
	statsfd_prom_put_series(&tmp, name, s, st);
	if (tmp.oom) {
		statsfd_buf_free(&tmp);
		return -ENOMEM;
	}
	for (p = tmp.data; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		om_bucket_line(x->out, p, (size_t)(nl - p));
		statsfd_buf_append(x->out, "\n", 1);
	}
	statsfd_buf_free(&tmp);
	return 0;
}

static int om_end(struct expo *x)
{
	statsfd_buf_append(x->out, "# EOF\n", 6);
	return 0;
}

const struct expo_ops expo_openmetrics = {
	.id = EXPO_OPENMETRICS,
	.name = "openmetrics",
	.content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8",
	.family = om_family,
	.sample = om_sample,
	.stat = om_stat,
	.end = om_end,
};
