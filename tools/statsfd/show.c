// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd CLI: the one-shot commands over the sources found: show (a
 * table, JSON or the Prometheus text format), list and dump.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/**
 * cli_name_ok() - whether --name lets @name through
 * @o: the options
 * @name: a stat's name
 *
 * Return: true without --name, or when one of its globs matches @name.
 */
bool cli_name_ok(const struct cli_opts *o, const char *name)
{
	unsigned int i;

	if (!o->nnames)
		return true;
	for (i = 0; i < o->nnames; i++)
		if (!fnmatch(o->names[i], name, 0))
			return true;
	return false;
}

/**
 * cli_read_all() - read the current values of every source not hidden
 * @s: the sources
 *
 * Each source's values go to its &cli_source.cur; a failure is reported
 * on stderr with the source's id and the others are still read.
 *
 * Return: 0, or -1 when a read failed.
 */
int cli_read_all(struct cli_sources *s)
{
	struct statsfd_error err;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < s->n; i++) {
		if (s->v[i].hidden)
			continue;
		if (statsfd_read(s->v[i].sf, s->v[i].cur, &err)) {
			fprintf(stderr, "statsfd: %s: %s\n", statsfd_id(s->v[i].sf), err.msg);
			ret = -1;
		}
	}
	return ret;
}

static const char *short_type(const struct statsfd_stat *st)
{
	switch (st->type) {
	case STATSFD_TYPE_LINEAR_HIST:	return "linear-hist";
	case STATSFD_TYPE_LOG_HIST:	return "log2-hist";
	}
	return statsfd_type_name(st->type);
}

/* What the two stats of a source with update windows mean, for the table. */
static const char *meta_note(const struct statsfd *sf,
			     const struct statsfd_stat *st)
{
	if (st == statsfd_sample_stat(sf))
		return "  (CLOCK_BOOTTIME of this snapshot)";
	if (st == statsfd_generation_stat(sf))
		return "  (update windows so far)";
	return "";
}

static void show_table(const struct cli_opts *o, struct cli_sources *s)
{
	unsigned int i, j, k;
	char val[64], range[96], desc[200];
	bool first = true;

	/* The host's sources on their pages, the others one table each. */
	if (cli_has_host(s)) {
		cli_host_page(s, 0, false);
		first = false;
	}
	for (i = 0; i < s->n; i++) {
		const struct cli_source *src = &s->v[i];

		if (src->hidden || src->host)
			continue;
		cli_describe(src, desc, sizeof(desc));
		printf("%s%s  (%s; from %s)\n", first ? "" : "\n", statsfd_id(src->sf),
		       desc, src->origin);
		printf("  %-32s %-12s %s\n", "NAME", "TYPE", "VALUE");
		for (j = 0; j < statsfd_num_stats(src->sf); j++) {
			const struct statsfd_stat *st = statsfd_stat(src->sf, j);
			const uint64_t *v = statsfd_values(st, src->cur);
			uint64_t total = 0;

			if (!cli_name_ok(o, st->name))
				continue;
			if (!statsfd_stat_is_hist(st)) {
				statsfd_format_value(st, v[0], val, sizeof(val));
				printf("  %-32s %-12s %s%s%s%s%s\n", st->name, short_type(st),
				       val, st->agg ? "  (" : "",
				       st->agg ? statsfd_agg_name(st->agg) : "",
				       st->agg ? " over children)" : "", meta_note(src->sf, st));
				continue;
			}
			for (k = 0; k < st->size; k++)
				total += v[k];
			printf("  %-32s %-12s %" PRIu64 " samples in %u buckets\n",
			       st->name, short_type(st), total, st->size);
			for (k = 0; k < st->size; k++) {
				if (!v[k] && !o->all)
					continue;
				statsfd_format_bucket(st, k, range, sizeof(range));
				printf("      %-40s %" PRIu64 "\n", range, v[k]);
			}
		}
		first = false;
	}
}

