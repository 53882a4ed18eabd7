// SPDX-License-Identifier: GPL-2.0
/*
 * poll_test - events of stats fds (statsfd-abi.rst, "Events"):
 *
 * - EPOLLPRI | EPOLLERR when the source's set of children changed since
 *   this open file last returned bytes of its header or data: a vCPU
 *   added (VM stats fd), a VM created or destroyed (system stats fd); a
 *   vCPU stats fd has no children and never has it;
 * - EPOLLHUP, for good, once the VMM closed the VM fd and every vCPU fd
 *   (in any order, or by exiting, with the stats fds passed to another
 *   process over SCM_RIGHTS); the stats fds still read, values frozen;
 * - EPOLLIN always; plain stats (RUN, KICK, reads, other stats fds
 *   coming and going) never wake anyone;
 * - poll(), select(), level- and edge-triggered epoll; a change between
 *   two polls is never lost, also when the changes race the reader;
 *   100 threads polling one fd while VMs churn (the kernel log, with
 *   KASAN and lockdep on 6.12, is checked by the harness).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

/* What poll(POLLIN | POLLPRI) reports, by state. */
#define IDLE POLLIN
#define CHANGED (POLLIN | POLLPRI | POLLERR)
#define HUNG (POLLIN | POLLHUP)

/* revents of @fd for @events after at most @timeout_ms; 0: none, -1: error */
static int revents(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n = poll(&p, 1, timeout_ms);

	if (n < 0)
		return -1;
	return n ? p.revents : 0;
}

/* The state of @fd right now: IDLE, CHANGED, HUNG or a mix. */
static int state(int fd)
{
	return revents(fd, POLLIN | POLLPRI, 0);
}

/* Read the header: acknowledges every change so far. */
static int read_header(int fd)
{
	struct statsfd_header h;

	return pread(fd, &h, sizeof(h), 0) == sizeof(h) ? 0 : -1;
}

/* @fd parsed; 0 or -1. */
static int parse(int fd, struct sfile *s)
{
	return sfile_parse(fd, s);
}

/* The whole file of @fd, malloc'ed, its size in @size. */
static unsigned char *whole_file(int fd, size_t *size)
{
	unsigned char *buf;
	struct sfile s;

	if (sfile_parse(fd, &s))
		return NULL;
	*size = s.size;
	sfile_free(&s);
	buf = malloc(*size + 1);
	if (buf && pread(fd, buf, *size + 1, 0) != (ssize_t)*size) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A device fd, a VM on it and the VM's stats fd, each asserted. */
static void open_vm_stats(struct __test_metadata *_metadata, int *dev,
			  int *vm, int *vs)
{
	*dev = dev_open();
	ASSERT_LE(0, *dev);
	*vm = vm_create(*dev);
	ASSERT_LE(0, *vm);
	*vs = stats_fd(*vm);
	ASSERT_LE(0, *vs);
}

/* Closes what open_vm_stats() opened. */
static void close_vm_stats(int dev, int vm, int vs)
{
	close(vs);
	close(vm);
	close(dev);
}

/* A thread blocked in poll() on one fd. */
struct waiter {
	pthread_t thread;
	int fd;
	short events;
	int timeout_ms;
	int ret;
	short revents;
	__u64 ns;
	atomic_int done;
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	struct pollfd p = { .fd = w->fd, .events = w->events };
	__u64 t0 = now_ns();

	w->ret = poll(&p, 1, w->timeout_ms);
	w->revents = p.revents;
	w->ns = now_ns() - t0;
	atomic_store(&w->done, 1);
	return NULL;
}

static int waiter_start(struct waiter *w, int fd, short events, int timeout_ms)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->events = events;
	w->timeout_ms = timeout_ms;
	if (pthread_create(&w->thread, NULL, waiter_fn, w))
		return -1;
	/* Long enough for it to be asleep in poll() (it is not done yet). */
	usleep(100 * 1000);
	return 0;
}

/*
 * Every test turns the debugfs text view of new VMs off (and back): VMs
 * come and go much faster without it, and it is not what is tested here.
 */
FIXTURE(ev)
{
	bool debugfs;
};

FIXTURE_SETUP(ev)
{
	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
}

FIXTURE_TEARDOWN(ev)
{
	debugfs_param_set(self->debugfs);
}

