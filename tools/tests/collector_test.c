// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of statsfd-collector, with memfd-backed stats images handed
 * over SCM_RIGHTS exactly as a VMM hands real stats fds.
 *
 *   collector_test COLLECTOR_BINARY [--save-metrics FILE]
 *	starts the daemon (as root, dropping to nobody) and runs every case,
 *	printing TAP
 *   collector_test --feed SOCKET [--seconds N]
 *	registers a VM with two vCPUs and keeps bumping its counters (used
 *	by prometheus_test.sh)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "httpget.h"
#include "image.h"
#include "rpc.h"
#include "spawn.h"
#include "statsfd_expo.h"
#include "statsfd_client.h"
#include "tap.h"

static char dir[] = "/tmp/statsfd-collector-test.XXXXXX";
static char sock_path[128], port_path[128];
static pid_t daemon_pid = -1;
static unsigned int http_port;

/* The labels of vCPU @n of VM "web" in the exposition. */
#define VCPU_LABELS(n) \
	"provider=\"statsfd_vm\",target=\"vcpu\",vm=\"web\",vcpu=\"" n "\""

static const struct img_stat vm_stats[] = {
	{ "vcpus_created", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "io_exits_sum", STATSFD_TYPE_CUMULATIVE | STATSFD_AGG_SUM, 0, 1, 0 },
};

static int vm_memfd(const char *id)
{
	static unsigned char buf[1 << 12];
	size_t n = img_build(buf, sizeof(buf), id, 48, vm_stats, 2, NULL, 0);

	return img_memfd(buf, n);
}

static bool is_error(struct json_object *r, const char *cls)
{
	struct json_object *e, *c;

	if (!r || !json_object_object_get_ex(r, "error", &e))
		return false;
	return !cls || (json_object_object_get_ex(e, "class", &c) &&
			!strcmp(json_object_get_string(c), cls));
}

/* The one element of the array a reply returns; NULL if not just one. */
static struct json_object *only_one(struct json_object *r)
{
	return rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 1 ?
	       json_object_array_get_idx(rpc_ret(r), 0) : NULL;
}

static size_t count_sources(void)
{
	int s = statsfd_msg_connect(sock_path);
	struct json_object *r;
	size_t n = (size_t)-1;

	if (s < 0)
		return n;
	r = rpc_json(s, "{\"execute\":\"query-sources\"}", NULL, 0);
	if (rpc_ret(r))
		n = json_object_array_length(rpc_ret(r));
	json_object_put(r);
	close(s);
	return n;
}


/* @extra: one more option and its value (e.g. --stats), or NULL. */
static int start_daemon(const char *bin, const char *extra, const char *value)
{
	const char *argv[] = {
		bin, "--socket", sock_path, "--socket-mode", "0666",
		"--listen", "127.0.0.1:0", "--port-file", port_path,
		"--user", "nobody", "--allow-uid", "0", "--interval", "100",
		"--client-timeout", "1000", "--max-sources", "10000",
		"--test-accept-memfd", extra, value, NULL,
	};

	daemon_pid = spawn_daemon(argv, NULL, port_path, 15, &http_port, NULL, NULL);
	return daemon_pid < 0 ? -1 : 0;
}

