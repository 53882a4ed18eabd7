// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the connections of the unix socket.  Accepting one
 * checks its credentials first; an allowed client's requests are read one
 * at a time (none while a reply is pending), handed to query.c, and the
 * reply queued here, within a per-client byte cap and an absolute
 * deadline per reply.  See "Bad clients" in Documentation/statsfd-collector.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "collector.h"
#include "sd.h"
#include "statsfd_client.h"
#include "statsfd_priv.h"

/*
 * Refused connections being answered (one short error each) at a time;
 * beyond this they are closed unanswered.  They never count toward
 * --max-clients.
 */
#define REFUSED_MAX		64

/* The answer to a message whose fds a full fd table kept out. */
#define FD_TABLE_FULL \
	"the collector's fd table is full (EMFILE): its fds were not received, retry later"

/* @n bytes of replies queued (positive) or gone (negative) for @cl. */
static void charge_out(struct collector *c, struct client *cl, ssize_t n)
{
	cl->out_bytes += (size_t)n;
	c->out_bytes += (size_t)n;
	if (cl->user)
		cl->user->out_bytes += (size_t)n;
}

/*
 * The clients' deadlines, in a binary heap ordered by deadline
 * (collector.deadlines): the loop's look at the earliest and the drop of
 * an expired one cost O(log n) of the connected clients, not a walk of
 * them on every pass.  collector.steps counts the heap levels visited.
 */
static bool heap_before(const struct client *a, const struct client *b)
{
	return a->deadline < b->deadline;
}

static void heap_put(struct collector *c, unsigned int i, struct client *cl)
{
	c->deadlines[i] = cl;
	cl->heap_pos = i + 1;
}

static void heap_up(struct collector *c, unsigned int i)
{
	struct client *cl = c->deadlines[i];

	while (i) {
		unsigned int parent = (i - 1) / 2;

		c->steps++;
		if (!heap_before(cl, c->deadlines[parent]))
			break;
		heap_put(c, i, c->deadlines[parent]);
		i = parent;
	}
	heap_put(c, i, cl);
}

static void heap_down(struct collector *c, unsigned int i)
{
	struct client *cl = c->deadlines[i];

	for (;;) {
		unsigned int l = 2 * i + 1, m = l;

		c->steps++;
		if (l >= c->ndeadlines)
			break;
		if (l + 1 < c->ndeadlines &&
		    heap_before(c->deadlines[l + 1], c->deadlines[l]))
			m = l + 1;
		if (!heap_before(c->deadlines[m], cl))
			break;
		heap_put(c, i, c->deadlines[m]);
		i = m;
	}
	heap_put(c, i, cl);
}

static void heap_remove(struct collector *c, struct client *cl)
{
	unsigned int i = cl->heap_pos - 1;
	struct client *last;

	cl->heap_pos = 0;
	last = c->deadlines[--c->ndeadlines];
	if (last == cl)
		return;
	heap_put(c, i, last);
	heap_up(c, i);
	heap_down(c, last->heap_pos - 1);
}

/*
 * Set @cl's deadline to @when (monotonic ms, 0 for none).  The heap has
 * room for every client (grown as they connect: client_index()), so this
 * cannot fail.
 */
static void set_deadline(struct collector *c, struct client *cl, uint64_t when)
{
	if (cl->heap_pos)
		heap_remove(c, cl);
	cl->deadline = when;
	if (!when || c->ndeadlines >= c->deadlines_cap)
		return;
	heap_put(c, c->ndeadlines++, cl);
	heap_up(c, c->ndeadlines - 1);
}

/* Room in the heap and the id index for @cl: 0, or -ENOMEM. */
static int client_index(struct collector *c, struct client *cl)
{
	if (array_grow(&c->deadlines, c->nclients + c->nrefused,
		       &c->deadlines_cap, sizeof(*c->deadlines)))
		return -ENOMEM;
	if (htable_reserve(&c->clients_by_id))
		return -ENOMEM;
	htable_add(&c->clients_by_id, &cl->by_id,
		   hash_bytes(HASH_INIT, &cl->id, sizeof(cl->id)));
	return 0;
}

/**
 * client_find() - the connected client numbered @id
 * @c: collector
 * @id: its id
 *
 * Return: the client, or NULL.
 */
struct client *client_find(struct collector *c, uint64_t id)
{
	return htable_find_id(&c->clients_by_id, id, offsetof(struct client, by_id),
			      offsetof(struct client, id), &c->steps);
}

