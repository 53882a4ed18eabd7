/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libstatsfd-client: a VMM hands its stats fds to statsfd-collector.
 * Three layers, each usable alone: the wire format (statsfd_msg_*), the
 * JSON of the commands and of schemas and values (statsfd_json_*, json-c),
 * and the best-effort client built on both (statsfd_client_*).  Link with
 * libstatsfd-client and libstatsfd (pkg-config statsfd-client).
 */
#ifndef STATSFD_CLIENT_H
#define STATSFD_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "statsfd.h"

/* ---- the wire format ----------------------------------------------------- */

/*
 * The statsfd collector wire format: framed JSON over a SOCK_SEQPACKET unix
 * socket, stats fds attached with SCM_RIGHTS.
 *
 * Every packet, in both directions, is a 16-byte header and a payload:
 *
 *	offset 0   u32 magic    STATSFD_MSG_MAGIC ("SFDC" on little endian)
 *	offset 4   u16 version  STATSFD_MSG_VERSION (1)
 *	offset 6   u16 flags    0, or STATSFD_MSG_F_MORE in a reply whose
 *	                        payload continues in the next packet
 *	offset 8   u32 length   payload bytes in this packet; header + payload
 *	                        is at most STATSFD_MSG_MAX
 *	offset 12  u32 reserved 0
 *	offset 16  payload      UTF-8 JSON, no NUL
 *
 * Integers are in host byte order: both ends share a kernel.  A request is
 * one packet, so the fds attached to it are unambiguously its own (the
 * reason for SOCK_SEQPACKET); replies may span packets.  The JSON commands
 * are documented in Documentation/statsfd-vmm.rst.
 */

#define STATSFD_MSG_MAGIC	0x43444653u
#define STATSFD_MSG_VERSION	1
#define STATSFD_MSG_F_MORE	0x0001
#define STATSFD_MSG_HDR_SIZE	16u
#define STATSFD_MSG_MAX		65536u
/* The kernel's SCM_MAX_FD: most fds one sendmsg() may carry. */
#define STATSFD_MSG_MAX_FDS	253u
/* Largest reassembled reply a client accepts. */
#define STATSFD_MSG_REPLY_MAX	(256u << 20)

/**
 * struct statsfd_msg_hdr - header of every packet
 * @magic: STATSFD_MSG_MAGIC
 * @version: STATSFD_MSG_VERSION
 * @flags: 0 or STATSFD_MSG_F_MORE
 * @length: payload bytes following the header in this packet
 * @reserved: 0
 */
struct statsfd_msg_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;
	uint32_t length;
	uint32_t reserved;
};

/**
 * statsfd_msg_check() - validate a received packet's header
 * @pkt: the packet
 * @n: its length as received
 * @more_ok: whether STATSFD_MSG_F_MORE is acceptable (replies only)
 * @why: set to a static description of the problem
 *
 * Return: 0, or -EPROTO / -EMSGSIZE.
 */
int statsfd_msg_check(const void *pkt, size_t n, int more_ok,
		      const char **why);

/**
 * statsfd_msg_connect() - connect a SOCK_SEQPACKET socket to @path
 * @path: the collector's socket
 *
 * Return: the connected socket (close-on-exec), or -errno.
 */
int statsfd_msg_connect(const char *path);

/**
 * statsfd_msg_send() - send one message, fds attached to its first packet
 * @sock: connected socket
 * @json: payload
 * @len: payload length; a request must fit in one packet, a longer reply
 *	is split with STATSFD_MSG_F_MORE
 * @fds: fds to attach, or NULL
 * @nfds: number of @fds, at most STATSFD_MSG_MAX_FDS
 *
 * Blocking; for the collector's nonblocking side see statsfd_msg_pack().
 * Return: 0, or -errno.
 */
int statsfd_msg_send(int sock, const char *json, size_t len, const int *fds,
		     unsigned int nfds);

/**
 * statsfd_msg_pack() - frame @json into packets for a nonblocking sender
 * @json: payload
 * @len: payload length
 * @cb: called once per packet with its bytes
 * @arg: passed to @cb
 *
 * Return: 0, or the first non-zero value @cb returned.
 */
