// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b15": an honest Prometheus scrape of
 * statsfd-collector under the attacks of issue 18, against the same scrape
 * of an idle collector, side by side in one run.
 *
 * The honest side: a fleet of VMs with vCPUs (32 x 8 by default)
 * registered by uid 0 as VMMs would, and a scraper that behaves as
 * Prometheus: one keep-alive connection (a new one when the collector
 * closed it), GET /metrics with basic auth and Accept-Encoding: gzip,
 * every INTERVAL_MS, each scrape given 10 s (Prometheus' default
 * scrape_timeout) to its last byte.  It scrapes from 127.0.0.200, the
 * collector's --http-scraper address; the attackers use 127.0.0.1 ..
 * 127.0.0.16, as any local user can.
 *
 * Seven states, each on a freshly started collector (defaults, but for
 * --web.config.file with a bcrypt hash of cost 10, --http-scraper and
 * --user-max-sources set to the honest fleet's size, which is what lets
 * its uid register it): idle, then each attack of tools/tests/siege.c
 * (the code collector_siege_test runs):
 *
 *  - slow: 60 slow readers from 8 addresses, a new one every 250 ms, each
 *    reading about 40 KB/s;
 *  - trickle: 256 connections from 16 addresses trickling their request
 *    headers a byte at a time, reconnecting as soon as they are cut (every
 *    general slot of the default --http-max-connections);
 *  - flood: 4 clients of the unix socket sending the largest query-stats
 *    filter the collector takes (1024 names, 1024 providers), back to back;
 *  - quota: a client of another uid (65534) holding its full quota of
 *    distinct vCPU stats fds (--user-max-sources: as many as the fleet);
 *  - guess: 8 password guessers from 4 addresses, wrong passwords back to
 *    back;
 *
 * and a control, "double": the quota attacker's sources registered by the
 * fleet's uid instead (its quota twice the fleet), no attack: what the
 * same exposition costs an honest scrape.
 *
 * The attackers run on the last CPU, the collector and the scraper on CPU
 * 0 (B15 runs in B14's 2-CPU boot): the question is whether the collector
 * keeps serving the honest scraper, not whether the attackers' own
 * processes can take CPU from it.  The attack runs 3 s before the first
 * scrape, which logs in (bcrypt; a fresh collector) and is reported apart
 * ("first_ms"); then SCRAPES scrapes are timed: p50, p99, max, failures
 * (counted at the 10 s timeout).  The collector's RSS is sampled every
 * 100 ms from its start (registration included) to its stop, and its
 * VmHWM read at the end.  Targets (issue 18): p99 under each attack at
 * most 2x idle, RSS at most 256 MB throughout; judged by report.py.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "siege.h"
#include "spawn.h"
#include "statsfd_client.h"

#define B15_SOCK	"/tmp/statsfd-bench-b15.sock"
#define B15_PORT_FILE	"/tmp/statsfd-bench-b15.port"
#define B15_WEB		"/tmp/statsfd-bench-b15-web.yml"
#define B15_SCRAPER	200	/* 127.0.0.200 */
#define B15_TIMEOUT_S	10.0
#define B15_MAX_SCRAPES	1000
/* prom:secret, and a wrong password for the guessers. */
#define B15_GOOD	"Authorization: Basic cHJvbTpzZWNyZXQ=\r\n"
#define B15_BAD		"Authorization: Basic cHJvbTp3cm9uZw==\r\n"
/* bcrypt of "secret", cost 10 (what Prometheus' docs suggest). */
#define B15_HASH	"$2b$10$Fdav3QhjUKa2RrhF7yRNt.ubqj9QIkZMBPDx9d2ihiAytnxlXJMAu"
#define B15_ATTACKER_UID 65534

enum b15_attack { B15_IDLE, B15_SLOW, B15_TRICKLE, B15_FLOOD, B15_QUOTA,
		  B15_GUESS, B15_DOUBLE, B15_STATES };

static const char *const b15_names[B15_STATES] = {
	"idle", "slow", "trickle", "flood", "quota", "guess", "double",
};

/* Run on CPU @cpu only (ignored when the guest has no such CPU). */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int last_cpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 1 ? (int)n - 1 : 0;
}

