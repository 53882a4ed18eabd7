// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_extras_test - what KVM served by statsfd adds to KVM_GET_STATS_FD
 * (kvm/patches/6.12), on a VM running the deterministic loop of
 * kvm_run_dump.c (N io exits and one hlt per vCPU).
 *
 * Usage: kvm_extras_test plain|extras
 *
 *   plain   kvm.ko loaded with its defaults: the files are upstream's; what
 *           statsfd adds without changing a byte: EPOLLHUP on the VM's
 *           stats fd once the VM fd is closed (the fd still reads), and
 *           STATSFD_IOC_VIEW on a vCPU's stats fd; mmap is refused
 *   extras  kvm.ko loaded with stats_vm_aggregates=1 stats_snapshot=1: the
 *           VM file ends with <vcpu stat>_sum of every vCPU stat, equal to
 *           the sum of the vCPUs' values; its fd polls EPOLLPRI when a
 *           vCPU is created until read; vCPU files end with sample_ns and
 *           generation, and mmap gives the same values as pread
 *
 * Prints TAP; exits 1 if a check failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <linux/statsfd.h>
#include "kvm_guest.h"

#define VCPUS		2
#define IO_EXITS	500

static int tests, failures;

static void check(int ok, const char *what)
{
	tests++;
	printf("%sok %d - %s\n", ok ? "" : "not ", tests, what);
	if (!ok)
		failures++;
}

static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A whole stats file, read once; values looked up by name. */
struct sfile {
	struct kvm_stats_header h;
	char *buf;
	size_t size;
};

static void sfile_read(int fd, struct sfile *f)
{
	size_t stride, i, end;
	char *descs;

	if (pread(fd, &f->h, sizeof(f->h), 0) != sizeof(f->h))
		die("header");
	stride = sizeof(struct kvm_stats_desc) + f->h.name_size;
	descs = malloc(stride * f->h.num_desc);
	if (!descs || pread(fd, descs, stride * f->h.num_desc, f->h.desc_offset) !=
	    (ssize_t)(stride * f->h.num_desc))
		die("descriptors");
	end = f->h.desc_offset + stride * f->h.num_desc;
	for (i = 0; i < f->h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i * stride);
		size_t e = f->h.data_offset + d->offset + d->size * 8;

		if (e > end)
			end = e;
	}
	free(descs);
	f->size = end;
	f->buf = malloc(end);
	if (!f->buf || pread(fd, f->buf, end, 0) != (ssize_t)end)
		die("whole file");
}

static struct kvm_stats_desc *sfile_desc(struct sfile *f, uint32_t i)
{
	return (void *)(f->buf + f->h.desc_offset +
			i * (sizeof(struct kvm_stats_desc) + f->h.name_size));
}

/* Values of stat @name, or NULL. */
static uint64_t *sfile_stat(struct sfile *f, const char *name,
			    struct kvm_stats_desc **desc)
{
	uint32_t i;

	for (i = 0; i < f->h.num_desc; i++) {
		struct kvm_stats_desc *d = sfile_desc(f, i);

		if (!strcmp(d->name, name)) {
			if (desc)
				*desc = d;
			return (uint64_t *)(f->buf + f->h.data_offset + d->offset);
		}
	}
	return NULL;
}

static int poll_events(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };

	if (poll(&p, 1, 0) < 0)
		die("poll");
	return p.revents;
}

/* A VM whose memory holds kvm_run_dump's loop, IO_EXITS times round. */
static int vm_create(int kvm)
{
	/* mov $IO_EXITS, %cx; 1: out %al, $0x10; loop 1b; hlt */
	static const unsigned char code[] = {
		0xb9, IO_EXITS & 0xff, IO_EXITS >> 8, 0xe6, 0x10, 0xe2, 0xfc, 0xf4
	};
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);

	if (vm < 0)
		die("KVM_CREATE_VM");
	kvm_guest_memory(vm, code, sizeof(code));
	return vm;
}

