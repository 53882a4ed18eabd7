// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: collects binary stats fds that VMMs hand over a unix
 * socket, reads them periodically, and serves Prometheus text over HTTP and
 * a JSON query protocol on the unix socket.
 *
 * One thread, one epoll loop: the listening socket, every client, a
 * timerfd for the reads, a signalfd and libmicrohttpd's own epoll fd.  All
 * client sockets are nonblocking with bounded buffers and deadlines, and
 * scrapes are served from the values of the last read, so no client, fast
 * or slow, can hold up a scrape.  See Documentation/statsfd-tools.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "sd.h"
#include "statsfd_msg.h"

#define DEFAULT_SOCKET		"/run/statsfd/collector.sock"
#define DEFAULT_LISTEN		"127.0.0.1:9477"
/* A client's queued replies may not exceed this; it is dropped instead. */
#define CLIENT_OUT_MAX		(64u << 20)
#define MAX_IDS			64

struct options {
	const char *socket;
	const char *listen;
	const char *user;
	const char *socket_group;
	const char *port_file;
	mode_t socket_mode;
	unsigned int interval_ms;
	unsigned int max_clients;
	uid_t allow_uid[MAX_IDS];
	unsigned int nallow_uid;
	gid_t allow_gid[MAX_IDS];
	unsigned int nallow_gid;
};

static const char usage[] =
"usage: statsfd-collector [OPTIONS]\n"
"  --socket PATH         unix socket for VMMs and queries (default " DEFAULT_SOCKET ")\n"
"  --socket-mode MODE    its permissions, octal (default 0660)\n"
"  --socket-group GROUP  its group (default: unchanged)\n"
"  --listen ADDR:PORT    HTTP for Prometheus (default " DEFAULT_LISTEN "; 'none' disables;\n"
"                        port 0 picks a free port, see --port-file)\n"
"  --port-file FILE      write the HTTP port here once ready\n"
"  --user USER           drop to this user after binding (default nobody; '' keeps)\n"
"  --allow-uid LIST      uids (names or numbers, comma-separated) that may connect\n"
"  --allow-gid LIST      gids whose members may connect (primary or supplementary)\n"
"                        (default: uid 0 and the user the daemon runs as)\n"
"  --interval MS         read every source this often (default 500)\n"
"  --max-sources N       (default 65536)\n"
"  --max-mapped N        map the values of at most N sources, read the others\n"
"                        with pread; each mapping is one memory map of the\n"
"                        process (default 16384, 0: none)\n"
"  --max-clients N       (default 1024)\n"
"  --stats NAME,...      read and export only these stats, through a view of\n"
"                        each source (filtered here where the fd has none)\n"
"  --client-timeout MS   drop a client that registered nothing and is idle, or\n"
"                        whose replies make no progress, after this (default 10000)\n"
"  --verbose\n";

static int ep_ctl(struct collector *c, int op, int fd, uint32_t events,
		  void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(c->epfd, op, fd, &ev);
}

/* ---- clients ---------------------------------------------------------- */

static void drop_client(struct collector *c, struct client *cl,
			const char *why)
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
		free(p);
	}
	systemd_unstore_client(cl);
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		c->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	c->nclients--;
	free(cl);
}

static int queue_packet(void *arg, const void *data, size_t n)
{
	struct client *cl = arg;
	struct pkt *p;

	if (cl->out_bytes + n > CLIENT_OUT_MAX)
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
	cl->out_bytes += n;
	return 0;
}

static void update_events(struct collector *c, struct client *cl)
{
	/* While replies are pending, read no more requests: bounded memory. */
	ep_ctl(c, EPOLL_CTL_MOD, cl->fd,
	       cl->out ? EPOLLOUT | EPOLLRDHUP : EPOLLIN | EPOLLRDHUP, cl);
}

static void set_idle_deadline(struct collector *c, struct client *cl)
{
	cl->deadline = cl->nsources ? 0 : now_ms() + c->client_timeout_ms;
}

