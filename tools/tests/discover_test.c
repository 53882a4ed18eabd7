// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector --discover-kvm on the host, without KVM: the daemon's
 * own discovery (collector/discover.c) and sources (collector/sources.c)
 * scan a fake /proc tree whose PID directories name a real child process.
 * The child shares our fd table (clone(CLONE_FILES)), so the fds its
 * fake /proc/PID/fd links call "anon_inode:kvm-vcpu-stats:N" are real
 * files of it (memfds holding stats images), taken with pidfd_getfd()
 * and compared with kcmp() for real; its exit is seen through its pidfd
 * in a real epoll set.  Also: the vm label from a command line (QEMU's
 * -name and -uuid), and the names of VM and vCPU fds (libstatsfd).
 * The real KVM case runs in make check's 6.1 guest (discover_kvm_test.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "../collector/discover.h"
#include "image.h"
#include "statsfd.h"
#include "tap.h"

static unsigned char img[1 << 16];
static char root[64];
/* Memfd stats images stand in for KVM's stats fds (--test-accept-memfd). */
static struct collector col = {
	.max_sources = 100, .max_mapped = 100, .client_max_sources = 100,
	.client_max_bytes = 1 << 20, .max_bytes = 1 << 20, .drop_after = 10,
	.accept_memfd = true,
};

/* ---- the vm label ------------------------------------------------------- */

static void label_is(const char *cmdline, size_t len, const char *want,
		     const char *what)
{
	char out[STATSFD_LABEL_MAX + 1];

	discover_vm_label(cmdline, len, "qemu-system-x86", 42, out,
			  sizeof(out));
	if (!tap_ok(!strcmp(out, want), "label: %s", what))
		tap_diag("got \"%s\", want \"%s\"", out, want);
}

#define LABEL(lit, want, what) label_is(lit, sizeof(lit) - 1, want, what)

static void test_labels(void)
{
	char long_cmd[200], want[STATSFD_LABEL_MAX + 1];

	LABEL("qemu\0-name\0guest=web,debug-threads=on\0", "web",
	      "-name guest=NAME,debug-threads=on (libvirt)");
	LABEL("qemu\0-name\0web\0", "web", "-name NAME");
	LABEL("qemu\0--name\0a,,b,process=x\0", "a,b",
	      "--name, a doubled comma is a comma, other parameters ignored");
	LABEL("qemu\0-name\0process=p,guest=g\0", "g",
	      "guest= after another parameter");
	LABEL("qemu\0-name\0x\0-name\0y\0", "y", "the last -name wins");
	LABEL("qemu\0-name\0debug-threads=on\0-uuid\0"
	      "ABCDEF01-2345-6789-abcd-ef0123456789\0",
	      "abcdef01-2345-6789-abcd-ef0123456789",
	      "no guest name: the -uuid, in lower case");
	LABEL("qemu\0-name\0guest=w\0-uuid\0abcdef01-2345-6789-abcd-ef0123456789\0",
	      "w", "-name wins over -uuid");
	LABEL("qemu\0-uuid\0abcdef01-2345-6789-abcd-ef012345678\0",
	      "qemu-system-x86-42", "a malformed -uuid is ignored: COMM-PID");
	LABEL("qemu\0-uuid\0abcdef01x2345-6789-abcd-ef0123456789\0",
	      "qemu-system-x86-42", "a -uuid without its dashes is ignored");
	LABEL("qemu\0-name\0", "qemu-system-x86-42",
	      "-name without a value (last argument): COMM-PID");
	LABEL("qemu\0-name\0web", "qemu-system-x86-42",
	      "a value cut off (no NUL) is ignored");
	LABEL("qemu\0-name\0guest=\0", "qemu-system-x86-42",
	      "an empty guest name: COMM-PID");
	LABEL("", "qemu-system-x86-42", "an empty command line (kernel thread)");
	LABEL("qemu\0-name\0we\"b\\\x01\xc3\0", "we_b___",
	      "'\"', '\\\\' and non-printable bytes become '_'");
	LABEL("qemu\0name\0web\0", "qemu-system-x86-42",
	      "\"name\" without a dash is not the option");

	memcpy(long_cmd, "q\0-name\0", 8);
	memset(long_cmd + 8, 'n', 150);
	long_cmd[158] = '\0';
	memset(want, 'n', STATSFD_LABEL_MAX);
	want[STATSFD_LABEL_MAX] = '\0';
	label_is(long_cmd, 159, want, "a long name is cut to 64 characters");
}

/* ---- the names of VM and vCPU fds --------------------------------------- */

static void kind_is(const char *link, enum statsfd_vmfd_kind want,
		    int want_vcpu)
{
	int vcpu;
	enum statsfd_vmfd_kind k = statsfd_vmfd_classify(link, &vcpu);

	if (!tap_ok(k == want && vcpu == want_vcpu, "classify \"%s\"", link))
		tap_diag("got kind %d vcpu %d, want %d %d", k, vcpu, want,
			 want_vcpu);
}