static int vcpu_create_and_run(int kvm, int vm, int id)
{
	struct kvm_guest_vcpu v;

	kvm_guest_vcpu(kvm, vm, id, &v);
	kvm_guest_run_io(&v);
	if (v.run->exit_reason != KVM_EXIT_HLT)
		die("unexpected exit");
	kvm_guest_unmap(&v);
	return v.fd;
}

static void test_view(int vcpu_stats)
{
	static const char * const names[] = { "halt_exits", "io_exits" };
	uint64_t list[2] = { (uintptr_t)names[0], (uintptr_t)names[1] };
	struct statsfd_view_args args = { .count = 2, .list = (uintptr_t)list };
	struct sfile whole, view;
	int fd = ioctl(vcpu_stats, STATSFD_IOC_VIEW, &args);

	check(fd >= 0, "STATSFD_IOC_VIEW on a vCPU stats fd makes a view fd");
	if (fd < 0)
		return;
	sfile_read(vcpu_stats, &whole);
	sfile_read(fd, &view);
	check(view.h.num_desc == 2 &&
	      *sfile_stat(&view, "io_exits", NULL) == IO_EXITS &&
	      *sfile_stat(&view, "halt_exits", NULL) == 1 &&
	      !memcmp(whole.buf + whole.h.id_offset, view.buf + view.h.id_offset,
		      whole.h.name_size),
	      "the view holds io_exits and halt_exits, with the vCPU's id");
	close(fd);
}

static void plain(int kvm)
{
	int vm = vm_create(kvm);
	int vm_stats, vcpu, vcpu_stats;
	struct sfile f;
	void *map;

	vm_stats = ioctl(vm, KVM_GET_STATS_FD, NULL);
	vcpu = vcpu_create_and_run(kvm, vm, 0);
	vcpu_stats = ioctl(vcpu, KVM_GET_STATS_FD, NULL);
	if (vm_stats < 0 || vcpu_stats < 0)
		die("KVM_GET_STATS_FD");

	check(poll_events(vm_stats) == POLLIN, "VM stats fd polls readable, nothing else");
	sfile_read(vcpu_stats, &f);
	check(!sfile_stat(&f, "sample_ns", NULL) && !sfile_stat(&f, "generation", NULL),
	      "vCPU file has no snapshot stats by default");
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, vcpu_stats, 0);
	check(map == MAP_FAILED && errno == ENODEV, "mmap refused (ENODEV) by default");
	test_view(vcpu_stats);

	close(vcpu);
	close(vm);
	check(poll_events(vm_stats) & POLLHUP,
	      "VM stats fd polls EPOLLHUP once the VM fd is closed");
	sfile_read(vcpu_stats, &f);
	check(*sfile_stat(&f, "io_exits", NULL) == IO_EXITS,
	      "the vCPU stats fd still reads its last values");
}

