/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * statsfd_client: registering a VMM's stats fds with statsfd-collector,
 * best effort.  A VMM's stats must never cost it its VMs: nothing here
 * blocks or aborts.  The collector may be down, restarting, or refuse a
 * registration; the client connects in the background, registers what it
 * was given, and after a disconnection (the collector restarted without
 * its fd store, or crashed) reconnects with a backoff and registers
 * everything again.  It keeps a duplicate of every fd it was given for
 * that.
 *
 * One client is one connection, and one connection is one VM's lifetime
 * for the collector: free the client when the VM goes away and the
 * collector drops its sources at once.
 *
 * Single-threaded: the VMM polls statsfd_client_fd() for
 * statsfd_client_events() with at most statsfd_client_timeout() ms, and
 * calls statsfd_client_dispatch() when it is ready or the time is up.
 *
 *	cl = statsfd_client_new("/run/statsfd/collector.sock");
 *	statsfd_client_add(cl, vm_stats_fd, &(struct statsfd_labels){
 *		.provider = "kvm", .target = "vm", .vm = "web", .vcpu = -1 });
 *	for (;;) {
 *		struct pollfd p = { statsfd_client_fd(cl),
 *				    statsfd_client_events(cl) };
 *		poll(&p, p.fd >= 0, statsfd_client_timeout(cl));
 *		statsfd_client_dispatch(cl);
 *	}
 */
#ifndef STATSFD_CLIENT_H
#define STATSFD_CLIENT_H

#include "statsfd_json.h"

struct statsfd_client;

/* Reconnection backoff: doubles from the first delay up to the last. */
#define STATSFD_CLIENT_BACKOFF_MIN_MS	100
#define STATSFD_CLIENT_BACKOFF_MAX_MS	10000
/* A request unanswered for this long counts as a lost connection. */
#define STATSFD_CLIENT_REPLY_TIMEOUT_MS	10000

/**
 * struct statsfd_client_status - what a client has achieved so far
 * @connected: a connection to the collector is up
 * @sources: fds given to the client (statsfd_client_add())
 * @registered: of those, registered with the collector on this connection
 * @connects: connections established, the first included
 * @refusals: add-sources requests the collector answered with an error
 */
struct statsfd_client_status {
	int connected;
	unsigned int sources;
	unsigned int registered;
	unsigned long connects;
	unsigned long refusals;
};

/**
 * statsfd_client_new() - a client of the collector listening on @path
 * @path: the collector's socket, e.g. /run/statsfd/collector.sock
 *
 * Connects at the first statsfd_client_dispatch(), not here.
 * Return: the client, or NULL (errno: ENAMETOOLONG, ENOMEM).
 */
struct statsfd_client *statsfd_client_new(const char *path);

/**
 * statsfd_client_set_logger() - where the client reports what happens
 * @cl: client
 * @log: called with one line of text (no newline): connections,
 *	disconnections, refusals with the collector's reason; NULL: silent
 * @arg: passed to @log
 */
void statsfd_client_set_logger(struct statsfd_client *cl,
			       void (*log)(void *arg, const char *msg),
			       void *arg);

/**
 * statsfd_client_add() - register a stats fd, now and after reconnections
 * @cl: client
 * @fd: the stats fd; duplicated (the caller keeps its own)
 * @labels: its labels (see statsfd_json_parse_sources() for their syntax)
 *
 * Registration happens in statsfd_client_dispatch(); fds added before the
 * next dispatch go in one add-sources message.
 * Return: 0, -EINVAL for invalid labels, -EEXIST if @fd was added already,
 * or the -errno of dup().
 */
int statsfd_client_add(struct statsfd_client *cl, int fd,
		       const struct statsfd_labels *labels);

/**
 * statsfd_client_remove() - stop registering @fd
 * @cl: client
 * @fd: an fd given to statsfd_client_add()
 *
 * Its duplicate is closed; if the collector has it, remove-sources asks
 * it to drop the source.
 * Return: 0, or -ENOENT.
 */
int statsfd_client_remove(struct statsfd_client *cl, int fd);

/**
 * statsfd_client_fd() - the fd to poll
 * @cl: client
 *
 * Return: the connection, or -1 while there is none (wait for
 * statsfd_client_timeout() only).
 */
int statsfd_client_fd(const struct statsfd_client *cl);

/**
 * statsfd_client_events() - the poll() events to wait for on the fd
 * @cl: client
 *
 * Return: POLLIN, with POLLOUT while a request waits for room to be sent.
 */
short statsfd_client_events(const struct statsfd_client *cl);

/**
 * statsfd_client_timeout() - how long the VMM may wait before dispatching
 * @cl: client
 *
 * Return: milliseconds until the next reconnection or retry is due, or
 * until a request times out; 0 when fds were added or removed since the
 * last dispatch; -1 when only the fd matters.
 */
int statsfd_client_timeout(const struct statsfd_client *cl);

/**
 * statsfd_client_dispatch() - make progress, never blocking
 * @cl: client
 *
 * Connects or reconnects when due, reads replies, sends pending
 * registrations and removals.  Errors of the collector or of the
 * connection are handled here (logged, retried later), never returned.
 */
void statsfd_client_dispatch(struct statsfd_client *cl);

/**
 * statsfd_client_status() - fill @st
 * @cl: client
 * @st: filled
 */
void statsfd_client_status(const struct statsfd_client *cl,
			   struct statsfd_client_status *st);

/**
 * statsfd_client_free() - close the connection and every duplicate
 * @cl: client, or NULL
 *
 * The collector drops the sources of the connection at once.
 */
void statsfd_client_free(struct statsfd_client *cl);

#endif /* STATSFD_CLIENT_H */