/* Return: false when the client was dropped. */
static bool flush_client(struct collector *c, struct client *cl)
{
	struct pkt *p;
	bool progress = false;

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
		cl->out_bytes -= p->len;
		free(p);
		progress = true;
	}
	if (!cl->out && cl->closing && !cl->shut) {
		shutdown(cl->fd, SHUT_WR);
		cl->shut = true;
		cl->deadline = now_ms() + c->client_timeout_ms;
		update_events(c, cl);
		return true;
	}
	if (cl->shut)
		return true;
	if (cl->out) {
		if (progress || !cl->deadline)
			cl->deadline = now_ms() + c->client_timeout_ms;
	} else {
		set_idle_deadline(c, cl);
	}
	update_events(c, cl);
	return true;
}

void queue_reply(struct collector *c, struct client *cl,
		 struct json_object *reply)
{
	size_t len;
	const char *s = json_object_to_json_string_length(reply,
							  JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE,
							  &len);

	if (statsfd_msg_pack(s, len, queue_packet, cl)) {
		logmsg("client %" PRIu64 ": reply too large or out of memory, closing",
		       cl->id);
		cl->closing = true;
	}
	json_object_put(reply);
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

static void close_fds(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* Return: false when the client was dropped. */
static bool read_client(struct collector *c, struct client *cl)
{
	static char pkt[STATSFD_MSG_MAX + 1];
	union {
		char buf[CMSG_SPACE(sizeof(int) * STATSFD_MSG_MAX_FDS)];
		struct cmsghdr align;
	} u;
	int budget = 16;

	if (cl->shut) {
		/* Discard until the peer closes (or the deadline passes). */
		for (;;) {
			struct iovec iov = { .iov_base = pkt, .iov_len = sizeof(pkt) };
			struct msghdr mh = {
				.msg_iov = &iov, .msg_iovlen = 1,
				.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
			};
			struct cmsghdr *cm;
			ssize_t r = recvmsg(cl->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

			for (cm = r >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
				size_t i, n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fd;

				for (i = 0; cm->cmsg_type == SCM_RIGHTS && i < n; i++) {
					memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
					close(fd);
				}
			}
			if (r > 0 || (r < 0 && errno == EINTR))
				continue;
			if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
				drop_client(c, cl, "closed by the collector");
				return false;
			}
			return true;
		}
	}
	while (budget-- > 0 && !cl->out && !cl->closing) {
		struct iovec iov = { .iov_base = pkt, .iov_len = sizeof(pkt) - 1 };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
		};
		int fds[STATSFD_MSG_MAX_FDS];
		unsigned int nfds = 0;
		struct cmsghdr *cm;
		const char *why;
		ssize_t r;

		r = recvmsg(cl->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r < 0) {
			drop_client(c, cl, strerror(errno));
			return false;
		}
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t i, n;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < n && nfds < STATSFD_MSG_MAX_FDS; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(int));
		}
		if (r == 0) {
			close_fds(fds, nfds);
			/* The VMM closed its connection: its VMs are gone. */
			drop_client(c, cl, "connection closed");
			return false;
		}
		c->stats.requests++;
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
			close_fds(fds, nfds);
			c->stats.bad_requests++;
			queue_reply(c, cl, error_reply("GenericError",
				    mh.msg_flags & MSG_CTRUNC ?
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
		handle_request(c, cl, pkt + STATSFD_MSG_HDR_SIZE,
			       (size_t)r - STATSFD_MSG_HDR_SIZE, fds, nfds);
	}
	return flush_client(c, cl);
}

static bool id_allowed(const struct options *o, uid_t uid, gid_t gid,
		       const gid_t *groups, unsigned int ngroups)
{
	unsigned int i, j;

	for (i = 0; i < o->nallow_uid; i++)
		if (o->allow_uid[i] == uid)
			return true;
	for (i = 0; i < o->nallow_gid; i++) {
		if (o->allow_gid[i] == gid)
			return true;
		for (j = 0; j < ngroups; j++)
			if (o->allow_gid[i] == groups[j])
				return true;
	}
	return false;
}

/*
 * Adopt the connection @fd (consumed) as a client, in the epoll set; its
 * pid, uid and gid are the peer's at connect time (SO_PEERCRED), also for
 * a connection restored from systemd's fd store.  Return: NULL on failure.
 */
static struct client *client_new(struct collector *c, int fd)
{
	struct ucred cred;
	socklen_t sl = sizeof(cred);
	struct client *cl;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl)) {
		close(fd);
		return NULL;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return NULL;
	}
	cl->kind = EP_CLIENT;
	cl->fd = fd;
	cl->id = ++c->next_client_id;
	cl->pid = cred.pid;
	cl->uid = cred.uid;
	cl->gid = cred.gid;
	cl->next = c->clients;
	if (c->clients)
		c->clients->prev = cl;
	c->clients = cl;
	c->nclients++;
	if (ep_ctl(c, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP, cl)) {
		drop_client(c, cl, "epoll");
		return NULL;
	}
	return cl;
}