/* Renumber @cl (a restored connection takes its old id back). */
static void client_set_id(struct collector *c, struct client *cl, uint64_t id)
{
	htable_del(&c->clients_by_id, &cl->by_id);
	cl->id = id;
	/* The del just made room, unless it freed the buckets. */
	if (htable_reserve(&c->clients_by_id))
		return;
	htable_add(&c->clients_by_id, &cl->by_id,
		   hash_bytes(HASH_INIT, &id, sizeof(id)));
}

/**
 * drop_client() - disconnect @cl and drop every source it registered
 * @c: collector
 * @cl: client, freed
 * @why: for the log
 */
void drop_client(struct collector *c, struct client *cl, const char *why)
{
	struct pkt *p;

	if (collector_verbose || cl->nsources)
		logmsg("client %" PRIu64 " (pid %d uid %u) gone (%s): dropping its %u source%s",
		       cl->id, cl->pid, cl->uid, why, cl->nsources,
		       cl->nsources == 1 ? "" : "s");
	while (cl->sources)
		drop_source(c, cl->sources);
	while ((p = cl->out)) {
		cl->out = p->next;
		charge_out(c, cl, -(ssize_t)p->len);
		free(p);
	}
	if (cl->user) {
		cl->user->nclients--;
		user_put(c, cl->user);
		cl->user = NULL;
	}
	systemd_unstore_client(cl);
	set_deadline(c, cl, 0);
	htable_del(&c->clients_by_id, &cl->by_id);
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	DLIST_UNLINK(c->clients, cl, next, prev);
	if (cl->refused)
		c->nrefused--;
	else
		c->nclients--;
	free(cl);
}

/* What statsfd_msg_pack() calls back with: the client and the collector. */
struct queue_ctx {
	struct collector *c;
	struct client *cl;
};

/*
 * A reply's bytes are charged to its connection (out_max), its uid over
 * all its connections (collector.reply_max) and every client together
 * (--max-reply-bytes): replies nobody reads cannot add up past these.
 */
static int queue_packet(void *arg, const void *data, size_t n)
{
	struct queue_ctx *q = arg;
	struct collector *c = q->c;
	struct client *cl = q->cl;
	struct pkt *p;

	if (cl->out_bytes + n > cl->out_max ||
	    (cl->user && c->reply_max && cl->user->out_bytes + n > c->reply_max) ||
	    (c->max_out_bytes && c->out_bytes + n > c->max_out_bytes))
		return -ENOBUFS;
	p = malloc(sizeof(*p) + n);
	if (!p)
		return -ENOMEM;
	p->next = NULL;
	p->len = n;
	p->off = 0;
	memcpy(p->data, data, n);
	if (cl->out_tail)
		cl->out_tail->next = p;
	else
		cl->out = p;
	cl->out_tail = p;
	charge_out(c, cl, (ssize_t)n);
	return 0;
}

/* Forget the packets queued after @keep (NULL: all of them). */
static void unqueue_after(struct collector *c, struct client *cl,
			  struct pkt *keep)
{
	struct pkt *p = keep ? keep->next : cl->out, *next;

	for (; p; p = next) {
		next = p->next;
		charge_out(c, cl, -(ssize_t)p->len);
		free(p);
	}
	if (keep)
		keep->next = NULL;
	else
		cl->out = NULL;
	cl->out_tail = keep;
}

static int pack_json(struct collector *c, struct client *cl,
		     struct json_object *o)
{
	struct queue_ctx q = { c, cl };
	size_t len;
	const char *s = json_object_to_json_string_length(o,
							  JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE,
							  &len);

	return statsfd_msg_pack(s, len, queue_packet, &q);
}

static struct json_object *error_reply(const char *cls, const char *desc)
{
	struct json_object *r = json_object_new_object();
	struct json_object *e = json_object_new_object();

	json_object_object_add(e, "class", json_object_new_string(cls));
	json_object_object_add(e, "desc", json_object_new_string(desc));
	json_object_object_add(r, "error", e);
	return r;
}

/*
 * Queue @reply (consumed).  One larger than collector.reply_max is replaced
 * by an error, keeping the request's "id": the client learns why.  The
 * deadline of a reply is set when it is queued; progress does not move it.
 */
static void queue_reply(struct collector *c, struct client *cl,
			struct json_object *reply)
{
	struct pkt *tail = cl->out_tail;
	bool was_empty = !cl->out;
	int ret = pack_json(c, cl, reply);

