/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * statsfd host provider: the ioctl of /dev/statsfd_host, which hands out
 * stats fds on the host's own node, CPUs, network interfaces and block
 * devices.  The stats in each fd are listed, with the /proc or /sys text
 * they equal, in Documentation/statsfd-host-api.rst.
 */
#ifndef _UAPI_LINUX_STATSFD_HOST_H
#define _UAPI_LINUX_STATSFD_HOST_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Unused in Documentation/userspace-api/ioctl/ioctl-number.rst as of 6.12. */
#define STATSFD_HOST_IO			0xBB

/**
 * enum statsfd_host_kind - what a stats fd of /dev/statsfd_host is about
 * @STATSFD_HOST_NODE: the whole machine: memory, VM events, softirqs,
 *	load, boot time, CPU time summed over every possible CPU (as the
 *	"cpu" line of /proc/stat); the online CPUs are its children
 * @STATSFD_HOST_CPU: one online CPU, by number: its times, as its
 *	"cpuN" line of /proc/stat, in nanoseconds
 * @STATSFD_HOST_NETDEV: one network interface, by ifindex, of the
 *	caller's network namespace: every field of struct rtnl_link_stats64
 * @STATSFD_HOST_BLOCK: one whole disk, by major and minor: its line of
 *	/proc/diskstats
 * @STATSFD_HOST_KIND_MAX: the largest kind
 */
enum statsfd_host_kind {
	STATSFD_HOST_NODE = 0,
	STATSFD_HOST_CPU = 1,
	STATSFD_HOST_NETDEV = 2,
	STATSFD_HOST_BLOCK = 3,
	STATSFD_HOST_KIND_MAX = STATSFD_HOST_BLOCK,
};

/**
 * struct statsfd_host_stats_fd - argument of STATSFD_HOST_GET_STATS_FD
 * @kind: an enum statsfd_host_kind
 * @flags: must be 0
 * @cpu: for STATSFD_HOST_CPU, the CPU's number; else must be 0
 * @ifindex: for STATSFD_HOST_NETDEV, the interface's index in the
 *	caller's network namespace; else must be 0
 * @major: for STATSFD_HOST_BLOCK, the disk's major number; else must be 0
 * @minor: for STATSFD_HOST_BLOCK, the disk's minor number; else must be 0
 * @reserved: must be 0
 *
 * Only the fields of @kind may be set, so that a field given to the
 * wrong kind is an error and not silently ignored.
 */
struct statsfd_host_stats_fd {
	__u32 kind;
	__u32 flags;
	__u32 cpu;
	__s32 ifindex;
	__u32 major;
	__u32 minor;
	__u64 reserved[3];
};

/*
 * On /dev/statsfd_host: returns a new read-only stats fd (O_CLOEXEC), in
 * the format of KVM_GET_STATS_FD.  Same number as KVM_GET_STATS_FD within
 * our magic.  Errors: EFAULT (bad pointer), EINVAL (unknown kind, flags
 * or reserved fields or another kind's field not zero, CPU number not
 * below the number of possible CPUs, ifindex not positive, a partition
 * instead of a whole disk), ENODEV (CPU offline, no such interface in the
 * caller's network namespace, no such disk or one being removed),
 * EMFILE/ENFILE, ENOMEM.  Anyone who may open the device may get any
 * kind; a disk is never opened, so the device cgroup is not asked.  The
 * full table is in Documentation/statsfd-host-api.rst.
 */
#define STATSFD_HOST_GET_STATS_FD	_IOW(STATSFD_HOST_IO, 0xce, struct statsfd_host_stats_fd)

#endif /* _UAPI_LINUX_STATSFD_HOST_H */
