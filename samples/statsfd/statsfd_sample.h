/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * statsfd_sample: the ioctl of /dev/statsfd_sample, the example provider of
 * Documentation/statsfd-provider-guide.rst.  A sample, not a stable ABI.
 */
#ifndef _STATSFD_SAMPLE_H
#define _STATSFD_SAMPLE_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Targets: the device (its own stats and totals over the queues), a queue. */
#define STATSFD_SAMPLE_TARGET_DEVICE	0
#define STATSFD_SAMPLE_TARGET_QUEUE0	1
#define STATSFD_SAMPLE_NR_QUEUES	2
#define STATSFD_SAMPLE_TARGET_MAX	STATSFD_SAMPLE_NR_QUEUES

/**
 * struct statsfd_sample_fd_args - argument of STATSFD_SAMPLE_GET_STATS_FD
 * @target: STATSFD_SAMPLE_TARGET_DEVICE, or STATSFD_SAMPLE_TARGET_QUEUE0 + n
 *	for queue n; larger is -ENOENT
 * @flags: must be 0 (-EINVAL)
 * @fd: out: the new stats fd (O_RDONLY | O_CLOEXEC)
 * @reserved: must be 0 (-EINVAL)
 */
struct statsfd_sample_fd_args {
	__u32 target;
	__u32 flags;
	__s32 fd;
	__u32 reserved;
};

#define STATSFD_SAMPLE_IOC_MAGIC	0xBA
#define STATSFD_SAMPLE_GET_STATS_FD	_IOWR(STATSFD_SAMPLE_IOC_MAGIC, 0x40, \
					      struct statsfd_sample_fd_args)

#endif /* _STATSFD_SAMPLE_H */
