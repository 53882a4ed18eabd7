// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd: show, watch, dump and query binary stats fds (statsfd's own and
 * real KVM's), from a device, a running VMM, an fd, a socket or a file.
 * See Documentation/statsfd-tools.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "statsfd_msg.h"

#define DEFAULT_DEVICE		"/dev/statsfd_vm"
#define DEFAULT_COLLECTOR	"/run/statsfd/collector.sock"

static const char usage[] =
"usage: statsfd COMMAND [SOURCES] [OPTIONS]\n"
"\n"
"Commands:\n"
"  show     print every stat once: a table, or --json, or --prometheus\n"
"  watch    refresh per-second rates and current values in place\n"
"  list     one line per source found\n"
"  dump     write the raw image of the first source (--output FILE)\n"
"  query    send a JSON query to statsfd-collector (see --collector)\n"
"\n"
"Sources (repeatable, at least one for show/watch/list/dump):\n"
"  --device[=PATH]   the statsfd_vm system stats plus every VM and vCPU of\n"
"                    every process we may take fds from (default " DEFAULT_DEVICE ")\n"
"  --pid PID         the VM and vCPU fds of a running VMM (KVM or statsfd_vm),\n"
"                    taken with pidfd_getfd (needs ptrace permission)\n"
"  --fd N            an inherited stats fd\n"
"  --socket PATH     listen on PATH; a VMM connects and sends stats fds with\n"
"                    an add-sources message (collector protocol)\n"
"  --file PATH       a saved image (statsfd dump)\n"
"  --host[=PATH]     the host's own stats (statsfd_host.ko, default " STATSFD_HOST_DEVICE "):\n"
"                    the node, every online CPU, interface and disk, shown\n"
"                    as pages like vmstat's and sar's\n"
"\n"
"Options:\n"
"  --json, --prometheus   output format of show\n"
"  --name GLOB            only stats whose name matches (repeatable)\n"
"  --stats NAME,...       read only these stats, through a view of each source\n"
"                         (where the fd has no views: read and filtered here)\n"
"  --all                  also zero rows in watch and empty buckets in show\n"
"  --interval SEC         watch period (default 1)\n"
"  --count N              watch: stop after N refreshes (default: until ^C)\n"
"  --ansi                 watch: refresh in place even when stdout is not a tty\n"
"  --timeout SEC          --socket: how long to wait for the VMM (default 30)\n"
"  --output FILE          dump: write here instead of stdout\n"
"  --collector PATH       query: the collector socket (default " DEFAULT_COLLECTOR ")\n"
"  query filters: --schemas | --sources | --target T --vm NAME --vcpus 0,1\n"
"                 --provider P --names a,b --raw JSON\n";

