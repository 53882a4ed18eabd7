// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd-expo: the host's stats fds (statsfd_host.ko) exposed under
 * node_exporter's names (statsfd_host_prom_write(), statsfd_expo.h).
 *
 * The mapping below is node_exporter 1.5.0's (Debian bookworm's
 * prometheus-node-exporter), collector by collector: cpu (cpu_linux.go,
 * cpu_common.go), stat (stat_linux.go), loadavg (loadavg.go), meminfo
 * (meminfo_linux.go: "Active(anon)" -> "Active_anon", kB -> bytes, a
 * "_bytes" suffix), vmstat (vmstat_linux.go: its default field pattern
 * ^(oom_kill|pgpg|pswp|pg.*fault).*, untyped), netdev (netdev_linux.go
 * over netlink, then netdev_common.go's legacy() renaming and summing,
 * which is the default: the /proc/net/dev columns), diskstats
 * (diskstats_linux.go, diskstats_common.go).  Names, HELP texts, types and
 * labels are theirs, so dashboards and alerts written for node_exporter
 * work unchanged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsfd_expo.h"
#include "statsfd_priv.h"

/* How a family's value is made from its stats. */
enum conv {
	CONV_BASE,	/* the stat in its base unit (ns -> s); several: summed */
	CONV_X100,	/* hundredths -> the number */
	CONV_SECTORS,	/* 512-byte sectors -> bytes */
};

/*
 * One sample of a family per source of @kind: @family{labels,@label}
 * from @stats (summed when several).  Entries of one family are adjacent.
 */
struct host_map {
	unsigned int kind;
	const char *family;
	const char *type;
	const char *help;
	const char *label;
	enum conv conv;
	const char *stats[4];
};

#define N_	STATSFD_HOST_NODE
#define C_	STATSFD_HOST_CPU
#define D_	STATSFD_HOST_NETDEV
#define B_	STATSFD_HOST_BLOCK

#define MEM(stat, key) \
	{ N_, "node_memory_" key "_bytes", "gauge", \
	  "Memory information field " key "_bytes.", NULL, CONV_BASE, { stat } }
#define VMSTAT(stat) \
	{ N_, "node_vmstat_" stat, "untyped", \
	  "/proc/vmstat information field " stat ".", NULL, CONV_BASE, { stat } }
#define CPU(mode) \
	{ C_, "node_cpu_seconds_total", "counter", \
	  "Seconds the CPUs spent in each mode.", "mode=\"" mode "\"", \
	  CONV_BASE, { mode } }
#define NET(key, ...) \
	{ D_, "node_network_" key "_total", "counter", \
	  "Network device statistic " key ".", NULL, CONV_BASE, { __VA_ARGS__ } }
#define DISK(name, type, help, conv, stat) \
	{ B_, "node_disk_" name, type, help, NULL, conv, { stat } }

