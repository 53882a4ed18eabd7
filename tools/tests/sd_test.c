// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of statsfd-collector's systemd integration without systemd:
 * this test plays systemd's part of the protocol.  NOTIFY_SOCKET names a
 * datagram socket of the test that receives READY=1, WATCHDOG=1,
 * STOPPING=1 and the FDSTORE=1 / FDSTOREREMOVE=1 messages with their fds
 * (SCM_RIGHTS), kept in an emulated fd store; the collector is then
 * restarted with the stored fds, an activated unix socket and an activated
 * TCP port at fd 3 and up (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES), as
 * systemd does, and every source must come back with its id, labels,
 * owner and values.
 *
 *   sd_test COLLECTOR_BINARY	(TAP on stdout)
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

#define MAX_STORED	64

static char dir[] = "/tmp/statsfd-sd-test.XXXXXX";
static char notify_path[100], sock1[100], sock2[100], port_path[100];
static int notify_fd = -1;
static pid_t daemon_pid = -1;

/* The emulated fd store and what else the collector told "systemd". */
static struct {
	char name[256];
	int fd;
} store[MAX_STORED];
static unsigned int nstore;
static unsigned int nready, nwatchdog, nstopping, nremoved;
static char last_status[256];
static bool other_watchdog;

/* One more option for the daemon (run 5), or NULL. */
static const char *extra_opt, *extra_val;

/* --client-timeout: short in run 2, to see restored VMMs outlive it. */
static const char *client_timeout = "60000";

static int stored(const char *name)
{
	unsigned int i;

	for (i = 0; i < nstore; i++)
		if (!strcmp(store[i].name, name))
			return (int)i;
	return -1;
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return !fstat(a, &x) && !fstat(b, &y) && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

/* One notification, as systemd's service_notify_message() reads it. */
static void handle_notify(char *msg, int *fds, unsigned int nfds)
{
	char *line, *save = NULL, *name = NULL;
	bool fdstore = false, remove = false;
	unsigned int i, j;

	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, "READY=1"))
			nready++;
		else if (!strcmp(line, "WATCHDOG=1"))
			nwatchdog++;
		else if (!strcmp(line, "STOPPING=1"))
			nstopping++;
		else if (!strcmp(line, "FDSTORE=1"))
			fdstore = true;
		else if (!strcmp(line, "FDSTOREREMOVE=1"))
			remove = true;
		else if (!strncmp(line, "FDNAME=", 7))
			name = line + 7;
		else if (!strncmp(line, "STATUS=", 7))
			snprintf(last_status, sizeof(last_status), "%s", line + 7);
	}
	if (remove && name) {
		for (i = 0; i < nstore;) {
			if (strcmp(store[i].name, name)) {
				i++;
				continue;
			}
			close(store[i].fd);
			store[i] = store[--nstore];
			nremoved++;
		}
	}
	for (i = 0; i < nfds; i++) {
		bool dup = false;

		/* systemd keeps one copy of an open file (same_fd()). */
		for (j = 0; j < nstore; j++)
			dup |= same_file(store[j].fd, fds[i]);
		if (!fdstore || dup || nstore >= MAX_STORED || !name ||
		    strlen(name) > 255 || strchr(name, ':')) {
			if (fdstore && !dup)
				tap_diag("fd store: refused \"%s\"", name ? name : "");
			close(fds[i]);
			continue;
		}
		snprintf(store[nstore].name, sizeof(store[nstore].name), "%s", name);
		store[nstore++].fd = fds[i];
	}
}

/* Read every notification that arrives within @ms. */
static void drain(int ms)
{
	double end = now_s() + ms / 1000.0;

	for (;;) {
		char buf[4096];
		int fds[16], left = (int)((end - now_s()) * 1000);
		unsigned int nfds;
		ssize_t r;

		if (left < 0)
			return;
		r = notify_recv(notify_fd, buf, sizeof(buf), fds, 16, &nfds, left);
		if (r < 0 && errno == ETIMEDOUT)
			return;
		if (r >= 0)
			handle_notify(buf, fds, nfds);
	}
}