static void extras(int kvm)
{
	int vm = vm_create(kvm);
	int vm_stats, vcpu[VCPUS], vcpu_stats[VCPUS], i, all_sums = 1;
	struct sfile vf, cf[VCPUS];
	struct statsfd_mmap_header *h;
	struct kvm_stats_desc *d;
	uint64_t *gen, *sample, vals[4];
	struct timespec now;
	uint32_t k;
	char msg[160];

	vm_stats = ioctl(vm, KVM_GET_STATS_FD, NULL);
	if (vm_stats < 0)
		die("KVM_GET_STATS_FD");
	check(!(poll_events(vm_stats) & POLLPRI), "no EPOLLPRI before any vCPU");
	for (i = 0; i < VCPUS; i++) {
		vcpu[i] = vcpu_create_and_run(kvm, vm, i);
		vcpu_stats[i] = ioctl(vcpu[i], KVM_GET_STATS_FD, NULL);
		if (vcpu_stats[i] < 0)
			die("KVM_GET_STATS_FD");
		sfile_read(vcpu_stats[i], &cf[i]);
	}
	check(poll_events(vm_stats) & POLLPRI,
	      "EPOLLPRI on the VM stats fd once vCPUs were created");
	sfile_read(vm_stats, &vf);
	check(!(poll_events(vm_stats) & POLLPRI), "EPOLLPRI cleared by reading the VM file");

	/* Every vCPU stat has its sum in the VM file, equal to the sum. */
	for (k = 0; k < cf[0].h.num_desc; k++) {
		struct kvm_stats_desc *cd = sfile_desc(&cf[0], k);
		uint64_t *sum;
		uint32_t b;

		snprintf(msg, sizeof(msg), "%s_sum", cd->name);
		if (!strcmp(cd->name, "sample_ns") || !strcmp(cd->name, "generation"))
			continue;
		sum = sfile_stat(&vf, msg, &d);
		if (!sum || d->size != cd->size) {
			printf("# %s missing or of another size\n", msg);
			all_sums = 0;
			continue;
		}
		/* Times move between reads; counts of a halted VM do not. */
		if ((cd->flags & KVM_STATS_UNIT_MASK) == KVM_STATS_UNIT_SECONDS)
			continue;
		for (b = 0; b < cd->size; b++) {
			uint64_t want = 0;

			for (i = 0; i < VCPUS; i++)
				want += sfile_stat(&cf[i], cd->name, NULL)[b];
			if (sum[b] != want) {
				printf("# %s[%u]: %llu, vCPUs add up to %llu\n", msg, b,
				       (unsigned long long)sum[b], (unsigned long long)want);
				all_sums = 0;
			}
		}
	}
	check(all_sums, "VM file: <stat>_sum of every vCPU stat equals the vCPUs' sum");
	check(*sfile_stat(&vf, "io_exits_sum", NULL) == VCPUS * IO_EXITS,
	      "VM file: io_exits_sum is every vCPU's io exits");

	sample = sfile_stat(&cf[0], "sample_ns", NULL);
	gen = sfile_stat(&cf[0], "generation", NULL);
	clock_gettime(CLOCK_BOOTTIME, &now);
	check(sample && gen && *gen >= IO_EXITS &&
	      *sample > 0 && *sample <= (uint64_t)now.tv_sec * 1000000000 + now.tv_nsec,
	      "vCPU file ends with sample_ns (boot time, in the past) and generation (>= one per exit)");
	check(*sfile_stat(&cf[0], "io_exits", NULL) == IO_EXITS &&
	      *sfile_stat(&cf[0], "halt_exits", NULL) == 1,
	      "vCPU snapshot: io_exits and halt_exits of the run");

	h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, vcpu_stats[0], 0);
	check(h != MAP_FAILED, "mmap of a vCPU stats fd");
	if (h != MAP_FAILED) {
		uint64_t *io = sfile_stat(&cf[0], "io_exits", &d);
		__u64 mgen = 0;

		check(!statsfd_mmap_copy(h, vals, d->offset, 8, &mgen) &&
		      vals[0] == *io && mgen == *gen,
		      "mapped io_exits and generation equal pread's");
		check(mprotect(h, 4096, PROT_READ | PROT_WRITE) && errno == EACCES,
		      "the mapping cannot be made writable");
		munmap(h, 4096);
	}
	for (i = 0; i < VCPUS; i++) {
		close(vcpu_stats[i]);
		close(vcpu[i]);
	}
	close(vm);
	check(poll_events(vm_stats) & POLLHUP,
	      "VM stats fd polls EPOLLHUP once the VM fd is closed");
	close(vm_stats);
}

int main(int argc, char **argv)
{
	int kvm;

	if (argc != 2 || (strcmp(argv[1], "plain") && strcmp(argv[1], "extras"))) {
		fprintf(stderr, "usage: kvm_extras_test plain|extras\n");
		return 2;
	}
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("/dev/kvm");
	if (!strcmp(argv[1], "plain"))
		plain(kvm);
	else
		extras(kvm);
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
