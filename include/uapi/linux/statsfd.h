/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * statsfd binary stats file format.
 *
 * Byte-compatible with the KVM binary stats format (KVM_GET_STATS_FD): a
 * parser written for one reads the other.  The file is four blocks, located
 * only through the header offsets; see Documentation/statsfd-abi.rst.
 */
#ifndef _UAPI_LINUX_STATSFD_H
#define _UAPI_LINUX_STATSFD_H

#include <linux/ioctl.h>
#include <linux/stddef.h>
#include <linux/types.h>

/* For userspace headers older than Linux 5.16, which lack it. */
#ifndef __DECLARE_FLEX_ARRAY
#define __DECLARE_FLEX_ARRAY(TYPE, NAME)	\
	struct {				\
		struct { } __empty_ ## NAME;	\
		TYPE NAME[];			\
	}
#endif

/**
 * struct statsfd_header - header of a statsfd stats file, at offset 0
 * @flags: always 0; parsers must reject files with unknown flags set
 * @name_size: size in bytes of the id string and of every descriptor name,
 *	including the terminating NUL; a multiple of 8
 * @num_desc: number of descriptors
 * @id_offset: file offset of the id string
 * @desc_offset: file offset of the descriptor block
 * @data_offset: file offset of the data block
 *
 * Identical in size and layout to struct kvm_stats_header.
 */
struct statsfd_header {
	__u32 flags;
	__u32 name_size;
	__u32 num_desc;
	__u32 id_offset;
	__u32 desc_offset;
	__u32 data_offset;
};

/* Bits 0-3 of statsfd_desc.flags: how the value behaves over time. */
#define STATSFD_TYPE_SHIFT		0
#define STATSFD_TYPE_MASK		(0xF << STATSFD_TYPE_SHIFT)
#define STATSFD_TYPE_CUMULATIVE		(0x0 << STATSFD_TYPE_SHIFT)
#define STATSFD_TYPE_INSTANT		(0x1 << STATSFD_TYPE_SHIFT)
#define STATSFD_TYPE_PEAK		(0x2 << STATSFD_TYPE_SHIFT)
#define STATSFD_TYPE_LINEAR_HIST	(0x3 << STATSFD_TYPE_SHIFT)
#define STATSFD_TYPE_LOG_HIST		(0x4 << STATSFD_TYPE_SHIFT)
#define STATSFD_TYPE_MAX		STATSFD_TYPE_LOG_HIST

/* Bits 4-7: the unit of the value. */
#define STATSFD_UNIT_SHIFT		4
#define STATSFD_UNIT_MASK		(0xF << STATSFD_UNIT_SHIFT)
#define STATSFD_UNIT_NONE		(0x0 << STATSFD_UNIT_SHIFT)
#define STATSFD_UNIT_BYTES		(0x1 << STATSFD_UNIT_SHIFT)
#define STATSFD_UNIT_SECONDS		(0x2 << STATSFD_UNIT_SHIFT)
#define STATSFD_UNIT_CYCLES		(0x3 << STATSFD_UNIT_SHIFT)
#define STATSFD_UNIT_BOOLEAN		(0x4 << STATSFD_UNIT_SHIFT)
#define STATSFD_UNIT_MAX		STATSFD_UNIT_BOOLEAN

/* Bits 8-11: the base of the exponent. */
#define STATSFD_BASE_SHIFT		8
#define STATSFD_BASE_MASK		(0xF << STATSFD_BASE_SHIFT)
#define STATSFD_BASE_POW10		(0x0 << STATSFD_BASE_SHIFT)
#define STATSFD_BASE_POW2		(0x1 << STATSFD_BASE_SHIFT)
#define STATSFD_BASE_MAX		STATSFD_BASE_POW2

/*
 * Bits 12-15, a statsfd extension in bits KVM leaves zero: the value is
 * derived at read time over a set of child sources (for example a VM's
 * vCPUs).  KVM parsers ignore these bits and see an ordinary stat; 0 means
 * the stat is not an aggregate, so every KVM file is also a valid statsfd
 * file.
 */
#define STATSFD_AGG_SHIFT		12
#define STATSFD_AGG_MASK		(0xF << STATSFD_AGG_SHIFT)
#define STATSFD_AGG_NONE		(0x0 << STATSFD_AGG_SHIFT)
#define STATSFD_AGG_SUM			(0x1 << STATSFD_AGG_SHIFT)
#define STATSFD_AGG_MINIMUM		(0x2 << STATSFD_AGG_SHIFT)
#define STATSFD_AGG_MAXIMUM		(0x3 << STATSFD_AGG_SHIFT)
#define STATSFD_AGG_AVERAGE		(0x4 << STATSFD_AGG_SHIFT)
#define STATSFD_AGG_COUNT_NONZERO	(0x5 << STATSFD_AGG_SHIFT)
/* The highest valid kind, like STATSFD_TYPE_MAX; not the "maximum" kind. */
#define STATSFD_AGG_MAX			STATSFD_AGG_COUNT_NONZERO

