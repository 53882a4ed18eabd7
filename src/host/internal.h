/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd_host internals: one file per kind of object, each handing the
 * ioctl of main.c a stats file (statsfd_source_getfile()) or an ERR_PTR().
 */
#ifndef _STATSFD_HOST_INTERNAL_H
#define _STATSFD_HOST_INTERNAL_H

#include <linux/types.h>

struct file;

/* node.c: the node source and its schema; the parent of the CPUs. */
int statsfd_host_node_init(void);
void statsfd_host_node_exit(void);
struct file *statsfd_host_node_file(void);

/* cpu.c: one source per possible CPU, children of the node while online. */
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