/* A vCPU added: the VM stats fd polls EPOLLPRI | EPOLLERR until read. */
TEST_F(ev, vcpu_add_is_an_event_of_the_vm_stats_fd)
{
	int dev, vm, vs, vcpu[3], cs, i;
	struct statsfd_header h;
	struct sfile s;
	fd_set ex;
	struct timeval tv = { 0 };
	char id[8];

	open_vm_stats(_metadata, &dev, &vm, &vs);
	ASSERT_EQ(0, parse(vs, &s));
	/* A fresh fd has no event. */
	EXPECT_EQ(IDLE, state(vs));

	vcpu[0] = vcpu_create(vm, 0);
	ASSERT_LE(0, vcpu[0]);
	EXPECT_EQ(CHANGED, state(vs));
	/* Polling acknowledges nothing. */
	EXPECT_EQ(CHANGED, state(vs));
	/* Nor do reads of only the descriptors or only the id. */
	ASSERT_EQ(16, pread(vs, id, 8, s.hdr.desc_offset) +
			      pread(vs, id, 8, s.hdr.desc_offset + s.stride));
	EXPECT_EQ(CHANGED, state(vs));
	ASSERT_EQ(8, pread(vs, id, 8, s.hdr.id_offset));
	EXPECT_EQ(CHANGED, state(vs));
	/* A read of the header does. */
	ASSERT_EQ(4, pread(vs, &h, 4, 0));
	EXPECT_EQ(IDLE, state(vs));

	/* So does a read of data only. */
	vcpu[1] = vcpu_create(vm, 1);
	ASSERT_LE(0, vcpu[1]);
	EXPECT_EQ(CHANGED, state(vs));
	ASSERT_EQ(8, pread(vs, id, 8, s.hdr.data_offset + 8));
	EXPECT_EQ(IDLE, state(vs));

	/* select(): among the exceptional conditions. */
	vcpu[2] = vcpu_create(vm, 2);
	ASSERT_LE(0, vcpu[2]);
	FD_ZERO(&ex);
	FD_SET(vs, &ex);
	EXPECT_EQ(1, select(vs + 1, NULL, NULL, &ex, &tv));
	EXPECT_TRUE(FD_ISSET(vs, &ex));
	ASSERT_EQ(0, read_header(vs));
	FD_ZERO(&ex);
	FD_SET(vs, &ex);
	EXPECT_EQ(0, select(vs + 1, NULL, NULL, &ex, &tv));

	/* A vCPU stats fd has no children: never an event. */
	cs = stats_fd(vcpu[0]);
	ASSERT_LE(0, cs);
	for (i = 3; i < 6; i++) {
		int v = vcpu_create(vm, i);

		ASSERT_LE(0, v);
		close(v);
	}
	EXPECT_EQ(IDLE, state(cs));
	EXPECT_EQ(CHANGED, state(vs));

	sfile_free(&s);
	close(cs);
	for (i = 0; i < 3; i++)
		close(vcpu[i]);
	close_vm_stats(dev, vm, vs);
}

/* A poller asleep on the VM stats fd wakes when a vCPU is added. */
TEST_F(ev, blocked_poller_wakes_on_vcpu_add)
{
	struct waiter w;
	int dev, vm, vs, vcpu;

	open_vm_stats(_metadata, &dev, &vm, &vs);
	ASSERT_EQ(0, waiter_start(&w, vs, POLLPRI, 20000));
	/* Nothing happened: still asleep. */
	EXPECT_EQ(0, atomic_load(&w.done));
	vcpu = vcpu_create(vm, 0);
	ASSERT_LE(0, vcpu);
	pthread_join(w.thread, NULL);
	EXPECT_EQ(1, w.ret);
	EXPECT_EQ(POLLPRI | POLLERR, w.revents);
	EXPECT_GT(5000000000ULL, w.ns);
	close(vcpu);
	close_vm_stats(dev, vm, vs);
}

/*
 * The system stats fd: a VM created is an event, a VM destroyed (its
 * last reference gone: the VM fd, its vCPU fds and its stats fds) is
 * another; vCPUs are not its children; it never hangs up.
 */
TEST_F(ev, vm_create_and_destroy_are_events_of_the_system_fd)
{
	struct waiter w;
	int dev, sys, vm, vcpu, vs;

	dev = dev_open();
	ASSERT_LE(0, dev);
	sys = stats_fd(dev);
	ASSERT_LE(0, sys);
	EXPECT_EQ(IDLE, state(sys));

	vm = vm_create(dev);
	ASSERT_LE(0, vm);
	EXPECT_EQ(CHANGED, state(sys));
	ASSERT_EQ(0, read_header(sys));
	EXPECT_EQ(IDLE, state(sys));

	vcpu = vcpu_create(vm, 0);
	ASSERT_LE(0, vcpu);
	EXPECT_EQ(IDLE, state(sys));
	vs = stats_fd(vm);
	ASSERT_LE(0, vs);
	close(vm);
	close(vcpu);
	/* The VMM is gone, the VM is not: its stats fd holds it. */
	EXPECT_EQ(IDLE, state(sys));
	EXPECT_EQ(HUNG, state(vs));

	/* Its last reference: a poller asleep on the system fd wakes. */
	ASSERT_EQ(0, waiter_start(&w, sys, POLLPRI, 20000));
	EXPECT_EQ(0, atomic_load(&w.done));
	close(vs);
	pthread_join(w.thread, NULL);
	EXPECT_EQ(1, w.ret);
	EXPECT_EQ(POLLPRI | POLLERR, w.revents);
	EXPECT_EQ(CHANGED, state(sys));
	ASSERT_EQ(0, read_header(sys));
	EXPECT_EQ(IDLE, state(sys));

	/* A VM that never had a vCPU or a stats fd: both events at once. */
	vm = vm_create(dev);
	ASSERT_LE(0, vm);
	close(vm);
	EXPECT_EQ(CHANGED, state(sys));
	ASSERT_EQ(0, read_header(sys));
	EXPECT_EQ(IDLE, state(sys));
	close(sys);
	close(dev);
}

/* A stats fd's whole file, taken before a hangup. */
struct fd_image {
	unsigned char *bytes;
	size_t size;
	long long mask; /* file offset of sample_ns, or -1 */
};

