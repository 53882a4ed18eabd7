/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm_guest.h - the smallest guest /dev/kvm can run, for the single-file
 * KVM programs (kvm_run_dump, kvm_extras_test, B17's b17_kvm): a few bytes
 * of 16-bit real-mode code at guest page KVM_GUEST_CODE_GPA, in one memory
 * slot, and vCPUs starting there with no in-kernel irqchip, so that every
 * io and hlt the code does exits to the program.
 *
 * The includer defines die(), which reports what failed (with errno) its
 * own way and exits: these helpers only say what failed.
 */
#ifndef KVM_GUEST_H
#define KVM_GUEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/kvm.h>

#define KVM_GUEST_CODE_GPA	0x1000
/* Guest memory: page 0 unused, the code's page at KVM_GUEST_CODE_GPA. */
#define KVM_GUEST_MEM_SIZE	0x2000

static void die(const char *what);

/* A vCPU, and its mapped struct kvm_run (what the last KVM_RUN exited for). */
struct kvm_guest_vcpu {
	int fd;
	struct kvm_run *run;
	size_t run_size;
};

/*
 * Give @vm its memory, slot 0 from guest address 0, with @code at
 * KVM_GUEST_CODE_GPA.  Once per VM, as the code is the same for every vCPU.
 */
static inline void kvm_guest_memory(int vm, const void *code, size_t size)
{
	struct kvm_userspace_memory_region region = {
		.memory_size = KVM_GUEST_MEM_SIZE,
	};
	void *mem = mmap(NULL, KVM_GUEST_MEM_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		die("mmap");
	memcpy((char *)mem + KVM_GUEST_CODE_GPA, code, size);
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region))
		die("KVM_SET_USER_MEMORY_REGION");
}

/* Point @vcpu at the code's first byte again, every other register zero. */
static inline void kvm_guest_restart(int vcpu)
{
	struct kvm_regs regs = { .rip = KVM_GUEST_CODE_GPA, .rflags = 2 };

	if (ioctl(vcpu, KVM_SET_REGS, &regs))
		die("KVM_SET_REGS");
}

/*
 * Vcpu @id of @vm, its struct kvm_run mapped, in real mode at the code:
 * CS based at 0 (reset bases it at 0xffff0000, for the reset vector),
 * IP at KVM_GUEST_CODE_GPA.
 */
static inline void kvm_guest_vcpu(int kvm, int vm, int id,
				  struct kvm_guest_vcpu *v)
{
	int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	struct kvm_sregs sregs;

	v->fd = ioctl(vm, KVM_CREATE_VCPU, id);
	if (v->fd < 0 || run_size < 0)
		die("KVM_CREATE_VCPU");
	v->run_size = run_size;
	v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->fd, 0);
	if (v->run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(v->fd, KVM_GET_SREGS, &sregs))
		die("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs))
		die("KVM_SET_SREGS");
	kvm_guest_restart(v->fd);
}

/*
 * Run @v until it exits for something other than io, which
 * v->run->exit_reason then says; returns how many io exits came first.
 */
static inline int kvm_guest_run_io(struct kvm_guest_vcpu *v)
{
	int io = 0;

	for (;;) {
		if (ioctl(v->fd, KVM_RUN, 0))
			die("KVM_RUN");
		if (v->run->exit_reason != KVM_EXIT_IO)
			return io;
		io++;
	}
}

/* Unmap @v's struct kvm_run; its fd stays open. */
static inline void kvm_guest_unmap(struct kvm_guest_vcpu *v)
{
	munmap(v->run, v->run_size);
}

#endif /* KVM_GUEST_H */
