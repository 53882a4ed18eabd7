/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: shared state of the daemon's single-threaded event loop.
 */
#ifndef STATSFD_COLLECTOR_H
#define STATSFD_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "statsfd.h"
#include "statsfd_json.h"

struct client;
struct http_server;

/**
 * struct schema - descriptors shared by sources of one provider and target
 * @id: number shown in query answers ("schema": N)
 * @provider: provider label of its sources
 * @target: target label of its sources
 * @prom_prefix: "<provider>_<target>", the metric name prefix
 * @members: its sources (any one describes the schema)
 * @nmembers: how many; the schema is freed at 0
 * @next: in the collector's list
 */
struct schema {
	unsigned int id;
	char provider[33];
	char target[33];
	char prom_prefix[72];
	struct source *members;
	unsigned int nmembers;
	struct schema *next;
};

/**
 * struct source - one registered stats fd
 * @kind: epoll tag, EP_SOURCE (its data.ptr is the source)
 * @id: collector-wide number, never reused
 * @owner: the client that registered it; it is dropped with the client
 * @sf: parsed handle, owns the fd; with --stats, a view of the stats fd
 * @schema: shared descriptors
 * @labels: as the VMM sent them
 * @prom_labels: preformatted Prometheus labels
 * @values: latest successful read (statsfd_data_size() bytes)
 * @tmp: read buffer, swapped with @values on success
 * @reads: successful reads
 * @read_errors: failed reads; @values then keeps the last good sample
 * @mapped: @sf maps the values (counted in collector.nmapped)
 * @polled: its fd is in the epoll set (it has events: statsfd's fds)
 * @dead: dropped during the current batch of events; freed after it
 * @next: in the global list (in collector.dead once dead)
 * @prev: in the global list
 * @next_in_client: in the owner's list
 * @next_in_schema: in the schema's member list
 * @prev_in_schema: in the schema's member list
 */
struct source {
	int kind;
	uint64_t id;
	struct client *owner;
	struct statsfd *sf;
	struct schema *schema;
	struct statsfd_labels labels;
	char *prom_labels;
	uint64_t *values;
	uint64_t *tmp;
	uint64_t reads;
	uint64_t read_errors;
	bool mapped;
	bool polled;
	bool dead;
	struct source *next, *prev;
	struct source *next_in_client;
	struct source *next_in_schema, *prev_in_schema;
};

/* A queued reply packet. */
struct pkt {
	struct pkt *next;
	size_t len;
	size_t off;
	char data[];
};

/**
 * struct client - one connection on the unix socket
 * @kind: epoll tag, EP_CLIENT
 * @fd: the connection, nonblocking
 * @id: connection number, for logs
 * @pid: SO_PEERCRED pid at connect time
 * @uid: SO_PEERCRED uid
 * @gid: SO_PEERCRED gid
 * @sources: registered sources
 * @nsources: how many
 * @out: queued reply packets
 * @out_tail: last of @out
 * @out_bytes: bytes queued
 * @deadline: monotonic ms after which the client is dropped, 0 for none
 * @closing: hang up once @out is flushed
 * @shut: hung up (SHUT_WR) and draining what the peer still sends until it
 *	closes: closing a unix socket with unread data would make the peer's
 *	recv() fail with ECONNRESET before it reads our last reply
 * @next: in the collector's list
 * @prev: in the collector's list
 */
struct client {
	int kind;
	int fd;
	uint64_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	struct source *sources;
	unsigned int nsources;
	struct pkt *out, *out_tail;
	size_t out_bytes;
	uint64_t deadline;
	bool closing;
	bool shut;
	struct client *next, *prev;
};

enum { EP_LISTEN = 1, EP_TIMER, EP_SIGNAL, EP_HTTP, EP_CLIENT, EP_SOURCE };

/**
 * struct collector - the daemon
 * @epfd: the event loop
 * @clients: connected clients
 * @nclients: how many
 * @sources: every source
 * @nsources: how many
 * @schemas: distinct schemas
 * @next_client_id: id of the last client
 * @next_source_id: id of the next source
 * @next_schema_id: id of the next schema
 * @max_sources: limit on @nsources
 * @nmapped: sources whose values are mapped
 * @max_mapped: limit on @nmapped (--max-mapped); further sources pread
 * @npolled: sources whose fds are in the epoll set
 * @filter: --stats: the names of the only stats read and exported
 * @nfilter: how many (0: every stat)
 * @dead: sources dropped during the current batch of events
 * @client_timeout_ms: see --client-timeout
 * @http: the HTTP server (http.c), or NULL
 * @ticks: read ticks so far (each one reads every source)
 * @render: render_cached()'s exposition, rendered again after a tick or a
 *	change of the sources; @render.gen counts the renders
 * @stats: the daemon's own counters, exposed as statsfd_collector_*
 */
struct collector {
	int epfd;
	struct client *clients;
	unsigned int nclients;
	struct source *sources;
	unsigned int nsources;
	struct schema *schemas;
	uint64_t next_client_id;
	uint64_t next_source_id;
	unsigned int next_schema_id;
	unsigned int max_sources;
	unsigned int nmapped;
	unsigned int max_mapped;
	unsigned int npolled;
	char **filter;
	unsigned int nfilter;
	struct source *dead;
	unsigned int client_timeout_ms;
	struct http_server *http;
	uint64_t ticks;
	struct {
		char *text;
		size_t len;
		uint64_t gen;
		uint64_t ticks;
		uint64_t next_source_id;
		unsigned int nsources;
	} render;
	struct {
		uint64_t reads, read_errors, scrapes, clients_refused,
			 clients_dropped, requests, bad_requests, fds_rejected,
			 sources_hung_up, children_changes;
	} stats;
};

extern int collector_verbose;

__attribute__((format(printf, 1, 2)))
void logmsg(const char *fmt, ...);

uint64_t now_ms(void);
int add_source(struct collector *c, struct client *cl, int fd,
	       const struct statsfd_labels *l, char *why, size_t len,
	       struct source **out);
void drop_source(struct collector *c, struct source *s);
void reap_sources(struct collector *c);
void read_sources(struct collector *c);
void source_event(struct collector *c, struct source *s, uint32_t events);
void queue_reply(struct collector *c, struct client *cl,
		 struct json_object *reply);
void handle_request(struct collector *c, struct client *cl, char *json,
		    size_t len, int *fds, unsigned int nfds);
char *render_metrics(struct collector *c, size_t *len);
const char *render_cached(struct collector *c, size_t *len);

#endif /* STATSFD_COLLECTOR_H */