/* Take @fd's whole file into @im; @fd has no event pending. */
static void image_take(struct __test_metadata *_metadata, int fd,
		       struct fd_image *im)
{
	struct sfile s;

	ASSERT_EQ(0, parse(fd, &s));
	im->mask = sfile_off(&s, STATSFD_STAT_SAMPLE_NS);
	sfile_free(&s);
	im->bytes = whole_file(fd, &im->size);
	ASSERT_NE(NULL, im->bytes);
	EXPECT_EQ(IDLE, state(fd));
}

/*
 * @fd is hung up, for good (reads and polls do not clear it), and still
 * reads the same bytes as @im (but sample_ns, taken anew by every read).
 * Frees @im.
 */
static void expect_hung_same(struct __test_metadata *_metadata, int fd,
			     struct fd_image *im)
{
	unsigned char *after;
	size_t size;

	EXPECT_EQ(HUNG, state(fd));
	after = whole_file(fd, &size);
	ASSERT_NE(NULL, after);
	ASSERT_EQ(im->size, size);
	EXPECT_EQ(0, image_cmp(after, im->bytes, 0, size, im->mask))
	{
		TH_LOG("fd %d changed after the hangup", fd);
	}
	EXPECT_EQ(HUNG, state(fd));
	free(after);
	free(im->bytes);
}

FIXTURE(hup)
{
	struct vm_env e;
	int sys;
	bool debugfs;
};

FIXTURE_VARIANT(hup)
{
	/* the order the VMM's handles close in: 0 the VM fd, 1 and 2 vCPUs */
	int order[3];
};

/* clang-format off */
FIXTURE_VARIANT_ADD(hup, vm_fd_first) { .order = { 0, 1, 2 } };
FIXTURE_VARIANT_ADD(hup, vm_fd_between) { .order = { 1, 0, 2 } };
FIXTURE_VARIANT_ADD(hup, vm_fd_last) { .order = { 2, 1, 0 } };
/* clang-format on */

FIXTURE_SETUP(hup)
{
	struct statsfd_vm_run run = { .io_exits = 5, .hypercall_exits = 2 };

	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
	ASSERT_VM_ENV(&self->e, -1, 2, &run, VM_ENV_STATS);
	self->sys = stats_fd(self->e.dev);
	ASSERT_LE(0, self->sys);
}

FIXTURE_TEARDOWN(hup)
{
	close_fd(&self->sys);
	vm_env_close(&self->e);
	debugfs_param_set(self->debugfs);
}

/*
 * Closing every VM fd and vCPU fd while the stats fds live on: EPOLLHUP
 * on all of them after the last one, not before; they still read, the
 * same bytes (but sample_ns, taken anew by every read).
 */
TEST_F(hup, closing_every_vmm_fd_hangs_up)
{
	int *handle[3] = { &self->e.vm, &self->e.vcpu[0], &self->e.vcpu[1] };
	int fds[3] = { self->e.vm_stats, self->e.vcpu_stats[0],
		       self->e.vcpu_stats[1] };
	struct fd_image before[3];
	struct waiter w;
	int i, k;

	for (i = 0; i < 3; i++)
		image_take(_metadata, fds[i], &before[i]);
	for (k = 0; k < 2; k++) {
		close_fd(handle[variant->order[k]]);
		for (i = 0; i < 3; i++)
			EXPECT_EQ(IDLE, state(fds[i]))
			{
				TH_LOG("fd %d after %d closes", i, k + 1);
			}
	}
	/* One asleep in poll() on the VM's stats fd, waiting for nothing. */
	ASSERT_EQ(0, waiter_start(&w, fds[0], 0, 20000));
	EXPECT_EQ(0, atomic_load(&w.done));
	close_fd(handle[variant->order[2]]);
	pthread_join(w.thread, NULL);
	EXPECT_EQ(1, w.ret);
	EXPECT_EQ(POLLHUP, w.revents);
	EXPECT_GT(5000000000ULL, w.ns);

	for (i = 0; i < 3; i++)
		expect_hung_same(_metadata, fds[i], &before[i]);
	EXPECT_EQ(5 + 2, stat_get(fds[1], "exits"));
	EXPECT_EQ(2 * (5 + 2), stat_get(fds[0], "exits_sum"));
	/* The system source never hangs up; the VM is still alive. */
	EXPECT_EQ(IDLE, state(self->sys));
}

/*
 * The VMM, a child process: a VM with two vCPUs that ran, their stats
 * fds passed to the monitor; then, told to, it exits without closing
 * anything.
 */
static void vmm_child(int sock)
{
	struct statsfd_vm_run run = { .io_exits = 7 };
	int dev, vm, vcpu[2], fds[3], i;
	char go;

	dev = dev_open();
	vm = dev < 0 ? -1 : vm_create(dev);
	if (vm < 0)
		goto fail;
	for (i = 0; i < 2; i++) {
		vcpu[i] = vcpu_create(vm, i);
		if (vcpu[i] < 0 || vcpu_run(vcpu[i], &run))
			goto fail;
		fds[1 + i] = stats_fd(vcpu[i]);
		if (fds[1 + i] < 0)
			goto fail;
	}
	fds[0] = stats_fd(vm);
	if (fds[0] < 0 || send_fds(sock, fds, 3, 'k'))
		goto fail;
	if (read(sock, &go, 1) != 1)
		_exit(2);
	_exit(0);
fail:
	send_fds(sock, NULL, 0, 'E');
	_exit(1);
}

