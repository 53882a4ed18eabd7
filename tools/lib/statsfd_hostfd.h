/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libstatsfd: the host's own stats fds (statsfd_host.ko, /dev/statsfd_host;
 * Documentation/statsfd-host-api.rst): which objects there are (the node,
 * every online CPU, every interface of the caller's network namespace,
 * every whole disk), a stats fd for each, and their Prometheus exposition
 * under node_exporter's metric names (Documentation/statsfd-tools.rst,
 * "node_exporter mapping").  Shared by `statsfd show|watch --host` and
 * `statsfd-collector --host`.
 */
#ifndef STATSFD_HOSTFD_H
#define STATSFD_HOSTFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/statsfd_host.h>

#include "statsfd.h"

#define STATSFD_HOST_DEVICE	"/dev/statsfd_host"
/* Room for an interface name (IFNAMSIZ) or a disk name (DISK_NAME_LEN). */
#define STATSFD_HOST_NAME_MAX	32

/**
 * struct statsfd_host_obj - one object the host has a stats fd for
 * @kind: enum statsfd_host_kind
 * @cpu: STATSFD_HOST_CPU: its number
 * @ifindex: STATSFD_HOST_NETDEV: its index in our network namespace
 * @major: STATSFD_HOST_BLOCK: the disk's major number
 * @minor: STATSFD_HOST_BLOCK: the disk's minor number
 * @name: the label: "" for the node, the CPU's number ("3"), the
 *	interface's or the disk's name ("eth0", "vda")
 */
struct statsfd_host_obj {
	unsigned int kind;
	unsigned int cpu;
	int ifindex;
	unsigned int major;
	unsigned int minor;
	char name[STATSFD_HOST_NAME_MAX];
};

/**
 * statsfd_host_cpulist() - parse a CPU list such as /sys/.../cpu/online's
 * @text: "0-3,5\n": ranges and numbers, comma-separated, one newline at
 *	most at the end; "" or "\n" is an empty list
 * @cpus: filled with the CPUs in ascending order of the text
 * @max: room in @cpus
 *
 * Return: the number of CPUs, -EINVAL for text that is not a CPU list (a
 * range going down, a number above 65535, anything else), -E2BIG when
 * more than @max.
 */
int statsfd_host_cpulist(const char *text, unsigned int *cpus,
			 unsigned int max);

/**
 * statsfd_host_scan() - every object of the host, as it is now
 * @sysfs: the sysfs mount point, "/sys" (tests use a fake tree)
 * @objs: set to a malloc()ed array: the node first, then the online CPUs
 *	(@sysfs/devices/system/cpu/online), the interfaces of our network
 *	namespace (if_nameindex()), the whole disks (@sysfs/block/NAME/dev,
 *	"MAJOR:MINOR"), each in that order
 * @n: set to its length
 *
 * A disk whose dev file cannot be read or parsed (it went away meanwhile)
 * is left out.
 * Return: 0, or a negative errno: the CPU list cannot be read or parsed,
 * if_nameindex() or @sysfs/block failed, -ENOMEM.
 */
int statsfd_host_scan(const char *sysfs, struct statsfd_host_obj **objs,
		      size_t *n);

/**
 * statsfd_host_get_fd() - a stats fd for @o (STATSFD_HOST_GET_STATS_FD)
 * @dev: an fd of /dev/statsfd_host, open for reading
 * @o: the object
 *
 * Return: the new fd (close-on-exec), or a negative errno (ENODEV: the
 * object went away since the scan; see statsfd-host-api.rst).
 */
int statsfd_host_get_fd(int dev, const struct statsfd_host_obj *o);

/**
 * statsfd_host_id_parse() - the object a stats fd of statsfd_host is about
 * @id: its id: "host-node", "host-cpu<N>", "host-net-<name>" or
 *	"host-block-<name>" (statsfd-host-api.rst)
 * @o: filled: kind, cpu (with name its number) or name; ifindex, major
 *	and minor are not in the id and stay 0
 *
 * Lets a saved image (statsfd dump) of a host stats fd be shown as one.
 * Return: true for such an id (N decimal without leading zeros, below
 * 65536; a name of 1 to STATSFD_HOST_NAME_MAX - 1 characters), else false.
 */
bool statsfd_host_id_parse(const char *id, struct statsfd_host_obj *o);

/**
 * statsfd_host_kind_name() - the target label of a kind
 * @kind: enum statsfd_host_kind
 *
 * Return: "node", "cpu", "net", "block", or "unknown".
 */
const char *statsfd_host_kind_name(unsigned int kind);

/**
 * statsfd_host_mapped() - whether a stat has a node_exporter name
 * @kind: the kind of its source
 * @stat: the stat's name
 *
 * Return: true when statsfd_host_prom_write() exports it (alone or summed
 * with others); the others are left to the usual statsfd_* naming.
 */
bool statsfd_host_mapped(unsigned int kind, const char *stat);

/**
 * statsfd_host_not_generic() - whether a stat stays out of the statsfd_*
 *	series of a host source
 * @kind: the kind of its source
 * @stat: the stat's name
 *
 * The mapped stats (statsfd_host_mapped()), and those left out: the
 * node's online_sum (the number of node_cpu_seconds_total's cpu label
 * values; an aggregate named *_sum, which Prometheus reserves for
 * summaries and histograms).  The other stats of a host source are
 * exported as any source's, statsfd_<stat> with the labels provider
 * ("statsfd_host"), target and cpu or device.
 * Return: true to leave @stat out of the statsfd_* series.
 */
bool statsfd_host_not_generic(unsigned int kind, const char *stat);

/**
 * struct statsfd_host_series - one host source to expose
 * @sf: its handle
 * @values: its values, as statsfd_read() filled them
 * @kind: enum statsfd_host_kind of the source
 * @name: its label value (struct statsfd_host_obj's @name): the cpu label
 *	of a CPU, the device label of an interface or a disk
 */
struct statsfd_host_series {
	const struct statsfd *sf;
	const uint64_t *values;
	unsigned int kind;
	const char *name;
};

/**
 * statsfd_host_prom_write() - append the node_exporter families of @n series
 * @out: buffer
 * @series: the host's sources, in the order their samples are wanted
 * @n: how many
 *
 * Every family of the mapping with at least one sample gets node_exporter
 * 1.5.0's HELP and TYPE once, then one sample per series (and mode) that
 * has the stats it is made of; a series lacking one of them (a view, an
 * older kernel) is left out of that family.
 * Return: 0, or -ENOMEM.
 */
int statsfd_host_prom_write(struct statsfd_buf *out,
			    const struct statsfd_host_series *series, size_t n);

#endif /* STATSFD_HOSTFD_H */
