// SPDX-License-Identifier: GPL-2.0
/*
 * libstatsfd: KVM_GET_STATS_FD asked by the VMM itself, for a VMM that
 * keeps no stats fds (QEMU before 8.1 opens one per query-stats, reads it
 * and closes it).
 *
 * KVM answers an ioctl on a VM or vCPU fd only in the process that created
 * the VM (kvm->mm != current->mm is EIO), so the ioctl is made by one of
 * the VMM's threads: it is stopped with ptrace (PTRACE_SEIZE and
 * PTRACE_INTERRUPT, which CAP_SYS_PTRACE allows as it allows
 * pidfd_getfd()), made to run ioctl(fd, KVM_GET_STATS_FD) and then close()
 * through a syscall instruction of its own (the one it stopped after),
 * its new fd is taken with pidfd_getfd() in between, and its registers are
 * put back.  As CRIU does, a system call the stop interrupted is set up to
 * be made again, as the kernel would have restarted it.  A thread stopped
 * in its own code is let run to its next system call, which is skipped
 * until ours are done, then made.
 *
 * Which thread: a vCPU ioctl takes the vCPU's mutex, which KVM_RUN holds,
 * so a vCPU fd is asked in the thread blocked in KVM_RUN on it (stopping
 * it kicks it out of the guest, as QEMU's own run_on_cpu() does; QEMU
 * enters the guest again on the EINTR), found in /proc/PID/task/TID/syscall;
 * else, and for a VM fd, the main thread.  x86-64 only.  All of it runs in a
 * short-lived child, bounded as the comment above REMOTE_TIMEOUT_MS says.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "statsfd.h"
#include "statsfd_priv.h"

#if defined(__x86_64__)
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

/* The kernel's restart codes (include/linux/errno.h), not in userspace's. */
#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516
/* x86-64's syscall instruction, 0f 05, as a little-endian word. */
#define SYSCALL_INSN		0x050f
/* How long a thread running its own code is given to make a system call. */
#define NEXT_SYSCALL_MS		100

/*
 * The ptrace work is done by a child of the caller's, bounded without ever
 * hurting the target:
 *
 * - Until it changes the target's registers, it may be killed: a thread
 *   that never reaches a stop (one in an uninterruptible or killable
 *   sleep, such as a vfork() parent, which an unprivileged VMM can
 *   arrange) must not hang the caller, a collector's single loop.  When a
 *   tracer dies the kernel detaches its tracees: the target goes on as it
 *   was (a system call the stop interrupted returns EINTR or restarts).
 *   The bound, REMOTE_TIMEOUT_MS, runs from the child's REMOTE_READY:
 *   forking a large caller can take longer than the target does (half a
 *   second in make check-kvm's KASAN guest).
 * - Once it has changed them, killing it would let the target go on with
 *   our registers, in the middle of a system call of ours (a VMM's vCPU
 *   thread returning from KVM_RUN with an fd number in rax).  So it asks
 *   before its first change (REMOTE_COMMIT), and goes on only if the
 *   caller has not given up (REMOTE_GO); from then on it is never killed:
 *   past REMOTE_COMMIT_MS the caller stops waiting (ETIMEDOUT) and leaves
 *   it to finish, put the registers back and exit, and reaps it at a later
 *   call (remote_left[]).  It blocks every signal it can, so that a signal
 *   to the caller's process group or cgroup (Ctrl-C, a service stop)
 *   cannot end it half way, and holds none of the caller's fds (a
 *   collector's listening socket must not outlive the collector in it).
 *   A target thread whose injected system call never returns keeps one
 *   such child asleep; at most REMOTE_LEFT_MAX are left at once, after
 *   which calls fail with EBUSY until one has finished.
 */
#define REMOTE_READY_MS		10000
#define REMOTE_TIMEOUT_MS	1000
#define REMOTE_COMMIT_MS	1000
#define REMOTE_LEFT_MAX		8

enum remote_msg {
	REMOTE_READY,		/* tracer -> caller: started */
	REMOTE_COMMIT,		/* tracer -> caller: about to change registers */
	REMOTE_DONE,		/* tracer -> caller: errno, its fd when 0 */
	REMOTE_GO,		/* caller -> tracer: go on */
};