/*
 * The VMM exits (every fd it had closes at once) while another process
 * holds the stats fds it passed over SCM_RIGHTS: that process sees
 * EPOLLHUP on each, and reads the last values.
 */
TEST_F(ev, vmm_exit_hangs_up_fds_passed_to_another_process)
{
	struct epoll_event ev, evs[4];
	struct fd_image before[3];
	__u64 alive = sys_stat("vms_alive");
	int sv[2], fds[3], ep, i, n, hups = 0, status;
	unsigned int seen = 0;
	__u64 t_end;
	pid_t pid;
	char byte;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		vmm_child(sv[1]);
	}
	close(sv[1]);
	ASSERT_EQ(3, recv_fds(sv[0], fds, 3, &byte));
	ASSERT_EQ('k', byte);

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	for (i = 0; i < 3; i++) {
		image_take(_metadata, fds[i], &before[i]);
		ev.events = EPOLLPRI;
		ev.data.u32 = i;
		ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev));
	}
	EXPECT_EQ(alive + 1, sys_stat("vms_alive"));
	EXPECT_EQ(0, epoll_wait(ep, evs, 4, 0));

	/* Go: the VMM exits. */
	ASSERT_EQ(1, write(sv[0], "g", 1));
	t_end = now_ns() + 10000000000ULL;
	while (hups < 3 && now_ns() < t_end) {
		n = epoll_wait(ep, evs, 4, 1000);
		ASSERT_LE(0, n);
		for (i = 0; i < n; i++) {
			EXPECT_EQ(EPOLLHUP, evs[i].events);
			if (!(seen & (1U << evs[i].data.u32)))
				hups++;
			seen |= 1U << evs[i].data.u32;
		}
	}
	EXPECT_EQ(3, hups);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	for (i = 0; i < 3; i++)
		expect_hung_same(_metadata, fds[i], &before[i]);
	EXPECT_EQ(7, stat_get(fds[2], "exits"));
	EXPECT_EQ(14, stat_get(fds[0], "io_exits_sum"));
	/* The monitor's fds alone keep the VM. */
	EXPECT_EQ(alive + 1, sys_stat("vms_alive"));
	for (i = 0; i < 3; i++)
		close(fds[i]);
	EXPECT_EQ(alive, sys_stat("vms_alive"));
	close(ep);
	close(sv[0]);
}

/*
 * A change between two polls is never lost: changes are counted per
 * file, not a level; polling acknowledges nothing; an edge-triggered
 * epoll reports every new change, read or not in between.
 */
TEST_F(ev, change_between_two_polls_is_never_lost)
{
	struct epoll_event ev = { .events = EPOLLPRI | EPOLLET }, out;
	int dev, vm, vs, ep, vcpu[4], i;

	open_vm_stats(_metadata, &dev, &vm, &vs);
	EXPECT_EQ(IDLE, state(vs));

	/* Two changes with no poll between: one event, until read. */
	vcpu[0] = vcpu_create(vm, 0);
	vcpu[1] = vcpu_create(vm, 1);
	ASSERT_LE(0, vcpu[0]);
	ASSERT_LE(0, vcpu[1]);
	EXPECT_EQ(CHANGED, state(vs));
	EXPECT_EQ(CHANGED, state(vs));
	ASSERT_EQ(0, read_header(vs));
	EXPECT_EQ(IDLE, state(vs));

	/* Edge-triggered: a pending change is reported once... */
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	vcpu[2] = vcpu_create(vm, 2);
	ASSERT_LE(0, vcpu[2]);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, vs, &ev));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(EPOLLPRI | EPOLLERR, out.events);
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	/* ...and the next one again, though nothing was read between. */
	vcpu[3] = vcpu_create(vm, 3);
	ASSERT_LE(0, vcpu[3]);
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(EPOLLPRI | EPOLLERR, out.events);
	EXPECT_EQ(CHANGED, state(vs));
	ASSERT_EQ(0, read_header(vs));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(IDLE, state(vs));

	close(ep);
	for (i = 0; i < 4; i++)
		close(vcpu[i]);
	close_vm_stats(dev, vm, vs);
}

FIXTURE(race)
{
	int dev;
	bool debugfs;
};

FIXTURE_VARIANT(race)
{
	int mode; /* 0: poll(), 1: epoll level-, 2: edge-triggered */
};

/* clang-format off */
FIXTURE_VARIANT_ADD(race, poll) { .mode = 0 };
FIXTURE_VARIANT_ADD(race, epoll_lt) { .mode = 1 };
FIXTURE_VARIANT_ADD(race, epoll_et) { .mode = 2 };
/* clang-format on */

FIXTURE_SETUP(race)
{
	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
	self->dev = dev_open();
	ASSERT_LE(0, self->dev);
}

FIXTURE_TEARDOWN(race)
{
	close(self->dev);
	debugfs_param_set(self->debugfs);
}

/* vCPUs the creator adds, and exits of the VM's first vCPU. */
#define RACE_VCPUS 24
#define RACE_EXITS 50000

