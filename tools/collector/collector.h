/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: shared state of the daemon's single-threaded event loop.
 */
#ifndef STATSFD_COLLECTOR_H
#define STATSFD_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sys/epoll.h>

#include "admit.h"
#include "expo.h"
#include "provider.h"
#include "statsfd_expo.h"
#include "statsfd_client.h"

struct client;
struct http_server;
struct vm_label;

/**
 * struct hnode - an item of a chained hash table (struct htable)
 * @next: the next item of its bucket
 * @hash: the hash of its key
 */
struct hnode {
	struct hnode *next;
	uint64_t hash;
};

/**
 * struct htable - a chained hash table of the collector's indexes
 *	(sources.c), grown as it fills, its buckets freed when it empties
 * @b: buckets, NULL while empty
 * @mask: number of buckets - 1
 * @n: items
 */
struct htable {
	struct hnode **b;
	size_t mask;
	size_t n;
};

/**
 * struct schema - descriptors shared by sources of one provider and target
 * @id: number shown in query answers ("schema": N)
 * @ns: metric namespace of its sources (their fd type)
 * @provider: provider label of its sources
 * @target: target label of its sources
 * @skip: per stat, nonzero when --include/--exclude/--histograms drop it
 *	from the exposition
 * @members: its sources (any one describes the schema)
 * @nmembers: how many; the schema is freed at 0
 * @next: in the collector's list
 * @prev: in the collector's list
 * @by_hash: in collector.schema_index, keyed by its descriptors' hash,
 *	namespace, provider and target
 */