struct remote_link {
	int sock;
	bool committed;
};

/* One message @kind with @err, and @fd (SCM_RIGHTS) when it is >= 0. */
static int remote_send(int sock, int kind, int err, int fd)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	int m[2] = { kind, err };
	struct iovec iov = { m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		msg.msg_control = ctl;
		msg.msg_controllen = sizeof(ctl);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == sizeof(m) ? 0 : -1;
}

/*
 * The next message within @ms (-1: no bound): its kind, *@err and *@fd
 * (-1 if none came with it).  Return: the kind, or -1 with errno
 * (ETIMEDOUT, EPIPE when the other end is gone).
 */
static int remote_recv(int sock, int ms, int *err, int *fd)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	int m[2];
	struct iovec iov = { m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct cmsghdr *c;
	int n;

	*fd = -1;
	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return errno = n ? errno : ETIMEDOUT, -1;
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(m))
		return errno = EPIPE, -1;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	*err = m[1];
	return m[0];
}

/*
 * In the tracer, before its first change of the target's registers: go on
 * only if the caller, told so, says to.  Return: 0, or -ECANCELED (the
 * caller gave up: nothing was changed, the target is only detached).
 */
static int remote_commit(struct remote_link *l)
{
	int err, fd;

	if (l->committed)
		return 0;
	if (remote_send(l->sock, REMOTE_COMMIT, 0, -1) ||
	    remote_recv(l->sock, -1, &err, &fd) != REMOTE_GO)
		return -ECANCELED;
	l->committed = true;
	return 0;
}

/* The next stop of the traced @tid; -1 with errno if it is gone. */
static int wait_stop(pid_t tid, int *status)
{
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL);

		if (r == tid && WIFSTOPPED(*status))
			return 0;
		if (r == tid) {
			errno = ESRCH;	/* it exited */
			return -1;
		}
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Whether the thread @tid is in ioctl(@fd, @req), from its registers: it
 * is stopped for a moment (seized, interrupted, let go unchanged, as a
 * debugger attaching does), for a VMM of another user, whose
 * /proc/PID/task/TID/syscall only CAP_DAC_OVERRIDE could read.
 */
static bool regs_in_ioctl(pid_t tid, int fd, unsigned long req)
{
	struct user_regs_struct r;
	bool in = false;
	int st = 0;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return false;
	if (!ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) && !wait_stop(tid, &st) &&
	    st >> 16 == PTRACE_EVENT_STOP && !ptrace(PTRACE_GETREGS, tid, NULL, &r))
		in = (long)r.orig_rax == SYS_ioctl && r.rdi == (unsigned long)fd &&
		     r.rsi == req;
	/* A signal's stop instead: it is delivered as the thread goes on. */
	ptrace(PTRACE_DETACH, tid, NULL,
	       (void *)(long)(WIFSTOPPED(st) && st >> 16 != PTRACE_EVENT_STOP ?
			      WSTOPSIG(st) : 0));
	return in;
}

/*
 * The thread of @pid whose current system call is ioctl(@fd, @req), else
 * @pid: /proc/PID/task/TID/syscall ("NR ARG0 ARG1 ...", in hex but NR),
 * or where it cannot be read, the thread's registers (regs_in_ioctl()).
 */
static pid_t thread_in_ioctl(pid_t pid, int fd, unsigned long req)
{
	char path[64], buf[256];
	struct dirent *de;
	pid_t found = pid;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return pid;
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		unsigned long a0, a1;
		FILE *f;
		long nr;
		int n;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
		f = fopen(path, "re");
		if (!f) {
			if ((errno == EACCES || errno == EPERM) &&
			    regs_in_ioctl(tid, fd, req)) {
				found = tid;
				break;
			}
			continue;
		}
		n = fgets(buf, sizeof(buf), f) ?
		    sscanf(buf, "%ld %lx %lx", &nr, &a0, &a1) : 0;
		fclose(f);
		if (n == 3 && nr == SYS_ioctl && a0 == (unsigned long)fd &&
		    a1 == req) {
			found = tid;
			break;
		}
	}
	closedir(dir);
	return found;
}