	if (ret == -ENOBUFS) {
		struct json_object *e, *id;
		char msg[128];

		unqueue_after(c, cl, tail);
		c->stats.replies_too_large++;
		snprintf(msg, sizeof(msg),
			 "reply larger than %zu bytes: narrow the query with filters (or read the replies this uid has pending)",
			 c->reply_max);
		e = error_reply("GenericError", msg);
		if (json_object_object_get_ex(reply, "id", &id))
			json_object_object_add(e, "id", json_object_get(id));
		ret = pack_json(c, cl, e);
		json_object_put(e);
	}
	if (ret) {
		/* Never half a reply: the client would wait for the rest. */
		unqueue_after(c, cl, tail);
		logmsg("client %" PRIu64 ": reply cannot be queued, closing", cl->id);
		cl->closing = true;
	}
	if (was_empty && cl->out)
		set_deadline(c, cl, now_ms() + c->client_timeout_ms);
	json_object_put(reply);
}

static void update_events(struct collector *c, struct client *cl)
{
	/* While replies are pending, read no more requests: bounded memory. */
	ep_ctl(c, EPOLL_CTL_MOD, cl->fd,
	       cl->out ? EPOLLOUT | EPOLLRDHUP : EPOLLIN | EPOLLRDHUP, cl);
}

/* An allowed client with sources may stay idle; one without may not. */
static void set_idle_deadline(struct collector *c, struct client *cl)
{
	set_deadline(c, cl, cl->nsources ? 0 : now_ms() + c->client_timeout_ms);
}

/* Return: false when the client was dropped. */
static bool flush_client(struct collector *c, struct client *cl)
{
	struct pkt *p;

	while ((p = cl->out)) {
		ssize_t r = send(cl->fd, p->data, p->len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r < 0) {
			drop_client(c, cl, strerror(errno));
			return false;
		}
		/* SOCK_SEQPACKET: a packet goes whole or not at all. */
		cl->out = p->next;
		if (!cl->out)
			cl->out_tail = NULL;
		charge_out(c, cl, -(ssize_t)p->len);
		free(p);
	}
	if (!cl->out && cl->closing && !cl->shut) {
		shutdown(cl->fd, SHUT_WR);
		cl->shut = true;
		set_deadline(c, cl, now_ms() + c->client_timeout_ms);
		update_events(c, cl);
		return true;
	}
	if (cl->shut)
		return true;
	/* A pending reply keeps the deadline it was queued with. */
	if (!cl->out)
		set_idle_deadline(c, cl);
	update_events(c, cl);
	return true;
}

static void close_fds(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * One recvmsg() of a packet into @pkt and the fds attached to it into
 * @fds (at most STATSFD_MSG_MAX_FDS; any beyond are closed).
 * Return: its length, 0 at end of stream, or -errno.
 */
static ssize_t recv_packet(int fd, char *pkt, size_t size, int *fds,
			   unsigned int *nfds, int *flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * STATSFD_MSG_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = pkt, .iov_len = size };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	ssize_t r;

	*nfds = 0;
	do
		r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	statsfd__msg_fds(&mh, fds, STATSFD_MSG_MAX_FDS, nfds);
	*flags = mh.msg_flags;
	return r;
}

/* Return: false when the client was dropped. */
static bool read_client(struct collector *c, struct client *cl)
{
	static char pkt[STATSFD_MSG_MAX + 1];
	int fds[STATSFD_MSG_MAX_FDS];
	int budget = 16;

	/*
	 * Hung up: discard until the peer closes (or the deadline passes).
	 * Closing a unix socket with unread data would make the peer's recv()
	 * fail with ECONNRESET before it reads our last reply.
	 */
	while (cl->shut) {
		unsigned int nfds;
		int flags;
		ssize_t r = recv_packet(cl->fd, pkt, sizeof(pkt), fds, &nfds, &flags);

		close_fds(fds, nfds);
		if (r == -EAGAIN || r == -EWOULDBLOCK)
			return true;
		if (r <= 0) {
			drop_client(c, cl, "closed by the collector");
			return false;
		}
	}
	while (budget-- > 0 && !cl->out && !cl->closing) {
		struct json_object *reply;
		unsigned int nfds;
		const char *why;
		int flags;
		ssize_t r;

		r = recv_packet(cl->fd, pkt, sizeof(pkt) - 1, fds, &nfds, &flags);
		if (r == -EAGAIN || r == -EWOULDBLOCK)
			break;
		if (r < 0) {
			drop_client(c, cl, strerror((int)-r));
			return false;
		}
		if (r == 0) {
			close_fds(fds, nfds);
			/* The VMM closed its connection: its VMs are gone. */
			drop_client(c, cl, "connection closed");
			return false;
		}
		c->stats.requests++;
		/*
		 * The control buffer holds STATSFD_MSG_MAX_FDS fds: a message
		 * cut short of that lost its fds to a full fd table (the
		 * kernel installs what it can, then sets MSG_CTRUNC), not to
		 * their number.
		 */
		if ((flags & MSG_CTRUNC) && !(flags & MSG_TRUNC) &&
		    nfds < STATSFD_MSG_MAX_FDS) {
			close_fds(fds, nfds);
			c->stats.fd_table_full++;
			queue_reply(c, cl, error_reply("GenericError", FD_TABLE_FULL));
			continue;
		}
		if (flags & (MSG_TRUNC | MSG_CTRUNC)) {
			close_fds(fds, nfds);
			c->stats.bad_requests++;
			queue_reply(c, cl, error_reply("GenericError",
				    flags & MSG_CTRUNC ?
				    "too many fds in one message (at most 253)" :
				    "message larger than 65536 bytes"));
			continue;
		}
		if (statsfd_msg_check(pkt, (size_t)r, 0, &why)) {
			close_fds(fds, nfds);
			c->stats.bad_requests++;
			/* Garbage: answer once and hang up, it is not our protocol. */
			queue_reply(c, cl, error_reply("ProtocolError", why));
			cl->closing = true;
			break;
		}
		pkt[r] = '\0';
		reply = handle_request(c, cl, pkt + STATSFD_MSG_HDR_SIZE,
				       (size_t)r - STATSFD_MSG_HDR_SIZE, fds, nfds);
		queue_reply(c, cl, reply);
	}
	return flush_client(c, cl);
}

