// SPDX-License-Identifier: GPL-2.0
/*
 * Proves include/uapi/linux/statsfd.h byte-compatible with <linux/kvm.h>:
 * every size, offset and constant equal, at build time (static_assert) and
 * again at run time as TAP lines, so a KVM parser reads statsfd fds and
 * statsfd tools read KVM's.
 */
#include <stddef.h>
#include <linux/kvm.h>
#include <linux/statsfd.h>
#include <linux/statsfd_vm.h>

#include "tap.h"

#define SAME(a, b)	_Static_assert((a) == (b), #a " != " #b)
#define FIELD(f)							\
	SAME(offsetof(struct statsfd_header, f), offsetof(struct kvm_stats_header, f)); \
	SAME(sizeof(((struct statsfd_header *)0)->f), sizeof(((struct kvm_stats_header *)0)->f))
#define DFIELD(f)							\
	SAME(offsetof(struct statsfd_desc, f), offsetof(struct kvm_stats_desc, f)); \
	SAME(sizeof(((struct statsfd_desc *)0)->f), sizeof(((struct kvm_stats_desc *)0)->f))

SAME(sizeof(struct statsfd_header), sizeof(struct kvm_stats_header));
SAME(sizeof(struct statsfd_desc), sizeof(struct kvm_stats_desc));
FIELD(flags); FIELD(name_size); FIELD(num_desc);
FIELD(id_offset); FIELD(desc_offset); FIELD(data_offset);
DFIELD(flags); DFIELD(exponent); DFIELD(size); DFIELD(offset);
DFIELD(bucket_size);
SAME(offsetof(struct statsfd_desc, name), offsetof(struct kvm_stats_desc, name));
SAME(STATSFD_TYPE_SHIFT, KVM_STATS_TYPE_SHIFT);
SAME(STATSFD_TYPE_MASK, KVM_STATS_TYPE_MASK);
SAME(STATSFD_TYPE_CUMULATIVE, KVM_STATS_TYPE_CUMULATIVE);
SAME(STATSFD_TYPE_INSTANT, KVM_STATS_TYPE_INSTANT);
SAME(STATSFD_TYPE_PEAK, KVM_STATS_TYPE_PEAK);
SAME(STATSFD_TYPE_LINEAR_HIST, KVM_STATS_TYPE_LINEAR_HIST);
SAME(STATSFD_TYPE_LOG_HIST, KVM_STATS_TYPE_LOG_HIST);
SAME(STATSFD_TYPE_MAX, KVM_STATS_TYPE_MAX);
SAME(STATSFD_UNIT_SHIFT, KVM_STATS_UNIT_SHIFT);
SAME(STATSFD_UNIT_MASK, KVM_STATS_UNIT_MASK);
SAME(STATSFD_UNIT_NONE, KVM_STATS_UNIT_NONE);
SAME(STATSFD_UNIT_BYTES, KVM_STATS_UNIT_BYTES);
SAME(STATSFD_UNIT_SECONDS, KVM_STATS_UNIT_SECONDS);
SAME(STATSFD_UNIT_CYCLES, KVM_STATS_UNIT_CYCLES);
SAME(STATSFD_UNIT_BOOLEAN, KVM_STATS_UNIT_BOOLEAN);
SAME(STATSFD_UNIT_MAX, KVM_STATS_UNIT_MAX);
SAME(STATSFD_BASE_SHIFT, KVM_STATS_BASE_SHIFT);
SAME(STATSFD_BASE_MASK, KVM_STATS_BASE_MASK);
SAME(STATSFD_BASE_POW10, KVM_STATS_BASE_POW10);
SAME(STATSFD_BASE_POW2, KVM_STATS_BASE_POW2);
SAME(STATSFD_BASE_MAX, KVM_STATS_BASE_MAX);
/* The aggregation extension lives in bits KVM leaves zero. */
_Static_assert(!(STATSFD_AGG_MASK & (KVM_STATS_TYPE_MASK | KVM_STATS_UNIT_MASK |
				    KVM_STATS_BASE_MASK)), "AGG overlaps KVM bits");
/* KVM_GET_STATS_FD's number within our ioctl magic. */
SAME(_IOC_NR(STATSFD_VM_GET_STATS_FD), _IOC_NR(KVM_GET_STATS_FD));
SAME(_IOC_DIR(STATSFD_VM_GET_STATS_FD), _IOC_DIR(KVM_GET_STATS_FD));

/*
 * The mmap header has no KVM counterpart: its layout is statsfd's own ABI,
 * pinned here so that it cannot change by accident (version 2, 64 bytes,
 * a 64-bit sequence count 8-byte aligned for one atomic load; version 2's
 * copy_stride took version 1's reserved0, so a version-1 reader finds the
 * same offsets and, refusing the unknown STATSFD_MMAP_LATCH flag, pread).
 */
