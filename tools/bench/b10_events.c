// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b10": how soon a poller learns of a stats fd's
 * events.
 *
 *   - create: a VM's stats fd polls POLLPRI once a vCPU was added to the
 *     VM.  The time from the STATSFD_VM_CREATE_VCPU call to the poller's
 *     wake-up; after each event the poller reads the VM fd's header, which
 *     consumes it.  VMs of B10_VCPUS_PER_VM vCPUs, as many as the events.
 *   - hangup: a VM's stats fd polls POLLHUP once the VMM has closed the VM
 *     fd and every vCPU fd of it.  The time from the first of those closes
 *     (the vCPU fds, then the VM fd) to the poller's wake-up; each event is
 *     a new VM of B10_HUP_VCPUS vCPUs, whose stats fd the poller watches.
 *
 * A poller thread blocks in poll() or, in a second series, in
 * epoll_wait() (level-triggered), on the VM's stats fd; the main thread
 * starts the event only once the poller sleeps (its task state in /proc is
 * S), and both take CLOCK_MONOTONIC timestamps.  The guest has one CPU:
 * a latency includes the switch from the thread that caused the event to
 * the poller, whenever the scheduler makes it.  Median, p99 and max over
 * every event of a series, and the revents each wake-up saw.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

#define B10_VCPUS_PER_VM	200
#define B10_HUP_VCPUS		2
#define B10_MAX_EVENTS		10000

enum b10_kind { B10_CREATE, B10_HANGUP };

/**
 * struct b10_poller - the poller thread and what it shares with main
 * @fd: the stats fd to wait on, set by main before each event
 * @epoll: wait in epoll_wait() rather than poll()
 * @kind: what it waits for (POLLPRI, or POLLHUP)
 * @tid: the thread's id, for its state in /proc
 * @go: main -> poller: @fd is set, start waiting
 * @ready: poller -> main: about to block
 * @done: poller -> main: woke up, @t_wake and @revents set
 * @t_wake: CLOCK_MONOTONIC ns of the wake-up
 * @revents: what poll() or epoll_wait() returned
 * @stop: leave the thread
 */
struct b10_poller {
	int fd;
	bool epoll;
	enum b10_kind kind;
	pid_t tid;
	sem_t go, ready, done;
	double t_wake;
	unsigned int revents;
	bool stop;
};

