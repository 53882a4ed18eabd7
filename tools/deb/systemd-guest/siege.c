// SPDX-License-Identifier: GPL-2.0
/*
 * siege: the attacks of issue 18 on the collector that systemd runs in the
 * check-systemd guest (tools/deb/systemd-guest/check.sh checks the
 * service's memory and restarts around them; the sanitized daemon's
 * bounds are collector_siege_test's).  Each attack reports what it saw on
 * stdout as TAP comments and ends with the connections it opened.
 *
 *   siege slow N HOLD       N slow readers of /metrics (one every 250 ms,
 *                           from 127.0.0.2-17), each reading only the
 *                           status line, held HOLD seconds
 *   siege trickle N SECS    N connections trickling request headers a byte
 *                           at a time from 127.0.0.2-9 for SECS seconds
 *   siege flood SOCK N      a 15,000-name query-stats on the unix socket,
 *                           then N clients asking for every stat of every
 *                           source and reading nothing, held 10 s
 *   siege scrape           one scrape of /metrics from 127.0.0.1: prints
 *                           the HTTP status and the body's size
 *
 * Exit status: 0 when the attack ran, 1 when it could not start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "statsfd_client.h"

#define PORT 9477

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void msleep(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* A TCP connection to the collector from 127.0.0.@src; -1 when refused. */
static int http_connect(unsigned int src, int rcvbuf)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct sockaddr_in me = { .sin_family = AF_INET };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char a[32];

	if (s < 0)
		return -1;
	if (rcvbuf)
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	snprintf(a, sizeof(a), "127.0.0.%u", src);
	inet_pton(AF_INET, a, &me.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if (bind(s, (struct sockaddr *)&me, sizeof(me)) ||
	    connect(s, (struct sockaddr *)&sin, sizeof(sin))) {
		close(s);
		return -1;
	}
	return s;
}

/*
 * One scrape from 127.0.0.1, read to its end (HTTP/1.0) within 60 s.
 * Return: the HTTP status (0: none); @body: the body's bytes.
 */
static int scrape(size_t *body)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
	size_t len = 0, head = 0;
	char buf[65536], first[64] = "";
	double t0 = now_s();
	int s = http_connect(1, 0), status = 0;
	char last[4] = "";

	*body = 0;
	if (s < 0)
		return 0;
	if (write(s, req, sizeof(req) - 1) != sizeof(req) - 1) {
		close(s);
		return 0;
	}
	while (now_s() - t0 < 60) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t r, i;

		if (poll(&p, 1, 1000) != 1)
			continue;
		r = read(s, buf, sizeof(buf));
		if (r <= 0)
			break;
		if (len < sizeof(first) - 1)
			memcpy(first + len, buf, (size_t)r < sizeof(first) - 1 - len ?
			       (size_t)r : sizeof(first) - 1 - len);
		/* The header's end: the first \r\n\r\n, across reads. */
		for (i = 0; !head && i < r; i++) {
			memmove(last, last + 1, 3);
			last[3] = buf[i];
			if (!memcmp(last, "\r\n\r\n", 4))
				head = len + (size_t)i + 1;
		}
		len += (size_t)r;
	}
	close(s);
	if (sscanf(first, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	*body = head ? len - head : 0;
	return status;
}

static int cmd_slow(unsigned int n, unsigned int hold)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	unsigned int i, n200 = 0, n503 = 0, nref = 0;
	int *fd = calloc(n, sizeof(int));
	size_t body;
	int st;

	if (!fd)
		return 1;
	for (i = 0; i < n; i++) {
		char buf[4096];
		struct pollfd p;
		ssize_t r;

		fd[i] = http_connect(2 + i % 16, 4096);
		if (fd[i] < 0 || write(fd[i], req, sizeof(req) - 1) < 0) {
			nref++;
			continue;
		}
		/* The status line, then nothing more is read. */
		p = (struct pollfd){ .fd = fd[i], .events = POLLIN };
		r = poll(&p, 1, 20000) == 1 ? recv(fd[i], buf, sizeof(buf) - 1, 0) : 0;
		if (r > 0) {
			buf[r] = 0;
			n200 += !strncmp(buf, "HTTP/1.1 200", 12);
			n503 += !strncmp(buf, "HTTP/1.1 503", 12);
		} else {
			nref++;
		}
		msleep(250);
	}
	printf("# slow readers: %u, answered 200: %u, 503: %u, refused or silent: %u\n",
	       n, n200, n503, nref);
	st = scrape(&body);
	printf("# a scrape among them: HTTP %d, %zu bytes\n", st, body);
	msleep(hold * 1000);
	for (i = 0; i < n; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	free(fd);
	return 0;
}

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
	stop_flag = 1;
}