static int count_fds(pid_t pid)
{
	char path[64];
	int n = 0;
	FILE *p;
	char line[64];

	snprintf(path, sizeof(path), "ls /proc/%d/fd 2>/dev/null", pid);
	p = popen(path, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		n++;
	pclose(p);
	return n;
}

/* Register VM "web" with vCPUs 0 and 1 on connection @s; fds in @fds[3]. */
static struct json_object *register_web(int s, int *fds)
{
	fds[0] = vm_memfd("vm-1-0");
	fds[1] = img_vcpu_memfd("vm-1-0/vcpu-0");
	fds[2] = img_vcpu_memfd("vm-1-0/vcpu-1");
	return rpc_json(s, "{\"execute\":\"add-sources\",\"id\":7,\"arguments\":{"
		   "\"provider\":\"statsfd_vm\",\"vm\":\"web\",\"sources\":["
		   "{\"target\":\"vm\"},{\"target\":\"vcpu\",\"vcpu\":0},"
		   "{\"target\":\"vcpu\",\"vcpu\":1}]}}", fds, 3);
}

static void test_basic(const char *save)
{
	struct json_object *r, *v, *x;
	int s = statsfd_msg_connect(sock_path), fds[3], i;
	char *m;

	tap_ok(proc_status(daemon_pid, "Uid") == 65534, "daemon dropped to uid nobody after binding");
	r = rpc_json(s, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(rpc_ret(r) && json_object_object_get_ex(rpc_ret(r), "client", &v) &&
	       json_object_object_get_ex(v, "pid", &x) && json_object_get_int(x) == getpid(),
	       "hello: SO_PEERCRED pid recorded");
	json_object_put(r);

	r = register_web(s, fds);
	tap_ok(rpc_ret(r) && json_object_object_get_ex(rpc_ret(r), "sources", &v) &&
	       json_object_array_length(v) == 3 &&
	       json_object_object_get_ex(r, "id", &x) && json_object_get_int(x) == 7,
	       "add-sources: VM + 2 vCPU memfds registered, id echoed");
	json_object_put(r);

	r = rpc_json(s, "{\"execute\":\"query-sources\"}", NULL, 0);
	v = rpc_ret(r) ? json_object_array_get_idx(rpc_ret(r), 0) : NULL;
	tap_ok(v && json_object_object_get_ex(v, "client", &x) &&
	       json_object_object_get_ex(x, "uid", &x) && json_object_get_int(x) == 0,
	       "query-sources: client uid recorded with each source");
	tap_ok(v && json_object_object_get_ex(v, "mapped", &x) &&
	       json_object_is_type(x, json_type_boolean) && !json_object_get_boolean(x),
	       "query-sources: a memfd image is read with pread (\"mapped\": false)");
	json_object_put(r);

	r = rpc_json(s, "{\"execute\":\"query-stats-schemas\"}", NULL, 0);
	tap_ok(rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 2,
	       "query-stats-schemas: 2 schemas (vm, vcpu shared by both vCPUs)");
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"query-stats-schemas\",\"arguments\":{\"target\":\"vcpu\"}}",
		NULL, 0);
	v = rpc_ret(r) ? json_object_array_get_idx(rpc_ret(r), 0) : NULL;
	tap_ok(v && json_object_object_get_ex(v, "sources", &x) && json_object_get_int(x) == 2 &&
	       json_object_object_get_ex(v, "stats", &x) &&
	       json_object_array_length(x) == img_vcpu_nstats,
	       "query-stats-schemas target vcpu: one schema for 2 sources, all stats");
	json_object_put(r);

	img_poke(fds[2], 1, 1000);	/* vCPU 1 io_exits */
	msleep(400);		/* several 100 ms read intervals */
	r = rpc_json(s, "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\","
		"\"vcpus\":[1],\"providers\":[{\"provider\":\"statsfd_vm\","
		"\"names\":[\"io_exits\",\"halt_wait_hist_ns\"]}]}}", NULL, 0);
	v = rpc_ret(r);
	x = v && json_object_array_length(v) == 1 ? json_object_array_get_idx(v, 0) : NULL;
	tap_ok(x && json_object_object_get_ex(x, "stats", &x) && json_object_array_length(x) == 2,
	       "query-stats filtered by target, vcpu subset, provider and names");
	if (x) {
		struct json_object *st = json_object_array_get_idx(x, 0), *val;

		tap_ok(json_object_object_get_ex(st, "value", &val) &&
		       json_object_get_uint64(val) == 1000,
		       "periodic pread picked up the new value (1000)");
		st = json_object_array_get_idx(x, 1);
		tap_ok(json_object_object_get_ex(st, "value", &val) &&
		       json_object_is_type(val, json_type_array) &&
		       json_object_array_length(val) == 32,
		       "histogram value is the list of 32 buckets");
	}
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"query-stats\",\"arguments\":{\"vms\":[\"nope\"]}}", NULL, 0);
	tap_ok(rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 0, "query-stats vms filter");
	json_object_put(r);

	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && strstr(m, "statsfd_io_exits_total{" VCPU_LABELS("1") "} 1000\n") &&
	       strstr(m, "# TYPE statsfd_halt_wait_hist_seconds histogram\n") &&
	       strstr(m, "statsfd_halt_wait_hist_seconds_bucket{" VCPU_LABELS("0") ",le=\"+Inf\"}") &&
	       strstr(m, "statsfd_io_exits_sum_total{provider=\"statsfd_vm\",target=\"vm\",vm=\"web\"} 2\n") &&
	       strstr(m, "statsfd_collector_sources 3\n") &&
	       strstr(m, "statsfd_collector_sources_mapped 0\n"),
	       "GET /metrics: counters, histograms, labels from the VMM");
	if (m && save) {
		FILE *f = fopen(save, "w");

		if (f) {
			fputs(m, f);
			fclose(f);
		}
	}
	free(m);
	m = test_http_get(http_port, "/nope", NULL);
	tap_ok(m && strstr(m, "not found"), "unknown URL answered 404");
	free(m);

	r = register_web(s, fds + 0);
	tap_ok(is_error(r, "GenericError") && count_sources() == 3,
	       "duplicate VM/vCPU labels refused, nothing added");
	json_object_put(r);

	r = rpc_json(s, "{\"execute\":\"remove-sources\",\"arguments\":{\"vm\":\"web\"}}", NULL, 0);
	tap_ok(rpc_ret(r) && json_object_object_get_ex(rpc_ret(r), "removed", &x) &&
	       json_object_get_int(x) == 3 && count_sources() == 0,
	       "remove-sources by vm drops all three");
	json_object_put(r);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	close(s);
}