static void collector_child(void *arg)
{
	(void)arg;
	pin(0);
}

/* ---- the honest scraper ---- */

/*
 * Read one HTTP response from @s (its head, then Content-Length bytes, or
 * to EOF without one) before @deadline.  Return: the status (0: none),
 * *@body the body's bytes, *@close the connection cannot be reused.
 */
static int read_response(int s, double deadline, size_t *body, bool *close_it)
{
	struct siege_buf b = { 0 };
	size_t head = 0, want = 0;
	bool open = true, has_len = false;
	int status = 0;
	const char *p;

	*close_it = true;
	*body = 0;
	while (open && now_s() < deadline) {
		open = siege_read_some(s, &b, 100, (size_t)1 << 30);
		p = !head && b.data ? strstr(b.data, "\r\n\r\n") : NULL;
		if (p) {
			head = p + 4 - b.data;
			if (sscanf(b.data, "HTTP/1.%*d %d", &status) != 1)
				status = 0;
			p = strcasestr(b.data, "\r\nContent-Length:");
			if (p && p < b.data + head) {
				has_len = true;
				want = head + strtoull(p + 17, NULL, 10);
			}
		}
		if (has_len && b.len >= want)
			break;
	}
	if (!head || (has_len && b.len < want) || (!has_len && open))
		status = 0;	/* cut, or past the deadline */
	else
		*body = b.len - head;
	if (status && has_len && !strcasestr(b.data, "\r\nConnection: close"))
		*close_it = false;
	siege_buf_free(&b);
	return status;
}

/*
 * One scrape as Prometheus makes it, on the keep-alive connection *@s
 * (made, or made again once, when the collector closed it).  Return: its
 * wall time in ms, *@status the HTTP status (0: failed or timed out).
 */
static double honest_scrape(int *s, int *status, size_t *len)
{
	static const char req[] =
		"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		"User-Agent: Prometheus/2.42.0\r\n"
		"Accept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
		"Accept-Encoding: gzip\r\n"
		"X-Prometheus-Scrape-Timeout-Seconds: 10\r\n" B15_GOOD "\r\n";
	double t0 = now_s(), deadline = t0 + B15_TIMEOUT_S;
	bool close_it = true;
	int attempt;

	*status = 0;
	*len = 0;
	for (attempt = 0; attempt < 2 && !*status && now_s() < deadline; attempt++) {
		if (*s < 0)
			*s = siege_connect(B15_SCRAPER, 0);
		if (*s < 0)
			break;
		if (send(*s, req, sizeof(req) - 1, MSG_NOSIGNAL) == sizeof(req) - 1)
			*status = read_response(*s, deadline, len, &close_it);
		if (!*status || close_it) {
			close(*s);
			*s = -1;
		}
	}
	return (now_s() - t0) * 1e3;
}

/* ---- the collector's RSS, sampled ---- */

struct rss_sampler {
	pthread_t thread;
	pid_t pid;
	volatile bool stop;
	long max_kib;
};

static void *rss_thread(void *arg)
{
	struct rss_sampler *r = arg;

	while (!r->stop) {
		long kib = proc_status(r->pid, "VmRSS");

		if (kib > r->max_kib)
			r->max_kib = kib;
		msleep(100);
	}
	return NULL;
}

/* ---- the attacks ---- */

struct b15_attackers {
	pid_t pid[8];
	unsigned int n;
	long quota_sources;	/* what the quota attacker got registered */
};

/*
 * The quota attacker: as @uid, registers the vCPUs of @q (VM by VM) until
 * the collector refuses or @max are in, writes the count to @wr, holds
 * them until SIGTERM.
 */