static const struct host_map host_map[] = {
	{ N_, "node_boot_time_seconds", "gauge", "Node boot time, in unixtime.",
	  NULL, CONV_BASE, { "boot_time" } },
	{ N_, "node_intr_total", "counter", "Total number of interrupts serviced.",
	  NULL, CONV_BASE, { "intr" } },
	{ N_, "node_load1", "gauge", "1m load average.", NULL, CONV_X100,
	  { "load1_x100" } },
	{ N_, "node_load15", "gauge", "15m load average.", NULL, CONV_X100,
	  { "load15_x100" } },
	{ N_, "node_load5", "gauge", "5m load average.", NULL, CONV_X100,
	  { "load5_x100" } },
	MEM("active", "Active"),
	MEM("active_anon", "Active_anon"),
	MEM("active_file", "Active_file"),
	MEM("anonpages", "AnonPages"),
	MEM("buffers", "Buffers"),
	MEM("cached", "Cached"),
	MEM("commitlimit", "CommitLimit"),
	MEM("committed_as", "Committed_AS"),
	MEM("dirty", "Dirty"),
	MEM("inactive", "Inactive"),
	MEM("inactive_anon", "Inactive_anon"),
	MEM("inactive_file", "Inactive_file"),
	MEM("kreclaimable", "KReclaimable"),
	MEM("kernelstack", "KernelStack"),
	MEM("memavailable", "MemAvailable"),
	MEM("memfree", "MemFree"),
	MEM("memtotal", "MemTotal"),
	MEM("mapped", "Mapped"),
	MEM("mlocked", "Mlocked"),
	MEM("pagetables", "PageTables"),
	MEM("sreclaimable", "SReclaimable"),
	MEM("sunreclaim", "SUnreclaim"),
	MEM("shmem", "Shmem"),
	MEM("slab", "Slab"),
	MEM("swapcached", "SwapCached"),
	MEM("swapfree", "SwapFree"),
	MEM("swaptotal", "SwapTotal"),
	MEM("unevictable", "Unevictable"),
	MEM("writeback", "Writeback"),
	VMSTAT("oom_kill"),
	VMSTAT("pgfault"),
	VMSTAT("pgmajfault"),
	VMSTAT("pgpgin"),
	VMSTAT("pgpgout"),
	VMSTAT("pswpin"),
	VMSTAT("pswpout"),
	{ C_, "node_cpu_guest_seconds_total", "counter",
	  "Seconds the CPUs spent in guests (VMs) for each mode.",
	  "mode=\"user\"", CONV_BASE, { "guest" } },
	{ C_, "node_cpu_guest_seconds_total", "counter",
	  "Seconds the CPUs spent in guests (VMs) for each mode.",
	  "mode=\"nice\"", CONV_BASE, { "guest_nice" } },
	CPU("user"), CPU("nice"), CPU("system"), CPU("idle"), CPU("iowait"),
	CPU("irq"), CPU("softirq"), CPU("steal"),
	NET("receive_bytes", "rx_bytes"),
	NET("receive_compressed", "rx_compressed"),
	NET("receive_drop", "rx_dropped", "rx_missed_errors"),
	NET("receive_errs", "rx_errors"),
	NET("receive_fifo", "rx_fifo_errors"),
	NET("receive_frame", "rx_frame_errors", "rx_length_errors",
	    "rx_over_errors", "rx_crc_errors"),
	NET("receive_multicast", "multicast"),
	NET("receive_nohandler", "rx_nohandler"),
	NET("receive_packets", "rx_packets"),
	NET("transmit_bytes", "tx_bytes"),
	NET("transmit_carrier", "tx_carrier_errors", "tx_aborted_errors",
	    "tx_heartbeat_errors", "tx_window_errors"),
	NET("transmit_colls", "collisions"),
	NET("transmit_compressed", "tx_compressed"),
	NET("transmit_drop", "tx_dropped"),
	NET("transmit_errs", "tx_errors"),
	NET("transmit_fifo", "tx_fifo_errors"),
	NET("transmit_packets", "tx_packets"),
	DISK("discard_time_seconds_total", "counter",
	     "This is the total number of seconds spent by all discards.",
	     CONV_BASE, "discard_time"),
	DISK("discarded_sectors_total", "counter",
	     "The total number of sectors discarded successfully.", CONV_BASE,
	     "discard_sectors"),
	DISK("discards_completed_total", "counter",
	     "The total number of discards completed successfully.", CONV_BASE,
	     "discard_ios"),
	DISK("discards_merged_total", "counter",
	     "The total number of discards merged.", CONV_BASE, "discard_merges"),
	DISK("flush_requests_time_seconds_total", "counter",
	     "This is the total number of seconds spent by all flush requests.",
	     CONV_BASE, "flush_time"),
	DISK("flush_requests_total", "counter",
	     "The total number of flush requests completed successfully",
	     CONV_BASE, "flush_ios"),
	DISK("io_now", "gauge", "The number of I/Os currently in progress.",
	     CONV_BASE, "in_flight"),
	DISK("io_time_seconds_total", "counter", "Total seconds spent doing I/Os.",
	     CONV_BASE, "io_time"),
	DISK("io_time_weighted_seconds_total", "counter",
	     "The weighted # of seconds spent doing I/Os.", CONV_BASE,
	     "time_in_queue"),
	DISK("read_bytes_total", "counter",
	     "The total number of bytes read successfully.", CONV_SECTORS,
	     "read_sectors"),
	DISK("read_time_seconds_total", "counter",
	     "The total number of seconds spent by all reads.", CONV_BASE,
	     "read_time"),
	DISK("reads_completed_total", "counter",
	     "The total number of reads completed successfully.", CONV_BASE,
	     "read_ios"),
	DISK("reads_merged_total", "counter", "The total number of reads merged.",
	     CONV_BASE, "read_merges"),
	DISK("write_time_seconds_total", "counter",
	     "This is the total number of seconds spent by all writes.",
	     CONV_BASE, "write_time"),
	DISK("writes_completed_total", "counter",
	     "The total number of writes completed successfully.", CONV_BASE,
	     "write_ios"),
	DISK("writes_merged_total", "counter", "The number of writes merged.",
	     CONV_BASE, "write_merges"),
	DISK("written_bytes_total", "counter",
	     "The total number of bytes written successfully.", CONV_SECTORS,
	     "write_sectors"),
};

#define HOST_MAP_N	(sizeof(host_map) / sizeof(host_map[0]))