static void test_classify(void)
{
	kind_is("anon_inode:kvm-vm", STATSFD_VMFD_KVM_VM, -1);
	kind_is("anon_inode:kvm-vcpu:3", STATSFD_VMFD_KVM_VCPU, 3);
	kind_is("anon_inode:kvm-vm-stats", STATSFD_VMFD_KVM_VM_STATS, -1);
	kind_is("anon_inode:kvm-vcpu-stats:12", STATSFD_VMFD_KVM_VCPU_STATS, 12);
	kind_is("anon_inode:statsfd-vm", STATSFD_VMFD_SFD_VM, -1);
	kind_is("anon_inode:statsfd-vcpu:0", STATSFD_VMFD_SFD_VCPU, 0);
	kind_is("anon_inode:kvm-vcpu-stats:", STATSFD_VMFD_NONE, -1);
	kind_is("anon_inode:kvm-vcpu-stats:-1", STATSFD_VMFD_NONE, -1);
	kind_is("anon_inode:kvm-vcpu-stats:1x", STATSFD_VMFD_NONE, -1);
	kind_is("anon_inode:kvm-vcpu-stats:99999999999", STATSFD_VMFD_NONE, -1);
	kind_is("anon_inode:kvm-vmx", STATSFD_VMFD_NONE, -1);
	kind_is("anon_inode:kvm-vm-stats ", STATSFD_VMFD_NONE, -1);
	kind_is("/dev/kvm", STATSFD_VMFD_NONE, -1);
}

/* ---- a fake /proc ------------------------------------------------------- */