struct schema {
	unsigned int id;
	enum source_ns ns;
	char provider[33];
	char target[33];
	unsigned char *skip;
	struct source *members;
	unsigned int nmembers;
	struct schema *next, *prev;
	struct hnode by_hash;
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
 * @cost: bytes accounted to it (admit_fd()), against its client's quota
 *	and the collector's budget
 * @expo: estimated bytes of its series in the exposition (source_expo()),
 *	against its user's --user-max-exposition and --max-exposition
 * @file_fd: the fd of @sf, its key in collector.files
 * @reads: successful reads
 * @read_errors: failed reads
 * @failures: consecutive failed reads: the source is down while nonzero
 *	(its values are not exported) and dropped at --drop-after
 * @last_read: wall-clock time of the last successful read, in ms
 * @mapped: @sf maps the values (counted in collector.nmapped)
 * @polled: its fd is in the epoll set (it has events: statsfd's fds)
 * @dead: dropped during the current batch of events; freed after it
 * @next: in the global list (in collector.dead once dead)
 * @prev: in the global list
 * @next_in_client: in the owner's list
 * @prev_in_client: in the owner's list
 * @next_in_schema: in the schema's member list
 * @prev_in_schema: in the schema's member list
 * @by_labels: in collector.by_labels, keyed by provider, target, vm, vcpu
 * @vm: its vm label's entry in collector.by_vm, NULL without a vm label
 *	or for the host's own sources (--host)
 * @next_in_vm: in @vm's list, newest first like collector.sources
 * @prev_in_vm: in @vm's list
 * @by_id: in collector.sources_by_id
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
	size_t cost;
	size_t expo;
	int file_fd;
	uint64_t reads;
	uint64_t read_errors;
	unsigned int failures;
	uint64_t last_read;
	bool mapped;
	bool polled;
	bool dead;
	struct source *next, *prev;
	struct source *next_in_client, *prev_in_client;
	struct source *next_in_schema, *prev_in_schema;
	struct hnode by_labels;
	struct vm_label *vm;
	struct source *next_in_vm, *prev_in_vm;
	struct hnode by_id;
};

/* A queued reply packet. */
struct pkt {
	struct pkt *next;
	size_t len;
	size_t off;
	char data[];
};

/**
 * struct user - what one uid holds over all its connections
 * @uid: the uid
 * @nclients: its connections (allowed ones)
 * @nsources: its sources
 * @bytes: their cost, against --user-max-bytes
 * @expo: their estimated exposition bytes, against --user-max-exposition
 * @out_bytes: replies queued for it on every connection, against
 *	collector.reply_max
 * @by_uid: in collector.users, keyed by @uid
 *
 * Freed when it has neither connections nor sources.
 */
struct user {
	uid_t uid;
	unsigned int nclients;
	unsigned int nsources;
	size_t bytes;
	size_t expo;
	size_t out_bytes;
	struct hnode by_uid;
};

/**
 * struct client - one connection on the unix socket
 * @kind: epoll tag, EP_CLIENT
 * @fd: the connection, nonblocking
 * @id: connection number, for logs
 * @pid: SO_PEERCRED pid at connect time
 * @uid: SO_PEERCRED uid
 * @gid: SO_PEERCRED gid
 * @user: its uid's account (NULL for the collector's own: --discover-kvm,
 *	--host)
 * @sources: registered sources
 * @nsources: how many
 * @bytes: sum of its sources' cost
 * @out: queued reply packets
 * @out_tail: last of @out
 * @out_bytes: bytes queued
 * @out_max: limit on @out_bytes (collector.reply_max)
 * @deadline: monotonic ms after which the client is dropped, 0 for none;
 *	set when a reply is queued, not moved by partial progress
 * @refused: not allowed to connect: answered, then hung up; not counted
 *	in collector.nclients
 * @closing: hang up once @out is flushed
 * @shut: hung up (SHUT_WR) and draining what the peer still sends until it
 *	closes: closing a unix socket with unread data would make the peer's
 *	recv() fail with ECONNRESET before it reads our last reply
 * @discovered: stands for a source provider's own sources (a VMM process
 *	found by --discover-kvm, the host's): no connection, @fd is -1, not
 *	in the collector's list; its sources are never put in systemd's fd
 *	store, and give way to a client that registers their VM label
 * @next: in the collector's list
 * @prev: in the collector's list
 * @by_id: in collector.clients_by_id
 * @heap_pos: its place in collector.deadlines plus one, 0 when not there
 */
struct client {
	int kind;
	int fd;
	uint64_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	struct user *user;
	struct source *sources;
	unsigned int nsources;
	size_t bytes;
	struct pkt *out, *out_tail;
	size_t out_bytes;
	size_t out_max;
	uint64_t deadline;
	bool refused;
	bool closing;
	bool shut;
	bool discovered;
	struct client *next, *prev;
	struct hnode by_id;
	unsigned int heap_pos;
};

/*
 * The epoll tags (what an event's data.ptr points at, first): the loop's
 * own fds, the sources', and from EP_PROVIDER on, the fds of each source
 * provider (EP_PROVIDER + its index; its clients' connections are
 * EP_CLIENT).
 */
enum {
	EP_TIMER = 1, EP_SIGNAL, EP_HTTP, EP_CLIENT, EP_SOURCE, EP_PROVIDER,
};

/* Source providers a collector may have. */
#define COLLECTOR_MAX_PROVIDERS	8

#define MAX_IDS			64
/*
 * Entries of one filter array of a query (names, vms, vcpus, providers,
 * a provider's names): a longer one is refused, so a request's matching
 * work is bounded (each is sorted once and searched in O(log n)).
 */
#define QUERY_FILTER_MAX	1024
/*
 * A client's queued reply may not exceed this: a larger one is replaced
 * by an error asking for a narrower query.  With --client-timeout (10 s)
 * as the absolute deadline of a reply, a reader must take 400 KiB/s.
 */
#define COLLECTOR_REPLY_MAX	((size_t)4 << 20)

/**
 * struct render_body - one rendering of the exposition, immutable once made
 * @refs: references: the collector's cache holds one while it is the
 *	current rendering, every HTTP response being sent holds one
 * @pins: HTTP responses still being sent from it (http.c's accounting of
 *	the bytes held by responses, --http-max-held-bytes)
 * @gen: collector.render.gen of this rendering
 * @ops: its format
 * @text: the exposition
 * @len: its length
 * @gz: its gzip encoding, made by http.c on the first request asking for
 *	it, or NULL
 * @gzlen: length of @gz
 * @gz_failed: the encoding failed (too large): served plain
 * @http: the HTTP server whose held bytes count it while @pins is nonzero
 *
 * Every response of a render tick, plain or gzip, is sent from the same
 * body without a copy; the body is freed when the last reference goes,
 * so a slow reader keeps the rendering it started with.
 */
struct render_body {
	unsigned int refs;
	unsigned int pins;
	uint64_t gen;
	const struct expo_ops *ops;
	char *text;
	size_t len;
	char *gz;
	size_t gzlen;
	bool gz_failed;
	struct http_server *http;
};

/**
 * struct render_cache - the current rendering of one format
 * @body: the rendering, NULL before the first
 * @data_gen: collector.data_gen it was made from: stale when that moved
 */
struct render_cache {
	struct render_body *body;
	uint64_t data_gen;
};

/**
 * struct client_policy - who may connect, and how many
 * @allow_uid: uids allowed (--allow-uid)
 * @nallow_uid: how many
 * @allow_gid: gids allowed, primary or supplementary (--allow-gid)
 * @nallow_gid: how many
 * @max_clients: limit on allowed connections (--max-clients)
 */
struct client_policy {
	uid_t allow_uid[MAX_IDS];
	unsigned int nallow_uid;
	gid_t allow_gid[MAX_IDS];
	unsigned int nallow_gid;
	unsigned int max_clients;
};

/**
 * struct stat_rule - one --include or --exclude rule
 * @provider: fnmatch() pattern of the provider label
 * @target: fnmatch() pattern of the target label
 * @stat: fnmatch() pattern of the stat name
 * @include: --include (else --exclude)
 */
struct stat_rule {
	char *provider;
	char *target;
	char *stat;
	bool include;
};

/**
 * struct collector - the daemon
 * @epfd: the event loop
 * @clients: connected clients (allowed and refused)
 * @nclients: allowed ones
 * @nrefused: refused ones still being answered
 * @policy: who may connect
 * @sources: every source
 * @nsources: how many
 * @schemas: distinct schemas
 * @next_client_id: id of the last client
 * @next_source_id: id of the next source
 * @next_schema_id: id of the next schema
 * @max_sources: limit on @nsources
 * @client_max_sources: limit on one client's sources (--client-max-sources)
 * @client_max_bytes: limit on one client's sources' cost (--client-max-bytes)
 * @max_bytes: limit on @bytes (--max-bytes), the global budget
 * @bytes: sum of every source's cost
 * @users: the uids with connections or sources, by uid
 * @by_labels: every source, by provider, target, vm and vcpu (unique)
 * @by_vm: the vm labels of the sources (but the host's), each with its
 *	sources and who holds it (struct vm_label, sources.c)
 * @schema_index: @schemas by descriptors, namespace, provider and target
 * @user_max_sources: limit on one uid's sources (--user-max-sources)
 * @user_max_bytes: limit on one uid's sources' cost (--user-max-bytes)
 * @user_max_expo: limit on one uid's estimated exposition bytes
 *	(--user-max-exposition)
 * @max_expo: limit on @expo (--max-exposition), 0 for none
 * @expo: every source's estimated exposition bytes
 * @max_out_bytes: limit on @out_bytes (--max-reply-bytes), 0 for none
 * @out_bytes: replies queued over every client
 * @files: the open files of the sources, ordered by kcmp(KCMP_FILE)
 *	(tsearch() tree): an fd whose file is already a source is refused
 * @no_kcmp: kcmp() is not available: duplicates are not detected
 * @request_max_us: the longest a request took to handle, in microseconds
 * @listen_fd: the unix socket's listening fd
 * @listen_tag: its epoll tag, or NULL (tests driving clients.c directly)
 * @accept_resume: monotonic ms when accepting resumes after a full fd
 *	table (the socket is out of the epoll set until then), 0 if not paused
 * @nmapped: sources whose values are mapped
 * @max_mapped: limit on @nmapped (--max-mapped); further sources pread
 * @npolled: sources whose fds are in the epoll set
 * @filter: --stats: the names of the only stats read and exported
 * @nfilter: how many (0: every stat)
 * @rules: --include and --exclude rules, in command line order
 * @nrules: how many
 * @no_histograms: --histograms=drop
 * @drop_after: consecutive failed reads after which a source is dropped
 * @accept_memfd: --test-accept-memfd (tests only): memfds are stats fds
 * @dead: sources dropped during the current batch of events
 * @client_timeout_ms: see --client-timeout
 * @reply_max: limit on a client's queued reply, COLLECTOR_REPLY_MAX
 * @data_gen: the data's generation, bumped by every read tick and every
 *	source added or dropped: a cached rendering is stale when it differs
 *	(not to be confused with @render.gen, which counts renderings)
 * @render: the renderings: @render.cache per format (enum expo_id),
 *	@render.gen counts renderings of every format
 * @http: the HTTP server (http.c), or NULL
 * @providers: the source providers (provider.h), in the order they start
 *	and render
 * @nproviders: how many
 * @clients_by_id: @clients by id (their fd store names carry it)
 * @deadlines: the clients with a deadline, earliest first (a binary
 *	heap; struct client.heap_pos is each one's place)
 * @ndeadlines: how many
 * @deadlines_cap: room in @deadlines
 * @sources_by_id: every source, by id (remove-sources)
 * @steps: items the indexes visited (heap levels, hash chain items), so
 *	that tests can bound the work of one operation without timing it
 * @stats: the daemon's own counters, exposed as statsfd_collector_*
 */
struct collector {
	int epfd;
	struct client *clients;
	unsigned int nclients;
	unsigned int nrefused;
	struct client_policy policy;
	struct source *sources;
	unsigned int nsources;
	struct schema *schemas;
	uint64_t next_client_id;
	uint64_t next_source_id;
	unsigned int next_schema_id;
	unsigned int max_sources;
	unsigned int client_max_sources;
	size_t client_max_bytes;
	size_t max_bytes;
	size_t bytes;
	struct htable users;
	struct htable by_labels;
	struct htable by_vm;
	struct htable schema_index;
	unsigned int user_max_sources;
	size_t user_max_bytes;
	size_t user_max_expo;
	size_t max_expo;
	size_t expo;
	size_t max_out_bytes;
	size_t out_bytes;
	void *files;
	bool no_kcmp;
	uint64_t request_max_us;
	int listen_fd;
	void *listen_tag;
	uint64_t accept_resume;
	unsigned int nmapped;
	unsigned int max_mapped;
	unsigned int npolled;
	char **filter;
	unsigned int nfilter;
	struct stat_rule *rules;
	unsigned int nrules;
	bool no_histograms;
	unsigned int drop_after;
	bool accept_memfd;
	struct source *dead;
	unsigned int client_timeout_ms;
	size_t reply_max;
	uint64_t data_gen;
	struct {
		struct render_cache cache[EXPO_NFORMATS];
		uint64_t gen;
	} render;
	struct http_server *http;
	struct provider providers[COLLECTOR_MAX_PROVIDERS];
	unsigned int nproviders;
	struct htable clients_by_id;
	struct client **deadlines;
	unsigned int ndeadlines;
	unsigned int deadlines_cap;
	struct htable sources_by_id;
	uint64_t steps;
	struct {
		uint64_t reads, read_errors, scrapes, clients_refused,
			 clients_dropped, requests, bad_requests, fds_rejected,
			 sources_hung_up, children_changes, sources_failed,
			 quota_refusals, labels_refused, replies_too_large,
			 http_refused, http_evicted, http_deadlines, http_busy,
			 http_auth_busy, http_auth_cpu_ms, duplicates_refused,
			 filters_refused, fd_table_full, changed_refused;
	} stats;
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * The daemon's lists (sources, schemas, clients, HTTP connections, and a
 * source in its schema, client and VM): doubly linked through two
 * members of the item, headed by a pointer.  DLIST_PUSH() makes @item,
 * whose @prev is NULL (zeroed at allocation), the first of @head;
 * DLIST_UNLINK() takes it out.
 */
#define DLIST_PUSH(head, item, next, prev) do {				\
	(item)->next = (head);						\
	if (head)							\
		(head)->prev = (item);					\
	(head) = (item);						\
} while (0)
#define DLIST_UNLINK(head, item, next, prev) do {			\
	*((item)->prev ? &(item)->prev->next : &(head)) = (item)->next;	\
	if ((item)->next)						\
		(item)->next->prev = (item)->prev;			\
} while (0)

