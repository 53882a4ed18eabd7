/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd in-kernel API: declare stats, group them into a schema, register
 * sources and hand out read-only binary stats fds.
 * See Documentation/statsfd-kernel-api.rst.
 */
#ifndef _LINUX_STATSFD_H
#define _LINUX_STATSFD_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/limits.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/stddef.h>
#include <linux/types.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <uapi/linux/statsfd.h>

/*
 * Readers load each live u64 with one READ_ONCE() while its writer stores
 * it with one WRITE_ONCE() (statsfd_stat_add() and friends); only a 64-bit
 * kernel makes both single instructions, so a 32-bit one could return a
 * value that is half old, half new.  See "Data block" in
 * Documentation/statsfd-abi.rst.
 */
#ifndef CONFIG_64BIT
#error "statsfd needs 64-bit loads and stores: see Documentation/statsfd-kernel-api.rst"
#endif

struct dentry;
struct file;
struct module;

/*
 * Every function statsfd.ko exports is in the STATSFD symbol namespace
 * (EXPORT_SYMBOL_NS_GPL), so a module that uses them imports it, once, next
 * to its MODULE_LICENSE(): MODULE_IMPORT_NS(STATSFD_NS).  STATSFD_NS
 * spells the namespace as the kernel being built against wants it (6.13
 * made namespaces string literals).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define STATSFD_NS	"STATSFD"
#else
#define STATSFD_NS	STATSFD
#endif

/**
 * define STATSFD_API_VERSION - version of this in-kernel API
 *
 * Raised by one whenever a change to this header or to what the
 * functions statsfd.ko exports mean would break a provider built for the
 * previous version: a provider compiled against another version may not
 * build, or may build and then misbehave.  A provider states the version
 * it was written for, so that building it against any other fails with a
 * message rather than later::
 *
 *	#if STATSFD_API_VERSION != 3
 *	#error "written for statsfd kernel API version 3"
 *	#endif
 *
 * Versions: 1, the API before this macro existed (struct statsfd_source
 * with its inside in the header, one statsfd_source_init() for every kind
 * of source); 2, struct statsfd_source with a private part and the three
 * set-up entry points statsfd_source_init(), statsfd_source_init_snapshot()
 * and statsfd_source_init_computed(); 3, statsfd_source_init_snapshot()
 * takes the owner's live stats struct, as statsfd_source_init() does,
 * instead of allocating one.
 */
#define STATSFD_API_VERSION		3

/*
 * Largest name_size a schema may choose: ids and names are meant to be
 * short, and the descriptor stride is 16 + name_size bytes per stat.
 */
#define STATSFD_NAME_SIZE_MAX		256

/**
 * struct statsfd_desc_def - compile-time definition of one stat
 * @flags: STATSFD_TYPE_*, STATSFD_UNIT_*, STATSFD_BASE_* (and STATSFD_AGG_*
 *	for an aggregate)
 * @exponent: as in struct statsfd_desc
 * @size: number of u64 values
 * @offset: offsetof() of the values in the source's stats struct; for an
 *	aggregate, offsetof() of the aggregated field in the child's struct
 * @bucket_size: as in struct statsfd_desc
 * @name: name of the stat, a C identifier
 *
 * Built with the STATSFD_* macros below, never by hand, so that the masks,
 * exponents and field types are checked at build time.
 */
struct statsfd_desc_def {
	u32 flags;
	s16 exponent;
	u16 size;
	u32 offset;
	u32 bucket_size;
	const char *name;
};

/* True when @field of @stype is a u64, or an array of u64 for a histogram. */
#define __STATSFD_IS_U64(stype, field)					\
	__same_type(((stype *)0)->field, u64)
#define __STATSFD_IS_U64_ARRAY(stype, field)				\
	(__same_type(((stype *)0)->field[0], u64) &&			\
	 !__same_type(((stype *)0)->field, u64 *))

#define __STATSFD_CHECK_FLAGS(type, unit, base, exp)			\
	(BUILD_BUG_ON_ZERO((type) & ~STATSFD_TYPE_MASK) +		\
	 BUILD_BUG_ON_ZERO((unit) & ~STATSFD_UNIT_MASK) +		\
	 BUILD_BUG_ON_ZERO((base) & ~STATSFD_BASE_MASK) +		\
	 BUILD_BUG_ON_ZERO((type) > STATSFD_TYPE_MAX) +			\
	 BUILD_BUG_ON_ZERO((unit) > STATSFD_UNIT_MAX) +			\
	 BUILD_BUG_ON_ZERO((base) > STATSFD_BASE_MAX) +			\
	 BUILD_BUG_ON_ZERO((unit) == STATSFD_UNIT_SECONDS && (exp) > 0) + \
	 BUILD_BUG_ON_ZERO((unit) != STATSFD_UNIT_SECONDS && (exp) < 0) + \
	 BUILD_BUG_ON_ZERO((unit) == STATSFD_UNIT_BOOLEAN && (exp) != 0))