static void test_bad_input(void)
{
	int s = statsfd_msg_connect(sock_path), p[2], fds[3], i;
	struct json_object *r;
	char garbage[100];
	const char *add1 = "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"kvm\","
			   "\"vm\":\"bad\",\"sources\":[{\"target\":\"vm\"}]}}";
	const char *add3 = "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"kvm\","
			   "\"vm\":\"bad\",\"sources\":[{\"target\":\"vm\"},"
			   "{\"target\":\"vcpu\",\"vcpu\":0},{\"target\":\"vcpu\",\"vcpu\":1}]}}";
	static const struct {
		const char *req, *cls, *what;
	} bad[] = {
		{ "{\"execute\":\"no-such-command\"}", "CommandNotFound",
		  "unknown command: CommandNotFound" },
		{ "{\"execute\":", "GenericError", "truncated JSON: error, connection kept" },
		{ "[1,2]", "GenericError", "JSON that is not an object: error" },
		{ "{\"execute\":\"query-stats\",\"arguments\":{\"vcpus\":\"x\"}}",
		  "GenericError", "query-stats with a mistyped filter: error" },
	};

	if (pipe(p))
		return;
	r = rpc_json(s, add1, &p[0], 1);
	tap_ok(is_error(r, "PermissionDenied") &&
	       strstr(json_object_to_json_string(r), "not a stats fd of statsfd or KVM (pipe:["),
	       "a pipe is refused by the type check (PermissionDenied)");
	json_object_put(r);
	fds[0] = img_vcpu_memfd("good");
	fds[1] = open("/dev/null", O_RDONLY);
	fds[2] = img_vcpu_memfd("good2");
	r = rpc_json(s, add3, fds, 3);
	tap_ok(is_error(r, NULL) && count_sources() == 0,
	       "one bad fd (/dev/null) rejects the whole message, nothing kept");
	json_object_put(r);
	r = rpc_json(s, add3, fds, 2);
	tap_ok(is_error(r, NULL) && strstr(json_object_to_json_string(r), "2 fds attached"),
	       "sources/fds count mismatch rejected");
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"query-sources\"}", fds, 1);
	tap_ok(is_error(r, NULL), "fds attached to a query are refused (and closed)");
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"Bad!\","
		"\"sources\":[{\"target\":\"vm\"}]}}", fds, 1);
	tap_ok(is_error(r, NULL) && strstr(json_object_to_json_string(r), "provider"),
	       "invalid provider label rejected");
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"kvm\","
		"\"sources\":[{\"target\":\"vcpu\"}]}}", fds, 1);
	tap_ok(is_error(r, NULL) && strstr(json_object_to_json_string(r), "vcpu"),
	       "target vcpu without a vcpu index rejected");
	json_object_put(r);
	/* Each answered with its error class, the connection kept. */
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		r = rpc_json(s, bad[i].req, NULL, 0);
		tap_ok(is_error(r, bad[i].cls), "%s", bad[i].what);
		json_object_put(r);
	}
	for (i = 0; i < 3; i++)
		close(fds[i]);
	close(p[0]);
	close(p[1]);

	/* Raw garbage instead of a framed message: one error, then hang-up. */
	for (i = 0; i < (int)sizeof(garbage); i++)
		garbage[i] = (char)(i * 37 + 11);
	if (send(s, garbage, sizeof(garbage), 0) == sizeof(garbage)) {
		unsigned int n = 0;
		char *out = NULL;
		size_t len;
		int ret = statsfd_msg_recv(s, &out, &len, NULL, &n, 3000);

		tap_ok(!ret && strstr(out, "ProtocolError") &&
		       statsfd_msg_recv(s, &out, &len, NULL, &n, 3000) == -ECONNRESET,
		       "garbage bytes: ProtocolError reply, then the collector hangs up");
	}
	close(s);
	s = statsfd_msg_connect(sock_path);
	r = rpc_json(s, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(rpc_ret(r) != NULL, "collector still serves other clients");
	json_object_put(r);
	close(s);
}