/* Bits 16-31 are reserved and always 0. */
#define STATSFD_DESC_FLAGS_RESERVED	0xFFFF0000u

/* Name size used by KVM and by statsfd sources that do not choose one. */
#define STATSFD_NAME_SIZE_DEFAULT	48

/**
 * struct statsfd_desc - descriptor of one stat
 * @flags: type, unit, base and aggregation, see STATSFD_*_MASK
 * @exponent: the value times base^exponent is the value in the unit
 * @size: number of __u64 values (buckets for a histogram)
 * @offset: byte offset of the values, relative to header.data_offset
 * @bucket_size: width of one bucket of a linear histogram, else 0
 * @name: NUL-terminated name, zero-padded to header.name_size bytes
 *
 * Identical in size and layout to struct kvm_stats_desc; the stride of the
 * descriptor block is sizeof(struct statsfd_desc) + header.name_size.
 */
struct statsfd_desc {
	__u32 flags;
	__s16 exponent;
	__u16 size;
	__u32 offset;
	__u32 bucket_size;
#ifdef __cplusplus
	/*
	 * Older userspace headers (those of Linux 6.1, for one) define
	 * __DECLARE_FLEX_ARRAY() with an empty struct, which C++ sizes as
	 * one byte: the struct would no longer be 16 bytes.
	 */
	char name[];
#else
	__DECLARE_FLEX_ARRAY(char, name);
#endif
};

/*
 * Stats a source of a schema with update windows appends to its data
 * block, after every other stat, as two ordinary descriptors (a KVM parser
 * sees two more stats):
 *
 * - STATSFD_STAT_SAMPLE_NS: CLOCK_BOOTTIME nanoseconds at which the values
 *   of this read were current (STATSFD_TYPE_INSTANT, STATSFD_UNIT_SECONDS,
 *   exponent -9);
 * - STATSFD_STAT_GENERATION: update windows completed on the source so far
 *   (STATSFD_TYPE_CUMULATIVE, STATSFD_UNIT_NONE); equal to
 *   statsfd_mmap_header.seq at that moment.
 */
#define STATSFD_STAT_SAMPLE_NS		"sample_ns"
#define STATSFD_STAT_GENERATION		"generation"

/*
 * mmap() of a stats fd: PROT_READ and MAP_SHARED (or MAP_PRIVATE without
 * write), offset 0 (or any page inside the area), at most the area's size.
 * The area starts with struct statsfd_mmap_header; two copies of the
 * values follow, the first at data_offset, the second copy_stride bytes
 * later, each laid out exactly as the first data_size bytes of the file's
 * data block (a stat's values are at data_offset + desc.offset in the
 * first copy).  The writer publishes each update window by filling the
 * copy readers are not using and then advancing seq, which selects the
 * copy to read (seq & 1): a seqcount latch, so a reader never waits for
 * the writer, running or not.  Aggregates, sample_ns and generation are
 * not in the area: read them with pread().  The area is rounded up to
 * whole pages; mapping its first page is always valid.  See "Mapping the
 * values" in Documentation/statsfd-abi.rst, and statsfd_mmap_copy() below
 * for the reader protocol.
 */
#define STATSFD_MMAP_VERSION		2

/* statsfd_mmap_header.flags: the two-copy protocol of version 2. */
#define STATSFD_MMAP_LATCH		(1U << 0)
#define STATSFD_MMAP_FLAGS		STATSFD_MMAP_LATCH

/**
 * struct statsfd_mmap_header - start of the mapped values area
 * @version: STATSFD_MMAP_VERSION (2); a later version only appends fields
 *	before data_offset and keeps the meaning of these
 * @header_size: bytes of this header as the kernel fills it: 64, never
 *	less, and never more than data_offset
 * @seq: update windows published so far; the current values are copy
 *	(seq & 1).  Load it with one 64-bit atomic load
 * @data_offset: offset of copy 0 from the start of the area; a multiple
 *	of 8
 * @data_size: bytes of values in each copy, a multiple of 8
 * @flags: STATSFD_MMAP_LATCH.  A reader that finds a flag it does not
 *	know set, or STATSFD_MMAP_LATCH clear, must not use the mapping
 *	(pread() still works).  Version 1 had no copies and no flag: its
 *	readers, which refuse unknown flags, fall back to pread()
 * @copy_stride: bytes from copy 0 to copy 1, at least data_size and a
 *	multiple of 8 (reserved and 0 in version 1)
 * @reserved: 0; readers ignore them
 */