/**
 * client_event() - handle the epoll events of @cl
 * @c: collector
 * @cl: client; may be freed
 * @events: what epoll reported
 *
 * A hang-up or half-close means the VMM is gone: what it still sent is
 * read (it may be its last request), then it is dropped.
 */
void client_event(struct collector *c, struct client *cl, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP) && !(events & EPOLLIN)) {
		drop_client(c, cl, "hang-up");
		return;
	}
	if (events & EPOLLOUT && !flush_client(c, cl))
		return;
	if (events & (EPOLLIN | EPOLLRDHUP))
		read_client(c, cl);
}

static bool id_allowed(const struct client_policy *p, uid_t uid, gid_t gid,
		       const gid_t *groups, unsigned int ngroups)
{
	unsigned int i, j;

	for (i = 0; i < p->nallow_uid; i++)
		if (p->allow_uid[i] == uid)
			return true;
	for (i = 0; i < p->nallow_gid; i++) {
		if (p->allow_gid[i] == gid)
			return true;
		for (j = 0; j < ngroups; j++)
			if (p->allow_gid[i] == groups[j])
				return true;
	}
	return false;
}

/*
 * The peer's credentials (SO_PEERCRED) and whether this run's allow lists
 * take it, supplementary groups included (SO_PEERGROUPS), so --allow-gid
 * works as people expect.
 *
 * Return: 1 allowed, 0 not, -1 no credentials (not a peer to keep).
 */
static int peer_allowed(struct collector *c, int fd, struct ucred *cred)
{
	socklen_t sl = sizeof(*cred);
	gid_t groups[256];
	socklen_t gl = sizeof(groups);
	unsigned int ngroups = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &sl))
		return -1;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl))
		ngroups = gl / sizeof(gid_t);
	return id_allowed(&c->policy, cred->uid, cred->gid, groups, ngroups);
}

static struct client *new_client(struct collector *c, int fd,
				 const struct ucred *cred, bool refused)
{
	struct client *cl = calloc(1, sizeof(*cl));

	if (!cl) {
		close(fd);
		return NULL;
	}
	/* Its events go to the provider of the listening socket. */
	cl->kind = c->listen_tag ? *(int *)c->listen_tag : EP_CLIENT;
	cl->fd = fd;
	cl->id = ++c->next_client_id;
	cl->pid = cred->pid;
	cl->uid = cred->uid;
	cl->gid = cred->gid;
	cl->refused = refused;
	cl->out_max = c->reply_max;
	if (client_index(c, cl)) {
		close(fd);
		free(cl);
		return NULL;
	}
	if (!refused) {
		cl->user = user_get(c, cred->uid);
		if (!cl->user) {
			htable_del(&c->clients_by_id, &cl->by_id);
			close(fd);
			free(cl);
			return NULL;
		}
		cl->user->nclients++;
	}
	DLIST_PUSH(c->clients, cl, next, prev);
	if (refused)
		c->nrefused++;
	else
		c->nclients++;
	if (ep_ctl(c, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP, cl)) {
		drop_client(c, cl, "epoll");
		return NULL;
	}
	return cl;
}