static void test_unauthorized(void)
{
	int status = -1, st[2];
	pid_t pid;

	if (pipe(st))
		return;
	pid = fork();
	if (!pid) {
		struct json_object *r;
		int s, fd, ok;

		/* Not in --allow-uid 0; the socket mode (0666) lets it connect. */
		if (setgid(12345) || setuid(12345))
			_exit(3);
		s = statsfd_msg_connect(sock_path);
		if (s < 0)
			_exit(4);
		fd = img_vcpu_memfd("intruder");
		{
			const char *q = "{\"execute\":\"add-sources\",\"arguments\":{"
					"\"provider\":\"kvm\",\"vm\":\"x\",\"sources\":"
					"[{\"target\":\"vm\"}]}}";
			unsigned int n = 0;
			size_t len;
			char *out;

			/* The refusal may already be queued and the socket shut. */
			statsfd_msg_send(s, q, strlen(q), &fd, 1);
			r = statsfd_msg_recv(s, &out, &len, NULL, &n, 5000) ? NULL :
			    json_tokener_parse(out);
		}
		ok = is_error(r, "PermissionDenied");
		_exit(ok ? 0 : 5);
	}
	close(st[0]);
	close(st[1]);
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && count_sources() == 0,
	       "client with uid 12345 refused (PermissionDenied), nothing registered");
}

static void test_vm_gone(void)
{
	int s = statsfd_msg_connect(sock_path), fds[3], before, during, after, i;
	struct json_object *r = register_web(s, fds);
	double t0;

	for (i = 0; i < 3; i++)
		close(fds[i]);
	json_object_put(r);
	msleep(50);
	during = count_fds(daemon_pid);
	before = count_sources() == 3;
	t0 = now_s();
	close(s);	/* the VMM exits: its VM is gone */
	/* Bounded, not timed: how fast is B13's business, not a test's. */
	while (count_sources() && now_s() - t0 < 10)
		msleep(5);
	tap_ok(before && count_sources() == 0,
	       "VMM connection closed: its 3 sources dropped (in %.0f ms)",
	       (now_s() - t0) * 1000);
	/*
	 * The connection and the 3 stats fds: the daemon may close the
	 * last of them a little after the sources are gone from its list
	 * (a loaded host once caught it in between), so wait for them.
	 */
	t0 = now_s();
	do {
		after = count_fds(daemon_pid);
		if (during - after >= 4)
			break;
		msleep(20);
	} while (now_s() - t0 < 10);
	tap_ok(during - after >= 4, "and their fds closed (%d -> %d open fds in the daemon)",
	       during, after);
}

static void test_hanging_clients(void)
{
	enum { N = 200 };
	int hang[N], slow, i, fds[3], s;
	double t, t0;
	char *m;
	struct json_object *r;

	s = statsfd_msg_connect(sock_path);
	r = register_web(s, fds);
	json_object_put(r);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	for (i = 0; i < N; i++)
		hang[i] = statsfd_msg_connect(sock_path);
	/* A client that asks and asks but never reads its replies. */
	slow = statsfd_msg_connect(sock_path);
	for (i = 0; i < 200; i++) {
		const char *q = "{\"execute\":\"query-stats-schemas\"}";

		if (statsfd_msg_send(slow, q, strlen(q), NULL, 0))
			break;
	}
	m = test_http_get(http_port, "/metrics", &t);
	tap_ok(m && strstr(m, "statsfd_collector_clients 202\n") && t < 1.0,
	       "scrape served in %.0f ms with %d idle and 1 non-reading client connected",
	       t * 1000, N);
	free(m);
	r = rpc_json(s, "{\"execute\":\"query-sources\"}", NULL, 0);
	tap_ok(rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 3,
	       "queries still answered meanwhile");
	json_object_put(r);
	t0 = now_s();
	do {
		msleep(100);
		m = test_http_get(http_port, "/metrics", NULL);
		i = m && strstr(m, "statsfd_collector_clients 1\n");
		free(m);
	} while (!i && now_s() - t0 < 5);
	tap_ok(i, "idle and non-reading clients dropped after --client-timeout (1 s), the VMM kept");
	for (i = 0; i < N; i++)
		close(hang[i]);
	close(slow);
	close(s);
	t0 = now_s();
	while (count_sources() && now_s() - t0 < 2)
		msleep(5);
}

