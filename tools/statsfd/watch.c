// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd CLI: `watch`, per-second rates and current values refreshed in
 * place, one column per source; between refreshes it waits on the
 * sources' events (events.c) and lists what came and went.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
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

static void render(const struct cli_opts *o, struct cli_sources *s, double dt,
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
			if (!cli_name_ok(o, st->name) || st == statsfd_sample_stat(first->sf))
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

/**
 * cli_watch() - `watch`: refresh rates and values until ^C or --count
 * @o: the options (--interval, --count, --ansi, --name, --all)
 * @s: the sources, prepared with &cli_sources.watch set
 *
 * Between refreshes, waits on every source's events (cli_wait()): a source
 * whose owner hung up is dropped at once, a change of children makes it
 * look for new sources.  Both are listed at the top of the next refresh.
 *
 * Return: 0, or 1 when a read or a wait failed.
 */
int cli_watch(const struct cli_opts *o, struct cli_sources *s)
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
	if (cli_read_all(s))
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
		if (cli_read_all(s)) {
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
