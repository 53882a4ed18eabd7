// SPDX-License-Identifier: GPL-2.0
/*
 * host_net_race_test - a network interface's stats fds against the
 * interface's deletion (Documentation/statsfd-host-api.rst, 2 and 3.3).
 *
 * Each round, in a fresh network namespace: a dummy interface, 64 stats
 * fds of it and one more kept to the end; one thread closes the 64, one
 * reads and polls them all the while, one opens, reads, polls and closes
 * new fds of the interface all the while, and the main thread deletes the
 * interface (RTM_DELLINK, by interface group) after a random 0-400 us.
 * NETDEV_UNREGISTER comes only after RCU grace periods, milliseconds into
 * the deletion in a TCG guest (a second and more on the loaded debug
 * kernel), so the closes start 0-400 us into the deletion and spread, at
 * random gaps, over about as long as a deletion has taken so far.  A last
 * close racing NETDEV_UNREGISTER once let the notifier take a reference
 * on a source whose count had reached 0 (a refcount WARN, so a panic
 * under panic_on_warn) and then use it after it was freed; the more fds
 * of the device, the longer the notifier held its lock and the wider that
 * window.  After each round the kept fd must poll POLLHUP and read, and
 * the interface's index must be ENODEV.
 *
 * Twice: as root in a new network namespace, and as nobody in a new user
 * and network namespace (an unprivileged user owns both: what a container
 * does).  The second needs a kernel with user namespaces; without them it
 * is skipped (tools/testing/skips.txt says where).  Rounds: 300, 3000 with
 * STATSFD_STRESS=1, each run bounded to 20 s (240 s with it, as CI runs).
 * Against the unfixed notifier the 6.1 guest panicked at about 14 s in
 * most runs, so a plain `make check` (two variants there) still has a
 * fair chance of catching a regression; CI's 240 s is the proof.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <time.h>

#include "host_util.h"
#include "kselftest_harness.h"

#define NDEVS		1
#define FDS_PER_DEV	64
#define NFDS		(NDEVS * FDS_PER_DEV)
/* An interface group no other test uses. */
#define GROUP		4717