/*
 * The next stop of the traced @tid within @ms milliseconds; past that it
 * is stopped (PTRACE_INTERRUPT) and -1 is returned with errno EAGAIN.
 */
static int wait_stop_ms(pid_t tid, int *status, int ms)
{
	struct timespec tick = { 0, 1000000 };
	int i;

	for (i = 0; i < ms; i++) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid && WIFSTOPPED(*status))
			return 0;
		if (r == tid || (r < 0 && errno != EINTR)) {
			errno = r < 0 ? errno : ESRCH;
			return -1;
		}
		nanosleep(&tick, NULL);
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) || wait_stop(tid, status))
		return -1;
	errno = EAGAIN;
	return -1;
}

/*
 * Run system call @nr(@a0, @a1) in the stopped @tid, through the syscall
 * instruction at @ip, from its registers @base.  Return: its result (a
 * negative errno from the kernel), or -errno when the tracing failed,
 * with *@sig a signal that came instead (to be delivered on detach).
 */
static long run_syscall(pid_t tid, const struct user_regs_struct *base,
			unsigned long ip, long nr, long a0, long a1, int *sig)
{
	struct user_regs_struct r = *base;
	int i, st;

	r.rip = ip;
	r.rax = nr;
	r.orig_rax = -1;	/* no restart of what it was doing */
	r.rdi = a0;
	r.rsi = a1;
	r.rdx = 0;
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r))
		return -errno;
	/* Its entry, then its exit. */
	for (i = 0; i < 2; i++) {
		if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) ||
		    wait_stop(tid, &st))
			return -errno;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			*sig = WSTOPSIG(st);
			return -EINTR;
		}
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
		return -errno;
	return (long)r.rax;
}

/*
 * @tid, just stopped: its registers in *@saved as they are to be put back,
 * and the address of a syscall instruction in *@ip.  Return: 0, or -EAGAIN
 * when it stopped outside a system call (try again later).
 */
static int prepare(pid_t tid, struct user_regs_struct *saved,
		   unsigned long *ip)
{
	long word;

	if (ptrace(PTRACE_GETREGS, tid, NULL, saved))
		return -errno;
	if ((long)saved->orig_rax < 0)
		return -EAGAIN;
	*ip = saved->rip - 2;
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *)*ip, NULL);
	if (errno || (word & 0xffff) != SYSCALL_INSN)
		return -EAGAIN;
	/* What the kernel does when no handler runs (arch_do_signal_or_restart()). */
	switch ((long)saved->rax) {
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
		saved->rax = saved->orig_rax;
		saved->rip -= 2;
		break;
	case -ERESTART_RESTARTBLOCK:
		saved->rax = -EINTR;
		break;
	}
	saved->orig_rax = -1;
	return 0;
}

/*
 * @tid stopped outside a system call, in its own code (a vCPU thread
 * handling an exit, SeaBIOS's port I/O): let it run to its next one (the
 * vCPU's next KVM_RUN), which is skipped at its entry stop and set up in
 * *@saved to be made again when @tid goes on; *@ip is its syscall
 * instruction.  A signal that comes first is delivered (*@sig).  Return:
 * 0 with @tid at the skipped call's exit stop; -EAGAIN when it makes none
 * within NEXT_SYSCALL_MS (it is stopped again), else -errno.
 */
static int to_next_syscall(struct remote_link *l, pid_t tid,
			   struct user_regs_struct *saved, unsigned long *ip,
			   int *sig)
{
	struct user_regs_struct r;
	int i, st;
	long word;

	for (i = 0;; i++) {
		if (i == 16 ||
		    ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)*sig))
			return i == 16 ? -EAGAIN : -errno;
		*sig = 0;
		if (wait_stop_ms(tid, &st, NEXT_SYSCALL_MS))
			return -errno;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80))
			break;
		if (st >> 16 != PTRACE_EVENT_STOP)
			*sig = WSTOPSIG(st);
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, saved))
		return -errno;
	r = *saved;
	r.orig_rax = -1;	/* skipped: no system call -1 */
	/* Put back as the kernel restarts a call: made when it goes on. */
	saved->rax = saved->orig_rax;
	saved->rip -= 2;
	saved->orig_rax = -1;
	*ip = saved->rip;
	if (remote_commit(l))
		return -ECANCELED;
	/* Committed: the caller puts *@saved back, whatever comes now. */
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r) ||
	    ptrace(PTRACE_SYSCALL, tid, NULL, NULL) || wait_stop(tid, &st))
		return -errno;
	if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
		*sig = WSTOPSIG(st);
		return -EAGAIN;
	}
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *)*ip, NULL);
	if (errno || (word & 0xffff) != SYSCALL_INSN)
		return -EAGAIN;
	return 0;
}