static pid_t quota_attacker(const struct fleet *q, uid_t uid, unsigned int max, int wr)
{
	unsigned int i, got = 0, added;
	pid_t pid = fork();
	char *why = NULL;
	int s;

	if (pid)
		return pid;
	if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
		_exit(1);
	s = statsfd_msg_connect(B15_SOCK);
	for (i = 0; s >= 0 && i < (unsigned int)q->nvm && got < max; i++) {
		unsigned int n = (unsigned int)q->nvcpu;
		char vm[32];

		if (n > max - got)
			n = max - got;
		snprintf(vm, sizeof(vm), "quota-%u", i);
		added = siege_add_vcpus(s, "statsfd_vm", vm, q->vcpu_stats + i * q->nvcpu,
					0, n, &why);
		got += added;
		if (why)
			break;
	}
	if (why)
		fprintf(stderr, "bench: b15 quota attacker stopped after %u: %.200s\n",
			got, why);
	if (write(wr, &got, sizeof(got)) != sizeof(got))
		_exit(1);
	close(wr);
	/* Held until SIGTERM. */
	for (;;)
		pause();
}

static void attack_start(enum b15_attack a, struct b15_attackers *at,
			 const struct fleet *q, unsigned int quota, const char *query)
{
	unsigned int i, got = 0;
	int p[2];

	at->n = 0;
	at->quota_sources = -1;
	/* The attackers' processes on the last CPU (they inherit it). */
	pin(last_cpu());
	switch (a) {
	case B15_SLOW:
		at->pid[at->n++] = siege_slow_readers(60, 8, 250);
		break;
	case B15_TRICKLE:
		at->pid[at->n++] = siege_tricklers(256, 1, 16);
		break;
	case B15_FLOOD:
		for (i = 0; i < 4; i++)
			at->pid[at->n++] = siege_flood(B15_SOCK, query);
		break;
	case B15_QUOTA:
	case B15_DOUBLE:
		/* The control: the same sources, registered by the fleet's uid. */
		if (pipe(p))
			die("pipe");
		at->pid[at->n++] = quota_attacker(q, a == B15_QUOTA ? B15_ATTACKER_UID : 0,
						  quota, p[1]);
		close(p[1]);
		if (read(p[0], &got, sizeof(got)) == sizeof(got))
			at->quota_sources = got;
		close(p[0]);
		break;
	case B15_GUESS:
		for (i = 0; i < 8; i++)
			at->pid[at->n++] = siege_guesser(1 + i % 4, B15_BAD);
		break;
	default:
		break;
	}
	pin(0);
}

static void attack_stop(struct b15_attackers *at)
{
	unsigned int i;

	for (i = 0; i < at->n; i++)
		siege_stop(at->pid[i]);
	at->n = 0;
}

/* ---- one state ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q)
{
	int i = (int)(q * n);

	return n ? sorted[i < n ? i : n - 1] : 0;
}

/* The collector's counters that say what it did about an attack. */
static const char *const b15_counters[] = {
	"statsfd_collector_http_busy_total",
	"statsfd_collector_http_refused_total",
	"statsfd_collector_http_evicted_total",
	"statsfd_collector_http_deadlines_total",
	"statsfd_collector_http_auth_busy_total",
	"statsfd_collector_sources",
	"statsfd_collector_request_max_seconds",
};