struct creator {
	pthread_t thread;
	int vm;
	int fds[RACE_VCPUS];
	int errors;
	atomic_int done;
};

static void *creator_fn(void *arg)
{
	struct creator *c = arg;
	unsigned int seed = 12345;
	int i;

	/* In bursts: some land while the monitor wakes or reads. */
	for (i = 0; i < RACE_VCPUS; i++) {
		if (!(rand_r(&seed) % 3))
			usleep(rand_r(&seed) % 2000);
		c->fds[i] = vcpu_create(c->vm, i + 1);
		if (c->fds[i] < 0)
			c->errors++;
	}
	atomic_store(&c->done, 1);
	return NULL;
}

/*
 * vCPUs added at random moments while a monitor waits, wakes and reads:
 * wherever a change falls (before the wait, during it, during the
 * read), the monitor's last read shows every vCPU.  It reads exits_avg,
 * an aggregate over the vCPUs there are when the read takes them: with
 * RACE_EXITS on the first vCPU and none on the others, it tells how
 * many there were.
 */
TEST_F_TIMEOUT(race, racing_changes_are_never_lost, 120)
{
	struct epoll_event ev, out;
	struct statsfd_vm_run run = { .io_exits = RACE_EXITS };
	struct creator c = { 0 };
	unsigned int seed = 54321;
	__u64 avg = 0, want = RACE_EXITS / (RACE_VCPUS + 1);
	int vcpu0, vs, ep = -1, n, i, wakes = 0, stalls = 0;
	struct sfile s;

	c.vm = vm_create(self->dev);
	ASSERT_LE(0, c.vm);
	vcpu0 = vcpu_create(c.vm, 0);
	ASSERT_LE(0, vcpu0);
	ASSERT_EQ(0, vcpu_run(vcpu0, &run));
	vs = stats_fd(c.vm);
	ASSERT_LE(0, vs);
	ASSERT_EQ(0, parse(vs, &s));
	ASSERT_EQ(0, sfile_read_data(vs, &s));
	ASSERT_EQ(RACE_EXITS, sfile_val(&s, "exits_avg"));
	if (variant->mode) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_LE(0, ep);
		ev.events = EPOLLPRI | (variant->mode == 2 ? EPOLLET : 0);
		ev.data.fd = vs;
		ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, vs, &ev));
	}

	ASSERT_EQ(0, pthread_create(&c.thread, NULL, creator_fn, &c));
	for (;;) {
		int timeout = atomic_load(&c.done) ? 1000 : 5000;

		if (variant->mode) {
			n = epoll_wait(ep, &out, 1, timeout);
			if (n == 1)
				EXPECT_EQ(EPOLLPRI | EPOLLERR, out.events);
		} else {
			n = revents(vs, POLLPRI, timeout);
			ASSERT_LE(0, n);
			if (n > 0)
				EXPECT_EQ(POLLPRI | POLLERR, n);
			n = n > 0;
		}
		ASSERT_LE(0, n);
		if (!n) {
			/* quiet for a second after the last change: done */
			if (atomic_load(&c.done))
				break;
			ASSERT_GT(3, ++stalls);
			continue;
		}
		wakes++;
		/* Between the wake-up and the read, more may come. */
		usleep(rand_r(&seed) % 300);
		ASSERT_EQ(0, sfile_read_data(vs, &s));
		avg = sfile_val(&s, "exits_avg");
	}
	pthread_join(c.thread, NULL);
	EXPECT_EQ(0, c.errors);
	EXPECT_EQ(want, avg)
	{
		TH_LOG("last read saw %llu vCPUs of %d",
		       avg ? RACE_EXITS / avg : 0ULL, RACE_VCPUS + 1);
	}
	EXPECT_LE(1, wakes);
	EXPECT_GE(RACE_VCPUS, wakes);
	EXPECT_EQ(IDLE, state(vs));
	TH_LOG("%d wake-ups for %d changes", wakes, RACE_VCPUS);

	for (i = 0; i < RACE_VCPUS; i++)
		if (c.fds[i] >= 0)
			close(c.fds[i]);
	if (ep >= 0)
		close(ep);
	sfile_free(&s);
	close(vs);
	close(vcpu0);
	close(c.vm);
}

struct runner {
	pthread_t thread;
	int fd;
	const int *fds;
	atomic_int *stop;
	unsigned long rounds;
	unsigned long errors;
};

static void *run_fn(void *arg)
{
	struct runner *r = arg;
	struct statsfd_vm_run run = {
		.io_exits = 300,
		.mmio_exits = 50,
		.hypercall_exits = 50,
		.halt_exits = 2,
		.io_bytes = 4,
		.halt_timeout_ns = 50000,
	};

	while (!atomic_load(r->stop)) {
		struct statsfd_vm_run rr = run;

		if (vcpu_run(r->fd, &rr))
			r->errors++;
		else
			r->rounds++;
	}
	return NULL;
}

/* KICKs both vCPUs, r->fds[0] and r->fds[1]. */
static void *kick_fn(void *arg)
{
	struct runner *r = arg;
	const int *vcpu = r->fds;

	while (!atomic_load(r->stop)) {
		if (vcpu_kick(vcpu[0]) || vcpu_kick(vcpu[1]))
			r->errors++;
		r->rounds++;
		usleep(200);
	}
	return NULL;
}

