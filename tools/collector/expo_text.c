// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the Prometheus text format 0.0.4, what every scraper
 * understands and what is served when nothing else is asked for.
 */
#include "expo.h"
#include "statsfd_expo.h"

/**
 * expo_escape_help() - append a HELP text, escaped as the text format
 *	does (OpenMetrics too, with @quote)
 * @b: buffer
 * @s: the text
 * @quote: escape double quotes too (OpenMetrics), not only backslash and
 *	newline (the text format)
 */
void expo_escape_help(struct statsfd_buf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			statsfd_buf_append(b, "\\\\", 2);
		else if (*s == '\n')
			statsfd_buf_append(b, "\\n", 2);
		else if (*s == '"' && quote)
			statsfd_buf_append(b, "\\\"", 2);
		else
			statsfd_buf_append(b, s, 1);
	}
}

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