/* The values of a stat are u64s, so they must be 8-byte aligned. */
#define __STATSFD_CHECK_OFFSET(stype, field)				\
	BUILD_BUG_ON_ZERO(offsetof(stype, field) % sizeof(u64))

/*
 * __STATSFD_DESC and __STATSFD_DESC_HIST take the stats struct type
 * explicitly; providers use the forms below, which take it from
 * STATSFD_STATS_TYPE.
 *
 * __STATSFD_DESC - define a scalar stat bound to a u64 field of @stype
 * @stype: the stats struct type
 * @field: the u64 member of @stype; also the stat's name
 * @type: STATSFD_TYPE_CUMULATIVE, _INSTANT or _PEAK
 * @unit: STATSFD_UNIT_*
 * @base: STATSFD_BASE_*
 * @exp: exponent
 */
#define __STATSFD_DESC(stype, field, type, unit, base, exp)		\
	{								\
		.flags = ((type) | (unit) | (base)) +			\
			 __STATSFD_CHECK_FLAGS(type, unit, base, exp) +	\
			 __STATSFD_CHECK_OFFSET(stype, field) +		\
			 BUILD_BUG_ON_ZERO(!__STATSFD_IS_U64(stype, field)) + \
			 BUILD_BUG_ON_ZERO((type) >= STATSFD_TYPE_LINEAR_HIST), \
		.exponent = (exp),					\
		.size = 1,						\
		.offset = offsetof(stype, field),			\
		.bucket_size = 0,					\
		.name = #field,						\
	}

/*
 * __STATSFD_DESC_HIST - define a histogram bound to a u64 array of @stype
 * @stype: the stats struct type
 * @field: the u64 array member of @stype; one element per bucket
 * @type: STATSFD_TYPE_LINEAR_HIST or STATSFD_TYPE_LOG_HIST
 * @unit: STATSFD_UNIT_*
 * @base: STATSFD_BASE_*
 * @exp: exponent
 * @bsz: bucket size for a linear histogram (non-zero), 0 for a log one
 */
#define __STATSFD_DESC_HIST(stype, field, type, unit, base, exp, bsz)	\
	{								\
		.flags = ((type) | (unit) | (base)) +			\
			 __STATSFD_CHECK_FLAGS(type, unit, base, exp) +	\
			 __STATSFD_CHECK_OFFSET(stype, field) +		\
			 BUILD_BUG_ON_ZERO(sizeof_field(stype, field) /	\
					   sizeof(u64) > U16_MAX) +	\
			 BUILD_BUG_ON_ZERO(!__STATSFD_IS_U64_ARRAY(stype, field)) + \
			 BUILD_BUG_ON_ZERO((type) < STATSFD_TYPE_LINEAR_HIST) + \
			 BUILD_BUG_ON_ZERO(((type) == STATSFD_TYPE_LINEAR_HIST) != \
					   ((bsz) != 0)),		\
		.exponent = (exp),					\
		.size = sizeof_field(stype, field) / sizeof(u64),	\
		.offset = offsetof(stype, field),			\
		.bucket_size = (bsz),					\
		.name = #field,						\
	}

/**
 * STATSFD_DESC - define a scalar stat bound to a u64 field of the stats struct
 * @field: the u64 member of STATSFD_STATS_TYPE; also the stat's name
 * @type: STATSFD_TYPE_CUMULATIVE, _INSTANT or _PEAK
 * @unit: STATSFD_UNIT_*
 * @base: STATSFD_BASE_*
 * @exp: exponent
 *
 * This and every helper below take the stats struct type from the macro
 * STATSFD_STATS_TYPE, which the provider defines before its descriptor
 * table and undefines after it, so that no line repeats it::
 *
 *	#define STATSFD_STATS_TYPE struct my_queue_stats
 *	static const struct statsfd_desc_def my_queue_descs[] = {
 *		STATSFD_COUNTER(packets),
 *		STATSFD_BYTES(bytes),
 *	};
 *	#undef STATSFD_STATS_TYPE
 *
 * A field that is not a member of that type, or not a u64 (an array of
 * u64 for a histogram), fails to build.
 */
