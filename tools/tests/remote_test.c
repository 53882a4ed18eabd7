// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_vmfd_stats_fd_remote()'s mechanism on the host, without KVM: an
 * ioctl that returns a new fd (NS_GET_USERNS on a namespace fd) is made by
 * a child process through ptrace (statsfd__remote_ioctl_fd()), its fd is
 * taken, and the child goes on as if nothing happened: its fd table as it
 * was, and the read() it was blocked in made again (a restarted system
 * call, not EINTR).  A child caught in its own code is let run to its
 * next system call, which is made after the ioctl; one that makes none
 * within 100 ms is EAGAIN and left running; one that never stops (in
 * vfork()) is ETIMEDOUT after the call's bound, untraced after; one whose
 * injected ioctl outlasts the bound is ETIMEDOUT, its tracer left to put
 * its registers back (not killed, which would corrupt it); an ioctl
 * the fd does not know is its errno; a
 * stats or statsfd_vm kind is EINVAL.  Real KVM and QEMU 7.2: make
 * check-kvm (tools/selftests/kvm/qemu_stats_test.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/nsfs.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>

#include "statsfd.h"
#include "statsfd_priv.h"
#include "spawn.h"
#include "tap.h"

static int nfds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		n += de->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* Until @pid's current system call is @nr (at most 5 s). */
static int wait_syscall(pid_t pid, long nr)
{
	char path[64], buf[128];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "re");
		long cur = -2;

		if (f) {
			if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%ld", &cur) != 1)
				cur = -2;
			fclose(f);
		}
		if (cur == nr)
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * The child: opens its network namespace, says which fd (child_loop()),
 * then answers every byte it reads with what read() returned and the byte.
 */
static void child_answer(int in, int out)
{
	char reply[32];

	for (;;) {
		char c = 0;
		ssize_t r = read(in, &c, 1);
		int len;

		if (r == 0)
			_exit(0);
		len = snprintf(reply, sizeof(reply), "%zd %d %c", r,
			       r < 0 ? errno : 0, c ? c : '-');
		if (write(out, reply, (size_t)len) != len)
			_exit(1);
	}
}

static void child_loop(int in, int out)
{
	int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	if (write(out, &ns, sizeof(ns)) != sizeof(ns))
		_exit(1);
	child_answer(in, out);
}

/*
 * Send the child @c on @out and read its answer (child_answer()) from @in
 * into @reply ("" when none).
 */
static void poke(int out, int in, char c, char *reply, size_t size)
{
	ssize_t n = 0;

	if (write(out, &c, 1) == 1)
		n = read(in, reply, size - 1);
	reply[n > 0 ? n : 0] = '\0';
}

/*
 * Fork a child running @fn(its end of @to, its end of @from): *@to is
 * ours to write to it, *@from ours to read from it.  Return: its pid, or
 * -1 (reported) when the pipes cannot be made.
 */
static pid_t start_child(void (*fn)(int in, int out), int *to, int *from)
{
	int p2c[2], c2p[2];
	pid_t pid;

	if (pipe(p2c) || pipe(c2p)) {
		tap_ok(0, "pipes");
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		fn(p2c[0], c2p[1]);
	}
	close(p2c[0]);
	close(c2p[1]);
	*to = p2c[1];
	*from = c2p[0];
	return pid;
}

/*
 * What our fd @fd and @pid's user namespace link to, into @mine and
 * @theirs (64 bytes each, "" when unreadable): equal when @fd is our copy
 * of the fd NS_GET_USERNS made in @pid.
 */
static void theirs_userns(int fd, pid_t pid, char *mine, char *theirs)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, mine, 63);
	mine[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	n = readlink(path, theirs, 63);
	theirs[n > 0 ? n : 0] = '\0';
}