static void put(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		tap_diag("%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* The directory of @pid in the fake tree, with a command line. */
static void fake_proc(pid_t pid, const char *cmdline, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/fd", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/cmdline", root, pid);
	put(path, cmdline, len);
	snprintf(path, sizeof(path), "%s/%d/comm", root, pid);
	put(path, "qemu-system-x86\n", 16);
}

/* fd @fd of @pid is named @name in the fake tree. */
static void fake_fd(pid_t pid, int fd, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%d/fd/%d", root, pid, fd);
	unlink(path);
	if (symlink(name, path))
		tap_diag("symlink %s: %s", path, strerror(errno));
}

/* A stats image in a memfd, as the VMM would hold a KVM stats fd. */
static int stats_memfd(const char *id)
{
	size_t len = img_build(img, sizeof(img), id, 48, img_vcpu_stats,
			       img_vcpu_nstats, NULL, 0);

	return img_memfd(img, len);
}

/* A child that shares our fd table and waits to be killed. */
static pid_t spawn(void)
{
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, NULL,
				   NULL, NULL, NULL);

	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static struct source *find(int vcpu)
{
	struct source *s;

	for (s = col.sources; s; s = s->next)
		if (s->labels.vcpu == vcpu)
			return s;
	return NULL;
}

static bool labelled(int vcpu, const char *target, const char *vm)
{
	struct source *s = find(vcpu);

	return s && !strcmp(s->labels.provider, "kvm") &&
	       !strcmp(s->labels.target, target) && !strcmp(s->labels.vm, vm);
}

/* Wait for the pidfd event of an exited process and dispatch it. */
static int dispatch_exit(struct discover *d)
{
	struct epoll_event ev[8];
	int n, i, seen = 0;

	n = epoll_wait(col.epfd, ev, 8, 5000);
	for (i = 0; i < n; i++) {
		if (*(int *)ev[i].data.ptr != EP_DISCOVER)
			continue;
		discover_event(d, ev[i].data.ptr, ev[i].events);
		seen++;
	}
	reap_sources(&col);
	return seen;
}

static void test_scan(void)
{
	static const char cmd[] = "qemu-system-x86_64\0-name\0guest=web,debug-threads=on\0"
				  "-uuid\0abcdef01-2345-6789-abcd-ef0123456789\0";
	const struct discover_stats *st;
	int vm, v0, v1, kvm_vm, other, v2, dupfd, v1b, status;
	struct discover *d;
	struct source *s;
	uint64_t id1;
	pid_t child, gone = 0, me = getpid();
	char path[128];

	vm = stats_memfd("kvm-1");
	v0 = stats_memfd("kvm-1/vcpu-0");
	v1 = stats_memfd("kvm-1/vcpu-1");
	kvm_vm = memfd_create("not-a-vm", MFD_CLOEXEC);
	other = open("/dev/null", O_RDONLY | O_CLOEXEC);
	child = spawn();
	if (!tap_ok(vm >= 0 && v0 >= 0 && v1 >= 0 && kvm_vm >= 0 && child > 0,
		    "fixture: a child sharing our fds, holding 3 stats fds"))
		return;
	fake_proc(child, cmd, sizeof(cmd) - 1);
	fake_fd(child, vm, "anon_inode:kvm-vm-stats");
	fake_fd(child, v0, "anon_inode:kvm-vcpu-stats:0");
	fake_fd(child, v1, "anon_inode:kvm-vcpu-stats:1");
	fake_fd(child, kvm_vm, "anon_inode:kvm-vm");
	fake_fd(child, other, "/dev/null");
	/* Ourselves: never looked at (we hold the fds we took). */
	fake_proc(me, cmd, sizeof(cmd) - 1);
	fake_fd(me, v0, "anon_inode:kvm-vcpu-stats:0");
	/* A pid that is no process: its pidfd_open fails, it is skipped. */
	for (gone = 4000000; gone > 300000 && !kill(gone, 0); gone--)
		;
	fake_proc(gone, cmd, sizeof(cmd) - 1);
	fake_fd(gone, v0, "anon_inode:kvm-vcpu-stats:0");
	snprintf(path, sizeof(path), "%s/self", root);
	mkdir(path, 0755);

	d = discover_start(&col, root, 3600000);
	if (!tap_ok(!!d, "discover_start on the fake tree"))
		return;
	st = discover_get_stats(d);
	tap_ok(st->procs == 1, "one VMM followed (not ourselves, not a gone pid): %llu",
	       (unsigned long long)st->procs);
	tap_ok(col.nsources == 3 && st->sources == 3,
	       "its VM and 2 vCPU stats fds became sources: %u",
	       col.nsources);
	tap_ok(labelled(-1, "vm", "web") && labelled(0, "vcpu", "web") &&
	       labelled(1, "vcpu", "web"),
	       "labels: provider kvm, target vm/vcpu, vcpu from the fd name, vm from -name");
	s = find(0);
	tap_ok(s && s->owner->pid == child && s->owner->uid == getuid(),
	       "their owner stands for the VMM process (pid, uid)");
	tap_ok(st->fds_taken == 4 && st->no_stats == 1,
	       "4 fds taken; the kvm-vm fd gave no stats fd (taken %llu, none %llu)",
	       (unsigned long long)st->fds_taken,
	       (unsigned long long)st->no_stats);

	discover_scan(d);
	tap_ok(st->fds_taken == 4 && col.nsources == 3,
	       "a rescan takes nothing again (fd numbers + kcmp): %llu",
	       (unsigned long long)st->fds_taken);

	v2 = stats_memfd("kvm-1/vcpu-2");
	fake_fd(child, v2, "anon_inode:kvm-vcpu-stats:2");
	discover_scan(d);
	tap_ok(col.nsources == 4 && labelled(2, "vcpu", "web") &&
	       st->fds_taken == 5, "a rescan picks up a new vCPU");

	dupfd = dup(v0);
	fake_fd(child, dupfd, "anon_inode:kvm-vcpu-stats:0");
	discover_scan(d);
	tap_ok(col.nsources == 4, "one stats fd under two numbers: one source");
	discover_scan(d);
	tap_ok(st->fds_taken == 6, "... and the second number is not taken again");

	id1 = find(1)->id;
	v1b = stats_memfd("kvm-1/vcpu-1");
	dup3(v1b, v1, O_CLOEXEC);
	close(v1b);
	discover_scan(d);
	s = find(1);
	tap_ok(col.nsources == 4 && s && s->id != id1 && st->replaced == 1,
	       "an fd number reused for another file: its source replaced");
	reap_sources(&col);

	drop_source(&col, find(2));
	reap_sources(&col);
	discover_scan(d);
	tap_ok(col.nsources == 3 && st->fds_taken == 7,
	       "a source the collector dropped is not taken again from the same fd");

	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	tap_ok(dispatch_exit(d) == 1, "the VMM's exit is an epoll event (its pidfd)");
	tap_ok(col.nsources == 0 && st->procs == 0 && st->procs_gone == 1,
	       "all its sources dropped when it exits: %u left", col.nsources);

	/*
	 * Another process, holding a stats fd and nothing else, as
	 * `statsfd watch --pid` does: not a VMM.  Then it gets a vCPU fd.
	 */
	child = spawn();
	fake_proc(child, "x\0-name\0db\0", 11);
	fake_fd(child, v0, "anon_inode:kvm-vcpu-stats:0");
	discover_scan(d);
	tap_ok(col.nsources == 0 && st->procs == 0,
	       "a process holding stats fds but no VM or vCPU fd is not followed");
	fake_fd(child, kvm_vm, "anon_inode:kvm-vcpu:0");
	discover_scan(d);
	tap_ok(col.nsources == 1 && labelled(0, "vcpu", "db"),
	       "a new VMM is picked up by a rescan");
	discover_stop(d);
	reap_sources(&col);
	tap_ok(col.nsources == 0, "discover_stop drops every discovered source");
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(vm);
	close(v0);
	close(v1);
	close(v2);
	close(dupfd);
	close(kvm_vm);
	close(other);
}

int main(void)
{
	char cmd[160];

	test_labels();
	test_classify();
	snprintf(root, sizeof(root), "/tmp/statsfd-discover-test.XXXXXX");
	col.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!mkdtemp(root) || col.epfd < 0) {
		tap_ok(0, "fixture: %s", strerror(errno));
		return tap_done();
	}
	test_scan();
	close(col.epfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		tap_diag("could not remove %s", root);
	return tap_done();
}
