// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector --discover-kvm: the stats fds of VMMs that never talk
 * to the collector (stock QEMU, libvirt), taken from them.
 *
 * Every --discover-interval, each process in /proc is looked at: a process
 * holding KVM VM or vCPU fds is a VMM, followed from then on through a
 * pidfd in the epoll set (readable once it exits: all its sources are
 * dropped at once).  KVM answers KVM_GET_STATS_FD on a VM or vCPU fd only
 * in the process that created the VM (kvm->mm != current->mm is EIO), so
 * what can be taken is the stats fds the VMM holds itself ("kvm-vm-stats",
 * "kvm-vcpu-stats:N"): QEMU 8.1 and later keeps one per vCPU.  They are
 * taken with pidfd_getfd() and added like registered ones, owned by a
 * client that stands for the process, labelled with QEMU's -name.  For a
 * VM or vCPU the VMM holds no stats fd of (QEMU's VM; every one of QEMU
 * before 8.1, which opens one per query-stats and closes it), the VMM is
 * made to ask KVM itself: one of its threads, stopped with ptrace, calls
 * KVM_GET_STATS_FD (ask_vmm(), statsfd_vmfd_stats_fd_remote()).
 *
 * An fd is taken once: the fd numbers of each process are remembered with
 * the source they gave, and a number seen again is compared with that
 * source's fd by kcmp(KCMP_FILE) (the same open file: nothing to do; another
 * file: the VMM reused the number, the old source is replaced).  The inode
 * of a KVM fd cannot tell: every anon inode fd shares one inode.
 *
 * Listing /proc/PID/fd of another user's process needs CAP_DAC_READ_SEARCH
 * (the directory is 0500, owned by the process's user), which the service
 * does not keep: without it, the fds of a process whose maps show a KVM
 * vCPU are probed one by one with pidfd_getfd(), which CAP_SYS_PTRACE
 * allows, and named through /proc/self/fd; again only when its vCPUs
 * change, once every vCPU gave a source.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/kcmp.h>

#include "admit.h"
#include "discover.h"

/* The most of a command line looked at; QEMU's -name comes early. */
#define CMDLINE_MAX	(64u << 10)
/* The most fds probed in one process when /proc/PID/fd cannot be listed. */
#define PROBE_MAX	65536u

/*
 * One fd number of a followed process: the source it gave (@sid), or 0 for
 * a VM or vCPU fd that gave none, or a stats fd that could not be added
 * (not tried again).  Remembered until the process exits.  A KVM VM or
 * vCPU fd KVM refused us (EIO) is @refused, of @kind and @vcpu, until the
 * VMM is made to ask for its stats fd (ask_vmm()), at a scan after @scan
 * (the one that found it, then later ones as @tries grows); the source
 * that gave is @made from it (its file is not the fd's own).
 */
struct dfd {
	int tfd;
	uint64_t sid;
	enum statsfd_vmfd_kind kind;
	int vcpu;
	uint64_t scan;
	unsigned int tries;
	bool refused;
	bool made;
};

/**
 * struct dproc - one followed VMM process
 * @kind: epoll tag, its discovery's (the pidfd's data.ptr is the process)
 * @pid: the process
 * @pidfd: its pidfd, in the epoll set
 * @vm: its vm label (discover_vm_label())
 * @owner: stands for the process as the owner of its sources; not in the
 *	collector's list of clients (it has no connection)
 * @fds: fd numbers seen
 * @nfds: how many
 * @cap: allocated entries of @fds
 * @warned: a VM or vCPU the VMM could not be made to ask for its stats fd
 *	was reported
 * @probed: its fds were probed (/proc/PID/fd not listable) and every vCPU
 *	its maps showed then gave a source
 * @probed_sig: the vCPUs its maps showed at the last probe (maps_vcpus())
 * @next: in the list of followed processes
 */
struct dproc {
	int kind;
	pid_t pid;
	int pidfd;
	char vm[STATSFD_LABEL_MAX + 1];
	struct client owner;
	struct dfd *fds;
	unsigned int nfds, cap;
	bool warned;
	bool probed;
	uint64_t probed_sig;
	struct dproc *next;
};

/**
 * struct discover - discovery state
 * @kind: epoll tag, its provider's (the rescan timer's data.ptr is this)
 * @c: the collector
 * @proc: the proc mount point
 * @timerfd: rescans
 * @procs: followed processes
 * @stats: counters
 * @warned_denied: a refused process was reported (once: they all are alike)
 */
struct discover {
	int kind;
	struct collector *c;
	char proc[PATH_MAX];
	int timerfd;
	struct dproc *procs;
	struct discover_stats stats;
	bool warned_denied;
};

/* ---- the vm label ------------------------------------------------------- */

static void put_label(char *out, size_t size, const char *s, size_t n)
{
	size_t i;

	if (n > STATSFD_LABEL_MAX)
		n = STATSFD_LABEL_MAX;
	if (n >= size)
		n = size - 1;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		out[i] = ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\' ?
			 '_' : (char)ch;
	}
	out[n] = '\0';
}

