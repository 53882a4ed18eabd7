// SPDX-License-Identifier: GPL-2.0
/*
 * The collector's per-operation work does not grow with what a client
 * controls: the clients' deadlines (a heap), clients by id (the fd store's
 * restore) and sources by id and by vm label (remove-sources) are looked
 * up through indexes.  The work is counted (collector.steps: heap levels
 * and hash chain items visited), never timed: every bound below would be
 * broken by a walk of the clients or of a client's sources.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "image.h"
#include "tap.h"

/* Connections, and sources of one client: each far above the bounds. */
#define NCLIENTS	256
#define NSOURCES	200

static struct collector col = {
	.max_sources = 1000, .client_max_sources = 1000, .max_mapped = 0,
	.client_max_bytes = 64 << 20, .max_bytes = 64 << 20, .drop_after = 10,
	.accept_memfd = true, .client_timeout_ms = 3600000,
	.reply_max = 1 << 20, .policy = { .max_clients = NCLIENTS + 1 },
};

static char sock_path[64];

static int listen_socket(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(fd, NCLIENTS + 8))
		return -1;
	return fd;
}

static int connect_socket(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Smallest k with 2^k >= n: the height of a heap of n. */
static unsigned int log2_up(unsigned int n)
{
	unsigned int k = 0;

	while ((1u << k) < n)
		k++;
	return k;
}

/*
 * One client connects with a short timeout, NCLIENTS - 1 with an hour:
 * the loop's look at the next deadline visits no client, and a pass
 * costs a heap's height per client it drops (none while none is due),
 * never a walk of the clients.
 */
static void test_deadlines(int lfd, int *peers)
{
	unsigned int i, before, bound = 2 * log2_up(NCLIENTS) + 2;
	uint64_t steps, then, first;
	int t;

	col.client_timeout_ms = 1000;
	peers[0] = connect_socket();
	accept_clients(&col, lfd);
	first = col.clients ? col.clients->id : 0;
	col.client_timeout_ms = 3600000;
	for (i = 1; i < NCLIENTS; i++)
		peers[i] = connect_socket();
	accept_clients(&col, lfd);
	tap_ok(col.nclients == NCLIENTS && col.ndeadlines == NCLIENTS,
	       "%u clients connected, each with an idle deadline (%u)",
	       col.nclients, col.ndeadlines);
	steps = col.steps;
	t = next_deadline_ms(&col);
	steps = col.steps - steps;
	tap_ok(t >= 0 && t <= 1000 && !steps,
	       "the next deadline is the earliest client's (%d ms), found without a step", t);
	before = col.nclients;
	steps = col.steps;
	check_deadlines(&col);
	steps = col.steps - steps;
	tap_ok(col.nclients + 1 >= before &&
	       steps <= (before - col.nclients) * bound,
	       "a pass visits a heap's height per client it drops (%u dropped, %" PRIu64 " steps)",
	       before - col.nclients, steps);
	/* Wait for the first to be due: an event, not a duration. */
	then = now_ms() + 60000;
	while (next_deadline_ms(&col) > 0 && now_ms() < then) {
		struct timespec ts = { 0, 10 * 1000000 };

		nanosleep(&ts, NULL);
	}
	before = col.nclients;
	steps = col.steps;
	check_deadlines(&col);
	steps = col.steps - steps;
	tap_ok(col.nclients == NCLIENTS - 1 && !client_find(&col, first) &&
	       steps <= (before - col.nclients) * bound,
	       "the expired client alone is dropped, %" PRIu64 " steps (bound %u, %u clients)",
	       steps, bound, NCLIENTS);
	close(peers[0]);
	peers[0] = -1;
}

/* The restore finds each stored connection's client by id: O(1) each. */
static void test_client_ids(void)
{
	struct client *cl;
	uint64_t steps = col.steps, worst = 0;
	unsigned int found = 0;

	for (cl = col.clients; cl; cl = cl->next) {
		uint64_t before = col.steps;

		found += client_find(&col, cl->id) == cl;
		if (col.steps - before > worst)
			worst = col.steps - before;
	}
	steps = col.steps - steps;
	tap_ok(found == col.nclients && worst <= 16,
	       "all %u clients found by id, at most %" PRIu64 " steps each (%" PRIu64 " in all)",
	       found, worst, steps);
	tap_ok(!client_find(&col, 1u << 30), "an unknown id: none");
}

static int add(struct client *cl, const char *vm, int vcpu)
{
	static unsigned char buf[1 << 14];
	struct statsfd_labels l = { .vcpu = vcpu };
	struct admit_info info;
	char why[256];
	int fd = img_memfd(buf, img_build(buf, sizeof(buf), "vm-1/vcpu-0", 48,
					  img_vcpu_stats, img_vcpu_nstats,
					  NULL, 0));

	snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "vcpu");
	snprintf(l.vm, sizeof(l.vm), "%s", vm);
	if (fd < 0 || admit_fd(fd, true, &info, why, sizeof(why))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return add_source(&col, cl, fd, &info, &l, why, sizeof(why), NULL);
}

/* remove-sources, through handle_request(); Return: "removed", or -1. */
static int removed(struct client *cl, const char *args)
{
	char req[256];
	struct json_object *r, *ret, *n;
	int v = -1;

	snprintf(req, sizeof(req), "{\"execute\": \"remove-sources\", \"arguments\": %s}",
		 args);
	r = handle_request(&col, cl, req, strlen(req), NULL, 0);
	if (r && json_object_object_get_ex(r, "return", &ret) &&
	    json_object_object_get_ex(ret, "removed", &n))
		v = json_object_get_int(n);
	json_object_put(r);
	reap_sources(&col);
	return v;
}

/*
 * One client with NSOURCES sources of vm "big" and one of vm "small":
 * removing one by id, or the one of "small" by vm, visits a few index
 * entries, not the client's NSOURCES sources.
 */
static void test_remove(void)
{
	struct client *cl = col.clients;
	unsigned int i, ok = 0;
	uint64_t steps, id;
	char args[64];
	int n;

	for (i = 0; i < NSOURCES; i++)
		ok += !add(cl, "big", (int)i);
	ok += !add(cl, "small", 0);
	tap_ok(ok == NSOURCES + 1 && cl->nsources == NSOURCES + 1,
	       "one client with %u sources", cl->nsources);
	id = cl->sources->next_in_client->id;
	snprintf(args, sizeof(args), "{\"sources\": [%" PRIu64 "]}", id);
	steps = col.steps;
	n = removed(cl, args);
	steps = col.steps - steps;
	tap_ok(n == 1 && steps <= 8 && cl->nsources == NSOURCES,
	       "remove-sources by id: %d removed in %" PRIu64 " steps (bound 8, %u sources)",
	       n, steps, NSOURCES + 1);
	steps = col.steps;
	n = removed(cl, "{\"vm\": \"small\"}");
	steps = col.steps - steps;
	tap_ok(n == 1 && steps <= 2 && cl->nsources == NSOURCES - 1,
	       "remove-sources by vm: the vm's %d source in %" PRIu64 " steps (bound 2)",
	       n, steps);
	steps = col.steps;
	n = removed(cl, "{\"sources\": [999999, 0, -4]}");
	steps = col.steps - steps;
	tap_ok(n == 0 && steps <= 8,
	       "ids of no source: %d removed, %" PRIu64 " steps", n, steps);
	tap_ok(removed(cl, "{\"vm\": \"big\"}") == NSOURCES - 1 && !cl->nsources,
	       "remove-sources by vm: all %u of vm big", NSOURCES - 1);
}

int main(void)
{
	static int peers[NCLIENTS];
	char dir[] = "/tmp/statsfd-index-test.XXXXXX";
	unsigned int i;
	int lfd;

	if (!mkdtemp(dir))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
	col.policy.allow_uid[col.policy.nallow_uid++] = getuid();
	col.epfd = epoll_create1(EPOLL_CLOEXEC);
	lfd = listen_socket();
	if (col.epfd < 0 || lfd < 0) {
		tap_ok(0, "set-up: %s", strerror(errno));
		return tap_done();
	}
	test_deadlines(lfd, peers);
	test_client_ids();
	test_remove();
	while (col.clients)
		drop_client(&col, col.clients, "test over");
	reap_sources(&col);
	tap_ok(!col.ndeadlines && !col.clients_by_id.n,
	       "every client gone: the heap and the id index are empty");
	for (i = 0; i < NCLIENTS; i++)
		if (peers[i] >= 0)
			close(peers[i]);
	close(lfd);
	unlink(sock_path);
	rmdir(dir);
	return tap_done();
}