#define STATSFD_DESC(field, type, unit, base, exp)			\
	__STATSFD_DESC(STATSFD_STATS_TYPE, field, type, unit, base, exp)

/**
 * STATSFD_DESC_HIST - define a histogram bound to a u64 array of the stats
 *	struct (STATSFD_STATS_TYPE)
 * @field: the u64 array member; one element per bucket
 * @type: STATSFD_TYPE_LINEAR_HIST or STATSFD_TYPE_LOG_HIST
 * @unit: STATSFD_UNIT_*
 * @base: STATSFD_BASE_*
 * @exp: exponent
 * @bsz: bucket size for a linear histogram (non-zero), 0 for a log one
 */
#define STATSFD_DESC_HIST(field, type, unit, base, exp, bsz)		\
	__STATSFD_DESC_HIST(STATSFD_STATS_TYPE, field, type, unit, base, exp, bsz)

/* Scalars, as KVM names them. */
#define STATSFD_COUNTER(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_CUMULATIVE,		\
		     STATSFD_UNIT_NONE, STATSFD_BASE_POW10, 0)
#define STATSFD_ICOUNTER(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_INSTANT,		\
		     STATSFD_UNIT_NONE, STATSFD_BASE_POW10, 0)
#define STATSFD_PCOUNTER(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_PEAK,			\
		     STATSFD_UNIT_NONE, STATSFD_BASE_POW10, 0)
#define STATSFD_IBOOLEAN(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_INSTANT,		\
		     STATSFD_UNIT_BOOLEAN, STATSFD_BASE_POW10, 0)
#define STATSFD_PBOOLEAN(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_PEAK,			\
		     STATSFD_UNIT_BOOLEAN, STATSFD_BASE_POW10, 0)
#define STATSFD_TIME_NSEC(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_CUMULATIVE,		\
		     STATSFD_UNIT_SECONDS, STATSFD_BASE_POW10, -9)
#define STATSFD_PEAK_TIME_NSEC(field)				\
	STATSFD_DESC(field, STATSFD_TYPE_PEAK,			\
		     STATSFD_UNIT_SECONDS, STATSFD_BASE_POW10, -9)
#define STATSFD_BYTES(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_CUMULATIVE,		\
		     STATSFD_UNIT_BYTES, STATSFD_BASE_POW2, 0)
#define STATSFD_IBYTES(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_INSTANT,		\
		     STATSFD_UNIT_BYTES, STATSFD_BASE_POW2, 0)
#define STATSFD_CYCLES(field)					\
	STATSFD_DESC(field, STATSFD_TYPE_CUMULATIVE,		\
		     STATSFD_UNIT_CYCLES, STATSFD_BASE_POW10, 0)

/* Histograms. */
#define STATSFD_LINHIST(field, bsz)				\
	STATSFD_DESC_HIST(field, STATSFD_TYPE_LINEAR_HIST,	\
			  STATSFD_UNIT_NONE, STATSFD_BASE_POW10, 0, bsz)
#define STATSFD_LINHIST_TIME_NSEC(field, bsz)			\
	STATSFD_DESC_HIST(field, STATSFD_TYPE_LINEAR_HIST,	\
			  STATSFD_UNIT_SECONDS, STATSFD_BASE_POW10, -9, bsz)
#define STATSFD_LOGHIST(field)					\
	STATSFD_DESC_HIST(field, STATSFD_TYPE_LOG_HIST,		\
			  STATSFD_UNIT_NONE, STATSFD_BASE_POW10, 0, 0)
#define STATSFD_LOGHIST_TIME_NSEC(field)				\
	STATSFD_DESC_HIST(field, STATSFD_TYPE_LOG_HIST,		\
			  STATSFD_UNIT_SECONDS, STATSFD_BASE_POW10, -9, 0)