struct statsfd_mmap_header {
	__u32 version;
	__u32 header_size;
	__u64 seq;
	__u32 data_offset;
	__u32 data_size;
	__u32 flags;
	__u32 copy_stride;
	__u64 reserved[4];
};

#ifndef __KERNEL__
/**
 * statsfd_mmap_copy() - copy published values out of a mapped stats area
 * @h: the mapping of the area's first page (and of the pages after it
 *	that the copies cover)
 * @dst: where to copy @len bytes; 8-byte aligned
 * @off: byte offset in the values (a descriptor's offset), a multiple of 8
 * @len: bytes to copy, a multiple of 8; @off + @len at most data_size
 * @generation: where to store the windows published when the copy was
 *	current (the "generation" stat of a pread() at that moment), or NULL
 *
 * The reader protocol of the area, as the kernel's latch readers follow
 * it: load seq, copy from copy (seq & 1), and keep the result if seq has
 * not moved meanwhile.  The writer only ever fills the copy that seq does
 * not select, so a retry happens only when the writer published a window
 * during the copy: it never waits for a writer that is not running.
 *
 * Return: 0, or -1 if the area is not one this header describes (an
 * unknown version or flag, a copy_stride that does not separate the
 * copies, or @off/@len outside the values): then use pread().
 */
static __inline__ int statsfd_mmap_copy(const struct statsfd_mmap_header *h,
					void *dst, __u32 off, __u32 len,
					__u64 *generation)
{
	const __u64 *copy;
	__u64 *out = (__u64 *)dst;
	__u64 seq;
	__u32 i;

	if (h->version < 2 || !(h->flags & STATSFD_MMAP_LATCH) ||
	    (h->flags & ~STATSFD_MMAP_FLAGS) || h->copy_stride % 8 ||
	    h->copy_stride < h->data_size || off % 8 || len % 8 ||
	    off > h->data_size || len > h->data_size - off)
		return -1;
	for (;;) {
		/* Pairs with the writer's barrier before it advances seq. */
		seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		copy = (const __u64 *)((const char *)h + h->data_offset +
				       (seq & 1) * h->copy_stride + off);
		for (i = 0; i < len / 8; i++)
			out[i] = __atomic_load_n(&copy[i], __ATOMIC_RELAXED);
		/* The values before seq again. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == seq)
			break;
	}
	if (generation)
		*generation = seq;
	return 0;
}
#endif

/*
 * ioctls of every stats fd (and of every view fd made from one), magic
 * 0xBA (free in mainline's ioctl-number.rst); the VM provider's ioctls
 * use 0xB9 (include/uapi/linux/statsfd_vm.h).
 */
#define STATSFD_IOC_MAGIC		0xBA

/* statsfd_view_args.flags: @list holds __u32 descriptor indices. */
#define STATSFD_VIEW_BY_INDEX		(1U << 0)
#define STATSFD_VIEW_FLAGS		STATSFD_VIEW_BY_INDEX

/* Most stats one view may select (E2BIG beyond); far above any schema. */
#define STATSFD_VIEW_COUNT_MAX		65536

/**
 * struct statsfd_view_args - argument of STATSFD_IOC_VIEW
 * @flags: 0 (@list names the stats) or STATSFD_VIEW_BY_INDEX (@list
 *	indexes them); other bits must be 0
 * @count: entries in @list, 1 to the number of descriptors of the fd
 * @list: user pointer: @count __u64 user pointers to NUL-terminated
 *	names, or with STATSFD_VIEW_BY_INDEX @count __u32 indices of
 *	descriptors of the fd the ioctl is made on (a view's own indices
 *	for a view)
 * @reserved: must be 0
 *
 * STATSFD_IOC_VIEW returns a new read-only stats fd (O_CLOEXEC) whose
 * file is a complete stats file of its own: the same header format and
 * id, the selected descriptors in the order of @list, and a data block
 * holding only their values, back to back in that order.  See "Views" in
 * Documentation/statsfd-abi.rst.
 */
struct statsfd_view_args {
	__u32 flags;
	__u32 count;
	__u64 list;
	__u64 reserved[2];
};

#define STATSFD_IOC_VIEW	_IOW(STATSFD_IOC_MAGIC, 0x01, struct statsfd_view_args)

#endif /* _UAPI_LINUX_STATSFD_H */
