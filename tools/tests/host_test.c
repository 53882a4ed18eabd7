// SPDX-License-Identifier: GPL-2.0
/*
 * The host's stats (statsfd_host.ko) in userspace, on synthetic images of
 * its four schemas (Documentation/statsfd-host-api.rst): every series of
 * the node_exporter mapping (lib/expo/node_exporter.c) with its exact name, labels,
 * HELP, TYPE and value (ns -> s, hundredths, sectors -> bytes, the sums of
 * node_exporter's legacy network names), a series left out when its
 * source lacks a stat, promtool check metrics on the result; the CPU list
 * parser, the id parser and the object scan on a fake sysfs; and the CLI
 * on saved images of host fds: the host pages of show and watch, and
 * show --prometheus; without the module, the CLI's and the collector's
 * refusal.
 *
 * Usage: host_test STATSFD STATSFD_COLLECTOR   (TAP on stdout)
 *        host_test --write-images DIR   (the images, for
 *                                        host_collector_test.sh)
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image.h"
#include "statsfd.h"
#include "statsfd_expo.h"
#include "tap.h"

#define CUM	STATSFD_TYPE_CUMULATIVE
#define INST	STATSFD_TYPE_INSTANT
#define NS	(STATSFD_UNIT_SECONDS)
#define BYTES	(STATSFD_UNIT_BYTES | STATSFD_BASE_POW2)

#define T(name)		{ name, CUM | NS, -9, 1, 0 }
#define C(name)		{ name, CUM, 0, 1, 0 }
#define I(name)		{ name, INST, 0, 1, 0 }
#define M(name)		{ name, INST | BYTES, 0, 1, 0 }

static const struct img_stat node_stats[] = {
	T("user"), T("nice"), T("system"), T("idle"), T("iowait"), T("irq"),
	T("softirq"), T("steal"), T("guest"), T("guest_nice"),
	C("intr"), C("softirqs"), { "boot_time", INST | NS, 0, 1, 0 },
	I("load1_x100"), I("load5_x100"), I("load15_x100"),
	M("memtotal"), M("memfree"), M("memavailable"), M("buffers"),
	M("cached"), M("swapcached"), M("active"), M("inactive"),
	M("active_anon"), M("inactive_anon"), M("active_file"),
	M("inactive_file"), M("unevictable"), M("mlocked"), M("swaptotal"),
	M("swapfree"), M("dirty"), M("writeback"), M("anonpages"), M("mapped"),
	M("shmem"), M("kreclaimable"), M("slab"), M("sreclaimable"),
	M("sunreclaim"), M("kernelstack"), M("pagetables"), M("commitlimit"),
	M("committed_as"),
	C("pgpgin"), C("pgpgout"), C("pswpin"), C("pswpout"), C("pgfault"),
	C("pgmajfault"), C("oom_kill"),
	{ "online_sum", INST | STATSFD_AGG_SUM, 0, 1, 0 },
};

static const struct img_stat cpu_stats[] = {
	T("user"), T("nice"), T("system"), T("idle"), T("iowait"), T("irq"),
	T("softirq"), T("steal"), T("guest"), T("guest_nice"),
	{ "online", INST | STATSFD_UNIT_BOOLEAN, 0, 1, 0 },
};

static const struct img_stat net_stats[] = {
	C("rx_packets"), C("tx_packets"),
	{ "rx_bytes", CUM | BYTES, 0, 1, 0 }, { "tx_bytes", CUM | BYTES, 0, 1, 0 },
	C("rx_errors"), C("tx_errors"), C("rx_dropped"), C("tx_dropped"),
	C("multicast"), C("collisions"), C("rx_length_errors"),
	C("rx_over_errors"), C("rx_crc_errors"), C("rx_frame_errors"),
	C("rx_fifo_errors"), C("rx_missed_errors"), C("tx_aborted_errors"),
	C("tx_carrier_errors"), C("tx_fifo_errors"), C("tx_heartbeat_errors"),
	C("tx_window_errors"), C("rx_compressed"), C("tx_compressed"),
	C("rx_nohandler"), C("rx_otherhost_dropped"),
};

static const struct img_stat block_stats[] = {
	C("read_ios"), C("read_merges"), C("read_sectors"), T("read_time"),
	C("write_ios"), C("write_merges"), C("write_sectors"), T("write_time"),
	I("in_flight"), T("io_time"), T("time_in_queue"), C("discard_ios"),
	C("discard_merges"), C("discard_sectors"), T("discard_time"),
	C("flush_ios"), T("flush_time"),
};

#define N(a)	(sizeof(a) / sizeof((a)[0]))

/* A distinct value per kind and stat; times are seconds and a fraction. */
static uint64_t value_of(unsigned int kind, const struct img_stat *st,
			 unsigned int i)
{
	if (st->exponent == -9)
		return 123456789012ULL * (kind + 1) + 1000003ULL * i + 7;
	if (!strncmp(st->name, "load", 4))
		return 100 * kind + 17 * i + 3;
	return 1000003ULL * (kind + 2) * (i + 1) + 12345;
}