static void show_json(const struct cli_opts *o, struct cli_sources *s)
{
	struct json_object *arr = json_object_new_array();
	unsigned int i, j, k;

	for (i = 0; i < s->n; i++) {
		const struct cli_source *src = &s->v[i];
		struct json_object *so, *stats;

		if (src->hidden)
			continue;
		so = json_object_new_object();
		stats = json_object_new_array();
		json_object_object_add(so, "id", json_object_new_string(statsfd_id(src->sf)));
		json_object_object_add(so, "provider", json_object_new_string(src->labels.provider));
		json_object_object_add(so, "target", json_object_new_string(src->labels.target));
		if (src->labels.vm[0])
			json_object_object_add(so, "vm", json_object_new_string(src->labels.vm));
		if (src->labels.vcpu >= 0)
			json_object_object_add(so, "vcpu", json_object_new_int(src->labels.vcpu));
		if (src->host && src->hobj.kind == STATSFD_HOST_CPU)
			json_object_object_add(so, "cpu", json_object_new_int((int)src->hobj.cpu));
		else if (src->host && src->hobj.kind != STATSFD_HOST_NODE)
			json_object_object_add(so, "device", json_object_new_string(src->hobj.name));
		json_object_object_add(so, "origin", json_object_new_string(src->origin));
		for (j = 0; j < statsfd_num_stats(src->sf); j++) {
			const struct statsfd_stat *st = statsfd_stat(src->sf, j);
			const uint64_t *v = statsfd_values(st, src->cur);
			struct json_object *x = json_object_new_object();

			if (!cli_name_ok(o, st->name)) {
				json_object_put(x);
				continue;
			}
			json_object_object_add(x, "name", json_object_new_string(st->name));
			json_object_object_add(x, "type", json_object_new_string(statsfd_type_name(st->type)));
			json_object_object_add(x, "unit", json_object_new_string(statsfd_unit_name(st->unit)));
			json_object_object_add(x, "base", json_object_new_int(st->base ? 2 : 10));
			json_object_object_add(x, "exponent", json_object_new_int(st->exponent));
			if (st->agg)
				json_object_object_add(x, "aggregation",
						       json_object_new_string(statsfd_agg_name(st->agg)));
			json_object_object_add(x, "value", statsfd_json_value(st, src->cur));
			if (!statsfd_stat_is_hist(st)) {
				json_object_object_add(x, "value-in-base-unit",
						       json_object_new_double(statsfd_to_base(st, v[0])));
			} else {
				struct json_object *b = json_object_new_array();

				for (k = 0; k < st->size; k++) {
					struct json_object *bo = json_object_new_object();
					struct statsfd_bucket bk;

					statsfd_bucket(st, k, &bk);
					json_object_object_add(bo, "lower",
							       json_object_new_double(statsfd_to_base(st, bk.lo)));
					json_object_object_add(bo, "upper", bk.open ? NULL :
							       json_object_new_double(statsfd_to_base(st, bk.hi)));
					json_object_object_add(bo, "count", json_object_new_uint64(v[k]));
					json_object_array_add(b, bo);
				}
				json_object_object_add(x, "buckets", b);
			}
			json_object_array_add(stats, x);
		}
		json_object_object_add(so, "stats", stats);
		json_object_array_add(arr, so);
	}
	printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(arr);
}

/*
 * The labels of a host source, as the collector's --host gives them:
 * provider, target, and node_exporter's cpu or device.
 */
static void prom_host_labels(struct statsfd_buf *b, const struct cli_source *src)
{
	statsfd_buf_printf(b, "provider=\"statsfd_host\",target=\"%s\"",
			   statsfd_host_kind_name(src->hobj.kind));
	if (src->hobj.kind == STATSFD_HOST_NODE)
		return;
	statsfd_buf_printf(b, ",%s=\"", src->hobj.kind == STATSFD_HOST_CPU ?
			   "cpu" : "device");
	statsfd_prom_escape(b, src->hobj.name);
	statsfd_buf_printf(b, "\"");
}

/*
 * The collector's exposition: statsfd_* (or kvm_*) with the labels
 * provider, target, id, vm and vcpu; a host source's stats under
 * node_exporter's names, the stats it has no name for as statsfd_*.
 */