/*
 * With the fd table full, accept() fails with EMFILE and the pending
 * connection stays: the listening socket stays readable and the loop
 * would spin on it.  A reserve fd, given up for the moment, lets the
 * connection be accepted and closed at once (the client sees its
 * connection end); then the socket is left out of the loop for
 * ACCEPT_PAUSE_MS, and the log says so at most once a second.
 */
#define ACCEPT_PAUSE_MS		100
static int reserve_fd = -1;

/**
 * accept_reserve() - keep an fd in reserve for accept_clients()
 *
 * Return: 0, or -1 when even that cannot be opened.
 */
int accept_reserve(void)
{
	if (reserve_fd < 0)
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return reserve_fd < 0 ? -1 : 0;
}

static void fd_table_full(struct collector *c, int lfd, int err)
{
	static uint64_t last_log;
	static unsigned long quiet;
	uint64_t now = now_ms();
	int fd;

	c->stats.fd_table_full++;
	if (reserve_fd >= 0) {
		close(reserve_fd);
		reserve_fd = -1;
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			c->stats.clients_refused++;
			close(fd);
		}
		accept_reserve();
	}
	if (now - last_log >= 1000) {
		logmsg("accept: %s: connections closed unanswered%s (%lu since the last line)",
		       strerror(err), c->listen_tag ? ", accepting paused" : "", quiet);
		last_log = now;
		quiet = 0;
	} else {
		quiet++;
	}
	/* Out of the loop for a while: no spinning on a readable socket. */
	if (c->listen_tag && !c->accept_resume &&
	    !epoll_ctl(c->epfd, EPOLL_CTL_DEL, lfd, NULL))
		c->accept_resume = now + ACCEPT_PAUSE_MS;
}

/**
 * accept_clients() - accept every pending connection on @lfd
 * @c: collector
 * @lfd: the listening socket
 *
 * Credentials first: a refused connection gets one PermissionDenied
 * reply (at most REFUSED_MAX of them at a time, the others are closed
 * unanswered) and never counts toward --max-clients; then an allowed one
 * beyond --max-clients is closed.
 */
void accept_clients(struct collector *c, int lfd)
{
	for (;;) {
		struct ucred cred;
		struct client *cl;
		char msg[160];
		int fd, allowed;

		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				fd_table_full(c, lfd, errno);
			return;
		}
		allowed = peer_allowed(c, fd, &cred);
		if (allowed < 0) {
			close(fd);
			continue;
		}
		if (allowed) {
			if (c->nclients >= c->policy.max_clients) {
				c->stats.clients_refused++;
				close(fd);
				continue;
			}
			cl = new_client(c, fd, &cred, false);
			if (!cl)
				continue;
			set_idle_deadline(c, cl);
			if (collector_verbose)
				logmsg("client %" PRIu64 ": pid %d uid %u gid %u connected",
				       cl->id, cl->pid, cl->uid, cl->gid);
			continue;
		}
		c->stats.clients_refused++;
		if (c->nrefused >= REFUSED_MAX) {
			close(fd);
			continue;
		}
		if (collector_verbose)
			logmsg("refused client pid %d uid %u gid %u: not in --allow-uid/--allow-gid",
			       cred.pid, cred.uid, cred.gid);
		cl = new_client(c, fd, &cred, true);
		if (!cl)
			continue;
		snprintf(msg, sizeof(msg), "uid %u gid %u is not allowed to use this collector",
			 cred.uid, cred.gid);
		queue_reply(c, cl, error_reply("PermissionDenied", msg));
		cl->closing = true;
		flush_client(c, cl);
	}
}

/*
 * Take back a connection of the previous run, @fd from systemd's fd store
 * (consumed).  The connection is checked against this run's
 * --allow-uid/--allow-gid and --max-clients first, as a new one would be;
 * a refused one is closed, and the sources it owned go with it.
 *
 * Return: the client, or NULL (closed).
 */
static struct client *adopt_client(struct collector *c, int fd)
{
	struct ucred cred;
	struct client *cl;
	int allowed = peer_allowed(c, fd, &cred);

	if (allowed < 0) {
		close(fd);
		return NULL;
	}
	if (!allowed) {
		c->stats.clients_refused++;
		logmsg("restored client pid %d uid %u gid %u: not in --allow-uid/--allow-gid any more: closed",
		       cred.pid, cred.uid, cred.gid);
		close(fd);
		return NULL;
	}
	if (c->nclients >= c->policy.max_clients) {
		c->stats.clients_refused++;
		logmsg("restored client pid %d uid %u: --max-clients (%u) reached: closed",
		       cred.pid, cred.uid, c->policy.max_clients);
		close(fd);
		return NULL;
	}
	cl = new_client(c, fd, &cred, false);
	if (cl)
		set_idle_deadline(c, cl);
	return cl;
}