static void b15_state(enum b15_attack a, const struct fleet *f,
		      const struct fleet *q, const char *query, int scrapes,
		      int interval_ms)
{
	static double ms[B15_MAX_SCRAPES];
	char nsrc[16];
	const char *argv[] = {
		getenv("STATSFD_BENCH_COLLECTOR"), "--socket", B15_SOCK,
		"--socket-mode", "0666", "--listen", "127.0.0.1:0",
		"--port-file", B15_PORT_FILE, "--allow-uid", "0,65534",
		"--web.config.file", B15_WEB, "--http-scraper", "127.0.0.200",
		"--user-max-sources", nsrc, NULL,
	};
	struct rss_sampler rss = { 0 };
	struct b15_attackers at = { 0 };
	int i, s = -1, sock, status, failed = 0, n = 0;
	double first_ms, next;
	size_t len = 0, first_len;
	unsigned int k;
	pid_t pid;

	unsigned int quota = f->nvm * (1 + f->nvcpu);

	/* The control state's uid holds the fleet and as many again. */
	snprintf(nsrc, sizeof(nsrc), "%u", a == B15_DOUBLE ? 2 * quota : quota);
	jopen(b15_names[a], '{');
	pid = spawn_daemon(argv, NULL, B15_PORT_FILE, 60, &siege_port, collector_child, NULL);
	if (pid < 0) {
		jstr("error", "collector never came up");
		jclose('}');
		return;
	}
	rss.pid = pid;
	if (pthread_create(&rss.thread, NULL, rss_thread, &rss))
		die("pthread_create");
	sock = statsfd_msg_connect(B15_SOCK);
	if (sock < 0 || collector_register(sock, f)) {
		jstr("error", "registering the fleet failed");
		goto out;
	}
	attack_start(a, &at, q, quota, query);
	if (a == B15_QUOTA || a == B15_DOUBLE)
		jnum("attacker_sources", at.quota_sources);
	msleep(3000);
	first_ms = honest_scrape(&s, &status, &first_len);
	jnum("first_ms", first_ms);
	jnum("first_status", status);
	next = now_s();
	for (i = 0; i < scrapes && i < B15_MAX_SCRAPES; i++) {
		next += interval_ms / 1000.0;
		if (next > now_s())
			msleep((int)((next - now_s()) * 1000));
		ms[n] = honest_scrape(&s, &status, &len);
		if (!status || status != 200) {
			failed++;
			ms[n] = B15_TIMEOUT_S * 1e3;
			fprintf(stderr, "bench: b15 %s: scrape %d: HTTP %d\n",
				b15_names[a], i, status);
		}
		n++;
	}
	qsort(ms, n, sizeof(ms[0]), cmp_double);
	jnum("scrapes", n);
	jnum("failed", failed);
	jnum("body_gzip_bytes", len);
	jnum("p50_ms", quantile(ms, n, 0.5));
	jnum("p99_ms", quantile(ms, n, 0.99));
	jnum("max_ms", n ? ms[n - 1] : 0);
	for (k = 0; k < sizeof(b15_counters) / sizeof(b15_counters[0]); k++)
		jnum(b15_counters[k] + strlen("statsfd_collector_"),
		     siege_metric(B15_SCRAPER, B15_GOOD, b15_counters[k]));
	attack_stop(&at);
out:
	if (s >= 0)
		close(s);
	if (sock >= 0)
		close(sock);
	rss.stop = true;
	pthread_join(rss.thread, NULL);
	jnum("rss_max_mb", rss.max_kib / 1024.0);
	jnum("hwm_mb", proc_status(pid, "VmHWM") / 1024.0);
	if (!stop_daemon(&pid))
		jstr("error", "the collector did not exit cleanly");
	jclose('}');
}

void phase_b15(int nvm, int nvcpu, int scrapes, int interval_ms)
{
	const char *cmd = getenv("STATSFD_BENCH_COLLECTOR");
	struct fleet f, q;
	struct sfile sf;
	char *query;
	FILE *w;
	int a;

	jbegin("b15");
	jnum("vms", nvm);
	jnum("vcpus_per_vm", nvcpu);
	jnum("interval_ms", interval_ms);
	jnum("cpus", sysconf(_SC_NPROCESSORS_ONLN));
	if (!cmd || !*cmd) {
		jstr("error", "no collector in the guest (statsfd-collector not built)");
		jend();
		return;
	}
	signal(SIGPIPE, SIG_IGN);
	pin(0);
	w = fopen(B15_WEB, "w");
	if (!w)
		die("%s", B15_WEB);
	fprintf(w, "basic_auth_users:\n  prom: '%s'\n", B15_HASH);
	fclose(w);
	chmod(B15_WEB, 0644);

	fleet_make(&f, nvm, nvcpu, vm_dev());
	/* The quota attacker's own vCPUs: one VM more than its quota needs. */
	fleet_make(&q, (nvm * (1 + nvcpu)) / nvcpu + 1, nvcpu, vm_dev());
	/* The flood's filter names a real stat. */
	sfile_open(&sf, dup(f.vcpu_stats[0]));
	query = siege_filter_query(sfile_desc(&sf, 0)->name, "statsfd_vm");
	sfile_close(&sf);
	if (!query)
		die("malloc");
	jnum("sources", nvm * (1 + nvcpu));
	jnum("scrapes", scrapes);
	for (a = 0; a < B15_STATES; a++)
		b15_state(a, &f, &q, query, scrapes, interval_ms);
	jend();
	free(query);
	fleet_free(&q);
	fleet_free(&f);
	unlink(B15_WEB);
}
