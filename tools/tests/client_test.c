// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of libstatsfd's collector client (statsfd_client.h) against
 * the real statsfd-collector, with memfd-backed stats images: a VMM that
 * starts before the collector registers once it is there, registers again
 * after the collector is killed and restarted, survives and retries a
 * refusal, and every bad argument has its own error.
 *
 *   client_test COLLECTOR_BINARY	(TAP on stdout)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "spawn.h"
#include "statsfd_client.h"
#include "tap.h"

static char dir[] = "/tmp/statsfd-client-test.XXXXXX";
static char sock_path[100];
static pid_t daemon_pid = -1;
static char logbuf[8192];

static void logger(void *arg, const char *msg)
{
	size_t n = strlen(logbuf);

	snprintf(logbuf + n, sizeof(logbuf) - n, "%s\n", msg);
	tap_diag("%s: %s", (const char *)arg, msg);
}

static unsigned int count(const char *s)
{
	unsigned int n = 0;
	const char *p = logbuf;

	while ((p = strstr(p, s))) {
		n++;
		p++;
	}
	return n;
}

/* The VMM's loop: poll the clients' fds, dispatch, for @secs or @until. */
static void run(struct statsfd_client **cls, unsigned int n, double secs,
		bool (*until)(void))
{
	double t0 = now_s();

	while (now_s() - t0 < secs && !(until && until())) {
		struct pollfd p[4];
		int t = 50, i;

		for (i = 0; i < (int)n; i++) {
			int ct = statsfd_client_timeout(cls[i]);

			p[i].fd = statsfd_client_fd(cls[i]);
			p[i].events = statsfd_client_events(cls[i]);
			if (ct >= 0 && ct < t)
				t = ct;
		}
		poll(p, n, t);
		for (i = 0; i < (int)n; i++)
			statsfd_client_dispatch(cls[i]);
	}
}

static struct statsfd_client *cl_main;

static bool main_registered(void)
{
	struct statsfd_client_status st;

	statsfd_client_status(cl_main, &st);
	return st.connected && st.registered == st.sources;
}

static int start_daemon(const char *bin)
{

	daemon_pid = fork();
	if (!daemon_pid) {
		/* It drops privileges: LeakSanitizer cannot stop it. */
		setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		execl(bin, bin, "--socket", sock_path, "--socket-mode", "0666",
		      "--listen", "none", "--user", "nobody", "--allow-uid", "0",
		      "--interval", "100",
		      "--test-accept-memfd", (char *)NULL);
		_exit(127);
	}
	return daemon_pid > 0 ? 0 : -1;
}

static void kill_daemon(int sig)
{
	if (daemon_pid <= 0)
		return;
	kill(daemon_pid, sig);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = -1;
}

/* Sources the collector has, -1 when it does not answer. */
static int collector_sources(void)
{
	static const char q[] = "{\"execute\":\"query-sources\"}";
	struct json_object *r, *v;
	unsigned int nfds = 0;
	int s = statsfd_msg_connect(sock_path), n = -1;
	char *out;
	size_t len;

	if (s < 0)
		return -1;
	if (!statsfd_msg_send(s, q, strlen(q), NULL, 0) &&
	    !statsfd_msg_recv(s, &out, &len, NULL, &nfds, 5000)) {
		r = json_tokener_parse(out);
		if (json_object_object_get_ex(r, "return", &v))
			n = (int)json_object_array_length(v);
		json_object_put(r);
		free(out);
	}
	close(s);
	return n;
}

static struct statsfd_labels lab(const char *target, const char *vm, int vcpu)
{
	struct statsfd_labels l = { .vcpu = vcpu };

	snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "%s", target);
	snprintf(l.vm, sizeof(l.vm), "%s", vm);
	return l;
}