bool statsfd_host_mapped(unsigned int kind, const char *stat)
{
	size_t i, j;

	for (i = 0; i < HOST_MAP_N; i++) {
		if (host_map[i].kind != kind)
			continue;
		for (j = 0; j < 4 && host_map[i].stats[j]; j++)
			if (!strcmp(host_map[i].stats[j], stat))
				return true;
	}
	return false;
}

bool statsfd_host_not_generic(unsigned int kind, const char *stat)
{
	return statsfd_host_mapped(kind, stat) ||
	       (kind == STATSFD_HOST_NODE && !strcmp(stat, "online_sum"));
}

/*
 * The value of @m for @s, appended to @b; false when @s lacks one of its
 * stats (nothing appended).  Integers stay integers: a sum of counters,
 * sectors times 512, a stat without exponent.
 */
static bool put_sample_value(struct statsfd_buf *b, const struct host_map *m,
			     const struct statsfd_host_series *s)
{
	const struct statsfd_stat *st[4] = { NULL };
	uint64_t sum = 0;
	size_t j, n = 0;

	for (j = 0; j < 4 && m->stats[j]; j++) {
		st[j] = statsfd_find(s->sf, m->stats[j]);
		if (!st[j] || statsfd_stat_is_hist(st[j]))
			return false;
		n++;
	}
	for (j = 0; j < n; j++)
		sum += statsfd_values(st[j], s->values)[0];
	switch (m->conv) {
	case CONV_X100:
		statsfd__buf_double(b, (double)sum / 100.0);
		break;
	case CONV_SECTORS:
		statsfd_buf_printf(b, "%" PRIu64, sum * 512);
		break;
	default:
		if (n == 1 && st[0]->exponent)
			statsfd__buf_double(b, statsfd_to_base(st[0], sum));
		else
			statsfd_buf_printf(b, "%" PRIu64, sum);
	}
	return true;
}

int statsfd_host_prom_walk(const struct statsfd_host_series *series, size_t n,
			   const struct statsfd_host_visitor *v, void *ctx)
{
	const char *fam = NULL;
	struct statsfd_buf lab = { 0 }, val = { 0 };
	bool header = false;
	size_t i, k;
	int ret = 0;

	for (i = 0; i < HOST_MAP_N && !ret; i++) {
		const struct host_map *m = &host_map[i];

		if (!fam || strcmp(fam, m->family)) {
			fam = m->family;
			header = false;
		}
		for (k = 0; k < n && !ret; k++) {
			const struct statsfd_host_series *s = &series[k];
			bool cpu = s->kind == STATSFD_HOST_CPU;

			if (s->kind != m->kind)
				continue;
			lab.len = 0;
			val.len = 0;
			if (s->kind != STATSFD_HOST_NODE) {
				statsfd_buf_printf(&lab, "%s=\"", cpu ? "cpu" : "device");
				statsfd_prom_escape(&lab, s->name ? s->name : "");
				statsfd_buf_printf(&lab, "\"%s%s", m->label ? "," : "",
						   m->label ? m->label : "");
			}
			statsfd_buf_append(&lab, "", 0);
			if (!put_sample_value(&val, m, s))
				continue;
			statsfd_buf_append(&val, "", 0);
			if (lab.oom || val.oom) {
				ret = -ENOMEM;
				break;
			}
			if (!header) {
				ret = v->family(ctx, m->family, m->type, m->help);
				header = true;
			}
			if (!ret)
				ret = v->sample(ctx, m->family,
						s->kind != STATSFD_HOST_NODE ? lab.data : NULL,
						val.data);
		}
	}
	statsfd_buf_free(&lab);
	statsfd_buf_free(&val);
	return ret;
}

/* node_exporter's text, as a visitor of statsfd_host_prom_walk(). */
static int text_family(void *ctx, const char *name, const char *type,
		       const char *help)
{
	statsfd_buf_printf(ctx, "# HELP %s %s\n# TYPE %s %s\n", name, help,
			   name, type);
	return 0;
}

static int text_sample(void *ctx, const char *name, const char *labels,
		       const char *value)
{
	if (labels)
		statsfd_buf_printf(ctx, "%s{%s} %s\n", name, labels, value);
	else
		statsfd_buf_printf(ctx, "%s %s\n", name, value);
	return 0;
}

int statsfd_host_prom_write(struct statsfd_buf *out,
			    const struct statsfd_host_series *series, size_t n)
{
	static const struct statsfd_host_visitor text = {
		.family = text_family,
		.sample = text_sample,
	};
	int ret = statsfd_host_prom_walk(series, n, &text, out);

	return ret ? ret : out->oom ? -ENOMEM : 0;
}