int statsfd_msg_pack(const char *json, size_t len,
		     int (*cb)(void *arg, const void *pkt, size_t n),
		     void *arg);

/**
 * statsfd_msg_recv() - receive one complete message
 * @sock: connected socket
 * @json: set to the malloc()ed, NUL-terminated payload
 * @len: set to the payload length
 * @fds: receives the attached fds (close-on-exec), or NULL to close them
 * @nfds: in: room in @fds; out: fds received
 * @timeout_ms: give up after this long without a packet; -1 waits forever
 *
 * Fds beyond the room in @fds are closed and reported as -EMSGSIZE.
 * Return: 0, -ECONNRESET on EOF, -ETIMEDOUT, -EPROTO for a bad packet, or
 * another -errno.
 */
int statsfd_msg_recv(int sock, char **json, size_t *len, int *fds,
		     unsigned int *nfds, int timeout_ms);

/* ---- JSON (json-c) -------------------------------------------------------- */

/*
 * Shared by the statsfd CLI, the collector and the sample VMM: labels of a
 * registered source, schemas and values in the shape of QEMU's
 * query-stats-schemas / query-stats answers.
 */

#define STATSFD_LABEL_MAX	64

/**
 * struct statsfd_labels - what a VMM says about one stats fd
 * @provider: who produced the fd, e.g. "kvm" or "statsfd_vm";
 *	[a-z][a-z0-9_]*, at most 32 characters
 * @target: what it describes: "vm", "vcpu", "system", ...; same syntax
 * @vm: the VM's name, printable ASCII without '"' and '\', may be empty
 * @vcpu: vCPU index for target "vcpu", else -1
 */
struct statsfd_labels {
	char provider[33];
	char target[33];
	char vm[STATSFD_LABEL_MAX + 1];
	int vcpu;
};

/**
 * statsfd_json_parse_sources() - parse the arguments of "add-sources"
 * @args: {"provider": P, "vm": V, "sources": [{"target": T, "vcpu": N,
 *	"provider": P, "vm": V}, ...]}; per-source keys override the outer ones
 * @nfds: number of fds attached to the message; must equal the length of
 *	"sources" (source i describes fd i)
 * @out: @nfds entries, filled
 * @why: error text on failure
 * @len: size of @why
 *
 * Return: 0, or -EINVAL with @why naming the offending key.
 */
int statsfd_json_parse_sources(struct json_object *args, unsigned int nfds,
			       struct statsfd_labels *out, char *why,
			       size_t len);

/**
 * statsfd_labels_from_id() - guess labels from a stats fd's id string
 * @id: "kvm-1234/vcpu-0", "vm-1234-0", "statsfd_vm", ...
 * @provider: provider to record, or NULL to guess from @id
 * @l: filled
 */
void statsfd_labels_from_id(const char *id, const char *provider,
			    struct statsfd_labels *l);

/**
 * statsfd_json_schema() - the descriptors of @sf as a JSON array
 * @sf: handle
 *
 * Each element: {"name", "type", "unit", "base", "exponent", "size",
 * "bucket-size" (linear histograms), "aggregation" (aggregates)}.
 * Return: a new array, or NULL on allocation failure.
 */
struct json_object *statsfd_json_schema(const struct statsfd *sf);

/**
 * statsfd_json_value() - the raw value(s) of @st
 * @st: descriptor
 * @buf: buffer statsfd_read() filled
 *
 * Return: a uint64 for a scalar, an array of bucket counts for a histogram.
 */
struct json_object *statsfd_json_value(const struct statsfd_stat *st,
				       const uint64_t *buf);

/**
 * statsfd_json_request() - a request object {"execute": @cmd, ...}
 * @cmd: command name
 * @args: arguments object (ownership taken), or NULL
 *
 * Return: a new object.
 */
struct json_object *statsfd_json_request(const char *cmd,
					 struct json_object *args);

/* ---- the client ----------------------------------------------------------- */

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
