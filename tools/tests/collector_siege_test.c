// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector under siege from its own host: attacks any
 * local user can make on the HTTP side, each against a freshly started
 * sanitized daemon, each bounded by counts and bytes, never by timing:
 *
 *  - slow readers, one per render tick, each pinning a rendering: the
 *    daemon's RSS stays within --http-max-held-bytes plus a few renderings,
 *    the readers beyond it get 503 with Retry-After;
 *  - a reader that never reads: its response is cut at
 *    --http-send-timeout, short of its Content-Length;
 *  - a writer trickling its request headers: cut at --http-header-timeout,
 *    long before it could finish;
 *  - tricklers holding every connection slot, from several loopback
 *    addresses, reconnecting as soon as they are cut: a scraper that
 *    authenticates, or comes from the --http-scraper address, is served
 *    every time (reserved slots);
 *  - password guessers from another address on a fresh daemon: the
 *    --http-scraper's first login is served at once (bcrypt budgets per
 *    address).
 *
 * The attackers and the raw clients are tools/tests/siege.c, which
 * statsfd-bench's B15 runs too (to time an honest scrape under them).
 *
 *   collector_siege_test COLLECTOR_BINARY   (as root; TAP on stdout)
 *
 * STRESS=1 makes the attacks larger.
 */
#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "siege.h"
#include "spawn.h"
#include "statsfd_expo.h"
#include "statsfd_client.h"
#include "tap.h"

static char dir[] = "/tmp/statsfd-siege-test.XXXXXX";
static char sock_path[128], port_path[128], web_path[128];
static const char *bin;
static pid_t daemon_pid = -1;
static bool stress;
/* For the next start(): the daemon's stderr to this file, NOTIFY_SOCKET. */
static const char *daemon_log, *notify_env;
/* For the next start(): a low fd limit (the daemon raises it to its need). */
static bool low_nofile;

