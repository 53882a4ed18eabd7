// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd CLI: finding stats fds.  From the statsfd_vm device, from the VM
 * and vCPU fds of a running VMM (KVM or statsfd_vm, taken with
 * pidfd_getfd()), from an inherited fd, from a unix socket, from a file,
 * or from the host device (--host).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <linux/statsfd_vm.h>

#include "cli.h"
#include "statsfd_client.h"

#define PERM_HINT							\
	"statsfd needs ptrace permission over the VMM: run as its user "\
	"(with kernel.yama.ptrace_scope=0) or as root (CAP_SYS_PTRACE)"

/**
 * cli_describe() - what a source is, for the messages and the tables
 * @src: the source
 * @buf: where the text goes, "provider P, target T[, vm V][, vcpu N]" and
 *	a host source's CPU or device
 * @len: its size; the text is cut to fit
 */
void cli_describe(const struct cli_source *src, char *buf, size_t len)
{
	const struct statsfd_labels *l = &src->labels;
	int n;

	n = snprintf(buf, len, "provider %s, target %s", l->provider, l->target);
	if (l->vm[0] && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", vm %s", l->vm);
	if (l->vcpu >= 0 && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", vcpu %d", l->vcpu);
	if (src->host && src->hobj.kind != STATSFD_HOST_NODE && n >= 0 &&
	    (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", %s %s",
			 src->hobj.kind == STATSFD_HOST_CPU ? "cpu" : "device",
			 src->hobj.name);
}

/* The labels of a host source: provider statsfd_host, its kind's target. */
static void host_labels(struct cli_source *src)
{
	struct statsfd_labels *l = &src->labels;

	memset(l, 0, sizeof(*l));
	snprintf(l->provider, sizeof(l->provider), "statsfd_host");
	snprintf(l->target, sizeof(l->target), "%s",
		 statsfd_host_kind_name(src->hobj.kind));
	l->vcpu = -1;
}

/* A host stats fd, or its image, by its id: labelled as such. */
static void mark_host(struct cli_source *src)
{
	src->host = statsfd_host_id_parse(statsfd_id(src->sf), &src->hobj);
	if (src->host)
		host_labels(src);
}

int cli_add_handle(struct cli_sources *s, struct statsfd *sf,
		   const struct statsfd_labels *l, const char *origin)
{
	struct cli_source *src;

	if (s->n == s->cap) {
		unsigned int cap = s->cap ? s->cap * 2 : 16;
		struct cli_source *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			goto nomem;
		s->v = v;
		s->cap = cap;
	}
	src = &s->v[s->n];
	memset(src, 0, sizeof(*src));
	src->sf = sf;
	src->labels = *l;
	mark_host(src);
	snprintf(src->origin, sizeof(src->origin), "%s", origin);
	src->cur = calloc(1, statsfd_data_size(sf) + 8);
	src->prev = calloc(1, statsfd_data_size(sf) + 8);
	if (!src->cur || !src->prev) {
		free(src->cur);
		free(src->prev);
		goto nomem;
	}
	s->n++;
	return 0;
nomem:
	fprintf(stderr, "statsfd: out of memory\n");
	statsfd_close(sf);
	return -ENOMEM;
}

void cli_free_sources(struct cli_sources *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		statsfd_close(s->v[i].sf);
		statsfd_close(s->v[i].ev);
		free(s->v[i].cur);
		free(s->v[i].prev);
	}
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* Close source @i and remove it, keeping the order of the others. */
void cli_drop_source(struct cli_sources *s, unsigned int i)
{
	struct cli_source *src = &s->v[i];

	statsfd_close(src->sf);
	statsfd_close(src->ev);
	free(src->cur);
	free(src->prev);
	memmove(src, src + 1, (s->n - i - 1) * sizeof(*src));
	s->n--;
}

/*
 * Parse, label and add a freshly obtained stats fd (always consumed); @pid
 * is the process it was found in (0 for none): a VM's children changing
 * makes `watch` look through that process again.
 */
static int add_fd(struct cli_sources *s, int fd, unsigned int flags,
		  const char *provider, int vcpu, pid_t pid,
		  const char *origin)
{
	struct statsfd_error err;
	struct statsfd_labels l;
	struct statsfd *sf;

	sf = statsfd_open_fd(fd, flags, &err);
	if (!sf) {
		fprintf(stderr, "statsfd: %s: not a valid stats fd: %s\n",
			origin, err.msg);
		return -err.err;
	}
	statsfd_labels_from_id(statsfd_id(sf), provider, &l);
	if (vcpu >= 0) {
		snprintf(l.target, sizeof(l.target), "vcpu");
		l.vcpu = vcpu;
	}
	if (cli_add_handle(s, sf, &l, origin))
		return -ENOMEM;
	s->v[s->n - 1].pid = pid;
	if (pid > 0 && !strcmp(l.target, "vm"))
		s->v[s->n - 1].root = CLI_ROOT_PID;
	return 0;
}

int cli_add_fd(struct cli_sources *s, const char *arg)
{
	char *end, origin[32];
	long fd = strtol(arg, &end, 10);

	if (*end || end == arg || fd < 0 || fd > INT_MAX) {
		fprintf(stderr, "statsfd: --fd %s: not an fd number\n", arg);
		return -EINVAL;
	}
	if (fcntl((int)fd, F_GETFD) < 0) {
		fprintf(stderr, "statsfd: --fd %ld: %s\n", fd, strerror(errno));
		return -EBADF;
	}
	snprintf(origin, sizeof(origin), "fd %ld", fd);
	return add_fd(s, (int)fd, 0, NULL, -1, 0, origin);
}

int cli_add_file(struct cli_sources *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char origin[96];

	if (fd < 0) {
		fprintf(stderr, "statsfd: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	snprintf(origin, sizeof(origin), "file %s", path);
	return add_fd(s, fd, STATSFD_OPEN_CLOSE_FD, NULL, -1, 0, origin);
}

/* Whether @fd refers to the same open file as one of @seen (kcmp). */
static bool already_seen(const int *seen, unsigned int n, int fd)
{
	pid_t me = getpid();
	unsigned int i;

	for (i = 0; i < n; i++)
		if (syscall(SYS_kcmp, me, me, KCMP_FILE, seen[i], fd) == 0)
			return true;
	return false;
}

/* The state of one scan_pid(). */
struct pid_scan {
	struct cli_sources *s;
	pid_t pid;
	bool statsfd_only;
	bool quiet;
	unsigned int *denied;
	int pidfd;
	int seen[1024];			/* our copies of the VMM's fds */
	unsigned int nseen;
	int eio_vcpu[256];		/* KVM vCPUs that refused us a stats fd */
	int eio_vcpu_fd[256];		/* their fd numbers in the VMM */
	unsigned int neio_vcpu;
	int eio_vm_fd;			/* the first VM's fd number in the VMM */
	bool stats_vcpu[256];		/* KVM vCPUs with a stats fd of the VMM's */
	int nstats_vm;			/* KVM VM stats fds the VMM holds */
	int neio_vm;			/* KVM VMs that refused us a stats fd */
	int added;
	int ret;
};

/*
 * The fd @name of the VMM (its link @link, of @kind): taken with
 * pidfd_getfd() and asked for a stats fd.  Return: 0 to go on with the
 * next fd, -1 to stop the scan (no pidfd, or no permission).
 */
static int scan_fd(struct pid_scan *sc, const char *name, const char *link,
		   enum statsfd_vmfd_kind kind, int vcpu)
{
	char origin[96];
	int local, sfd;

	if (sc->pidfd < 0) {
		sc->pidfd = (int)syscall(SYS_pidfd_open, sc->pid, 0);
		if (sc->pidfd < 0) {
			sc->ret = -errno;
			if (!sc->quiet)
				fprintf(stderr, "statsfd: pid %d: pidfd_open: %s\n",
					sc->pid, strerror(errno));
			return -1;
		}
	}
	local = (int)syscall(SYS_pidfd_getfd, sc->pidfd, atoi(name), 0);
	if (local < 0) {
		sc->ret = -errno;
		if (errno == EPERM || errno == EACCES) {
			(*sc->denied)++;
			if (!sc->quiet)
				fprintf(stderr, "statsfd: pid %d: pidfd_getfd refused: %s; " PERM_HINT "\n",
					sc->pid, strerror(errno));
			return -1;
		}
		return 0;	/* closed meanwhile */
	}
	/* A VMM may hold one VM through several fds: count it once. */
	if (already_seen(sc->seen, sc->nseen, local) ||
	    sc->nseen == sizeof(sc->seen) / sizeof(sc->seen[0])) {
		close(local);
		return 0;
	}
	sc->seen[sc->nseen++] = local;
	/* A stats fd is duplicated: @seen's copy is closed by scan_pid(). */
	sfd = statsfd_vmfd_stats_fd(local, kind);
	if (kind == STATSFD_VMFD_KVM_VM_STATS)
		sc->nstats_vm++;
	else if (kind == STATSFD_VMFD_KVM_VCPU_STATS && vcpu >= 0 && vcpu < 256)
		sc->stats_vcpu[vcpu] = true;
	snprintf(origin, sizeof(origin), "pid %d fd %.12s (%.48s)", sc->pid,
		 name, link + strlen("anon_inode:"));
	if (sfd < 0 && errno == EIO && kind == STATSFD_VMFD_KVM_VM) {
		if (!sc->neio_vm++)
			sc->eio_vm_fd = atoi(name);
		return 0;
	}
	if (sfd < 0 && errno == EIO && kind == STATSFD_VMFD_KVM_VCPU) {
		if (sc->neio_vcpu < 256) {
			sc->eio_vcpu_fd[sc->neio_vcpu] = atoi(name);
			sc->eio_vcpu[sc->neio_vcpu++] = vcpu;
		}
		return 0;
	}
	if (sfd < 0) {
		if (!sc->quiet)
			fprintf(stderr, "statsfd: %s: get stats fd: %s\n",
				origin, strerror(errno));
		return 0;
	}
	if (!add_fd(sc->s, sfd, STATSFD_OPEN_CLOSE_FD,
		    kind < STATSFD_VMFD_SFD_VM ? "kvm" : "statsfd_vm", vcpu,
		    sc->pid, origin))
		sc->added++;
	return 0;
}

/*
 * KVM VM or vCPU fd @tfd of the VMM, which holds no stats fd for it (QEMU
 * before 8.1 opens one per query-stats and closes it): the VMM is made to
 * ask KVM itself (statsfd_vmfd_stats_fd_remote()); a thread caught outside
 * a system call (EAGAIN) is tried again.  Return: 0 when a source was
 * added, else -1 with errno set.
 */
static int take_remote(struct pid_scan *sc, int tfd,
		       enum statsfd_vmfd_kind kind, int vcpu)
{
	char origin[96];
	int sfd = -1, i;

	for (i = 0; i < 5 && sc->pidfd >= 0; i++) {
		sfd = statsfd_vmfd_stats_fd_remote(sc->pid, sc->pidfd, tfd, kind);
		if (sfd >= 0 || errno != EAGAIN)
			break;
		usleep(2000);
	}
	if (sfd < 0)
		return -1;
	snprintf(origin, sizeof(origin), "pid %d fd %d (kvm-%s, stats fd made by the VMM)",
		 sc->pid, tfd, vcpu < 0 ? "vm" : "vcpu");
	if (add_fd(sc->s, sfd, STATSFD_OPEN_CLOSE_FD, "kvm", vcpu, sc->pid, origin))
		return errno = EINVAL, -1;
	sc->added++;
	return 0;
}

/*
 * The KVM VMs and vCPUs that gave us no stats fd and have none in the VMM:
 * asked by the VMM itself (take_remote()), else reported.
 */
static void report_eio(struct pid_scan *sc)
{
	unsigned int i;
	int v;

	/* One VM without its stats fd is asked for; more are only named. */
	if (sc->neio_vm > sc->nstats_vm &&
	    (sc->nstats_vm || take_remote(sc, sc->eio_vm_fd, STATSFD_VMFD_KVM_VM, -1)) &&
	    !sc->quiet)
		fprintf(stderr, "statsfd: pid %d: %d KVM VM(s) without a stats fd of the VMM's own; "
			"KVM gives one only to the VMM (KVM_GET_STATS_FD from another process is EIO), "
			"and the VMM could not be made to ask: %s\n",
			sc->pid, sc->neio_vm - sc->nstats_vm, strerror(errno));
	for (i = 0; i < sc->neio_vcpu; i++) {
		v = sc->eio_vcpu[i];
		if (v >= 0 && v < 256 && sc->stats_vcpu[v])
			continue;
		if (take_remote(sc, sc->eio_vcpu_fd[i], STATSFD_VMFD_KVM_VCPU, v) &&
		    !sc->quiet)
			fprintf(stderr, "statsfd: pid %d: KVM vCPU %d without a stats fd of the VMM's own; "
				"KVM gives one only to the VMM (KVM_GET_STATS_FD from another process is EIO), "
				"and the VMM could not be made to ask: %s\n",
				sc->pid, v, strerror(errno));
	}
}

/*
 * Take every VM/vCPU fd of @pid and ask each for a stats fd.  With
 * @quiet, permission problems are only counted in *@denied (device scan).
 *
 * KVM answers ioctls on a VM or vCPU fd only from the process that created
 * the VM (kvm->mm != current->mm is -EIO), KVM_GET_STATS_FD included, so
 * for KVM the stats fds the VMM itself holds (QEMU keeps one per vCPU) are
 * taken as they are; a KVM VM or vCPU without one is reported once the
 * scan is done.  statsfd_vm has no such rule.
 * Return: number of sources added, or -errno.
 */
static int scan_pid(struct cli_sources *s, pid_t pid, bool statsfd_only,
		    bool quiet, unsigned int *denied)
{
	struct pid_scan *sc;
	char dir[64], path[320], link[128];
	struct dirent *de;
	unsigned int i;
	int ret;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d) {
		ret = -errno;
		if (errno == EACCES || errno == EPERM) {
			(*denied)++;
			if (!quiet)
				fprintf(stderr, "statsfd: pid %d: cannot list %s: %s; " PERM_HINT "\n",
					pid, dir, strerror(errno));
		} else if (!quiet) {
			fprintf(stderr, "statsfd: pid %d: %s\n", pid,
				errno == ENOENT ? "no such process" : strerror(errno));
		}
		return ret;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		closedir(d);
		return -ENOMEM;
	}
	*sc = (struct pid_scan){ .s = s, .pid = pid, .statsfd_only = statsfd_only,
				 .quiet = quiet, .denied = denied, .pidfd = -1 };
	while ((de = readdir(d))) {
		enum statsfd_vmfd_kind kind;
		ssize_t n;
		int vcpu;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		kind = statsfd_vmfd_classify(link, &vcpu);
		if (kind == STATSFD_VMFD_NONE ||
		    (statsfd_only && kind < STATSFD_VMFD_SFD_VM))
			continue;
		if (scan_fd(sc, de->d_name, link, kind, vcpu))
			break;
	}
	closedir(d);
	report_eio(sc);
	for (i = 0; i < sc->nseen; i++)
		close(sc->seen[i]);
	if (sc->pidfd >= 0)
		close(sc->pidfd);
	ret = sc->added ? sc->added : sc->ret;
	free(sc);
	return ret;
}

int cli_add_pid(struct cli_sources *s, const char *arg)
{
	unsigned int denied = 0;
	char *end;
	long pid = strtol(arg, &end, 10);
	int ret;

	if (*end || end == arg || pid <= 0 || pid > INT_MAX) {
		fprintf(stderr, "statsfd: --pid %s: not a process id\n", arg);
		return -EINVAL;
	}
	ret = scan_pid(s, (pid_t)pid, false, false, &denied);
	if (ret == 0)
		fprintf(stderr, "statsfd: pid %ld: no KVM or statsfd VM/vCPU fds found\n",
			pid);
	return ret > 0 ? 0 : (ret ? ret : -ENOENT);
}

/* The statsfd_vm VMs and vCPUs of every process we may take fds from. */
static void scan_all(struct cli_sources *s, unsigned int *denied,
		     unsigned int *procs)
{
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		(*procs)++;
		scan_pid(s, (pid_t)pid, true, true, denied);
	}
	closedir(d);
}

/*
 * After a change of children: the statsfd_vm fds of the VMM @pid (a VM
 * got a vCPU), or of every process (the device got a VM).  KVM's fds
 * never report a change, so only statsfd_vm's are looked at.  Sources
 * already known come back too; cli_wait() drops those duplicates.
 */
int cli_rescan_default(struct cli_sources *s, enum cli_root root, pid_t pid)
{
	unsigned int denied = 0, procs = 0, n0 = s->n;

	if (root == CLI_ROOT_PID && pid > 0)
		scan_pid(s, pid, true, true, &denied);
	else if (root == CLI_ROOT_DEVICE)
		scan_all(s, &denied, &procs);
	return (int)(s->n - n0);
}

int cli_add_device(struct cli_sources *s, const char *path)
{
	unsigned int denied = 0, procs = 0;
	char origin[96];
	int dev, sfd;

	dev = open(path, O_RDWR | O_CLOEXEC);
	if (dev < 0 && (errno == EACCES || errno == EPERM))
		dev = open(path, O_RDONLY | O_CLOEXEC);
	if (dev < 0) {
		fprintf(stderr, "statsfd: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (is statsfd_vm.ko loaded?)" : "");
		return -errno;
	}
	sfd = ioctl(dev, STATSFD_VM_GET_STATS_FD, NULL);
	close(dev);
	if (sfd < 0) {
		fprintf(stderr, "statsfd: %s: STATSFD_VM_GET_STATS_FD: %s\n", path,
			strerror(errno));
		return -errno;
	}
	snprintf(origin, sizeof(origin), "device %s", path);
	if (add_fd(s, sfd, STATSFD_OPEN_CLOSE_FD, "statsfd_vm", -1, 0, origin))
		return -EINVAL;
	snprintf(s->v[s->n - 1].labels.target, sizeof(s->v[0].labels.target),
		 "system");
	/* Its children are the VMs: a change means a VM came or went. */
	s->v[s->n - 1].root = CLI_ROOT_DEVICE;

	/* Then every VM and vCPU of every process we may take fds from. */
	scan_all(s, &denied, &procs);
	if (denied)
		fprintf(stderr, "statsfd: note: %u of %u processes could not be inspected (%s)\n",
			denied, procs, "no ptrace permission; run as root to see every VM");
	return 0;
}

int cli_add_socket(struct cli_sources *s, const char *path, int timeout_ms)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct statsfd_labels *labels = NULL;
	int fds[STATSFD_MSG_MAX_FDS];
	unsigned int nfds = STATSFD_MSG_MAX_FDS, i;
	struct json_object *req = NULL, *args = NULL, *cmd, *reply, *ids;
	struct pollfd pfd;
	char why[256], origin[160];
	const char *out;
	size_t len;
	char *json = NULL;
	int ls, c = -1, ret = -EPROTO;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "statsfd: --socket %s: path too long\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(ls, 1)) {
		fprintf(stderr, "statsfd: --socket %s: %s\n", path, strerror(errno));
		if (ls >= 0)
			close(ls);
		return -errno;
	}
	fprintf(stderr, "statsfd: waiting on %s for a VMM to send stats fds (add-sources)\n",
		path);
	pfd = (struct pollfd){ .fd = ls, .events = POLLIN };
	if (poll(&pfd, 1, timeout_ms) == 1)
		c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	close(ls);
	unlink(path);
	if (c < 0) {
		fprintf(stderr, "statsfd: --socket %s: no VMM connected in time\n", path);
		return -ETIMEDOUT;
	}
	ret = statsfd_msg_recv(c, &json, &len, fds, &nfds, timeout_ms);
	if (ret) {
		fprintf(stderr, "statsfd: --socket %s: receive: %s\n", path, strerror(-ret));
		close(c);
		return ret;
	}
	ret = -EPROTO;
	req = json_tokener_parse(json);
	labels = calloc(nfds + 1, sizeof(*labels));
	if (!req || !json_object_object_get_ex(req, "execute", &cmd) ||
	    strcmp(json_object_get_string(cmd), "add-sources")) {
		snprintf(why, sizeof(why), "expected an add-sources request");
	} else if (!labels) {
		snprintf(why, sizeof(why), "out of memory");
	} else {
		json_object_object_get_ex(req, "arguments", &args);
		if (!statsfd_json_parse_sources(args, nfds, labels, why, sizeof(why)))
			ret = 0;
	}
	reply = json_object_new_object();
	if (ret) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "class", json_object_new_string("GenericError"));
		json_object_object_add(e, "desc", json_object_new_string(why));
		json_object_object_add(reply, "error", e);
		fprintf(stderr, "statsfd: --socket %s: %s\n", path, why);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		nfds = 0;
	}
	ids = json_object_new_array();
	for (i = 0; i < nfds; i++) {
		struct statsfd_error err;
		struct statsfd *sf = statsfd_open_fd(fds[i], STATSFD_OPEN_CLOSE_FD, &err);

		snprintf(origin, sizeof(origin), "socket %s fd #%u", path, i);
		if (!sf) {
			fprintf(stderr, "statsfd: %s: not a stats fd: %s\n", origin, err.msg);
			continue;
		}
		if (!cli_add_handle(s, sf, &labels[i], origin))
			json_object_array_add(ids, json_object_new_int((int)s->n));
	}
	if (!ret) {
		struct json_object *r = json_object_new_object();

		json_object_object_add(r, "sources", ids);
		json_object_object_add(reply, "return", r);
	} else {
		json_object_put(ids);
	}
	out = json_object_to_json_string_length(reply, JSON_C_TO_STRING_PLAIN, &len);
	statsfd_msg_send(c, out, len, NULL, 0);
	json_object_put(reply);
	json_object_put(req);
	free(labels);
	free(json);
	/* Kept open until exit: the VMM may treat its closing as "stop". */
	return ret;
}

