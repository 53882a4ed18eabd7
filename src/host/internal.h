/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd_host internals: one file per kind of object, each handing the
 * ioctl of main.c a stats file (statsfd_source_getfile()) or an ERR_PTR().
 */
#ifndef _STATSFD_HOST_INTERNAL_H
#define _STATSFD_HOST_INTERNAL_H

#include <linux/types.h>

struct file;

struct statsfd_schema;
struct statsfd_schema_def;
struct statsfd_source;

/*
 * The ten times of a "cpu" line of /proc/stat, in its order and in
 * nanoseconds: both the node's and each CPU's stats struct start with
 * them, so that statsfd_host_cpu_times() fills either.
 */
#define STATSFD_HOST_CPU_TIMES 10

/**
 * struct statsfd_host_cpu_stats - the stats of one CPU (statsfd_host.cpu)
 * @user: CPUTIME_USER, ns
 * @nice: CPUTIME_NICE, ns
 * @system: CPUTIME_SYSTEM, ns
 * @idle: idle time as /proc/stat computes it, ns
 * @iowait: iowait time as /proc/stat computes it, ns
 * @irq: CPUTIME_IRQ, ns
 * @softirq: CPUTIME_SOFTIRQ, ns
 * @steal: CPUTIME_STEAL, ns
 * @guest: CPUTIME_GUEST, ns
 * @guest_nice: CPUTIME_GUEST_NICE, ns
 * @online: 1 while the CPU is online
 *
 * Here and not in cpu.c because the node's aggregate over its CPUs is
 * bound to it (STATSFD_AGG_SUM_OF() takes the child's struct).
 */
struct statsfd_host_cpu_stats {
	u64 user;
	u64 nice;
	u64 system;
	u64 idle;
	u64 iowait;
	u64 irq;
	u64 softirq;
	u64 steal;
	u64 guest;
	u64 guest_nice;
	u64 online;
};

/* node.c: the node source and its schema; the parent of the CPUs. */
extern struct statsfd_source statsfd_host_node_src;
int statsfd_host_node_init(void);
void statsfd_host_node_exit(void);
struct file *statsfd_host_node_file(void);

/*
 * cpu.c: one source per possible CPU, children of the node while online.
 * Their schema is initialized and destroyed by node.c, around the node's,
 * which names it as its child schema and so needs it first.
 */
extern const struct statsfd_schema_def statsfd_host_cpu_def;
extern struct statsfd_schema statsfd_host_cpu_schema;
void statsfd_host_cpu_times(unsigned int cpu, u64 *times);
int statsfd_host_cpu_init(void);
void statsfd_host_cpu_exit(void);
struct file *statsfd_host_cpu_file(u32 cpu);

/* net.c: a source per stats fd on an interface of the caller's netns. */
int statsfd_host_net_init(void);
void statsfd_host_net_exit(void);
struct file *statsfd_host_net_file(s32 ifindex);

/* block.c: a source per stats fd on a whole disk. */
int statsfd_host_block_init(void);
void statsfd_host_block_exit(void);
struct file *statsfd_host_block_file(u32 major, u32 minor);

#endif /* _STATSFD_HOST_INTERNAL_H */