/**
 * STATSFD_AGG - define a stat derived over the children of a source
 * @cstype: the children's stats struct type
 * @field: the u64 (or histogram) member of @cstype to aggregate
 * @kind: STATSFD_AGG_SUM, _MINIMUM, _MAXIMUM, _AVERAGE or _COUNT_NONZERO
 * @suffix: the kind's name suffix: "sum", "min", "max", "avg" or
 *	"count_nonzero"
 *
 * The stat is named "<field>_<suffix>".  Type, unit, base, exponent, size
 * and bucket size are taken from the child schema's plain descriptor at the
 * same offset when the schema is initialized, then adjusted to what the
 * derived value is:
 *
 * - sum keeps the child's type (cumulative, instant, either histogram),
 *   except that a sum of peaks is STATSFD_TYPE_INSTANT and a sum of
 *   booleans has STATSFD_UNIT_NONE; it wraps modulo 2^64 like any counter.
 *   A sum of a cumulative stat or of a histogram stays monotonic while
 *   children come and go: statsfd_source_del_child() adds the departing
 *   child's values to a per-parent "retired" total that the sum starts
 *   from.  Sums of instant values (and of peaks) simply lose the child.
 * - min, max and avg are STATSFD_TYPE_INSTANT scalars in the child's unit;
 *   avg is the exact floor of the mean, computed without overflow.
 * - count_nonzero is a STATSFD_TYPE_INSTANT count, STATSFD_UNIT_NONE.
 * - histograms may only be summed (bucket by bucket).
 *
 * The binding to the child stat is by offset, which cannot tell a wrong
 * @cstype from the right one; statsfd_schema_init() therefore also
 * requires the name to be exactly the child stat's name, "_" and the
 * suffix of @kind, and rejects the schema otherwise.
 *
 * Over an empty set every aggregate reads 0, except the retired part of a
 * cumulative sum.
 */
#define STATSFD_AGG(cstype, field, kind, suffix)			\
	{								\
		.flags = (kind) +					\
			 __STATSFD_CHECK_OFFSET(cstype, field) +		\
			 BUILD_BUG_ON_ZERO((kind) & ~STATSFD_AGG_MASK) + \
			 BUILD_BUG_ON_ZERO((kind) == STATSFD_AGG_NONE) + \
			 BUILD_BUG_ON_ZERO((kind) > STATSFD_AGG_MAX),	\
		.offset = offsetof(cstype, field),			\
		.name = #field "_" suffix,				\
	}
/* One helper per kind, named after the kind's suffix. */
#define STATSFD_AGG_SUM_OF(cstype, field)				\
	STATSFD_AGG(cstype, field, STATSFD_AGG_SUM, "sum")
#define STATSFD_AGG_MIN_OF(cstype, field)				\
	STATSFD_AGG(cstype, field, STATSFD_AGG_MINIMUM, "min")
#define STATSFD_AGG_MAX_OF(cstype, field)				\
	STATSFD_AGG(cstype, field, STATSFD_AGG_MAXIMUM, "max")
#define STATSFD_AGG_AVG_OF(cstype, field)				\
	STATSFD_AGG(cstype, field, STATSFD_AGG_AVERAGE, "avg")
#define STATSFD_AGG_COUNT_NONZERO_OF(cstype, field)			\
	STATSFD_AGG(cstype, field, STATSFD_AGG_COUNT_NONZERO, "count_nonzero")

struct statsfd_agg;
struct statsfd_debugfs;

/*
 * Flags of struct statsfd_schema_def, both opt-in.
 *
 * STATSFD_SCHEMA_SNAPSHOT: the sources' writers group their updates in
 * update windows (statsfd_update_begin() and statsfd_update_end()), every
 * read returns the values of one window, and the data block ends with the
 * "sample_ns" and "generation" stats.  The source is set up with
 * statsfd_source_init_snapshot(): the owner keeps writing its own stats
 * struct, which no reader looks at, and the end of each window publishes
 * a copy of it to readers through a seqcount latch (two copies in a values
 * area of the core's, readers use the one the count points to), so a
 * reader never waits for a writer.
 *
 * STATSFD_SCHEMA_MMAP: also STATSFD_SCHEMA_SNAPSHOT; the published values
 * live in whole pages that a stats fd maps read-only (struct
 * statsfd_mmap_header, then the two copies).  Costs one page per source
 * for a stats struct of up to 2 KiB - 32 bytes, on top of what a plain
 * source costs: the owner's stats struct stays where it is.
 */
#define STATSFD_SCHEMA_SNAPSHOT		BIT(0)
#define STATSFD_SCHEMA_MMAP		BIT(1)
/*
 * Two flags for a provider that must reproduce files another
 * implementation already serves, byte for byte (KVM's own stats fds):
 *
 * STATSFD_SCHEMA_DESC_FIRST: lay the file out as header | id |
 * descriptors | data, as KVM does, instead of header | id | data |
 * descriptors.  Parsers follow the header's offsets either way; views of
 * such a source keep the default layout.
 *
 * STATSFD_SCHEMA_ANY_ORDER: the plain stats may come in any order of
 * offsets (KVM's x86 VM table lists max_mmu_rmap_size before the field
 * that precedes it); they must still cover stats_size exactly, with no
 * gap and no overlap.  Without it the data block lists the values in
 * descriptor order, which parsers that walk it rely on.
 */
