/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd_host: the descriptors of struct statsfd_host_cpu_times, the ten
 * times a "cpu" line of /proc/stat shows, written once for the two
 * schemas that start with them, the node's and each CPU's.  Included at
 * the start of their descriptor tables with STATSFD_STATS_TYPE defined as
 * struct statsfd_host_cpu_times: the times are the first member of both
 * stats structs, so the offsets are the same there.  No include guard:
 * included once per table.
 */
STATSFD_TIME_NSEC(user),
STATSFD_TIME_NSEC(nice),
STATSFD_TIME_NSEC(system),
STATSFD_TIME_NSEC(idle),
STATSFD_TIME_NSEC(iowait),
STATSFD_TIME_NSEC(irq),
STATSFD_TIME_NSEC(softirq),
STATSFD_TIME_NSEC(steal),
STATSFD_TIME_NSEC(guest),
STATSFD_TIME_NSEC(guest_nice),