static void test_ioctl_in_child(void)
{
	int to, from, ns = -1, pidfd, fd, before, after;
	char mine[64] = "", theirs[64] = "", reply[32] = "";
	ssize_t n;
	pid_t pid;

	pid = start_child(child_loop, &to, &from);
	if (pid < 0)
		return;
	n = read(from, &ns, sizeof(ns));
	tap_ok(n == sizeof(ns) && ns >= 0, "child: its netns fd is %d", ns);
	tap_ok(!wait_syscall(pid, SYS_read), "child: blocked in read()");
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	before = nfds(pid);
	fd = statsfd__remote_ioctl_fd(pid, pidfd, ns, NS_GET_USERNS);
	if (!tap_ok(fd >= 0, "NS_GET_USERNS made by the child, its fd taken (%d)", fd))
		tap_diag("errno %d (%s)", errno, strerror(errno));
	theirs_userns(fd, pid, mine, theirs);
	tap_ok(fd >= 0 && !strcmp(mine, theirs),
	       "the fd is the child's user namespace (%s, %s)", mine, theirs);
	after = nfds(pid);
	tap_ok(before > 0 && before == after,
	       "the child's copy closed: %d fds before, %d after", before, after);
	if (fd >= 0)
		close(fd);
	/* The read() it was stopped in is made again: it gets this byte. */
	poke(to, from, 'x', reply, sizeof(reply));
	tap_ok(!strcmp(reply, "1 0 x"),
	       "the child's interrupted read() restarted and got its byte (\"%s\")", reply);

	/* An ioctl its fd does not know: the child's errno, the child fine. */
	wait_syscall(pid, SYS_read);
	errno = 0;
	fd = statsfd_vmfd_stats_fd_remote(pid, pidfd, ns, STATSFD_VMFD_KVM_VM);
	tap_ok(fd < 0 && errno == ENOTTY,
	       "KVM_GET_STATS_FD on a netns fd, in the child: ENOTTY (%s)", strerror(errno));
	poke(to, from, 'y', reply, sizeof(reply));
	tap_ok(!strcmp(reply, "1 0 y"), "the child still answers (\"%s\")", reply);
	tap_ok(nfds(pid) == before, "the child's fd table as it was (%d)", nfds(pid));

	errno = 0;
	fd = statsfd_vmfd_stats_fd_remote(pid, pidfd, ns, STATSFD_VMFD_KVM_VCPU_STATS);
	tap_ok(fd < 0 && errno == EINVAL, "a stats fd kind: EINVAL (%s)", strerror(errno));
	errno = 0;
	fd = statsfd_vmfd_stats_fd_remote(pid, pidfd, ns, STATSFD_VMFD_SFD_VM);
	tap_ok(fd < 0 && errno == EINVAL, "a statsfd_vm kind: EINVAL (%s)", strerror(errno));

	close(to);
	waitpid(pid, NULL, 0);
	close(from);
	close(pidfd);
}

/*
 * A child mostly in its own code, making a system call now and then (a
 * vCPU thread handling exits): caught outside one, it is let run to the
 * next, which is skipped for the ioctl and then made: getppid() keeps
 * answering right.
 */
static void test_between_syscalls(void)
{
	volatile long *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char mine[64] = "", theirs[64] = "";
	pid_t pid, me = getpid();
	long calls;
	int pidfd, fd;

	if (sh == MAP_FAILED) {
		tap_ok(0, "shared page");
		return;
	}
	sh[0] = -1;	/* its netns fd */
	sh[1] = 0;	/* getppid() calls */
	sh[2] = 0;	/* wrong answers */
	pid = fork();
	if (pid == 0) {
		sh[0] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		for (;;) {
			volatile int k;

			for (k = 0; k < 200000; k++)
				;
			if (syscall(SYS_getppid) != me)
				sh[2]++;
			sh[1]++;
		}
	}
	while (sh[1] < 3)
		usleep(1000);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	fd = statsfd__remote_ioctl_fd(pid, pidfd, (int)sh[0], NS_GET_USERNS);
	theirs_userns(fd, pid, mine, theirs);
	if (!tap_ok(fd >= 0 && !strcmp(mine, theirs),
		    "a thread caught in its own code: the ioctl made at its next system call (%s)",
		    mine))
		tap_diag("fd %d, errno %d (%s)", fd, errno, strerror(errno));
	if (fd >= 0)
		close(fd);
	calls = sh[1];
	usleep(50000);
	tap_ok(sh[1] > calls && !sh[2],
	       "and it runs on, its getppid() made and answered right (%ld, then %ld calls, %ld wrong)",
	       calls, (long)sh[1], (long)sh[2]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);
	munmap((void *)sh, 4096);
}

/* A child spinning in userspace: no system call within 100 ms. */
static void test_not_in_syscall(void)
{
	volatile unsigned long *count = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned long seen;
	int pidfd, fd, i;
	pid_t pid;

	if (count == MAP_FAILED) {
		tap_ok(0, "shared page");
		return;
	}
	*count = 0;
	pid = fork();
	if (pid == 0) {
		for (;;)
			(*count)++;
	}
	while (!*count)
		;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	errno = 0;
	/* It may be caught in a system call now and then (none it makes: a
	 * page fault is not one); a few tries, all EAGAIN.
	 */
	for (i = 0; i < 3; i++) {
		fd = statsfd__remote_ioctl_fd(pid, pidfd, 0, NS_GET_USERNS);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	tap_ok(fd < 0 && errno == EAGAIN,
	       "a thread that makes no system call within 100 ms: EAGAIN (%s)", strerror(errno));
	seen = *count;
	usleep(20000);
	tap_ok(*count != seen, "and it runs on (%lu, then %lu)", seen, *count);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);
	munmap((void *)count, 4096);
}