#define STATSFD_SCHEMA_DESC_FIRST	BIT(2)
#define STATSFD_SCHEMA_ANY_ORDER	BIT(3)
#define STATSFD_SCHEMA_FLAGS		(STATSFD_SCHEMA_SNAPSHOT | \
					 STATSFD_SCHEMA_MMAP | \
					 STATSFD_SCHEMA_DESC_FIRST | \
					 STATSFD_SCHEMA_ANY_ORDER)

/**
 * struct statsfd_schema_def - what a provider defines: a set of stats
 * @name: shown in the stats fd's fdinfo, e.g. "statsfd_vm.vcpu"
 * @descs: the stats, plain ones first in any order, then aggregates
 * @num_descs: number of entries in @descs
 * @stats_size: sizeof() the stats struct; the plain stats must cover it
 *	exactly, with no gap and no overlap
 * @name_size: bytes of the id and of each name incl. NUL; 0 selects
 *	STATSFD_NAME_SIZE_DEFAULT; otherwise a multiple of 8
 * @child_schema: schema of the children, required iff @descs has aggregates;
 *	initialized before this one
 * @flags: 0 or STATSFD_SCHEMA_* flags: SNAPSHOT, MMAP, DESC_FIRST, ANY_ORDER
 *
 * Constant: usually a static const next to its descriptor table, never
 * written by the core.  statsfd_schema_init() derives a struct
 * statsfd_schema from it, which points back to it and must not outlive it.
 */
struct statsfd_schema_def {
	const char *name;
	const struct statsfd_desc_def *descs;
	u32 num_descs;
	size_t stats_size;
	u32 name_size;
	const struct statsfd_schema *child_schema;
	u32 flags;
};

/**
 * struct statsfd_schema - what the core derives from a definition, shared
 *	by every source of the schema
 * @def: the definition it was initialized from
 * @header: private: the file header, identical for every source
 * @desc_block: private: the serialized descriptors, names zero-padded
 * @desc_size: private: bytes in @desc_block
 * @data_size: private: @def's stats_size, plus 8 bytes per aggregate value,
 *	plus 16 for sample_ns and generation with STATSFD_SCHEMA_SNAPSHOT
 * @agg_size: private: bytes of aggregate values, after the stats struct
 * @meta_offset: private: data block offset of sample_ns (generation
 *	follows), or 0 without STATSFD_SCHEMA_SNAPSHOT
 * @area_size: private: bytes the core allocates per source for the
 *	published values: their struct statsfd_mmap_header and two copies
 *	of the stats struct (whole pages with STATSFD_SCHEMA_MMAP), or 0
 *	without STATSFD_SCHEMA_SNAPSHOT
 * @file_size: private: total size of a stats file of this schema
 * @num_aggs: private: number of aggregates, the last entries of @def's descs
 * @aggs: private: how to compute each aggregate
 * @build_count: private: how many times @header and @desc_block were built;
 *	1 for an initialized schema, whatever the number of sources and reads
 *
 * Filled once by statsfd_schema_init(): the serialized header and
 * descriptor block are built there and shared, read-only, by every source
 * of the schema.  A provider only declares one (zeroed, usually static, or
 * with STATSFD_SCHEMA_DECLARE() to bind it to its stats struct type) and
 * passes it around.  A stats file is laid out as
 * header (24 bytes) | id (name_size) | data (data_size) | descriptors
 * (descriptors before data with STATSFD_SCHEMA_DESC_FIRST), the data
 * block as stats struct | aggregates | sample_ns, generation.
 */
struct statsfd_schema {
	const struct statsfd_schema_def *def;

	/* private */
	struct statsfd_header header;
	void *desc_block;
	u32 desc_size;
	u32 data_size;
	u32 agg_size;
	u32 meta_offset;
	u32 area_size;
	u32 file_size;
	u32 num_aggs;
	struct statsfd_agg *aggs;
	unsigned int build_count;
};

/**
 * STATSFD_SCHEMA_DECLARE - declare a schema bound to its stats struct type
 * @var: the variable (add static in front as needed)
 * @stype: the stats struct type of its sources
 *
 * @var.schema is the struct statsfd_schema to initialize and pass around;
 * @var also remembers @stype, so that statsfd_source_init_stats() fails
 * to build when given a pointer to any other type.  The type costs no
 * memory: it is a pointer member in a union with the schema.
 */
#define STATSFD_SCHEMA_DECLARE(var, stype)				\
	union {								\
		struct statsfd_schema schema;				\
		stype *stats_type;					\
	} var

struct statsfd_source;

