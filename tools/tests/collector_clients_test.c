// SPDX-License-Identifier: GPL-2.0
/*
 * The collector's unix-socket clients on the host, its own source code
 * driven directly (collector/clients.c with query.c, sources.c, admit.c)
 * over a real listening socket: credentials checked before
 * --max-clients, refused connections answered at most REFUSED_MAX at a
 * time, a reply over the per-client cap replaced by an error, and the
 * deadline of a reply kept when the reader makes progress.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "image.h"
#include "spawn.h"
#include "statsfd_client.h"
#include "tap.h"

static struct collector col = {
	.max_sources = 1000, .client_max_sources = 1000,
	.client_max_bytes = 64 << 20, .max_bytes = 64 << 20, .drop_after = 10,
	.accept_memfd = true, .client_timeout_ms = 300, .reply_max = 70000,
	.policy = { .max_clients = 1 },
};
static char path[] = "/tmp/statsfd-clients-test.XXXXXX";
static char sock_path[64];
static int lfd;

static int listen_socket(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(fd, 256))
		return -1;
	return fd;
}

/* The collector's side of the newest connection. */
static struct client *newest(void)
{
	return col.clients;
}

/* Send @json, let the collector handle it, return the parsed reply. */
static struct json_object *ask(int s, struct client *cl, const char *json,
			       const int *fds, unsigned int nfds)
{
	struct json_object *r = NULL;
	unsigned int n = 0;
	char *out;
	size_t len;

	if (statsfd_msg_send(s, json, strlen(json), fds, nfds))
		return NULL;
	client_event(&col, cl, EPOLLIN);
	if (!statsfd_msg_recv(s, &out, &len, NULL, &n, 1000)) {
		r = json_tokener_parse(out);
		free(out);
	}
	return r;
}

static const char *error_desc(struct json_object *r)
{
	struct json_object *e, *d;

	if (!r || !json_object_object_get_ex(r, "error", &e) ||
	    !json_object_object_get_ex(e, "desc", &d))
		return "";
	return json_object_get_string(d);
}

static void test_admission(void)
{
	struct json_object *r;
	int s[70], i, a, b;
	unsigned int n = 0;
	char *out = NULL;
	size_t len;

	/* Nobody allowed but uid 4242: every connection here is refused. */
	col.policy.allow_uid[col.policy.nallow_uid++] = 4242;
	for (i = 0; i < 70; i++)
		s[i] = statsfd_msg_connect(sock_path);
	accept_clients(&col, lfd);
	tap_ok(col.nrefused == 64 && col.nclients == 0 && col.stats.clients_refused == 70,
	       "70 refused connections: 64 being answered, none counted as clients (%u, %u)",
	       col.nrefused, col.nclients);
	tap_ok(!statsfd_msg_recv(s[0], &out, &len, NULL, &n, 1000) &&
	       strstr(out, "PermissionDenied") && strstr(out, "uid 0 gid 0 is not allowed"),
	       "a refused connection gets PermissionDenied");
	free(out);
	out = NULL;
	tap_ok(statsfd_msg_recv(s[69], &out, &len, NULL, &n, 1000) < 0,
	       "the 65th and later are closed unanswered");
	free(out);
	col.policy.allow_uid[col.policy.nallow_uid++] = 0;
	a = statsfd_msg_connect(sock_path);
	b = statsfd_msg_connect(sock_path);
	accept_clients(&col, lfd);
	tap_ok(col.nclients == 1 && col.stats.clients_refused == 71,
	       "with 64 refused pending, an allowed client gets in (--max-clients 1), the next is refused");
	r = ask(a, newest(), "{\"execute\":\"hello\",\"id\":1}", NULL, 0);
	tap_ok(r && !json_object_object_get_ex(r, "error", NULL), "and is served");
	json_object_put(r);
	for (i = 0; i < 70; i++)
		close(s[i]);
	close(b);
	/* The refused ones hang up (EPOLLRDHUP): dropped, no longer counted. */
	while (col.clients && col.clients->next)
		drop_client(&col, col.clients->next, "test");
	tap_ok(col.nrefused == 0 && col.nclients == 1, "refused connections dropped, the client kept");
	close(a);
	client_event(&col, newest(), EPOLLIN | EPOLLRDHUP);
	tap_ok(!col.clients && !col.nclients, "a hang-up drops the client");
}