static void *b10_poll_thread(void *arg)
{
	struct b10_poller *p = arg;
	struct statsfd_header h;
	int ep = -1;

	p->tid = syscall(SYS_gettid);
	if (p->epoll) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0)
			die("epoll_create1");
	}
	for (;;) {
		while (sem_wait(&p->go))
			;
		if (p->stop)
			break;
		if (p->epoll) {
			struct epoll_event ev = {
				.events = p->kind == B10_CREATE ? EPOLLPRI : 0,
			};
			int r;

			if (epoll_ctl(ep, EPOLL_CTL_ADD, p->fd, &ev))
				die("EPOLL_CTL_ADD");
			sem_post(&p->ready);
			do
				r = epoll_wait(ep, &ev, 1, -1);
			while (r < 0 && errno == EINTR);
			p->t_wake = now_ns();
			if (r != 1)
				die("epoll_wait");
			p->revents = ev.events;
			if (epoll_ctl(ep, EPOLL_CTL_DEL, p->fd, NULL))
				die("EPOLL_CTL_DEL");
		} else {
			struct pollfd pfd = {
				.fd = p->fd,
				.events = p->kind == B10_CREATE ? POLLPRI : 0,
			};
			int r;

			sem_post(&p->ready);
			do
				r = poll(&pfd, 1, -1);
			while (r < 0 && errno == EINTR);
			p->t_wake = now_ns();
			if (r != 1)
				die("poll");
			p->revents = pfd.revents;
		}
		/* Reading the header consumes the children event. */
		if (p->kind == B10_CREATE &&
		    pread(p->fd, &h, sizeof(h), 0) != sizeof(h))
			die("pread header");
		sem_post(&p->done);
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

/* Is thread @tid asleep (state S)? */
static bool b10_sleeping(pid_t tid)
{
	char path[64], st[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s", path);
	n = read(fd, st, sizeof(st) - 1);
	close(fd);
	if (n <= 0)
		die("read %s", path);
	st[n] = 0;
	rp = strrchr(st, ')');
	return rp && rp[1] == ' ' && rp[2] == 'S';
}

/* Hand @fd to the poller and return once it sleeps on it. */
static void b10_arm(struct b10_poller *p, int fd)
{
	p->fd = fd;
	sem_post(&p->go);
	while (sem_wait(&p->ready))
		;
	while (!b10_sleeping(p->tid))
		sched_yield();
}

static void b10_wait(struct b10_poller *p)
{
	while (sem_wait(&p->done))
		;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @q quantile of @n samples (sorted in place), between ranks. */
static double b10_quantile(double *v, int n, double q)
{
	double pos = q * (n - 1);
	int lo = (int)pos;

	qsort(v, n, sizeof(*v), cmp_d);
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

static void b10_stats(const char *key, double *v, int n, bool samples)
{
	int i;

	jopen(key, '{');
	jnum("median_ns", b10_quantile(v, n, 0.5));
	jnum("p90_ns", b10_quantile(v, n, 0.9));
	jnum("p99_ns", b10_quantile(v, n, 0.99));
	jnum("min_ns", v[0]);
	jnum("max_ns", v[n - 1]);
	if (samples) {
		/* Sorted, to the 10 ns: for the report's distribution plot. */
		jopen("sorted_samples", '[');
		for (i = 0; i < n; i++)
			jnum(NULL, (double)(int64_t)(v[i] / 10) * 10);
		jclose(']');
	}
	jclose('}');
}

static double lat[B10_MAX_EVENTS], lat2[B10_MAX_EVENTS], op[B10_MAX_EVENTS];

/* One series of @n events of @kind, the poller in poll() or epoll_wait(). */
static void b10_series(int dev, enum b10_kind kind, bool epoll, int n)
{
	struct b10_poller p;
	pthread_t th;
	int e, i, wrong = 0, before_return = 0;
	int vm = -1, sfd = -1, vcpus[B10_HUP_VCPUS], next_id = 0;
	int *created = NULL, ncreated = 0;

	memset(&p, 0, sizeof(p));
	p.epoll = epoll;
	p.kind = kind;
	sem_init(&p.go, 0, 0);
	sem_init(&p.ready, 0, 0);
	sem_init(&p.done, 0, 0);
	if (pthread_create(&th, NULL, b10_poll_thread, &p))
		die("pthread_create");
	if (kind == B10_CREATE) {
		created = calloc(B10_VCPUS_PER_VM, sizeof(*created));
		if (!created)
			die("calloc");
	}
	fprintf(stderr, "b10: %d %s events, %s\n", n,
		kind == B10_CREATE ? "vCPU creation" : "VM hangup",
		epoll ? "epoll_wait" : "poll");

	for (e = 0; e < n; e++) {
		double t0, t1, t2;

		if (kind == B10_CREATE) {
			if (vm < 0 || next_id == B10_VCPUS_PER_VM) {
				/* A new VM: the old one and its vCPUs go. */
				for (i = 0; i < ncreated; i++)
					close(created[i]);
				if (sfd >= 0)
					close(sfd);
				if (vm >= 0)
					close(vm);
				vm = vm_create(dev);
				sfd = stats_fd(vm);
				next_id = ncreated = 0;
			}
			b10_arm(&p, sfd);
			t0 = now_ns();
			created[ncreated++] = vcpu_create(vm, next_id++);
			t1 = now_ns();
			b10_wait(&p);
			wrong += (p.revents & (POLLPRI | POLLHUP)) != POLLPRI;
			lat[e] = p.t_wake - t0;
			lat2[e] = p.t_wake - t1;
			op[e] = t1 - t0;
		} else {
			vm = vm_create(dev);
			for (i = 0; i < B10_HUP_VCPUS; i++)
				vcpus[i] = vcpu_create(vm, i);
			sfd = stats_fd(vm);
			b10_arm(&p, sfd);
			t0 = now_ns();
			for (i = 0; i < B10_HUP_VCPUS; i++)
				close(vcpus[i]);
			t1 = now_ns();
			close(vm);
			t2 = now_ns();
			b10_wait(&p);
			wrong += !(p.revents & POLLHUP);
			lat[e] = p.t_wake - t0;
			/* From the close that hangs up: the VM fd's. */
			lat2[e] = p.t_wake - t1;
			op[e] = t2 - t0;
			t1 = t2;
			close(sfd);
			sfd = vm = -1;
		}
		before_return += p.t_wake < t1;
	}
	if (kind == B10_CREATE) {
		for (i = 0; i < ncreated; i++)
			close(created[i]);
		close(sfd);
		close(vm);
		free(created);
	}
	p.stop = true;
	sem_post(&p.go);
	pthread_join(th, NULL);

	jopen(NULL, '{');
	jstr("event", kind == B10_CREATE ? "vcpu_create" : "vm_hangup");
	jstr("waiter", epoll ? "epoll_wait" : "poll");
	jnum("events", n);
	jnum("wrong_revents", wrong);
	jnum("woke_before_the_call_returned", before_return);
	b10_stats("latency", lat, n, true);
	b10_stats(kind == B10_CREATE ? "latency_from_return"
				     : "latency_from_last_close", lat2, n, false);
	b10_stats(kind == B10_CREATE ? "create_vcpu_call" : "close_calls",
		  op, n, false);
	jclose('}');
}

void phase_b10(int events)
{
	int dev;

	if (events < 1 || events > B10_MAX_EVENTS)
		events = 1000;
	dev = vm_dev();
	jbegin("b10");
	jnum("events_per_series", events);
	jnum("vcpus_per_vm_create", B10_VCPUS_PER_VM);
	jnum("vcpus_per_vm_hangup", B10_HUP_VCPUS);
	jopen("series", '[');
	b10_series(dev, B10_CREATE, false, events);
	b10_series(dev, B10_HANGUP, false, events);
	b10_series(dev, B10_CREATE, true, events);
	b10_series(dev, B10_HANGUP, true, events);
	jclose(']');
	jend();
	close(dev);
}
