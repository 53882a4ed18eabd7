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

/**
 * struct statsfd_host_cpu_times - the ten times of a "cpu" line of
 *	/proc/stat, in its order, in nanoseconds
 * @user: CPUTIME_USER
 * @nice: CPUTIME_NICE
 * @system: CPUTIME_SYSTEM
 * @idle: idle time as /proc/stat computes it
 * @iowait: iowait time as /proc/stat computes it
 * @irq: CPUTIME_IRQ
 * @softirq: CPUTIME_SOFTIRQ
 * @steal: CPUTIME_STEAL
 * @guest: CPUTIME_GUEST
 * @guest_nice: CPUTIME_GUEST_NICE
 *
 * The first member of both the node's and each CPU's stats struct, which
 * statsfd_host_cpu_times() fills; both descriptor tables start with its
 * descriptors, written once in cpu_times.h.
 */
struct statsfd_host_cpu_times {
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
};

/**
 * struct statsfd_host_cpu_stats - the stats of one CPU (statsfd_host.cpu)
 * @times: the CPU's times
 * @online: 1 while the CPU is online
 *
 * Here and not in cpu.c because the node's aggregate over its CPUs is
 * bound to it (STATSFD_AGG_SUM_OF() takes the child's struct).
 */
struct statsfd_host_cpu_stats {
	struct statsfd_host_cpu_times times;
	u64 online;
};

/*
 * STATSFD_HOST_SCHEMA() - the definition of this module's schema @_name:
 * the whole descriptor table @_var##_descs, which covers the stats struct
 * @_stype, then any more fields (.child_schema = ...).
 */
#define STATSFD_HOST_SCHEMA(_name, _var, _stype, ...) {		\
	.name = (_name),						\
	.descs = _var##_descs,						\
	.num_descs = ARRAY_SIZE(_var##_descs),				\
	.stats_size = sizeof(_stype),					\
	__VA_ARGS__							\
}

/*
 * Every file owns its schemas: it defines them, initializes them in its
 * init function and destroys them in its exit function.  A parent's
 * schema names its child's, so main.c initializes the CPUs' schema before
 * the node's.
 */

/* node.c: the node source and its schema; the parent of the CPUs. */
extern struct statsfd_source statsfd_host_node_src;
int statsfd_host_node_init(void);
void statsfd_host_node_exit(void);
struct file *statsfd_host_node_file(void);

/*
 * cpu.c: one source per possible CPU, children of the node while online.
 * Their schema is initialized before the node's, which names it as its
 * child schema; their sources after the node, whose children they are.
 */
extern struct statsfd_schema statsfd_host_cpu_schema;
void statsfd_host_cpu_times(unsigned int cpu,
			    struct statsfd_host_cpu_times *times);
int statsfd_host_cpu_schema_init(void);
void statsfd_host_cpu_schema_exit(void);
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