/*
 * systemd_restore(): a connection of the previous run, allowed again by
 * this run's --allow-uid/--allow-gid before it is adopted (a refused one
 * is closed: its sources go with it).
 */
static struct client *adopt_client(struct collector *c, int fd, void *arg)
{
	const struct options *o = arg;
	struct ucred cred;
	socklen_t sl = sizeof(cred);
	gid_t groups[256];
	socklen_t gl = sizeof(groups);
	unsigned int ngroups = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl)) {
		close(fd);
		return NULL;
	}
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl))
		ngroups = gl / sizeof(gid_t);
	if (!id_allowed(o, cred.uid, cred.gid, groups, ngroups)) {
		c->stats.clients_refused++;
		logmsg("restored client pid %d uid %u gid %u: not in --allow-uid/--allow-gid any more: closed",
		       cred.pid, cred.uid, cred.gid);
		close(fd);
		return NULL;
	}
	return client_new(c, fd);
}

static void accept_clients(struct collector *c, int lfd,
			   const struct options *o)
{
	for (;;) {
		struct ucred cred;
		socklen_t sl = sizeof(cred);
		gid_t groups[256];
		socklen_t gl = sizeof(groups);
		struct client *cl;
		unsigned int ngroups = 0;
		int fd;

		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				logmsg("accept: %s", strerror(errno));
			return;
		}
		if (c->nclients >= o->max_clients) {
			c->stats.clients_refused++;
			close(fd);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl)) {
			close(fd);
			continue;
		}
		/* Supplementary groups too, so --allow-gid works as people expect. */
		if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl))
			ngroups = gl / sizeof(gid_t);
		cl = client_new(c, fd);
		if (!cl)
			continue;
		if (!id_allowed(o, cred.uid, cred.gid, groups, ngroups)) {
			char msg[160];

			c->stats.clients_refused++;
			logmsg("refused client pid %d uid %u gid %u: not in --allow-uid/--allow-gid",
			       cred.pid, cred.uid, cred.gid);
			snprintf(msg, sizeof(msg), "uid %u gid %u is not allowed to use this collector",
				 cred.uid, cred.gid);
			queue_reply(c, cl, error_reply("PermissionDenied", msg));
			cl->closing = true;
			flush_client(c, cl);
			continue;
		}
		set_idle_deadline(c, cl);
		if (collector_verbose)
			logmsg("client %" PRIu64 ": pid %d uid %u gid %u connected",
			       cl->id, cl->pid, cl->uid, cl->gid);
	}
}

static void check_deadlines(struct collector *c)
{
	uint64_t now = now_ms();
	struct client *cl, *next;

	for (cl = c->clients; cl; cl = next) {
		next = cl->next;
		if (cl->deadline && cl->deadline <= now) {
			c->stats.clients_dropped++;
			drop_client(c, cl, cl->out ? "replies not read in time" :
				    "idle without sources");
		}
	}
}

