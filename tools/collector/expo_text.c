// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the Prometheus text format 0.0.4, what every scraper
 * understands and what is served when nothing else is asked for.
 */
#include "expo.h"
#include "statsfd_expo.h"

static int text_family(struct expo *x, const char *name, const char *type,
		       const char *help, const char *unit)
{
	statsfd_buf_printf(x->out, "# HELP %s ", name);
	expo_escape_help(x->out, help, false);
	statsfd_buf_printf(x->out, "\n# TYPE %s %s\n", name, type);
	return 0;
}

static int text_sample(struct expo *x, const char *name, const char *labels,
		       const char *value, double created)
{
	if (labels)
		statsfd_buf_printf(x->out, "%s{%s} %s\n", name, labels, value);
	else
		statsfd_buf_printf(x->out, "%s %s\n", name, value);
	return 0;
}

static int text_stat(struct expo *x, const char *name, const char *type,
		     const struct statsfd_prom_series *s,
		     const struct statsfd_stat *st)
{
	statsfd_prom_put_series(x->out, name, s, st);
	return 0;
}

const struct expo_ops expo_text = {
	.id = EXPO_TEXT,
	.name = "text",
	.content_type = "text/plain; version=0.0.4; charset=utf-8",
	.family = text_family,
	.sample = text_sample,
	.stat = text_stat,
};