/**
 * check_deadlines() - drop the clients whose deadline has passed
 * @c: collector
 *
 * O(log n) per client dropped, and O(1) when none is due.
 */
void check_deadlines(struct collector *c)
{
	uint64_t now = now_ms();
	struct client *cl;

	if (c->accept_resume && c->accept_resume <= now) {
		c->accept_resume = 0;
		ep_ctl(c, EPOLL_CTL_ADD, c->listen_fd, EPOLLIN, c->listen_tag);
	}
	while (c->ndeadlines && (cl = c->deadlines[0])->deadline <= now) {
		c->stats.clients_dropped++;
		drop_client(c, cl, cl->out ? "reply not read in time" :
			    "idle without sources");
	}
}

/**
 * next_deadline_ms() - time until the earliest client deadline
 * @c: collector
 *
 * Return: milliseconds, or -1 when no client has a deadline.
 */
int next_deadline_ms(struct collector *c)
{
	uint64_t now = now_ms(), best = c->accept_resume;

	if (c->ndeadlines && (!best || c->deadlines[0]->deadline < best))
		best = c->deadlines[0]->deadline;
	if (!best)
		return -1;
	return best <= now ? 0 : (int)(best - now);
}

/* ---- restoring the previous run (systemd's fd store) --------------------- */

static char **restore_names;

static int by_source_id(const void *a, const void *b)
{
	const unsigned int *x = a, *y = b;
	uint64_t ix, iy;

	/* Malformed names (no id) first: they are dropped anyway. */
	if (sscanf(restore_names[*x], "src.%" SCNu64, &ix) != 1)
		ix = 0;
	if (sscanf(restore_names[*y], "src.%" SCNu64, &iy) != 1)
		iy = 0;
	return ix < iy ? -1 : ix > iy;
}

/*
 * The stored connections, adopted with their old ids; the indexes of the
 * stored sources go to @order (NULL: out of memory, they are forgotten).
 * Return: how many connections came back.
 */
static unsigned int restore_clients(struct collector *c, int *fds,
				    char **names, unsigned int n,
				    unsigned int *order, unsigned int *nsrc)
{
	unsigned int i, nclients = 0;
	struct client *cl;

	for (i = 0; i < n; i++) {
		uint64_t id;
		int len = 0;

		if (!strncmp(names[i], "src.", 4)) {
			if (order)
				order[(*nsrc)++] = i;
			else
				systemd_forget(i);
			continue;
		}
		if (sscanf(names[i], "cli.%" SCNu64 "%n", &id, &len) != 1 ||
		    names[i][len] || client_find(c, id)) {
			logmsg("systemd: unknown stored fd \"%s\": closed", names[i]);
			systemd_forget(i);
			continue;
		}
		cl = adopt_client(c, fds[i]);
		fds[i] = -1;
		if (!cl) {
			systemd_unstore(names[i]);
			continue;
		}
		client_set_id(c, cl, id);
		if (c->next_client_id < id)
			c->next_client_id = id;
		nclients++;
	}
	return nclients;
}

/*
 * Stored source @i, added again with its old id to its client, through
 * the same admission as at registration: type, caps, quotas.
 * Return: 1 when it came back, 0 when it was refused, -1 when its name
 * or its client is not there (then @id is not set).
 */
static int restore_source(struct collector *c, int *fds, char **names,
			  unsigned int i, uint64_t *id)
{
	struct statsfd_labels l;
	struct admit_info info;
	struct client *cl;
	struct source *s;
	uint64_t client;
	char why[256];
	int fd;

	if (systemd_parse_source_name(names[i], id, &client, &l) || !*id) {
		logmsg("systemd: stored fd \"%s\": not a source name: closed",
		       names[i]);
		systemd_forget(i);
		return -1;
	}
	cl = client_find(c, client);
	if (!cl) {
		/* Its VMM closed the connection while we were down. */
		logmsg("systemd: stored source \"%s\": its client connection is gone: dropped",
		       names[i]);
		systemd_forget(i);
		return -1;
	}
	/*
	 * With --stats the source reads through a new view: the stored fd,
	 * once replaced by the view's, must not stay stored under the same
	 * name as well.
	 */
	if (c->nfilter)
		systemd_unstore(names[i]);
	c->next_source_id = *id - 1;
	fd = fds[i];
	fds[i] = -1;
	if (admit_fd(fd, c->accept_memfd, &info, why, sizeof(why))) {
		close(fd);
		logmsg("systemd: stored source \"%s\": %s: dropped", names[i], why);
		systemd_unstore(names[i]);
		return 0;
	}
	if (add_source(c, cl, fd, &info, &l, why, sizeof(why), &s)) {
		logmsg("systemd: stored source \"%s\": %s: dropped", names[i], why);
		systemd_unstore(names[i]);
		return 0;
	}
	return 1;
}