static int remote_ioctl_traced(struct remote_link *l, pid_t tid, int pidfd,
			       int fd, unsigned long req)
{
	struct user_regs_struct saved;
	int st, sig = 0, local = -1, i;
	unsigned long ip = 0;
	long ret, tfd;

	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)PTRACE_O_TRACESYSGOOD))
		return -1;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		ret = -errno;
		goto detach;
	}
	/* Signals that come first are passed on; then the interrupt's stop. */
	for (i = 0;; i++) {
		if (wait_stop(tid, &st)) {
			ret = -errno;
			goto detach;
		}
		if (st >> 16 == PTRACE_EVENT_STOP)
			break;
		if (i == 16 || ptrace(PTRACE_CONT, tid, NULL,
				      (void *)(long)WSTOPSIG(st))) {
			ret = -EAGAIN;
			goto detach;
		}
	}
	ret = prepare(tid, &saved, &ip);
	if (ret == -EAGAIN)
		ret = to_next_syscall(l, tid, &saved, &ip, &sig);
	else if (!ret && remote_commit(l))
		ret = -ECANCELED;
	if (!ret) {
		tfd = run_syscall(tid, &saved, ip, SYS_ioctl, fd, (long)req, &sig);
		ret = tfd;
		if (tfd >= 0) {
			local = (int)syscall(SYS_pidfd_getfd, pidfd, (int)tfd, 0);
			ret = local < 0 ? -errno : 0;
			/* Its copy is closed, whatever came of ours. */
			if (!sig)
				run_syscall(tid, &saved, ip, SYS_close, tfd, 0, &sig);
		}
	}
	/* Changed (committed): its registers as they were, or restarting. */
	if (l->committed)
		ptrace(PTRACE_SETREGS, tid, NULL, &saved);
detach:
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
	if (ret < 0) {
		if (local >= 0)
			close(local);
		errno = (int)-ret;
		return -1;
	}
	return local;
}

/* Close every fd but @a and @b (the tracer holds no fd of the caller's). */
static void close_all_but(int a, int b)
{
	unsigned int lo = (unsigned int)(a < b ? a : b);
	unsigned int hi = (unsigned int)(a < b ? b : a);

	if (lo > 0)
		syscall(SYS_close_range, 0U, lo - 1, 0U);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0U);
	syscall(SYS_close_range, hi + 1, ~0U, 0U);
}

static void remote_child(int sock, pid_t pid, int pidfd, int fd,
			 unsigned long req, unsigned long find)
{
	struct remote_link l = { .sock = sock };
	sigset_t all;
	int local, err;
	pid_t tid;

	close_all_but(sock, pidfd);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	if (remote_send(sock, REMOTE_READY, 0, -1))
		_exit(1);
	tid = find ? thread_in_ioctl(pid, fd, find) : pid;
	local = remote_ioctl_traced(&l, tid, pidfd, fd, req);
	err = local < 0 ? errno : 0;
	/* Past the caller's bound nobody reads it: our copy goes as we exit. */
	_exit(remote_send(sock, REMOTE_DONE, err, local) ? 1 : 0);
}

/* Tracers left to finish (past REMOTE_COMMIT_MS), not yet reaped. */
static pid_t remote_left[REMOTE_LEFT_MAX];
static pthread_mutex_t remote_left_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Reap the left tracers that are done (or that the caller reaped itself:
 * ECHILD), and leave @child (> 0) among them.  Return: whether a slot is
 * free afterwards (@child 0), or whether @child found one.
 */