/* Reads r->fds[0..3] and opens and closes more stats fds of r->fd. */
static void *churn_reads_fn(void *arg)
{
	struct runner *r = arg;
	const int *fds = r->fds;
	char buf[8192];
	int i, extra;

	while (!atomic_load(r->stop)) {
		for (i = 0; i < 4; i++)
			if (pread(fds[i], buf, sizeof(buf), 0) <= 0)
				r->errors++;
		extra = stats_fd(r->fd);
		if (extra < 0)
			r->errors++;
		else
			close(extra);
		r->rounds++;
	}
	return NULL;
}

/*
 * Plain stats never wake pollers: with an edge-triggered epoll on the
 * system, VM and vCPU stats fds (EPOLLIN, always ready, reported once
 * when added), any wake-up of a source's queue would be reported again.
 * None is while two vCPUs run, halt, are kicked, their stats fds are
 * read and more stats fds of them come and go.  Then a vCPU is added: the
 * VM's fd, and only it, is reported.
 */
TEST_F(ev, plain_stats_never_wake)
{
	struct statsfd_vm_run warm = { .io_exits = 1 };
	struct epoll_event ev, evs[8];
	struct runner r[2], kick, reads;
	struct vm_env e;
	atomic_int stop = 0;
	int fds[4], ep, i, n, extra, woken = 0, waits = 0;

	ASSERT_VM_ENV(&e, -1, 2, &warm, VM_ENV_STATS);
	fds[0] = stats_fd(e.dev);
	ASSERT_LE(0, fds[0]);
	fds[1] = e.vm_stats;
	fds[2] = e.vcpu_stats[0];
	fds[3] = e.vcpu_stats[1];
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	for (i = 0; i < 4; i++) {
		ev.events = EPOLLIN | EPOLLPRI | EPOLLET;
		ev.data.u32 = i;
		ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev));
	}
	/* Each readable once, then quiet. */
	ASSERT_EQ(4, epoll_wait(ep, evs, 8, 0));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(EPOLLIN, evs[i].events);
	ASSERT_EQ(0, epoll_wait(ep, evs, 8, 0));

	for (i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].fd = e.vcpu[i];
		r[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&r[i].thread, NULL, run_fn, &r[i]));
	}
	memset(&kick, 0, sizeof(kick));
	kick.stop = &stop;
	kick.fds = e.vcpu;
	ASSERT_EQ(0, pthread_create(&kick.thread, NULL, kick_fn, &kick));
	memset(&reads, 0, sizeof(reads));
	reads.stop = &stop;
	reads.fd = e.vcpu[0];
	reads.fds = fds;
	ASSERT_EQ(0, pthread_create(&reads.thread, NULL, churn_reads_fn,
				    &reads));

	/*
	 * Fifteen waits of 100 ms each while the workload runs: counted, not
	 * timed, so a loaded host makes the test slower, never wrong.
	 */
	for (waits = 0; waits < 15; waits++) {
		n = epoll_wait(ep, evs, 8, 100);
		ASSERT_LE(0, n);
		for (i = 0; i < n; i++) {
			woken++;
			TH_LOG("fd %u woken: events %#x", evs[i].data.u32,
			       evs[i].events);
		}
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(r[i].thread, NULL);
	pthread_join(kick.thread, NULL);
	pthread_join(reads.thread, NULL);

	EXPECT_EQ(0, woken);
	/* The workload ran. */
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, r[i].errors);
		EXPECT_LE(1, r[i].rounds);
	}
	EXPECT_EQ(0, kick.errors);
	EXPECT_LE(1, kick.rounds);
	EXPECT_EQ(0, reads.errors);
	EXPECT_LE(1, reads.rounds);
	EXPECT_LT(1, stat_get(fds[2], "runs"));

	/* A change of children is reported, on the VM's fd only. */
	extra = vcpu_create(e.vm, 2);
	ASSERT_LE(0, extra);
	ASSERT_EQ(1, epoll_wait(ep, evs, 8, 2000));
	EXPECT_EQ(1, evs[0].data.u32);
	EXPECT_EQ(EPOLLIN | EPOLLPRI | EPOLLERR, evs[0].events);
	EXPECT_EQ(0, epoll_wait(ep, evs, 8, 0));

	close(extra);
	close(ep);
	close(fds[0]);
	vm_env_close(&e);
}

FIXTURE(ep)
{
	int dev, vm, vs, ep;
	int vcpu[3];
	bool debugfs;
};

FIXTURE_VARIANT(ep)
{
	bool et;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(ep, level) { .et = false };
FIXTURE_VARIANT_ADD(ep, edge) { .et = true };
/* clang-format on */

FIXTURE_SETUP(ep)
{
	struct epoll_event ev = { .events = EPOLLPRI };
	int i;

	for (i = 0; i < 3; i++)
		self->vcpu[i] = -1;
	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
	open_vm_stats(_metadata, &self->dev, &self->vm, &self->vs);
	self->ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, self->ep);
	if (variant->et)
		ev.events |= EPOLLET;
	ASSERT_EQ(0, epoll_ctl(self->ep, EPOLL_CTL_ADD, self->vs, &ev));
}

