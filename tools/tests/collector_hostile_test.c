// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector against hostile clients, on the host: one client per
 * attack, each refusal checked for its exact error, while an honest VMM's
 * VM keeps being exported and the daemon's RSS (VmRSS), CPU time
 * (utime + stime) and scrape latency stay within the bounds stated in
 * Documentation/statsfd-collector.rst ("Hostile clients").  Also the daemon's
 * start-up safety: a live instance, symlinks at the socket and port file
 * paths, the socket's mode, --user ''.
 *
 *   collector_hostile_test COLLECTOR_BINARY   (as root; TAP on stdout)
 *
 * With --attack, only the attacks on a live daemon, against one already
 * running (prometheus_hostile_test.sh: a real Prometheus scrapes it
 * throughout) that another process feeds with VM web and its 2 vCPUs:
 *
 *   collector_hostile_test --attack SOCKET HTTP_PORT DAEMON_PID
 *
 * That daemon runs as start() below runs its own: --test-accept-memfd,
 * --socket-mode 0666, --user nobody, --allow-uid 0,12345 and
 * --client-timeout 1000, freshly started (the attacks check its counters).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/*
 * Bounds while under attack (a sanitized build on a loaded 2-core
 * machine: ASan's shadow memory alone is tens of MiB of RSS).
 */
#define RSS_MAX_KB		(160 << 10)
#define CPU_MAX_S		5.0
#define SCRAPE_MAX_S		2.0

static char dir[] = "/tmp/statsfd-hostile-test.XXXXXX";
static char sock_path[128], port_path[128];
static const char *bin;
static pid_t daemon_pid = -1;
static unsigned int http_port;
/*
 * --attack: the honest VMM is another process whose counters move, so a
 * scrape checks its value never went back instead of its exact value.
 */
static bool external_honest;
static double honest_last;

static const struct img_stat vm_stats[] = {
	{ "vcpus_created", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "io_exits_sum", STATSFD_TYPE_CUMULATIVE | STATSFD_AGG_SUM, 0, 1, 0 },
};

/* Hostile stat names: quotes, backslashes, braces, our namespace, clashes. */
static const struct img_stat evil_stats[] = {
	{ "back\\slash", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "x\"y}", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "collector_sources", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "collector", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "dup.name", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "dup_name", STATSFD_TYPE_INSTANT, 0, 1, 0 },
	{ "9lives", STATSFD_TYPE_INSTANT, 0, 1, 0 },
};

static int image_memfd(const char *id, const struct img_stat *st, unsigned int n)
{
	static unsigned char buf[1 << 14];

	return img_memfd(buf, img_build(buf, sizeof(buf), id, 48, st, n, NULL, 0));
}

/* What the collector accounts for the fd (admit.c): its quota unit. */
static size_t fd_cost(int fd)
{
	struct statsfd *sf = statsfd_open_fd(fd, STATSFD_OPEN_NO_MMAP, NULL);
	size_t ns, cost;

	if (!sf)
		return 0;
	ns = statsfd_header(sf)->name_size;
	cost = 2 * statsfd_data_size(sf) + statsfd_num_stats(sf) * (16 + ns) + ns;
	statsfd_close(sf);
	return cost;
}

/*
 * A header whose one descriptor puts its value at @data_off: the data
 * block it claims is that large, the file itself sparse.
 */