/*
 * QEMU's -name: "[guest=]NAME[,process=P][,debug-threads=on]", with ",,"
 * standing for a comma in a value (QemuOpts); the first parameter may
 * leave out its key, which is then "guest".  Return: length written to
 * @name (NUL-terminated), 0 for none.
 */
static size_t qemu_name(const char *arg, char *name, size_t size)
{
	const char *p = arg;
	bool first = true;
	size_t found = 0;

	while (*p) {
		char val[4 * STATSFD_LABEL_MAX];
		const char *eq = NULL, *v, *q = p;
		size_t n = 0;
		bool guest;

		/* One parameter: up to a comma that is not doubled. */
		while (*q && !(*q == ',' && q[1] != ',')) {
			if (*q == '=' && !eq)
				eq = q;
			q += *q == ',' ? 2 : 1;
		}
		guest = eq ? eq - p == 5 && !strncmp(p, "guest", 5) : first;
		v = eq ? eq + 1 : p;
		for (; v < q && n < sizeof(val) - 1; v++) {
			val[n++] = *v;
			if (*v == ',')
				v++;	/* ",," */
		}
		val[n] = '\0';
		if (guest && n) {
			found = n < size ? n : size - 1;
			memcpy(name, val, found);
			name[found] = '\0';
		}
		first = false;
		p = *q ? q + 1 : q;
	}
	return found;
}