static int next_deadline_ms(struct collector *c)
{
	uint64_t now = now_ms(), best = 0;
	struct client *cl;

	for (cl = c->clients; cl; cl = cl->next)
		if (cl->deadline && (!best || cl->deadline < best))
			best = cl->deadline;
	if (!best)
		return -1;
	return best <= now ? 0 : (int)(best - now);
}

/* ---- setup ------------------------------------------------------------ */

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
	return -1;
}

static int open_socket(const struct options *o)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd;

	if (strlen(o->socket) >= sizeof(sun.sun_path)) {
		logmsg("%s: path too long", o->socket);
		return -1;
	}
	strcpy(sun.sun_path, o->socket);
	/* A stale socket from a previous run; never remove anything else. */
	if (!lstat(o->socket, &st) && S_ISSOCK(st.st_mode))
		unlink(o->socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		umask(old);
		logmsg("bind %s: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	if (o->socket_group) {
		struct group *g = getgrnam(o->socket_group);

		if (!g || chown(o->socket, (uid_t)-1, g->gr_gid)) {
			logmsg("%s: cannot set group %s", o->socket, o->socket_group);
			close(fd);
			return -1;
		}
	}
	if (chmod(o->socket, o->socket_mode) || listen(fd, 128)) {
		logmsg("%s: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void raise_nofile(unsigned int want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_max < want && geteuid() == 0) {
		struct rlimit r2 = { want, want };

		if (!setrlimit(RLIMIT_NOFILE, &r2))
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int drop_privileges(const char *user)
{
	struct passwd *pw;

	if (!user || !*user)
		return 0;
	pw = getpwnam(user);
	if (!pw) {
		logmsg("--user %s: no such user", user);
		return -1;
	}
	if (geteuid() != 0) {
		if (geteuid() == pw->pw_uid)
			return 0;
		logmsg("--user %s: not running as root, cannot switch", user);
		return -1;
	}
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
		logmsg("dropping to %s: %s", user, strerror(errno));
		return -1;
	}
	if (!setuid(0) || geteuid() == 0) {
		logmsg("dropping to %s: could regain root, refusing to run", user);
		return -1;
	}
	return 0;
}

/* --stats a,b (repeatable): each name once, in order. */
static int parse_stats(struct collector *c, const char *csv)
{
	char *dup = strdup(csv), *tok, *save = NULL, **f;
	unsigned int i;

	if (!dup)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < c->nfilter; i++)
			if (!strcmp(c->filter[i], tok))
				break;
		if (i < c->nfilter)
			continue;
		if (strlen(tok) >= STATSFD_LIB_NAME_SIZE_MAX || c->nfilter >= 4096)
			goto bad;
		f = realloc(c->filter, (c->nfilter + 1) * sizeof(*f));
		if (!f)
			goto bad;
		c->filter = f;
		c->filter[c->nfilter] = strdup(tok);
		if (!c->filter[c->nfilter])
			goto bad;
		c->nfilter++;
	}
	free(dup);
	return c->nfilter ? 0 : -1;
bad:
	free(dup);
	return -1;
}