/*
 * The clients and sources of the previous run (systemd's fd store) come
 * back with the same ids and labels; a source whose client connection did
 * not survive (its VMM closed it while the collector was down) is
 * dropped, as it would have been by a running collector.
 */
static void clients_restore(struct collector *c)
{
	unsigned int i, k, nsrc = 0, nclients, nsources = 0;
	uint64_t max_source = c->next_source_id, id;
	unsigned int *order;
	struct client *cl;
	char **names;
	int *fds, r;
	unsigned int n = systemd_stored(&fds, &names);

	if (!n)
		return;
	order = calloc(n, sizeof(*order));
	/* Connections first: every source names its owner. */
	nclients = restore_clients(c, fds, names, n, order, &nsrc);
	/*
	 * Sources in the order of their ids, each added with its old id, so
	 * that the ids a VMM was given stay valid (remove-sources).
	 */
	restore_names = names;
	if (order)
		qsort(order, nsrc, sizeof(*order), by_source_id);
	for (k = 0; k < nsrc; k++) {
		i = order[k];
		r = restore_source(c, fds, names, i, &id);
		if (r < 0)
			continue;
		nsources += r;
		if (max_source < id)
			max_source = id;
		c->next_source_id = max_source;
	}
	free(order);
	/*
	 * Deadlines from what came back: adopted before their sources, the
	 * connections got an idle deadline; one that owns sources again has
	 * none (a VMM stays silent for as long as its VM runs), one that came
	 * back without any is an idle one.
	 */
	for (cl = c->clients; cl; cl = cl->next)
		set_idle_deadline(c, cl);
	systemd_stored_done();
	logmsg("systemd: restored %u client%s and %u source%s from the fd store",
	       nclients, nclients == 1 ? "" : "s", nsources,
	       nsources == 1 ? "" : "s");
}

/* ---- the clients as a source provider ------------------------------------ */

/**
 * struct clients_conf - the unix socket's flags
 * @socket: its path (--socket)
 * @socket_mode: its permissions (--socket-mode)
 * @socket_group: its group (--socket-group), or NULL
 */
struct clients_conf {
	const char *socket;
	mode_t socket_mode;
	const char *socket_group;
};

static struct clients_conf clients_conf = {
	.socket = CLIENTS_DEFAULT_SOCKET, .socket_mode = 0660,
};

static int parse_ids(const char *list, bool groups, unsigned int *n,
		     unsigned int *out)
{
	char *dup = strdup(list), *tok, *save = NULL, *end;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || end == tok) {
			if (groups) {
				struct group *g = getgrnam(tok);

				if (!g)
					goto bad;
				v = g->gr_gid;
			} else {
				struct passwd *p = getpwnam(tok);

				if (!p)
					goto bad;
				v = p->pw_uid;
			}
		}
		if (*n >= MAX_IDS)
			goto bad;
		out[(*n)++] = (unsigned int)v;
	}
	free(dup);
	return 0;
bad:
	fprintf(stderr, "statsfd-collector: unknown or too many %s: %s\n",
		groups ? "groups" : "users", tok);
	free(dup);
	return -ENOENT;
}

/*
 * Whether a live instance answers on @sun: only then is an existing
 * socket in use; one that refuses the connection is a leftover.
 */
static bool socket_live(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true;
	live = !connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) ||
	       (errno != ECONNREFUSED && errno != ENOENT);
	close(fd);
	return live;
}

/*
 * The unix socket.  Its mode is set on the socket before bind() (bind
 * creates the node with the socket's mode; the umask is cleared for the
 * call), its group with lchown-style fchownat(): neither follows a
 * symlink put at the path.  An existing socket is replaced only if no
 * live instance answers on it; anything else at the path is an error.
 */