/* QEMU's -uuid: 8-4-4-4-12 hex digits. */
static bool is_uuid(const char *s)
{
	int i;

	for (i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' :
		    !((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	}
	return s[36] == '\0';
}

void discover_vm_label(const char *cmdline, size_t len, const char *comm,
		       pid_t pid, char *out, size_t size)
{
	char name[STATSFD_LABEL_MAX + 1] = "", uuid[37] = "", dflt[64];
	const char *arg = cmdline, *end = cmdline + len;
	size_t i;

	/* Each argument ends with a NUL; the last one may lack it. */
	while (arg < end) {
		const char *next = memchr(arg, '\0', (size_t)(end - arg));
		const char *val;

		if (!next)
			break;
		val = next + 1;
		if (val < end && memchr(val, '\0', (size_t)(end - val))) {
			/* QEMU takes "-opt" and "--opt" alike; the last wins. */
			if (!strcmp(arg, "-name") || !strcmp(arg, "--name"))
				qemu_name(val, name, sizeof(name));
			else if ((!strcmp(arg, "-uuid") || !strcmp(arg, "--uuid")) &&
				 is_uuid(val))
				snprintf(uuid, sizeof(uuid), "%s", val);
		}
		arg = val;
	}
	for (i = 0; uuid[i]; i++)
		if (uuid[i] >= 'A' && uuid[i] <= 'F')
			uuid[i] = (char)(uuid[i] - 'A' + 'a');
	if (name[0]) {
		put_label(out, size, name, strlen(name));
	} else if (uuid[0]) {
		put_label(out, size, uuid, strlen(uuid));
	} else {
		snprintf(dflt, sizeof(dflt), "%.16s-%d", comm, pid);
		put_label(out, size, dflt, strlen(dflt));
	}
}

/* ---- reading /proc ------------------------------------------------------ */

/* Read at most @cap - 1 bytes of @path; Return: length, or -1. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len < cap - 1) {
		ssize_t r = read(fd, buf + len, cap - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

static void proc_label(struct discover *d, pid_t pid, char *out, size_t size)
{
	char path[PATH_MAX + 32], comm[32] = "";
	char *cmd = malloc(CMDLINE_MAX);
	ssize_t len = -1;

	snprintf(path, sizeof(path), "%s/%d/comm", d->proc, pid);
	if (read_file(path, comm, sizeof(comm)) > 0)
		comm[strcspn(comm, "\n")] = '\0';
	if (cmd) {
		snprintf(path, sizeof(path), "%s/%d/cmdline", d->proc, pid);
		len = read_file(path, cmd, CMDLINE_MAX);
	}
	discover_vm_label(cmd && len > 0 ? cmd : "", len > 0 ? (size_t)len : 0,
			  comm, pid, out, size);
	free(cmd);
}

static void denied(struct discover *d, pid_t pid, const char *what, int err)
{
	d->stats.denied++;
	if (d->warned_denied && !collector_verbose)
		return;
	d->warned_denied = true;
	logmsg("discover: pid %d: %s: %s (the collector needs CAP_SYS_PTRACE: see Documentation/statsfd-collector.rst; reported once)",
	       pid, what, strerror(err));
}

/*
 * The vCPUs the maps of @pid show (QEMU maps each one's kvm_run:
 * "anon_inode:kvm-vcpu:N", maybe more than once): how many distinct
 * indices and their sum, in *@sig as count << 32 | sum.  Return: the
 * count, or -1 when the maps cannot be read.
 */
static int maps_vcpus(struct discover *d, pid_t pid, uint64_t *sig)
{
	static const char tag[] = "anon_inode:kvm-vcpu:";
	char path[PATH_MAX + 32], *line = NULL;
	unsigned int *seen = NULL, n = 0, cap = 0, i;
	uint32_t sum = 0;
	size_t lcap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/maps", d->proc, pid);
	f = fopen(path, "re");
	if (!f) {
		/* Another user's process, and no CAP_SYS_PTRACE. */
		if (errno == EACCES || errno == EPERM)
			denied(d, pid, "maps", errno);
		return -1;
	}
	while (getline(&line, &lcap, f) > 0) {
		char *t = strstr(line, tag);
		unsigned int v;

		if (!t || sscanf(t + sizeof(tag) - 1, "%u", &v) != 1)
			continue;
		for (i = 0; i < n && seen[i] != v; i++)
			;
		if (i < n)
			continue;
		if (array_grow(&seen, n, &cap, sizeof(*seen)))
			break;
		seen[n++] = v;
		sum += v;
	}
	free(seen);
	free(line);
	fclose(f);
	*sig = (uint64_t)n << 32 | sum;
	return (int)n;
}

/* The size of the fd table of @pid ("FDSize:" of its status), or 0. */
static unsigned int fd_table_size(struct discover *d, pid_t pid)
{
	char path[PATH_MAX + 32], buf[4096], *p;
	unsigned long n;

	snprintf(path, sizeof(path), "%s/%d/status", d->proc, pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nFDSize:");
	if (!p)
		return 0;
	n = strtoul(p + 8, NULL, 10);
	return n > PROBE_MAX ? PROBE_MAX : (unsigned int)n;
}

/* ---- followed processes ------------------------------------------------- */

static struct dproc *find_proc(struct discover *d, pid_t pid)
{
	struct dproc *p;

	for (p = d->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static bool exited(const struct dproc *p)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

/*
 * Follow @pid, whose fd @tfd (a KVM VM or vCPU) was just seen named
 * @link (NULL: its maps show a KVM vCPU, its fds are probed next).  The pidfd comes
 * first, then the link is read again and the command line: if @pid was
 * reused in between, all of it is about the new process, and a process
 * that exits meanwhile is seen exited (its pidfd readable) and let go.
 */
static struct dproc *follow(struct discover *d, pid_t pid, int tfd,
			    const char *link)
{
	char path[PATH_MAX + 48], again[128];
	struct epoll_event ev;
	struct dproc *p;
	struct stat st;
	ssize_t n;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->kind = d->kind;
	p->pid = pid;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0) {
		if (errno != ESRCH)
			logmsg("discover: pid %d: pidfd_open: %s", pid,
			       strerror(errno));
		free(p);
		return NULL;
	}
	if (link) {
		snprintf(path, sizeof(path), "%s/%d/fd/%d", d->proc, pid, tfd);
		n = readlink(path, again, sizeof(again) - 1);
		if (n < 0)
			goto fail;
		again[n] = '\0';
		if (strcmp(again, link))
			goto fail;
	}
	proc_label(d, pid, p->vm, sizeof(p->vm));
	if (exited(p))
		goto fail;
	snprintf(path, sizeof(path), "%s/%d", d->proc, pid);
	if (!stat(path, &st)) {
		p->owner.uid = st.st_uid;
		p->owner.gid = st.st_gid;
	}
	p->owner.kind = EP_CLIENT;
	p->owner.fd = -1;
	p->owner.discovered = true;
	p->owner.id = ++d->c->next_client_id;
	p->owner.pid = pid;
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = p };
	if (epoll_ctl(d->c->epfd, EPOLL_CTL_ADD, p->pidfd, &ev)) {
		logmsg("discover: pid %d: epoll: %s", pid, strerror(errno));
		goto fail;
	}
	p->next = d->procs;
	d->procs = p;
	d->stats.procs++;
	logmsg("discover: pid %d (vm \"%s\", uid %u): a KVM VMM, followed",
	       pid, p->vm, p->owner.uid);
	return p;
fail:
	close(p->pidfd);
	free(p);
	return NULL;
}

/* The process exited (@why): drop its sources and let it go. */
static void proc_gone(struct discover *d, struct dproc *p, const char *why)
{
	struct dproc **pp;

	logmsg("discover: pid %d (vm \"%s\") %s: dropping its %u source%s",
	       p->pid, p->vm, why, p->owner.nsources,
	       p->owner.nsources == 1 ? "" : "s");
	while (p->owner.sources)
		drop_source(d->c, p->owner.sources);
	epoll_ctl(d->c->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
	close(p->pidfd);
	for (pp = &d->procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	d->stats.procs--;
	d->stats.procs_gone++;
	free(p->fds);
	free(p);
}

static struct dfd *find_fd(struct dproc *p, int tfd)
{
	unsigned int i;

	for (i = 0; i < p->nfds; i++)
		if (p->fds[i].tfd == tfd)
			return &p->fds[i];
	return NULL;
}

static void remember_fd(struct dproc *p, int tfd, uint64_t sid)
{
	struct dfd *f = find_fd(p, tfd);

	if (!f) {
		/* Forgotten, it is only tried again at the next scan. */
		if (array_grow(&p->fds, p->nfds, &p->cap, sizeof(*p->fds)))
			return;
		f = &p->fds[p->nfds++];
		*f = (struct dfd){ .tfd = tfd };
	}
	f->sid = sid;
}

/* The source @sid of @p, if it still exists (others may drop sources). */
static struct source *find_source(struct dproc *p, uint64_t sid)
{
	struct source *s;

	for (s = p->owner.sources; sid && s; s = s->next_in_client)
		if (s->id == sid)
			return s;
	return NULL;
}

static long kcmp_file(pid_t pid1, pid_t pid2, int fd1, int fd2)
{
	return syscall(SYS_kcmp, pid1, pid2, KCMP_FILE, fd1, fd2);
}

/* What fd number @tfd of @p is, as far as discovery knows. */
enum fd_state {
	FD_SEEN,	/* known: nothing to do */
	FD_NEW,		/* never seen */
	FD_CHANGED,	/* its source's file is not the one it names now */
};

/*
 * A known number is compared with the fd of the source it gave: still the
 * same open file, or not (the VMM closed it and reused the number).  A
 * number that gave no source (a VM fd KVM refused, a source refused or
 * dropped) is not looked at again.  Without kcmp (CONFIG_KCMP off), a
 * known number is assumed unchanged.
 */
static enum fd_state fd_state(struct dproc *p, int tfd)
{
	struct dfd *f = find_fd(p, tfd);
	struct source *s;

	if (!f)
		return FD_NEW;
	if (f->made)
		return FD_SEEN;	/* its source is a file it gave, not itself */
	s = find_source(p, f->sid);
	if (s && kcmp_file(p->pid, getpid(), tfd, statsfd_fd(s->sf)) > 0)
		return FD_CHANGED;
	return FD_SEEN;
}

/*
 * @tfd of @p now names another KVM fd: drop the source its old file gave.
 * (A number reused for anything else leaves the source alone: a stats fd
 * the VMM closed still reads its VM, pinned until the VMM exits.)
 */
static void replace_fd(struct discover *d, struct dproc *p, int tfd)
{
	struct dfd *f = find_fd(p, tfd);
	struct source *s = find_source(p, f->sid);

	logmsg("discover: pid %d fd %d now names another file: source %" PRIu64 " replaced",
	       p->pid, tfd, s->id);
	drop_source(d->c, s);
	*f = p->fds[--p->nfds];
	d->stats.replaced++;
}

/*
 * Whether @fd is the same open file as a source @p already has: the
 * collector's tree of open files (a file is one source at most), not a
 * kcmp() against each of @p's sources, which made a probe of a VMM with
 * V vCPUs cost V * V system calls.
 */
static struct source *held(struct discover *d, struct dproc *p, int fd)
{
	struct source *s = source_of_file(d->c, fd);

	return s && s->owner == &p->owner ? s : NULL;
}

/*
 * @sfd (ours, consumed), the stats fd fd @tfd of @p gave: add it as a
 * source.
 */
static void add_taken(struct discover *d, struct dproc *p, int tfd, int sfd,
		      int vcpu)
{
	struct statsfd_labels l = { .vcpu = vcpu };
	struct admit_info info;
	struct source *s;
	char why[400];

	snprintf(l.provider, sizeof(l.provider), "kvm");
	snprintf(l.target, sizeof(l.target), "%s", vcpu >= 0 ? "vcpu" : "vm");
	snprintf(l.vm, sizeof(l.vm), "%s", p->vm);
	s = NULL;
	/* The same admission as a registered fd: type, caps and quotas. */
	if (admit_fd(sfd, d->c->accept_memfd, &info, why, sizeof(why))) {
		close(sfd);
		logmsg("discover: pid %d fd %d (vm \"%s\" vcpu %d): %s",
		       p->pid, tfd, p->vm, vcpu, why);
		remember_fd(p, tfd, 0);
		return;
	}
	if (add_source(d->c, &p->owner, sfd, &info, &l, why, sizeof(why), &s)) {
		/* Not tried again while the process holds this fd. */
		logmsg("discover: pid %d fd %d (vm \"%s\" vcpu %d): %s",
		       p->pid, tfd, p->vm, vcpu, why);
		remember_fd(p, tfd, 0);
		return;
	}
	d->stats.sources++;
	remember_fd(p, tfd, s->id);
}

/*
 * @local is fd @tfd of @p (ours, consumed), of @kind: add its stats fd as
 * a source.  A VM or vCPU fd KVM refuses us (EIO: not the VMM) is marked
 * for ask_vmm().
 */
static void take(struct discover *d, struct dproc *p, int tfd, int local,
		 enum statsfd_vmfd_kind kind, int vcpu)
{
	struct source *s;
	struct dfd *f;
	int sfd;

	s = held(d, p, local);
	if (s) {
		/* One open file under two numbers: one source. */
		close(local);
		remember_fd(p, tfd, s->id);
		return;
	}
	sfd = statsfd_vmfd_stats_fd(local, kind);
	close(local);
	if (sfd < 0) {
		d->stats.no_stats++;
		remember_fd(p, tfd, 0);
		f = find_fd(p, tfd);
		if (errno == EIO && f)
			*f = (struct dfd){ .tfd = tfd, .kind = kind,
					   .vcpu = vcpu, .scan = d->stats.scans,
					   .refused = true };
		else if (errno != EIO)
			logmsg("discover: pid %d fd %d: no stats fd: %s",
			       p->pid, tfd, strerror(errno));
		return;
	}
	add_taken(d, p, tfd, sfd, vcpu);
}

/* Whether @p has a source for its VM (@vcpu -1) or vCPU @vcpu. */
static bool has_source(struct dproc *p, int vcpu)
{
	struct source *s;

	for (s = p->owner.sources; s; s = s->next_in_client)
		if (s->labels.vcpu == vcpu)
			return true;
	return false;
}

/*
 * The KVM VM and vCPU fds of @p that KVM refused us (EIO), for which @p
 * holds no stats fd of its own either: QEMU before 8.1 keeps none (each
 * query-stats opens one, reads it and closes it).  @p is made to ask KVM
 * itself (statsfd_vmfd_stats_fd_remote(): one of its threads, stopped
 * with ptrace, calls KVM_GET_STATS_FD).  Called once a scan of @p saw all
 * its fds, so that a stats fd it holds is found first, and only from the
 * scan after the one that found the fd: a VMM that keeps stats fds (QEMU
 * 8.1, statsfd-vmm) may be caught between a vCPU and its stats fd, which
 * would then be a second source of the vCPU, refused.  A thread caught
 * outside a system call (EAGAIN) is tried again at the next scan; one
 * that did not stop or answer in time (ETIMEDOUT), or while too many
 * requests are still finishing (EBUSY), after 2, 4, ... 256 scans (each
 * try can hold the loop for a second or two); any other failure is logged
 * once and not tried again.
 */
static void ask_vmm(struct discover *d, struct dproc *p)
{
	unsigned int i;

	for (i = 0; i < p->nfds; i++) {
		struct dfd *f = &p->fds[i];
		int sfd;

		if (!f->refused || d->stats.scans <= f->scan)
			continue;
		if (has_source(p, f->vcpu)) {
			f->refused = false;	/* the VMM's own stats fd gave it */
			continue;
		}
		sfd = statsfd_vmfd_stats_fd_remote(p->pid, p->pidfd, f->tfd,
						   f->kind);
		if (sfd < 0 && errno == EAGAIN)
			continue;
		if (sfd < 0 && (errno == ETIMEDOUT || errno == EBUSY) &&
		    f->tries < 8) {
			f->scan = d->stats.scans + (1u << ++f->tries) - 1;
			if (collector_verbose)
				logmsg("discover: pid %d (vm \"%s\"): KVM %s fd %d: the VMM could not be made to ask for its stats fd yet (%s): again in %u scans",
				       p->pid, p->vm, f->vcpu < 0 ? "VM" : "vCPU",
				       f->tfd, strerror(errno), 1u << f->tries);
			continue;
		}
		f->refused = false;
		if (sfd < 0) {
			if (!p->warned)
				logmsg("discover: pid %d (vm \"%s\"): KVM %s fd %d: the VMM holds no stats fd for it (KVM gives one only to the VMM) and could not be made to ask for one: %s",
				       p->pid, p->vm, f->vcpu < 0 ? "VM" : "vCPU",
				       f->tfd, strerror(errno));
			p->warned = true;
			continue;
		}
		d->stats.made++;
		f->made = true;
		if (collector_verbose)
			logmsg("discover: pid %d (vm \"%s\"): KVM %s fd %d: a stats fd made by the VMM (KVM_GET_STATS_FD in one of its threads)",
			       p->pid, p->vm, f->vcpu < 0 ? "VM" : "vCPU", f->tfd);
		add_taken(d, p, f->tfd, sfd, f->vcpu);
	}
}

static bool is_kvm(enum statsfd_vmfd_kind kind)
{
	return kind >= STATSFD_VMFD_KVM_VM &&
	       kind <= STATSFD_VMFD_KVM_VCPU_STATS;
}

/*
 * Fd @tfd of the followed process @p is a KVM fd of @kind: take it unless
 * it was seen before (@local: already taken by a probe, else -1).
 */
static void saw_fd(struct discover *d, struct dproc *p, int tfd,
		   enum statsfd_vmfd_kind kind, int vcpu, int local)
{
	enum fd_state st = fd_state(p, tfd);

	if (st == FD_SEEN) {
		if (local >= 0)
			close(local);
		return;
	}
	if (local < 0) {
		local = (int)syscall(SYS_pidfd_getfd, p->pidfd, tfd, 0);
		if (local < 0) {
			if (errno == EPERM || errno == EACCES)
				denied(d, p->pid, "pidfd_getfd", errno);
			return;	/* else closed meanwhile, or the process exited */
		}
		d->stats.fds_taken++;
	}
	if (st == FD_CHANGED)
		replace_fd(d, p, tfd);
	take(d, p, tfd, local, kind, kind == STATSFD_VMFD_KVM_VM ||
	     kind == STATSFD_VMFD_KVM_VM_STATS ? -1 : vcpu);
}

/*
 * /proc/PID/fd cannot be listed (another user's process, and no
 * CAP_DAC_READ_SEARCH): if its maps show a KVM vCPU, take each of its fds
 * with pidfd_getfd() and read its name from our own /proc/self/fd.
 */
static void probe_fds(struct discover *d, struct dproc *p, pid_t pid)
{
	unsigned int size, tfd, nvcpus = 0, nprobed = 0;
	struct source *s;
	uint64_t sig = 0;
	int nmaps;

	nmaps = maps_vcpus(d, pid, &sig);
	if (p && p->probed && sig == p->probed_sig)
		return;	/* no vCPU came or went since a complete probe */
	if (!p) {
		if (nmaps <= 0)
			return;
		p = follow(d, pid, -1, NULL);
		if (!p)
			return;
		logmsg("discover: pid %d: %s/%d/fd cannot be listed (that takes CAP_DAC_READ_SEARCH): its fds are probed with pidfd_getfd()",
		       pid, d->proc, pid);
	}
	size = fd_table_size(d, pid);
	for (tfd = 0; tfd < size; tfd++) {
		enum statsfd_vmfd_kind kind;
		char self[64], link[128];
		int local, vcpu;
		ssize_t n;

		if (fd_state(p, (int)tfd) == FD_SEEN)
			continue;
		local = (int)syscall(SYS_pidfd_getfd, p->pidfd, tfd, 0);
		if (local < 0) {
			if (errno == EPERM || errno == EACCES) {
				denied(d, pid, "pidfd_getfd", errno);
				break;
			}
			if (errno == ESRCH)
				break;
			continue;	/* EBADF: no such fd */
		}
		d->stats.fds_taken++;
		nprobed++;
		snprintf(self, sizeof(self), "/proc/self/fd/%d", local);
		n = readlink(self, link, sizeof(link) - 1);
		kind = STATSFD_VMFD_NONE;
		if (n >= 0) {
			link[n] = '\0';
			kind = statsfd_vmfd_classify(link, &vcpu);
		}
		if (is_kvm(kind))
			saw_fd(d, p, (int)tfd, kind, vcpu, local);
		else
			close(local);
	}
	ask_vmm(d, p);
	/*
	 * Complete when every mapped vCPU gave a source: until it changes,
	 * later scans read the maps only.  Else (a vCPU caught between its
	 * mapping and its stats fd, a VMM keeping no stats fds) probe again.
	 */
	for (s = p->owner.sources; s; s = s->next_in_client)
		nvcpus += s->labels.vcpu >= 0;
	p->probed = nmaps >= 0 && nvcpus >= (unsigned int)nmaps;
	p->probed_sig = sig;
	if (collector_verbose)
		logmsg("discover: pid %d: %u fds probed, %d vCPUs mapped, %u with a source%s",
		       pid, nprobed, nmaps, nvcpus,
		       p->probed ? "" : ": probed again at the next scan");
}

/* A KVM fd found in /proc/PID/fd. */
struct kvm_fd {
	int tfd;
	enum statsfd_vmfd_kind kind;
	int vcpu;
};

/*
 * The KVM fds of @pid, from /proc/PID/fd.  Only a process holding a KVM VM
 * or vCPU fd is a VMM: one holding stats fds alone took them from a VMM
 * (`statsfd watch --pid`, another collector) and is left alone.
 */
static void scan_pid(struct discover *d, pid_t pid)
{
	struct dproc *p = find_proc(d, pid);
	char path[PATH_MAX + 64], link[128], vmm_link[128] = "";
	struct kvm_fd *fds = NULL;
	unsigned int n = 0, cap = 0, i;
	int vmm_tfd = -1;
	struct dirent *de;
	DIR *dir;

	/* Exited and not yet reaped by its pidfd event: that comes next. */
	if (p && exited(p))
		return;
	snprintf(path, sizeof(path), "%s/%d/fd", d->proc, pid);
	dir = opendir(path);
	if (!dir) {
		if (errno == EACCES || errno == EPERM)
			probe_fds(d, p, pid);
		return;
	}
	while ((de = readdir(dir))) {
		enum statsfd_vmfd_kind kind;
		char *end;
		long tfd = strtol(de->d_name, &end, 10);
		ssize_t len;
		int vcpu;

		if (*end || end == de->d_name || tfd < 0 || tfd > INT_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%d/fd/%ld", d->proc, pid, tfd);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		kind = statsfd_vmfd_classify(link, &vcpu);
		if (!is_kvm(kind))
			continue;
		if (vmm_tfd < 0 && (kind == STATSFD_VMFD_KVM_VM ||
				    kind == STATSFD_VMFD_KVM_VCPU)) {
			vmm_tfd = (int)tfd;
			snprintf(vmm_link, sizeof(vmm_link), "%s", link);
		}
		/* The rest waits for the next scan. */
		if (array_grow(&fds, n, &cap, sizeof(*fds)))
			break;
		fds[n++] = (struct kvm_fd){ (int)tfd, kind, vcpu };
	}
	closedir(dir);
	if (!p && vmm_tfd >= 0)
		p = follow(d, pid, vmm_tfd, vmm_link);
	for (i = 0; p && i < n; i++)
		saw_fd(d, p, fds[i].tfd, fds[i].kind, fds[i].vcpu, -1);
	if (p)
		ask_vmm(d, p);
	free(fds);
}

void discover_scan(struct discover *d)
{
	pid_t me = getpid();
	struct dirent *de;
	DIR *dir;

	d->stats.scans++;
	dir = opendir(d->proc);
	if (!dir) {
		logmsg("discover: %s: %s", d->proc, strerror(errno));
		return;
	}
	while ((de = readdir(dir))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || end == de->d_name || pid <= 0 || pid > INT_MAX ||
		    pid == me)
			continue;
		scan_pid(d, (pid_t)pid);
	}
	closedir(dir);
}

/* ---- capabilities ------------------------------------------------------- */

int discover_keep_caps(void)
{
	if (geteuid() != 0)
		return 0;
	return prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
}

/*
 * Not root (any more): keep CAP_SYS_PTRACE, if permitted, and nothing
 * else.  Root (--user root) keeps what it has.  Nothing is changed when
 * nothing else is permitted (a service given CAP_SYS_PTRACE alone, as
 * ambient capability): its seccomp filter may well forbid capset().
 */
static int reduce_caps(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { { 0 } };
	const uint32_t ptrace = 1u << CAP_SYS_PTRACE;	/* in data[0] */

	if (geteuid() == 0)
		return 0;
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	if (syscall(SYS_capget, &h, data))
		return -1;
	if (!(data[0].permitted & ptrace))
		logmsg("discover: no CAP_SYS_PTRACE: only the VMMs of uid %u can be discovered",
		       geteuid());
	if (!(data[0].permitted & ~ptrace) && !data[1].permitted)
		return 0;
	data[0].permitted &= ptrace;
	data[0].effective = data[0].permitted;
	data[0].inheritable = 0;
	data[1] = (struct __user_cap_data_struct){ 0 };
	return (int)syscall(SYS_capset, &h, data);
}

/* ---- the daemon's side -------------------------------------------------- */

static struct discover *discover_open(struct collector *c, const char *proc,
				      unsigned int interval_ms, int kind)
{
	struct discover *d;

	if (reduce_caps()) {
		logmsg("discover: keeping CAP_SYS_PTRACE: %s", strerror(errno));
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->kind = kind;
	d->c = c;
	snprintf(d->proc, sizeof(d->proc), "%s", proc);
	d->timerfd = interval_timer(c, interval_ms, d);
	if (d->timerfd < 0) {
		logmsg("discover: timer: %s", strerror(errno));
		free(d);
		return NULL;
	}
	discover_scan(d);
	logmsg("discover: following %" PRIu64 " KVM VMM%s (%" PRIu64 " sources), scanning %s every %u ms",
	       d->stats.procs, d->stats.procs == 1 ? "" : "s",
	       d->stats.sources, d->proc, interval_ms);
	return d;
}

struct discover *discover_start(struct collector *c, const char *proc,
				unsigned int interval_ms)
{
	return discover_open(c, proc, interval_ms, EP_DISCOVER);
}

void discover_event(struct discover *d, void *ptr, uint32_t events)
{
	uint64_t ticks;

	if (ptr == d) {
		if (read(d->timerfd, &ticks, sizeof(ticks)) > 0)
			discover_scan(d);
		return;
	}
	/* A pidfd polls readable once its process has exited. */
	proc_gone(d, ptr, "exited");
}

void discover_stop(struct discover *d)
{
	if (!d)
		return;
	while (d->procs)
		proc_gone(d, d->procs, "no longer followed (collector exiting)");
	epoll_ctl(d->c->epfd, EPOLL_CTL_DEL, d->timerfd, NULL);
	close(d->timerfd);
	free(d);
}

const struct discover_stats *discover_get_stats(const struct discover *d)
{
	return &d->stats;
}

/* ---- --discover-kvm as a source provider --------------------------------- */

static bool discover_kvm;

static const struct opt discover_opts[] = {
	{ .name = "discover-kvm", .type = OPT_FLAG },
	OPT_END,
};

static const struct opt_table discover_opt_table = {
	discover_opts, &discover_kvm,
};

/* Before root is dropped: keep the capabilities across the switch. */
static int discover_provider_setup(struct collector *c, struct provider *p)
{
	return discover_kvm ? discover_keep_caps() : 0;
}

static int discover_provider_start(struct collector *c, struct provider *p)
{
	if (!discover_kvm)
		return 0;
	p->state = discover_open(c, "/proc", provider_rescan_ms ?:
				 DISCOVER_INTERVAL_MS, p->kind);
	return p->state ? 0 : -1;
}

static void discover_provider_event(struct provider *p, void *ptr,
				    uint32_t events)
{
	discover_event(p->state, ptr, events);
}

static void discover_provider_stop(struct provider *p)
{
	discover_stop(p->state);
	p->state = NULL;
}

const struct source_provider discover_provider = {
	.name = "discover-kvm",
	.opts = &discover_opt_table,
	.enabled = &discover_kvm,
	.rescans = true,
	.setup = discover_provider_setup,
	.start = discover_provider_start,
	.event = discover_provider_event,
	.stop = discover_provider_stop,
};