/**
 * cli_add_host() - --host: a source for the node, each online CPU, each
 * interface of our network namespace and each whole disk
 * @s: the sources
 * @path: the host device, normally STATSFD_HOST_DEVICE
 *
 * Return: 0 when at least one was added, else -errno.
 */
int cli_add_host(struct cli_sources *s, const char *path)
{
	struct statsfd_host_obj *objs;
	struct statsfd_error err;
	struct statsfd_labels l;
	size_t n, i;
	int dev, ret, added = 0;
	char origin[96];

	dev = open(path, O_RDONLY | O_CLOEXEC);
	if (dev < 0) {
		fprintf(stderr, "statsfd: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (is statsfd_host.ko loaded?)" : "");
		return -errno;
	}
	ret = statsfd_host_scan("/sys", &objs, &n);
	if (ret) {
		fprintf(stderr, "statsfd: --host: cannot list the CPUs, interfaces and disks: %s\n",
			strerror(-ret));
		close(dev);
		return ret;
	}
	for (i = 0; i < n; i++) {
		int fd = statsfd_host_get_fd(dev, &objs[i]);
		struct statsfd *sf;

		snprintf(origin, sizeof(origin), "%s %s %s", path,
			 statsfd_host_kind_name(objs[i].kind), objs[i].name);
		if (fd < 0) {
			/* Gone since the scan: nothing to show. */
			if (fd != -ENODEV)
				fprintf(stderr, "statsfd: %s: STATSFD_HOST_GET_STATS_FD: %s\n",
					origin, strerror(-fd));
			continue;
		}
		sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
		if (!sf) {
			fprintf(stderr, "statsfd: %s: not a valid stats fd: %s\n",
				origin, err.msg);
			continue;
		}
		memset(&l, 0, sizeof(l));
		l.vcpu = -1;
		if (cli_add_handle(s, sf, &l, origin))
			break;
		/* The object as scanned, whatever the id: its numbers too. */
		s->v[s->n - 1].host = true;
		s->v[s->n - 1].hobj = objs[i];
		host_labels(&s->v[s->n - 1]);
		added++;
	}
	free(objs);
	close(dev);
	return added ? 0 : -ENODEV;
}