FIXTURE_TEARDOWN(ep)
{
	int i;

	for (i = 0; i < 3; i++)
		close_fd(&self->vcpu[i]);
	close_fd(&self->ep);
	close_fd(&self->vs);
	close_fd(&self->vm);
	close_fd(&self->dev);
	debugfs_param_set(self->debugfs);
}

struct closer {
	pthread_t thread;
	int *fd;
};

static void *closer_fn(void *arg)
{
	struct closer *c = arg;

	usleep(200 * 1000);
	close_fd(c->fd);
	return NULL;
}

/* epoll_wait(@timeout_ms): how many events; the one in @events. */
static int ep_wait(int ep, __u32 *events, int timeout_ms)
{
	struct epoll_event out;
	int n = epoll_wait(ep, &out, 1, timeout_ms);

	*events = n == 1 ? out.events : 0;
	return n;
}

/*
 * Level-triggered: reported while pending, until read.  Edge-triggered:
 * reported once per change.  Both: EPOLLHUP after the VMM's last fd, and
 * a blocked epoll_wait() wakes for each.
 */
TEST_F(ep, epoll_reports_changes_and_hangup)
{
	struct closer c = { .fd = &self->vcpu[2] };
	__u32 events;
	__u64 t0;

	EXPECT_EQ(0, ep_wait(self->ep, &events, 0));
	self->vcpu[0] = vcpu_create(self->vm, 0);
	ASSERT_LE(0, self->vcpu[0]);
	EXPECT_EQ(1, ep_wait(self->ep, &events, 1000));
	EXPECT_EQ(EPOLLPRI | EPOLLERR, events);
	/* Not read yet: level-triggered says it again, edge-triggered not. */
	EXPECT_EQ(variant->et ? 0 : 1, ep_wait(self->ep, &events, 0));
	EXPECT_EQ(variant->et ? 0 : 1, ep_wait(self->ep, &events, 0));
	ASSERT_EQ(0, read_header(self->vs));
	EXPECT_EQ(0, ep_wait(self->ep, &events, 0));

	/* Two changes, nothing read: reported (once more for edge). */
	self->vcpu[1] = vcpu_create(self->vm, 1);
	ASSERT_LE(0, self->vcpu[1]);
	EXPECT_EQ(1, ep_wait(self->ep, &events, 0));
	self->vcpu[2] = vcpu_create(self->vm, 2);
	ASSERT_LE(0, self->vcpu[2]);
	EXPECT_EQ(1, ep_wait(self->ep, &events, 0));
	EXPECT_EQ(EPOLLPRI | EPOLLERR, events);
	ASSERT_EQ(0, read_header(self->vs));
	EXPECT_EQ(0, ep_wait(self->ep, &events, 0));

	/* The VMM's fds go, in a thread, while we are asleep in epoll. */
	close_fd(&self->vm);
	close_fd(&self->vcpu[0]);
	close_fd(&self->vcpu[1]);
	EXPECT_EQ(0, ep_wait(self->ep, &events, 0));
	t0 = now_ns();
	ASSERT_EQ(0, pthread_create(&c.thread, NULL, closer_fn, &c));
	EXPECT_EQ(1, ep_wait(self->ep, &events, 5000));
	EXPECT_EQ(EPOLLHUP, events);
	/* It slept until the last close. */
	EXPECT_LT(150000000ULL, now_ns() - t0);
	pthread_join(c.thread, NULL);
	/* For good: level-triggered again and again, edge-triggered once. */
	EXPECT_EQ(variant->et ? 0 : 1, ep_wait(self->ep, &events, 0));
	ASSERT_EQ(0, read_header(self->vs));
	EXPECT_EQ(variant->et ? 0 : 1, ep_wait(self->ep, &events, 0));
}

/* 100 threads polling the system stats fd, in four ways. */
#define NR_POLLERS 100
#define NR_CHURNERS 2

struct poller {
	pthread_t thread;
	int fd;
	int how; /* 0 poll, 1 epoll LT, 2 epoll ET, 3 select */
	atomic_int *stop;
	unsigned long loops;
	unsigned long wakes;
	unsigned long errors;
};