static void test_many_sources(void)
{
	enum { CLIENTS = 4, PER_MSG = 250, MSGS = 4 };
	int conn[CLIENTS], c, m, i, ok = 1;
	struct rlimit rl = { 8192, 8192 };
	char *text;
	double t;

	setrlimit(RLIMIT_NOFILE, &rl);
	for (c = 0; c < CLIENTS; c++) {
		conn[c] = statsfd_msg_connect(sock_path);
		for (m = 0; m < MSGS; m++) {
			struct statsfd_buf req = { 0 };
			int fds[PER_MSG];
			struct json_object *r;

			statsfd_buf_printf(&req, "{\"execute\":\"add-sources\",\"arguments\":{"
					   "\"provider\":\"statsfd_vm\",\"vm\":\"bulk%d-%d\",\"sources\":[",
					   c, m);
			for (i = 0; i < PER_MSG; i++) {
				char id[48];

				snprintf(id, sizeof(id), "vm-%d-%d/vcpu-%d", c, m, i);
				fds[i] = img_vcpu_memfd(id);
				statsfd_buf_printf(&req, "%s{\"target\":\"vcpu\",\"vcpu\":%d}",
						   i ? "," : "", i);
			}
			statsfd_buf_printf(&req, "]}}");
			r = rpc_json(conn[c], req.data, fds, PER_MSG);
			ok &= rpc_ret(r) != NULL;
			json_object_put(r);
			statsfd_buf_free(&req);
			for (i = 0; i < PER_MSG; i++)
				close(fds[i]);
		}
	}
	tap_ok(ok && count_sources() == CLIENTS * PER_MSG * MSGS,
	       "%d sources registered by %d clients", CLIENTS * PER_MSG * MSGS, CLIENTS);
	text = test_http_get(http_port, "/metrics", &t);
	/* The time is reported, not judged (B13 measures it). */
	tap_ok(text && strlen(text) > 1000000,
	       "scrape of %d sources: %zu bytes (in %.0f ms)", CLIENTS * PER_MSG * MSGS,
	       text ? strlen(text) : 0, t * 1000);
	free(text);
	for (c = 0; c < CLIENTS; c++)
		close(conn[c]);
	t = now_s();
	while (count_sources() && now_s() - t < 5)
		msleep(10);
	tap_ok(count_sources() == 0, "all dropped when their clients disconnect (%.0f ms)",
	       (now_s() - t) * 1000);
}

/*
 * A second daemon with --stats: memfds have no views, so the library
 * emulates them; only the stats named are read, queried and exported, a
 * source with none of them is kept with none.
 */
static void test_stats_filter(const char *bin)
{
	struct json_object *r, *v, *x;
	int s, fds[3], i;
	bool ok = true;
	size_t j;
	char *m;

	unlink(port_path);
	if (!tap_ok(!start_daemon(bin, "--stats", "halt_wait_hist_ns,io_exits,nope"),
		    "--stats: the collector starts with a filter"))
		return;
	s = statsfd_msg_connect(sock_path);
	r = register_web(s, fds);
	tap_ok(rpc_ret(r) != NULL, "--stats: VM web and its 2 vCPUs registered");
	json_object_put(r);
	img_poke(fds[2], 1, 4321);	/* vCPU 1 io_exits */
	msleep(400);
	r = rpc_json(s, "{\"execute\":\"query-sources\"}", NULL, 0);
	for (j = 0; rpc_ret(r) && j < json_object_array_length(rpc_ret(r)); j++) {
		v = json_object_array_get_idx(rpc_ret(r), j);
		ok &= json_object_object_get_ex(v, "view", &x) &&
		      !strcmp(json_object_get_string(x), "emulated") &&
		      json_object_object_get_ex(v, "events", &x) &&
		      !json_object_get_boolean(x);
	}
	tap_ok(rpc_ret(r) && j == 3 && ok,
	       "--stats on memfds: \"view\": \"emulated\" (a file has no views), \"events\": false");
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"query-stats\",\"arguments\":{\"vcpus\":[1]}}", NULL, 0);
	v = only_one(r);
	tap_ok(v && json_object_object_get_ex(v, "stats", &x) &&
	       json_object_array_length(x) == 2 &&
	       json_object_object_get_ex(json_object_array_get_idx(x, 0), "name", &v) &&
	       !strcmp(json_object_get_string(v), "halt_wait_hist_ns") &&
	       json_object_object_get_ex(json_object_array_get_idx(x, 1), "value", &v) &&
	       json_object_get_uint64(v) == 4321,
	       "query-stats: only the 2 stats of the filter, in its order, values read");
	json_object_put(r);
	r = rpc_json(s, "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vm\"}}", NULL, 0);
	v = only_one(r);
	tap_ok(v && json_object_object_get_ex(v, "stats", &x) &&
	       json_object_array_length(x) == 0,
	       "the VM (none of the stats): kept, with no stats");
	json_object_put(r);
	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && strstr(m, "statsfd_io_exits_total{" VCPU_LABELS("1") "} 4321\n") &&
	       strstr(m, "statsfd_halt_wait_hist_seconds_count{" VCPU_LABELS("0") "}") &&
	       !strstr(m, "halt_exits") && !strstr(m, "io_exits_sum") &&
	       strstr(m, "statsfd_collector_sources 3\n") &&
	       strstr(m, "statsfd_collector_sources_hung_up_total 0\n") &&
	       strstr(m, "statsfd_collector_children_changes_total 0\n") &&
	       strstr(m, "statsfd_collector_sources_polled 0\n"),
	       "GET /metrics: only the filter's stats; the hangup and children metrics");
	free(m);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	close(s);
	tap_ok(stop_daemon(&daemon_pid), "--stats: clean exit");
}

