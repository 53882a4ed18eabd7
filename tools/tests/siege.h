/* SPDX-License-Identifier: GPL-2.0 */
/*
 * siege.h - attacks any local user can make on statsfd-collector: slow
 * readers, tricklers, password guessers, query-stats filter floods, and
 * the raw HTTP and unix-socket clients they are made of.  One copy, linked
 * by collector_siege_test (which checks the collector's bounds under them)
 * and by statsfd-bench's B15 (which times an honest scrape under them):
 * libc and statsfd_msg.c only, since the bench is linked static.
 */
#ifndef TESTS_SIEGE_H
#define TESTS_SIEGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The collector's HTTP port on 127.0.0.1: set before any attack. */
extern unsigned int siege_port;
/* How long siege_scrape() and siege_metric() read a response (20 s). */
extern unsigned int siege_read_s;

/* A growing byte buffer, NUL-terminated; free with siege_buf_free(). */
struct siege_buf {
	char *data;
	size_t len, cap;
};

void siege_buf_free(struct siege_buf *b);

/*
 * A TCP connection to the collector from 127.0.0.@src (0: any), with a
 * receive buffer of @rcvbuf bytes (0: the default); -1 when refused.
 */
int siege_connect(unsigned int src, int rcvbuf);
/* Append what arrives within @ms (then 0 ms) up to @max; false at EOF. */
bool siege_read_some(int s, struct siege_buf *b, int ms, size_t max);
/*
 * One scrape from 127.0.0.@src with the header lines @auth ("" or
 * "Authorization: ...\r\n"): HTTP/1.0, read until the server closes or
 * siege_read_s pass.  *@body_len (if not NULL): the body's bytes.
 * Return: the HTTP status, or 0.
 */
int siege_scrape(unsigned int src, const char *auth, size_t *body_len);
/* The value of metric @name in a full scrape from @src with @auth, or -1. */
double siege_metric(unsigned int src, const char *auth, const char *name);

/*
 * siege_slow_reader() - a reader that pins a response: a connection from
 * 127.0.0.@src with a 4 KiB receive buffer sends GET /metrics and reads
 * only the response's head.  *@status: 200, 503, ... or 0; *@retry_after:
 * the head had a Retry-After.  Return: the connection (kept open), or -1.
 */
int siege_slow_reader(unsigned int src, int *status, bool *retry_after);

/*
 * The attacks that run until stopped: each is a child process, ended by
 * siege_stop().
 *
 * siege_slow_readers() - up to @n slow readers from 127.0.0.1 ..
 * 127.0.0.@naddr, a new one every @every_ms, each reading 4 KiB every
 * 100 ms (about 40 KB/s); one that is cut or done is replaced.
 *
 * siege_tricklers() - @n (at most 64) connections from 127.0.0.@first
 * and the @naddr - 1 addresses after it, each trickling request headers
 * a byte every 200 ms and reconnecting as soon as it is cut or refused.
 *
 * siege_guesser() - scrapes from 127.0.0.@src with the wrong password
 * @bad_auth, back to back.
 *
 * siege_flood() - a client of the unix socket @sock_path sending @query
 * and reading its reply, back to back.
 */
pid_t siege_slow_readers(unsigned int n, unsigned int naddr, int every_ms);
pid_t siege_tricklers(unsigned int n, unsigned int first, unsigned int naddr);
pid_t siege_guesser(unsigned int src, const char *bad_auth);
pid_t siege_flood(const char *sock_path, const char *query);
/* SIGTERM to @pid, reaped. */
void siege_stop(pid_t pid);

/*
 * siege_filter_query() - the largest query-stats filter the collector
 * takes: 1024 names (@name, then 1023 that match nothing) and 1024
 * providers (1023 that match nothing, then @provider with @name).
 * Return: the request, malloc()ed.
 */
char *siege_filter_query(const char *name, const char *provider);

/* One request on the unix socket @s, its whole reply (NULL: none in @ms). */
char *siege_call(int s, const char *json, const int *fds, unsigned int nfds, int ms);
/* siege_call() with 60 s for the reply. */
char *siege_rpc(int s, const char *json, const int *fds, unsigned int nfds);

/*
 * siege_add_vcpus() - register @n stats fds on connection @s as vCPUs
 * @first .. @first + @n - 1 of VM @vm of @provider, 200 a message.
 * Return: how many were added; *@why (if not NULL) the refusal that
 * stopped it, malloc()ed, or NULL.
 */
unsigned int siege_add_vcpus(int s, const char *provider, const char *vm,
			     const int *fds, unsigned int first, unsigned int n,
			     char **why);

#endif /* TESTS_SIEGE_H */
