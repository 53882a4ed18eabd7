// SPDX-License-Identifier: GPL-2.0
/*
 * siege.c - the attacks of siege.h, shared by collector_siege_test and
 * statsfd-bench's B15.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "siege.h"
#include "spawn.h"
#include "statsfd_client.h"

unsigned int siege_port;
unsigned int siege_read_s = 20;

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* In a new child: SIGTERM ends its loop.  Return: 0 in the child. */
static pid_t attacker(void)
{
	pid_t pid = fork();

	if (!pid) {
		stop_flag = 0;
		signal(SIGTERM, on_term);
		signal(SIGPIPE, SIG_IGN);
	}
	return pid;
}

void siege_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

void siege_buf_free(struct siege_buf *b)
{
	free(b->data);
	*b = (struct siege_buf){ 0 };
}

static void buf_append(struct siege_buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;

		while (cap < b->len + n + 1)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			abort();
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

int siege_connect(unsigned int src, int rcvbuf)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(siege_port) };
	struct sockaddr_in me = { .sin_family = AF_INET };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char a[32];

	if (s < 0)
		return -1;
	if (rcvbuf)
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (src) {
		snprintf(a, sizeof(a), "127.0.0.%u", src);
		inet_pton(AF_INET, a, &me.sin_addr);
		if (bind(s, (struct sockaddr *)&me, sizeof(me))) {
			close(s);
			return -1;
		}
	}
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin))) {
		close(s);
		return -1;
	}
	return s;
}

bool siege_read_some(int s, struct siege_buf *b, int ms, size_t max)
{
	char buf[65536];

	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t r;

		if (b->len >= max || poll(&p, 1, ms) != 1)
			return true;
		r = read(s, buf, sizeof(buf) < max - b->len ? sizeof(buf) : max - b->len);
		if (r <= 0)
			return false;
		buf_append(b, buf, (size_t)r);
		ms = 0;
	}
}

/* GET /metrics HTTP/1.0 from @src with @auth, read to the end. */
static int get_all(unsigned int src, const char *auth, struct siege_buf *b)
{
	char req[512];
	int s = siege_connect(src, 0);
	double t0 = now_s();

	if (s < 0)
		return -1;
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\nHost: x\r\n%s\r\n", auth);
	if (write(s, req, strlen(req)) == (ssize_t)strlen(req))
		while (now_s() - t0 < siege_read_s &&
		       siege_read_some(s, b, 1000, (size_t)1 << 30))
			;
	close(s);
	return 0;
}