/* The state letter of /proc/PID/stat ('t': stopped by a tracer). */
static char proc_state(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return '?';
	}
	fclose(f);
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * A target that never reaches a stop: its thread waits in vfork() for a
 * child that sleeps (a killable sleep, which a ptrace interrupt does not
 * end), as any unprivileged VMM could arrange.  The call gives up after its
 * bound instead of hanging the caller, and the target goes on untraced.
 */
static void test_never_stops(void)
{
	struct timespec t0, t1;
	int pidfd, fd, ms;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		if (vfork() == 0) {
			usleep(3000000);
			_exit(0);
		}
		for (;;)
			pause();
	}
	usleep(200000);		/* in vfork() by now */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = statsfd__remote_ioctl_fd(pid, pidfd, 0, NS_GET_USERNS);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
	tap_ok(fd < 0 && errno == ETIMEDOUT && ms < 2500,
	       "a thread that never stops (in vfork()): ETIMEDOUT after its bound, not a hang (%d ms, %s)",
	       ms, strerror(errno));
	usleep(3500000);	/* the vfork child is gone: the target runs again */
	tap_ok(proc_state(pid) == 'S',
	       "and once its vfork() ends it runs on, untraced (state %c)", proc_state(pid));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);
}

/*
 * The child of test_committed_past_bound(): its ioctl(NS_GET_USERNS) waits
 * for a seccomp user notification's answer (the test's), so the system
 * call the tracer makes in it lasts as long as the test wants.  Sends its
 * netns fd and the listener's fd, then loops as child_loop().
 */
static int hold_userns_ioctls(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NS_GET_USERNS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

static void child_slow_ioctl(int in, int out)
{
	int fds[2];

	fds[0] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fds[1] = hold_userns_ioctls();
	if (write(out, fds, sizeof(fds)) != sizeof(fds))
		_exit(1);
	child_answer(in, out);
}

/*
 * Answer the held NS_GET_USERNS ioctls of listener @lfd (let them go on),
 * each within 5 s: how many were answered, of at most @n.
 */
static int let_go(int lfd, int n, pid_t *who)
{
	int i;

	for (i = 0; i < n; i++) {
		struct seccomp_notif_resp resp = { 0 };
		struct seccomp_notif req = { 0 };
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (poll(&p, 1, 5000) != 1 ||
		    ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req))
			break;
		if (who)
			*who = (pid_t)req.pid;
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (req.data.nr != SYS_ioctl ||
		    ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp))
			break;
	}
	return i;
}

/*
 * The injected ioctl outlasts the call's bound once the tracer has changed
 * the target's registers: the call is ETIMEDOUT, but the tracer is not
 * killed (nor by a SIGTERM or SIGINT, as a service stop or Ctrl-C sends)
 * and, when the ioctl returns, closes the target's new fd, puts the
 * registers back and detaches: the target's read() restarts as if nothing
 * happened.  Killing it instead would have let the target return from
 * its read() with the ioctl's fd number.
 */
static void test_committed_past_bound(void)
{
	int to, from, fds[2] = { -1, -1 }, pidfd, lfd, fd, before, i;
	pid_t pid, tracer, who;
	char reply[32] = "";
	ssize_t n;

	pid = start_child(child_slow_ioctl, &to, &from);
	if (pid < 0)
		return;
	n = read(from, fds, sizeof(fds));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	lfd = (int)syscall(SYS_pidfd_getfd, pidfd, fds[1], 0);
	if (!tap_ok(n == sizeof(fds) && lfd >= 0 && !wait_syscall(pid, SYS_read),
		    "child: its NS_GET_USERNS answered by a seccomp listener (ours), blocked in read()"))
		goto out;
	before = nfds(pid);
	errno = 0;
	fd = statsfd__remote_ioctl_fd(pid, pidfd, fds[0], NS_GET_USERNS);
	tap_ok(fd < 0 && errno == ETIMEDOUT,
	       "an injected ioctl that outlasts the bound: ETIMEDOUT (%s)", strerror(errno));
	tracer = (pid_t)proc_status(pid, "TracerPid");
	if (tracer > 0) {
		kill(tracer, SIGTERM);
		kill(tracer, SIGINT);
	}
	usleep(100000);
	tap_ok(tracer > 0 && proc_status(pid, "TracerPid") == tracer,
	       "its tracer left to finish, not killed (nor by SIGTERM, SIGINT): pid %d", tracer);
	/* The ioctl, held by seccomp, goes on now. */
	who = 0;
	n = (ssize_t)let_go(lfd, 1, &who);
	tap_ok(n == 1 && who == pid,
	       "the held ioctl was the tracer's, in the child (pid %d): let go", who);
	for (i = 0; i < 500 && proc_status(pid, "TracerPid") != 0; i++)
		usleep(10000);
	tap_ok(proc_status(pid, "TracerPid") == 0 && nfds(pid) == before,
	       "then the tracer detached and the child's copy of the fd is closed (%d fds, %d before)",
	       nfds(pid), before);
	poke(to, from, 'z', reply, sizeof(reply));
	tap_ok(!strcmp(reply, "1 0 z"),
	       "and the child's read() restarted with its registers as they were (\"%s\")", reply);
out:
	close(to);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(from);
	if (lfd >= 0)
		close(lfd);
	close(pidfd);
}