/* Wait up to 15 s for the @n-th READY=1. */
static bool wait_ready(unsigned int n)
{
	int i;

	for (i = 0; i < 150 && nready < n; i++)
		drain(100);
	return nready >= n;
}

static int64_t get_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return -1000;
	return json_object_get_int64(v);
}

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return "";
	return json_object_get_string(v);
}

/*
 * Start the collector with @env_fds (names @names) at fd 3 and up, as
 * systemd passes the fd store and activated sockets; @n 0: none.
 */
static int start_daemon(const char *bin, const char *sock, const char *allow,
			const int *env_fds, const char *const *names, unsigned int n)
{

	daemon_pid = fork();
	if (daemon_pid < 0)
		return -1;
	if (!daemon_pid) {
		char buf[64], fdnames[4096] = "";
		int high[MAX_STORED + 4];
		unsigned int i;

		/* Out of the way of 3..3+n first: they may overlap. */
		for (i = 0; i < n; i++)
			high[i] = fcntl(env_fds[i], F_DUPFD_CLOEXEC, 200);
		for (i = 0; i < n; i++) {
			if (dup2(high[i], 3 + (int)i) < 0)
				_exit(126);
			if (i)
				strcat(fdnames, ":");
			strcat(fdnames, names[i]);
		}
		if (n) {
			snprintf(buf, sizeof(buf), "%u", n);
			setenv("LISTEN_FDS", buf, 1);
			snprintf(buf, sizeof(buf), "%d", getpid());
			setenv("LISTEN_PID", buf, 1);
			setenv("LISTEN_FDNAMES", fdnames, 1);
		}
		/* Another process's watchdog (run 3): none of ours. */
		snprintf(buf, sizeof(buf), "%d", other_watchdog ? 1 : getpid());
		setenv("WATCHDOG_PID", buf, 1);
		setenv("WATCHDOG_USEC", "200000", 1);
		setenv("NOTIFY_SOCKET", notify_path, 1);
		execl(bin, bin, "--socket", sock, "--socket-mode", "0666",
		      "--listen", "127.0.0.1:0", "--port-file", port_path,
		      "--user", "nobody", "--allow-uid", allow, "--interval", "100",
		      "--client-timeout", client_timeout,
		      "--test-accept-memfd", extra_opt, extra_val, (char *)NULL);
		_exit(127);
	}
	return 0;
}


static int listen_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    chmod(path, 0666) || listen(fd, 16))
		return -1;
	return fd;
}

static int listen_tcp(unsigned int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 16) || getsockname(fd, (struct sockaddr *)&sin, &sl))
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Connect to @path, register @nvcpus vCPU memfds of VM @vm; ids in @ids. */
static int register_vm(const char *path, const char *vm, int nvcpus,
		       int *memfds, int64_t *ids)
{
	struct statsfd_buf req = { 0 };
	struct json_object *r, *arr;
	int s = statsfd_msg_connect(path), i;

	if (s < 0)
		return -1;
	statsfd_buf_printf(&req, "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"statsfd_vm\",\"vm\":\"%s\",\"sources\":[",
			   vm);
	for (i = 0; i < nvcpus; i++) {
		char id[64];

		snprintf(id, sizeof(id), "%s/vcpu-%d", vm, i);
		memfds[i] = img_vcpu_memfd(id);
		statsfd_buf_printf(&req, "%s{\"target\":\"vcpu\",\"vcpu\":%d}",
				   i ? "," : "", i);
	}
	statsfd_buf_printf(&req, "]}}");
	statsfd_buf_append(&req, "", 1);
	r = rpc_json(s, req.data, memfds, (unsigned int)nvcpus);
	statsfd_buf_free(&req);
	if (!json_object_object_get_ex(rpc_ret(r), "sources", &arr) ||
	    json_object_array_length(arr) != (size_t)nvcpus) {
		json_object_put(r);
		close(s);
		return -1;
	}
	for (i = 0; i < nvcpus; i++)
		ids[i] = json_object_get_int64(json_object_array_get_idx(arr, i));
	json_object_put(r);
	return s;
}