static void *poller_fn(void *arg)
{
	struct poller *p = arg;
	struct epoll_event ev = { .events = EPOLLPRI }, out;
	int ep = -1, n;

	if (p->how == 1 || p->how == 2) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (p->how == 2)
			ev.events |= EPOLLET;
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p->fd, &ev)) {
			p->errors++;
			return NULL;
		}
	}
	while (!atomic_load(p->stop)) {
		p->loops++;
		if (p->how == 0) {
			n = revents(p->fd, POLLPRI, 200);
			if (n > 0 && !(n & POLLPRI))
				p->errors++;
		} else if (p->how == 3) {
			struct timeval tv = { .tv_usec = 200000 };
			fd_set ex;

			FD_ZERO(&ex);
			FD_SET(p->fd, &ex);
			n = select(p->fd + 1, NULL, NULL, &ex, &tv);
		} else {
			n = epoll_wait(ep, &out, 1, 200);
			if (n > 0 && (out.events & ~(EPOLLPRI | EPOLLERR)))
				p->errors++;
		}
		if (n < 0) {
			p->errors++;
			continue;
		}
		if (!n)
			continue;
		p->wakes++;
		if (read_header(p->fd))
			p->errors++;
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

struct churner {
	pthread_t thread;
	int dev;
	int rounds_min;
	__u64 t_min; /* churn at least until then and rounds_min rounds */
	__u64 t_end; /* and never after then */
	unsigned long rounds;
	unsigned long errors;
	unsigned long no_hup;
};

/* VMs come and go; each one's stats fd must poll EPOLLHUP once its VMM's fds are closed. */
/* VMs each churner makes in any case, time budget or not. */
#define CHURN_ROUNDS_MIN 10

static void *churner_fn(void *arg)
{
	struct churner *c = arg;
	struct statsfd_vm_run run = { .io_exits = 10, .hypercall_exits = 3 };

	/*
	 * At least CHURN_ROUNDS_MIN whatever the clock says: a loaded host
	 * once let the two churners make 9 VMs in the 15 s.
	 */
	while (c->rounds + c->errors < CHURN_ROUNDS_MIN ||
	       ((c->rounds < c->rounds_min || now_ns() < c->t_min) &&
		now_ns() < c->t_end)) {
		int vm, vcpu[2], vs, cs, i;

		vm = vm_create(c->dev);
		if (vm < 0) {
			c->errors++;
			continue;
		}
		for (i = 0; i < 2; i++)
			vcpu[i] = vcpu_create(vm, i);
		vs = stats_fd(vm);
		cs = vcpu[0] >= 0 ? stats_fd(vcpu[0]) : -1;
		if (vcpu[0] < 0 || vcpu[1] < 0 || vs < 0 || cs < 0 ||
		    vcpu_run(vcpu[0], &run))
			c->errors++;
		if (vs >= 0 && state(vs) != IDLE)
			c->errors++;
		close(vcpu[1]);
		close(vm);
		close(vcpu[0]);
		if (vs >= 0 && state(vs) != HUNG)
			c->no_hup++;
		if (cs >= 0 && state(cs) != HUNG)
			c->no_hup++;
		if (cs >= 0)
			close(cs);
		if (vs >= 0)
			close(vs);
		c->rounds++;
	}
	return NULL;
}

FIXTURE(churn)
{
	int dev;
	int sys;
	bool debugfs;
};

FIXTURE_SETUP(churn)
{
	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
	self->dev = dev_open();
	ASSERT_LE(0, self->dev);
	self->sys = stats_fd(self->dev);
	ASSERT_LE(0, self->sys);
}

FIXTURE_TEARDOWN(churn)
{
	close(self->sys);
	close(self->dev);
	debugfs_param_set(self->debugfs);
}

/*
 * 100 threads poll one stats fd (the system's: poll(), select(), level-
 * and edge-triggered epoll) and read its header on every event, while
 * two threads create and destroy VMs for a bounded time (at least 2 s and
 * 25 VMs each, at most 15 s unless 10 VMs are not made by then; more
 * with STATSFD_STRESS), and every hangup
 * is seen at once.  The harness checks the kernel log (KASAN, lockdep).
 */
TEST_F_TIMEOUT(churn, hundred_pollers_while_vms_churn, 300)
{
	static struct poller p[NR_POLLERS];
	struct churner c[NR_CHURNERS];
	unsigned long wakes = 0, errors = 0, rounds = 0;
	__u64 alive = sys_stat("vms_alive");
	__u64 t0 = now_ns();
	atomic_int stop = 0;
	int i;

	for (i = 0; i < NR_POLLERS; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].fd = self->sys;
		p[i].how = i % 4;
		p[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&p[i].thread, NULL, poller_fn,
					    &p[i]));
	}
	for (i = 0; i < NR_CHURNERS; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].dev = self->dev;
		c[i].rounds_min = stress_scale(25, 400);
		c[i].t_min = t0 + stress_scale(2, 20) * 1000000000ULL;
		c[i].t_end = t0 + stress_scale(15, 120) * 1000000000ULL;
		ASSERT_EQ(0, pthread_create(&c[i].thread, NULL, churner_fn,
					    &c[i]));
	}
	for (i = 0; i < NR_CHURNERS; i++) {
		pthread_join(c[i].thread, NULL);
		EXPECT_EQ(0, c[i].errors);
		EXPECT_EQ(0, c[i].no_hup);
		rounds += c[i].rounds;
	}
	atomic_store(&stop, 1);
	for (i = 0; i < NR_POLLERS; i++) {
		pthread_join(p[i].thread, NULL);
		EXPECT_LE(1, p[i].loops);
		wakes += p[i].wakes;
		errors += p[i].errors;
	}
	TH_LOG("%lu VMs churned, %lu wake-ups, %.1f s", rounds, wakes,
	       (now_ns() - t0) / 1e9);
	EXPECT_EQ(0, errors);
	EXPECT_LE(NR_CHURNERS * CHURN_ROUNDS_MIN, rounds);
	EXPECT_LE(1, wakes);
	/* Every VM gone; one last read and the fd is quiet. */
	EXPECT_EQ(alive, sys_stat("vms_alive"));
	ASSERT_EQ(0, read_header(self->sys));
	EXPECT_EQ(IDLE, state(self->sys));
}

TEST_HARNESS_MAIN