/**
 * struct statsfd_source_ops - how a stats fd pins the object behind a source,
 *	and where a computed source's values come from
 * @owner: the module whose code the callbacks run; pinned by every fd
 * @get: take a reference on the object that owns the source (e.g. the VM)
 * @tryget: instead of @get, for an owner that may be dying while a stats
 *	fd is being made: take a reference unless the object's count already
 *	reached zero, and say whether it did (kvm_get_kvm_safe(),
 *	kref_get_unless_zero()).  On false the fd is not made and the caller
 *	gets -ENODEV.
 * @put: drop the reference; may free the object and the source
 * @fill: for a computed source (statsfd_source_init_computed(), which
 *	requires it; the other two entry points refuse it), whose values
 *	live nowhere the core can read (per-CPU counters, u64_stats_sync
 *	counters, another subsystem's counters): store the current values
 *	into @stats, the schema's stats struct (stats_size bytes), every u64
 *	of it.  Called at each read
 *	that needs the plain values, each time a parent computes aggregates
 *	over this source and when it retires this source's counts, always
 *	into a buffer the core allocated beforehand, so reads still never
 *	allocate.  What one call stores is the read's snapshot.  Return 0 or a
 *	negative errno, which the read returns (a parent's aggregates then
 *	fail too; a child that fails while being retired loses its counts).
 *
 * @fill runs inside a reader's read() (a collector's single loop, say):
 * it must finish in bounded time, without waiting on I/O, firmware or a
 * device that may hang.  Copy counters; do not query hardware.
 *
 * At most one of @get and @tryget; @put is set iff one of them is.
 * Without them the module reference alone must keep the source alive (e.g.
 * a static source).  All callbacks are called in process context and may
 * sleep.  @fill is called with the reading file's mutex, or the parent's
 * children_lock (for aggregates and retiring), held: it must not add or
 * remove children of this source's parent, nor wait for anything that
 * does.  Without @fill the values are the stats struct the owner writes.
 */
struct statsfd_source_ops {
	struct module *owner;
	void (*get)(struct statsfd_source *src);
	bool (*tryget)(struct statsfd_source *src);
	void (*put)(struct statsfd_source *src);
	int (*fill)(struct statsfd_source *src, void *stats);
};

struct statsfd_source_priv;

/**
 * struct statsfd_source - one instance of a schema: an id and live values
 * @stats: the owner's live stats struct, written by its owner with
 *	statsfd_stat_add(), statsfd_stat_set() and statsfd_stat_max() (one
 *	writer per stat); for a snapshot source read by no one but the
 *	writer and statsfd_update_end(); NULL for a computed source.  Get it
 *	with statsfd_source_stats(), never directly.
 * @area: private: for a snapshot source, the header whose seq counts the
 *	windows published, followed by the two published copies of the
 *	values; else NULL.  Here rather than behind @priv so that
 *	statsfd_update_end() reaches it without a pointer chase.
 * @priv: private: everything else the core keeps per source (its schema,
 *	ops, id, children, pollers, read buffers, open files), allocated by
 *	the statsfd_source_init*() that made the source and freed by
 *	statsfd_source_destroy() (or, when destroyed with stats files still
 *	open, by the last of them to close); NULL before and after
 *
 * A provider embeds one in the object it describes (a VM, a vCPU, a
 * queue), makes it a source with one of the three statsfd_source_init*()
 * entry points and reaches its object from a callback with container_of().
 * Its layout is all a provider compiles against: the members are the
 * core's, read and written only through the functions below, and what
 * the core adds lives behind @priv, so it can change without a provider
 * being rebuilt for it (see STATSFD_API_VERSION).
 *
 * The source must outlive every stats fd on it: the fd calls @ops->get
 * when it is created and @ops->put when it is closed, and the owner calls
 * statsfd_source_destroy() only from its final put (or before ever
 * handing out an fd).
 */
struct statsfd_source {
	const void *stats;
	struct statsfd_mmap_header *area;
	struct statsfd_source_priv *priv;
};

int statsfd_schema_init(struct statsfd_schema *schema,
			const struct statsfd_schema_def *def);
void statsfd_schema_destroy(struct statsfd_schema *schema);

__printf(5, 6)
int statsfd_source_init(struct statsfd_source *src,
			const struct statsfd_schema *schema, const void *stats,
			const struct statsfd_source_ops *ops,
			const char *id_fmt, ...);
__printf(5, 6)
int statsfd_source_init_snapshot(struct statsfd_source *src,
				 const struct statsfd_schema *schema,
				 const void *stats,
				 const struct statsfd_source_ops *ops,
				 const char *id_fmt, ...);
