// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: systemd integration through libsystemd's sd-daemon.
 *
 * Restarts lose nothing: every stats fd a client registers, and the
 * client's connection, are handed to systemd's fd store (FDSTORE=1), which
 * keeps them open while the collector restarts and passes them back on
 * start with the names given here (LISTEN_FDNAMES).  The names carry all
 * the state a source needs:
 *
 *	cli.<client id>                                  a client connection
 *	src.<source id>.<client id>.<vcpu>.<provider>.<target>.<vm>
 *
 * Provider and target are [a-z][a-z0-9_]*; the VM name is printable ASCII
 * without '"' and '\' (statsfd_json_parse_sources()), so the one character
 * systemd forbids in a name, ':', is written as '"': the longest name
 * (20-digit ids, 32-character provider and target, 64-character VM) is
 * 188 characters, within FDNAME_MAX.  A client's uid, gid and pid come
 * back with the connection itself (SO_PEERCRED), so a restored VMM keeps
 * owning its sources and can remove them.
 *
 * systemd drops a stored fd by itself when it polls POLLHUP or POLLERR: a
 * VMM that closes its connection, or a VM that goes away, while the
 * collector is down, is not resurrected.
 *
 * Every message is one datagram to systemd on NOTIFY_SOCKET, sent here
 * without blocking (libsystemd's sd_notify() blocks while PID 1's queue
 * is full, which would stall the loop): a message that does not go at
 * once is queued, in order, with a dup of its fd, and sent again from the
 * loop every NOTIFY_RETRY_MS; past NOTIFY_QUEUE_MAX queued messages
 * further ones are dropped, counted and logged (a dropped FDSTORE=1
 * means that source is not restored by a restart).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "admit.h"
#include "collector.h"
#include "sd.h"

#define NOTIFY_QUEUE_MAX	4096
#define NOTIFY_RETRY_MS		50

/* A notification that could not be sent yet. */
struct notify_msg {
	char *msg;
	int fd;			/* a dup of the fd it carries, or -1 */
};

static struct {
	bool taken;		/* LISTEN_FDS consumed */
	int notify_fd;		/* our datagram socket, nonblocking, or -1 */
	struct sockaddr_un notify_addr;
	socklen_t notify_len;
	struct notify_msg *queue;	/* unsent, oldest first */
	unsigned int nqueue;
	unsigned int queue_cap;
	uint64_t retry_at;	/* monotonic ms of the next try, if queued */
	unsigned long dropped;	/* past NOTIFY_QUEUE_MAX */
	bool notify;		/* NOTIFY_SOCKET set: notify and store */
	bool stopping;		/* exiting: leave the fd store alone */
	bool notify_failed;	/* logged once */
	int unix_fd;		/* activated collector socket, or -1 */
	int http_fds[SYSTEMD_HTTP_MAX];	/* activated TCP ports, in order */
	unsigned int nhttp;
	int *stored;		/* stored fds passed back, for the restore (clients.c) */
	char **stored_names;
	unsigned int nstored;
	uint64_t watchdog_ms;	/* kick period (half of WATCHDOG_USEC), 0: off */
	uint64_t next_kick;
} sd = { .unix_fd = -1, .notify_fd = -1 };