static int cmd_trickle(unsigned int n, unsigned int secs)
{
	unsigned int i, scrapes = 0, served = 0;
	double t0 = now_s();
	size_t body;
	pid_t pid;

	if (n > 64)
		n = 64;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		int fds[64];
		unsigned int sent[64] = { 0 };

		signal(SIGTERM, on_term);
		for (i = 0; i < n; i++)
			fds[i] = -1;
		while (!stop_flag) {
			for (i = 0; i < n; i++) {
				char c;

				if (fds[i] < 0) {
					fds[i] = http_connect(2 + i % 8, 0);
					sent[i] = 0;
					continue;
				}
				if (send(fds[i], sent[i] ? "a" : "GET / HTTP/1.1\r\nX: ",
					 sent[i] ? 1 : 19, MSG_NOSIGNAL | MSG_DONTWAIT) <= 0 ||
				    recv(fds[i], &c, 1, MSG_DONTWAIT) == 0 ||
				    (errno != EAGAIN && errno != EWOULDBLOCK)) {
					close(fds[i]);
					fds[i] = -1;
					continue;
				}
				sent[i]++;
			}
			msleep(200 / n ?: 1);
		}
		_exit(0);
	}
	while (now_s() - t0 < secs) {
		scrapes++;
		served += scrape(&body) == 200;
		msleep(1000);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	printf("# %u tricklers for %u s: %u of %u scrapes from 127.0.0.1 served\n",
	       n, secs, served, scrapes);
	return 0;
}

static int cmd_flood(const char *path, unsigned int n)
{
	char *req, *out = NULL, *p;
	unsigned int i, queued = 0, refused = 0, nfds = 0;
	int s, *cl = calloc(n, sizeof(int));
	size_t len;

	req = malloc(4 * 15000 + 128);
	if (!cl || !req)
		return 1;
	p = req + sprintf(req, "{\"execute\":\"query-stats\",\"arguments\":{\"names\":[");
	for (i = 0; i < 15000; i++)
		p += sprintf(p, "%s\"%c\"", i ? "," : "", 'a' + i % 26);
	memcpy(p, "]}}", 4);
	s = statsfd_msg_connect(path);
	if (s < 0 || statsfd_msg_send(s, req, strlen(req), NULL, 0) ||
	    statsfd_msg_recv(s, &out, &len, NULL, &nfds, 60000)) {
		printf("# flood: no answer to the 15,000-name query\n");
		return 1;
	}
	printf("# 15,000 names: %.160s\n", out);
	free(out);
	out = NULL;
	if (!statsfd_msg_send(s, "{\"execute\":\"query-stats\"}", 25, NULL, 0) &&
	    !statsfd_msg_recv(s, &out, &len, NULL, &nfds, 60000))
		printf("# a query-stats reply, read in full: %zu bytes\n", len);
	free(out);
	close(s);
	for (i = 0; i < n; i++) {
		char buf[STATSFD_MSG_MAX];
		struct pollfd pf;
		ssize_t got;

		cl[i] = statsfd_msg_connect(path);
		if (cl[i] < 0 ||
		    statsfd_msg_send(cl[i], "{\"execute\":\"query-stats\"}", 25, NULL, 0)) {
			refused++;
			continue;
		}
		/* The first packet says which: an error, or a large reply. */
		pf = (struct pollfd){ .fd = cl[i], .events = POLLIN };
		if (poll(&pf, 1, 60000) != 1)
			continue;
		got = recv(cl[i], buf, sizeof(buf), MSG_PEEK);
		if (got > 0 && memmem(buf, (size_t)got, "reply larger than", 17))
			refused++;
		else if (got > 0)
			queued++;
	}
	printf("# %u hoarders of query-stats: %u replies queued, %u refused\n", n, queued, refused);
	msleep(10000);
	for (i = 0; i < n; i++)
		if (cl[i] >= 0)
			close(cl[i]);
	free(cl);
	free(req);
	return 0;
}

int main(int argc, char **argv)
{
	size_t body;
	int st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 4 && !strcmp(argv[1], "slow"))
		return cmd_slow(atoi(argv[2]), atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "trickle"))
		return cmd_trickle(atoi(argv[2]), atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "flood"))
		return cmd_flood(argv[2], atoi(argv[3]));
	if (argc == 2 && !strcmp(argv[1], "scrape")) {
		st = scrape(&body);
		printf("%d %zu\n", st, body);
		return 0;
	}
	fprintf(stderr, "usage: siege slow N HOLD | trickle N SECS | flood SOCK N | scrape\n");
	return 2;
}