__printf(4, 5)
int statsfd_source_init_computed(struct statsfd_source *src,
				 const struct statsfd_schema *schema,
				 const struct statsfd_source_ops *ops,
				 const char *id_fmt, ...);
void statsfd_source_destroy(struct statsfd_source *src);
const char *statsfd_source_id(const struct statsfd_source *src);

/**
 * statsfd_source_init_stats() - statsfd_source_init(), type-checked
 * @src: the source
 * @tschema: a schema declared with STATSFD_SCHEMA_DECLARE(), initialized
 * @stats: the live stats struct: a pointer to exactly the type @tschema
 *	was declared with, or the build fails
 * @ops: as for statsfd_source_init()
 * @id_fmt: as for statsfd_source_init(), with its arguments
 *
 * Return: as statsfd_source_init().
 */
#define statsfd_source_init_stats(src, tschema, stats, ops, id_fmt, ...)	\
	statsfd_source_init(src, &(tschema)->schema,			\
			    (stats) + BUILD_BUG_ON_ZERO(!__same_type(stats,	\
					(tschema)->stats_type)),	\
			    ops, id_fmt, ##__VA_ARGS__)

/**
 * statsfd_source_init_snapshot_stats() - statsfd_source_init_snapshot(),
 *	type-checked
 * @src: the source
 * @tschema: a schema declared with STATSFD_SCHEMA_DECLARE(), initialized,
 *	with STATSFD_SCHEMA_SNAPSHOT
 * @stats: the owner's live stats struct: a pointer to exactly the type
 *	@tschema was declared with, or the build fails
 * @ops: as for statsfd_source_init()
 * @id_fmt: as for statsfd_source_init(), with its arguments
 *
 * Return: as statsfd_source_init_snapshot().
 */
#define statsfd_source_init_snapshot_stats(src, tschema, stats, ops, id_fmt, ...) \
	statsfd_source_init_snapshot(src, &(tschema)->schema,		\
			    (stats) + BUILD_BUG_ON_ZERO(!__same_type(stats,	\
					(tschema)->stats_type)),	\
			    ops, id_fmt, ##__VA_ARGS__)

void statsfd_source_add_child(struct statsfd_source *parent,
			      struct statsfd_source *child);
void statsfd_source_del_child(struct statsfd_source *child);
int statsfd_source_get_fd(struct statsfd_source *src);
struct file *statsfd_source_getfile(struct statsfd_source *src);
struct file *statsfd_source_getfile_named(struct statsfd_source *src,
					  const char *name);
void statsfd_source_hangup(struct statsfd_source *src);

void statsfd_update_end(struct statsfd_source *src);

/**
 * statsfd_source_stats() - the live values of a source, for its writers
 * @src: an initialized source
 *
 * The stats pointer the owner passed to statsfd_source_init() or
 * statsfd_source_init_snapshot(); a computed source has none (NULL).  For
 * a snapshot source no reader looks at these values: each
 * statsfd_update_end() publishes a copy.  Inline and one load.
 *
 * Return: the stats struct, schema->stats_size bytes.
 */
static inline void *statsfd_source_stats(const struct statsfd_source *src)
{
	return (void *)src->stats;
}

/**
 * statsfd_update_begin() - open an update window on a source
 * @src: a source of a schema with STATSFD_SCHEMA_SNAPSHOT
 *
 * The writes between this and statsfd_update_end() reach every reader
 * together or not at all: a read returns the values as the last closed
 * window left them.  One window at a time per source, by the source's
 * single writer (the owner serializes writers, as it does for the stats).
 * Windows never sleep; they may be preempted, and a reader does not wait
 * for a preempted (or stopped) writer.  Opening a window costs nothing:
 * the writer's updates go to its private live values, which only
 * statsfd_update_end() makes visible.  The call marks where a group of
 * updates starts, for the reader of the code and for the checkers.
 *
 * Context: any but NMI.
 */
static inline void statsfd_update_begin(struct statsfd_source *src)
{
}

struct dentry *statsfd_debugfs_root(void);
int statsfd_source_debugfs_create(struct statsfd_source *src,
				  const char *name, struct dentry *parent);
void statsfd_source_debugfs_remove(struct statsfd_source *src);
struct dentry *statsfd_source_debugfs_dir(const struct statsfd_source *src);

/**
 * DOC: writing stats
 *
 * Every u64 of a source's stats struct has one writer at a time: the
 * owner serializes its writers (a vCPU's stats, say, are written only by
 * the thread that holds the vCPU's run mutex) and never takes a lock or an
 * atomic on the hot path.  Readers (stats fds, aggregates, the debugfs
 * view) take no lock the writer takes either.  Without update windows
 * they load each u64 once with READ_ONCE() while the writer may be
 * storing it.  That race is by design, so both sides are marked:
 *
 * - the store is one WRITE_ONCE(), so the compiler can neither tear it nor
 *   invent or repeat stores, and a reader sees the old or the new value,
 *   never a mix or an intermediate one (KCSAN then knows the race is
 *   intended);
 * - the writer's own load of the old value stays plain: with one writer it
 *   races only with other loads, which is no data race.
 *
 * A stat that several threads update without a common lock needs an
 * atomic read-modify-write on the u64 instead (e.g. try_cmpxchg64());
 * these helpers would lose updates there.
 *
 * Values that must be read together (a count and the counts by reason
 * that add up to it) go in one update window on a source whose schema has
 * STATSFD_SCHEMA_SNAPSHOT: statsfd_update_begin(), the helpers, then
 * statsfd_update_end().  Every read then returns the values of one
 * window.  Windows have one writer at a time, like the stats; an owner
 * with several writers serializes them around each window (a spinlock is
 * fine: windows never sleep).
 */

/**
 * statsfd_stat_add() - add to a stat that has a single writer
 * @stat: a u64 of a source's stats struct (a scalar or a histogram bucket)
 * @delta: what to add; the stat wraps modulo 2^64
 *
 * A plain add published with WRITE_ONCE() for lockless readers; the caller
 * must be the stat's only writer (see "writing stats" above).  Neither
 * atomic nor locked: it costs what ``*stat += delta`` costs.
 */
static inline void statsfd_stat_add(u64 *stat, u64 delta)
{
	WRITE_ONCE(*stat, *stat + delta);
}

/**
 * statsfd_stat_set() - set a stat that has a single writer
 * @stat: a u64 of a source's stats struct
 * @value: the new value
 *
 * For instant values (e.g. a boolean); same rule as statsfd_stat_add().
 */
static inline void statsfd_stat_set(u64 *stat, u64 value)
{
	WRITE_ONCE(*stat, value);
}

/**
 * statsfd_stat_max() - raise a peak stat that has a single writer
 * @stat: a u64 of a source's stats struct that only ever grows
 * @value: a new sample
 *
 * Same rule as statsfd_stat_add(); stores only when @value is larger, so
 * a peak that holds does not dirty its cache line.
 */
static inline void statsfd_stat_max(u64 *stat, u64 value)
{
	if (value > *stat)
		WRITE_ONCE(*stat, value);
}

/**
 * statsfd_linhist_bucket() - bucket of @value in a linear histogram
 * @size: number of buckets
 * @value: the sample
 * @bucket_size: width of each bucket, non-zero
 *
 * Bucket N holds [N * @bucket_size, (N + 1) * @bucket_size); the last one is
 * open-ended.
 *
 * Return: the bucket index, below @size.
 */
static inline size_t statsfd_linhist_bucket(size_t size, u64 value,
					    u64 bucket_size)
{
	u64 index = div64_u64(value, bucket_size);

	return index < size ? index : size - 1;
}

/**
 * statsfd_loghist_bucket() - bucket of @value in a base-2 log histogram
 * @size: number of buckets
 * @value: the sample
 *
 * Bucket 0 holds [0, 1), bucket N holds [2^(N-1), 2^N); the last one is
 * open-ended.
 *
 * Return: the bucket index, below @size.
 */
static inline size_t statsfd_loghist_bucket(size_t size, u64 value)
{
	size_t index = fls64(value);

	return index < size ? index : size - 1;
}

/**
 * statsfd_linhist_update() - count @value in a linear histogram
 * @data: the buckets, owned by the caller's writer
 * @size: number of buckets
 * @value: the sample
 * @bucket_size: width of each bucket
 *
 * One statsfd_stat_add() of the bucket: the caller is its only writer.
 */
static inline void statsfd_linhist_update(u64 *data, size_t size, u64 value,
					  u64 bucket_size)
{
	statsfd_stat_add(&data[statsfd_linhist_bucket(size, value, bucket_size)],
			 1);
}

/**
 * statsfd_loghist_update() - count @value in a base-2 log histogram
 * @data: the buckets, owned by the caller's writer
 * @size: number of buckets
 * @value: the sample
 *
 * One statsfd_stat_add() of the bucket: the caller is its only writer.
 */
static inline void statsfd_loghist_update(u64 *data, size_t size, u64 value)
{
	statsfd_stat_add(&data[statsfd_loghist_bucket(size, value)], 1);
}

#endif /* _LINUX_STATSFD_H */