struct race {
	int ifindex[NDEVS];
	int fds[NFDS];
	unsigned int delay_us;		/* first close, after the deletion began */
	unsigned int gap_us;		/* at most, between two closes */
	unsigned int seed;
	double del_start;
	atomic_int started;		/* del_start is set */
	atomic_int stop;
	/* What the threads saw go wrong, for the main thread's report. */
	atomic_int bad_open;	/* an error other than ENODEV */
	atomic_int last_err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Closes the fds from delay_us after the deletion began, at random gaps,
 * reading each first.
 */
static void *closer(void *arg)
{
	struct race *r = arg;
	double wait;
	int i;

	while (!atomic_load(&r->started))
		usleep(10);
	wait = r->del_start + r->delay_us / 1e6 - now_s();
	if (wait > 0)
		usleep(wait * 1e6);
	for (i = 0; i < NFDS; i++) {
		host_read_ok(r->fds[i]);
		close(r->fds[i]);
		usleep(rand_r(&r->seed) % (r->gap_us + 1));
	}
	return NULL;
}

/*
 * Reads and polls the fds until told to stop.  Once closed their numbers
 * may name other files (the opener's): any result is fine, only the
 * kernel's behaviour meanwhile is under test.
 */
static void *reader(void *arg)
{
	struct race *r = arg;
	int i;

	while (!atomic_load(&r->stop))
		for (i = 0; i < NFDS; i++) {
			host_read_ok(r->fds[i]);
			host_poll(r->fds[i], 0);
		}
	return NULL;
}

/* New fds of the interface: each made, read, polled and closed. */
static void *opener(void *arg)
{
	struct race *r = arg;
	unsigned int i = 0;
	int fd;

	while (!atomic_load(&r->stop)) {
		fd = host_net_fd(r->ifindex[i++ % NDEVS]);
		if (fd < 0) {
			if (fd != -ENODEV) {
				atomic_fetch_add(&r->bad_open, 1);
				atomic_store(&r->last_err, fd);
			}
			continue;
		}
		if (host_read_ok(fd)) {
			atomic_fetch_add(&r->bad_open, 1);
			atomic_store(&r->last_err, -EIO);
		}
		host_poll(fd, 0);
		close(fd);
	}
	return NULL;
}

/* A dummy @name in GROUP. */
static int link_add_grouped(const char *name)
{
	struct host_nlreq r;
	struct rtattr *li;
	__u32 group = GROUP;

	host_nl_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	host_nl_add(&r, IFLA_IFNAME, name, strlen(name) + 1);
	host_nl_add(&r, IFLA_GROUP, &group, sizeof(group));
	li = host_nl_add(&r, IFLA_LINKINFO, NULL, 0);
	host_nl_add(&r, IFLA_INFO_KIND, "dummy", sizeof("dummy"));
	host_nl_end(&r, li);
	return host_nl_talk(&r.n, NULL, 0);
}

/* Every interface of GROUP, in one RTM_DELLINK. */
static int group_del(void)
{
	struct host_nlreq r;
	__u32 group = GROUP;

	host_nl_init(&r, RTM_DELLINK, 0, 0);
	host_nl_add(&r, IFLA_GROUP, &group, sizeof(group));
	return host_nl_talk(&r.n, NULL, 0);
}

/*
 * The rounds, in the caller's (fresh) network namespace.  Returns the
 * number of rounds run, or -(round + 1) after logging what failed.
 */
static int race_rounds(struct __test_metadata *_metadata)
{
	int rounds = host_stress() ? 3000 : 300;
	double deadline = now_s() + (host_stress() ? 240 : 20);
	unsigned int seed = getpid(), del_us = 0;
	pthread_t tc, tr, to;
	struct race r;
	/* Set in full before use; GCC 12 cannot always tell. */
	int keep[NDEVS] = { [0 ... NDEVS - 1] = -1 };
	int n, i, d, ret, ev;
	char name[IF_NAMESIZE];
	double t;

	for (n = 0; n < rounds && now_s() < deadline; n++) {
		memset(&r, 0, sizeof(r));
		for (d = 0; d < NDEVS; d++) {
			snprintf(name, sizeof(name), "sfdrace%d", d);
			ret = link_add_grouped(name);
			if (ret) {
				TH_LOG("round %d: adding %s: %s", n, name,
				       strerror(-ret));
				return -(n + 1);
			}
			r.ifindex[d] = if_nametoindex(name);
			if (!r.ifindex[d]) {
				TH_LOG("round %d: no index for %s", n, name);
				return -(n + 1);
			}
			for (i = d * FDS_PER_DEV; i < (d + 1) * FDS_PER_DEV; i++) {
				r.fds[i] = host_net_fd(r.ifindex[d]);
				if (r.fds[i] < 0) {
					TH_LOG("round %d: stats fd %d: %s", n,
					       i, strerror(-r.fds[i]));
					return -(n + 1);
				}
			}
			keep[d] = host_net_fd(r.ifindex[d]);
			if (keep[d] < 0) {
				TH_LOG("round %d: kept stats fd: %s", n,
				       strerror(-keep[d]));
				return -(n + 1);
			}
		}
		/*
		 * The closes start 0-400 us into the deletion and spread,
		 * on average, over as long as a deletion has taken so far.
		 */
		r.delay_us = rand_r(&seed) % 401;
		r.gap_us = 2 * del_us / NFDS;
		r.seed = rand_r(&seed);
		if (pthread_create(&tr, NULL, reader, &r) ||
		    pthread_create(&to, NULL, opener, &r) ||
		    pthread_create(&tc, NULL, closer, &r)) {
			TH_LOG("round %d: pthread_create failed", n);
			return -(n + 1);
		}
		usleep(rand_r(&seed) % 401);
		t = now_s();
		r.del_start = t;
		atomic_store(&r.started, 1);
		ret = group_del();
		t = (now_s() - t) * 1e6;
		/* Running means, so one slow deletion does not dominate. */
		del_us = del_us ? (del_us * 7 + (unsigned int)t) / 8 :
				  (unsigned int)t;
		pthread_join(tc, NULL);
		atomic_store(&r.stop, 1);
		pthread_join(tr, NULL);
		pthread_join(to, NULL);
		if (ret) {
			TH_LOG("round %d: deleting group %d: %s", n, GROUP,
			       strerror(-ret));
			return -(n + 1);
		}
		if (r.bad_open) {
			TH_LOG("round %d: %d new fds failed, last with %s", n,
			       r.bad_open, strerror(-r.last_err));
			return -(n + 1);
		}
		for (d = 0; d < NDEVS; d++) {
			/* Kept fds: hung up, still reading their last values. */
			ev = host_wait_hup(keep[d], 30);
			if (ev < 0 || !(ev & POLLHUP) || host_read_ok(keep[d])) {
				TH_LOG("round %d: kept fd %d polls %#x after the deletion",
				       n, d, ev);
				return -(n + 1);
			}
			close(keep[d]);
			ret = host_net_fd(r.ifindex[d]);
			if (ret != -ENODEV) {
				TH_LOG("round %d: a deleted index gives %d", n,
				       ret);
				if (ret >= 0)
					close(ret);
				return -(n + 1);
			}
		}
	}
	TH_LOG("%d rounds; a deletion took %u us on average", n, del_us);
	return n;
}

FIXTURE(race) {};
FIXTURE_SETUP(race) {}
FIXTURE_TEARDOWN(race) {}

/* Bounded by race_rounds()'s deadline; the harness's 30 s is too short. */
TEST_F_TIMEOUT(race, root_netns_delete_races_close_read_poll_open, 300)
{
	int n;

	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	n = race_rounds(_metadata);
	ASSERT_LT(0, n);
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * The same as nobody, root only of a user namespace of its own, which
 * owns the network namespace: no privilege on the machine at all.
 */
TEST_F_TIMEOUT(race, userns_delete_races_close_read_poll_open, 300)
{
	int n;

	/* The harness runs each test in a process of its own: drop root. */
	ASSERT_EQ(0, setgroups(0, NULL));
	ASSERT_EQ(0, setgid(65534));
	ASSERT_EQ(0, setuid(65534));
	/* Dumpable again, or /proc/self stays root's and the maps EACCES. */
	ASSERT_EQ(0, prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET)) {
		if (errno == EINVAL || errno == EPERM || errno == ENOSPC)
			SKIP(return, "no unprivileged user namespaces here (%s)",
			     strerror(errno));
		ASSERT_EQ(0, errno);
	}
	ASSERT_EQ(0, write_file("/proc/self/setgroups", "deny"));
	ASSERT_EQ(0, write_file("/proc/self/uid_map", "0 65534 1"));
	ASSERT_EQ(0, write_file("/proc/self/gid_map", "0 65534 1"));
	n = race_rounds(_metadata);
	ASSERT_LT(0, n);
}

TEST_HARNESS_MAIN