SAME(sizeof(struct statsfd_mmap_header), 64);
SAME(offsetof(struct statsfd_mmap_header, version), 0);
SAME(offsetof(struct statsfd_mmap_header, header_size), 4);
SAME(offsetof(struct statsfd_mmap_header, seq), 8);
SAME(sizeof(((struct statsfd_mmap_header *)0)->seq), 8);
SAME(offsetof(struct statsfd_mmap_header, data_offset), 16);
SAME(offsetof(struct statsfd_mmap_header, data_size), 20);
SAME(offsetof(struct statsfd_mmap_header, flags), 24);
SAME(offsetof(struct statsfd_mmap_header, copy_stride), 28);
SAME(sizeof(((struct statsfd_mmap_header *)0)->copy_stride), 4);
SAME(offsetof(struct statsfd_mmap_header, reserved), 32);
SAME(STATSFD_MMAP_VERSION, 2);
SAME(STATSFD_MMAP_LATCH, 1);
SAME(STATSFD_MMAP_FLAGS, STATSFD_MMAP_LATCH);

#define CHECK(a, b)	tap_ok((long)(a) == (long)(b), "%s == %s (%ld)", #a, #b, (long)(a))

int main(void)
{
	CHECK(sizeof(struct statsfd_header), sizeof(struct kvm_stats_header));
	CHECK(sizeof(struct statsfd_desc), sizeof(struct kvm_stats_desc));
	CHECK(sizeof(struct statsfd_mmap_header), 64);
	CHECK(offsetof(struct statsfd_mmap_header, seq), 8);
	CHECK(offsetof(struct statsfd_mmap_header, data_offset), 16);
	CHECK(offsetof(struct statsfd_mmap_header, flags), 24);
	CHECK(offsetof(struct statsfd_mmap_header, copy_stride), 28);
	CHECK(offsetof(struct statsfd_mmap_header, reserved), 32);
	CHECK(STATSFD_MMAP_VERSION, 2);
	CHECK(STATSFD_MMAP_LATCH, 1);
#define RF(f) do {							\
		CHECK(offsetof(struct statsfd_header, f), offsetof(struct kvm_stats_header, f)); \
		CHECK(sizeof(((struct statsfd_header *)0)->f), sizeof(((struct kvm_stats_header *)0)->f)); \
	} while (0)
#define RD(f) do {							\
		CHECK(offsetof(struct statsfd_desc, f), offsetof(struct kvm_stats_desc, f)); \
		CHECK(sizeof(((struct statsfd_desc *)0)->f), sizeof(((struct kvm_stats_desc *)0)->f)); \
	} while (0)
	RF(flags); RF(name_size); RF(num_desc);
	RF(id_offset); RF(desc_offset); RF(data_offset);
	RD(flags); RD(exponent); RD(size); RD(offset); RD(bucket_size);
	CHECK(offsetof(struct statsfd_desc, name), offsetof(struct kvm_stats_desc, name));
	CHECK((__s16)-1 < 0, ((__typeof__(((struct kvm_stats_desc *)0)->exponent))-1) < 0);
	CHECK(STATSFD_TYPE_SHIFT, KVM_STATS_TYPE_SHIFT);
	CHECK(STATSFD_TYPE_MASK, KVM_STATS_TYPE_MASK);
	CHECK(STATSFD_TYPE_CUMULATIVE, KVM_STATS_TYPE_CUMULATIVE);
	CHECK(STATSFD_TYPE_INSTANT, KVM_STATS_TYPE_INSTANT);
	CHECK(STATSFD_TYPE_PEAK, KVM_STATS_TYPE_PEAK);
	CHECK(STATSFD_TYPE_LINEAR_HIST, KVM_STATS_TYPE_LINEAR_HIST);
	CHECK(STATSFD_TYPE_LOG_HIST, KVM_STATS_TYPE_LOG_HIST);
	CHECK(STATSFD_TYPE_MAX, KVM_STATS_TYPE_MAX);
	CHECK(STATSFD_UNIT_SHIFT, KVM_STATS_UNIT_SHIFT);
	CHECK(STATSFD_UNIT_MASK, KVM_STATS_UNIT_MASK);
	CHECK(STATSFD_UNIT_NONE, KVM_STATS_UNIT_NONE);
	CHECK(STATSFD_UNIT_BYTES, KVM_STATS_UNIT_BYTES);
	CHECK(STATSFD_UNIT_SECONDS, KVM_STATS_UNIT_SECONDS);
	CHECK(STATSFD_UNIT_CYCLES, KVM_STATS_UNIT_CYCLES);
	CHECK(STATSFD_UNIT_BOOLEAN, KVM_STATS_UNIT_BOOLEAN);
	CHECK(STATSFD_UNIT_MAX, KVM_STATS_UNIT_MAX);
	CHECK(STATSFD_BASE_SHIFT, KVM_STATS_BASE_SHIFT);
	CHECK(STATSFD_BASE_MASK, KVM_STATS_BASE_MASK);
	CHECK(STATSFD_BASE_POW10, KVM_STATS_BASE_POW10);
	CHECK(STATSFD_BASE_POW2, KVM_STATS_BASE_POW2);
	CHECK(STATSFD_BASE_MAX, KVM_STATS_BASE_MAX);
	CHECK(STATSFD_NAME_SIZE_DEFAULT, 48);
	CHECK(STATSFD_AGG_MASK & (KVM_STATS_TYPE_MASK | KVM_STATS_UNIT_MASK |
				  KVM_STATS_BASE_MASK), 0);
	CHECK(_IOC_NR(STATSFD_VM_GET_STATS_FD), _IOC_NR(KVM_GET_STATS_FD));
	return tap_done();
}
