// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b11": one collection of the host's stats, the way
 * node_exporter collects them (open, read and parse /proc/stat,
 * /proc/vmstat, /proc/meminfo, /proc/diskstats, /proc/net/dev and every
 * /sys/class/net/<if>/statistics/<field>) vs one pread of each stats fd
 * of /dev/statsfd_host (the node, every online CPU, every interface,
 * every whole disk; the fds opened once, as a collector holds them).
 *
 * Measured per family (CPU, memory, network, disk) and overall, first
 * with every CPU of the guest online, then with only 2 (the others
 * offlined through sysfs and brought back at the end): the text of
 * /proc/stat grows with the CPUs, and so does the number of CPU fds.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/statsfd_host.h>

#include "bench.h"

#define MAX_HOST_FDS	256
#define MAX_TEXT_FILES	4096

/**
 * struct fdset - stats fds read in one collection of a family
 * @fd: the fds
 * @off: data_offset of each
 * @len: data block size of each
 * @n: how many
 */
struct fdset {
	int fd[MAX_HOST_FDS];
	uint32_t off[MAX_HOST_FDS];
	uint32_t len[MAX_HOST_FDS];
	int n;
};

/**
 * struct textset - text files read in one collection of a family
 * @path: their paths
 * @n: how many
 */
struct textset {
	char *path[MAX_TEXT_FILES];
	int n;
};

static int host_dev = -1;

static int host_fd(uint32_t kind, uint32_t cpu, int32_t ifindex,
		   uint32_t major, uint32_t minor)
{
	struct statsfd_host_stats_fd a = {
		.kind = kind, .cpu = cpu, .ifindex = ifindex,
		.major = major, .minor = minor,
	};

	return ioctl(host_dev, STATSFD_HOST_GET_STATS_FD, &a);
}

static void fdset_add(struct fdset *s, int fd)
{
	struct sfile f;

	if (fd < 0)
		die("STATSFD_HOST_GET_STATS_FD");
	if (s->n == MAX_HOST_FDS)
		die("too many stats fds");
	sfile_open(&f, fd);
	s->fd[s->n] = fd;
	s->off[s->n] = f.h.data_offset;
	s->len[s->n] = f.data_size;
	s->n++;
	free(f.desc);
}

static void fdset_close(struct fdset *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		close(s->fd[i]);
	s->n = 0;
}

static void textset_add(struct textset *s, const char *path)
{
	if (s->n == MAX_TEXT_FILES)
		die("too many text files");
	s->path[s->n] = strdup(path);
	if (!s->path[s->n])
		die("strdup");
	s->n++;
}

static void textset_free(struct textset *s)
{
	while (s->n)
		free(s->path[--s->n]);
}

/* The online CPUs, from /sys/devices/system/cpu/cpuN/online (cpu0 has none). */
static bool cpu_online(int cpu)
{
	char path[96], c = '1';
	int fd;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	return c == '1';
}

static int cpu_count(void)
{
	char path[96];
	int n = 0;

	for (;;) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

static bool set_online(int cpu, bool on)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	return write_param(path, on ? "1" : "0");
}

/* The whole disks: /sys/block/<disk>/dev holds "major:minor". */
static void add_disks(struct fdset *s)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned int major, minor;
		char path[300];
		FILE *f;
		int ok;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/dev", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		ok = fscanf(f, "%u:%u", &major, &minor) == 2;
		fclose(f);
		if (ok)
			fdset_add(s, host_fd(STATSFD_HOST_BLOCK, 0, 0, major, minor));
	}
	closedir(d);
}

/* Every interface: its stats fd, and its sysfs statistics files. */
static void add_netdevs(struct fdset *s, struct textset *sysfs)
{
	struct if_nameindex *ifs = if_nameindex(), *i;

	if (!ifs)
		die("if_nameindex");
	for (i = ifs; i->if_index; i++) {
		char dir[300], path[600];
		struct dirent *e;
		DIR *d;

		fdset_add(s, host_fd(STATSFD_HOST_NETDEV, 0, i->if_index, 0, 0));
		snprintf(dir, sizeof(dir), "/sys/class/net/%s/statistics", i->if_name);
		d = opendir(dir);
		if (!d)
			die("opendir %s", dir);
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			textset_add(sysfs, path);
		}
		closedir(d);
	}
	if_freenameindex(ifs);
}

/* One pread of each data block, and a pass over its values. */
static void op_fds(struct cont *c)
{
	const struct fdset *s = c->arg;
	int i;

	for (i = 0; i < s->n; i++) {
		const uint64_t *v = (const uint64_t *)buf;
		uint32_t j;

		if (pread(s->fd[i], buf, s->len[i], s->off[i]) != (ssize_t)s->len[i])
			die("pread");
		for (j = 0; j < s->len[i] / 8; j++)
			c->sink += v[j];
	}
}

/*
 * Open, read, parse every number, close: what a text collector must do
 * at least (node_exporter does more: it splits fields and maps names).
 */