static int parse_args(int argc, char **argv, struct options *o,
		      struct collector *c)
{
	enum {
		O_SOCKET = 256, O_MODE, O_GROUP, O_LISTEN, O_PORTFILE, O_USER,
		O_AUID, O_AGID, O_INTERVAL, O_MAXSRC, O_MAXCL, O_TIMEOUT, O_VERBOSE,
		O_MAXMAP, O_STATS,
	};
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "socket-mode", required_argument, NULL, O_MODE },
		{ "socket-group", required_argument, NULL, O_GROUP },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "port-file", required_argument, NULL, O_PORTFILE },
		{ "user", required_argument, NULL, O_USER },
		{ "allow-uid", required_argument, NULL, O_AUID },
		{ "allow-gid", required_argument, NULL, O_AGID },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "max-sources", required_argument, NULL, O_MAXSRC },
		{ "max-mapped", required_argument, NULL, O_MAXMAP },
		{ "max-clients", required_argument, NULL, O_MAXCL },
		{ "stats", required_argument, NULL, O_STATS },
		{ "client-timeout", required_argument, NULL, O_TIMEOUT },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "hv", lo, NULL)) != -1) {
		switch (opt) {
		case O_SOCKET:
			o->socket = optarg;
			break;
		case O_MODE:
			v = strtoul(optarg, &end, 8);
			if (*end || v > 0777)
				goto bad;
			o->socket_mode = (mode_t)v;
			break;
		case O_GROUP:
			o->socket_group = optarg;
			break;
		case O_LISTEN:
			o->listen = optarg;
			break;
		case O_PORTFILE:
			o->port_file = optarg;
			break;
		case O_USER:
			o->user = optarg;
			break;
		case O_AUID:
			if (parse_ids(optarg, false, &o->nallow_uid, o->allow_uid))
				return -1;
			break;
		case O_AGID:
			if (parse_ids(optarg, true, &o->nallow_gid, o->allow_gid))
				return -1;
			break;
		case O_INTERVAL:
			v = strtoul(optarg, &end, 10);
			if (*end || v < 10 || v > 3600000)
				goto bad;
			o->interval_ms = (unsigned int)v;
			break;
		case O_MAXSRC:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 1000000)
				goto bad;
			c->max_sources = (unsigned int)v;
			break;
		case O_MAXMAP:
			v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v > 1000000)
				goto bad;
			c->max_mapped = (unsigned int)v;
			break;
		case O_MAXCL:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 100000)
				goto bad;
			o->max_clients = (unsigned int)v;
			break;
		case O_TIMEOUT:
			v = strtoul(optarg, &end, 10);
			if (*end || v < 10)
				goto bad;
			c->client_timeout_ms = (unsigned int)v;
			break;
		case O_STATS:
			if (parse_stats(c, optarg))
				goto bad;
			break;
		case 'v':
		case O_VERBOSE:
			collector_verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "statsfd-collector: unexpected argument %s\n%s",
			argv[optind], usage);
		return -1;
	}
	return 0;
bad:
	fprintf(stderr, "statsfd-collector: bad value '%s'\n%s", optarg, usage);
	return -1;
}

