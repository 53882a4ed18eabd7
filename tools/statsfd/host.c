// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd CLI: the pages of the host's own stats fds (statsfd_host.ko: the
 * node, every online CPU, every interface of our network namespace, every
 * whole disk; found by --host, sources.c), in the manner of vmstat and sar:
 * CPU time by mode (seconds in show, % of the interval in watch), memory,
 * interfaces and disks (totals in show, per second in watch).  A saved
 * image of a host stats fd (statsfd dump) is recognized by its id and
 * shown the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- the pages ----------------------------------------------------------- */

/* The scalar stat @name of @src, or NULL (absent, or a histogram). */
static const struct statsfd_stat *scalar(const struct cli_source *src,
					 const char *name)
{
	const struct statsfd_stat *st = statsfd_find(src->sf, name);

	return st && !statsfd_stat_is_hist(st) ? st : NULL;
}

/* The raw value of @name in @buf, false when @src has no such stat. */
static bool raw(const struct cli_source *src, const uint64_t *buf,
		const char *name, uint64_t *v)
{
	const struct statsfd_stat *st = scalar(src, name);

	if (st)
		*v = statsfd_values(st, buf)[0];
	return st;
}

/* @name in its base unit (ns -> s); NAN-free: false when absent. */
static bool base(const struct cli_source *src, const uint64_t *buf,
		 const char *name, double *v)
{
	uint64_t r;

	if (!raw(src, buf, name, &r))
		return false;
	*v = statsfd_to_base(scalar(src, name), r);
	return true;
}

/* The increase of @name over the interval, in its base unit. */
static bool delta(const struct cli_source *src, const char *name, double *v)
{
	const struct statsfd_stat *st = scalar(src, name);

	if (!st)
		return false;
	/* Unsigned: a counter wrapping past U64_MAX stays right. */
	*v = statsfd_scale_value(st, (double)(statsfd_values(st, src->cur)[0] -
					       statsfd_values(st, src->prev)[0]));
	return true;
}

static void fmt_bytes(double v, bool rate, char *buf, size_t len)
{
	static const char *const iec[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s%s" : "%.0f %s%s", v, iec[i], rate ? "/s" : "");
}

static void fmt_count(double v, char *buf, size_t len)
{
	static const char *const si[] = { "", "k", "M", "G", "T", "P" };
	int i = 0;

	if (v < 100000) {
		snprintf(buf, len, v == (double)(uint64_t)v ? "%.0f" : "%.1f", v);
		return;
	}
	while (v >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, "%.1f%s", v, si[i]);
}

/* One cell: a count, bytes or seconds, "-" when the stat is missing. */
enum cell_kind { CELL_COUNT, CELL_BYTES, CELL_SECONDS, CELL_PERCENT };

static void put_cell(int width, bool have, double v, enum cell_kind k, bool rate)
{
	char buf[48];

	if (!have)
		snprintf(buf, sizeof(buf), "-");
	else if (k == CELL_BYTES)
		fmt_bytes(v, rate, buf, sizeof(buf));
	else if (k == CELL_SECONDS)
		snprintf(buf, sizeof(buf), "%.2f", v);
	else if (k == CELL_PERCENT)
		snprintf(buf, sizeof(buf), "%.1f", v);
	else
		fmt_count(v, buf, sizeof(buf));
	printf("%*s", width, buf);
}

static const char *const cpu_modes[] = {
	"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
	"guest", "guest_nice",
};
#define NMODES		(sizeof(cpu_modes) / sizeof(cpu_modes[0]))
/* guest and guest_nice are part of user and nice: not in the total. */
#define NMODES_TOTAL	8

static void cpu_row(const struct cli_source *src, const char *label, bool rate)
{
	double v[NMODES], total = 0;
	bool have[NMODES];
	unsigned int i;

	for (i = 0; i < NMODES; i++) {
		have[i] = rate ? delta(src, cpu_modes[i], &v[i]) :
			  base(src, src->cur, cpu_modes[i], &v[i]);
		if (have[i] && i < NMODES_TOTAL)
			total += v[i];
	}
	printf("  %-6s", label);
	for (i = 0; i < NMODES; i++) {
		/* watch: % of the CPU time that passed, as sar -u. */
		if (rate)
			put_cell(8, have[i] && total > 0, total > 0 ? 100 * v[i] / total : 0,
				 CELL_PERCENT, false);
		else
			put_cell(8, have[i], v[i], CELL_SECONDS, false);
	}
	printf("\n");
}

static const struct cli_source *host_node(const struct cli_sources *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].host && !s->v[i].hidden &&
		    s->v[i].hobj.kind == STATSFD_HOST_NODE)
			return &s->v[i];
	return NULL;
}