static int claim_memfd(uint32_t name_size, uint32_t num_desc, uint32_t data_off)
{
	struct statsfd_header h = {
		.name_size = name_size, .num_desc = num_desc, .id_offset = 24,
		.desc_offset = 24 + name_size, .data_offset = 0,
	};
	struct statsfd_desc d = { .size = 1, .offset = data_off };
	int fd = memfd_create("statsfd-hostile", MFD_CLOEXEC);

	h.data_offset = h.desc_offset + num_desc * (16 + name_size);
	if (fd < 0 || ftruncate(fd, (off_t)h.data_offset + data_off + 8) ||
	    pwrite(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    pwrite(fd, "evil", 5, 24) != 5 ||
	    pwrite(fd, &d, sizeof(d), h.desc_offset) != sizeof(d) ||
	    pwrite(fd, "x", 2, h.desc_offset + 16) != 2)
		tap_diag("claim_memfd: %s", strerror(errno));
	return fd;
}

/* The error's class is @cls and its text contains @text. */
static bool is_error(struct json_object *r, const char *cls, const char *text)
{
	struct json_object *e, *c, *d;

	if (!r || !json_object_object_get_ex(r, "error", &e) ||
	    !json_object_object_get_ex(e, "class", &c) ||
	    !json_object_object_get_ex(e, "desc", &d))
		return false;
	if (strcmp(json_object_get_string(c), cls) ||
	    !strstr(json_object_get_string(d), text)) {
		tap_diag("got %s", json_object_to_json_string(r));
		return false;
	}
	return true;
}

static bool is_return(struct json_object *r)
{
	struct json_object *v;

	if (r && json_object_object_get_ex(r, "return", &v))
		return true;
	tap_diag("got %s", r ? json_object_to_json_string(r) : "no reply");
	return false;
}

/* add-sources of @n fds, all vCPUs of VM @vm under @provider. */
static struct json_object *add_vcpus(int s, const char *provider, const char *vm,
				     const int *fds, unsigned int n)
{
	struct statsfd_buf req = { 0 };
	struct json_object *r;
	unsigned int i;

	statsfd_buf_printf(&req, "{\"execute\":\"add-sources\",\"arguments\":{"
			   "\"provider\":\"%s\",\"vm\":\"%s\",\"sources\":[",
			   provider, vm);
	for (i = 0; i < n; i++)
		statsfd_buf_printf(&req, "%s{\"target\":\"vcpu\",\"vcpu\":%u}",
				   i ? "," : "", i);
	statsfd_buf_printf(&req, "]}}");
	r = rpc_json(s, req.data, fds, n);
	statsfd_buf_free(&req);
	return r;
}

static struct json_object *add_one(int s, const char *provider, const char *vm,
				   int fd)
{
	return add_vcpus(s, provider, vm, &fd, 1);
}


/* `promtool check metrics` on @text: 1 accepted, 0 refused. */
static int promtool_ok(const char *text)
{
	char path[160], cmd[400];
	FILE *f;
	int st;

	snprintf(path, sizeof(path), "%s/metrics.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return 0;
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s >%s.log 2>&1", path, path);
	st = system(cmd);
	if (st) {
		snprintf(cmd, sizeof(cmd), "sed 's/^/# promtool: /' %s.log | head -20", path);
		if (system(cmd))
			tap_diag("promtool failed");
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Value of the sample line starting with @series (name and labels). */
static bool sample(const char *text, const char *series, double *v)
{
	const char *p = text;
	size_t n = strlen(series);

	while ((p = strstr(p, series))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ') {
			*v = strtod(p + n + 1, NULL);
			return true;
		}
		p += n;
	}
	return false;
}

/* Start the daemon with the common options and @extra (NULL-terminated). */
static int start(const char *const *extra)
{
	const char *const argv[] = {
		bin, "--socket", sock_path, "--socket-mode", "0666", "--listen",
		"127.0.0.1:0", "--port-file", port_path, "--user", "nobody",
		"--allow-uid", "0,12345", "--interval", "100",
		"--client-timeout", "1000", NULL,
	};

	daemon_pid = spawn_daemon(argv, extra, port_path, 15, &http_port, NULL, NULL);
	return daemon_pid < 0 ? -1 : 0;
}

static bool stop(void)
{
	return stop_daemon(&daemon_pid);
}

/* Exit status of the collector run with @argv (NULL-terminated), stderr kept. */
static int run_status(const char *const *args, char *err, size_t len)
{
	const char *argv[32] = { bin };
	int p[2], status;
	unsigned int i;
	ssize_t n;
	pid_t pid;

	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		dup2(p[1], 2);
		close(p[0]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	i = 0;
	while (i < len - 1 && (n = read(p[0], err + i, len - 1 - i)) > 0)
		i += (unsigned int)n;
	err[i] = '\0';
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Run @fn in a child with uid and gid 12345; its exit status is 0 on success. */
static int as_uid(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		if (setgroups(0, NULL) || setgid(12345) || setuid(12345))
			_exit(100);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* ---- the honest VMM ---------------------------------------------------- */

static int honest_sock = -1, honest_fds[3];

static void honest_start(void)
{
	const char *q = "{\"execute\":\"add-sources\",\"arguments\":{"
			"\"provider\":\"statsfd_vm\",\"vm\":\"web\",\"sources\":["
			"{\"target\":\"vm\"},{\"target\":\"vcpu\",\"vcpu\":0},"
			"{\"target\":\"vcpu\",\"vcpu\":1}]}}";
	struct json_object *r;

	honest_sock = statsfd_msg_connect(sock_path);
	honest_fds[0] = image_memfd("vm-1-0", vm_stats, 2);
	honest_fds[1] = img_vcpu_memfd("vm-1-0/vcpu-0");
	honest_fds[2] = img_vcpu_memfd("vm-1-0/vcpu-1");
	r = rpc_json(honest_sock, q, honest_fds, 3);
	tap_ok(is_return(r), "the honest VMM registers VM web and 2 vCPUs");
	json_object_put(r);
}

static void honest_stop(void)
{
	int i;

	close(honest_sock);
	for (i = 0; i < 3; i++)
		close(honest_fds[i]);
}

/*
 * While an attack runs: the honest VM is exported and a scrape is quick.
 * Return: the scrape (to free), NULL on failure.
 */
static char *honest_scrape(const char *during)
{
	double t = 0, v = -1;
	char *m = test_http_get(http_port, "/metrics", &t);
	bool ok = m && sample(m, "statsfd_io_exits_total{provider=\"statsfd_vm\","
			      "target=\"vcpu\",vm=\"web\",vcpu=\"1\"}", &v) &&
		  (external_honest ? v >= honest_last : v == 2) && t < SCRAPE_MAX_S;

	tap_ok(ok, "%s: the honest VM still exported (io_exits %.0f), scrape in %.0f ms",
	       during, v, t * 1000);
	if (ok)
		honest_last = v;
	return m;
}

/* ---- attacks -------------------------------------------------------------- */

/* Without --test-accept-memfd: files, memfds, pipes are not stats fds. */
static void test_not_stats_fds(void)
{
	char path[160];
	struct json_object *r;
	int s, fd, p[2];

	if (!tap_ok(!start(NULL), "collector without --test-accept-memfd starts"))
		return;
	s = statsfd_msg_connect(sock_path);
	snprintf(path, sizeof(path), "%s/regular", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	{
		static unsigned char buf[1 << 14];
		size_t n = img_build(buf, sizeof(buf), "fake", 48, img_vcpu_stats,
				     img_vcpu_nstats, NULL, 0);

		if (write(fd, buf, n) != (ssize_t)n)
			tap_diag("write: %s", strerror(errno));
	}
	r = add_one(s, "kvm", "fake", fd);
	tap_ok(is_error(r, "PermissionDenied", "not a stats fd of statsfd or KVM (/tmp/"),
	       "a regular file holding a valid image: PermissionDenied");
	json_object_put(r);
	close(fd);
	fd = img_vcpu_memfd("memfd");
	r = add_one(s, "kvm", "fake", fd);
	tap_ok(is_error(r, "PermissionDenied", "(/memfd:statsfd-test-image (deleted))"),
	       "a memfd holding a valid image: PermissionDenied");
	json_object_put(r);
	close(fd);
	if (!pipe(p)) {
		r = add_one(s, "kvm", "fake", p[0]);
		tap_ok(is_error(r, "PermissionDenied", "(pipe:["), "a pipe: PermissionDenied");
		json_object_put(r);
		close(p[0]);
		close(p[1]);
	}
	close(s);
	tap_ok(stop(), "clean exit");
}

/* The memfd claiming 64 MiB, dup'd: refused from its header. */
static void test_huge_claims(void)
{
	int s = statsfd_msg_connect(sock_path), fds[253], fd, i;
	long rss0 = proc_status(daemon_pid, "VmRSS"), rss1;
	double cpu0 = proc_cpu(daemon_pid), cpu1;
	struct json_object *r;
	char *m;

	fd = claim_memfd(8, 1, 64u << 20);
	for (i = 0; i < 253; i++)
		fds[i] = dup(fd);
	r = add_vcpus(s, "kvm", "huge", fds, 4);
	tap_ok(is_error(r, "GenericError", "sources[0]: data block of 67108872 bytes above the collector's cap 262144"),
	       "a header claiming a 64 MiB data block, 4 dups: refused (data cap)");
	json_object_put(r);
	r = add_vcpus(s, "kvm", "huge", fds, 253);
	tap_ok(is_error(r, "GenericError", "data block of 67108872 bytes above"),
	       "the same in 253 fds of one message: refused");
	json_object_put(r);
	for (i = 0; i < 253; i++)
		close(fds[i]);
	close(fd);
	fd = claim_memfd(8, 100000, 0);
	r = add_one(s, "kvm", "huge", fd);
	tap_ok(is_error(r, "GenericError", "header.num_desc 100000 above the collector's cap 1024"),
	       "100000 descriptors: refused (descriptor cap)");
	json_object_put(r);
	close(fd);
	fd = claim_memfd(4096, 1, 0);
	r = add_one(s, "kvm", "huge", fd);
	tap_ok(is_error(r, "GenericError", "header.name_size 4096 above the collector's cap 256"),
	       "names of 4096 bytes: refused (name cap)");
	json_object_put(r);
	close(fd);
	rss1 = proc_status(daemon_pid, "VmRSS");
	cpu1 = proc_cpu(daemon_pid);
	tap_ok(rss1 >= 0 && rss1 - rss0 < 16 << 10 && cpu1 - cpu0 < 1.0,
	       "refused cheaply: RSS %ld -> %ld kB, %.2f s of CPU", rss0, rss1, cpu1 - cpu0);
	m = honest_scrape("after the huge claims");
	/*
	 * The exposition is rendered once per read tick and a refusal is no
	 * change of sources, so the count shows from the next rendering on
	 * (Documentation/statsfd-collector.rst): scrape again for a few ticks.
	 */
	for (i = 0; i < 50 && !(m && strstr(m, "statsfd_collector_fds_rejected_total 4\n")); i++) {
		free(m);
		usleep(100 * 1000);
		m = test_http_get(http_port, "/metrics", NULL);
	}
	tap_ok(m && strstr(m, "statsfd_collector_fds_rejected_total 4\n"),
	       "statsfd_collector_fds_rejected_total counts the 4 refusals (after %d more scrapes)", i);
	free(m);
	close(s);
}

/* Quotas: sources per client, bytes per client, the global budget. */
static void test_quotas(void)
{
	int probe = img_vcpu_memfd("probe"), a, b, fds[4], i;
	size_t cost = fd_cost(probe);
	char cmax[32], bmax[32];
	const char *extra[] = {
		"--test-accept-memfd", "--client-max-bytes", cmax, "--max-bytes", bmax,
		"--client-max-sources", "3", NULL,
	};
	struct json_object *r;
	char *m;

	close(probe);
	/* A client holds 3 sources (its byte quota fits 3.5); all hold 5.5. */
	snprintf(cmax, sizeof(cmax), "%zu", cost * 7 / 2);
	snprintf(bmax, sizeof(bmax), "%zu", cost * 11 / 2);
	if (!tap_ok(cost && !start(extra), "collector with quotas of %s and %s bytes starts",
		    cmax, bmax))
		return;
	a = statsfd_msg_connect(sock_path);
	b = statsfd_msg_connect(sock_path);
	for (i = 0; i < 4; i++)
		fds[i] = img_vcpu_memfd("quota");
	r = add_vcpus(a, "statsfd_vm", "qa", fds, 4);
	tap_ok(is_error(r, "QuotaExceeded", "sources[3]: this client's source quota (3, --client-max-sources) reached"),
	       "a 4th source of one client: QuotaExceeded (--client-max-sources), none kept");
	json_object_put(r);
	r = add_vcpus(a, "statsfd_vm", "qa", fds, 3);
	tap_ok(is_return(r), "3 sources fit");
	json_object_put(r);
	r = add_one(a, "statsfd_vm", "qa2", fds[3]);
	tap_ok(is_error(r, "QuotaExceeded", "this client's source quota"),
	       "then a 4th in another message: QuotaExceeded");
	json_object_put(r);
	/* Files of their own: the same file is never two sources. */
	for (i = 0; i < 4; i++) {
		close(fds[i]);
		fds[i] = img_vcpu_memfd("quota");
	}
	r = add_vcpus(b, "statsfd_vm", "qb", fds, 3);
	tap_ok(is_error(r, "QuotaExceeded", "sources[2]: the collector's budget of"),
	       "a second client's 3rd source would pass --max-bytes: QuotaExceeded");
	json_object_put(r);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	close(a);
	close(b);
	msleep(200);
	a = statsfd_msg_connect(sock_path);
	for (i = 0; i < 4; i++)
		fds[i] = img_vcpu_memfd("quota");
	/* 3.5 sources' worth of bytes, but at most 3 sources: use a smaller cap. */
	r = add_vcpus(a, "statsfd_vm", "qc", fds, 3);
	tap_ok(is_return(r), "after the clients left, their bytes are free again");
	json_object_put(r);
	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && strstr(m, "statsfd_collector_quota_refusals_total 3\n"),
	       "statsfd_collector_quota_refusals_total 3");
	free(m);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	close(a);
	tap_ok(stop(), "clean exit");
	snprintf(cmax, sizeof(cmax), "%zu", cost * 3 / 2);
	extra[4] = "1000000000";
	extra[5] = NULL;
	if (!tap_ok(!start(extra), "collector with a client byte quota of 1.5 sources starts"))
		return;
	a = statsfd_msg_connect(sock_path);
	fds[0] = img_vcpu_memfd("quota");
	fds[1] = img_vcpu_memfd("quota");
	r = add_vcpus(a, "statsfd_vm", "qd", fds, 2);
	tap_ok(is_error(r, "QuotaExceeded", "sources[1]: this client's quota of"),
	       "a 2nd source over --client-max-bytes: QuotaExceeded");
	json_object_put(r);
	close(fds[0]);
	close(fds[1]);
	close(a);
	tap_ok(stop(), "clean exit");
}

/* VM labels belong to their registrant. */
static int squat(void *arg)
{
	const char *vm = arg;
	int s = statsfd_msg_connect(sock_path), fd = img_vcpu_memfd("squat"), ok;
	struct json_object *r = add_one(s, "kvm", vm, fd);
	char want[96];

	snprintf(want, sizeof(want), "vm \"%s\" is registered by uid 0", vm);
	ok = is_error(r, "PermissionDenied", want);
	json_object_put(r);
	close(s);
	return ok ? 0 : 1;
}

static int claim_free(void *arg)
{
	int s = statsfd_msg_connect(sock_path), fd = img_vcpu_memfd("squat"), ok;
	struct json_object *r = add_one(s, "kvm", arg, fd);

	ok = is_return(r);
	json_object_put(r);
	close(s);
	return ok ? 0 : 1;
}

static void test_labels(void)
{
	struct json_object *r;
	int s, fd, st;
	pid_t pid;

	tap_ok(as_uid(squat, "web") == 0,
	       "uid 12345 cannot shadow VM web of uid 0 under another provider (PermissionDenied)");
	/* Same uid, another live process: refused too. */
	pid = fork();
	if (!pid)
		_exit(squat("web"));
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "another process of uid 0 cannot take VM web while its owner lives");
	s = statsfd_msg_connect(sock_path);
	fd = img_vcpu_memfd("own");
	r = add_one(s, "kvm", "own", fd);
	close(fd);
	tap_ok(is_return(r), "uid 0 registers VM own");
	json_object_put(r);
	close(s);
	msleep(200);
	tap_ok(as_uid(claim_free, "own") == 0,
	       "once its owner is gone, VM own is free: uid 12345 registers it");
	msleep(200);
	s = statsfd_msg_connect(sock_path);
	fd = img_vcpu_memfd("own");
	r = add_one(s, "kvm", "own", fd);
	close(fd);
	tap_ok(is_return(r), "and, that client gone, uid 0 gets it back (a VMM restart)");
	json_object_put(r);
	close(s);
	msleep(200);
}

/* Names chosen to break the exposition or shadow the collector's metrics. */
static void test_names(void)
{
	int s = statsfd_msg_connect(sock_path), fds[2];
	struct json_object *r;
	double v = -1;
	char *m;

	fds[0] = image_memfd("evil", evil_stats, sizeof(evil_stats) / sizeof(*evil_stats));
	fds[1] = image_memfd("evil2", evil_stats, sizeof(evil_stats) / sizeof(*evil_stats));
	r = rpc_json(s, "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"statsfd\","
		"\"vm\":\"a\\u0027b\",\"sources\":[{\"target\":\"collector\"},"
		"{\"target\":\"node\",\"provider\":\"node\"}]}}", fds, 2);
	tap_ok(is_return(r), "sources with hostile stat names, provider statsfd target collector");
	json_object_put(r);
	close(fds[0]);
	close(fds[1]);
	msleep(250);
	m = honest_scrape("hostile names");
	tap_ok(m && promtool_ok(m), "promtool check metrics accepts the exposition");
	tap_ok(m && sample(m, "statsfd_collector_sources", &v) && v == 5,
	       "statsfd_collector_sources is the collector's: 5 (not shadowed)");
	tap_ok(m && strstr(m, "\nstatsfd_stat_collector_sources{provider=\"statsfd\",target=\"collector\",vm=\"a'b\"} ") &&
	       strstr(m, "\nstatsfd_stat_collector_total{provider=\"node\",target=\"node\",vm=\"a'b\"} "),
	       "stats named collector_sources and collector: statsfd_stat_collector_*");
	tap_ok(m && strstr(m, "# HELP statsfd_back_slash_total statsfd stat back\\\\slash (") &&
	       strstr(m, "# HELP statsfd_x_y_ statsfd stat x\"y} ("),
	       "HELP escapes the backslash of stat back\\slash");
	tap_ok(m && !strstr(m, "\nnode_") && !strstr(m, "\nstatsfd_node_"),
	       "provider node, target node: labels, never a node_* metric");
	tap_ok(m && strstr(m, "statsfd_collector_family_conflicts 2\n"),
	       "dup.name and dup_name map to one name: one kept, conflicts reported (2 sources)");
	tap_ok(m && strstr(m, "\nstatsfd_9lives{"), "a stat starting with a digit: after the prefix, valid");
	free(m);
	close(s);
}

/* A reply reader too slow to finish before the deadline, though it reads. */
static void test_slow_reader(void)
{
	enum { N = 1000, PER_MSG = 250 };
	int s = statsfd_msg_connect(sock_path), q, fds[PER_MSG], i, j, got = 0;
	const char *ask = "{\"execute\":\"query-stats\"}";
	struct statsfd_msg_hdr_view { uint32_t magic; uint16_t version, flags; } h = { 0 };
	struct json_object *r;
	bool ok = true;
	char vm[32];
	char *m;

	for (j = 0; j < N / PER_MSG; j++) {
		for (i = 0; i < PER_MSG; i++)
			fds[i] = img_vcpu_memfd("bulk");
		snprintf(vm, sizeof(vm), "bulk%d", j);
		r = add_vcpus(s, "statsfd_vm", vm, fds, PER_MSG);
		ok &= is_return(r);
		json_object_put(r);
		for (i = 0; i < PER_MSG; i++)
			close(fds[i]);
	}
	tap_ok(ok, "%d vCPUs registered for a large reply", N);
	q = statsfd_msg_connect(sock_path);
	statsfd_msg_send(q, ask, strlen(ask), NULL, 0);
	for (;;) {
		static char buf[STATSFD_MSG_MAX];
		struct pollfd p = { .fd = q, .events = POLLIN };
		ssize_t n;

		msleep(300);
		if (poll(&p, 1, 3000) != 1)
			break;
		n = recv(q, buf, sizeof(buf), 0);
		if (n < (ssize_t)sizeof(h))
			break;
		memcpy(&h, buf, sizeof(h));
		got++;
	}
	tap_ok(got >= 1 && (h.flags & STATSFD_MSG_F_MORE),
	       "a reader taking one packet per 300 ms: cut off mid-reply at its deadline (1 s) after %d packets, though it progressed",
	       got);
	close(q);
	m = honest_scrape("slow reader");
	tap_ok(m && strstr(m, "statsfd_collector_clients_dropped_total 1\n"),
	       "statsfd_collector_clients_dropped_total 1");
	free(m);
	close(s);
	msleep(300);
}

/* Connections of a uid that is not allowed do not hold --max-clients. */
static int flood(void *arg)
{
	int *n = arg, i, s;

	for (i = 0; i < *n; i++) {
		s = statsfd_msg_connect(sock_path);
		if (s < 0)
			return 1;
		/* Kept open, never read: the refusal sits there. */
	}
	msleep(1500);
	return 0;
}

static void test_refused_flood(void)
{
	const char *extra[] = { "--test-accept-memfd", "--max-clients", "2", NULL };
	int n = 300, st, a, b, c;
	struct json_object *r;
	pid_t pid;

	if (!tap_ok(!start(extra), "collector with --max-clients 2 starts"))
		return;
	pid = fork();
	if (!pid) {
		/* Not even in the default --allow-uid 0,12345 of start(). */
		if (setgroups(0, NULL) || setgid(23456) || setuid(23456))
			_exit(100);
		_exit(flood(&n));
	}
	msleep(500);
	a = statsfd_msg_connect(sock_path);
	r = rpc_json(a, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(is_return(r), "300 refused connections held open: an allowed client is served");
	json_object_put(r);
	b = statsfd_msg_connect(sock_path);
	r = rpc_json(b, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(is_return(r), "and a second one (--max-clients 2)");
	json_object_put(r);
	c = statsfd_msg_connect(sock_path);
	r = rpc_json(c, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(!r, "a third allowed client is closed unanswered (--max-clients)");
	json_object_put(r);
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the flood ran");
	close(a);
	close(b);
	close(c);
	tap_ok(stop(), "clean exit");
}

/* A source whose reads fail: down, not exported, then dropped. */
static void test_failing_source(void)
{
	const char *extra[] = { "--test-accept-memfd", "--drop-after", "5", NULL };
	int s, fd;
	struct json_object *r;
	double v = -1;
	char *m;
	bool ok = false;
	double t0;

	if (!tap_ok(!start(extra), "collector with --drop-after 5 starts"))
		return;
	s = statsfd_msg_connect(sock_path);
	fd = img_vcpu_memfd("flaky");
	r = add_one(s, "statsfd_vm", "flaky", fd);
	tap_ok(is_return(r), "source registered");
	json_object_put(r);
	msleep(250);
	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && sample(m, "statsfd_collector_source_up{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"flaky\",vcpu=\"0\"}", &v) &&
	       v == 1 && strstr(m, "statsfd_collector_source_last_read_timestamp_seconds{provider=\"statsfd_vm\"") &&
	       strstr(m, "statsfd_halt_exits_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"flaky\""),
	       "up 1 and exported while its reads succeed");
	free(m);
	/* The file shrinks: every read of the data block comes up short. */
	if (ftruncate(fd, 64))
		tap_diag("ftruncate: %s", strerror(errno));
	msleep(250);
	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && sample(m, "statsfd_collector_source_up{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"flaky\",vcpu=\"0\"}", &v) &&
	       v == 0 && !strstr(m, "statsfd_halt_exits_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"flaky\"") &&
	       sample(m, "statsfd_collector_source_read_errors_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"flaky\",vcpu=\"0\"}", &v) &&
	       v >= 1 && strstr(m, "statsfd_collector_sources_down 1\n"),
	       "reads failing: up 0, its stats no longer exported, read errors counted");
	free(m);
	r = rpc_json(s, "{\"execute\":\"query-sources\"}", NULL, 0);
	{
		struct json_object *src, *x;

		src = r && json_object_object_get_ex(r, "return", &src) ?
		      json_object_array_get_idx(src, 0) : NULL;
		tap_ok(src && json_object_object_get_ex(src, "up", &x) &&
		       json_object_is_type(x, json_type_boolean) && !json_object_get_boolean(x) &&
		       json_object_object_get_ex(src, "last-read-ms", &x) &&
		       json_object_get_uint64(x) > 0,
		       "query-sources: \"up\": false, \"last-read-ms\" of its last good read");
	}
	json_object_put(r);
	t0 = now_s();
	while (!ok && now_s() - t0 < 3) {
		msleep(100);
		m = test_http_get(http_port, "/metrics", NULL);
		ok = m && strstr(m, "statsfd_collector_sources 0\n") &&
		     strstr(m, "statsfd_collector_sources_failed_total 1\n");
		free(m);
	}
	tap_ok(ok, "dropped after 5 failed reads in a row (statsfd_collector_sources_failed_total 1)");
	close(fd);
	close(s);
	tap_ok(stop(), "clean exit");
}

/* --include, --exclude and --histograms. */
static void test_filters(void)
{
	const char *extra[] = { "--test-accept-memfd", "--include", "statsfd_vm:vcpu:*exits*",
				"--exclude", "*:*:io_exits_sum", "--histograms", "drop", NULL };
	const char *bad[][3] = {
		{ "--include", "a:b", NULL }, { "--include", "a::c", NULL },
		{ "--exclude", ":b:c", NULL }, { "--include", "a:b:c:d", NULL },
		{ "--exclude", "", NULL }, { "--histograms", "maybe", NULL },
		{ "--drop-after", "0", NULL }, { "--client-max-bytes", "12x", NULL },
		{ "--max-bytes", "100", NULL }, { "--client-max-sources", "0", NULL },
	};
	char err[4096];
	unsigned int i;
	struct json_object *r;
	int s, fds[2];
	char *m;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		tap_ok(run_status(bad[i], err, sizeof(err)) == 2 && strstr(err, "bad value"),
		       "%s '%s': usage error", bad[i][0], bad[i][1]);
	if (!tap_ok(!start(extra), "collector with --include, --exclude, --histograms drop starts"))
		return;
	s = statsfd_msg_connect(sock_path);
	fds[0] = image_memfd("vm-2-0", vm_stats, 2);
	fds[1] = img_vcpu_memfd("vm-2-0/vcpu-0");
	r = rpc_json(s, "{\"execute\":\"add-sources\",\"arguments\":{\"provider\":\"statsfd_vm\","
		"\"vm\":\"f\",\"sources\":[{\"target\":\"vm\"},{\"target\":\"vcpu\",\"vcpu\":0}]}}",
		fds, 2);
	tap_ok(is_return(r), "VM and vCPU registered");
	json_object_put(r);
	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && strstr(m, "\nstatsfd_halt_exits_total{provider=\"statsfd_vm\",target=\"vcpu\"") &&
	       strstr(m, "\nstatsfd_io_exits_total{provider=\"statsfd_vm\",target=\"vcpu\"") &&
	       !strstr(m, "statsfd_guest_cycles") && !strstr(m, "_bucket{") &&
	       !strstr(m, "statsfd_io_exits_sum_total"),
	       "vCPU: only *exits* (--include), not io_exits_sum (--exclude), no histograms");
	tap_ok(m && strstr(m, "\nstatsfd_vcpus_created_total{provider=\"statsfd_vm\",target=\"vm\""),
	       "VM: no --include rule applies to target vm, all its stats but the excluded");
	tap_ok(m && promtool_ok(m), "promtool check metrics accepts it");
	free(m);
	close(fds[0]);
	close(fds[1]);
	close(s);
	tap_ok(stop(), "clean exit");
}

/* ---- start-up safety ------------------------------------------------------ */

static void test_startup(void)
{
	char err[4096], victim[160], lnk[160], sock2[160];
	const char *user_empty[] = { "--user", "", NULL };
	const char *live[] = { "--socket", sock_path, "--listen", "none", NULL };
	const char *to_file[] = { "--socket", victim, "--listen", "none", NULL };
	const char *to_link[] = { "--socket", lnk, "--listen", "none", NULL };
	const char *portlink[] = { "--socket", sock2, "--listen", "127.0.0.1:0",
				   "--port-file", lnk, NULL };
	const char *extra[] = { "--test-accept-memfd", "--socket-mode", "0640", NULL };
	struct json_object *r;
	struct stat st;
	char buf[32] = "";
	int fd, s;

	tap_ok(run_status(user_empty, err, sizeof(err)) == 2 && strstr(err, "bad value ''"),
	       "--user '': usage error (it used to keep root)");
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(lnk, sizeof(lnk), "%s/link", dir);
	snprintf(sock2, sizeof(sock2), "%s/c2.sock", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "precious\n", 9) != 9)
		tap_diag("victim: %s", strerror(errno));
	close(fd);
	if (symlink(victim, lnk))
		tap_diag("symlink: %s", strerror(errno));
	tap_ok(run_status(to_file, err, sizeof(err)) == 1 &&
	       strstr(err, "exists and is not a socket: refusing to replace it") &&
	       !lstat(victim, &st) && S_ISREG(st.st_mode),
	       "--socket at a regular file: refused, the file kept");
	tap_ok(run_status(to_link, err, sizeof(err)) == 1 &&
	       strstr(err, "exists and is not a socket") &&
	       !lstat(lnk, &st) && S_ISLNK(st.st_mode),
	       "--socket at a symlink: refused, not followed");
	tap_ok(run_status(portlink, err, sizeof(err)) == 1 &&
	       strstr(err, "--port-file") && strstr(err, "Too many levels of symbolic links"),
	       "--port-file at a symlink: refused (O_NOFOLLOW)");
	unlink(lnk);
	if (link(victim, lnk))
		tap_diag("link: %s", strerror(errno));
	tap_ok(run_status(portlink, err, sizeof(err)) == 1 &&
	       strstr(err, "not a regular file with a single link"),
	       "--port-file at a hard link to another file: refused");
	fd = open(victim, O_RDONLY);
	tap_ok(fd >= 0 && read(fd, buf, sizeof(buf)) == 9 && !strncmp(buf, "precious\n", 9),
	       "the links' target untouched");
	close(fd);
	unlink(sock2);

	umask(077);
	if (!tap_ok(!start(extra), "collector with --socket-mode 0640 starts"))
		return;
	umask(022);
	tap_ok(!lstat(sock_path, &st) && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0640,
	       "the socket has mode 0640 exactly (set before bind, whatever the umask)");
	tap_ok(run_status(live, err, sizeof(err)) == 1 &&
	       strstr(err, "another collector is running on it: refusing to start"),
	       "a second instance on the live socket refuses to start");
	s = statsfd_msg_connect(sock_path);
	r = rpc_json(s, "{\"execute\":\"hello\"}", NULL, 0);
	tap_ok(is_return(r), "and the first one still serves on it");
	json_object_put(r);
	close(s);
	/* Killed: the socket stays behind, and nothing answers on it. */
	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = -1;
	tap_ok(!lstat(sock_path, &st) && S_ISSOCK(st.st_mode), "a killed collector leaves its socket");
	tap_ok(!start(extra), "a new instance replaces the stale socket");
	tap_ok(stop(), "clean exit");
}

/*
 * The attacks on a live daemon fed by the honest VMM, then the bounds on
 * its RSS and CPU time over all of them.
 */
static void run_attacks(void)
{
	double cpu0 = proc_cpu(daemon_pid);
	long rss;
	char *m;

	test_huge_claims();
	test_labels();
	test_names();
	test_slow_reader();
	rss = proc_status(daemon_pid, "VmRSS");
	tap_ok(rss > 0 && rss < RSS_MAX_KB, "the collector's RSS after every attack: %ld kB (bound %d)",
	       rss, RSS_MAX_KB);
	tap_ok(proc_cpu(daemon_pid) - cpu0 < CPU_MAX_S, "its CPU time over the attacks: %.2f s (bound %.0f)",
	       proc_cpu(daemon_pid) - cpu0, CPU_MAX_S);
	m = test_http_get(http_port, "/metrics", NULL);
	tap_ok(m && strstr(m, "\nprocess_resident_memory_bytes ") &&
	       strstr(m, "\nprocess_cpu_seconds_total ") && strstr(m, "\nprocess_open_fds ") &&
	       strstr(m, "\nprocess_max_fds ") && strstr(m, "\nprocess_start_time_seconds ") &&
	       strstr(m, "\nprocess_virtual_memory_bytes ") &&
	       strstr(m, "\nstatsfd_collector_build_info{version=\""),
	       "process_* metrics and statsfd_collector_build_info exported");
	free(m);
}

/* --attack SOCKET HTTP_PORT DAEMON_PID: 0 when the arguments make sense. */
static int attack_args(char **argv)
{
	char *end;
	long v;

	if (strlen(argv[2]) >= sizeof(sock_path))
		return -1;
	snprintf(sock_path, sizeof(sock_path), "%s", argv[2]);
	v = strtol(argv[3], &end, 10);
	if (*end || v <= 0 || v > 65535)
		return -1;
	http_port = (unsigned int)v;
	v = strtol(argv[4], &end, 10);
	if (*end || v <= 0 || kill((pid_t)v, 0))
		return -1;
	daemon_pid = (pid_t)v;
	external_honest = true;
	return 0;
}

int main(int argc, char **argv)
{
	const char *memfd[] = { "--test-accept-memfd", NULL };
	bool attack = argc >= 2 && !strcmp(argv[1], "--attack");

	if (attack ? argc != 5 || attack_args(argv) : argc < 2) {
		fprintf(stderr, "usage: collector_hostile_test COLLECTOR\n"
			"       collector_hostile_test --attack SOCKET HTTP_PORT DAEMON_PID\n");
		return 2;
	}
	bin = attack ? NULL : argv[1];
	signal(SIGPIPE, SIG_IGN);
	if (geteuid() != 0) {
		tap_ok(0, "collector hostile tests need root (a foreign uid, the drop to nobody)");
		return tap_done();
	}
	if (system("command -v promtool >/dev/null")) {
		tap_ok(0, "promtool (Debian package prometheus) is needed");
		return tap_done();
	}
	{
		struct rlimit rl = { 8192, 8192 };

		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!mkdtemp(dir))
		return 1;
	chmod(dir, 0755);
	if (attack) {
		/* Another's daemon: attacked, never stopped. */
		run_attacks();
		goto out;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/collector.sock", dir);
	snprintf(port_path, sizeof(port_path), "%s/port", dir);

	test_startup();
	test_not_stats_fds();
	test_filters();
	test_refused_flood();
	test_quotas();
	test_failing_source();

	if (!tap_ok(!start(memfd), "collector for the attacks starts"))
		return tap_done();
	honest_start();
	msleep(250);
	run_attacks();
	honest_stop();
	tap_ok(stop(), "clean exit after the attacks");
	unlink(sock_path);
	unlink(port_path);
out:
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			tap_diag("cleanup failed");
	}
	return tap_done();
}