static void test_arguments(void)
{
	char longpath[200];
	struct statsfd_client *cl;
	struct statsfd_labels l;
	int fd = img_vcpu_memfd("args/vcpu-0");

	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	errno = 0;
	tap_ok(!statsfd_client_new(longpath) && errno == ENAMETOOLONG,
	       "new: a path longer than sun_path: NULL, ENAMETOOLONG");
	cl = statsfd_client_new(sock_path);
	l = lab("vcpu", "web", 0);
	snprintf(l.provider, sizeof(l.provider), "Bad");
	tap_ok(statsfd_client_add(cl, fd, &l) == -EINVAL,
	       "add: provider not [a-z][a-z0-9_]*: -EINVAL");
	l = lab("vm", "web", 0);
	tap_ok(statsfd_client_add(cl, fd, &l) == -EINVAL,
	       "add: a vcpu for target vm: -EINVAL");
	l = lab("vcpu", "web", -1);
	tap_ok(statsfd_client_add(cl, fd, &l) == -EINVAL,
	       "add: target vcpu without a vcpu: -EINVAL");
	l = lab("vcpu", "we\"b", 0);
	tap_ok(statsfd_client_add(cl, fd, &l) == -EINVAL,
	       "add: a VM name with a quote: -EINVAL");
	l = lab("vcpu", "web", 0);
	tap_ok(statsfd_client_add(cl, 1000, &l) == -EBADF,
	       "add: a closed fd: -EBADF");
	tap_ok(!statsfd_client_add(cl, fd, &l) && statsfd_client_add(cl, fd, &l) == -EEXIST,
	       "add: the same fd twice: -EEXIST");
	tap_ok(statsfd_client_remove(cl, fd + 100) == -ENOENT,
	       "remove: an fd never added: -ENOENT");
	tap_ok(!statsfd_client_remove(cl, fd) && statsfd_client_remove(cl, fd) == -ENOENT,
	       "remove: twice: 0, then -ENOENT");
	tap_ok(statsfd_client_fd(cl) == -1 && statsfd_client_events(cl) == 0,
	       "no connection before the first dispatch: fd -1, no events");
	statsfd_client_free(cl);
	statsfd_client_free(NULL);
	close(fd);
}