/* What start() sets up in the child before the exec. */
static void child_setup(void *arg)
{
	/* RSS is measured: freed renderings must not sit in quarantine. */
	setenv("ASAN_OPTIONS", "detect_leaks=0:quarantine_size_mb=0", 1);
	if (notify_env)
		setenv("NOTIFY_SOCKET", notify_env, 1);
	if (low_nofile) {
		struct rlimit rl = { 64, 64 };

		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (daemon_log) {
		int lf = open(daemon_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (lf >= 0)
			dup2(lf, 2);
	}
}

/* Start the daemon with the common options and @extra (NULL-terminated). */
static int start(const char *const *extra)
{
	const char *const argv[] = {
		bin, "--socket", sock_path, "--socket-mode", "0666", "--listen",
		"0.0.0.0:0", "--port-file", port_path, "--user", "nobody",
		"--allow-uid", "0", "--interval", "100", "--test-accept-memfd", NULL,
	};

	daemon_pid = spawn_daemon(argv, extra, port_path, 30, &siege_port, child_setup, NULL);
	return daemon_pid < 0 ? -1 : 0;
}

static bool stop(void)
{
	return stop_daemon(&daemon_pid);
}

/* A client registering @n vCPUs of VM "big": kept open (the sources live). */
static int register_vcpus(unsigned int n)
{
	static unsigned char buf[1 << 15];
	unsigned int i, done = 0;
	int s = statsfd_msg_connect(sock_path);

	if (s < 0)
		return -1;
	while (done < n) {
		unsigned int k = n - done > 200 ? 200 : n - done, added;
		int fds[200];
		char *why;

		for (i = 0; i < k; i++) {
			char id[32];

			snprintf(id, sizeof(id), "vcpu%u", done + i);
			fds[i] = img_memfd(buf, img_build(buf, sizeof(buf), id, 48,
							  img_vcpu_stats,
							  img_vcpu_nstats, NULL, 0));
		}
		added = siege_add_vcpus(s, "siege", "big", fds, done, k, &why);
		for (i = 0; i < k; i++)
			close(fds[i]);
		if (added < k) {
			tap_diag("add-sources: %s", why);
			free(why);
			close(s);
			return -1;
		}
		done += k;
	}
	return s;
}

/* ---- memory: slow readers ------------------------------------------------- */

static void test_slow_readers(void)
{
	const char *extra[] = { "--http-max-held-bytes", "8388608",
				"--http-send-timeout", "600",
				"--http-max-per-ip", "1000",
				"--http-max-connections", "1000", NULL };
	unsigned int nreaders = stress ? 60 : 30, i, n503 = 0, n200 = 0, nretry = 0;
	int *readers = calloc(nreaders, sizeof(int));
	long rss0, rss1;
	size_t body = 0;
	int vm;

	if (!tap_ok(readers && !start(extra), "collector with --http-max-held-bytes 8 MiB starts"))
		return;
	vm = register_vcpus(600);
	tap_ok(vm >= 0, "600 vCPUs registered");
	/* Two scrapes warm the allocator; the body's size sets the bounds. */
	siege_scrape(0, "", &body);
	siege_scrape(0, "", &body);
	rss0 = proc_status(daemon_pid, "VmRSS");
	tap_ok(body > (2u << 20), "the exposition is %zu bytes", body);
	for (i = 0; i < nreaders; i++) {
		int st;
		bool retry;

		readers[i] = siege_slow_reader(0, &st, &retry);
		n200 += st == 200;
		n503 += st == 503;
		nretry += st == 503 && retry;
		/* A new rendering for the next reader (read ticks: 100 ms). */
		msleep(250);
	}
	rss1 = proc_status(daemon_pid, "VmRSS");
	/*
	 * Bound: the cap, plus the rendering being made and the current one
	 * (each response is sent from them, never a copy), plus slack.
	 */
	tap_ok(rss1 - rss0 < (long)(8 * 1024 + 3 * body / 1024 + 16 * 1024),
	       "%u slow readers: RSS grew %ld KiB (the cap is 8192 KiB, a rendering %zu KiB)",
	       nreaders, rss1 - rss0, body / 1024);
	tap_ok(n200 >= 1 && n503 >= 1 && nretry == n503,
	       "readers beyond the cap get 503 with Retry-After (%u served, %u 503, %u with Retry-After)",
	       n200, n503, nretry);
	for (i = 0; i < nreaders; i++)
		if (readers[i] >= 0)
			close(readers[i]);
	/* Closed: what they held is free, a scrape is served again. */
	{
		double t0 = now_s();
		int st = 0;

		while (now_s() - t0 < 30 && (st = siege_scrape(0, "", NULL)) != 200)
			msleep(200);
		tap_ok(st == 200, "readers gone: a scrape is served (HTTP %d)", st);
	}
	tap_ok(siege_metric(0, "", "statsfd_collector_http_busy_total") == n503,
	       "statsfd_collector_http_busy_total counts the 503s");
	if (vm >= 0)
		close(vm);
	tap_ok(stop(), "clean exit");
	free(readers);
}

/* ---- time: a reader that never reads, a writer that trickles -------------- */

static void test_send_deadline(void)
{
	const char *extra[] = { "--http-send-timeout", "2", NULL };
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	struct siege_buf b = { 0 };
	double t0;
	bool open = true;
	size_t clen = 0;
	const char *p;
	int vm, s;

	if (!tap_ok(!start(extra), "collector with --http-send-timeout 2 starts"))
		return;
	/* More than the sockets' buffers take (8 MB): 1600 vCPUs, 9 MB. */
	vm = register_vcpus(1600);
	tap_ok(vm >= 0, "1600 vCPUs registered");
	s = siege_connect(0, 4096);
	if (s < 0 || write(s, req, sizeof(req) - 1) < 0)
		tap_diag("connect: %s", strerror(errno));
	/* Nothing read for 6 s: three times the deadline. */
	msleep(6000);
	t0 = now_s();
	while (open && now_s() - t0 < 60)
		open = siege_read_some(s, &b, 5000, (size_t)1 << 30);
	p = b.data ? strcasestr(b.data, "\r\nContent-Length: ") : NULL;
	if (p)
		clen = strtoul(p + 18, NULL, 10);
	p = b.data ? strstr(b.data, "\r\n\r\n") : NULL;
	tap_ok(!open && p && clen && b.len - (size_t)(p + 4 - b.data) < clen,
	       "a reader reading nothing is cut: %zu of %zu bytes, then closed",
	       p ? b.len - (size_t)(p + 4 - b.data) : 0, clen);
	siege_buf_free(&b);
	if (s >= 0)
		close(s);
	tap_ok(siege_metric(0, "", "statsfd_collector_http_deadlines_total") >= 1,
	       "statsfd_collector_http_deadlines_total counts it");
	if (vm >= 0)
		close(vm);
	tap_ok(stop(), "clean exit");
}

static void test_header_deadline(void)
{
	const char *extra[] = { "--http-header-timeout", "1", NULL };
	static const char hdr[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: "
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
	unsigned int sent = 0;
	int s;

	if (!tap_ok(!start(extra), "collector with --http-header-timeout 1 starts"))
		return;
	s = siege_connect(0, 0);
	/* One byte every 50 ms: the whole request would take 10 s. */
	while (s >= 0 && sent < sizeof(hdr) - 1) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		if (send(s, hdr + sent, 1, MSG_NOSIGNAL) != 1)
			break;
		sent++;
		/* Cut: readable (EOF or reset). */
		if (poll(&p, 1, 50) == 1)
			break;
	}
	tap_ok(sent < sizeof(hdr) - 1,
	       "a request trickled a byte per 50 ms is cut after %u of its %zu bytes",
	       sent, sizeof(hdr) - 1);
	if (s >= 0)
		close(s);
	tap_ok(stop(), "clean exit");
}

/* ---- slots: tricklers holding every slot ---------------------------------- */

static void write_web_config(const char *hash)
{
	FILE *f = fopen(web_path, "w");

	if (!f)
		return;
	fprintf(f, "basic_auth_users:\n  prom: '%s'\n", hash);
	fclose(f);
	chmod(web_path, 0644);
}

/* "secret" for prom, at bcrypt cost @cost. */
static const char *make_hash(int cost)
{
	static char out[128];
	char *salt = crypt_gensalt("$2b$", (unsigned long)cost, NULL, 0);
	const char *h = salt ? crypt("secret", salt) : NULL;

	snprintf(out, sizeof(out), "%s", h ? h : "");
	return out;
}

/* Every one of @n scrapes from @src is served, each within 3 attempts. */
static unsigned int scrapes_served(unsigned int src, const char *auth,
				   unsigned int n, unsigned int *attempts)
{
	unsigned int i, a, ok = 0;

	*attempts = 0;
	for (i = 0; i < n; i++) {
		for (a = 0; a < 3; a++) {
			++*attempts;
			if (siege_scrape(src, auth, NULL) == 200) {
				ok++;
				break;
			}
			msleep(100);
		}
	}
	return ok;
}

static void test_reserved_slots(void)
{
	const char *auth = "Authorization: Basic cHJvbTpzZWNyZXQ=\r\n";
	const char *slots[] = { "--http-max-connections", "6", "--http-max-per-ip", "2",
				"--http-reserved", "2", "--http-header-timeout", "2",
				NULL };
	const char *extra[16];
	unsigned int i, n = 0, ok, attempts, want = stress ? 20 : 10;
	int st;
	pid_t t;

	/* Basic auth: a scraper on 127.0.0.1, as every local user. */
	write_web_config(make_hash(4));
	for (i = 0; slots[i]; i++)
		extra[n++] = slots[i];
	extra[n++] = "--web.config.file";
	extra[n++] = web_path;
	extra[n] = NULL;
	if (!tap_ok(!start(extra), "collector with 6+2 slots and basic auth starts"))
		return;
	t = siege_tricklers(16, 1, 6);
	/* Let them take every general slot. */
	msleep(1500);
	ok = scrapes_served(1, auth, want, &attempts);
	tap_ok(ok == want,
	       "16 tricklers from 6 addresses: an authenticated scraper on 127.0.0.1 served %u of %u times (%u attempts)",
	       ok, want, attempts);
	st = siege_scrape(1, "", NULL);
	tap_ok(st != 200, "a scraper without credentials is not served (HTTP %d)", st);
	siege_stop(t);
	tap_ok(siege_metric(1, auth, "statsfd_collector_http_refused_total") +
	       siege_metric(1, auth, "statsfd_collector_http_evicted_total") > 0,
	       "the tricklers were refused slots, or lost reserved ones");
	tap_ok(stop(), "clean exit");

	/* No authentication: the scraper's address is configured. */
	n = 0;
	for (i = 0; slots[i]; i++)
		extra[n++] = slots[i];
	extra[n++] = "--http-scraper";
	extra[n++] = "127.0.0.9";
	extra[n] = NULL;
	if (!tap_ok(!start(extra), "collector with 6+2 slots and --http-scraper 127.0.0.9 starts"))
		return;
	t = siege_tricklers(16, 1, 6);
	msleep(1500);
	ok = scrapes_served(9, "", want, &attempts);
	tap_ok(ok == want,
	       "16 tricklers from 6 addresses: the scraper at 127.0.0.9 served %u of %u times (%u attempts)",
	       ok, want, attempts);
	siege_stop(t);
	tap_ok(stop(), "clean exit");
}

/* ---- bcrypt: guessers ----------------------------------------------------- */

static void test_guessers(void)
{
	const char *good = "Authorization: Basic cHJvbTpzZWNyZXQ=\r\n";
	/* prom:wrong */
	const char *bad = "Authorization: Basic cHJvbTp3cm9uZw==\r\n";
	/*
	 * 1 ms of bcrypt a second per address: a guesser's address is in
	 * debt after its first guess, whatever the load.
	 */
	const char *extra[] = { "--web.config.file", web_path, "--http-scraper",
				"127.0.0.9", "--http-auth-cpu-per-ip", "1", NULL };
	unsigned int i, ok = 0, want = 5, n429 = 0;
	pid_t g[8];

	write_web_config(make_hash(10));
	if (!tap_ok(!start(extra), "collector with bcrypt cost 10, --http-scraper 127.0.0.9 starts"))
		return;
	for (i = 0; i < 8; i++)
		g[i] = siege_guesser(1 + i % 4, bad);
	/* The guessers spend every budget they can. */
	msleep(1000);
	/* Fresh daemon: the first login needs bcrypt; the next are cached. */
	for (i = 0; i < want; i++) {
		int st = siege_scrape(9, good, NULL);

		ok += st == 200;
		if (st != 200)
			tap_diag("scrape %u: HTTP %d", i, st);
	}
	tap_ok(ok == want,
	       "8 guessers: the scraper at 127.0.0.9 logged in %u of %u times at the first attempt",
	       ok, want);
	for (i = 0; i < 8; i++)
		siege_stop(g[i]);
	n429 = (unsigned int)siege_metric(9, good, "statsfd_collector_http_auth_busy_total");
	tap_ok(n429 > 0, "the guessers were answered 429 (%u times)", n429);
	tap_ok(stop(), "clean exit");
}

/* ---- work per request: filter floods, hoarded replies ----------------------- */

static void test_filter_flood(void)
{
	struct statsfd_buf req = { 0 };
	unsigned int i, nsrc = stress ? 2000 : 1000;
	double cpu0, cpu1;
	char *r, *q;
	int vm, s;

	if (!tap_ok(!start(NULL), "collector for the filter flood starts"))
		return;
	vm = register_vcpus(nsrc);
	tap_ok(vm >= 0, "%u vCPUs registered", nsrc);
	s = statsfd_msg_connect(sock_path);
	/* 15,000 names (the 60 KB query): above the cap. */
	statsfd_buf_printf(&req, "{\"execute\":\"query-stats\",\"arguments\":{\"names\":[");
	for (i = 0; i < 15000; i++)
		statsfd_buf_printf(&req, "%s\"%c\"", i ? "," : "", 'a' + i % 26);
	statsfd_buf_printf(&req, "]}}");
	cpu0 = proc_cpu(daemon_pid);
	r = siege_rpc(s, req.data, NULL, 0);
	cpu1 = proc_cpu(daemon_pid);
	tap_ok(r && strstr(r, "\"GenericError\"") &&
	       strstr(r, "names: more than 1024 entries: split the query"),
	       "15,000 names: refused, more than 1024 (%s)", r ? r : "no reply");
	free(r);
	tap_ok(cpu1 - cpu0 < 2.0, "refused for %.2f s of CPU (bound 2)", cpu1 - cpu0);
	/* 1024 names, one of them real, over every source: an index, not a scan. */
	q = siege_filter_query(img_vcpu_stats[0].name, "siege");
	cpu0 = proc_cpu(daemon_pid);
	r = q ? siege_rpc(s, q, NULL, 0) : NULL;
	free(q);
	cpu1 = proc_cpu(daemon_pid);
	{
		struct json_object *o = r ? json_tokener_parse(r) : NULL, *ret;

		tap_ok(o && json_object_object_get_ex(o, "return", &ret) &&
		       json_object_array_length(ret) == nsrc,
		       "1024 names and 1024 providers: answered, %u sources", nsrc);
		if (!o || !json_object_object_get_ex(o, "return", NULL))
			tap_diag("reply: %.300s", r ? r : "none");
		json_object_put(o);
	}
	free(r);
	tap_ok(cpu1 - cpu0 < 2.0, "in %.2f s of CPU (bound 2)", cpu1 - cpu0);
	tap_diag("statsfd_collector_request_max_seconds %.6f (the longest request)",
		 siege_metric(0, "", "statsfd_collector_request_max_seconds"));
	statsfd_buf_free(&req);
	close(s);
	if (vm >= 0)
		close(vm);
	tap_ok(stop(), "clean exit");
}

/*
 * Connections of one uid asking for large replies and reading none: the
 * replies are charged to the uid, so only the first is queued.
 */
static void test_reply_hoard(void)
{
	unsigned int i, n = stress ? 60 : 40, queued = 0, refused = 0;
	int *cl = calloc(n, sizeof(int)), vm;
	long rss0, rss1;
	size_t len = 0;
	char *r;

	if (!tap_ok(cl && !start(NULL), "collector for the reply hoarders starts"))
		return;
	vm = register_vcpus(1000);
	tap_ok(vm >= 0, "1000 vCPUs registered");
	/* The size of the reply, read once. */
	cl[0] = statsfd_msg_connect(sock_path);
	r = siege_rpc(cl[0], "{\"execute\":\"query-stats\"}", NULL, 0);
	len = r ? strlen(r) : 0;
	tap_ok(r && strstr(r, "\"return\"") && len > (400u << 10),
	       "query-stats over 1000 vCPUs: %zu bytes", len);
	free(r);
	close(cl[0]);
	rss0 = proc_status(daemon_pid, "VmRSS");
	for (i = 0; i < n; i++) {
		char buf[STATSFD_MSG_MAX];
		ssize_t got;
		struct pollfd p;

		cl[i] = statsfd_msg_connect(sock_path);
		statsfd_msg_send(cl[i], "{\"execute\":\"query-stats\"}", 25, NULL, 0);
		/* The first packet says which: an error, or a large reply. */
		p = (struct pollfd){ .fd = cl[i], .events = POLLIN };
		if (poll(&p, 1, 30000) != 1)
			continue;
		got = recv(cl[i], buf, sizeof(buf), 0);
		if (got > 0 && memmem(buf, (size_t)got, "reply larger than", 17))
			refused++;
		else if (got > 0)
			queued++;
	}
	rss1 = proc_status(daemon_pid, "VmRSS");
	/* At most 4 MiB queued for the uid, beyond what the sockets took. */
	tap_ok(queued >= 1 && refused >= 1 && queued + refused == n,
	       "%u hoarders of uid 0: %u replies queued, %u refused (the uid's budget)",
	       n, queued, refused);
	tap_ok(rss1 - rss0 < (long)(4 * 1024 + 2 * len / 1024 + 12 * 1024),
	       "RSS grew %ld KiB (a reply is %zu KiB)", rss1 - rss0, len / 1024);
	for (i = 0; i < n; i++)
		close(cl[i]);
	if (vm >= 0)
		close(vm);
	tap_ok(stop(), "clean exit");
	free(cl);
}

/* ---- quotas per uid, duplicates ------------------------------------------- */

static int vcpu_fd(unsigned int i)
{
	static unsigned char buf[1 << 15];
	char id[32];

	snprintf(id, sizeof(id), "q%u", i);
	return img_memfd(buf, img_build(buf, sizeof(buf), id, 48, img_vcpu_stats,
					img_vcpu_nstats, NULL, 0));
}

static char *add_vcpu(int s, const char *vm, unsigned int vcpu, int fd)
{
	char req[256];

	snprintf(req, sizeof(req), "{\"execute\":\"add-sources\",\"arguments\":{"
		 "\"provider\":\"siege\",\"vm\":\"%s\",\"sources\":[{\"target\":\"vcpu\",\"vcpu\":%u}]}}",
		 vm, vcpu);
	return siege_rpc(s, req, &fd, 1);
}

static void test_duplicates(void)
{
	int s, fd, d;
	char *r;

	if (!tap_ok(!start(NULL), "collector for duplicates starts"))
		return;
	s = statsfd_msg_connect(sock_path);
	fd = vcpu_fd(0);
	d = dup(fd);
	r = add_vcpu(s, "dup", 0, fd);
	tap_ok(r && strstr(r, "\"return\""), "a stats fd registered");
	free(r);
	r = add_vcpu(s, "dup", 1, d);
	tap_ok(r && strstr(r, "already a source"),
	       "a dup of it, as another vCPU: refused (%s)", r ? r : "no reply");
	free(r);
	{
		int two[2] = { vcpu_fd(1), -1 };
		char req[300];

		two[1] = dup(two[0]);
		snprintf(req, sizeof(req), "{\"execute\":\"add-sources\",\"arguments\":{"
			 "\"provider\":\"siege\",\"vm\":\"dup\",\"sources\":["
			 "{\"target\":\"vcpu\",\"vcpu\":2},{\"target\":\"vcpu\",\"vcpu\":3}]}}");
		r = siege_rpc(s, req, two, 2);
		tap_ok(r && strstr(r, "sources[1]: its open file is already a source"),
		       "the same file twice in one message: refused, nothing kept");
		free(r);
		close(two[0]);
		close(two[1]);
	}
	tap_ok(siege_metric(0, "", "statsfd_collector_sources") == 1 &&
	       siege_metric(0, "", "statsfd_collector_duplicates_refused_total") == 2,
	       "one source, two duplicates counted");
	close(fd);
	close(d);
	close(s);
	tap_ok(stop(), "clean exit");
}

static void test_user_quotas(void)
{
	const char *extra[] = { "--user-max-sources", "5", "--client-max-sources", "100",
				NULL };
	const char *expo[] = { "--user-max-exposition", "262144", NULL };
	int s[3], fds[8];
	unsigned int i, ok = 0;
	double est;
	size_t body = 0;
	char *r;

	if (!tap_ok(!start(extra), "collector with --user-max-sources 5 starts"))
		return;
	for (i = 0; i < 3; i++)
		s[i] = statsfd_msg_connect(sock_path);
	for (i = 0; i < 6; i++) {
		char vm[16];

		snprintf(vm, sizeof(vm), "vm%u", i);
		fds[i] = vcpu_fd(i);
		/* Three connections of uid 0, two sources each. */
		r = add_vcpu(s[i / 2], vm, 0, fds[i]);
		if (i < 5)
			ok += r && strstr(r, "\"return\"");
		else
			tap_ok(r && strstr(r, "QuotaExceeded") &&
			       strstr(r, "uid 0's source quota (5, --user-max-sources) reached"),
			       "the 6th source of uid 0, on its 3rd connection: refused (%s)",
			       r ? r : "no reply");
		free(r);
	}
	tap_ok(ok == 5, "5 sources over 3 connections of uid 0");
	close(s[0]);
	msleep(300);
	r = add_vcpu(s[2], "vm9", 0, fds[5]);
	tap_ok(r && strstr(r, "\"return\""), "a connection gone with its 2: the uid may add again");
	free(r);
	for (i = 0; i < 6; i++)
		close(fds[i]);
	close(s[1]);
	close(s[2]);
	tap_ok(stop(), "clean exit");

	/* Exposition bytes: 256 KiB for uid 0. */
	if (!tap_ok(!start(expo), "collector with --user-max-exposition 256 KiB starts"))
		return;
	s[0] = statsfd_msg_connect(sock_path);
	for (i = 0, ok = 0; i < 200; i++) {
		int fd = vcpu_fd(i);

		r = add_vcpu(s[0], "e", i, fd);
		close(fd);
		if (!r || !strstr(r, "\"return\"")) {
			tap_ok(r && strstr(r, "QuotaExceeded") &&
			       strstr(r, "--user-max-exposition"),
			       "after %u vCPUs: refused by the exposition quota (%s)", ok,
			       r ? r : "no reply");
			free(r);
			break;
		}
		ok++;
		free(r);
	}
	tap_ok(ok >= 1 && ok < 200, "%u vCPUs fit in 256 KiB of exposition", ok);
	est = siege_metric(0, "", "statsfd_collector_exposition_estimate_bytes");
	siege_scrape(0, "", &body);
	tap_ok(est > 0 && est <= 262144 && body < 2 * 262144 + 65536,
	       "estimate %.0f bytes, the whole exposition %zu", est, body);
	close(s[0]);
	tap_ok(stop(), "clean exit");
}

/* ---- the smaller items ---------------------------------------------------- */

static unsigned int open_fds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static unsigned long fd_limit(pid_t pid)
{
	char path[64], line[256];
	unsigned long soft = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Max open files %lu", &soft) == 1)
			break;
	fclose(f);
	return soft;
}

static unsigned int count_lines(const char *path, const char *what)
{
	char line[1024];
	unsigned int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, what);
	fclose(f);
	return n;
}

/* TCP connections until the daemon's fd table holds @want fds (or 30 s). */
static unsigned int fill_fds(int *tcp, unsigned int *ntcp, unsigned int max,
			     unsigned long want)
{
	double t0 = now_s();

	while (open_fds(daemon_pid) < want && *ntcp < max && now_s() - t0 < 30) {
		unsigned int before = open_fds(daemon_pid);
		double t1 = now_s();

		tcp[*ntcp] = siege_connect(0, 0);
		if (tcp[*ntcp] >= 0)
			++*ntcp;
		/* Accepted: one more fd in the daemon. */
		while (open_fds(daemon_pid) <= before && now_s() - t1 < 5)
			msleep(5);
	}
	return open_fds(daemon_pid);
}

/*
 * The fd table full: a pending unix connection must neither spin the
 * loop nor flood the log, and a message whose fds the kernel could not
 * install is told so, not "too many fds".
 */
static void test_fd_table_full(void)
{
	const char *extra[] = { "--max-sources", "1", "--max-clients", "2",
				"--http-max-connections", "1000", "--http-max-per-ip", "1000",
				"--http-header-timeout", "600", "--http-idle-timeout", "3600",
				NULL };
	static int tcp[1200];
	char logp[160];
	unsigned int ntcp = 0, i, lines;
	unsigned long lim;
	double cpu0, cpu1;
	int a, b, fds[10];
	char *r;

	snprintf(logp, sizeof(logp), "%s/emfile.log", dir);
	daemon_log = logp;
	low_nofile = true;
	if (!tap_ok(!start(extra), "collector with a small fd table starts")) {
		daemon_log = NULL;
		low_nofile = false;
		return;
	}
	daemon_log = NULL;
	low_nofile = false;
	a = statsfd_msg_connect(sock_path);
	r = a >= 0 ? siege_rpc(a, "{\"execute\":\"hello\"}", NULL, 0) : NULL;
	tap_ok(r && strstr(r, "\"return\""), "a client connected");
	free(r);
	lim = fd_limit(daemon_pid);
	tap_ok(lim > 0 && lim < 1100, "the daemon's fd limit is %lu", lim);
	/* Full but 2: the kernel installs 2 of the 10 fds, then EMFILE. */
	fill_fds(tcp, &ntcp, 1100, lim - 2);
	for (i = 0; i < 10; i++)
		fds[i] = vcpu_fd(100 + i);
	r = siege_rpc(a, "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"siege\","
		"\"vm\":\"f\",\"sources\":[{\"target\":\"vm\"}]}}", fds, 10);
	tap_ok(r && strstr(r, "fd table is full") && !strstr(r, "too many fds"),
	       "10 fds with 2 free fd slots: told the fd table is full (%s)", r ? r : "no reply");
	free(r);
	for (i = 0; i < 10; i++)
		close(fds[i]);
	/* Full: a unix connection waits to be accepted. */
	fill_fds(tcp, &ntcp, 1100, lim);
	tap_ok(open_fds(daemon_pid) >= lim, "the fd table is full (%u of %lu)",
	       open_fds(daemon_pid), lim);
	cpu0 = proc_cpu(daemon_pid);
	b = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	{
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		memcpy(sun.sun_path, sock_path, strnlen(sock_path, sizeof(sun.sun_path) - 1));
		if (connect(b, (struct sockaddr *)&sun, sizeof(sun)))
			tap_diag("connect: %s", strerror(errno));
	}
	msleep(3000);
	cpu1 = proc_cpu(daemon_pid);
	lines = count_lines(logp, "accept: ");
	tap_ok(cpu1 - cpu0 < 1.0,
	       "a pending connection for 3 s: %.2f s of CPU (bound 1: no spinning)", cpu1 - cpu0);
	tap_ok(lines <= 5, "%u log lines about it (bound 5)", lines);
	{
		struct pollfd p = { .fd = b, .events = POLLIN };
		char c;

		tap_ok(poll(&p, 1, 10000) == 1 && recv(b, &c, 1, MSG_DONTWAIT) <= 0,
		       "that connection was closed, not left hanging");
	}
	close(b);
	for (i = 0; i < ntcp; i++)
		close(tcp[i]);
	close(a);
	tap_ok(stop(), "clean exit");
}

static bool valid_utf8(const unsigned char *s)
{
	while (*s) {
		unsigned int n = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1 :
				 (*s & 0xf0) == 0xe0 ? 2 : (*s & 0xf8) == 0xf0 ? 3 : 9;

		if (n == 9)
			return false;
		for (s++; n; n--, s++)
			if ((*s & 0xc0) != 0x80)
				return false;
	}
	return true;
}

static void test_bad_command_name(void)
{
	int s;
	char *r;

	if (!tap_ok(!start(NULL), "collector for a bad command name starts"))
		return;
	s = statsfd_msg_connect(sock_path);
	r = siege_rpc(s, "{\"execute\":\"\xff\xfe\x01zz\"}", NULL, 0);
	tap_ok(r && strstr(r, "CommandNotFound") && valid_utf8((unsigned char *)r) &&
	       strstr(r, "the command ???zz has not been found"),
	       "a command name of invalid UTF-8: not echoed raw (%s)", r ? r : "no reply");
	free(r);
	close(s);
	tap_ok(stop(), "clean exit");
}

/* A PID 1 that reads no notification: the loop must not block. */
static void test_notify_stall(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char path[160];
	unsigned int fdstore = 0;
	double t0;
	int n, vm, st;

	snprintf(path, sizeof(path), "%s/notify", dir);
	memcpy(sun.sun_path, path, strnlen(path, sizeof(sun.sun_path) - 1));
	n = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (n < 0 || bind(n, (struct sockaddr *)&sun, sizeof(sun)))
		tap_diag("notify socket: %s", strerror(errno));
	chmod(path, 0666);
	notify_env = path;
	if (!tap_ok(!start(NULL), "collector with a NOTIFY_SOCKET nobody reads starts")) {
		notify_env = NULL;
		close(n);
		return;
	}
	notify_env = NULL;
	/* 40 FDSTORE=1 messages: the socket's queue takes about 10. */
	vm = register_vcpus(40);
	tap_ok(vm >= 0, "40 vCPUs registered meanwhile");
	st = siege_scrape(0, "", NULL);
	tap_ok(st == 200, "a scrape is served (HTTP %d)", st);
	/* Now "PID 1" reads: every queued message arrives, in time. */
	t0 = now_s();
	while (fdstore < 40 && now_s() - t0 < 30) {
		char buf[512];
		unsigned int nfds;

		/* The fds it stores are closed: only the messages count. */
		if (notify_recv(n, buf, sizeof(buf), NULL, 0, &nfds, 1000) > 0)
			fdstore += !!strstr(buf, "FDSTORE=1");
	}
	tap_ok(fdstore == 40, "all 40 FDSTORE=1 arrive once read (%u)", fdstore);
	if (vm >= 0)
		close(vm);
	tap_ok(stop(), "clean exit");
	close(n);
	unlink(path);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: collector_siege_test COLLECTOR\n");
		return 2;
	}
	bin = argv[1];
	stress = getenv("STRESS") && !strcmp(getenv("STRESS"), "1");
	signal(SIGPIPE, SIG_IGN);
	if (geteuid() != 0) {
		tap_ok(0, "collector siege tests need root (the drop to nobody)");
		return tap_done();
	}
	if (spawn_dir(dir, sock_path, sizeof(sock_path), port_path, sizeof(port_path)))
		return 1;
	snprintf(web_path, sizeof(web_path), "%s/web.yml", dir);

	if (!argv[2] || strstr(argv[2], "slow"))
		test_slow_readers();
	if (!argv[2] || strstr(argv[2], "send"))
		test_send_deadline();
	if (!argv[2] || strstr(argv[2], "header"))
		test_header_deadline();
	if (!argv[2] || strstr(argv[2], "slots"))
		test_reserved_slots();
	if (!argv[2] || strstr(argv[2], "guess"))
		test_guessers();
	if (!argv[2] || strstr(argv[2], "filter"))
		test_filter_flood();
	if (!argv[2] || strstr(argv[2], "hoard"))
		test_reply_hoard();
	if (!argv[2] || strstr(argv[2], "dup"))
		test_duplicates();
	if (!argv[2] || strstr(argv[2], "quota"))
		test_user_quotas();
	if (!argv[2] || strstr(argv[2], "emfile"))
		test_fd_table_full();
	if (!argv[2] || strstr(argv[2], "utf8"))
		test_bad_command_name();
	if (!argv[2] || strstr(argv[2], "notify"))
		test_notify_stall();
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			tap_diag("cleanup failed");
	}
	return tap_done();
}