static unsigned int count_kind(const struct cli_sources *s, unsigned int kind)
{
	unsigned int i, n = 0;

	for (i = 0; i < s->n; i++)
		n += s->v[i].host && !s->v[i].hidden && s->v[i].hobj.kind == kind;
	return n;
}

static void page_summary(const struct cli_sources *s, const struct cli_source *node,
			 double dt, bool rate)
{
	uint64_t bt, l1, l5, l15, intr;
	char when[64] = "?";

	printf("host: %u CPU%s online", count_kind(s, STATSFD_HOST_CPU),
	       count_kind(s, STATSFD_HOST_CPU) == 1 ? "" : "s");
	if (!node) {
		printf("\n");
		return;
	}
	if (raw(node, node->cur, "boot_time", &bt)) {
		time_t t = (time_t)bt;
		struct tm tm;

		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		printf(", booted %s", when);
	}
	if (raw(node, node->cur, "load1_x100", &l1) &&
	    raw(node, node->cur, "load5_x100", &l5) &&
	    raw(node, node->cur, "load15_x100", &l15))
		printf(", load %" PRIu64 ".%02" PRIu64 " %" PRIu64 ".%02" PRIu64
		       " %" PRIu64 ".%02" PRIu64, l1 / 100, l1 % 100, l5 / 100,
		       l5 % 100, l15 / 100, l15 % 100);
	if (rate) {
		double d;

		if (delta(node, "intr", &d))
			printf(", %.0f interrupts/s",
			       d / statsfd_sample_interval(node->sf, node->prev, node->cur, dt));
	} else if (raw(node, node->cur, "intr", &intr)) {
		printf(", %" PRIu64 " interrupts", intr);
	}
	printf("\n");
}

static void page_cpu(const struct cli_sources *s, const struct cli_source *node,
		     bool rate)
{
	unsigned int i;

	printf("\nCPU %-4s", rate ? "%" : "s");
	for (i = 0; i < NMODES; i++)
		printf("%8s", i == NMODES - 1 ? "gnice" : cpu_modes[i]);
	printf("\n");
	if (node)
		cpu_row(node, "all", rate);
	for (i = 0; i < s->n; i++) {
		const struct cli_source *src = &s->v[i];

		if (src->host && !src->hidden && src->hobj.kind == STATSFD_HOST_CPU)
			cpu_row(src, src->hobj.name, rate);
	}
}

static void page_memory(const struct cli_source *node, double dt, bool rate)
{
	static const struct {
		const char *stat, *label;
	} mem[] = {
		{ "memtotal", "total" }, { "memfree", "free" },
		{ "memavailable", "available" }, { "buffers", "buffers" },
		{ "cached", "cached" }, { "shmem", "shmem" }, { "slab", "slab" },
		{ "anonpages", "anon" }, { "dirty", "dirty" },
		{ "writeback", "writeback" }, { "swaptotal", "swap total" },
		{ "swapfree", "swap free" },
	}, vm[] = {
		{ "pgpgin", "pgpgin" }, { "pgpgout", "pgpgout" },
		{ "pswpin", "pswpin" }, { "pswpout", "pswpout" },
		{ "pgfault", "pgfault" }, { "pgmajfault", "pgmajfault" },
		{ "oom_kill", "oom_kill" },
	};
	unsigned int i, k = 0;
	char buf[48];
	double v, iv;

	if (!node)
		return;
	iv = rate ? statsfd_sample_interval(node->sf, node->prev, node->cur, dt) : 1;
	printf("\nMemory:");
	for (i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
		if (!base(node, node->cur, mem[i].stat, &v))
			continue;
		fmt_bytes(v, false, buf, sizeof(buf));
		printf("%s%s %s", k++ % 6 ? ", " : "\n  ", mem[i].label, buf);
	}
	printf("\nVM%s:", rate ? " (per second)" : "");
	for (i = 0, k = 0; i < sizeof(vm) / sizeof(vm[0]); i++) {
		if (rate ? !delta(node, vm[i].stat, &v) : !base(node, node->cur, vm[i].stat, &v))
			continue;
		fmt_count(v / iv, buf, sizeof(buf));
		printf("%s%s %s", k++ ? ", " : " ", vm[i].label, buf);
	}
	printf("\n");
}

/*
 * Rates are over each source's own interval: between the moments of its
 * two snapshots when it has sample_ns, else @dt (statsfd_sample_interval()).
 */