int siege_scrape(unsigned int src, const char *auth, size_t *body_len)
{
	struct siege_buf b = { 0 };
	int status = 0;
	char *p;

	if (get_all(src, auth, &b)) {
		if (body_len)
			*body_len = 0;
		return 0;
	}
	if (b.data && sscanf(b.data, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	p = b.data ? strstr(b.data, "\r\n\r\n") : NULL;
	if (body_len)
		*body_len = p ? b.len - (size_t)(p + 4 - b.data) : 0;
	siege_buf_free(&b);
	return status;
}

double siege_metric(unsigned int src, const char *auth, const char *name)
{
	struct siege_buf b = { 0 };
	size_t n = strlen(name);
	const char *p;
	double v = -1;

	if (get_all(src, auth, &b))
		return -1;
	for (p = b.data; p && (p = strstr(p, name)); p += n)
		if (p > b.data && p[-1] == '\n' && p[n] == ' ') {
			v = strtod(p + n + 1, NULL);
			break;
		}
	siege_buf_free(&b);
	return v;
}

int siege_slow_reader(unsigned int src, int *status, bool *retry_after)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	struct siege_buf b = { 0 };
	double t0 = now_s();
	int s = siege_connect(src, 4096);

	*status = 0;
	*retry_after = false;
	if (s < 0)
		return -1;
	if (write(s, req, sizeof(req) - 1) < 0) {
		close(s);
		return -1;
	}
	/* The head, then nothing more is read. */
	while (now_s() - t0 < 20 && !(b.data && strstr(b.data, "\r\n\r\n")) &&
	       siege_read_some(s, &b, 500, 4096))
		;
	if (b.data && sscanf(b.data, "HTTP/1.%*d %d", status) != 1)
		*status = 0;
	*retry_after = b.data && strcasestr(b.data, "\r\nRetry-After: ");
	siege_buf_free(&b);
	return s;
}

pid_t siege_slow_readers(unsigned int n, unsigned int naddr, int every_ms)
{
	double next = now_s();
	unsigned int i, open = 0, k = 0;
	char sink[4096];
	int *fds;
	pid_t pid = attacker();

	if (pid)
		return pid;
	fds = malloc(n * sizeof(*fds));
	if (!fds)
		_exit(1);
	for (i = 0; i < n; i++)
		fds[i] = -1;
	while (!stop_flag) {
		/* A new reader every @every_ms, in the first free place. */
		if (now_s() >= next) {
			for (i = 0; i < n && fds[i] >= 0; i++)
				;
			if (i < n) {
				int st;
				bool ra;

				fds[i] = siege_slow_reader(1 + k++ % naddr, &st, &ra);
				open += fds[i] >= 0;
			}
			next += every_ms / 1000.0;
		}
		/* 4 KiB from each, 10 times a second; cut or done: replaced. */
		for (i = 0; i < n; i++) {
			ssize_t r;

			if (fds[i] < 0)
				continue;
			r = recv(fds[i], sink, sizeof(sink), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
		msleep(100);
	}
	_exit(0);
}

pid_t siege_tricklers(unsigned int n, unsigned int first, unsigned int naddr)
{
	unsigned int i, sent[64] = { 0 };
	int fds[64];
	pid_t pid = attacker();

	if (pid)
		return pid;
	if (n > 64)
		n = 64;
	for (i = 0; i < n; i++)
		fds[i] = -1;
	while (!stop_flag) {
		for (i = 0; i < n; i++) {
			char c;

			if (fds[i] < 0) {
				fds[i] = siege_connect(first + i % naddr, 0);
				sent[i] = 0;
				continue;
			}
			if (send(fds[i], sent[i] ? "a" : "GET / HTTP/1.1\r\nX: ",
				 sent[i] ? 1 : 19, MSG_NOSIGNAL | MSG_DONTWAIT) <= 0) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			sent[i]++;
			/* Cut: EOF or an error, not "nothing yet". */
			if (recv(fds[i], &c, 1, MSG_DONTWAIT) == 0 ||
			    (errno != EAGAIN && errno != EWOULDBLOCK)) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
		msleep(200 / n ?: 1);
	}
	_exit(0);
}

pid_t siege_guesser(unsigned int src, const char *bad_auth)
{
	pid_t pid = attacker();

	if (pid)
		return pid;
	while (!stop_flag)
		siege_scrape(src, bad_auth, NULL);
	_exit(0);
}

pid_t siege_flood(const char *sock_path, const char *query)
{
	pid_t pid = attacker();
	int s;

	if (pid)
		return pid;
	s = statsfd_msg_connect(sock_path);
	while (!stop_flag && s >= 0) {
		char *r = siege_rpc(s, query, NULL, 0);

		if (!r) {
			/* Cut (a reply deadline): a new connection. */
			close(s);
			s = statsfd_msg_connect(sock_path);
		}
		free(r);
	}
	_exit(0);
}

char *siege_filter_query(const char *name, const char *provider)
{
	size_t cap = 64 * 1024 + 2 * strlen(name) + strlen(provider);
	char *q = malloc(cap);
	size_t n;
	unsigned int i;

	if (!q)
		return NULL;
	n = snprintf(q, cap, "{\"execute\":\"query-stats\",\"arguments\":{\"names\":[\"%s\"",
		     name);
	for (i = 1; i < 1024; i++)
		n += snprintf(q + n, cap - n, ",\"n%u\"", i);
	n += snprintf(q + n, cap - n, "],\"providers\":[");
	for (i = 0; i < 1023; i++)
		n += snprintf(q + n, cap - n, "{\"provider\":\"p%u\"},", i);
	snprintf(q + n, cap - n, "{\"provider\":\"%s\",\"names\":[\"%s\"]}]}}",
		 provider, name);
	return q;
}

char *siege_call(int s, const char *json, const int *fds, unsigned int nfds, int ms)
{
	unsigned int n = 0;
	char *out = NULL;
	size_t len;

	if (statsfd_msg_send(s, json, strlen(json), fds, nfds) ||
	    statsfd_msg_recv(s, &out, &len, NULL, &n, ms))
		return NULL;
	return out;
}

char *siege_rpc(int s, const char *json, const int *fds, unsigned int nfds)
{
	return siege_call(s, json, fds, nfds, 60000);
}

unsigned int siege_add_vcpus(int s, const char *provider, const char *vm,
			     const int *fds, unsigned int first, unsigned int n,
			     char **why)
{
	size_t cap = 256 + strlen(provider) + strlen(vm) + 200 * 40;
	char *req = malloc(cap), *out;
	unsigned int done = 0, i;

	if (why)
		*why = NULL;
	if (!req)
		return 0;
	while (done < n) {
		unsigned int k = n - done > 200 ? 200 : n - done;
		size_t len;

		len = snprintf(req, cap, "{\"execute\":\"add-sources\",\"arguments\":{"
			       "\"provider\":\"%s\",\"vm\":\"%s\",\"sources\":[",
			       provider, vm);
		for (i = 0; i < k; i++)
			len += snprintf(req + len, cap - len,
					"%s{\"target\":\"vcpu\",\"vcpu\":%u}",
					i ? "," : "", first + done + i);
		snprintf(req + len, cap - len, "]}}");
		out = siege_rpc(s, req, fds + done, k);
		if (!out || !strstr(out, "\"return\"")) {
			if (why)
				*why = out ? out : strdup("no reply");
			else
				free(out);
			break;
		}
		free(out);
		done += k;
	}
	free(req);
	return done;
}
