// SPDX-License-Identifier: GPL-2.0
/*
 * One HTTP/1.0 GET to the collector on loopback, for the host tests that
 * scrape it (collector_test, collector_hostile_test, sd_test): no curl, so
 * the timing is the daemon's and a sanitizer sees the whole exchange.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpget.h"
#include "spawn.h"
#include "statsfd_expo.h"

/**
 * test_http_get_wait() - GET @path from 127.0.0.1:@port
 * @port: the collector's HTTP port
 * @path: e.g. "/metrics"
 * @secs: if not NULL, the time from connect to the end of the answer
 * @silence_ms: how long the server may stay silent before the answer is
 *	taken as complete (a large exposition renders before its first byte)
 *
 * Reads until the server closes (HTTP/1.0) or stays silent for
 * @silence_ms.
 *
 * Return: the body, malloc()ed; NULL if nothing answered, or the answer is
 * no HTTP/1.x response with a header block.
 */
char *test_http_get_wait(unsigned int port, const char *path, double *secs,
			 int silence_ms)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct statsfd_buf b = { 0 };
	char req[128], buf[65536];
	double t0 = now_s();
	char *body;
	int s;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sin, sizeof(sin))) {
		if (s >= 0)
			close(s);
		return NULL;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
	if (write(s, req, strlen(req)) < 0) {
		close(s);
		return NULL;
	}
	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, silence_ms) != 1)
			break;
		r = read(s, buf, sizeof(buf));
		if (r <= 0)
			break;
		statsfd_buf_append(&b, buf, (size_t)r);
	}
	close(s);
	if (secs)
		*secs = now_s() - t0;
	if (!b.data || strncmp(b.data, "HTTP/1.", 7) || !strstr(b.data, "\r\n\r\n")) {
		statsfd_buf_free(&b);
		return NULL;
	}
	body = strdup(strstr(b.data, "\r\n\r\n") + 4);
	statsfd_buf_free(&b);
	return body;
}

/**
 * test_http_get() - GET @path from 127.0.0.1:@port, 30 s of silence at most
 * @port: the collector's HTTP port
 * @path: e.g. "/metrics"
 * @secs: if not NULL, the time from connect to the end of the answer
 *
 * 30 s: a sanitized collector rendering thousands of sources on a loaded
 * host once took more than 5 s to its first byte (collector_test's
 * 4000-source scrape, which allows 15 s in all, then read nothing).
 *
 * Return: as test_http_get_wait().
 */
char *test_http_get(unsigned int port, const char *path, double *secs)
{
	return test_http_get_wait(port, path, secs, 30000);
}