/* Register @n vCPUs of VM @vm (memfds) on @s, the connection of @cl. */
static bool add_vcpus(int s, struct client *cl, const char *vm, int n)
{
	static unsigned char img[1 << 14];
	size_t len = img_build(img, sizeof(img), "vm-1/vcpu-0", 48, img_vcpu_stats,
			       img_vcpu_nstats, NULL, 0);
	struct statsfd_buf req = { 0 };
	struct json_object *r;
	int fds[STATSFD_MSG_MAX_FDS], i;
	bool ok;

	statsfd_buf_printf(&req, "{\"execute\":\"add-sources\",\"arguments\":{"
			   "\"provider\":\"statsfd_vm\",\"vm\":\"%s\",\"sources\":[", vm);
	for (i = 0; i < n; i++) {
		fds[i] = img_memfd(img, len);
		statsfd_buf_printf(&req, "%s{\"target\":\"vcpu\",\"vcpu\":%d}", i ? "," : "", i);
	}
	statsfd_buf_printf(&req, "]}}");
	r = ask(s, cl, req.data, fds, (unsigned int)n);
	ok = r && !json_object_object_get_ex(r, "error", NULL);
	json_object_put(r);
	statsfd_buf_free(&req);
	for (i = 0; i < n; i++)
		close(fds[i]);
	return ok;
}

static void test_replies(void)
{
	int s = statsfd_msg_connect(sock_path), sz = 70000;
	char buf[STATSFD_MSG_MAX];
	struct json_object *r, *id;
	struct client *cl;
	uint64_t deadline;

	accept_clients(&col, lfd);
	cl = newest();
	tap_ok(add_vcpus(s, cl, "big", 250) && add_vcpus(s, cl, "big2", 250) &&
	       col.nsources == 500, "500 sources registered over the socket");
	r = ask(s, cl, "{\"execute\":\"query-stats\",\"id\":\"q1\"}", NULL, 0);
	tap_ok(strstr(error_desc(r), "reply larger than 70000 bytes: narrow the query with filters") &&
	       json_object_object_get_ex(r, "id", &id) && !strcmp(json_object_get_string(id), "q1") &&
	       col.stats.replies_too_large == 1,
	       "a reply over the cap: an error instead, with the request's id");
	json_object_put(r);
	r = ask(s, cl, "{\"execute\":\"query-stats\",\"arguments\":{\"vcpus\":[0,1]}}", NULL, 0);
	tap_ok(r && json_object_object_get_ex(r, "return", &id) && json_object_array_length(id) == 4,
	       "a narrower query is answered");
	json_object_put(r);

	/* A send buffer of about two packets: the reply stays queued. */
	setsockopt(cl->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	col.reply_max = cl->out_max = 8 << 20;
	statsfd_msg_send(s, "{\"execute\":\"query-stats\"}", 25, NULL, 0);
	client_event(&col, cl, EPOLLIN);
	deadline = cl->deadline;
	tap_ok(cl->out && deadline, "a large reply queued, with a deadline");
	msleep(100);
	tap_ok(recv(s, buf, sizeof(buf), MSG_DONTWAIT) > 0, "the reader takes a packet");
	client_event(&col, cl, EPOLLOUT);
	tap_ok(cl->out && cl->deadline == deadline,
	       "progress, but the reply's deadline is unchanged");
	msleep(250);
	check_deadlines(&col);
	tap_ok(!col.clients && col.stats.clients_dropped == 1 && col.nsources == 0,
	       "past the deadline: dropped with its sources, though it progressed");
	tap_ok(next_deadline_ms(&col) == -1, "no client, no deadline");
	close(s);
}

int main(void)
{
	char cmd[200];

	if (!mkdtemp(path))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/c.sock", path);
	col.epfd = epoll_create1(EPOLL_CLOEXEC);
	lfd = listen_socket();
	if (!tap_ok(col.epfd >= 0 && lfd >= 0, "a listening socket"))
		return tap_done();
	test_admission();
	test_replies();
	reap_sources(&col);
	close(lfd);
	close(col.epfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", path);
	if (system(cmd))
		tap_diag("cleanup failed");
	return tap_done();
}
