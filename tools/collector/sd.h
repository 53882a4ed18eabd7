/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: everything it does with systemd (libsystemd's
 * sd-daemon): socket activation, readiness and watchdog notification, and
 * the fd store that carries the stats fds and client connections across a
 * restart.  Without systemd (no LISTEN_FDS, no NOTIFY_SOCKET) every
 * function here is a no-op and the daemon binds its own sockets.
 *
 * Named systemd_*, not sd_*: that prefix is libsystemd's own.
 */
#ifndef STATSFD_COLLECTOR_SD_H
#define STATSFD_COLLECTOR_SD_H

#include <stdbool.h>
#include <stdint.h>

struct collector;
struct client;
struct source;
struct statsfd_labels;

/* Longest name systemd accepts in FDNAME= (FDNAME_MAX). */
#define SYSTEMD_FDNAME_MAX	255

/**
 * systemd_unix_listen_fd() - the unix socket systemd activated, if any
 *
 * The first call takes every fd systemd passed (sd_listen_fds_with_names):
 * listening sockets are kept for the daemon, stored fds for
 * systemd_stored().
 * Return: a listening SOCK_SEQPACKET unix socket (the collector's socket),
 * or -1 when not socket-activated (the daemon then binds it itself).
 */
int systemd_unix_listen_fd(void);

/* Activated TCP sockets taken for HTTP; more are left unused. */
#define SYSTEMD_HTTP_MAX	8

/**
 * systemd_http_listen_fd() - the @i-th TCP port systemd activated, if any
 * @i: index of the HTTP listener (the @i-th --listen), from 0
 *
 * The activated TCP sockets replace the --listen addresses in order
 * (ListenStream= lines of the .socket units, as LISTEN_FDS lists them).
 * Return: a listening SOCK_STREAM IPv4 or IPv6 socket, for libmicrohttpd's
 * MHD_OPTION_LISTEN_SOCKET, or -1 (MHD_INVALID_SOCKET: the daemon binds
 * that --listen address itself).
 */
int systemd_http_listen_fd(unsigned int i);

/**
 * systemd_owns_socket() - whether the unix socket's path is systemd's
 *
 * Return: true when the unix socket was activated: the daemon must then
 * neither unlink nor chmod it (the .socket unit set its mode and group).
 */
bool systemd_owns_socket(void);

/**
 * systemd_stored() - the fds the previous run stored (the fd store)
 * @fds: set to the fds; the caller takes those it keeps (setting them to
 *	-1) and gives the others back with systemd_forget()
 * @names: set to their names: "cli.<client id>" for a connection, a
 *	source's as systemd_parse_source_name() reads it
 *
 * Return: how many (0 without a fd store).
 */
unsigned int systemd_stored(int **fds, char ***names);

/**
 * systemd_parse_source_name() - what the fd store name of a source says
 * @name: "src.<id>.<client>.<vcpu>.<provider>.<target>.<vm>"
 * @id: its source id
 * @client: its client's id
 * @l: its labels
 *
 * Return: 0, or -EINVAL for a name this collector never wrote.
 */
int systemd_parse_source_name(const char *name, uint64_t *id,
			      uint64_t *client, struct statsfd_labels *l);

/**
 * systemd_forget() - close stored fd @i and remove it from the fd store
 * @i: its index in systemd_stored()'s arrays
 */
void systemd_forget(unsigned int i);

/**
 * systemd_unstore() - remove the fds named @name from the fd store
 * @name: the name
 */
void systemd_unstore(const char *name);

/**
 * systemd_stored_done() - the restore is over: close what was not taken
 *	and free systemd_stored()'s arrays
 */
void systemd_stored_done(void);

/**
 * systemd_store_source() - keep @s, and its client, in the fd store
 * @s: a source just added
 *
 * The name of its fd (systemd_fdname()) carries its id, its client's id
 * and its labels; the client connection is stored with its first source.
 */
void systemd_store_source(struct source *s);

/**
 * systemd_unstore_source() - remove @s from the fd store
 * @s: a source being dropped
 */
void systemd_unstore_source(struct source *s);

/**
 * systemd_unstore_client() - remove @cl's connection from the fd store
 * @cl: a client being dropped
 */
void systemd_unstore_client(struct client *cl);

/**
 * systemd_ready() - tell systemd the daemon serves (READY=1)
 * @c: the collector, for the STATUS= line
 */
void systemd_ready(struct collector *c);

/**
 * systemd_watchdog() - kick the watchdog when due (WATCHDOG=1), and send
 *	the notifications PID 1 could not take yet
 * @timeout_ms: the event loop's next epoll_wait() timeout, -1 for none
 *
 * Called once per loop iteration, so a kick proves the loop turns.
 * Return: @timeout_ms, shortened so that the next kick is not late, nor
 * the next try of queued notifications.
 */
int systemd_watchdog(int timeout_ms);

/**
 * systemd_stopping() - the daemon is exiting (STOPPING=1)
 *
 * From now on the fd store is left alone: the sources and clients dropped
 * while exiting are exactly what the next process must restore.
 */
void systemd_stopping(void);

#endif /* STATSFD_COLLECTOR_SD_H */