/* util.c: the log, the clocks, the indexes, the timers. */
extern int collector_verbose;

__attribute__((format(printf, 1, 2)))
void logmsg(const char *fmt, ...);
uint64_t now_ms(void);
uint64_t wall_ms(void);

#define HASH_INIT	0xcbf29ce484222325ull
uint64_t hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t hash_str(uint64_t h, const char *str);
int htable_reserve(struct htable *t);
void htable_add(struct htable *t, struct hnode *n, uint64_t hash);
void htable_del(struct htable *t, struct hnode *n);
struct hnode *htable_first(const struct htable *t, uint64_t hash);
struct hnode *htable_find(const struct htable *t, uint64_t hash,
			  bool (*match)(const struct hnode *n, const void *key),
			  const void *key, uint64_t *steps);
void *htable_find_id(const struct htable *t, uint64_t id, size_t node_off,
		     size_t id_off, uint64_t *steps);
int interval_timer(struct collector *c, unsigned int ms, void *tag);
int array_grow(void *arr, unsigned int n, unsigned int *cap, size_t size);

/* The epoll set, shared by the loop, the clients and the sources. */
static inline int ep_ctl(struct collector *c, int op, int fd, uint32_t events,
			 void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(c->epfd, op, fd, &ev);
}

/* sources.c: the registered stats fds. */
int add_source(struct collector *c, struct client *cl, int fd,
	       const struct admit_info *info, const struct statsfd_labels *l,
	       char *why, size_t len, struct source **out);
