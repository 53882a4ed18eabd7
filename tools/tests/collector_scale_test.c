// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector at the scale of one big host, on the host with memfd
 * images (--test-accept-memfd):
 *
 *  - the fleet of benchmark B13 (1024 VMs of 8 vCPUs, one connection of
 *    uid 0, statsfd_vm's VM and vCPU schemas: same names, types and sizes)
 *    is accepted under the collector's default limits, and the first
 *    registration it refuses beyond it is a per-uid quota, well past the
 *    fleet: the defaults are sized for 8,192 vCPUs of one VMM user;
 *  - CLIENTS processes of as many uids register SOURCES each (64 x 1024 =
 *    65,536, the default --max-sources, by default), all at once: every
 *    source is registered and is in a scrape, and the registration time
 *    and the collector's CPU for it, scrape times, the collector's RSS and
 *    the time to drop everything when the clients go are reported (no
 *    timed assertion).  Each source holds one of the collector's fds: it
 *    raises its RLIMIT_NOFILE as root, up to fs.nr_open, but without
 *    CAP_SYS_RESOURCE (a container) only up to the hard limit it was given;
 *    then each client registers what fits and the test says so.
 *
 *   collector_scale_test [COLLECTOR [CLIENTS SOURCES]]
 *
 * Without COLLECTOR (make check's 6.1 guest, build/tools/guest-tests:
 * unsanitized, as root with every capability, so the collector's fd
 * table holds them all) it runs statsfd-collector from PATH, the scale
 * part only (the host tests run the fleet), with 64 x 1024 sources under
 * STATSFD_STRESS=1 (CI; 2 minutes under TCG on an idle host, 6 on a
 * loaded one) and 64 x 64 otherwise.  The host tests run both parts
 * with the sanitized collector.
 *
 * SCALE_ONLY=fleet or SCALE_ONLY=scale in the environment runs one part.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static char dir[] = "/tmp/statsfd-scale-test.XXXXXX";
static char sock_path[128], port_path[128];
static pid_t daemon_pid = -1;
static unsigned int http_port;

/* The clients' uids and their group (--allow-gid): no passwd entries. */
#define SCALE_UID_BASE		3000000u
#define SCALE_GID		3000000u
/* A scrape of 65,536 sources renders for seconds in a sanitized build. */
#define SCRAPE_WAIT_MS		300000
#define REPLY_WAIT_MS		300000

#define S_CUM	STATSFD_TYPE_CUMULATIVE
#define S_INST	STATSFD_TYPE_INSTANT
#define S_PEAK	STATSFD_TYPE_PEAK
#define S_NS	STATSFD_UNIT_SECONDS
#define S_LOG	(STATSFD_TYPE_LOG_HIST | STATSFD_UNIT_SECONDS)

/*
 * statsfd_vm's vCPU schema (src/vm/stats.c): the same names, types,
 * units and sizes, then the two stats of its update windows.
 */
static const struct img_stat b13_vcpu[] = {
	{ "exits", S_CUM, 0, 1, 0 },
	{ "io_exits", S_CUM, 0, 1, 0 },
	{ "mmio_exits", S_CUM, 0, 1, 0 },
	{ "hypercall_exits", S_CUM, 0, 1, 0 },
	{ "halt_exits", S_CUM, 0, 1, 0 },
	{ "signal_exits", S_CUM, 0, 1, 0 },
	{ "halt_successful_poll", S_CUM, 0, 1, 0 },
	{ "halt_attempted_poll", S_CUM, 0, 1, 0 },
	{ "halt_poll_invalid", S_CUM, 0, 1, 0 },
	{ "halt_wakeup", S_CUM, 0, 1, 0 },
	{ "halt_poll_success_ns", S_CUM | S_NS, -9, 1, 0 },
	{ "halt_poll_fail_ns", S_CUM | S_NS, -9, 1, 0 },
	{ "halt_wait_ns", S_CUM | S_NS, -9, 1, 0 },
	{ "halt_poll_success_hist", S_LOG, -9, 32, 0 },
	{ "halt_poll_fail_hist", S_LOG, -9, 32, 0 },
	{ "halt_wait_hist", S_LOG, -9, 32, 0 },
	{ "run_exits_hist", STATSFD_TYPE_LINEAR_HIST, 0, 32, 64 },
	{ "blocking", S_INST | STATSFD_UNIT_BOOLEAN, 0, 1, 0 },
	{ "max_run_exits", S_PEAK, 0, 1, 0 },
	{ "max_halt_wait_ns", S_PEAK | S_NS, -9, 1, 0 },
	{ "io_bytes", S_CUM | STATSFD_UNIT_BYTES | STATSFD_BASE_POW2, 0, 1, 0 },
	{ "guest_cycles", S_CUM | STATSFD_UNIT_CYCLES, 0, 1, 0 },
	{ "runs", S_CUM, 0, 1, 0 },
	{ "sample_ns", S_INST | S_NS, -9, 1, 0 },
	{ "generation", S_CUM, 0, 1, 0 },
};

/* statsfd_vm's VM schema: its counters, then aggregates of its vCPUs. */
static const struct img_stat b13_vm[] = {
	{ "vcpus_created", S_CUM, 0, 1, 0 },
	{ "kicks", S_CUM, 0, 1, 0 },
	{ "stats_fds_open", S_INST, 0, 1, 0 },
	{ "exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "exits_min", S_INST | STATSFD_AGG_MINIMUM, 0, 1, 0 },
	{ "exits_max", S_INST | STATSFD_AGG_MAXIMUM, 0, 1, 0 },
	{ "exits_avg", S_INST | STATSFD_AGG_AVERAGE, 0, 1, 0 },
	{ "io_exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "mmio_exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "hypercall_exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "halt_exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "signal_exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "halt_successful_poll_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "halt_attempted_poll_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "halt_poll_invalid_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "halt_wakeup_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "halt_poll_success_ns_sum", S_CUM | S_NS | STATSFD_AGG_SUM, -9, 1, 0 },
	{ "halt_poll_fail_ns_sum", S_CUM | S_NS | STATSFD_AGG_SUM, -9, 1, 0 },
	{ "halt_wait_ns_sum", S_CUM | S_NS | STATSFD_AGG_SUM, -9, 1, 0 },
	{ "halt_wait_ns_min", S_INST | S_NS | STATSFD_AGG_MINIMUM, -9, 1, 0 },
	{ "halt_wait_ns_max", S_INST | S_NS | STATSFD_AGG_MAXIMUM, -9, 1, 0 },
	{ "halt_wait_ns_avg", S_INST | S_NS | STATSFD_AGG_AVERAGE, -9, 1, 0 },
	{ "halt_wait_hist_sum", S_LOG | STATSFD_AGG_SUM, -9, 32, 0 },
	{ "run_exits_hist_sum", STATSFD_TYPE_LINEAR_HIST | STATSFD_AGG_SUM, 0, 32, 64 },
	{ "blocking_sum", S_INST | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "blocking_count_nonzero", S_INST | STATSFD_AGG_COUNT_NONZERO, 0, 1, 0 },
	{ "max_run_exits_max", S_INST | STATSFD_AGG_MAXIMUM, 0, 1, 0 },
	{ "max_halt_wait_ns_max", S_INST | S_NS | STATSFD_AGG_MAXIMUM, -9, 1, 0 },
	{ "io_bytes_sum", S_CUM | STATSFD_UNIT_BYTES | STATSFD_BASE_POW2 |
	  STATSFD_AGG_SUM, 0, 1, 0 },
	{ "guest_cycles_sum", S_CUM | STATSFD_UNIT_CYCLES | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "runs_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "runs_count_nonzero", S_INST | STATSFD_AGG_COUNT_NONZERO, 0, 1, 0 },
	{ "sample_ns", S_INST | S_NS, -9, 1, 0 },
	{ "generation", S_CUM, 0, 1, 0 },
};

/* The scale clients' sources: a small vCPU schema (the count is the test). */
static const struct img_stat small_vcpu[] = {
	{ "exits", S_CUM, 0, 1, 0 },
	{ "halt_wait_ns", S_CUM | S_NS, -9, 1, 0 },
	{ "blocking", S_INST | STATSFD_UNIT_BOOLEAN, 0, 1, 0 },
};

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

static int image_memfd(const char *id, const struct img_stat *st, unsigned int n)
{
	static unsigned char buf[1 << 14];
	size_t len = img_build(buf, sizeof(buf), id, 48, st, n, NULL, 0);

	return len ? img_memfd(buf, len) : -1;
}

/* Sources the reply of an add-sources accepted, or -1 with *@why set. */
static int added(struct json_object *r, const char **why)
{
	struct json_object *v, *e;

	*why = "no reply";
	if (r && json_object_object_get_ex(r, "return", &v) &&
	    json_object_object_get_ex(v, "sources", &v))
		return (int)json_object_array_length(v);
	if (r && json_object_object_get_ex(r, "error", &e) &&
	    json_object_object_get_ex(e, "desc", &v))
		*why = json_object_get_string(v);
	return -1;
}

/*
 * Another open file of @fd's memfd: a source of its own for the
 * collector (kcmp(KCMP_FILE) tells open files apart), sharing the page.
 */
static int reopen(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDWR | O_CLOEXEC);
}

/*
 * Register VM @vm with @nvcpu vCPUs of @vcpu_st (and the VM's own fd of
 * @vm_st, if any) on @s, as a VMM does: one add-sources with every fd.
 * @shared: the vCPUs' fds are open files of one memfd (65,536 memfds
 * would take 256 MiB of a test guest's memory).
 * Return: the reply (NULL if none).
 */
static struct json_object *register_vm(int s, const char *vm,
				       const struct img_stat *vm_st, unsigned int vm_n,
				       const struct img_stat *vcpu_st, unsigned int vcpu_n,
				       unsigned int nvcpu, bool shared)
{
	int fds[STATSFD_MSG_MAX_FDS];
	struct statsfd_buf req = { 0 };
	struct json_object *r;
	unsigned int i, k = 0;
	char id[64];

	statsfd_buf_printf(&req, "{\"execute\":\"add-sources\",\"arguments\":{"
			   "\"provider\":\"statsfd_vm\",\"vm\":\"%s\",\"sources\":[", vm);
	if (vm_st) {
		snprintf(id, sizeof(id), "%s", vm);
		fds[k++] = image_memfd(id, vm_st, vm_n);
		statsfd_buf_printf(&req, "{\"target\":\"vm\"}");
	}
	for (i = 0; i < nvcpu; i++) {
		snprintf(id, sizeof(id), "%s/vcpu-%u", vm, i);
		fds[k] = shared && i ? reopen(fds[k - 1]) : image_memfd(id, vcpu_st, vcpu_n);
		k++;
		statsfd_buf_printf(&req, "%s{\"target\":\"vcpu\",\"vcpu\":%u}",
				   k > 1 ? "," : "", i);
	}
	statsfd_buf_printf(&req, "]}}");
	r = req.oom ? NULL : rpc_json(s, req.data, fds, k);
	statsfd_buf_free(&req);
	for (i = 0; i < k; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

/* Start the collector with the default limits and @extra options. */
static int start_daemon(const char *bin, const char *const *extra)
{
	const char *const argv[] = {
		bin, "--socket", sock_path, "--socket-mode", "0666",
		"--listen", "127.0.0.1:0", "--port-file", port_path,
		"--user", "nobody", "--test-accept-memfd",
		/* Only the reply deadline: a busy collector is not an idle one. */
		"--client-timeout", "300000", NULL,
	};

	daemon_pid = spawn_daemon(argv, extra, port_path, 30, &http_port, NULL, NULL);
	return daemon_pid < 0 ? -1 : 0;
}

/* Lines of @text that start with @prefix. */
static unsigned long count_lines(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	unsigned long k = 0;
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		k += !strncmp(p, prefix, n);
	return k;
}

/* The value of the unlabelled series @name in @text, or -1. */
static long long gauge(const char *text, const char *name)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s ", name);
	p = text ? strstr(text, pat) : NULL;
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/*
 * B13's fleet over one connection of uid 0 under the default limits, then
 * more VMs of its shape until the first refusal.
 */
static void test_fleet(const char *bin)
{
	enum { VMS = 1024, VCPUS = 8, MORE_MAX = 2048 };
	unsigned int vm, total = 0, more = 0;
	const char *why = "";
	char name[32], refusal[512] = "";
	double t0, t;
	int s, n;
	bool ok = true;

	if (!tap_ok(!start_daemon(bin, NULL),
		    "fleet: the collector starts with its default limits"))
		return;
	s = statsfd_msg_connect(sock_path);
	t0 = now_s();
	for (vm = 0; vm < VMS && ok; vm++) {
		struct json_object *r;

		snprintf(name, sizeof(name), "bench-%u", vm);
		r = register_vm(s, name, b13_vm, ARRAY_LEN(b13_vm), b13_vcpu,
				ARRAY_LEN(b13_vcpu), VCPUS, false);
		n = added(r, &why);
		if (n != 1 + VCPUS) {
			ok = false;
			snprintf(refusal, sizeof(refusal), "%s", why);
		} else {
			total += (unsigned int)n;
		}
		json_object_put(r);
	}
	t = now_s() - t0;
	tap_ok(ok && total == VMS * (1 + VCPUS),
	       "fleet: B13's 1024 VMs x 8 vCPUs (%u sources, statsfd_vm's schemas) accepted over one connection under the default limits%s%s",
	       total, ok ? "" : ": ", refusal);
	tap_diag("fleet: registered %u sources in %.2f s", total, t);
	/* Beyond the fleet, VMs of the same shape until the first refusal. */
	for (vm = VMS; ok && vm < VMS + MORE_MAX; vm++) {
		struct json_object *r;

		snprintf(name, sizeof(name), "bench-%u", vm);
		r = register_vm(s, name, b13_vm, ARRAY_LEN(b13_vm), b13_vcpu,
				ARRAY_LEN(b13_vcpu), VCPUS, false);
		n = added(r, &why);
		if (n < 0) {
			snprintf(refusal, sizeof(refusal), "%s", why);
			json_object_put(r);
			break;
		}
		more += (unsigned int)n;
		json_object_put(r);
	}
	tap_ok(ok && *refusal && more >= (VMS * (1 + VCPUS)) / 2 &&
	       (strstr(refusal, "--user-max-exposition") ||
		strstr(refusal, "--user-max-sources")),
	       "fleet: the first refusal beyond it is a per-uid quota, %u sources (%.0f%%) later: %s",
	       more, 100.0 * more / (VMS * (1 + VCPUS)), refusal);
	close(s);
	tap_ok(stop_daemon(&daemon_pid), "fleet: clean exit");
}

/*
 * One scale client: uid SCALE_UID_BASE + @idx; waits for @go to close,
 * registers @nsrc sources in VMs of 128 vCPUs, writes one byte to @res
 * ('1': all accepted), then holds them until @hold closes.
 */
static void scale_client(unsigned int idx, unsigned int nsrc, int go, int res,
			 int hold)
{
	unsigned int done = 0, vm = 0;
	const char *why = "";
	char name[48], c;
	int s;

	if (setgroups(0, NULL) || setgid(SCALE_GID) ||
	    setuid(SCALE_UID_BASE + idx)) {
		perror("scale client: setuid");
		_exit(1);
	}
	if (read(go, &c, 1) < 0)
		_exit(1);
	s = statsfd_msg_connect(sock_path);
	while (s >= 0 && done < nsrc) {
		unsigned int k = nsrc - done < 128 ? nsrc - done : 128;
		struct json_object *r;
		int n;

		snprintf(name, sizeof(name), "c%u-vm%u", idx, vm++);
		r = register_vm(s, name, NULL, 0, small_vcpu, ARRAY_LEN(small_vcpu), k,
				true);
		n = added(r, &why);
		if (n != (int)k)
			fprintf(stderr, "scale client %u: %s: %s\n", idx, name, why);
		json_object_put(r);
		if (n != (int)k)
			break;
		done += k;
	}
	c = s >= 0 && done == nsrc ? '1' : '0';
	if (write(res, &c, 1) != 1)
		_exit(1);
	/* Hold the sources (the connection) until told to go. */
	while (read(hold, &c, 1) > 0)
		;
	_exit(0);
}

/* A series of every scale client's source (their VMs are "cN-vmK"). */
#define EXITS_SERIES \
	"statsfd_exits_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"c"

static void test_scale(const char *bin, unsigned int nclients, unsigned int per)
{
	char gid[16], *m = NULL;
	const char *extra[] = { "--allow-gid", gid, NULL };
	unsigned int i, nok = 0, total = nclients * per;
	int go[2], res[2], hold[2];
	unsigned long up, series;
	double t0, t_reg, t_scrape[2], t_drop, cpu0, cpu_reg, cpu_drop;
	long rss_reg, rss_scrape, hwm;
	pid_t *kids;
	char c;

	snprintf(gid, sizeof(gid), "%u", SCALE_GID);
	kids = calloc(nclients, sizeof(*kids));
	if (!kids || pipe2(go, O_CLOEXEC) || pipe2(res, O_CLOEXEC) ||
	    pipe2(hold, O_CLOEXEC)) {
		tap_ok(0, "scale: setup");
		return;
	}
	if (!tap_ok(!start_daemon(bin, extra),
		    "scale: the collector starts with its default limits (--allow-gid %s)", gid))
		return;
	for (i = 0; i < nclients; i++) {
		kids[i] = fork();
		if (!kids[i]) {
			close(go[1]);
			close(res[0]);
			close(hold[1]);
			scale_client(i, per, go[0], res[1], hold[0]);
		}
	}
	close(go[0]);
	close(res[1]);
	close(hold[0]);
	/* Every client at once. */
	cpu0 = proc_cpu(daemon_pid);
	t0 = now_s();
	close(go[1]);
	for (i = 0; i < nclients && read(res[0], &c, 1) == 1; i++)
		nok += c == '1';
	t_reg = now_s() - t0;
	cpu_reg = proc_cpu(daemon_pid) - cpu0;
	rss_reg = proc_status(daemon_pid, "VmRSS");
	tap_ok(nok == nclients,
	       "scale: %u clients of %u uids registered %u sources each (%u in all)",
	       nok, nclients, per, total);
	tap_diag("scale: registration of %u sources by %u clients: %.2f s, the collector's CPU %.2f s (%.1f us a source); collector RSS %ld KiB",
		 total, nclients, t_reg, cpu_reg, cpu_reg * 1e6 / total, rss_reg);
	for (i = 0; i < 2; i++) {
		free(m);
		m = test_http_get_wait(http_port, "/metrics", &t_scrape[i], SCRAPE_WAIT_MS);
	}
	rss_scrape = proc_status(daemon_pid, "VmRSS");
	hwm = proc_status(daemon_pid, "VmHWM");
	up = m ? count_lines(m, "statsfd_collector_source_up{") : 0;
	series = m ? count_lines(m, EXITS_SERIES) : 0;
	tap_ok(m && gauge(m, "statsfd_collector_sources") == (long long)total &&
	       up == total && series == total,
	       "scale: the scrape has every source: statsfd_collector_sources %lld, %lu up series, %lu exits series (%u expected)",
	       gauge(m, "statsfd_collector_sources"), up, series, total);
	tap_diag("scale: scrape of %u sources: %zu bytes, %.2f s, then %.2f s; collector RSS %ld KiB after, peak %ld KiB",
		 total, m ? strlen(m) : 0, t_scrape[0], t_scrape[1], rss_scrape, hwm);
	free(m);
	m = NULL;
	/* The clients go: every source is dropped with its connection. */
	cpu0 = proc_cpu(daemon_pid);
	t0 = now_s();
	close(hold[1]);
	for (i = 0; i < nclients; i++)
		waitpid(kids[i], NULL, 0);
	do {
		free(m);
		m = test_http_get_wait(http_port, "/metrics", NULL, SCRAPE_WAIT_MS);
		if (m && !gauge(m, "statsfd_collector_sources"))
			break;
		msleep(100);
	} while (now_s() - t0 < 300);
	t_drop = now_s() - t0;
	cpu_drop = proc_cpu(daemon_pid) - cpu0;
	tap_ok(m && !gauge(m, "statsfd_collector_sources") &&
	       !gauge(m, "statsfd_collector_clients"),
	       "scale: every source dropped when the %u clients went", nclients);
	tap_diag("scale: %u sources dropped in %.2f s (the collector's CPU %.2f s, scrapes included)",
		 total, t_drop, cpu_drop);
	free(m);
	close(res[0]);
	free(kids);
	tap_ok(stop_daemon(&daemon_pid), "scale: clean exit");
}

/*
 * Sources per client that the collector's fd table can hold: @per, or
 * fewer when the hard RLIMIT_NOFILE it inherits cannot be raised to what
 * the default --max-sources asks for (CAP_SYS_RESOURCE).
 */
static unsigned int fitting(unsigned int nclients, unsigned int per)
{
	/* raise_nofile(): --max-sources + --max-clients + 256 */
	struct rlimit want = { 65536 + 1024 + 256, 65536 + 1024 + 256 }, rl;
	unsigned long room;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return per;
	if (rl.rlim_max >= want.rlim_max || !setrlimit(RLIMIT_NOFILE, &want)) {
		setrlimit(RLIMIT_NOFILE, &rl);
		return per;
	}
	/* Its sockets, epoll, timers, the clients' connections: 1024 spare. */
	room = rl.rlim_max > 1024 + nclients ? (rl.rlim_max - 1024 - nclients) / nclients : 0;
	room &= ~7ul;
	return room < per ? (unsigned int)room : per;
}

int main(int argc, char **argv)
{
	const char *bin = argc >= 2 ? argv[1] : "statsfd-collector";
	const char *only = getenv("SCALE_ONLY"), *stress = getenv("STATSFD_STRESS");
	unsigned int nclients = 64, per = 1024, fit;

	rpc_wait_ms = REPLY_WAIT_MS;
	if (argc < 2) {
		only = "scale";
		if (!stress || strcmp(stress, "1"))
			per = 64;
	}
	if (argc >= 4) {
		nclients = (unsigned int)atoi(argv[2]);
		per = (unsigned int)atoi(argv[3]);
	}
	signal(SIGPIPE, SIG_IGN);
	if (geteuid() != 0) {
		tap_skip("statsfd-collector scale tests", "need root (clients of many uids)");
		return tap_done();
	}
	if (spawn_dir(dir, sock_path, sizeof(sock_path), port_path, sizeof(port_path)))
		return 1;
	if (!only || !strcmp(only, "fleet"))
		test_fleet(bin);
	fit = fitting(nclients, per);
	if (fit < per)
		tap_diag("scale: RLIMIT_NOFILE's hard limit cannot be raised here (no CAP_SYS_RESOURCE): %u clients x %u sources instead of %u x %u",
			 nclients, fit, nclients, per);
	if (!only || !strcmp(only, "scale"))
		test_scale(bin, nclients, fit);
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	unlink(sock_path);
	unlink(port_path);
	rmdir(dir);
	return tap_done();
}