/* Exit status of the collector run with @arg (a bad option value). */
static int run_status(const char *bin, const char *opt, const char *arg)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl(bin, bin, opt, arg, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int feed(const char *path, int seconds)
{
	int s = statsfd_msg_connect(path), fds[3], i;
	struct json_object *r;

	if (s < 0) {
		fprintf(stderr, "feed: %s: %s\n", path, strerror(-s));
		return 1;
	}
	r = register_web(s, fds);
	if (!rpc_ret(r)) {
		fprintf(stderr, "feed: %s\n", r ? json_object_to_json_string(r) : "no reply");
		return 1;
	}
	json_object_put(r);
	printf("registered\n");
	fflush(stdout);
	for (i = 0; i < seconds * 10; i++) {
		img_poke(fds[1], 0, (uint64_t)i * 10);
		img_poke(fds[2], 1, (uint64_t)i * 7);
		msleep(100);
	}
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	const char *save = NULL;

	if (argc >= 3 && !strcmp(argv[1], "--feed"))
		return feed(argv[2], argc >= 5 ? atoi(argv[4]) : 30);
	if (argc < 2) {
		fprintf(stderr, "usage: collector_test COLLECTOR [--save-metrics FILE]\n");
		return 2;
	}
	if (argc >= 4 && !strcmp(argv[2], "--save-metrics"))
		save = argv[3];
	signal(SIGPIPE, SIG_IGN);
	if (geteuid() != 0) {
		tap_skip("statsfd-collector host tests", "need root (to test the drop to nobody and a foreign uid)");
		return tap_done();
	}
	if (spawn_dir(dir, sock_path, sizeof(sock_path), port_path, sizeof(port_path)))
		return 1;
	tap_ok(run_status(argv[1], "--max-mapped", "lots") == 2 &&
	       run_status(argv[1], "--max-mapped", "") == 2,
	       "--max-mapped: a value that is not a number is a usage error");
	tap_ok(run_status(argv[1], "--stats", "") == 2 &&
	       run_status(argv[1], "--stats", ",,") == 2,
	       "--stats: an empty list is a usage error");
	/* A number flag's range is checked, not wrapped to fit its type. */
	tap_ok(run_status(argv[1], "--client-timeout", "4294967296") == 2 &&
	       run_status(argv[1], "--client-timeout", "9") == 2 &&
	       run_status(argv[1], "--client-timeout", "-1") == 2,
	       "--client-timeout: above 2^32 - 1, below 10 or negative is a usage error");
	if (!tap_ok(!start_daemon(argv[1], NULL, NULL),
		    "collector starts and reports its HTTP port"))
		return tap_done();
	test_basic(save);
	test_bad_input();
	test_unauthorized();
	test_vm_gone();
	test_hanging_clients();
	test_many_sources();
	tap_ok(stop_daemon(&daemon_pid), "SIGTERM: clean exit 0");
	test_stats_filter(argv[1]);
	unlink(sock_path);
	unlink(port_path);
	rmdir(dir);
	return tap_done();
}
