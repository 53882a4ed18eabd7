// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: the host's stats fds (statsfd_host.ko, /dev/statsfd_host):
 * which objects there are, a stats fd for each, and what a host stats fd's
 * id says.  Their exposition under node_exporter's names is
 * libstatsfd-expo's (expo/node_exporter.c).
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

#include "statsfd.h"

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
