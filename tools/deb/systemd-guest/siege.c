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
 * Exit status: 0 when the attack ran, 1 when it could not start.  The
 * attacks and the HTTP and socket clients are collector_siege_test's
 * (tools/tests/siege.c).
 */
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "siege.h"
#include "spawn.h"
#include "statsfd_client.h"

/* One scrape from 127.0.0.1, read to its end within 60 s: its status. */
static int scrape(size_t *body)
{
	return siege_scrape(1, "", body);
}

static int cmd_slow(unsigned int n, unsigned int hold)
{
	unsigned int i, n200 = 0, n503 = 0, nref = 0;
	int *fd = calloc(n, sizeof(int));
	size_t body;
	int st;

	if (!fd)
		return 1;
	for (i = 0; i < n; i++) {
		bool retry_after;

		/* The status line, then nothing more is read. */
		fd[i] = siege_slow_reader(2 + i % 16, &st, &retry_after);
		n200 += st == 200;
		n503 += st == 503;
		nref += st != 200 && st != 503;
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

static int cmd_trickle(unsigned int n, unsigned int secs)
{
	unsigned int scrapes = 0, served = 0;
	double t0 = now_s();
	size_t body;
	pid_t pid;

	if (n > 64)
		n = 64;
	pid = siege_tricklers(n, 2, 8);
	if (pid < 0)
		return 1;
	while (now_s() - t0 < secs) {
		scrapes++;
		served += scrape(&body) == 200;
		msleep(1000);
	}
	siege_stop(pid);
	printf("# %u tricklers for %u s: %u of %u scrapes from 127.0.0.1 served\n",
	       n, secs, served, scrapes);
	return 0;
}

static int cmd_flood(const char *path, unsigned int n)
{
	char *req, *out, *p;
	unsigned int i, queued = 0, refused = 0;
	int s, *cl = calloc(n, sizeof(int));

	req = malloc(4 * 15000 + 128);
	if (!cl || !req)
		return 1;
	p = req + sprintf(req, "{\"execute\":\"query-stats\",\"arguments\":{\"names\":[");
	for (i = 0; i < 15000; i++)
		p += sprintf(p, "%s\"%c\"", i ? "," : "", 'a' + i % 26);
	memcpy(p, "]}}", 4);
	s = statsfd_msg_connect(path);
	out = s < 0 ? NULL : siege_rpc(s, req, NULL, 0);
	if (!out) {
		printf("# flood: no answer to the 15,000-name query\n");
		return 1;
	}
	printf("# 15,000 names: %.160s\n", out);
	free(out);
	out = siege_rpc(s, "{\"execute\":\"query-stats\"}", NULL, 0);
	if (out)
		printf("# a query-stats reply, read in full: %zu bytes\n", strlen(out));
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
	siege_port = 9477;
	/* A scrape under the siege may be slow in a TCG guest. */
	siege_read_s = 60;
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
