// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phases "b4" and "b4kvm": what keeping stats costs the
 * provider's run loop.  b4 times the marginal cost of one exit of our VM
 * provider, run once with its stats updates and once with them compiled out
 * (statsfd_vm_nostats.ko, a separate load); b4kvm is the yardstick, one real
 * in-kernel exit of upstream KVM in the same guest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kvm.h>
#include <linux/statsfd.h>

#include "bench.h"

/*
 * The marginal cost of one exit: runs of @exits and of @exits / 5 exits
 * alternate, and (T(long) - T(short)) / (the exits in between) leaves out
 * what a run costs whatever its length (the ioctl, its checks, the final
 * histogram update), which would otherwise dilute the per-exit figures.
 */
void phase_b4(const char *label, uint64_t exits)
{
	double sample[MAX_ROUNDS], whole[MAX_ROUNDS];
	uint64_t shorter = exits / 5;
	struct sfile st;
	uint64_t *v;
	int dev, vm, vcpu, r, nr = rounds / 2 | 1;
	uint64_t nonzero = 0;
	uint32_t i;

	dev = vm_dev();
	vm = vm_create(dev);
	vcpu = vcpu_create(vm, 0);
	for (r = 0; r < 3; r++)
		if (vcpu_run_exits(vcpu, exits))
			die("STATSFD_VM_RUN");
	for (r = 0; r < nr; r++)
		sample[r] = vcpu_exit_ns(vcpu, exits, shorter, &whole[r]);
	/*
	 * Compiled-out stats must leave the stored values all zero (not
	 * sample_ns, the time of the read, which the core fills in).
	 */
	sfile_open(&st, stats_fd(vcpu));
	if (pread(st.fd, buf, st.data_size, st.h.data_offset) != st.data_size)
		die("pread data");
	v = (uint64_t *)buf;
	for (i = 0; i < sfile_plain_size(&st) / 8; i++)
		nonzero += v[i] != 0;

	jbegin("b4");
	jstr("label", label);
	jnum("exits_per_run", exits);
	jnum("exits_per_short_run", shorter);
	jnum("runs", nr);
	jnum("ns_per_exit", median_of(sample, nr));
	jnum("ns_per_exit_with_run_overhead", median_of(whole, nr));
	jopen("samples", '[');
	for (r = 0; r < nr; r++)
		jnum(NULL, sample[r]);
	jclose(']');
	jnum("nonzero_values", nonzero);
	jend();
	sfile_close(&st);
	close(vcpu);
	close(vm);
	close(dev);
}

/*
 * B4's yardstick: what one real exit costs in upstream KVM in this guest.
 * A 16-bit guest runs CPUID (always intercepted by KVM on SVM and handled
 * in the kernel, so the vCPU re-enters without returning to userspace) in a
 * loop of ESI iterations, then HLT, which exits to us (no in-kernel
 * irqchip).  The cost of a run with N exits minus that of a run with none,
 * over N, is the round trip of one in-kernel exit, KVM's own stats updates
 * included.
 */
static const unsigned char kvm_cpuid_loop[] = {
	0x66, 0x31, 0xc0,	/* 0: xor eax, eax (ESI = N, set by us) */
	0x0f, 0xa2,		/* 3: cpuid */
	0x66, 0x4e,		/* 5: dec esi */
	0x75, 0xf7,		/* 7: jnz 0 */
	0xf4,			/* 9: hlt */
};

#define KVM_CODE_GPA	0x1000
#define KVM_HLT_OFFSET	9

static uint64_t kvm_stat_by_name(struct sfile *s, const char *name)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < s->h.num_desc; i++) {
		struct statsfd_desc *d = sfile_desc(s, i);

		if (!strcmp(d->name, name) &&
		    pread(s->fd, &v, 8, s->h.data_offset + d->offset) == 8)
			return v;
	}
	return 0;
}

static double kvm_run_cpuid(int vcpu, struct kvm_run *run, uint32_t n)
{
	struct kvm_regs regs = { .rflags = 2 };
	double t0, t1;

	regs.rip = KVM_CODE_GPA + (n ? 0 : KVM_HLT_OFFSET);
	regs.rsi = n;
	if (ioctl(vcpu, KVM_SET_REGS, &regs))
		die("KVM_SET_REGS");
	t0 = now_ns();
	if (ioctl(vcpu, KVM_RUN, 0))
		die("KVM_RUN");
	t1 = now_ns();
	if (run->exit_reason != KVM_EXIT_HLT) {
		errno = EPROTO;
		die("KVM_RUN exit reason %u, not HLT", run->exit_reason);
	}
	return t1 - t0;
}

void phase_b4kvm(uint32_t exits)
{
	double with[MAX_ROUNDS], without[MAX_ROUNDS];
	struct kvm_userspace_memory_region mem = { 0 };
	struct kvm_sregs sregs;
	struct kvm_run *run;
	struct sfile st;
	uint64_t exits0, exits1;
	int kvm, vm, vcpu, r, nr = rounds / 4 | 1;
	unsigned char *guest;
	long run_size;

	jbegin("b4kvm");
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		jstr("error", "no /dev/kvm");
		jend();
		return;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	guest = aligned_alloc(4096, 0x10000);
	if (vm < 0 || !guest)
		die("KVM_CREATE_VM");
	memset(guest, 0xf4, 0x10000);
	memcpy(guest + KVM_CODE_GPA, kvm_cpuid_loop, sizeof(kvm_cpuid_loop));
	mem.memory_size = 0x10000;
	mem.userspace_addr = (uintptr_t)guest;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &mem))
		die("KVM_SET_USER_MEMORY_REGION");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vcpu < 0 || run_size <= 0)
		die("KVM_CREATE_VCPU");
	run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs))
		die("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs))
		die("KVM_SET_SREGS");
	sfile_open(&st, ioctl(vcpu, KVM_GET_STATS_FD, 0));

	for (r = 0; r < 3; r++)
		kvm_run_cpuid(vcpu, run, exits);
	exits0 = kvm_stat_by_name(&st, "exits");
	for (r = 0; r < nr; r++) {
		with[r] = kvm_run_cpuid(vcpu, run, exits);
		without[r] = kvm_run_cpuid(vcpu, run, 0);
	}
	exits1 = kvm_stat_by_name(&st, "exits");

	jnum("exits_per_run", exits);
	jnum("runs", nr);
	jnum("run_ns", median_of(with, nr));
	jnum("empty_run_ns", median_of(without, nr));
	jnum("ns_per_exit",
	     (median_of(with, nr) - median_of(without, nr)) / exits);
	/* KVM's own "exits" stat proves the exits happened. */
	jnum("kvm_exits_counted", exits1 - exits0);
	jnum("kvm_exits_expected", (uint64_t)nr * (exits + 2));
	jend();
	sfile_close(&st);
	munmap(run, run_size);
	close(vcpu);
	close(vm);
	close(kvm);
	free(guest);
}