static void take_fds(void)
{
	char **names = NULL;
	uint64_t usec;
	int n, i;

	if (sd.taken)
		return;
	sd.taken = true;
	sd.notify = !!getenv("NOTIFY_SOCKET");
	if (sd_watchdog_enabled(0, &usec) > 0 && usec >= 2000)
		sd.watchdog_ms = usec / 2000;
	/* Unset LISTEN_*: nothing the daemon runs may take them again. */
	n = sd_listen_fds_with_names(1, &names);
	if (n < 0) {
		logmsg("systemd: LISTEN_FDS: %s", strerror(-n));
		return;
	}
	sd.stored = calloc((size_t)n + 1, sizeof(*sd.stored));
	sd.stored_names = calloc((size_t)n + 1, sizeof(*sd.stored_names));
	for (i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		char *name = names ? names[i] : NULL;

		if (!sd.stored || !sd.stored_names) {
			close(fd);
			free(name);
			continue;
		}
		if (sd.unix_fd < 0 &&
		    sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) > 0) {
			sd.unix_fd = fd;
			free(name);
		} else if (sd.nhttp < SYSTEMD_HTTP_MAX &&
			   (sd_is_socket_inet(fd, AF_INET, SOCK_STREAM, 1, 0) > 0 ||
			    sd_is_socket_inet(fd, AF_INET6, SOCK_STREAM, 1, 0) > 0)) {
			sd.http_fds[sd.nhttp++] = fd;
			free(name);
		} else if (name || (name = strdup(""))) {
			/* Adopted or closed by the restore (clients.c). */
			sd.stored[sd.nstored] = fd;
			sd.stored_names[sd.nstored++] = name;
		} else {
			close(fd);
		}
	}
	free(names);
	/*
	 * systemd passes sockets blocking (unless NonBlocking=yes): the
	 * loop accepts until EAGAIN, and must never block in accept().
	 */
	if (sd.unix_fd >= 0)
		fcntl(sd.unix_fd, F_SETFL, fcntl(sd.unix_fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < (int)sd.nhttp; i++)
		fcntl(sd.http_fds[i], F_SETFL, fcntl(sd.http_fds[i], F_GETFL) | O_NONBLOCK);
}

int systemd_unix_listen_fd(void)
{
	take_fds();
	return sd.unix_fd;
}

int systemd_http_listen_fd(unsigned int i)
{
	take_fds();
	return i < sd.nhttp ? sd.http_fds[i] : -1;
}

bool systemd_owns_socket(void)
{
	return sd.unix_fd >= 0;
}

/* NOTIFY_SOCKET's address ("/path" or "@abstract"); Return: false if none. */
static bool notify_open(void)
{
	const char *e = getenv("NOTIFY_SOCKET");
	size_t n;

	if (sd.notify_fd >= 0)
		return true;
	if (!e || (e[0] != '/' && e[0] != '@'))
		return false;
	n = strlen(e);
	if (n >= sizeof(sd.notify_addr.sun_path))
		return false;
	sd.notify_addr.sun_family = AF_UNIX;
	memcpy(sd.notify_addr.sun_path, e, n);
	if (e[0] == '@')
		sd.notify_addr.sun_path[0] = '\0';
	sd.notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
				    (e[0] == '/'));
	sd.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	return sd.notify_fd >= 0;
}

