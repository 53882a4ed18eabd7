// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: the host's stats fds (statsfd_host.ko) and their exposition
 * under node_exporter's names.  See statsfd_hostfd.h.
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
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "statsfd_hostfd.h"
#include "statsfd_expo.h"

/* ---- the objects ---------------------------------------------------------- */

int statsfd_host_cpulist(const char *text, unsigned int *cpus,
			 unsigned int max)
{
	const char *p = text;
	unsigned int n = 0;

	if (!*p || !strcmp(p, "\n"))
		return 0;
	for (;;) {
		unsigned long lo, hi, c;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		p = end;
		if (*p == '-') {
			if (!isdigit((unsigned char)p[1]))
				return -EINVAL;
			hi = strtoul(p + 1, &end, 10);
			p = end;
		}
		if (lo > 65535 || hi > 65535 || hi < lo)
			return -EINVAL;
		for (c = lo; c <= hi; c++) {
			if (n == max)
				return -E2BIG;
			cpus[n++] = (unsigned int)c;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		if (!*p || (*p == '\n' && !p[1]))
			return (int)n;
		return -EINVAL;
	}
}

static ssize_t read_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

struct objv {
	struct statsfd_host_obj *v;
	size_t n, cap;
};

static struct statsfd_host_obj *push(struct objv *o)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 32;
		struct statsfd_host_obj *v = realloc(o->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		o->v = v;
		o->cap = cap;
	}
	memset(&o->v[o->n], 0, sizeof(o->v[0]));
	return &o->v[o->n++];
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct statsfd_host_obj *)a)->name,
		      ((const struct statsfd_host_obj *)b)->name);
}

static int scan_cpus(const char *sysfs, struct objv *o)
{
	char path[4096], text[8192];
	unsigned int *cpus;
	int n, i;
	ssize_t len;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", sysfs);
	len = read_text(path, text, sizeof(text));
	if (len < 0)
		return (int)len;
	cpus = calloc(65536, sizeof(*cpus));
	if (!cpus)
		return -ENOMEM;
	n = statsfd_host_cpulist(text, cpus, 65536);
	for (i = 0; i < n; i++) {
		struct statsfd_host_obj *x = push(o);

		if (!x) {
			n = -ENOMEM;
			break;
		}
		x->kind = STATSFD_HOST_CPU;
		x->cpu = cpus[i];
		snprintf(x->name, sizeof(x->name), "%u", cpus[i]);
	}
	free(cpus);
	return n < 0 ? n : 0;
}

static int scan_netdevs(struct objv *o)
{
	struct if_nameindex *ifs = if_nameindex(), *i;

	if (!ifs)
		return -errno;
	for (i = ifs; i->if_index; i++) {
		struct statsfd_host_obj *x = push(o);

		if (!x) {
			if_freenameindex(ifs);
			return -ENOMEM;
		}
		x->kind = STATSFD_HOST_NETDEV;
		x->ifindex = (int)i->if_index;
		snprintf(x->name, sizeof(x->name), "%s", i->if_name);
	}
	if_freenameindex(ifs);
	return 0;
}

static int scan_disks(const char *sysfs, struct objv *o)
{
	char path[4096], text[64];
	struct dirent *de;
	size_t first = o->n;
	DIR *d;

	snprintf(path, sizeof(path), "%s/block", sysfs);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct statsfd_host_obj *x;
		unsigned int maj, min;
		char tail;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= STATSFD_HOST_NAME_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/block/%s/dev", sysfs, de->d_name);
		if (read_text(path, text, sizeof(text)) <= 0 ||
		    sscanf(text, "%u:%u%c", &maj, &min, &tail) != 3 || tail != '\n')
			continue;
		x = push(o);
		if (!x) {
			closedir(d);
			return -ENOMEM;
		}
		x->kind = STATSFD_HOST_BLOCK;
		x->major = maj;
		x->minor = min;
		snprintf(x->name, sizeof(x->name), "%s", de->d_name);
	}
	closedir(d);
	/* readdir() order is the file system's: sort, for a stable output. */
	qsort(o->v + first, o->n - first, sizeof(o->v[0]), cmp_name);
	return 0;
}

int statsfd_host_scan(const char *sysfs, struct statsfd_host_obj **objs,
		      size_t *n)
{
	struct objv o = { 0 };
	int ret = -ENOMEM;

	if (push(&o)) {
		o.v[0].kind = STATSFD_HOST_NODE;
		ret = scan_cpus(sysfs, &o);
	}
	if (!ret)
		ret = scan_netdevs(&o);
	if (!ret)
		ret = scan_disks(sysfs, &o);
	if (ret) {
		free(o.v);
		return ret;
	}
	*objs = o.v;
	*n = o.n;
	return 0;
}

int statsfd_host_get_fd(int dev, const struct statsfd_host_obj *o)
{
	struct statsfd_host_stats_fd a = { .kind = o->kind };
	int fd;

	switch (o->kind) {
	case STATSFD_HOST_CPU:
		a.cpu = o->cpu;
		break;
	case STATSFD_HOST_NETDEV:
		a.ifindex = o->ifindex;
		break;
	case STATSFD_HOST_BLOCK:
		a.major = o->major;
		a.minor = o->minor;
		break;
	}
	fd = ioctl(dev, STATSFD_HOST_GET_STATS_FD, &a);
	return fd < 0 ? -errno : fd;
}

bool statsfd_host_id_parse(const char *id, struct statsfd_host_obj *o)
{
	static const struct {
		const char *prefix;
		unsigned int kind;
	} named[] = {
		{ "host-net-", STATSFD_HOST_NETDEV },
		{ "host-block-", STATSFD_HOST_BLOCK },
	};
	size_t i, n;

	memset(o, 0, sizeof(*o));
	if (!strcmp(id, "host-node")) {
		o->kind = STATSFD_HOST_NODE;
		return true;
	}
	if (!strncmp(id, "host-cpu", 8)) {
		const char *p = id + 8;
		unsigned long cpu;
		char *end;

		if (!isdigit((unsigned char)*p) || (*p == '0' && p[1]))
			return false;
		cpu = strtoul(p, &end, 10);
		if (*end || cpu > 65535)
			return false;
		o->kind = STATSFD_HOST_CPU;
		o->cpu = (unsigned int)cpu;
		snprintf(o->name, sizeof(o->name), "%lu", cpu);
		return true;
	}
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		n = strlen(named[i].prefix);
		if (strncmp(id, named[i].prefix, n) || !id[n] ||
		    strlen(id + n) >= STATSFD_HOST_NAME_MAX)
			continue;
		o->kind = named[i].kind;
		snprintf(o->name, sizeof(o->name), "%s", id + n);
		return true;
	}
	return false;
}

const char *statsfd_host_kind_name(unsigned int kind)
{
	switch (kind) {
	case STATSFD_HOST_NODE:		return "node";
	case STATSFD_HOST_CPU:		return "cpu";
	case STATSFD_HOST_NETDEV:	return "net";
	case STATSFD_HOST_BLOCK:	return "block";
	}
	return "unknown";
}

/* ---- the node_exporter mapping ------------------------------------------- */

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

/* Shortest text that parses back to the same double (as lib/prom.c). */
static void put_double(struct statsfd_buf *b, double v)
{
	char tmp[40];

	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	statsfd_buf_append(b, tmp, strlen(tmp));
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
		put_double(b, (double)sum / 100.0);
		break;
	case CONV_SECTORS:
		statsfd_buf_printf(b, "%" PRIu64, sum * 512);
		break;
	default:
		if (n == 1 && st[0]->exponent)
			put_double(b, statsfd_to_base(st[0], sum));
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