static void op_text(struct cont *c)
{
	const struct textset *s = c->arg;
	int i;

	for (i = 0; i < s->n; i++) {
		int fd = open(s->path[i], O_RDONLY | O_CLOEXEC);
		ssize_t len, total = 0;
		const char *p;
		char *end;

		if (fd < 0)
			die("open %s", s->path[i]);
		while ((len = read(fd, buf + total, BUF_SIZE - 1 - total)) > 0)
			total += len;
		if (len < 0)
			die("read %s", s->path[i]);
		close(fd);
		buf[total] = 0;
		for (p = (const char *)buf; *p;) {
			if (*p < '0' || *p > '9') {
				p++;
				continue;
			}
			c->sink += strtoull(p, &end, 10);
			p = end;
		}
	}
}

/**
 * struct family - one family's contenders: its fds and its text sources
 * @name: "cpu", "memory", "net", "disk" or "all"
 * @fds: its stats fds
 * @text: its text files as node_exporter reads them
 * @alt: a second text source of the same values ("net": sysfs), or empty
 */
struct family {
	const char *name;
	struct fdset fds;
	struct textset text, alt;
};

static struct family fam[5];

static void build_families(void)
{
	struct family *cpu = &fam[0], *mem = &fam[1], *net = &fam[2],
		      *disk = &fam[3], *all = &fam[4];
	int i, n = cpu_count();

	memset(fam, 0, sizeof(fam));
	cpu->name = "cpu";
	mem->name = "memory";
	net->name = "net";
	disk->name = "disk";
	all->name = "all";
	/* The node carries the totals and memory; the CPUs their times. */
	fdset_add(&mem->fds, host_fd(STATSFD_HOST_NODE, 0, 0, 0, 0));
	for (i = 0; i < n; i++)
		if (cpu_online(i))
			fdset_add(&cpu->fds, host_fd(STATSFD_HOST_CPU, i, 0, 0, 0));
	add_netdevs(&net->fds, &net->alt);
	add_disks(&disk->fds);
	textset_add(&cpu->text, "/proc/stat");
	textset_add(&mem->text, "/proc/meminfo");
	textset_add(&mem->text, "/proc/vmstat");
	textset_add(&net->text, "/proc/net/dev");
	textset_add(&disk->text, "/proc/diskstats");
	/* All: the node once (it is in "memory"), every fd, every text. */
	for (i = 0; i < 4; i++) {
		int j;

		for (j = 0; j < fam[i].fds.n; j++) {
			all->fds.fd[all->fds.n] = fam[i].fds.fd[j];
			all->fds.off[all->fds.n] = fam[i].fds.off[j];
			all->fds.len[all->fds.n++] = fam[i].fds.len[j];
		}
		for (j = 0; j < fam[i].text.n; j++)
			textset_add(&all->text, fam[i].text.path[j]);
	}
}

static void free_families(void)
{
	int i;

	for (i = 0; i < 4; i++)
		fdset_close(&fam[i].fds);
	for (i = 0; i < 5; i++) {
		textset_free(&fam[i].text);
		textset_free(&fam[i].alt);
	}
}

/* Measure every family with the CPUs online now; one JSON object. */
static void measure_families(const char *key)
{
	struct cont c[16];
	int i, n = 0;

	build_families();
	for (i = 0; i < 5; i++) {
		struct cont *x;

		x = cont_add(c, &n, "fds", op_fds, -1, 0, 0, 1);
		x->arg = &fam[i].fds;
		x = cont_add(c, &n, "text", op_text, -1, 0, 0, 1);
		x->arg = &fam[i].text;
		if (fam[i].alt.n) {
			x = cont_add(c, &n, "sysfs", op_text, -1, 0, 0, 1);
			x->arg = &fam[i].alt;
		}
	}
	measure(c, n, rounds);
	jopen(key, '{');
	jnum("cpus_online", fam[0].fds.n);
	n = 0;
	for (i = 0; i < 5; i++) {
		jopen(fam[i].name, '{');
		jnum("num_fds", fam[i].fds.n);
		jnum("text_files", fam[i].text.n);
		jcont(&c[n++]);
		jcont(&c[n++]);
		if (fam[i].alt.n) {
			jnum("sysfs_files", fam[i].alt.n);
			jcont(&c[n++]);
		}
		jclose('}');
	}
	jclose('}');
	free_families();
}

void phase_b11(void)
{
	int i, n;

	host_dev = open("/dev/statsfd_host", O_RDONLY | O_CLOEXEC);
	if (host_dev < 0)
		die("open /dev/statsfd_host");
	n = cpu_count();
	jbegin("b11");
	jnum("cpus", n);
	measure_families("max");
	if (n > 2) {
		for (i = 2; i < n; i++)
			if (!set_online(i, false))
				die("offline cpu%d", i);
		measure_families("two");
		for (i = 2; i < n; i++)
			if (!set_online(i, true))
				die("online cpu%d", i);
	}
	jend();
	close(host_dev);
}