static void page_net(const struct cli_sources *s, double dt, bool rate)
{
	static const char *const cols[] = {
		"rx_bytes", "rx_packets", "rx_errors", "rx_dropped",
		"tx_bytes", "tx_packets", "tx_errors", "tx_dropped",
	};
	unsigned int i, j;

	if (!count_kind(s, STATSFD_HOST_NETDEV))
		return;
	printf("\nInterface%s %12s%12s%10s%10s %12s%12s%10s%10s\n",
	       rate ? "/s" : "  ", "rx bytes", "rx packets", "rx errs", "rx drop",
	       "tx bytes", "tx packets", "tx errs", "tx drop");
	for (i = 0; i < s->n; i++) {
		const struct cli_source *src = &s->v[i];
		double iv = 1;

		if (!src->host || src->hidden || src->hobj.kind != STATSFD_HOST_NETDEV)
			continue;
		if (rate)
			iv = statsfd_sample_interval(src->sf, src->prev, src->cur, dt);
		printf("  %-10.10s", src->hobj.name);
		for (j = 0; j < 8; j++) {
			double v = 0;
			bool have = rate ? delta(src, cols[j], &v) :
				    base(src, src->cur, cols[j], &v);

			if (j == 4)
				printf(" ");
			put_cell(j % 4 < 2 ? 12 : 10, have, v / iv,
				 j % 4 ? CELL_COUNT : CELL_BYTES, rate);
		}
		printf("\n");
	}
}

static void page_disk(const struct cli_sources *s, double dt, bool rate)
{
	unsigned int i;

	if (!count_kind(s, STATSFD_HOST_BLOCK))
		return;
	if (rate)
		printf("\nDisk/s      %10s%12s%10s%12s%10s%8s%8s\n", "reads", "read",
		       "writes", "written", "in flight", "%util", "aqu-sz");
	else
		printf("\nDisk        %10s%12s%10s%10s%12s%10s%10s%10s\n", "reads", "read",
		       "read s", "writes", "written", "write s", "in flight", "io s");
	for (i = 0; i < s->n; i++) {
		const struct cli_source *src = &s->v[i];
		double r, rs, w, ws, rt, wt, io, q;
		uint64_t fl;
		bool hr, hrs, hw, hws, hfl;

		if (!src->host || src->hidden || src->hobj.kind != STATSFD_HOST_BLOCK)
			continue;
		hfl = raw(src, src->cur, "in_flight", &fl);
		printf("  %-10.10s", src->hobj.name);
		if (rate) {
			double iv = statsfd_sample_interval(src->sf, src->prev, src->cur, dt);
			bool hio = delta(src, "io_time", &io), hq = delta(src, "time_in_queue", &q);

			hr = delta(src, "read_ios", &r);
			hrs = delta(src, "read_sectors", &rs);
			hw = delta(src, "write_ios", &w);
			hws = delta(src, "write_sectors", &ws);
			put_cell(10, hr, r / iv, CELL_COUNT, false);
			put_cell(12, hrs, rs * 512 / iv, CELL_BYTES, true);
			put_cell(10, hw, w / iv, CELL_COUNT, false);
			put_cell(12, hws, ws * 512 / iv, CELL_BYTES, true);
			put_cell(10, hfl, (double)fl, CELL_COUNT, false);
			/* iostat's %util and aqu-sz: busy time and queue time per second. */
			put_cell(8, hio, 100 * io / iv, CELL_PERCENT, false);
			put_cell(8, hq, q / iv, CELL_PERCENT, false);
		} else {
			bool hrt = base(src, src->cur, "read_time", &rt);
			bool hwt = base(src, src->cur, "write_time", &wt);
			bool hio = base(src, src->cur, "io_time", &io);

			hr = base(src, src->cur, "read_ios", &r);
			hrs = base(src, src->cur, "read_sectors", &rs);
			hw = base(src, src->cur, "write_ios", &w);
			hws = base(src, src->cur, "write_sectors", &ws);
			put_cell(10, hr, r, CELL_COUNT, false);
			put_cell(12, hrs, rs * 512, CELL_BYTES, false);
			put_cell(10, hrt, rt, CELL_SECONDS, false);
			put_cell(10, hw, w, CELL_COUNT, false);
			put_cell(12, hws, ws * 512, CELL_BYTES, false);
			put_cell(10, hwt, wt, CELL_SECONDS, false);
			put_cell(10, hfl, (double)fl, CELL_COUNT, false);
			put_cell(10, hio, io, CELL_SECONDS, false);
		}
		printf("\n");
	}
}

bool cli_has_host(const struct cli_sources *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].host && !s->v[i].hidden)
			return true;
	return false;
}

void cli_host_page(const struct cli_sources *s, double dt, bool rate)
{
	const struct cli_source *node = host_node(s);

	if (!cli_has_host(s))
		return;
	page_summary(s, node, dt, rate);
	page_cpu(s, node, rate);
	page_memory(node, dt, rate);
	page_net(s, dt, rate);
	page_disk(s, dt, rate);
}