struct img {
	unsigned int kind;
	const char *id;
	const struct img_stat *stats;
	unsigned int n;
	const char *name;
	struct statsfd *sf;
	uint64_t *values;
};

static struct img imgs[] = {
	{ STATSFD_HOST_NODE, "host-node", node_stats, N(node_stats), "", NULL, NULL },
	{ STATSFD_HOST_CPU, "host-cpu1", cpu_stats, N(cpu_stats), "1", NULL, NULL },
	{ STATSFD_HOST_CPU, "host-cpu0", cpu_stats, N(cpu_stats), "0", NULL, NULL },
	{ STATSFD_HOST_NETDEV, "host-net-eth0", net_stats, N(net_stats), "eth0", NULL, NULL },
	{ STATSFD_HOST_BLOCK, "host-block-vda", block_stats, N(block_stats), "vda", NULL, NULL },
	/* A CPU without steal (a view, another kernel). */
	{ STATSFD_HOST_CPU, "host-cpu5", cpu_stats, N(cpu_stats) - 1, "5", NULL, NULL },
};

static char tmpdir[] = "/tmp/statsfd-host-test.XXXXXX";
/* Where open_img() saves the images: tmpdir, or --write-images DIR. */
static const char *imgdir = tmpdir;

static int open_img(struct img *m, unsigned int idx)
{
	static unsigned char buf[1 << 15];
	struct img_stat st[64];
	uint64_t v[64];
	char path[256];
	unsigned int i, k = 0;
	size_t len;
	FILE *f;

	for (i = 0; i < m->n; i++) {
		/* cpu5 lacks steal: drop it, keep online. */
		if (idx == 5 && !strcmp(m->stats[i].name, "steal"))
			continue;
		st[k] = m->stats[i];
		v[k] = value_of(m->kind, &m->stats[i], i);
		k++;
	}
	if (idx == 5)
		st[k] = cpu_stats[N(cpu_stats) - 1], v[k++] = 1;
	len = img_build(buf, sizeof(buf), m->id, 32, st, k, v, 0);
	m->sf = len ? statsfd_open_fd(img_memfd(buf, len), STATSFD_OPEN_CLOSE_FD, NULL) : NULL;
	if (!m->sf)
		return -1;
	m->values = calloc(1, statsfd_data_size(m->sf) + 8);
	if (!m->values || statsfd_read(m->sf, m->values, NULL))
		return -1;
	snprintf(path, sizeof(path), "%s/%s.img", imgdir, m->id);
	f = fopen(path, "w");
	if (!f || fwrite(buf, 1, len, f) != len)
		return -1;
	return fclose(f) ? -1 : 0;
}

static uint64_t raw(const struct img *m, const char *stat)
{
	const struct statsfd_stat *st = statsfd_find(m->sf, stat);

	return st ? statsfd_values(st, m->values)[0] : 0;
}

