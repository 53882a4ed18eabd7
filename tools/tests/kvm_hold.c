// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_hold - keep one idle KVM VM alive, so that the KVM tests of
 * `make check`'s 6.1 guest never flip KVM's static keys.
 *
 * Creating the first VM and destroying the last one switch static keys
 * that KVM uses (preempt_notifier_key, whose branches sit in __schedule(),
 * on every VM; kvm_has_noapic_vcpu on every vCPU without an in-kernel
 * local APIC), and each switch live-patches kernel text through
 * text_poke_bp(): an INT3 over the site, the new bytes, IPIs in between.
 * Under QEMU's multi-threaded TCG a vCPU that translates the site while
 * another vCPU writes it can keep a stale translation holding the INT3
 * after the memory holds the final instruction.  Every pass then traps;
 * kprobe_int3_handler() sees no INT3 in memory ("removed right after we
 * hit it"), backs up and retries, forever, with interrupts off inside
 * __schedule(): the other vCPU soon waits on it, and the guest stops dead
 * (no soft-lockup or RCU report when that wait has interrupts off too) or
 * the other vCPU's soft-lockup detector names the task it was running.
 *
 * With this VM (one vCPU, no irqchip) alive, the keys stay on: the tests'
 * VMs only move their counts above zero, and no text is patched.  The VM
 * is held through its stats fd alone (a stats fd pins its VM); the VM and
 * vCPU fds are closed and the vCPU is never mapped, so statsfd-collector
 * --discover-kvm does not take this process for a VMM.  It never runs.
 *
 * Usage: kvm_hold READY_FILE   (writes "ready" there once the VM exists,
 * then sleeps until killed; exit status 1 with a message on failure)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

static int fail(const char *what)
{
	fprintf(stderr, "kvm_hold: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	int kvm, vm, vcpu, stats;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: kvm_hold READY_FILE\n");
		return 2;
	}
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("/dev/kvm");
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		return fail("KVM_CREATE_VCPU");
	stats = ioctl(vm, KVM_GET_STATS_FD, NULL);
	if (stats < 0)
		return fail("KVM_GET_STATS_FD");
	close(vcpu);
	close(vm);
	close(kvm);
	f = fopen(argv[1], "w");
	if (!f || fputs("ready\n", f) < 0 || fclose(f))
		return fail(argv[1]);
	for (;;)
		pause();
}