/* One datagram, never blocking.  Return: 0, or -errno. */
static int notify_send(const char *msg, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = strlen(msg) };
	struct msghdr mh = {
		.msg_name = &sd.notify_addr, .msg_namelen = sd.notify_len,
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	struct cmsghdr *cm;

	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(sd.notify_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

/* Send what is queued, in order, until the socket is full again. */
static void notify_flush(void)
{
	unsigned int i = 0;
	int r;

	while (i < sd.nqueue) {
		r = notify_send(sd.queue[i].msg, sd.queue[i].fd);
		if (r == -EAGAIN || r == -EWOULDBLOCK || r == -ENOBUFS)
			break;
		if (r < 0 && !sd.notify_failed) {
			sd.notify_failed = true;
			logmsg("systemd: notify \"%.40s\": %s", sd.queue[i].msg, strerror(-r));
		}
		free(sd.queue[i].msg);
		if (sd.queue[i].fd >= 0)
			close(sd.queue[i].fd);
		i++;
	}
	memmove(sd.queue, sd.queue + i, (sd.nqueue - i) * sizeof(*sd.queue));
	sd.nqueue -= i;
	sd.retry_at = sd.nqueue ? now_ms() + NOTIFY_RETRY_MS : 0;
}

/* Keep @msg (and a dup of @fd) for later; Return: false when dropped. */
static bool notify_queue(const char *msg, int fd)
{
	struct notify_msg *q;

	if (sd.nqueue >= NOTIFY_QUEUE_MAX)
		goto drop;
	if (sd.nqueue == sd.queue_cap) {
		unsigned int cap = sd.queue_cap ? 2 * sd.queue_cap : 16;

		q = realloc(sd.queue, cap * sizeof(*q));
		if (!q)
			goto drop;
		sd.queue = q;
		sd.queue_cap = cap;
	}
	q = &sd.queue[sd.nqueue];
	q->msg = strdup(msg);
	q->fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (!q->msg || (fd >= 0 && q->fd < 0)) {
		free(q->msg);
		if (q->fd >= 0)
			close(q->fd);
		goto drop;
	}
	sd.nqueue++;
	if (!sd.retry_at)
		sd.retry_at = now_ms() + NOTIFY_RETRY_MS;
	return true;
drop:
	if (!sd.dropped++ || !(sd.dropped % 1000))
		logmsg("systemd: %lu notifications dropped: PID 1 is not reading them (\"%.40s\")",
		       sd.dropped, msg);
	return false;
}

/* Send one notification carrying @fd (or none: -1), never blocking. */
static void notify(const char *msg, int fd)
{
	int r;

	if (!sd.notify || !notify_open())
		return;
	/* In order: while older ones wait, this one waits behind them. */
	if (sd.nqueue) {
		notify_queue(msg, fd);
		return;
	}
	r = notify_send(msg, fd);
	if (r == -EAGAIN || r == -EWOULDBLOCK || r == -ENOBUFS) {
		notify_queue(msg, fd);
		return;
	}
	if (r < 0 && !sd.notify_failed) {
		sd.notify_failed = true;
		logmsg("systemd: notify \"%.40s\": %s", msg, strerror(-r));
	}
}

/* Store (@fd >= 0) or remove (@fd -1) the fds named @name. */
static void store(const char *name, int fd)
{
	char msg[SYSTEMD_FDNAME_MAX + 64];

	if (!sd.notify || sd.stopping)
		return;
	/*
	 * FDPOLL=0: systemd must not poll the stored fd.  It drops a stored
	 * fd that polls EPOLLERR or EPOLLHUP, and a statsfd stats fd polls
	 * EPOLLPRI | EPOLLERR while its source's children changed (a vCPU
	 * added) until the collector reads it again: the VM's fd would
	 * vanish from the store.  A source that really hung up is dropped by
	 * the collector itself (its EPOLLHUP), which removes it from the store.
	 */
	snprintf(msg, sizeof(msg), "%s\nFDNAME=%s",
		 fd >= 0 ? "FDSTORE=1\nFDPOLL=0" : "FDSTOREREMOVE=1", name);
	notify(msg, fd);
}

static void client_name(char *buf, size_t len, uint64_t id)
{
	snprintf(buf, len, "cli.%" PRIu64, id);
}

static void source_name(char *buf, size_t len, const struct source *s)
{
	char *p;
	int n;

	n = snprintf(buf, len, "src.%" PRIu64 ".%" PRIu64 ".%d.%s.%s.%s", s->id,
		     s->owner->id, s->labels.vcpu, s->labels.provider,
		     s->labels.target, s->labels.vm);
	/* At most 188 characters (see the top of this file): never cut. */
	if (n < 0 || (size_t)n >= len)
		return;
	/* The VM name is last: ':' is the only character to encode. */
	for (p = buf + n - strlen(s->labels.vm); *p; p++)
		if (*p == ':')
			*p = '"';
}

void systemd_store_source(struct source *s)
{
	char name[SYSTEMD_FDNAME_MAX + 1];

	take_fds();
	/*
	 * Discovered sources (their owner stands for a VMM process, with no
	 * connection) are not stored: the next scan finds them again, and
	 * stored they would pin their VMs in PID 1 while we are down.
	 */
	if (!sd.notify || sd.stopping || s->owner->discovered)
		return;
	/* With its first source, the connection becomes worth keeping. */
	if (s->owner->nsources == 1) {
		client_name(name, sizeof(name), s->owner->id);
		store(name, s->owner->fd);
	}
	source_name(name, sizeof(name), s);
	store(name, statsfd_fd(s->sf));
}

void systemd_unstore_source(struct source *s)
{
	char name[SYSTEMD_FDNAME_MAX + 1];

	if (!sd.notify || sd.stopping || s->owner->discovered)
		return;
	source_name(name, sizeof(name), s);
	store(name, -1);
}

void systemd_unstore_client(struct client *cl)
{
	char name[32];

	if (!sd.notify || sd.stopping || cl->discovered)
		return;
	client_name(name, sizeof(name), cl->id);
	store(name, -1);
}

int systemd_parse_source_name(const char *name, uint64_t *id,
			      uint64_t *client, struct statsfd_labels *l)
{
	const char *p, *dot;
	char *q;
	int n = 0;

	memset(l, 0, sizeof(*l));
	if (sscanf(name, "src.%" SCNu64 ".%" SCNu64 ".%d.%n", id, client,
		   &l->vcpu, &n) != 3 || !n)
		return -EINVAL;
	p = name + n;
	dot = strchr(p, '.');
	if (!dot || dot == p || (size_t)(dot - p) >= sizeof(l->provider))
		return -EINVAL;
	memcpy(l->provider, p, (size_t)(dot - p));
	p = dot + 1;
	dot = strchr(p, '.');
	if (!dot || dot == p || (size_t)(dot - p) >= sizeof(l->target))
		return -EINVAL;
	memcpy(l->target, p, (size_t)(dot - p));
	p = dot + 1;
	if (strlen(p) >= sizeof(l->vm))
		return -EINVAL;
	strcpy(l->vm, p);
	for (q = l->vm; *q; q++)
		if (*q == '"')
			*q = ':';
	return 0;
}

unsigned int systemd_stored(int **fds, char ***names)
{
	take_fds();
	*fds = sd.stored;
	*names = sd.stored_names;
	return sd.nstored;
}

void systemd_unstore(const char *name)
{
	store(name, -1);
}

void systemd_forget(unsigned int i)
{
	store(sd.stored_names[i], -1);
	close(sd.stored[i]);
	sd.stored[i] = -1;
}

void systemd_stored_done(void)
{
	unsigned int i;

	for (i = 0; i < sd.nstored; i++) {
		if (sd.stored[i] >= 0)
			close(sd.stored[i]);
		free(sd.stored_names[i]);
	}
	free(sd.stored_names);
	free(sd.stored);
	sd.stored_names = NULL;
	sd.stored = NULL;
	sd.nstored = 0;
}

void systemd_ready(struct collector *c)
{
	char msg[128];

	take_fds();
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=serving %u sources of %u clients",
		 c->nsources, c->nclients);
	notify(msg, -1);
	sd.next_kick = now_ms() + sd.watchdog_ms;
}

int systemd_watchdog(int timeout_ms)
{
	uint64_t now;

	/* Queued notifications first, then a later try if still queued. */
	if (sd.nqueue && now_ms() >= sd.retry_at)
		notify_flush();
	if (sd.nqueue) {
		now = now_ms();
		if (timeout_ms < 0 || (uint64_t)timeout_ms > sd.retry_at - now)
			timeout_ms = sd.retry_at > now ? (int)(sd.retry_at - now) : 0;
	}
	if (!sd.watchdog_ms)
		return timeout_ms;
	now = now_ms();
	if (now >= sd.next_kick) {
		notify("WATCHDOG=1", -1);
		sd.next_kick = now + sd.watchdog_ms;
	}
	if (timeout_ms < 0 || (uint64_t)timeout_ms > sd.next_kick - now)
		return (int)(sd.next_kick - now);
	return timeout_ms;
}

void systemd_stopping(void)
{
	if (sd.nqueue)
		notify_flush();
	notify("STOPPING=1", -1);
	sd.stopping = true;
}
