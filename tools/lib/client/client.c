// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd-client: best-effort registration of stats fds with
 * statsfd-collector, reconnecting with a backoff (statsfd_client.h).
 *
 * Every fd given is an entry that moves through
 *	PENDING -> SENT (add-sources in flight) -> REGISTERED
 * and back to PENDING when the collector refuses the request (retried
 * after the backoff) or the connection is lost (registered again on the
 * next one).  A removed entry that the collector has becomes REMOVE, then
 * REMOVE_SENT, and is freed with the reply, or with the connection,
 * which drops it on the collector's side anyway.  One request is in
 * flight at a time: the collector answers in order, so a reply always
 * belongs to the entries marked as sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "statsfd_client.h"

enum entry_state { E_PENDING, E_SENT, E_REGISTERED, E_REMOVE, E_REMOVE_SENT };

struct entry {
	int user_fd;		/* the caller's fd number, -1 once removed */
	int fd;			/* our duplicate, -1 once removed */
	struct statsfd_labels labels;
	uint64_t id;		/* the collector's source id, once registered */
	enum entry_state state;
	bool removed;		/* removed while its add-sources was in flight */
	struct entry *next;
};

enum request { REQ_NONE, REQ_ADD, REQ_REMOVE };

struct statsfd_client {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int sock;
	struct entry *entries;
	enum request inflight;
	uint64_t reply_deadline;
	uint64_t next_connect;	/* while disconnected */
	uint64_t retry_at;	/* after a refusal: no add-sources before */
	unsigned int backoff_ms;
	bool want_out;		/* a request waits for room in the socket */
	int last_errno;		/* of the last failed connect, logged once */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
	unsigned long connects, refusals;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

__attribute__((format(printf, 2, 3)))
static void logf_(struct statsfd_client *cl, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!cl->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cl->log(cl->log_arg, msg);
}

/* The next delay: doubled each time, reset by a successful registration. */
static unsigned int backoff(struct statsfd_client *cl)
{
	unsigned int d = cl->backoff_ms;

	cl->backoff_ms = d * 2 > STATSFD_CLIENT_BACKOFF_MAX_MS ?
			 STATSFD_CLIENT_BACKOFF_MAX_MS : d * 2;
	return d;
}

struct statsfd_client *statsfd_client_new(const char *path)
{
	struct statsfd_client *cl;