static bool remote_leave(pid_t child)
{
	bool ok = false;
	unsigned int i;

	pthread_mutex_lock(&remote_left_lock);
	for (i = 0; i < REMOTE_LEFT_MAX; i++) {
		pid_t r;

		if (remote_left[i]) {
			r = waitpid(remote_left[i], NULL, WNOHANG);
			if (r == remote_left[i] || (r < 0 && errno == ECHILD))
				remote_left[i] = 0;
		}
		if (!remote_left[i] && !ok) {
			ok = true;
			if (child > 0)
				remote_left[i] = child;
		}
	}
	pthread_mutex_unlock(&remote_left_lock);
	return ok;
}

/*
 * The caller's side: a tracer started, killed if it has not committed
 * within REMOTE_TIMEOUT_MS of its start, waited for REMOTE_COMMIT_MS more
 * if it has, then left (remote_leave()).  Return: the fd it took, or -1
 * with errno (the target's, ETIMEDOUT, or EBUSY with too many left).
 */
static int remote_bounded(pid_t pid, int pidfd, int fd, unsigned long req,
			  unsigned long find)
{
	int sv[2], err = EIO, got = -1, kind, ret = -1;
	pid_t child;

	if (!remote_leave(0))
		return errno = EBUSY, -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	child = fork();
	if (child < 0) {
		err = errno;
		close(sv[0]);
		close(sv[1]);
		return errno = err, -1;
	}
	if (!child) {
		close(sv[0]);
		remote_child(sv[1], pid, pidfd, fd, req, find);
	}
	close(sv[1]);
	/* Ours until reaped, so its pid cannot be another process's. */
	kind = remote_recv(sv[0], REMOTE_READY_MS, &err, &got);
	if (kind == REMOTE_READY)
		kind = remote_recv(sv[0], REMOTE_TIMEOUT_MS, &err, &got);
	if (kind == REMOTE_COMMIT) {
		if (remote_send(sv[0], REMOTE_GO, 0, -1))
			kind = -1, errno = EIO;
		else
			kind = remote_recv(sv[0], REMOTE_COMMIT_MS, &err, &got);
		if (kind < 0) {
			/* Not killed: it puts the target's registers back. */
			err = errno;
			close(sv[0]);
			/*
			 * Without a slot (other threads' calls took them
			 * meanwhile) it stays a zombie once done: never wait.
			 */
			remote_leave(child);
			return errno = err, -1;
		}
	} else if (kind != REMOTE_DONE) {
		/* It has changed nothing yet: killing it only detaches. */
		err = kind < 0 ? errno : EIO;
		kill(child, SIGKILL);
	}
	close(sv[0]);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	if (kind != REMOTE_DONE)
		err = kind < 0 ? err : EIO;
	else if (!err && got < 0)
		err = EIO;
	else if (!err)
		ret = got, got = -1;
	if (got >= 0)
		close(got);
	if (ret < 0)
		errno = err;
	return ret;
}

int statsfd__remote_ioctl_fd(pid_t tid, int pidfd, int fd, unsigned long req)
{
	return remote_bounded(tid, pidfd, fd, req, 0);
}

int statsfd_vmfd_stats_fd_remote(pid_t pid, int pidfd, int fd,
				 enum statsfd_vmfd_kind kind)
{
	if (kind != STATSFD_VMFD_KVM_VCPU && kind != STATSFD_VMFD_KVM_VM)
		return errno = EINVAL, -1;
	return remote_bounded(pid, pidfd, fd, KVM_GET_STATS_FD,
			      kind == STATSFD_VMFD_KVM_VCPU ? KVM_RUN : 0);
}
#else
int statsfd__remote_ioctl_fd(pid_t tid, int pidfd, int fd, unsigned long req)
{
	(void)tid, (void)pidfd, (void)fd, (void)req;
	errno = ENOSYS;
	return -1;
}

int statsfd_vmfd_stats_fd_remote(pid_t pid, int pidfd, int fd,
				 enum statsfd_vmfd_kind kind)
{
	(void)pid, (void)pidfd, (void)fd, (void)kind;
	errno = ENOSYS;
	return -1;
}
#endif