int main(int argc, char **argv)
{
	struct statsfd_client *cls[2];
	struct statsfd_client_status st;
	struct statsfd_labels l;
	int fds[3], pipefd[2], other, extra, t;
	double t0;

	if (argc != 2) {
		fprintf(stderr, "usage: client_test COLLECTOR_BINARY\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
	test_arguments();

	/* The VMM starts first: no collector yet. */
	cl_main = statsfd_client_new(sock_path);
	statsfd_client_set_logger(cl_main, logger, "vmm");
	fds[0] = img_vcpu_memfd("web/vcpu-0");
	fds[1] = img_vcpu_memfd("web/vcpu-1");
	fds[2] = img_vcpu_memfd("web/vcpu-2");
	for (t = 0; t < 3; t++) {
		l = lab("vcpu", "web", t);
		statsfd_client_add(cl_main, fds[t], &l);
	}
	/* A stats fd that hangs up (a pipe whose writer is gone). */
	if (pipe2(pipefd, O_CLOEXEC))
		return 1;
	close(pipefd[1]);
	l = lab("vm", "web", -1);
	statsfd_client_add(cl_main, pipefd[0], &l);
	cls[0] = cl_main;
	run(cls, 1, 1.0, NULL);
	statsfd_client_status(cl_main, &st);
	tap_ok(!st.connected && !st.registered && st.sources == 4,
	       "no collector for 1 s: not connected, nothing registered, still running");
	tap_ok(count("No such file or directory") == 1,
	       "the reason logged once, not at every attempt");
	t = statsfd_client_timeout(cl_main);
	tap_ok(t >= 0 && t <= STATSFD_CLIENT_BACKOFF_MAX_MS,
	       "timeout while disconnected: the next attempt, %d ms", t);

	if (!tap_ok(!start_daemon(argv[1]), "collector started after the VMM"))
		goto out;
	t0 = now_s();
	run(cls, 1, 15, main_registered);
	statsfd_client_status(cl_main, &st);
	tap_ok(st.connected && st.registered == 3 && st.sources == 3 && st.connects == 1,
	       "registered within %.1f s of the collector's start (3 of 3, connection 1)",
	       now_s() - t0);
	tap_ok(count("hung up, not registered again") == 1,
	       "an fd that hung up meanwhile is not registered");
	tap_ok(collector_sources() == 3, "the collector has the 3 sources");
	tap_ok(statsfd_client_timeout(cl_main) == -1 &&
	       statsfd_client_events(cl_main) == POLLIN,
	       "connected and idle: no timeout, POLLIN only");
	/* An fd added while connected: the next dispatch sends it. */
	extra = img_vcpu_memfd("web/vcpu-3");
	l = lab("vcpu", "web", 3);
	statsfd_client_add(cl_main, extra, &l);
	tap_ok(statsfd_client_timeout(cl_main) == 0,
	       "fd added while idle: timeout 0 (a dispatch is due)");
	run(cls, 1, 5, main_registered);
	tap_ok(collector_sources() == 4, "added later: registered at once (4 sources)");
	statsfd_client_remove(cl_main, extra);
	close(extra);
	run(cls, 1, 0.5, NULL);
	tap_ok(collector_sources() == 3, "removed: the collector drops it (3 sources)");

	/* Killed, no fd store: the VMM notices, reconnects, registers again. */
	kill_daemon(SIGKILL);
	run(cls, 1, 0.3, NULL);
	statsfd_client_status(cl_main, &st);
	tap_ok(!st.connected && !st.registered && count("connection closed") == 1,
	       "collector killed: disconnection noticed, the VMM goes on");
	start_daemon(argv[1]);
	t0 = now_s();
	run(cls, 1, 15, main_registered);
	statsfd_client_status(cl_main, &st);
	tap_ok(st.registered == 3 && st.connects == 2,
	       "collector restarted: registered again within %.1f s (connection %lu)",
	       now_s() - t0, st.connects);
	tap_ok(collector_sources() == 3, "the new collector has the 3 sources");

	/* Refused: another VMM claims web's vCPU 0; it retries, never dies. */
	cls[1] = statsfd_client_new(sock_path);
	statsfd_client_set_logger(cls[1], logger, "other");
	other = img_vcpu_memfd("other/vcpu-0");
	l = lab("vcpu", "web", 0);
	statsfd_client_add(cls[1], other, &l);
	run(cls, 2, 1.5, NULL);
	statsfd_client_status(cls[1], &st);
	tap_ok(st.connected && !st.registered && st.refusals >= 2,
	       "refused registration: retried with a backoff (%lu refusals in 1.5 s)",
	       st.refusals);
	tap_ok(count("refused 1 stats fd: sources[0]:") >= 1,
	       "the collector's reason is logged");
	/* The claimant goes away: the retry succeeds. */
	statsfd_client_free(cl_main);
	cl_main = cls[1];
	run(cls + 1, 1, 15, main_registered);
	statsfd_client_status(cls[1], &st);
	tap_ok(st.registered == 1, "once the label is free, the retry registers it");
	tap_ok(collector_sources() == 1, "freeing a client drops its sources at once");

	/* remove: the collector is asked to drop it. */
	statsfd_client_remove(cls[1], other);
	tap_ok(statsfd_client_timeout(cls[1]) == 0,
	       "after remove: timeout 0 (a dispatch is due)");
	run(cls + 1, 1, 0.5, NULL);
	statsfd_client_status(cls[1], &st);
	tap_ok(collector_sources() == 0 && st.sources == 0,
	       "remove: remove-sources sent, the collector drops the source");
	statsfd_client_free(cls[1]);
	close(other);
out:
	kill_daemon(SIGTERM);
	for (t = 0; t < 3; t++)
		close(fds[t]);
	close(pipefd[0]);
	unlink(sock_path);
	rmdir(dir);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