#define LEFT_MAX	8	/* remote.c's REMOTE_LEFT_MAX */

/* The tids of the calling process's threads but the main one, @n at most. */
static void other_threads(int *tids, int n)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;
	int i = 0;

	while (dir && i < n && (de = readdir(dir))) {
		int tid = atoi(de->d_name);

		if (tid > 0 && tid != getpid())
			tids[i++] = tid;
	}
	while (i < n)
		tids[i++] = 0;
	if (dir)
		closedir(dir);
}

static void *blocked_reader(void *arg)
{
	char c;

	(void)!read(*(int *)arg, &c, 1);
	return NULL;
}

/*
 * Tracers left to finish are bounded: with LEFT_MAX of them (threads of one
 * child, each in an injected ioctl held past the bound) the next call is
 * EBUSY at once, without tracing anything; once they are done, a later
 * call reaps them and runs.
 */
static void test_left_bounded(void)
{
	int c2p[2], p2c[2], msg[2 + LEFT_MAX], pidfd, lfd, fd, i, late = 0;
	pid_t pid;

	if (pipe(c2p) || pipe(p2c)) {
		tap_ok(0, "pipes");
		return;
	}
	pid = fork();
	if (pid == 0) {
		pthread_t t;

		msg[0] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		msg[1] = hold_userns_ioctls();
		for (i = 0; i < LEFT_MAX; i++)
			if (pthread_create(&t, NULL, blocked_reader, &p2c[0]))
				_exit(1);
		usleep(100000);
		other_threads(&msg[2], LEFT_MAX);
		if (write(c2p[1], msg, sizeof(msg)) != sizeof(msg))
			_exit(1);
		for (;;)
			pause();
	}
	close(c2p[1]);
	if (read(c2p[0], msg, sizeof(msg)) != sizeof(msg)) {
		tap_ok(0, "child: its threads");
		goto out;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	lfd = (int)syscall(SYS_pidfd_getfd, pidfd, msg[1], 0);
	for (i = 0; i < LEFT_MAX; i++) {
		wait_syscall(msg[2 + i], SYS_read);
		errno = 0;
		fd = statsfd__remote_ioctl_fd(msg[2 + i], pidfd, msg[0], NS_GET_USERNS);
		late += fd < 0 && errno == ETIMEDOUT;
	}
	tap_ok(late == LEFT_MAX, "%d injected ioctls held past the bound: %d ETIMEDOUT, their tracers left",
	       LEFT_MAX, late);
	errno = 0;
	fd = statsfd__remote_ioctl_fd(pid, pidfd, msg[0], NS_GET_USERNS);
	tap_ok(fd < 0 && errno == EBUSY && proc_status(pid, "TracerPid") == 0,
	       "one more while %d are left: EBUSY, its thread untraced (%s)", LEFT_MAX,
	       strerror(errno));
	tap_ok(let_go(lfd, LEFT_MAX, NULL) == LEFT_MAX, "the %d held ioctls let go", LEFT_MAX);
	for (i = 0; i < LEFT_MAX; i++) {
		int j;

		for (j = 0; j < 500 && proc_status(msg[2 + i], "TracerPid") != 0; j++)
			usleep(10000);
	}
	errno = 0;
	/* NS_GET_PARENT is not held: a netns has no parent, EINVAL. */
	fd = statsfd__remote_ioctl_fd(pid, pidfd, msg[0], NS_GET_PARENT);
	tap_ok(fd < 0 && errno == EINVAL,
	       "once they are done they are reaped: the next call runs (NS_GET_PARENT: %s)",
	       strerror(errno));
	close(lfd);
	close(pidfd);
out:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(c2p[0]);
	close(p2c[0]);
	close(p2c[1]);
}

int main(void)
{
#if defined(__x86_64__)
	test_ioctl_in_child();
	test_between_syscalls();
	test_not_in_syscall();
	test_never_stops();
	test_committed_past_bound();
	test_left_bounded();
#else
	tap_skip("remote ioctl", "x86-64 only");
#endif
	return tap_done();
}