static void show_prom(struct cli_sources *s)
{
	struct statsfd_prom_series *ser = calloc(s->n + 1, sizeof(*ser));
	struct statsfd_host_series *hser = calloc(s->n + 1, sizeof(*hser));
	struct statsfd_buf *labels = calloc(s->n + 1, sizeof(*labels));
	unsigned char **skip = calloc(s->n + 1, sizeof(*skip));
	char (*prefix)[72] = calloc(s->n + 1, sizeof(*prefix));
	struct statsfd_buf out = { 0 };
	unsigned int i, j, n = 0, nh = 0;

	if (!ser || !hser || !labels || !skip || !prefix) {
		fprintf(stderr, "statsfd: out of memory\n");
		goto out;
	}
	for (i = 0; i < s->n; i++) {
		const struct cli_source *src = &s->v[i];
		const struct statsfd_labels *l = &src->labels;
		struct statsfd_buf *b = &labels[i];

		if (src->hidden)
			continue;
		if (src->host) {
			skip[i] = calloc(statsfd_num_stats(src->sf) + 1, 1);
			if (!skip[i]) {
				fprintf(stderr, "statsfd: out of memory\n");
				goto out;
			}
			for (j = 0; j < statsfd_num_stats(src->sf); j++)
				skip[i][j] = statsfd_host_not_generic(src->hobj.kind,
								 statsfd_stat(src->sf, j)->name);
			prom_host_labels(b, src);
			hser[nh++] = (struct statsfd_host_series){
				src->sf, src->cur, src->hobj.kind, src->hobj.name,
			};
			ser[n++] = (struct statsfd_prom_series){
				src->sf, src->cur, "statsfd", b->data, NULL, skip[i],
			};
			continue;
		}
		/* The collector's naming: namespace, then labels. */
		snprintf(prefix[i], sizeof(prefix[i]), "%s",
			 strcmp(l->provider, "kvm") ? "statsfd" : "kvm");
		statsfd_buf_printf(b, "provider=\"");
		statsfd_prom_escape(b, l->provider);
		statsfd_buf_printf(b, "\",target=\"");
		statsfd_prom_escape(b, l->target);
		statsfd_buf_printf(b, "\",id=\"");
		statsfd_prom_escape(b, statsfd_id(src->sf));
		statsfd_buf_printf(b, "\"");
		if (l->vm[0]) {
			statsfd_buf_printf(b, ",vm=\"");
			statsfd_prom_escape(b, l->vm);
			statsfd_buf_printf(b, "\"");
		}
		if (l->vcpu >= 0)
			statsfd_buf_printf(b, ",vcpu=\"%d\"", l->vcpu);
		ser[n++] = (struct statsfd_prom_series){
			src->sf, src->cur, prefix[i], b->data, NULL, NULL,
		};
	}
	if (statsfd_prom_write(&out, ser, n, NULL) ||
	    statsfd_host_prom_write(&out, hser, nh))
		fprintf(stderr, "statsfd: out of memory\n");
	else if (out.data)
		fputs(out.data, stdout);
out:
	for (i = 0; labels && i < s->n; i++)
		statsfd_buf_free(&labels[i]);
	for (i = 0; skip && i < s->n; i++)
		free(skip[i]);
	statsfd_buf_free(&out);
	free(labels);
	free(skip);
	free(prefix);
	free(hser);
	free(ser);
}

/**
 * cli_show() - `show`: every stat of every source once
 * @o: the options (--json, --prometheus, --name, --all)
 * @s: the sources, prepared
 *
 * Return: 0, or 1 when a read failed (nothing is printed then).
 */
int cli_show(const struct cli_opts *o, struct cli_sources *s)
{
	if (cli_read_all(s))
		return 1;
	if (o->json)
		show_json(o, s);
	else if (o->prom)
		show_prom(s);
	else
		show_table(o, s);
	return 0;
}

/**
 * cli_list() - `list`: one line per source found
 * @s: the sources, prepared
 *
 * Return: 0.
 */
int cli_list(struct cli_sources *s)
{
	unsigned int i;
	char desc[200];

	for (i = 0; i < s->n; i++) {
		const struct statsfd *sf = s->v[i].sf;
		enum statsfd_view_kind vk = statsfd_view_kind(sf);

		cli_describe(&s->v[i], desc, sizeof(desc));
		printf("%-28s %u stats, %zu data bytes%s%s; %s; from %s\n",
		       statsfd_id(sf), s->v[i].hidden ? 0 : statsfd_num_stats(sf),
		       s->v[i].hidden ? 0 : statsfd_data_size(sf),
		       statsfd_is_mapped(sf) ? ", values mapped" : "",
		       s->v[i].hidden ? ", none of --stats" :
		       vk == STATSFD_VIEW_KERNEL ? ", through a view" :
		       vk == STATSFD_VIEW_EMULATED ? ", filtered (no views)" : "",
		       desc, s->v[i].origin);
	}
	return 0;
}

/**
 * cli_dump() - `dump`: the first source's whole image, as a file can hold it
 * @o: the options (--output)
 * @s: the sources (not prepared: the image is the fd's own)
 *
 * Return: 0, or 1 on a short read or a failed write.
 */
int cli_dump(const struct cli_opts *o, struct cli_sources *s)
{
	const struct statsfd_header *h = statsfd_header(s->v[0].sf);
	size_t dlen, end = sizeof(*h), x;
	unsigned char *buf;
	ssize_t r;
	int fd = STDOUT_FILENO;

	statsfd_schema_bytes(s->v[0].sf, &dlen);
	x = (size_t)h->id_offset + h->name_size;
	end = x > end ? x : end;
	x = (size_t)h->desc_offset + dlen;
	end = x > end ? x : end;
	x = (size_t)h->data_offset + statsfd_data_size(s->v[0].sf);
	end = x > end ? x : end;
	buf = malloc(end);
	if (!buf)
		return 1;
	r = pread(statsfd_fd(s->v[0].sf), buf, end, 0);
	if (r != (ssize_t)end) {
		fprintf(stderr, "statsfd: dump: short read\n");
		free(buf);
		return 1;
	}
	if (o->output) {
		fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "statsfd: %s: %s\n", o->output, strerror(errno));
			free(buf);
			return 1;
		}
	}
	r = write(fd, buf, end);
	if (o->output)
		close(fd);
	free(buf);
	return r == (ssize_t)end ? 0 : 1;
}