int main(int argc, char **argv)
{
	struct options o = {
		.socket = DEFAULT_SOCKET, .listen = DEFAULT_LISTEN,
		.user = "nobody", .socket_mode = 0660, .interval_ms = 500,
		.max_clients = 1024,
	};
	struct collector c = {
		.max_sources = 65536, .max_mapped = 16384,
		.client_timeout_ms = 10000,
	};
	int tag_listen = EP_LISTEN, tag_timer = EP_TIMER, tag_signal = EP_SIGNAL;
	struct itimerspec its = { 0 };
	unsigned int port = 0;
	sigset_t mask;
	int lfd, tfd, sfd, ret = 1;
	FILE *port_file = NULL;
	struct passwd *pw;

	if (parse_args(argc, argv, &o, &c))
		return 2;
	/* Default allow list: root and the user we will run as. */
	if (!o.nallow_uid && !o.nallow_gid) {
		o.allow_uid[o.nallow_uid++] = 0;
		pw = o.user && *o.user ? getpwnam(o.user) : NULL;
		o.allow_uid[o.nallow_uid++] = pw ? pw->pw_uid : geteuid();
	}
	raise_nofile(c.max_sources + o.max_clients + 256);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	c.epfd = epoll_create1(EPOLL_CLOEXEC);
	lfd = systemd_unix_listen_fd() >= 0 ? systemd_unix_listen_fd() : open_socket(&o);
	if (c.epfd < 0 || lfd < 0)
		return 1;
	if (strcmp(o.listen, "none") && http_start(&c, o.listen, &port))
		goto out_unlink;
	/* Opened while privileged, written once everything is set up. */
	if (o.port_file) {
		port_file = fopen(o.port_file, "we");
		if (!port_file) {
			logmsg("%s: %s", o.port_file, strerror(errno));
			goto out_http;
		}
	}
	/* Everything privileged is done: sockets are bound. */
	if (drop_privileges(o.user))
		goto out_http;
	/* Same-uid processes must not ptrace us or pidfd_getfd the VMs' fds. */
	prctl(PR_SET_DUMPABLE, 0);

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	its.it_interval.tv_sec = o.interval_ms / 1000;
	its.it_interval.tv_nsec = (long)(o.interval_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	if (tfd < 0 || sfd < 0 || timerfd_settime(tfd, 0, &its, NULL) ||
	    ep_ctl(&c, EPOLL_CTL_ADD, lfd, EPOLLIN, &tag_listen) ||
	    ep_ctl(&c, EPOLL_CTL_ADD, tfd, EPOLLIN, &tag_timer) ||
	    ep_ctl(&c, EPOLL_CTL_ADD, sfd, EPOLLIN, &tag_signal)) {
		logmsg("setup: %s", strerror(errno));
		goto out_http;
	}
	if (port_file && (fprintf(port_file, "%u\n", port) < 0 || fclose(port_file))) {
		port_file = NULL;
		logmsg("%s: cannot write", o.port_file);
		goto out_http;
	}
	port_file = NULL;
	systemd_restore(&c, adopt_client, &o);
	systemd_ready(&c);
	logmsg("ready: socket %s, http %s (port %u), uid %u, interval %u ms%s",
	       o.socket, o.listen, port, geteuid(), o.interval_ms,
	       c.nfilter ? ", reading only the --stats" : "");

	for (;;) {
		struct epoll_event ev[64];
		int n, i, t = next_deadline_ms(&c), h = http_timeout(&c);

		if (h >= 0 && (t < 0 || h < t))
			t = h;
		t = systemd_watchdog(t);
		n = epoll_wait(c.epfd, ev, 64, t);
		if (n < 0 && errno != EINTR) {
			logmsg("epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			int kind = *(int *)ev[i].data.ptr;

			if (kind == EP_LISTEN) {
				accept_clients(&c, lfd, &o);
			} else if (kind == EP_TIMER) {
				uint64_t ticks;

				if (read(tfd, &ticks, sizeof(ticks)) > 0)
					read_sources(&c);
			} else if (kind == EP_SOURCE) {
				/* A hangup or a change of children: O(1). */
				source_event(&c, ev[i].data.ptr, ev[i].events);
			} else if (kind == EP_SIGNAL) {
				logmsg("signal received, exiting");
				ret = 0;
				goto out_clients;
			} else if (kind == EP_CLIENT) {
				struct client *cl = ev[i].data.ptr;

				/*
				 * Safe to use @cl: clients are freed only while
				 * handling their own event (epoll reports an fd
				 * once per batch) or after the batch.  A hang-up
				 * or half-close means the VMM is gone.
				 */
				if (ev[i].events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
					if (ev[i].events & EPOLLIN)
						read_client(&c, cl);
					else
						drop_client(&c, cl, "hang-up");
					continue;
				}
				if (ev[i].events & EPOLLOUT) {
					if (!flush_client(&c, cl))
						continue;
				}
				if (ev[i].events & (EPOLLIN | EPOLLRDHUP))
					read_client(&c, cl);
			}
		}
		/* No event of this batch refers to them any more. */
		reap_sources(&c);
		http_run(&c);
		check_deadlines(&c);
		reap_sources(&c);
	}
out_clients:
	systemd_stopping();
	while (c.clients)
		drop_client(&c, c.clients, "collector exiting");
	reap_sources(&c);
out_http:
	if (port_file)
		fclose(port_file);
	http_stop(&c);
out_unlink:
	/* Fails harmlessly once unprivileged in a root-owned directory. */
	if (!systemd_owns_socket())
		unlink(o.socket);
	return ret;
}