void drop_source(struct collector *c, struct source *s);
void reap_sources(struct collector *c);
void read_sources(struct collector *c);
void source_event(struct collector *c, struct source *s, uint32_t events);
struct source *source_of_file(struct collector *c, int fd);
struct source *source_find(struct collector *c, uint64_t id);
struct source *vm_sources(struct collector *c, const char *vm);
struct user *user_get(struct collector *c, uid_t uid);
void user_put(struct collector *c, struct user *u);
int add_stat_rule(struct collector *c, const char *spec, bool include);
extern const struct opt_table sources_opt_table;

/* clients.c: the unix socket's connections (clients_provider). */
#define CLIENTS_DEFAULT_SOCKET	"/run/statsfd/collector.sock"
const char *clients_socket(void);
int accept_reserve(void);
void accept_clients(struct collector *c, int lfd);
void client_event(struct collector *c, struct client *cl, uint32_t events);
void drop_client(struct collector *c, struct client *cl, const char *why);
struct client *client_find(struct collector *c, uint64_t id);
void check_deadlines(struct collector *c);
int next_deadline_ms(struct collector *c);

/* query.c: the JSON commands; returns the reply to queue. */
struct json_object *handle_request(struct collector *c, struct client *cl,
				   char *json, size_t len, int *fds,
				   unsigned int nfds);

/* render.c: the exposition, in the formats of expo.h. */
char *render_format(struct collector *c, const struct expo_ops *ops,
		    size_t *len);
char *render_metrics(struct collector *c, size_t *len);
const char *render_cached(struct collector *c, size_t *len);
struct render_body *render_body_get(struct collector *c,
				    const struct expo_ops *ops);
void render_body_put(struct render_body *b);
void render_free(struct collector *c);

#endif /* STATSFD_COLLECTOR_H */
