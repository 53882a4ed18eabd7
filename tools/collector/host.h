/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector --host: the host's own stats fds (statsfd_host.ko),
 * exported under node_exporter's metric names.
 */
#ifndef STATSFD_COLLECTOR_HOST_H
#define STATSFD_COLLECTOR_HOST_H

#include <stdint.h>

#include "collector.h"
#include "statsfd_expo.h"

/* The provider label of the host's sources, reserved for them. */
#define HOST_PROVIDER		"statsfd_host"

struct host;

/**
 * struct host_stats - what --host did, for logs and tests
 * @scans: scans of the host's objects
 * @sources: sources added
 * @removed: sources dropped because their object went away (a CPU went
 *	offline, an interface was renamed; hangups are counted by the
 *	collector as sources_hung_up)
 * @failed: objects that gave no source (the ioctl or the admission failed)
 */
struct host_stats {
	uint64_t scans;
	uint64_t sources;
	uint64_t removed;
	uint64_t failed;
};

/**
 * host_start() - open the host's stats fds and keep them current
 * @c: the collector; sources are added to it, the rescan timer to its
 *	epoll set
 * @device: "/dev/statsfd_host"
 * @sysfs: "/sys"
 * @images: NULL; tests (--test-host DIR): a directory whose image
 *	<id>.img (e.g. host-cpu0.img) stands for each object's stats fd,
 *	copied into a memfd (take them with --test-accept-memfd)
 * @interval_ms: how often the CPUs, interfaces and disks are looked for
 *	again (--discover-interval)
 * @p: its provider (host_provider): its epoll tag is used, its state and
 *	owner (the client standing for the host) set before the first scan
 *
 * Return: the state, or NULL (logged): the device cannot be opened, or the
 * first scan failed.
 */
struct host *host_start(struct collector *c, const char *device,
			const char *sysfs, const char *images,
			unsigned int interval_ms, struct provider *p);

/**
 * host_scan() - look for new and gone objects now
 * @h: state
 *
 * A source whose object is gone (a CPU offline, an interface renamed or
 * gone) is dropped; one for each new object is added; a source dropped
 * meanwhile (its hangup) is forgotten, so that its object, if back, is
 * added again.
 */
void host_scan(struct host *h);

/**
 * host_event() - the rescan timer (an epoll event of its provider)
 * @h: state
 */
void host_event(struct host *h);

/**
 * host_render() - append the node_exporter families of the host's sources
 * @h: state
 * @x: the exposition being rendered
 *
 * Sources that are down are left out, as in the rest of the exposition.
 * Return: 0, or -ENOMEM.
 */
int host_render(struct host *h, struct expo *x);

/**
 * host_get_stats() - what --host did so far
 * @h: state
 * Return: its counters.
 */
const struct host_stats *host_get_stats(const struct host *h);

/**
 * host_stop() - drop every host source and free @h
 * @h: state, or NULL
 */
void host_stop(struct host *h);

#endif /* STATSFD_COLLECTOR_HOST_H */