static struct json_object *find_source(struct json_object *arr, int64_t id)
{
	size_t i;

	for (i = 0; arr && i < json_object_array_length(arr); i++)
		if (get_int(json_object_array_get_idx(arr, i), "source") == id)
			return json_object_array_get_idx(arr, i);
	return NULL;
}

/* The value of stat 0 of source @id, from query-stats on @s. */
static int64_t value0(int s, int64_t id)
{
	struct json_object *r = rpc_json(s, "{\"execute\":\"query-stats\"}", NULL, 0);
	struct json_object *src = find_source(rpc_ret(r), id), *stats;
	int64_t v = -1;

	if (src && json_object_object_get_ex(src, "stats", &stats) &&
	    json_object_array_length(stats))
		v = get_int(json_object_array_get_idx(stats, 0), "value");
	json_object_put(r);
	return v;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int web_fds[2], db_fds[1], tmp_fds[1], web, db, tmp, q, lfd, tfd;
	int64_t web_ids[2], db_ids[1], tmp_ids[1], late_ids[1];
	int late_fds[1], late;
	int pass[MAX_STORED + 4], junk[2];
	const char *names[MAX_STORED + 4];
	struct json_object *r, *src, *cli;
	unsigned int n, i, port, wd_waited = 0;
	char name[256], *body;
	struct stat st;
	bool exited;

	if (argc != 2) {
		fprintf(stderr, "usage: sd_test COLLECTOR_BINARY\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	chmod(dir, 0755);
	snprintf(notify_path, sizeof(notify_path), "%s/notify", dir);
	snprintf(sock1, sizeof(sock1), "%s/sock1", dir);
	snprintf(sock2, sizeof(sock2), "%s/sock2", dir);
	snprintf(port_path, sizeof(port_path), "%s/port", dir);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", notify_path);
	if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    chmod(notify_path, 0666)) {
		tap_ok(0, "notify socket %s: %s", notify_path, strerror(errno));
		goto out;
	}

	/* Run 1: binds its own sockets; tells "systemd" what to keep. */
	if (!tap_ok(!start_daemon(argv[1], sock1, "0", NULL, NULL, 0) && wait_ready(1),
		    "READY=1 once the collector serves (not socket-activated)"))
		goto out;
	tap_ok(!strcmp(last_status, "serving 0 sources of 0 clients"),
	       "STATUS= with READY=1: \"%s\"", last_status);
	web = register_vm(sock1, "web:1", 2, web_fds, web_ids);
	db = register_vm(sock1, "db", 1, db_fds, db_ids);
	tmp = register_vm(sock1, "tmp", 1, tmp_fds, tmp_ids);
	tap_ok(web >= 0 && db >= 0 && tmp >= 0, "three VMMs registered 4 vCPU memfds");
	drain(300);
	snprintf(name, sizeof(name), "src.%" PRId64 ".%d.0.statsfd_vm.vcpu.web\"1",
		 web_ids[0], 1);
	tap_ok(stored(name) >= 0,
	       "fd store: %s (id, client, vcpu, provider, target, VM with ':' as '\"')",
	       name);
	tap_ok(stored("cli.1") >= 0 && stored("cli.2") >= 0 && stored("cli.3") >= 0,
	       "fd store: the connection of each client with sources (cli.1..3)");
	tap_ok(nstore == 7, "fd store: 4 sources + 3 connections, each once (%u)", nstore);
	/* A VMM that goes away: its source and connection leave the store. */
	close(tmp);
	drain(300);
	snprintf(name, sizeof(name), "src.%" PRId64 ".3.0.statsfd_vm.vcpu.tmp", tmp_ids[0]);
	tap_ok(stored(name) < 0 && stored("cli.3") < 0 && nstore == 5,
	       "client gone: FDSTOREREMOVE of its source and its connection (%u left)",
	       nstore);
	/*
	 * Every 100 ms for WATCHDOG_USEC=200000: at most 15 in one second
	 * (10 expected; a load can only make it fewer), and they keep
	 * coming: 5 more within 10 s however loaded the machine is.
	 */
	n = nwatchdog;
	drain(1000);
	i = nwatchdog - n;
	while (nwatchdog - n < 5 && wd_waited++ < 90)
		drain(100);
	tap_ok(i <= 15 && nwatchdog - n >= 5,
	       "WATCHDOG=1 every 100 ms for WATCHDOG_USEC=200000 (%u in 1 s, %u in all)",
	       i, nwatchdog - n);
	img_poke(web_fds[0], 0, 4242);
	img_poke(db_fds[0], 0, 777);
	msleep(300);
	q = statsfd_msg_connect(sock1);
	tap_ok(value0(q, web_ids[0]) == 4242, "run 1 reads web:1 vCPU 0 = 4242");
	close(q);
	n = nremoved;
	exited = stop_daemon(&daemon_pid);
	drain(200);
	tap_ok(exited && nstopping == 1,
	       "SIGTERM: STOPPING=1, exit status 0");
	tap_ok(nremoved == n && nstore == 5,
	       "exiting removes nothing from the fd store (%u entries)", nstore);
	/* While it is down, the VMs go on. */
	img_poke(web_fds[0], 0, 5151);
	img_poke(web_fds[1], 0, 6161);

	/* Run 2: the store, plus activated sockets, at fd 3 and up. */
	lfd = listen_unix(sock2);
	tfd = listen_tcp(&port);
	n = 0;
	pass[n] = lfd;
	names[n++] = "statsfd-collector.socket";
	pass[n] = tfd;
	names[n++] = "statsfd-collector-http.socket";
	for (i = 0; i < nstore; i++) {
		pass[n] = store[i].fd;
		names[n++] = store[i].name;
	}
	/* What no collector stored: closed and removed from the store. */
	if (pipe2(junk, O_CLOEXEC))
		goto out;
	pass[n] = junk[0];
	names[n++] = "junk";
	pass[n] = img_vcpu_memfd("ghost/vcpu-0");
	names[n++] = "src.99.42.0.statsfd_vm.vcpu.ghost";
	pass[n] = img_vcpu_memfd("bad/vcpu-0");
	names[n++] = "src.x.bad";
	for (i = 0; i < 3; i++) {
		snprintf(store[nstore].name, sizeof(store[nstore].name), "%s", names[n - 3 + i]);
		store[nstore++].fd = pass[n - 3 + i];
	}
	client_timeout = "2000";
	if (lfd < 0 || tfd < 0 ||
	    !tap_ok(!start_daemon(argv[1], sock2, "0", pass, names, n) && wait_ready(2),
		    "READY=1 after restart with %u fds passed", n))
		goto out;
	tap_ok(!strcmp(last_status, "serving 3 sources of 2 clients"),
	       "restored before READY=1: \"%s\"", last_status);
	tap_ok(!stat(sock1, &st) && S_ISSOCK(st.st_mode),
	       "socket activated: --socket's own path left alone (sock1 still there)");
	q = statsfd_msg_connect(sock2);
	tap_ok(q >= 0, "new connections on the activated unix socket");
	r = rpc_json(q, "{\"execute\":\"query-sources\"}", NULL, 0);
	tap_ok(rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 3,
	       "3 sources restored (web:1 vCPU 0 and 1, db vCPU 0), none of the rest");
	src = find_source(rpc_ret(r), web_ids[1]);
	json_object_object_get_ex(src, "client", &cli);
	tap_ok(src && !strcmp(get_str(src, "vm"), "web:1") &&
	       get_int(src, "vcpu") == 1 &&
	       !strcmp(get_str(src, "provider"), "statsfd_vm") &&
	       !strcmp(get_str(src, "target"), "vcpu"),
	       "source %" PRId64 " back with its id and labels (vm \"web:1\", vcpu 1)",
	       web_ids[1]);
	tap_ok(src && get_int(cli, "pid") == getpid() && get_int(cli, "uid") == 0,
	       "its owner's identity comes back with the connection (SO_PEERCRED)");
	json_object_put(r);
	msleep(300);
	tap_ok(value0(q, web_ids[0]) == 5151 && value0(q, web_ids[1]) == 6161 &&
	       value0(q, db_ids[0]) == 777,
	       "values read after the restart (5151, 6161, 777)");
	/*
	 * A VMM says nothing while its VM runs: a restored connection that
	 * owns sources again must outlive --client-timeout (2 s here), as it
	 * did before the restart.
	 */
	close(q);
	drain(2600);
	q = statsfd_msg_connect(sock2);
	r = q >= 0 ? rpc_json(q, "{\"execute\":\"query-sources\"}", NULL, 0) : NULL;
	tap_ok(r && rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 3,
	       "restored silent VMMs keep their sources past --client-timeout");
	json_object_put(r);
	client_timeout = "60000";
	drain(300);
	tap_ok(stored("junk") < 0,
	       "unknown stored fd name: closed and FDSTOREREMOVE'd");
	tap_ok(stored("src.99.42.0.statsfd_vm.vcpu.ghost") < 0,
	       "stored source whose connection is gone: dropped and FDSTOREREMOVE'd");
	tap_ok(stored("src.x.bad") < 0, "malformed source name: dropped and FDSTOREREMOVE'd");
	tap_ok(nstore == 5, "the restored fds stay stored, once each (%u)", nstore);
	body = test_http_get(port, "/metrics", NULL);
	tap_ok(body && strstr(body, "statsfd_collector_sources 3"),
	       "HTTP served on the activated TCP port %u", port);
	free(body);
	/* The longest labels: 32-character provider and target, 64 ':'. */
	{
		static const char p32[] = "pxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
		static const char t32[] = "txxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
		char vm[65], req[512], want[256];
		int lfd2 = img_vcpu_memfd("long"), ls = statsfd_msg_connect(sock2);
		int64_t id;

		memset(vm, ':', 64);
		vm[64] = '\0';
		snprintf(req, sizeof(req),
			 "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"%s\",\"vm\":\"%s\",\"sources\":[{\"target\":\"%s\"}]}}",
			 p32, vm, t32);
		r = rpc_json(ls, req, &lfd2, 1);
		id = json_object_object_get_ex(rpc_ret(r), "sources", &cli) ?
		     json_object_get_int64(json_object_array_get_idx(cli, 0)) : -1;
		json_object_put(r);
		drain(300);
		memset(vm, '"', 64);
		snprintf(want, sizeof(want), "src.%" PRId64 ".", id);
		for (i = 0; i < nstore; i++)
			if (!strncmp(store[i].name, want, strlen(want)))
				break;
		snprintf(want, sizeof(want), ".-1.%s.%s.%s", p32, t32, vm);
		tap_ok(i < nstore && strlen(store[i].name) <= 255 &&
		       strstr(store[i].name, want),
		       "longest labels (32, 32, 64 ':'): stored as a valid name of %zu characters",
		       i < nstore ? strlen(store[i].name) : 0);
		close(ls);
		close(lfd2);
		drain(300);
	}
	/* The old connection still owns its sources. */
	r = rpc_json(web, "{\"execute\":\"hello\"}", NULL, 0);
	json_object_object_get_ex(rpc_ret(r), "client", &cli);
	tap_ok(get_int(cli, "sources") == 2,
	       "restored connection: hello answers on it, it owns its 2 sources");
	json_object_put(r);
	r = rpc_json(web, "{\"execute\":\"remove-sources\",\"arguments\":{\"vm\":\"web:1\"}}",
		NULL, 0);
	tap_ok(get_int(rpc_ret(r), "removed") == 2,
	       "restored connection removes its sources by VM name");
	json_object_put(r);
	drain(300);
	snprintf(name, sizeof(name), "src.%" PRId64 ".1.0.statsfd_vm.vcpu.web\"1",
		 web_ids[0]);
	tap_ok(stored(name) < 0 && nstore == 3,
	       "their fds are FDSTOREREMOVE'd (%u left)", nstore);
	close(db);
	/* The hang-up is an event of the loop: wait for it, within 10 s. */
	for (i = 0; i < 100; i++) {
		msleep(100);
		r = rpc_json(q, "{\"execute\":\"query-sources\"}", NULL, 0);
		if (rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 0)
			break;
		json_object_put(r);
		r = NULL;
	}
	tap_ok(rpc_ret(r) && json_object_array_length(rpc_ret(r)) == 0,
	       "a restored VMM closing its connection drops its sources");
	json_object_put(r);
	close(q);
	n = nwatchdog;
	drain(500);
	tap_ok(nwatchdog > n, "WATCHDOG=1 after the restart too");
	late = register_vm(sock2, "late", 1, late_fds, late_ids);
	exited = stop_daemon(&daemon_pid);
	tap_ok(exited && !stat(sock2, &st),
	       "exit: the activated socket's path is not unlinked");

	/* Run 3: root is no longer allowed; its connections are not adopted. */
	drain(200);
	for (i = 0, n = 0; i < nstore; i++) {
		pass[n] = store[i].fd;
		names[n++] = store[i].name;
	}
	tap_ok(late >= 0 && n == 3, "run 2 stored 1 more client with 1 source (%u fds)", n);
	other_watchdog = true;
	if (!tap_ok(!start_daemon(argv[1], sock1, "1", pass, names, n) && wait_ready(3),
		    "READY=1 after a restart with --allow-uid 1"))
		goto out;
	tap_ok(!strcmp(last_status, "serving 0 sources of 0 clients"),
	       "connections of a uid no longer allowed are not adopted: \"%s\"",
	       last_status);
	drain(300);
	tap_ok(nstore == 0, "their connections and sources leave the fd store (%u left)",
	       nstore);
	r = rpc_json(late, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(!r, "the refused VMM's connection is closed (no answer)");
	json_object_put(r);
	n = nwatchdog;
	drain(500);
	tap_ok(nwatchdog == n, "WATCHDOG_PID of another process: no WATCHDOG=1 (%u)",
	       nwatchdog - n);
	stop_daemon(&daemon_pid);

	/* Runs 4 and 5: what a restart restores passes the same quotas. */
	other_watchdog = false;
	drain(200);
	for (i = 0; i < nstore; i++)
		close(store[i].fd);
	nstore = 0;
	if (tap_ok(!start_daemon(argv[1], sock1, "0", NULL, NULL, 0) && wait_ready(4),
		   "READY=1 for run 4")) {
		int q4_fds[4], q4;
		int64_t q4_ids[4];

		q4 = register_vm(sock1, "quota", 4, q4_fds, q4_ids);
		drain(300);
		stop_daemon(&daemon_pid);
		drain(200);
		for (i = 0, n = 0; i < nstore; i++) {
			pass[n] = store[i].fd;
			names[n++] = store[i].name;
		}
		tap_ok(q4 >= 0 && n == 5, "run 4 stored a client and its 4 sources (%u fds)", n);
		extra_opt = "--user-max-sources";
		extra_val = "2";
		if (tap_ok(!start_daemon(argv[1], sock1, "0", pass, names, n) && wait_ready(5),
			   "READY=1 after a restart with --user-max-sources 2"))
			tap_ok(!strcmp(last_status, "serving 2 sources of 1 clients"),
			       "the restore passes the uid's quota: \"%s\"", last_status);
		extra_opt = NULL;
		extra_val = NULL;
		stop_daemon(&daemon_pid);
		if (q4 >= 0)
			close(q4);
		for (i = 0; q4 >= 0 && i < 4; i++)
			close(q4_fds[i]);
	}
	close(late);
	close(late_fds[0]);
	close(web);
	close(lfd);
	close(tfd);
	close(junk[1]);
	for (i = 0; i < 2; i++)
		close(web_fds[i]);
	close(db_fds[0]);
	close(tmp_fds[0]);
out:
	if (daemon_pid > 0)
		stop_daemon(&daemon_pid);
	for (i = 0; i < nstore; i++)
		close(store[i].fd);
	unlink(notify_path);
	unlink(sock1);
	unlink(sock2);
	unlink(port_path);
	rmdir(dir);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