/* The value text of the sample "@key " in @text, or NULL; @count set. */
static const char *sample(const char *text, const char *key, int *count)
{
	const char *p = text, *found = NULL;
	size_t n = strlen(key);

	*count = 0;
	while (p && *p) {
		if (!strncmp(p, key, n) && p[n] == ' ') {
			(*count)++;
			found = p + n + 1;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return found;
}

enum conv { RAW, SECS, X100, SECTORS };

struct want {
	unsigned int kind;
	const char *family;
	const char *type;
	const char *mode;
	enum conv conv;
	const char *stats[4];
};

#define W(k, fam, type, conv, ...) { k, fam, type, NULL, conv, { __VA_ARGS__ } }
#define MEMW(stat, key) W(STATSFD_HOST_NODE, "node_memory_" key "_bytes", "gauge", RAW, stat)
#define VMW(stat) W(STATSFD_HOST_NODE, "node_vmstat_" stat, "untyped", RAW, stat)
#define CPUW(mode) { STATSFD_HOST_CPU, "node_cpu_seconds_total", "counter", mode, SECS, { mode } }
#define NETW(key, ...) W(STATSFD_HOST_NETDEV, "node_network_" key "_total", "counter", RAW, __VA_ARGS__)
#define DISKW(name, type, conv, stat) W(STATSFD_HOST_BLOCK, "node_disk_" name, type, conv, stat)

/* node_exporter 1.5.0's series for each of our stats, written from its source. */
static const struct want wants[] = {
	W(STATSFD_HOST_NODE, "node_boot_time_seconds", "gauge", RAW, "boot_time"),
	W(STATSFD_HOST_NODE, "node_intr_total", "counter", RAW, "intr"),
	W(STATSFD_HOST_NODE, "node_load1", "gauge", X100, "load1_x100"),
	W(STATSFD_HOST_NODE, "node_load5", "gauge", X100, "load5_x100"),
	W(STATSFD_HOST_NODE, "node_load15", "gauge", X100, "load15_x100"),
	MEMW("memtotal", "MemTotal"), MEMW("memfree", "MemFree"),
	MEMW("memavailable", "MemAvailable"), MEMW("buffers", "Buffers"),
	MEMW("cached", "Cached"), MEMW("swapcached", "SwapCached"),
	MEMW("active", "Active"), MEMW("inactive", "Inactive"),
	MEMW("active_anon", "Active_anon"), MEMW("inactive_anon", "Inactive_anon"),
	MEMW("active_file", "Active_file"), MEMW("inactive_file", "Inactive_file"),
	MEMW("unevictable", "Unevictable"), MEMW("mlocked", "Mlocked"),
	MEMW("swaptotal", "SwapTotal"), MEMW("swapfree", "SwapFree"),
	MEMW("dirty", "Dirty"), MEMW("writeback", "Writeback"),
	MEMW("anonpages", "AnonPages"), MEMW("mapped", "Mapped"),
	MEMW("shmem", "Shmem"), MEMW("kreclaimable", "KReclaimable"),
	MEMW("slab", "Slab"), MEMW("sreclaimable", "SReclaimable"),
	MEMW("sunreclaim", "SUnreclaim"), MEMW("kernelstack", "KernelStack"),
	MEMW("pagetables", "PageTables"), MEMW("commitlimit", "CommitLimit"),
	MEMW("committed_as", "Committed_AS"),
	VMW("pgpgin"), VMW("pgpgout"), VMW("pswpin"), VMW("pswpout"),
	VMW("pgfault"), VMW("pgmajfault"), VMW("oom_kill"),
	CPUW("user"), CPUW("nice"), CPUW("system"), CPUW("idle"),
	CPUW("iowait"), CPUW("irq"), CPUW("softirq"), CPUW("steal"),
	{ STATSFD_HOST_CPU, "node_cpu_guest_seconds_total", "counter", "user", SECS, { "guest" } },
	{ STATSFD_HOST_CPU, "node_cpu_guest_seconds_total", "counter", "nice", SECS, { "guest_nice" } },
	NETW("receive_bytes", "rx_bytes"), NETW("receive_packets", "rx_packets"),
	NETW("receive_errs", "rx_errors"),
	NETW("receive_drop", "rx_dropped", "rx_missed_errors"),
	NETW("receive_fifo", "rx_fifo_errors"),
	NETW("receive_frame", "rx_frame_errors", "rx_length_errors",
	     "rx_over_errors", "rx_crc_errors"),
	NETW("receive_compressed", "rx_compressed"),
	NETW("receive_multicast", "multicast"),
	NETW("receive_nohandler", "rx_nohandler"),
	NETW("transmit_bytes", "tx_bytes"), NETW("transmit_packets", "tx_packets"),
	NETW("transmit_errs", "tx_errors"), NETW("transmit_drop", "tx_dropped"),
	NETW("transmit_fifo", "tx_fifo_errors"), NETW("transmit_colls", "collisions"),
	NETW("transmit_carrier", "tx_carrier_errors", "tx_aborted_errors",
	     "tx_heartbeat_errors", "tx_window_errors"),
	NETW("transmit_compressed", "tx_compressed"),
	DISKW("reads_completed_total", "counter", RAW, "read_ios"),
	DISKW("reads_merged_total", "counter", RAW, "read_merges"),
	DISKW("read_bytes_total", "counter", SECTORS, "read_sectors"),
	DISKW("read_time_seconds_total", "counter", SECS, "read_time"),
	DISKW("writes_completed_total", "counter", RAW, "write_ios"),
	DISKW("writes_merged_total", "counter", RAW, "write_merges"),
	DISKW("written_bytes_total", "counter", SECTORS, "write_sectors"),
	DISKW("write_time_seconds_total", "counter", SECS, "write_time"),
	DISKW("io_now", "gauge", RAW, "in_flight"),
	DISKW("io_time_seconds_total", "counter", SECS, "io_time"),
	DISKW("io_time_weighted_seconds_total", "counter", SECS, "time_in_queue"),
	DISKW("discards_completed_total", "counter", RAW, "discard_ios"),
	DISKW("discards_merged_total", "counter", RAW, "discard_merges"),
	DISKW("discarded_sectors_total", "counter", RAW, "discard_sectors"),
	DISKW("discard_time_seconds_total", "counter", SECS, "discard_time"),
	DISKW("flush_requests_total", "counter", RAW, "flush_ios"),
	DISKW("flush_requests_time_seconds_total", "counter", SECS, "flush_time"),
};

/*
 * `promtool check metrics` on @text.  node_exporter's meminfo names keep
 * the kernel's spelling (node_memory_MemTotal_bytes), which promtool's
 * linter calls camelCase, for node_exporter's own output too (exit
 * status 3, lint only): those complaints, and only those, are accepted.
 */
static bool promtool_ok(const char *text)
{
	char path[] = "/tmp/statsfd-host-test-prom.XXXXXX", cmd[256], line[512];
	int fd = mkstemp(path), st, other = 0;
	FILE *p;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return false;
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	if (!p) {
		unlink(path);
		return false;
	}
	while (fgets(line, sizeof(line), p)) {
		char name[256], tail[256];

		if (sscanf(line, "node_memory_%255[A-Za-z_] %255[^\n]", name, tail) == 2 &&
		    !strcmp(tail, "metric names should be written in 'snake_case' not 'camelCase'"))
			continue;
		other++;
		tap_diag("promtool: %s", line);
	}
	st = pclose(p);
	unlink(path);
	return WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3) && !other;
}

/* Every wanted series of image @m, exactly once, with the exact value. */
static void check_series(const char *text, const struct img *m, unsigned int idx,
			 unsigned int *checked, unsigned int *bad)
{
	unsigned int i, j;

	for (i = 0; i < N(wants); i++) {
		const struct want *w = &wants[i];
		const char *got;
		char key[256], expect[64];
		uint64_t sum = 0;
		int count;
		bool ok;

		if (w->kind != m->kind)
			continue;
		if (m->kind == STATSFD_HOST_NODE)
			snprintf(key, sizeof(key), "%s", w->family);
		else if (m->kind == STATSFD_HOST_CPU)
			snprintf(key, sizeof(key), "%s{cpu=\"%s\",mode=\"%s\"}",
				 w->family, m->name, w->mode);
		else
			snprintf(key, sizeof(key), "%s{device=\"%s\"}", w->family, m->name);
		got = sample(text, key, &count);
		if (idx == 5 && w->mode && !strcmp(w->mode, "steal") &&
		    !strcmp(w->family, "node_cpu_seconds_total")) {
			/* The source without steal: that series only is missing. */
			if (count) {
				(*bad)++;
				tap_diag("%s: present without its stat", key);
			}
			continue;
		}
		for (j = 0; j < 4 && w->stats[j]; j++)
			sum += raw(m, w->stats[j]);
		if (w->conv == SECS) {
			/* The double nearest the nanoseconds / 1e9, printed to round-trip. */
			ok = got && strtod(got, NULL) == (double)sum / 1e9;
			snprintf(expect, sizeof(expect), "%.17g", (double)sum / 1e9);
		} else if (w->conv == X100) {
			ok = got && strtod(got, NULL) == (double)sum / 100;
			snprintf(expect, sizeof(expect), "%.17g", (double)sum / 100);
		} else {
			snprintf(expect, sizeof(expect), "%llu",
				 (unsigned long long)(w->conv == SECTORS ? sum * 512 : sum));
			ok = got && !strncmp(got, expect, strlen(expect)) &&
			     got[strlen(expect)] == '\n';
		}
		(*checked)++;
		if (!ok || count != 1) {
			(*bad)++;
			tap_diag("%s: want %s once, got %.30s (%d times)", key, expect,
				 got ? got : "nothing", count);
		}
	}
}

static void test_mapping(void)
{
	struct statsfd_host_series ser[N(imgs)];
	struct statsfd_buf out = { 0 };
	unsigned int i, checked = 0, bad = 0, families = 0, lines = 0;
	const char *p;

	for (i = 0; i < N(imgs); i++)
		ser[i] = (struct statsfd_host_series){
			imgs[i].sf, imgs[i].values, imgs[i].kind, imgs[i].name,
		};
	if (!tap_ok(!statsfd_host_prom_write(&out, ser, N(imgs)) && out.data,
		    "statsfd_host_prom_write() of a node, 3 CPUs, an interface and a disk"))
		return;
	for (i = 0; i < N(imgs); i++)
		check_series(out.data, &imgs[i], i, &checked, &bad);
	/* 41 of the node, 10 of each CPU but cpu5's steal, 17 and 17. */
	tap_ok(!bad && checked == 41 + 3 * 10 - 1 + 17 + 17,
	       "every mapped series once with its exact value: %u checked, %u wrong",
	       checked, bad);
	for (p = out.data; *p; p = strchr(p, '\n') + 1) {
		if (!strncmp(p, "# TYPE ", 7))
			families++;
		else if (*p != '#')
			lines++;
	}
	/* 5 + 29 + 7 node, 2 CPU families (modes), 17 + 17: nothing else. */
	tap_ok(families == 77 && lines == checked,
	       "77 families, one sample per wanted series and no other (%u, %u)",
	       families, lines);
	for (i = 0, bad = 0; i < N(wants); i++) {
		char t[160];

		snprintf(t, sizeof(t), "# TYPE %s %s\n", wants[i].family, wants[i].type);
		p = strstr(out.data, t);
		if (!p || strstr(p + 1, t))
			bad++;
	}
	tap_ok(!bad, "every family's TYPE once, node_exporter's (%u wrong)", bad);
	tap_ok(strstr(out.data, "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n") &&
	       strstr(out.data, "# HELP node_cpu_guest_seconds_total Seconds the CPUs spent in guests (VMs) for each mode.\n") &&
	       strstr(out.data, "# HELP node_memory_Active_anon_bytes Memory information field Active_anon_bytes.\n") &&
	       strstr(out.data, "# HELP node_vmstat_pgmajfault /proc/vmstat information field pgmajfault.\n") &&
	       strstr(out.data, "# HELP node_network_receive_drop_total Network device statistic receive_drop.\n") &&
	       strstr(out.data, "# HELP node_disk_io_time_weighted_seconds_total The weighted # of seconds spent doing I/Os.\n") &&
	       strstr(out.data, "# HELP node_intr_total Total number of interrupts serviced.\n") &&
	       strstr(out.data, "# HELP node_boot_time_seconds Node boot time, in unixtime.\n") &&
	       strstr(out.data, "# HELP node_load15 15m load average.\n"),
	       "HELP texts are node_exporter's");
	p = strstr(out.data, "node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} ");
	tap_ok(p && !strncmp(p, "node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 246.913578031\n",
			     strlen("node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 246.913578031\n")),
	       "CPU 1 user: 246913578031 ns is exactly 246.913578031 s");
	tap_ok(strstr(out.data, "\nnode_load1 2.24\n") && strstr(out.data, "\nnode_load15 2.58\n"),
	       "load: 224 hundredths is 2.24, 258 is 2.58");
	tap_ok(promtool_ok(out.data), "promtool check metrics accepts it (but node_exporter's camelCase meminfo names)");
	statsfd_buf_free(&out);

	tap_ok(!statsfd_host_prom_write(&out, ser, 0) && !out.data,
	       "no series: nothing written, not even a HELP");
	statsfd_buf_free(&out);
}

static void test_mapped(void)
{
	static const struct { unsigned int kind; const char *stat; bool mapped; } cases[] = {
		{ STATSFD_HOST_NODE, "memtotal", true },
		{ STATSFD_HOST_NODE, "load5_x100", true },
		{ STATSFD_HOST_NODE, "softirqs", false },
		{ STATSFD_HOST_NODE, "online_sum", false },
		{ STATSFD_HOST_NODE, "user", false },
		{ STATSFD_HOST_CPU, "user", true },
		{ STATSFD_HOST_CPU, "guest_nice", true },
		{ STATSFD_HOST_CPU, "online", false },
		{ STATSFD_HOST_NETDEV, "rx_crc_errors", true },
		{ STATSFD_HOST_NETDEV, "tx_window_errors", true },
		{ STATSFD_HOST_NETDEV, "rx_otherhost_dropped", false },
		{ STATSFD_HOST_BLOCK, "time_in_queue", true },
		{ STATSFD_HOST_BLOCK, "rx_bytes", false },
		{ 7, "user", false },
	};
	unsigned int i, bad = 0;

	for (i = 0; i < N(cases); i++)
		if (statsfd_host_mapped(cases[i].kind, cases[i].stat) != cases[i].mapped) {
			bad++;
			tap_diag("mapped(%u, %s) != %d", cases[i].kind, cases[i].stat,
				 cases[i].mapped);
		}
	tap_ok(!bad, "statsfd_host_mapped(): the node's CPU sums, softirqs, online, online_sum and rx_otherhost_dropped have no node_exporter name");
	tap_ok(statsfd_host_not_generic(STATSFD_HOST_NODE, "online_sum") &&
	       statsfd_host_not_generic(STATSFD_HOST_CPU, "idle") &&
	       !statsfd_host_not_generic(STATSFD_HOST_NODE, "softirqs") &&
	       !statsfd_host_not_generic(STATSFD_HOST_CPU, "online") &&
	       !statsfd_host_not_generic(STATSFD_HOST_CPU, "online_sum"),
	       "statsfd_host_not_generic(): the mapped stats and the node's online_sum");
}

static void test_cpulist(void)
{
	static const struct { const char *text; int ret; unsigned int first, last; } cases[] = {
		{ "0\n", 1, 0, 0 },
		{ "0-3\n", 4, 0, 3 },
		{ "0-1,3,5-6\n", 5, 0, 6 },
		{ "", 0, 0, 0 },
		{ "\n", 0, 0, 0 },
		{ "7", 1, 7, 7 },
		{ "65535", 1, 65535, 65535 },
		{ "65536", -EINVAL, 0, 0 },
		{ "3-1", -EINVAL, 0, 0 },
		{ "1,", -EINVAL, 0, 0 },
		{ ",1", -EINVAL, 0, 0 },
		{ "1-", -EINVAL, 0, 0 },
		{ "1 2", -EINVAL, 0, 0 },
		{ "1\n\n", -EINVAL, 0, 0 },
		{ "-1", -EINVAL, 0, 0 },
		{ "0-9", -E2BIG, 0, 0 },
	};
	unsigned int cpus[8], i;

	for (i = 0; i < N(cases); i++) {
		int r = statsfd_host_cpulist(cases[i].text, cpus, 8);

		tap_ok(r == cases[i].ret && (r <= 0 || (cpus[0] == cases[i].first &&
							cpus[r - 1] == cases[i].last)),
		       "cpulist \"%.*s\": %d (got %d)", (int)strcspn(cases[i].text, "\n"),
		       cases[i].text, cases[i].ret, r);
	}
}

static void test_id(void)
{
	static const struct { const char *id; bool ok; unsigned int kind; const char *name; } cases[] = {
		{ "host-node", true, STATSFD_HOST_NODE, "" },
		{ "host-cpu0", true, STATSFD_HOST_CPU, "0" },
		{ "host-cpu4095", true, STATSFD_HOST_CPU, "4095" },
		{ "host-net-eth0", true, STATSFD_HOST_NETDEV, "eth0" },
		{ "host-net-veth-a.1", true, STATSFD_HOST_NETDEV, "veth-a.1" },
		{ "host-block-nvme0n1", true, STATSFD_HOST_BLOCK, "nvme0n1" },
		{ "host-cpu", false, 0, NULL },
		{ "host-cpu01", false, 0, NULL },
		{ "host-cpu1x", false, 0, NULL },
		{ "host-cpu65536", false, 0, NULL },
		{ "host-net-", false, 0, NULL },
		{ "host-block-0123456789012345678901234567890123", false, 0, NULL },
		{ "host-nodes", false, 0, NULL },
		{ "vm-1/vcpu-0", false, 0, NULL },
	};
	struct statsfd_host_obj o;
	unsigned int i;

	for (i = 0; i < N(cases); i++) {
		bool r = statsfd_host_id_parse(cases[i].id, &o);

		tap_ok(r == cases[i].ok && (!r || (o.kind == cases[i].kind &&
						   !strcmp(o.name, cases[i].name))),
		       "id \"%s\": %s", cases[i].id, cases[i].ok ? cases[i].name : "not a host id");
	}
}

static int put(const char *dir, const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void test_scan(void)
{
	struct statsfd_host_obj *o = NULL;
	struct if_nameindex *ifs = if_nameindex(), *x;
	char sys[300];
	size_t n = 0, nif = 0, i;
	int r;

	for (x = ifs; x && x->if_index; x++)
		nif++;
	if (ifs)
		if_freenameindex(ifs);
	snprintf(sys, sizeof(sys), "%s/sys", tmpdir);
	mkdir(sys, 0755);
	r = statsfd_host_scan(sys, &o, &n);
	tap_ok(r == -ENOENT, "scan without a CPU list: -ENOENT (got %d)", r);
	put(sys, "devices/system/cpu/online", "0-1,3\n");
	r = statsfd_host_scan(sys, &o, &n);
	tap_ok(r == -ENOENT, "scan without a block directory: -ENOENT (got %d)", r);
	put(sys, "block/vdb/dev", "252:16\n");
	put(sys, "block/ram0/dev", "1:0\n");
	put(sys, "block/vda/dev", "252:0\n");
	put(sys, "block/bad/dev", "252-3\n");
	put(sys, "block/gone/size", "0\n");
	r = statsfd_host_scan(sys, &o, &n);
	if (!tap_ok(!r && n == 1 + 3 + nif + 3, "scan: node, 3 CPUs, %zu interfaces, 3 disks (got %d, %zu)",
		    nif, r, n)) {
		free(o);
		return;
	}
	tap_ok(o[0].kind == STATSFD_HOST_NODE && o[1].kind == STATSFD_HOST_CPU && o[1].cpu == 0 &&
	       o[2].cpu == 1 && o[3].cpu == 3 && !strcmp(o[3].name, "3"),
	       "the node first, then CPUs 0, 1 and 3 of the list");
	for (i = 4; i < 4 + nif; i++)
		if (o[i].kind != STATSFD_HOST_NETDEV || o[i].ifindex <= 0 ||
		    (int)if_nametoindex(o[i].name) != o[i].ifindex)
			break;
	tap_ok(i == 4 + nif, "then every interface of our network namespace, index and name");
	i = 4 + nif;
	tap_ok(o[i].kind == STATSFD_HOST_BLOCK && !strcmp(o[i].name, "ram0") && o[i].major == 1 &&
	       o[i].minor == 0 && !strcmp(o[i + 1].name, "vda") && o[i + 1].major == 252 &&
	       !strcmp(o[i + 2].name, "vdb") && o[i + 2].minor == 16,
	       "then the disks by name with their numbers; a bad or missing dev file left out");
	free(o);
	put(sys, "devices/system/cpu/online", "0-\n");
	r = statsfd_host_scan(sys, &o, &n);
	tap_ok(r == -EINVAL, "a CPU list that does not parse: -EINVAL (got %d)", r);
}

/* Output of the CLI @bin with @args (a shell fragment) on the images. */
static char *run_cli(const char *bin, const char *args)
{
	char cmd[2048], *buf;
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && %s %s --file host-node.img --file host-cpu0.img --file host-cpu1.img "
		 "--file host-net-eth0.img --file host-block-vda.img 2>&1", tmpdir, bin, args);
	p = popen(cmd, "r");
	buf = calloc(1, 1 << 17);
	if (!p || !buf) {
		if (p)
			pclose(p);
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, (1 << 17) - 1, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

static void test_cli(const char *bin)
{
	char *out = run_cli(bin, "show");

	tap_ok(out && strstr(out, "host: 2 CPUs online, booted 1970-") &&
	       strstr(out, "load 2.24 2.41 2.58") &&
	       strstr(out, "\nCPU s       user    nice  system    idle  iowait     irq softirq   steal   guest   gnice\n") &&
	       strstr(out, "\n  all     123.46  123.46  123.46") &&
	       strstr(out, "\n  0       246.91 ") && strstr(out, "\n  1       246.91 ") &&
	       strstr(out, "\nMemory:\n  total ") &&
	       strstr(out, "\nInterface   ") && strstr(out, "\n  eth0 ") &&
	       strstr(out, "\nDisk  ") && strstr(out, "\n  vda ") &&
	       !strstr(out, "NAME"),
	       "show on host images: the host pages, no generic table");
	if (out && !strstr(out, "\n  vda "))
		tap_diag("%s", out);
	free(out);
	out = run_cli(bin, "watch --count 1 --interval 0.1");
	tap_ok(out && strstr(out, "\nCPU %       user") && strstr(out, "\nInterface/s ") &&
	       strstr(out, "\nDisk/s ") && strstr(out, "%util"),
	       "watch on host images: CPU in %%, interfaces and disks per second");
	free(out);
	out = run_cli(bin, "show --prometheus");
	tap_ok(out && strstr(out, "\nnode_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} ") &&
	       strstr(out, "\nnode_network_receive_bytes_total{device=\"eth0\"} ") &&
	       strstr(out, "\nstatsfd_online{provider=\"statsfd_host\",target=\"cpu\",cpu=\"1\"} ") &&
	       strstr(out, "\nstatsfd_rx_otherhost_dropped_total{provider=\"statsfd_host\",target=\"net\",device=\"eth0\"} ") &&
	       strstr(out, "\nstatsfd_softirqs_total{provider=\"statsfd_host\",target=\"node\"} ") &&
	       !strstr(out, "target=\"cpu\",cpu=\"0\"} 246") && !strstr(out, "statsfd_memtotal") &&
	       !strstr(out, "online_sum"),
	       "show --prometheus: mapped stats under node_exporter's names only, the others as statsfd_*");
	tap_ok(out && promtool_ok(out), "promtool check metrics accepts show --prometheus (idem)");
	free(out);
}

/* Without statsfd_host.ko (never loaded on the build host): clear errors. */
static void test_no_device(const char *bin, const char *collector)
{
	char cmd[1024], *out;
	FILE *p;
	size_t n;
	int st;

	if (!access(STATSFD_HOST_DEVICE, F_OK)) {
		tap_skip("no device", "%s exists here", STATSFD_HOST_DEVICE);
		return;
	}
	out = calloc(1, 4096);
	if (!out)
		return;
	snprintf(cmd, sizeof(cmd), "%s show --host 2>&1", bin);
	p = popen(cmd, "r");
	n = p ? fread(out, 1, 4095, p) : 0;
	out[n] = '\0';
	st = p ? pclose(p) : -1;
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 1 &&
	       strstr(out, "statsfd: /dev/statsfd_host: No such file or directory (is statsfd_host.ko loaded?)"),
	       "statsfd show --host without the module: exit 1, says so");
	snprintf(cmd, sizeof(cmd), "%s --host --socket %s/c.sock --listen none --user root 2>&1",
		 collector, tmpdir);
	p = popen(cmd, "r");
	n = p ? fread(out, 1, 4095, p) : 0;
	out[n] = '\0';
	st = p ? pclose(p) : -1;
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 1 &&
	       strstr(out, "--host: /dev/statsfd_host: No such file or directory (is statsfd_host.ko loaded?)"),
	       "statsfd-collector --host without the module: does not start, says so");
	free(out);
}

int main(int argc, char **argv)
{
	unsigned int i;
	char cmd[400];

	/* host_collector_test.sh's images: saved, nothing tested. */
	if (argc == 3 && !strcmp(argv[1], "--write-images")) {
		imgdir = argv[2];
		for (i = 0; i < N(imgs); i++)
			if (open_img(&imgs[i], i))
				return 1;
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: host_test STATSFD STATSFD_COLLECTOR\n"
			"       host_test --write-images DIR\n");
		return 2;
	}
	if (system("command -v promtool >/dev/null")) {
		tap_ok(0, "promtool (Debian package prometheus) is needed");
		return tap_done();
	}
	if (!mkdtemp(tmpdir)) {
		tap_ok(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	for (i = 0; i < N(imgs); i++)
		if (!tap_ok(!open_img(&imgs[i], i), "image %s", imgs[i].id))
			return tap_done();
	test_mapping();
	test_mapped();
	test_cpulist();
	test_id();
	test_scan();
	test_cli(argv[1]);
	test_no_device(argv[1], argv[2]);
	for (i = 0; i < N(imgs); i++) {
		statsfd_close(imgs[i].sf);
		free(imgs[i].values);
	}
	/* STATSFD_HOST_TEST_KEEP=1 keeps the images, to look at by hand. */
	if (getenv("STATSFD_HOST_TEST_KEEP"))
		tap_diag("images kept in %s", tmpdir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (!getenv("STATSFD_HOST_TEST_KEEP") && system(cmd))
		tap_diag("could not remove %s", tmpdir);
	return tap_done();
}