struct opts {
	const char *cmd;
	bool json, prom, all, ansi;
	const char **names;
	unsigned int nnames;
	const char *stats[256];
	unsigned int nstats;
	double interval;
	long count;
	int timeout_ms;
	const char *output;
	const char *collector;
	/* query */
	bool schemas, list_sources;
	const char *target, *provider, *names_csv, *vcpus, *raw;
	const char *vms[16];
	unsigned int nvms;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static bool name_ok(const struct opts *o, const char *name)
{
	unsigned int i;

	if (!o->nnames)
		return true;
	for (i = 0; i < o->nnames; i++)
		if (!fnmatch(o->names[i], name, 0))
			return true;
	return false;
}

static int read_all(struct cli_sources *s)
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

static void describe(const struct cli_source *src, char *buf, size_t len)
{
	const struct statsfd_labels *l = &src->labels;
	int n;

	n = snprintf(buf, len, "provider %s, target %s", l->provider, l->target);
	if (l->vm[0] && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", vm %s", l->vm);
	if (l->vcpu >= 0 && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", vcpu %d", l->vcpu);
	if (src->host && src->hobj.kind != STATSFD_HOST_NODE && n >= 0 &&
	    (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", %s %s",
			 src->hobj.kind == STATSFD_HOST_CPU ? "cpu" : "device",
			 src->hobj.name);
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

static void show_table(const struct opts *o, struct cli_sources *s)
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
		describe(src, desc, sizeof(desc));
		printf("%s%s  (%s; from %s)\n", first ? "" : "\n", statsfd_id(src->sf),
		       desc, src->origin);
		printf("  %-32s %-12s %s\n", "NAME", "TYPE", "VALUE");
		for (j = 0; j < statsfd_num_stats(src->sf); j++) {
			const struct statsfd_stat *st = statsfd_stat(src->sf, j);
			const uint64_t *v = statsfd_values(st, src->cur);
			uint64_t total = 0;

			if (!name_ok(o, st->name))
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

static void show_json(const struct opts *o, struct cli_sources *s)
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

			if (!name_ok(o, st->name)) {
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
static void host_labels(struct statsfd_buf *b, const struct cli_source *src)
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
			host_labels(b, src);
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

/* Compact "1.23ms/s"-style cell for watch. */
static void cell(const struct statsfd_stat *st, double v, bool rate, char *buf,
		 size_t len)
{
	static const char *const si[] = { "", "k", "M", "G", "T", "P" };
	const char *unit = "";
	double a;
	int i = 0;

	if (st->unit == STATSFD_UNIT_BOOLEAN && !rate) {
		snprintf(buf, len, "%s", v ? "true" : "false");
		return;
	}
	if (st->unit == STATSFD_UNIT_SECONDS) {
		a = v < 0 ? -v : v;
		if (a == 0)
			snprintf(buf, len, "0%s", rate ? "/s" : "");
		else if (a >= 1)
			snprintf(buf, len, "%.3gs%s", v, rate ? "/s" : "");
		else if (a >= 1e-3)
			snprintf(buf, len, "%.3gms%s", v * 1e3, rate ? "/s" : "");
		else if (a >= 1e-6)
			snprintf(buf, len, "%.3gus%s", v * 1e6, rate ? "/s" : "");
		else
			snprintf(buf, len, "%.3gns%s", v * 1e9, rate ? "/s" : "");
		return;
	}
	if (st->unit == STATSFD_UNIT_BYTES) {
		static const char *const iec[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };

		a = v < 0 ? -v : v;
		while (a >= 1024 && i < 5) {
			a /= 1024;
			v /= 1024;
			i++;
		}
		snprintf(buf, len, i ? "%.3g%s%s" : "%.0f%s%s", v, iec[i], rate ? "/s" : "");
		return;
	}
	if (st->unit == STATSFD_UNIT_CYCLES)
		unit = "cy";
	a = v < 0 ? -v : v;
	while (a >= 1000 && i < 5) {
		a /= 1000;
		v /= 1000;
		i++;
	}
	if (!i && v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f%s%s", v, unit, rate ? "/s" : "");
	else
		snprintf(buf, len, "%.3g%s%s%s", v, si[i], unit, rate ? "/s" : "");
}

/*
 * Rates are per second of the source's own clock when it has sample_ns
 * (the moments its two snapshots were taken), else of the wall-clock
 * time around the reads (@dt).
 */
static double row_value(const struct statsfd_stat *st, const struct cli_source *src,
			double dt, bool *rate)
{
	const uint64_t *c = statsfd_values(st, src->cur);
	const uint64_t *p = statsfd_values(st, src->prev);
	uint64_t dc = 0;
	unsigned int k;

	dt = statsfd_sample_interval(src->sf, src->prev, src->cur, dt);

	if (statsfd_stat_is_hist(st)) {
		/* Histograms: samples per second, over all buckets. */
		for (k = 0; k < st->size; k++)
			dc += c[k] - p[k];
		*rate = true;
		return (double)dc / dt;
	}
	if (st->type == STATSFD_TYPE_CUMULATIVE) {
		*rate = true;
		/* Unsigned subtraction: a counter wrapping past U64_MAX stays right. */
		return statsfd_scale_value(st, (double)(c[0] - p[0])) / dt;
	}
	*rate = false;
	return statsfd_to_base(st, c[0]);
}

static const char *col_label(const struct cli_source *src, char *buf, size_t len)
{
	const struct statsfd_labels *l = &src->labels;
	char full[96];
	size_t n;

	if (l->vcpu >= 0)
		snprintf(full, sizeof(full), "%s/%d", l->vm, l->vcpu);
	else
		snprintf(full, sizeof(full), "%s", l->vm[0] ? l->vm : l->target);
	/* Keep the end, where VM numbers and vCPU indices differ. */
	n = strlen(full);
	snprintf(buf, len, "%.10s", n > 10 ? full + n - 10 : full);
	return buf;
}

static void render(const struct opts *o, struct cli_sources *s, double dt,
		   long frame, int width, bool tty, const struct cli_changes *ch)
{
	const int cw = 11, nw = 26;
	unsigned int *group = calloc(s->n + 1, sizeof(*group));
	unsigned int i, j, g, ngroups = 0;
	char buf[64], of[32] = "";

	if (!group)
		return;
	if (tty)
		printf("\033[H\033[J");
	else if (frame > 1)
		printf("\n");
	if (o->count)
		snprintf(of, sizeof(of), "/%ld", o->count);
	printf("statsfd watch: %u source%s, every %.3g s, refresh %ld%s  "
	       "(counters: per second; others: current value)\n", s->n,
	       s->n == 1 ? "" : "s", o->interval, frame, of);
	if (ch->ngone)
		printf("gone (hung up): %s\n", ch->gone.data);
	if (ch->nadded)
		printf("new: %s\n", ch->added.data);
	if (cli_has_host(s)) {
		printf("\n");
		cli_host_page(s, dt, true);
	}
	/* Sources sharing a schema, provider and target become columns of one table. */
	for (i = 0; i < s->n; i++) {
		if (s->v[i].hidden || s->v[i].host) {
			group[i] = UINT32_MAX;
			continue;
		}
		for (j = 0; j < i; j++)
			if (!s->v[j].hidden && !s->v[j].host && statsfd_same_schema(s->v[i].sf, s->v[j].sf) &&
			    !strcmp(s->v[i].labels.target, s->v[j].labels.target) &&
			    !strcmp(s->v[i].labels.provider, s->v[j].labels.provider))
				break;
		group[i] = j < i ? group[j] : ngroups++;
	}
	for (g = 0; g < ngroups; g++) {
		unsigned int members[256] = { 0 }, nm = 0, shown, k;
		const struct cli_source *first = NULL;

		for (i = 0; i < s->n && nm < 256; i++)
			if (group[i] == g)
				members[nm++] = i;
		first = &s->v[members[0]];
		shown = nm;
		if (nw + (int)(shown + (nm > 1)) * cw > width)
			shown = (unsigned int)((width - nw) / cw) - (nm > 1);
		if (!shown || shown > nm)
			shown = 1;
		printf("\n%s %s (%u source%s%s)\n", first->labels.provider,
		       first->labels.target, nm, nm == 1 ? "" : "s",
		       shown < nm ? ", first columns only; total covers all" : "");
		printf("%-*s", nw, "  stat");
		for (k = 0; k < shown; k++)
			printf("%*s", cw, col_label(&s->v[members[k]], buf, sizeof(buf)));
		if (nm > 1)
			printf("%*s", cw, "total");
		printf("\n");
		for (j = 0; j < statsfd_num_stats(first->sf); j++) {
			const struct statsfd_stat *st = statsfd_stat(first->sf, j);
			double total = 0;
			bool rate = false, any = false;

			/* The time base of the rates, not a value to watch. */
			if (!name_ok(o, st->name) || st == statsfd_sample_stat(first->sf))
				continue;
			for (k = 0; k < nm; k++) {
				double v = row_value(st, &s->v[members[k]], dt, &rate);

				total = st->type == STATSFD_TYPE_PEAK && k ?
					(v > total ? v : total) : total + v;
				any |= v != 0;
			}
			if (!any && !o->all)
				continue;
			printf("  %-*.*s", nw - 2, nw - 3, st->name);
			for (k = 0; k < shown; k++) {
				cell(st, row_value(st, &s->v[members[k]], dt, &rate), rate,
				     buf, sizeof(buf));
				printf("%*s", cw, buf);
			}
			if (nm > 1) {
				cell(st, total, rate, buf, sizeof(buf));
				printf("%*s", cw, buf);
			}
			printf("\n");
		}
	}
	fflush(stdout);
	free(group);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Between refreshes, wait on every source's events (cli_wait()): a source
 * whose owner hung up is dropped at once, a change of children makes us
 * look for new sources.  Both are listed at the top of the next refresh.
 */
static int cmd_watch(const struct opts *o, struct cli_sources *s)
{
	struct cli_changes ch = { 0 };
	struct timespec t0, t1;
	struct winsize ws;
	bool tty = o->ansi || isatty(STDOUT_FILENO);
	int width = 132, ret = 0;
	long frame;
	unsigned int i;

	if (tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		width = ws.ws_col;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (read_all(s))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (frame = 1; !stop && (!o->count || frame <= o->count); frame++) {
		double dt, deadline = mono_s() + o->interval, left;

		while (!stop && (left = deadline - mono_s()) > 0) {
			int r = cli_wait(s, (int)(left * 1000) + 1, &ch);

			if (r < 0 && r != -EINTR) {
				ret = 1;
				break;
			}
		}
		if (stop || ret)
			break;
		cli_rescan_pending(s, &ch);
		for (i = 0; i < s->n; i++) {
			uint64_t *tmp = s->v[i].prev;

			s->v[i].prev = s->v[i].cur;
			s->v[i].cur = tmp;
		}
		if (read_all(s)) {
			ret = 1;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		t0 = t1;
		render(o, s, dt > 0 ? dt : 1e-9, frame, width, tty, &ch);
		cli_changes_reset(&ch);
	}
	cli_changes_reset(&ch);
	return ret;
}

static int cmd_list(struct cli_sources *s)
{
	unsigned int i;
	char desc[200];

	for (i = 0; i < s->n; i++) {
		const struct statsfd *sf = s->v[i].sf;
		enum statsfd_view_kind vk = statsfd_view_kind(sf);

		describe(&s->v[i], desc, sizeof(desc));
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

static int cmd_dump(const struct opts *o, struct cli_sources *s)
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

/* --stats a,b,c (repeatable): names kept in order, each once. */
static int parse_stats(struct opts *o, char *csv)
{
	char *tok, *save = NULL;
	unsigned int i;

	for (tok = strtok_r(csv, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < o->nstats; i++)
			if (!strcmp(o->stats[i], tok))
				break;
		if (i < o->nstats)
			continue;
		if (o->nstats == sizeof(o->stats) / sizeof(o->stats[0])) {
			fprintf(stderr, "statsfd: --stats: at most %zu names\n",
				sizeof(o->stats) / sizeof(o->stats[0]));
			return -1;
		}
		o->stats[o->nstats++] = tok;
	}
	if (!o->nstats) {
		fprintf(stderr, "statsfd: --stats: a comma-separated list of stat names\n");
		return -1;
	}
	return 0;
}

static struct json_object *csv_array(const char *csv, bool ints)
{
	struct json_object *a = json_object_new_array();
	char *dup = strdup(csv), *tok, *save = NULL;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_object_array_add(a, ints ? json_object_new_int(atoi(tok)) :
				      json_object_new_string(tok));
	free(dup);
	return a;
}

static int cmd_query(const struct opts *o)
{
	struct json_object *req, *args = json_object_new_object(), *reply, *e;
	const char *out;
	char *json;
	size_t len;
	unsigned int i, nfds = 0;
	int sock, ret;

	if (o->raw) {
		req = json_tokener_parse(o->raw);
		json_object_put(args);
		if (!req) {
			fprintf(stderr, "statsfd: --raw: not valid JSON\n");
			return 2;
		}
	} else if (o->schemas || o->list_sources) {
		if (o->provider)
			json_object_object_add(args, "provider", json_object_new_string(o->provider));
		if (o->target)
			json_object_object_add(args, "target", json_object_new_string(o->target));
		req = statsfd_json_request(o->schemas ? "query-stats-schemas" :
					   "query-sources", args);
	} else {
		if (o->target)
			json_object_object_add(args, "target", json_object_new_string(o->target));
		if (o->nvms) {
			struct json_object *a = json_object_new_array();

			for (i = 0; i < o->nvms; i++)
				json_object_array_add(a, json_object_new_string(o->vms[i]));
			json_object_object_add(args, "vms", a);
		}
		if (o->vcpus)
			json_object_object_add(args, "vcpus", csv_array(o->vcpus, true));
		if (o->provider || o->names_csv) {
			struct json_object *p = json_object_new_object(), *a;

			if (o->provider)
				json_object_object_add(p, "provider",
						       json_object_new_string(o->provider));
			if (o->names_csv)
				json_object_object_add(p, "names", csv_array(o->names_csv, false));
			a = json_object_new_array();
			json_object_array_add(a, p);
			json_object_object_add(args, "providers", a);
		}
		req = statsfd_json_request("query-stats", args);
	}
	sock = statsfd_msg_connect(o->collector);
	if (sock < 0) {
		fprintf(stderr, "statsfd: %s: %s\n", o->collector, strerror(-sock));
		json_object_put(req);
		return 1;
	}
	out = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN, &len);
	ret = statsfd_msg_send(sock, out, len, NULL, 0);
	json_object_put(req);
	if (!ret)
		ret = statsfd_msg_recv(sock, &json, &len, NULL, &nfds, o->timeout_ms);
	close(sock);
	if (ret) {
		fprintf(stderr, "statsfd: query: %s\n", strerror(-ret));
		return 1;
	}
	reply = json_tokener_parse(json);
	free(json);
	if (!reply) {
		fprintf(stderr, "statsfd: query: the collector sent invalid JSON\n");
		return 1;
	}
	printf("%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	ret = json_object_object_get_ex(reply, "error", &e) ? 1 : 0;
	json_object_put(reply);
	return ret;
}

enum {
	OPT_DEVICE = 256, OPT_PID, OPT_FD, OPT_SOCKET, OPT_FILE, OPT_JSON,
	OPT_PROM, OPT_NAME, OPT_ALL, OPT_INTERVAL, OPT_COUNT, OPT_TIMEOUT,
	OPT_OUTPUT, OPT_COLLECTOR, OPT_SCHEMAS, OPT_SOURCES, OPT_TARGET,
	OPT_VM, OPT_VCPUS, OPT_PROVIDER, OPT_NAMES, OPT_RAW, OPT_ANSI,
	OPT_STATS, OPT_HOST,
};

static const struct option longopts[] = {
	{ "device", optional_argument, NULL, OPT_DEVICE },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "fd", required_argument, NULL, OPT_FD },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "file", required_argument, NULL, OPT_FILE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "prometheus", no_argument, NULL, OPT_PROM },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "collector", required_argument, NULL, OPT_COLLECTOR },
	{ "schemas", no_argument, NULL, OPT_SCHEMAS },
	{ "sources", no_argument, NULL, OPT_SOURCES },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "vm", required_argument, NULL, OPT_VM },
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "provider", required_argument, NULL, OPT_PROVIDER },
	{ "names", required_argument, NULL, OPT_NAMES },
	{ "raw", required_argument, NULL, OPT_RAW },
	{ "ansi", no_argument, NULL, OPT_ANSI },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "host", optional_argument, NULL, OPT_HOST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	struct opts o = {
		.interval = 1.0, .timeout_ms = 30000, .collector = DEFAULT_COLLECTOR,
	};
	struct cli_sources s = { 0 };
	const char *names[64];
	int c, ret = 0, nsrc = 0;
	char *end;

	o.names = names;
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	o.cmd = argv[1];
	if (strcmp(o.cmd, "show") && strcmp(o.cmd, "watch") && strcmp(o.cmd, "list") &&
	    strcmp(o.cmd, "dump") && strcmp(o.cmd, "query")) {
		fprintf(stderr, "statsfd: unknown command '%s'\n\n%s", o.cmd, usage);
		return 2;
	}
	argv++;
	argc--;
	/* Sources are opened in command-line order, as they are parsed. */
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DEVICE:
			ret |= cli_add_device(&s, optarg ? optarg : DEFAULT_DEVICE);
			nsrc++;
			break;
		case OPT_PID:
			ret |= cli_add_pid(&s, optarg);
			nsrc++;
			break;
		case OPT_FD:
			ret |= cli_add_fd(&s, optarg);
			nsrc++;
			break;
		case OPT_SOCKET:
			ret |= cli_add_socket(&s, optarg, o.timeout_ms);
			nsrc++;
			break;
		case OPT_FILE:
			ret |= cli_add_file(&s, optarg);
			nsrc++;
			break;
		case OPT_HOST:
			ret |= cli_add_host(&s, optarg ? optarg : STATSFD_HOST_DEVICE);
			nsrc++;
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case OPT_PROM:
			o.prom = true;
			break;
		case OPT_ALL:
			o.all = true;
			break;
		case OPT_NAME:
			if (o.nnames < 64)
				names[o.nnames++] = optarg;
			break;
		case OPT_INTERVAL:
			o.interval = strtod(optarg, &end);
			if (*end || !(o.interval >= 0.01 && o.interval <= 3600)) {
				fprintf(stderr, "statsfd: --interval: seconds in [0.01, 3600]\n");
				return 2;
			}
			break;
		case OPT_COUNT:
			o.count = strtol(optarg, &end, 10);
			if (*end || o.count <= 0) {
				fprintf(stderr, "statsfd: --count: a positive number\n");
				return 2;
			}
			break;
		case OPT_TIMEOUT:
			o.timeout_ms = (int)(strtod(optarg, NULL) * 1000);
			break;
		case OPT_OUTPUT:
			o.output = optarg;
			break;
		case OPT_COLLECTOR:
			o.collector = optarg;
			break;
		case OPT_SCHEMAS:
			o.schemas = true;
			break;
		case OPT_SOURCES:
			o.list_sources = true;
			break;
		case OPT_TARGET:
			o.target = optarg;
			break;
		case OPT_VM:
			if (o.nvms < 16)
				o.vms[o.nvms++] = optarg;
			break;
		case OPT_VCPUS:
			o.vcpus = optarg;
			break;
		case OPT_PROVIDER:
			o.provider = optarg;
			break;
		case OPT_NAMES:
			o.names_csv = optarg;
			break;
		case OPT_RAW:
			o.raw = optarg;
			break;
		case OPT_ANSI:
			o.ansi = true;
			break;
		case OPT_STATS:
			if (parse_stats(&o, optarg))
				return 2;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "statsfd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!strcmp(o.cmd, "query"))
		return cmd_query(&o);
	if (!nsrc) {
		fprintf(stderr, "statsfd: no source: give --device, --pid, --fd, --socket, --file or --host\n");
		return 2;
	}
	if (!s.n) {
		fprintf(stderr, "statsfd: no stats fd found\n");
		return 1;
	}
	/* dump writes a source's whole image; the others read --stats views. */
	if (strcmp(o.cmd, "dump")) {
		s.stats = o.stats;
		s.nstats = o.nstats;
		s.watch = !strcmp(o.cmd, "watch");
		if (cli_prepare(&s, 0))
			ret = 1;
		if (s.no_views)
			fprintf(stderr, "statsfd: note: --stats: %u of %u sources have no views (KVM's stats fds, files, or a kernel without STATSFD_IOC_VIEW): their stats are read whole and filtered here\n",
				s.no_views, s.n);
		cli_warn_missing(&s);
	}
	if (!strcmp(o.cmd, "watch")) {
		ret = cmd_watch(&o, &s) || ret;
	} else if (!strcmp(o.cmd, "list")) {
		ret = cmd_list(&s) || ret;
	} else if (!strcmp(o.cmd, "dump")) {
		ret = cmd_dump(&o, &s) || ret;
	} else {
		if (read_all(&s))
			ret = 1;
		else if (o.json)
			show_json(&o, &s);
		else if (o.prom)
			show_prom(&s);
		else
			show_table(&o, &s);
	}
	cli_free_sources(&s);
	return ret ? 1 : 0;
}
