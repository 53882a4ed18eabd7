/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * statsfd VM/vCPU provider: the ioctls of /dev/statsfd_vm and of the VM and
 * vCPU fds it hands out.  See Documentation/statsfd-vm-api.rst.
 */
#ifndef _UAPI_LINUX_STATSFD_VM_H
#define _UAPI_LINUX_STATSFD_VM_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Unused in Documentation/userspace-api/ioctl/ioctl-number.rst as of 6.12. */
#define STATSFD_VM_IO			0xB9

/* Bumped only for incompatible changes; additions are found by probing. */
#define STATSFD_VM_API_VERSION		1

/**
 * struct statsfd_vm_create_vm - argument of STATSFD_VM_CREATE_VM
 * @flags: must be 0
 * @reserved: must be 0
 */
struct statsfd_vm_create_vm {
	__u32 flags;
	__u32 reserved[7];
};

/**
 * struct statsfd_vm_create_vcpu - argument of STATSFD_VM_CREATE_VCPU
 * @vcpu_id: id of the new vCPU, below the provider's max_vcpus limit and
 *	unique within the VM
 * @flags: must be 0
 * @reserved: must be 0
 */
struct statsfd_vm_create_vcpu {
	__u32 vcpu_id;
	__u32 flags;
	__u64 reserved[3];
};

/**
 * struct statsfd_vm_run - argument of STATSFD_VM_RUN: a synthetic workload
 * @flags: must be 0
 * @reserved0: must be 0
 * @io_exits: number of port I/O exits to take
 * @mmio_exits: number of MMIO exits to take
 * @hypercall_exits: number of hypercall exits to take
 * @halt_exits: number of HLT exits to take; each one halts the vCPU
 * @io_bytes: bytes transferred by each port I/O exit, 0 to STATSFD_VM_IO_BYTES_MAX
 * @cycles_per_exit: synthetic guest cycles charged to every exit, 0 to
 *	STATSFD_VM_CYCLES_PER_EXIT_MAX, so that one run (at most
 *	STATSFD_VM_RUN_EXITS_MAX exits) adds at most 2^62 to guest_cycles and
 *	cannot wrap it on its own
 * @halt_poll_ns: how long each halt polls for a kick before sleeping,
 *	at most the provider's halt_poll_ns_max
 * @halt_timeout_ns: longest sleep of each halt, at most
 *	STATSFD_VM_HALT_TIMEOUT_NS_MAX; 0 sleeps until kicked
 * @exits_done: output, ignored on input: the exits of the workload taken
 *	by this run, the signal exit that ends an interrupted run not
 *	included; written back when RUN returns 0 or -EINTR
 * @reserved: must be 0
 *
 * The exits are taken in the order io, mmio, hypercall, halt.  The total
 * number of exits of one run is at most STATSFD_VM_RUN_EXITS_MAX.  After
 * -EINTR, @exits_done tells how far the workload got: the first
 * @exits_done exits of that order were taken (a halt counts once it has
 * begun, even if the signal then ended it).
 */
struct statsfd_vm_run {
	__u32 flags;
	__u32 reserved0;
	__u64 io_exits;
	__u64 mmio_exits;
	__u64 hypercall_exits;
	__u64 halt_exits;
	__u64 io_bytes;
	__u64 cycles_per_exit;
	__u64 halt_poll_ns;
	__u64 halt_timeout_ns;
	__u64 exits_done;
	__u64 reserved[3];
};

#define STATSFD_VM_IO_BYTES_MAX		4096ULL
#define STATSFD_VM_HALT_TIMEOUT_NS_MAX	10000000000ULL
#define STATSFD_VM_RUN_EXITS_MAX	(1ULL << 32)
/*
 * Largest cycles_per_exit; more is EINVAL.  2^30 cycles (about 0.36 s at
 * 3 GHz) is far beyond what a real exit costs, and 2^30 times
 * STATSFD_VM_RUN_EXITS_MAX is 2^62: a quarter of the range of
 * guest_cycles, so one run cannot wrap it (as STATSFD_VM_IO_BYTES_MAX
 * keeps one run's io_bytes below 2^44).
 */
#define STATSFD_VM_CYCLES_PER_EXIT_MAX	(1ULL << 30)

/* On /dev/statsfd_vm: returns STATSFD_VM_API_VERSION. */
#define STATSFD_VM_GET_API_VERSION	_IO(STATSFD_VM_IO, 0x00)
/* On /dev/statsfd_vm: returns a new VM fd. */
#define STATSFD_VM_CREATE_VM		_IOW(STATSFD_VM_IO, 0x01, struct statsfd_vm_create_vm)
/* On a VM fd: returns a new vCPU fd. */
#define STATSFD_VM_CREATE_VCPU		_IOW(STATSFD_VM_IO, 0x41, struct statsfd_vm_create_vcpu)
/*
 * On a vCPU fd: runs the workload; 0, or -EINTR if a signal ended it.
 * Both write exits_done back.
 */
#define STATSFD_VM_RUN			_IOWR(STATSFD_VM_IO, 0x80, struct statsfd_vm_run)
/* On a vCPU fd: wakes a halted vCPU, or makes its next halt end at once. */
#define STATSFD_VM_KICK			_IO(STATSFD_VM_IO, 0x81)
/*
 * On /dev/statsfd_vm (system-wide totals), a VM fd or a vCPU fd: returns a
 * new read-only stats fd.  Same number as KVM_GET_STATS_FD within our magic.
 */
#define STATSFD_VM_GET_STATS_FD		_IO(STATSFD_VM_IO, 0xce)

#endif /* _UAPI_LINUX_STATSFD_VM_H */