static int open_socket(const struct clients_conf *o)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, ret;

	if (strlen(o->socket) >= sizeof(sun.sun_path)) {
		logmsg("%s: path too long", o->socket);
		return -1;
	}
	strcpy(sun.sun_path, o->socket);
	if (!lstat(o->socket, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			logmsg("%s exists and is not a socket: refusing to replace it",
			       o->socket);
			return -1;
		}
		if (socket_live(&sun)) {
			logmsg("%s: another collector is running on it: refusing to start",
			       o->socket);
			return -1;
		}
		unlink(o->socket);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (fchmod(fd, o->socket_mode)) {
		logmsg("%s: fchmod: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	old = umask(0);
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (ret) {
		logmsg("bind %s: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	if (o->socket_group) {
		struct group *g = getgrnam(o->socket_group);

		if (!g || fchownat(AT_FDCWD, o->socket, (uid_t)-1, g->gr_gid,
				   AT_SYMLINK_NOFOLLOW)) {
			logmsg("%s: cannot set group %s", o->socket, o->socket_group);
			close(fd);
			return -1;
		}
	}
	if (listen(fd, 128)) {
		logmsg("%s: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int opt_mode(struct collector *c, void *conf, const char *arg)
{
	unsigned long v;
	char *end;

	v = strtoul(arg, &end, 8);
	if (*end || v > 0777)
		return -EINVAL;
	((struct clients_conf *)conf)->socket_mode = (mode_t)v;
	return 0;
}

static int opt_allow(struct collector *c, bool groups, const char *arg)
{
	if (groups)
		return parse_ids(arg, true, &c->policy.nallow_gid,
				 c->policy.allow_gid);
	return parse_ids(arg, false, &c->policy.nallow_uid,
			 c->policy.allow_uid);
}

static int opt_allow_uid(struct collector *c, void *conf, const char *arg)
{
	return opt_allow(c, false, arg);
}

static int opt_allow_gid(struct collector *c, void *conf, const char *arg)
{
	return opt_allow(c, true, arg);
}

static const struct opt clients_opts[] = {
	OPT_STR_AT("socket", struct clients_conf, socket),
	OPT_CALL("socket-mode", OPT_FN, opt_mode),
	OPT_STR_AT("socket-group", struct clients_conf, socket_group),
	OPT_CALL("allow-uid", OPT_FN, opt_allow_uid),
	OPT_CALL("allow-gid", OPT_FN, opt_allow_gid),
	OPT_C_UINT("max-clients", policy.max_clients, 1, 100000),
	OPT_C_UINT("client-timeout", client_timeout_ms, 10, UINT_MAX),
	OPT_C_UINT("client-max-sources", client_max_sources, 1, 1000000),
	OPT_C_SIZE("client-max-bytes", client_max_bytes, 1024, OPT_SIZE_MAX),
	OPT_C_SIZE("max-reply-bytes", max_out_bytes, 1024, OPT_SIZE_MAX),
	OPT_END,
};

static const struct opt_table clients_opt_table = {
	clients_opts, &clients_conf,
};

/**
 * clients_socket() - the unix socket's path
 *
 * Return: --socket.
 */
const char *clients_socket(void)
{
	return clients_conf.socket;
}

/* Privileged: bind the unix socket (unless systemd passed it). */
static int clients_setup(struct collector *c, struct provider *p)
{
	int fd = systemd_unix_listen_fd();

	if (fd < 0)
		fd = open_socket(&clients_conf);
	if (fd < 0)
		return -1;
	c->listen_fd = fd;
	p->state = &clients_conf;
	return 0;
}

static int clients_start(struct collector *c, struct provider *p)
{
	c->listen_tag = &p->kind;
	if (accept_reserve())
		logmsg("no reserve fd: a full fd table may make accept() retry");
	if (ep_ctl(c, EPOLL_CTL_ADD, c->listen_fd, EPOLLIN, c->listen_tag)) {
		logmsg("setup: %s", strerror(errno));
		return -1;
	}
	/*
	 * The previous run's clients and sources first, with their ids and
	 * labels; discovery (which takes ids and labels too) after them.
	 */
	clients_restore(c);
	return 0;
}

static void clients_event(struct provider *p, void *ptr, uint32_t events)
{
	if (ptr == p->c->listen_tag)
		accept_clients(p->c, p->c->listen_fd);
	else
		client_event(p->c, ptr, events);
}

static void clients_stop(struct provider *p)
{
	struct collector *c = p->c;

	while (c->clients)
		drop_client(c, c->clients, "collector exiting");
	/* Fails harmlessly once unprivileged in a root-owned directory. */
	if (!systemd_owns_socket())
		unlink(clients_conf.socket);
}

const struct source_provider clients_provider = {
	.name = "socket",
	.opts = &clients_opt_table,
	.setup = clients_setup,
	.start = clients_start,
	.event = clients_event,
	.stop = clients_stop,
};
