/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: --discover-kvm, the stats fds of VMMs that never
 * register (stock QEMU), found in /proc and taken with pidfd_getfd().
 */
#ifndef STATSFD_COLLECTOR_DISCOVER_H
#define STATSFD_COLLECTOR_DISCOVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector.h"

/*
 * The epoll tag of the fds of a discovery made by discover_start() (the
 * daemon's gets its provider's): tests driving discovery dispatch on it.
 */
#define EP_DISCOVER		EP_PROVIDER

/* --discover-interval: how often /proc is scanned again, by default. */
#define DISCOVER_INTERVAL_MS	5000

struct discover;

/**
 * struct discover_stats - what discovery did, for logs and tests
 * @scans: scans of /proc
 * @procs: VMM processes followed now (those holding KVM VM or vCPU fds)
 * @procs_gone: followed processes that exited (their sources dropped)
 * @fds_taken: fds taken from VMMs with pidfd_getfd()
 * @sources: sources added
 * @replaced: sources dropped because the VMM reused their fd number for
 *	another file
 * @no_stats: KVM VM or vCPU fds that gave no stats fd (KVM gives one only
 *	to the VMM: EIO)
 * @made: stats fds the VMM was made to ask KVM for, for VMs and vCPUs it
 *	held none of (statsfd_vmfd_stats_fd_remote())
 * @denied: processes whose fds could not be listed or taken
 */
struct discover_stats {
	uint64_t scans;
	uint64_t procs;
	uint64_t procs_gone;
	uint64_t fds_taken;
	uint64_t sources;
	uint64_t replaced;
	uint64_t no_stats;
	uint64_t made;
	uint64_t denied;
};

/**
 * discover_keep_caps() - keep capabilities across the switch to --user
 *
 * Called before the daemon drops root: PR_SET_KEEPCAPS, so that
 * discover_start() can keep CAP_SYS_PTRACE (and only it) afterwards.
 * Return: 0, or -1 with errno set.
 */
int discover_keep_caps(void);

/**
 * discover_start() - start following the VMMs on this machine
 * @c: the collector; sources are added to it, events to its epoll set
 *	(their data.ptr pointing at an int EP_DISCOVER)
 * @proc: the proc file system's mount point, "/proc" (tests use a fake tree)
 * @interval_ms: how often @proc is scanned again for new VMs and vCPUs
 *
 * Reduces the process's capabilities to CAP_SYS_PTRACE when it runs as a
 * user other than root, then scans @proc once, at once.
 * Return: the discovery state, or NULL (logged).
 */
struct discover *discover_start(struct collector *c, const char *proc,
				unsigned int interval_ms);

/**
 * discover_scan() - scan /proc for VMMs, new VMs and new vCPUs now
 * @d: discovery state
 */
void discover_scan(struct discover *d);

/**
 * discover_event() - an epoll event of one of discovery's fds
 * @d: discovery state
 * @ptr: the event's data.ptr: @d (its rescan timer) or a followed process
 *	(its pidfd: readable once it exits)
 * @events: the epoll events
 */
void discover_event(struct discover *d, void *ptr, uint32_t events);

/**
 * discover_stop() - drop every discovered source and free @d
 * @d: discovery state, or NULL
 */
void discover_stop(struct discover *d);

/**
 * discover_get_stats() - what discovery did so far
 * @d: discovery state
 * Return: its counters.
 */
const struct discover_stats *discover_get_stats(const struct discover *d);

/**
 * discover_vm_label() - the vm label of a VMM, from its command line
 * @cmdline: /proc/PID/cmdline: arguments, each ending with a NUL
 * @len: its length
 * @comm: /proc/PID/comm, without the newline
 * @pid: the process
 * @out: the label: QEMU's -name (its "guest" parameter, or its first,
 *	unnamed one), else its -uuid, else "COMM-PID"; characters a label may
 *	not hold ('"', '\\', non-printable) become '_'
 * @size: size of @out (at most STATSFD_LABEL_MAX characters are written)
 */
void discover_vm_label(const char *cmdline, size_t len, const char *comm,
		       pid_t pid, char *out, size_t size);

#endif /* STATSFD_COLLECTOR_DISCOVER_H */