	if (strlen(path) >= sizeof(cl->path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	strcpy(cl->path, path);
	cl->sock = -1;
	cl->backoff_ms = STATSFD_CLIENT_BACKOFF_MIN_MS;
	return cl;
}

void statsfd_client_set_logger(struct statsfd_client *cl,
			       void (*log)(void *arg, const char *msg),
			       void *arg)
{
	cl->log = log;
	cl->log_arg = arg;
}

static void free_entry(struct statsfd_client *cl, struct entry *e)
{
	struct entry **pe;

	for (pe = &cl->entries; *pe; pe = &(*pe)->next) {
		if (*pe == e) {
			*pe = e->next;
			break;
		}
	}
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

int statsfd_client_add(struct statsfd_client *cl, int fd,
		       const struct statsfd_labels *labels)
{
	struct json_object *args, *srcs, *s;
	struct statsfd_labels check;
	struct entry *e, **tail;
	char why[256];
	int r;

	for (e = cl->entries; e; e = e->next)
		if (e->user_fd == fd)
			return -EEXIST;
	/* The collector's own validation, so that a refusal is never ours. */
	args = json_object_new_object();
	srcs = json_object_new_array();
	s = json_object_new_object();
	json_object_object_add(s, "provider", json_object_new_string(labels->provider));
	json_object_object_add(s, "target", json_object_new_string(labels->target));
	json_object_object_add(s, "vm", json_object_new_string(labels->vm));
	if (labels->vcpu >= 0)
		json_object_object_add(s, "vcpu", json_object_new_int(labels->vcpu));
	json_object_array_add(srcs, s);
	json_object_object_add(args, "sources", srcs);
	r = statsfd_json_parse_sources(args, 1, &check, why, sizeof(why));
	json_object_put(args);
	if (r)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (e->fd < 0) {
		r = -errno;
		free(e);
		return r;
	}
	e->user_fd = fd;
	e->labels = check;
	e->state = E_PENDING;
	/* In the order added: that is the order they are sent in. */
	for (tail = &cl->entries; *tail; tail = &(*tail)->next)
		;
	*tail = e;
	return 0;
}

int statsfd_client_remove(struct statsfd_client *cl, int fd)
{
	struct entry *e;

	for (e = cl->entries; e; e = e->next)
		if (e->user_fd == fd)
			break;
	if (!e)
		return -ENOENT;
	e->user_fd = -1;
	close(e->fd);
	e->fd = -1;
	switch (e->state) {
	case E_PENDING:
		free_entry(cl, e);
		break;
	case E_SENT:
		e->removed = true;
		break;
	case E_REGISTERED:
		e->state = E_REMOVE;
		break;
	default:
		break;
	}
	return 0;
}

int statsfd_client_fd(const struct statsfd_client *cl)
{
	return cl->sock;
}

short statsfd_client_events(const struct statsfd_client *cl)
{
	return cl->sock < 0 ? 0 : POLLIN | (cl->want_out ? POLLOUT : 0);
}

static bool has_state(const struct statsfd_client *cl, enum entry_state st)
{
	const struct entry *e;

	for (e = cl->entries; e; e = e->next)
		if (e->state == st)
			return true;
	return false;
}

int statsfd_client_timeout(const struct statsfd_client *cl)
{
	uint64_t now = now_ms(), at = 0;

	if (cl->sock < 0)
		at = cl->next_connect;
	else if (cl->inflight)
		at = cl->reply_deadline;
	else if (cl->want_out)
		return -1;	/* POLLOUT will say */
	else if (has_state(cl, E_REMOVE))
		return 0;
	else if (has_state(cl, E_PENDING))
		at = cl->retry_at;	/* 0: added since the last dispatch */
	else
		return -1;
	return at <= now ? 0 : (int)(at - now);
}

static void disconnect(struct statsfd_client *cl, const char *why)
{
	struct entry *e, *next;
	unsigned int d;

	for (e = cl->entries; e; e = next) {
		next = e->next;
		if (e->state == E_REMOVE || e->state == E_REMOVE_SENT || e->removed)
			free_entry(cl, e);
		else
			e->state = E_PENDING;
	}
	close(cl->sock);
	cl->sock = -1;
	cl->inflight = REQ_NONE;
	cl->want_out = false;
	cl->retry_at = 0;
	d = backoff(cl);
	cl->next_connect = now_ms() + d;
	logf_(cl, "collector %s: %s; reconnecting in %u ms", cl->path, why, d);
}

static void try_connect(struct statsfd_client *cl)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct entry *e, *next;
	unsigned int d;
	int s;

	strcpy(sun.sun_path, cl->path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s >= 0 && !connect(s, (struct sockaddr *)&sun, sizeof(sun))) {
		cl->sock = s;
		cl->connects++;
		cl->last_errno = 0;
		logf_(cl, "collector %s: connected", cl->path);
		/* Removed while disconnected: the collector never had them. */
		for (e = cl->entries; e; e = next) {
			next = e->next;
			if (e->state == E_REMOVE || e->state == E_REMOVE_SENT)
				free_entry(cl, e);
		}
		return;
	}
	if (s >= 0)
		close(s);
	d = backoff(cl);
	cl->next_connect = now_ms() + d;
	/* Each new reason once, not every attempt. */
	if (errno != cl->last_errno)
		logf_(cl, "collector %s: %s; retrying every %u..%u ms", cl->path,
		      strerror(errno), d, STATSFD_CLIENT_BACKOFF_MAX_MS);
	cl->last_errno = errno;
}

/* A VM gone for its VMM hangs its stats fds up: never registered again. */
static void drop_hung_up(struct statsfd_client *cl)
{
	struct entry *e, *next;

	for (e = cl->entries; e; e = next) {
		struct pollfd p = { .fd = e->fd, .events = POLLIN };

		next = e->next;
		if (e->state != E_PENDING || poll(&p, 1, 0) != 1 ||
		    !(p.revents & (POLLHUP | POLLNVAL)))
			continue;
		logf_(cl, "stats fd %d (%s %s vm \"%s\"): hung up, not registered again",
		      e->user_fd, e->labels.provider, e->labels.target, e->labels.vm);
		free_entry(cl, e);
	}
}

/* Send @req with @fds; Return: 0, 1 to wait for POLLOUT, -1 when lost. */
static int send_request(struct statsfd_client *cl, struct json_object *req,
			const int *fds, unsigned int nfds)
{
	size_t len;
	const char *s = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN,
							  &len);
	int r = statsfd_msg_send(cl->sock, s, len, fds, nfds);

	json_object_put(req);
	if (r == -EAGAIN) {
		cl->want_out = true;
		return 1;
	}
	if (r) {
		disconnect(cl, strerror(-r));
		return -1;
	}
	cl->want_out = false;
	cl->reply_deadline = now_ms() + STATSFD_CLIENT_REPLY_TIMEOUT_MS;
	return 0;
}

static void send_next(struct statsfd_client *cl)
{
	struct json_object *args, *arr;
	int fds[STATSFD_MSG_MAX_FDS];
	unsigned int n = 0;
	struct entry *e;

	if (has_state(cl, E_REMOVE)) {
		args = json_object_new_object();
		arr = json_object_new_array();
		for (e = cl->entries; e; e = e->next)
			if (e->state == E_REMOVE)
				json_object_array_add(arr, json_object_new_uint64(e->id));
		json_object_object_add(args, "sources", arr);
		if (send_request(cl, statsfd_json_request("remove-sources", args),
				 NULL, 0))
			return;
		for (e = cl->entries; e; e = e->next)
			if (e->state == E_REMOVE)
				e->state = E_REMOVE_SENT;
		cl->inflight = REQ_REMOVE;
		return;
	}
	if (cl->retry_at && now_ms() < cl->retry_at)
		return;
	cl->retry_at = 0;
	drop_hung_up(cl);
	if (!has_state(cl, E_PENDING))
		return;
	args = json_object_new_object();
	arr = json_object_new_array();
	for (e = cl->entries; e && n < STATSFD_MSG_MAX_FDS; e = e->next) {
		struct json_object *s;

		if (e->state != E_PENDING)
			continue;
		s = json_object_new_object();
		json_object_object_add(s, "provider", json_object_new_string(e->labels.provider));
		json_object_object_add(s, "target", json_object_new_string(e->labels.target));
		json_object_object_add(s, "vm", json_object_new_string(e->labels.vm));
		if (e->labels.vcpu >= 0)
			json_object_object_add(s, "vcpu", json_object_new_int(e->labels.vcpu));
		json_object_array_add(arr, s);
		fds[n++] = e->fd;
	}
	json_object_object_add(args, "sources", arr);
	if (send_request(cl, statsfd_json_request("add-sources", args), fds, n))
		return;
	n = 0;
	for (e = cl->entries; e && n < STATSFD_MSG_MAX_FDS; e = e->next) {
		if (e->state == E_PENDING) {
			e->state = E_SENT;
			n++;
		}
	}
	cl->inflight = REQ_ADD;
}

static void added(struct statsfd_client *cl, struct json_object *reply)
{
	struct json_object *ret, *ids, *err, *desc;
	struct entry *e, *next;
	unsigned int n = 0, i = 0;
	unsigned int d;

	for (e = cl->entries; e; e = e->next)
		n += e->state == E_SENT;
	if (json_object_object_get_ex(reply, "return", &ret) &&
	    json_object_object_get_ex(ret, "sources", &ids) &&
	    json_object_is_type(ids, json_type_array) &&
	    json_object_array_length(ids) == n) {
		for (e = cl->entries; e; e = next) {
			next = e->next;
			if (e->state != E_SENT)
				continue;
			e->id = json_object_get_uint64(json_object_array_get_idx(ids, i++));
			e->state = e->removed ? E_REMOVE : E_REGISTERED;
		}
		cl->backoff_ms = STATSFD_CLIENT_BACKOFF_MIN_MS;
		cl->retry_at = 0;
		logf_(cl, "collector %s: %u stats fd%s registered", cl->path, n,
		      n == 1 ? "" : "s");
		return;
	}
	/* Refused (all or nothing): the same request again, later. */
	cl->refusals++;
	for (e = cl->entries; e; e = next) {
		next = e->next;
		if (e->state != E_SENT)
			continue;
		if (e->removed)
			free_entry(cl, e);
		else
			e->state = E_PENDING;
	}
	d = backoff(cl);
	cl->retry_at = now_ms() + d;
	desc = NULL;
	if (json_object_object_get_ex(reply, "error", &err))
		json_object_object_get_ex(err, "desc", &desc);
	logf_(cl, "collector %s refused %u stats fd%s: %s; retrying in %u ms",
	      cl->path, n, n == 1 ? "" : "s",
	      desc ? json_object_get_string(desc) : "unexpected reply", d);
}

static void handle_reply(struct statsfd_client *cl, const char *json)
{
	struct json_object *reply = json_tokener_parse(json);
	struct entry *e, *next;

	if (cl->inflight == REQ_ADD) {
		added(cl, reply);
	} else if (cl->inflight == REQ_REMOVE) {
		for (e = cl->entries; e; e = next) {
			next = e->next;
			if (e->state == E_REMOVE_SENT)
				free_entry(cl, e);
		}
	}
	cl->inflight = REQ_NONE;
	json_object_put(reply);
}

void statsfd_client_dispatch(struct statsfd_client *cl)
{
	if (cl->sock < 0) {
		if (now_ms() < cl->next_connect)
			return;
		try_connect(cl);
		if (cl->sock < 0)
			return;
	}
	for (;;) {
		char *json;
		size_t len;
		int r = statsfd_msg_recv(cl->sock, &json, &len, NULL, NULL, 0);

		if (r == -ETIMEDOUT)
			break;
		if (r) {
			disconnect(cl, r == -ECONNRESET ? "connection closed" :
				   strerror(-r));
			return;
		}
		handle_reply(cl, json);
		free(json);
	}
	if (cl->inflight && now_ms() >= cl->reply_deadline) {
		disconnect(cl, "no reply in time");
		return;
	}
	if (!cl->inflight)
		send_next(cl);
}

void statsfd_client_status(const struct statsfd_client *cl,
			   struct statsfd_client_status *st)
{
	const struct entry *e;

	memset(st, 0, sizeof(*st));
	st->connected = cl->sock >= 0;
	for (e = cl->entries; e; e = e->next) {
		if (e->user_fd < 0)
			continue;
		st->sources++;
		st->registered += e->state == E_REGISTERED;
	}
	st->connects = cl->connects;
	st->refusals = cl->refusals;
}

void statsfd_client_free(struct statsfd_client *cl)
{
	if (!cl)
		return;
	while (cl->entries)
		free_entry(cl, cl->entries);
	if (cl->sock >= 0)
		close(cl->sock);
	free(cl);
}
