/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libstatsfd: read KVM-format binary stats fds (statsfd's and real KVM's).
 *
 * Typical use:
 *
 *	struct statsfd_error err;
 *	struct statsfd *sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
 *	uint64_t *buf = malloc(statsfd_data_size(sf));
 *
 *	for (;;) {
 *		statsfd_read(sf, buf, &err);	// one pread, or the mapping
 *		st = statsfd_find(sf, "halt_exits");
 *		printf("%" PRIu64 "\n", statsfd_values(st, buf)[0]);
 *	}
 *
 * The header, id and descriptors are read and validated once, in
 * statsfd_open_fd(); afterwards only the data block is read.  Every
 * validation failure is reported through struct statsfd_error with the name
 * of the offending field, never by a crash or an out-of-bounds access, so
 * the library can be pointed at any fd a client hands over.
 *
 * Mapped values.  A statsfd stats fd whose source has update windows can
 * be mapped read-only (struct statsfd_mmap_header in <linux/statsfd.h>):
 * statsfd_open_fd() maps it unless told not to, validates the mmap header
 * against the descriptors, and silently keeps to pread() when the fd
 * cannot be mapped (KVM's fds, statsfd sources without windows, files) or
 * the header does not fit.  Reads then pick the mapping by this rule:
 *
 *   - statsfd_read() copies from the mapping only when every stat except
 *     sample_ns and generation is in it (a vCPU); a source with stats
 *     outside it (a VM's aggregates) is read with one pread(), since only
 *     that gives the whole data block as one snapshot;
 *   - statsfd_read_stats() copies from the mapping when each stat asked
 *     for is in it or is sample_ns/generation; otherwise one pread();
 *   - a copy from the mapping is one snapshot by the latch protocol of the
 *     mmap area, version 2 (statsfd_mmap_copy() in <linux/statsfd.h>):
 *     the values come from the copy the count selects (count & 1), which
 *     the writer never touches, so a reader never waits for a writer,
 *     running, preempted or stopped; generation is the count and sample_ns
 *     the CLOCK_BOOTTIME time taken between its two loads, as the kernel
 *     fills them for a pread.  A copy is made again only if the writer
 *     published a window during it; after a bounded number of those (a
 *     writer publishing back to back) the read falls back to pread().
 *
 * Either way the values are those a pread would return, with the same
 * consistency.  A mapping costs no fd, but holds the source (the VM) like
 * an open fd until statsfd_close() unmaps it, even when the caller closed
 * the fd itself.
 *
 * Views.  statsfd_open_view() asks the kernel (STATSFD_IOC_VIEW) for a
 * stats fd holding only some stats, and returns a handle on it with the
 * same API as any other: reads then copy only those values.  KVM's fds,
 * files and kernels without views refuse (statsfd_view_unsupported());
 * with STATSFD_VIEW_EMULATE the library then reads the selected stats of
 * the original fd itself, behind the same handle API.
 *
 * Events.  A statsfd stats fd polls POLLPRI when the set of children of
 * its source changed (vCPUs of a VM, VMs of the device) and POLLHUP once
 * its owner is gone (the VMM closed the VM): statsfd_wait(),
 * statsfd_wait_many(), or the caller's own poll/epoll on statsfd_fd()
 * with statsfd_poll_events(), then statsfd_events().
 *
 * Not thread-safe per handle for statsfd_read() into a shared buffer, but
 * handles are immutable after open: several threads may read one handle
 * into their own buffers.  See Documentation/statsfd-lib.rst.
 *
 * This is libstatsfd, the reader (pkg-config statsfd).  The Prometheus
 * exposition of what it reads is libstatsfd-expo (statsfd_expo.h), the
 * registration of stats fds with statsfd-collector libstatsfd-client
 * (statsfd_client.h); both link this one.
 */
#ifndef STATSFD_LIB_H
#define STATSFD_LIB_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/statsfd.h>
#include <linux/statsfd_host.h>

/* Limits a file must respect to be accepted; far above any real schema. */
#define STATSFD_LIB_NAME_SIZE_MAX	4096u
#define STATSFD_LIB_NUM_DESC_MAX	65536u
#define STATSFD_LIB_DATA_SIZE_MAX	(64u << 20)
#define STATSFD_LIB_EXPONENT_MAX	64
/* A log histogram bucket past 65 could never be hit by a u64 sample. */
#define STATSFD_LIB_LOG_HIST_SIZE_MAX	65u

/**
 * struct statsfd_error - why an operation failed
 * @err: positive errno: EINVAL for a malformed file, EIO for a short read,
 *	ENOMEM, or the errno of a failed system call
 * @field: the offending field, e.g. "header.desc_offset" or
 *	"desc[3].bucket_size"; empty when no single field is to blame
 * @msg: complete human-readable message, starting with @field
 */
struct statsfd_error {
	int err;
	char field[64];
	char msg[320];
};

/**
 * struct statsfd_stat - one descriptor, decoded and validated
 * @name: NUL-terminated name, unique within the file
 * @index: position in the descriptor block
 * @flags: the raw descriptor flags
 * @type: flags & STATSFD_TYPE_MASK
 * @unit: flags & STATSFD_UNIT_MASK
 * @base: flags & STATSFD_BASE_MASK
 * @agg: flags & STATSFD_AGG_MASK (statsfd extension, 0 for KVM files)
 * @exponent: value * base^exponent is the value in @unit
 * @size: number of u64 values (1 for scalars, buckets for histograms)
 * @offset: byte offset of the values in the data block, 8-aligned
 * @bucket_size: width of a linear histogram bucket, else 0
 */
struct statsfd_stat {
	const char *name;
	unsigned int index;
	uint32_t flags;
	uint32_t type;
	uint32_t unit;
	uint32_t base;
	uint32_t agg;
	int exponent;
	uint32_t size;
	uint32_t offset;
	uint32_t bucket_size;
};

struct statsfd;

/* statsfd_open_fd() flag: statsfd_close() closes the fd too. */
#define STATSFD_OPEN_CLOSE_FD		(1u << 0)
/* statsfd_open_fd() flag: never map the values, always pread(). */
#define STATSFD_OPEN_NO_MMAP		(1u << 1)

/**
 * statsfd_open_fd() - read and validate the header, id and descriptors
 * @fd: a readable fd supporting pread (stats fd, memfd, regular file)
 * @flags: STATSFD_OPEN_CLOSE_FD: @fd is closed by statsfd_close(), and
 *	also on failure; STATSFD_OPEN_NO_MMAP: do not map the values
 * @err: filled on failure; may be NULL
 *
 * Then, unless STATSFD_OPEN_NO_MMAP, an anon-inode fd (what every stats
 * fd is; files are never mapped) is mapped read-only, one page first and
 * the whole values area if it is larger.  The mapping is kept only if its
 * header is consistent: version >= 2, flags exactly STATSFD_MMAP_LATCH (an
 * unknown flag, or a version-1 area without the latch, is refused),
 * header_size at least 64 and at most data_offset, data_offset 8-aligned,
 * data_size exactly the bytes of the plain stats (all but aggregates,
 * sample_ns and generation), which must be the first ones of the data
 * block, copy_stride a multiple of 8 and at least data_size, and both
 * copies inside the area; the header must read the same in the one-page
 * and the whole mapping.  Any failure of the mapping, ENODEV included,
 * leaves a handle that reads with pread() as before.
 *
 * Return: a handle caching the schema, or NULL with @err filled and errno set.
 */
struct statsfd *statsfd_open_fd(int fd, unsigned int flags,
				struct statsfd_error *err);

/**
 * statsfd_open_path() - open @path read-only and statsfd_open_fd() it
 * @path: a saved stats image or any file holding one
 * @err: filled on failure; may be NULL
 *
 * Return: a handle that owns its fd, or NULL.
 */
struct statsfd *statsfd_open_path(const char *path, struct statsfd_error *err);

/**
 * statsfd_close() - free a handle (and close its fd if it owns it)
 * @sf: handle, or NULL
 */
void statsfd_close(struct statsfd *sf);

/** statsfd_fd() - the fd behind @sf. @sf: handle. Return: the fd. */
int statsfd_fd(const struct statsfd *sf);
/** statsfd_id() - the id string. @sf: handle. Return: NUL-terminated id. */
const char *statsfd_id(const struct statsfd *sf);
/**
 * statsfd_header() - the header as read
 * @sf: handle
 *
 * Return: the header.
 */
const struct statsfd_header *statsfd_header(const struct statsfd *sf);
/** statsfd_num_stats() - number of descriptors. @sf: handle. Return: count. */
unsigned int statsfd_num_stats(const struct statsfd *sf);
/**
 * statsfd_stat() - descriptor @i
 * @sf: handle
 * @i: index below statsfd_num_stats()
 *
 * Return: the descriptor, or NULL when @i is out of range.
 */
const struct statsfd_stat *statsfd_stat(const struct statsfd *sf,
					unsigned int i);
/**
 * statsfd_find() - look a descriptor up by name (binary search)
 * @sf: handle
 * @name: stat name
 *
 * Return: the descriptor, or NULL.
 */
const struct statsfd_stat *statsfd_find(const struct statsfd *sf,
					const char *name);
/**
 * statsfd_data_size() - bytes statsfd_read() fills
 * @sf: handle
 *
 * The data block as the descriptors span it: the largest offset + size * 8.
 * Return: size in bytes, a multiple of 8 (0 for a file without stats).
 */
size_t statsfd_data_size(const struct statsfd *sf);

/**
 * statsfd_read() - read every value, as one snapshot
 * @sf: handle
 * @buf: statsfd_data_size() bytes, 8-aligned
 * @err: filled on failure; may be NULL
 *
 * From the mapping when it holds every stat but sample_ns and generation
 * (see the top of this file), otherwise with one pread() of the data
 * block.  Either is one snapshot of a source with update windows.
 * Return: 0, or a negative errno (-EIO for a short read).
 */
int statsfd_read(const struct statsfd *sf, uint64_t *buf,
		 struct statsfd_error *err);

/**
 * statsfd_read_stats() - read some stats, all from one snapshot
 * @sf: handle
 * @stats: @n descriptors of @sf (from statsfd_find() or statsfd_stat())
 * @n: how many; 0 reads nothing
 * @buf: statsfd_data_size() bytes, 8-aligned, laid out as for
 *	statsfd_read(), so that statsfd_values() finds each stat
 * @err: filled on failure; may be NULL
 *
 * The values of @stats are filled from one snapshot: one copy from the
 * mapping when every stat asked for is mapped or is sample_ns or
 * generation (no system call), else one pread() spanning all of them (a
 * single read is one snapshot of a statsfd source; a KVM fd promises
 * nothing more than untorn values).  Other parts of @buf between the
 * lowest and highest stat asked for may be overwritten.
 * Return: 0; -EINVAL for a descriptor that is not @sf's; or the errors of
 * statsfd_read().
 */
int statsfd_read_stats(const struct statsfd *sf,
		       const struct statsfd_stat *const *stats, unsigned int n,
		       uint64_t *buf, struct statsfd_error *err);

/**
 * statsfd_is_mapped() - whether @sf has a mapping of the values
 * @sf: handle
 *
 * Return: true when reads may use the mapping (see the top of the file).
 */
bool statsfd_is_mapped(const struct statsfd *sf);

/**
 * statsfd_sample_stat() - the sample_ns stat of @sf
 * @sf: handle
 *
 * Recognized by name (STATSFD_STAT_SAMPLE_NS) and shape (instant, seconds,
 * pow10, exponent -9, one value): the CLOCK_BOOTTIME nanoseconds at which
 * the values of a read were current.
 * Return: its descriptor, or NULL when the source has none.
 */
const struct statsfd_stat *statsfd_sample_stat(const struct statsfd *sf);

/**
 * statsfd_generation_stat() - the generation stat of @sf
 * @sf: handle
 *
 * Recognized by name (STATSFD_STAT_GENERATION) and shape (cumulative, no
 * unit, exponent 0, one value): update windows completed at the read.
 * Return: its descriptor, or NULL when the source has none.
 */
const struct statsfd_stat *statsfd_generation_stat(const struct statsfd *sf);

/**
 * statsfd_sample_interval() - seconds between two reads of @sf
 * @sf: handle
 * @prev: values of the earlier read
 * @cur: values of the later read
 * @fallback: the interval to use without sample_ns, e.g. measured around
 *	the reads with CLOCK_MONOTONIC
 *
 * The right denominator for a rate: the time between the moments the two
 * snapshots were taken, not between the calls that read them.
 * Return: the difference of their sample_ns values in seconds, or
 * @fallback when @sf has no sample_ns or it did not advance.
 */
double statsfd_sample_interval(const struct statsfd *sf, const uint64_t *prev,
			       const uint64_t *cur, double fallback);

/* statsfd_open_view() flag: emulate a view where the fd has none. */
#define STATSFD_VIEW_EMULATE		(1u << 0)

/**
 * enum statsfd_view_kind - what statsfd_view_kind() says of a handle
 * @STATSFD_VIEW_NONE: a whole stats fd (statsfd_open_fd())
 * @STATSFD_VIEW_KERNEL: a view fd made by the kernel (STATSFD_IOC_VIEW)
 * @STATSFD_VIEW_EMULATED: the library reads the selected stats of the
 *	original fd (STATSFD_VIEW_EMULATE)
 */
enum statsfd_view_kind {
	STATSFD_VIEW_NONE,
	STATSFD_VIEW_KERNEL,
	STATSFD_VIEW_EMULATED,
};

/**
 * statsfd_open_view() - a handle on a view of @sf holding only some stats
 * @sf: handle (a whole stats fd, or itself a view)
 * @names: @n names of stats of @sf; the view has them in this order
 * @n: how many, 1 to statsfd_num_stats(@sf) (0 only with
 *	STATSFD_VIEW_EMULATE: a handle without stats)
 * @flags: 0 or STATSFD_VIEW_EMULATE
 * @err: filled on failure; may be NULL
 *
 * The selection is checked against @sf's descriptors first, with the
 * errnos the kernel would give: EINVAL (unknown @flags, @n 0, a NULL
 * name), E2BIG (@n above the number of stats), ENAMETOOLONG (a name of
 * name_size bytes or more), ENOENT (no such stat), EEXIST (selected
 * twice); @err->field names the entry ("names[2]").  Then STATSFD_IOC_VIEW
 * on statsfd_fd(@sf) makes the view fd, which is opened like any stats fd
 * (never mapped: the kernel maps no view) and must hold exactly the
 * stats asked for, in order (else EINVAL).  A failed ioctl is reported
 * with its errno and the field "view": ENOTTY or EINVAL mean the fd has
 * no views (a KVM stats fd, a file, a kernel without STATSFD_IOC_VIEW; see
 * statsfd_view_unsupported()), ENOMEM, EMFILE or ENFILE a lack of
 * resources.
 *
 * With STATSFD_VIEW_EMULATE, where the fd has no views (and for a view of
 * an emulated view, or @n 0) the handle is made by the library: the same
 * descriptors and compact data block a kernel view would have, read with
 * one pread() spanning the selected stats of a dup() of @sf's fd (so it
 * does not depend on @sf staying open).  statsfd_view_kind() tells which.
 *
 * The view pins what @sf pins; statsfd_fd() of the view polls like @sf
 * (the kernel's views poll like their source, an emulated view's fd is
 * @sf's file), but as a separate open file when the kernel made it: reads
 * of one do not acknowledge changes on the other (see statsfd_events()).
 * Return: a new handle owning its fd, or NULL with @err filled and errno
 * set.
 */
struct statsfd *statsfd_open_view(const struct statsfd *sf,
				  const char *const *names, unsigned int n,
				  unsigned int flags, struct statsfd_error *err);

/**
 * statsfd_open_view_indices() - statsfd_open_view() by descriptor index
 * @sf: handle
 * @indices: @n indices of stats of @sf (statsfd_stat() indices; for a
 *	view, its own), in the order the view has them
 * @n: how many
 * @flags: 0 or STATSFD_VIEW_EMULATE
 * @err: filled on failure; may be NULL
 *
 * As statsfd_open_view(), with STATSFD_VIEW_BY_INDEX; an index out of
 * range is ENOENT ("indices[i]").
 * Return: a new handle, or NULL.
 */
struct statsfd *statsfd_open_view_indices(const struct statsfd *sf,
					  const unsigned int *indices,
					  unsigned int n, unsigned int flags,
					  struct statsfd_error *err);

/**
 * statsfd_view_kind() - whether @sf is a view, and whose
 * @sf: handle
 *
 * Return: STATSFD_VIEW_NONE, STATSFD_VIEW_KERNEL or STATSFD_VIEW_EMULATED.
 */
enum statsfd_view_kind statsfd_view_kind(const struct statsfd *sf);

/**
 * statsfd_view_unsupported() - whether a failed statsfd_open_view*() means
 *	that the fd has no views at all
 * @err: the error it reported
 *
 * Return: true when STATSFD_IOC_VIEW itself failed with ENOTTY or EINVAL
 * on a selection the library had checked: read the whole fd and keep the
 * stats wanted (or ask again with STATSFD_VIEW_EMULATE).
 */
bool statsfd_view_unsupported(const struct statsfd_error *err);

/* Events of a stats fd, as statsfd_events() reports them. */
/* POLLPRI: the set of the source's children changed (acknowledged). */
#define STATSFD_EVENT_CHILDREN		(1u << 0)
/* POLLHUP: the owner hung the source up; for good, values frozen. */
#define STATSFD_EVENT_HANGUP		(1u << 1)

/**
 * statsfd_poll_events() - the events to ask poll() or epoll for
 * @sf: handle
 *
 * POLLPRI, which has the value of EPOLLPRI: use it in struct pollfd's
 * events or struct epoll_event's.  Hang-ups (POLLHUP, EPOLLHUP) are always
 * reported without being asked for.  Never POLLIN: a stats fd is always
 * readable, so a poller asking for it would never sleep.  Fds without
 * events (KVM's, files) simply never report any; epoll refuses them with
 * EPERM.
 * Return: the event mask.
 */
unsigned int statsfd_poll_events(const struct statsfd *sf);

/**
 * statsfd_events() - what the events poll/epoll reported on @sf mean
 * @sf: handle whose statsfd_fd() was polled
 * @revents: struct pollfd's revents or struct epoll_event's events
 * @err: filled on failure; may be NULL
 *
 * POLLPRI becomes STATSFD_EVENT_CHILDREN, after reading the header of
 * statsfd_fd(), which acknowledges the change: the kernel reports it (a
 * count of changes per open file, never lost) until the file reads its
 * header or data, so a level-triggered poller would otherwise be woken
 * again at once.  Any read of the data block of the same open file
 * (statsfd_read() included) acknowledges too, so a change that comes
 * between a wait and a read would be consumed by the read: to see every
 * change, read through a view (or another stats fd of the source) and
 * wait on this one.  POLLHUP becomes STATSFD_EVENT_HANGUP, which stays:
 * remove the fd from epoll (or close it) after it, or be woken for ever.
 * POLLERR, which the kernel sets with POLLPRI for select() users, adds
 * nothing.
 * Return: STATSFD_EVENT_* (0 for none), or a negative errno: -EBADF for
 * POLLNVAL, or the error of the acknowledging read.
 */
int statsfd_events(const struct statsfd *sf, unsigned int revents,
		   struct statsfd_error *err);

/**
 * statsfd_wait() - wait for an event on @sf
 * @sf: handle
 * @timeout_ms: as poll(): -1 for ever, 0 to check
 * @err: filled on failure; may be NULL
 *
 * Return: statsfd_events() of what came, 0 on timeout, -EINTR when a
 * signal came first, or another negative errno.
 */
int statsfd_wait(const struct statsfd *sf, int timeout_ms,
		 struct statsfd_error *err);

/**
 * struct statsfd_wait_item - one handle for statsfd_wait_many()
 * @sf: the handle to wait on (its statsfd_fd())
 * @events: out: its STATSFD_EVENT_* (0 for none)
 */
struct statsfd_wait_item {
	const struct statsfd *sf;
	unsigned int events;
};

/**
 * statsfd_wait_many() - wait for events on several handles, with one poll()
 * @items: the handles; @events set for each
 * @n: how many
 * @timeout_ms: as poll()
 * @err: filled on failure; may be NULL
 *
 * Return: the number of items with events, 0 on timeout, -EINTR when a
 * signal came first, or another negative errno.
 */
int statsfd_wait_many(struct statsfd_wait_item *items, unsigned int n,
		      int timeout_ms, struct statsfd_error *err);

/**
 * statsfd_values() - the values of @st inside a buffer statsfd_read() filled
 * @st: descriptor
 * @buf: the buffer
 *
 * Return: pointer to @st->size values.
 */
static inline const uint64_t *statsfd_values(const struct statsfd_stat *st,
					     const uint64_t *buf)
{
	return buf + st->offset / sizeof(uint64_t);
}

/**
 * statsfd_schema_bytes() - the raw descriptor block, for schema comparison
 * @sf: handle
 * @len: set to its length
 *
 * Two fds with equal name_size, descriptor bytes and data size share a
 * schema (every vCPU of a VM does).
 * Return: the bytes, owned by @sf.
 */
const void *statsfd_schema_bytes(const struct statsfd *sf, size_t *len);
/**
 * statsfd_same_schema() - whether two handles share a schema
 * @a: handle
 * @b: handle
 *
 * Return: true when their descriptors are byte-identical.
 */
bool statsfd_same_schema(const struct statsfd *a, const struct statsfd *b);
/**
 * statsfd_schema_hash() - FNV-1a hash of the schema bytes
 * @sf: handle
 *
 * Return: a hash equal for handles statsfd_same_schema() calls equal.
 */
uint64_t statsfd_schema_hash(const struct statsfd *sf);

/* Decoding of the flag fields; unknown values give "unknown". */
/** statsfd_type_name() - @type: masked type. Return: "cumulative", ... */
const char *statsfd_type_name(uint32_t type);
/** statsfd_unit_name() - @unit: masked unit. Return: "none", "bytes", ... */
const char *statsfd_unit_name(uint32_t unit);
/** statsfd_base_name() - @base: masked base. Return: "pow10" or "pow2". */
const char *statsfd_base_name(uint32_t base);
/** statsfd_agg_name() - @agg: masked aggregation. Return: "sum", ... or "". */
const char *statsfd_agg_name(uint32_t agg);
/** statsfd_stat_is_hist() - @st: descriptor. Return: true for histograms. */
bool statsfd_stat_is_hist(const struct statsfd_stat *st);

/**
 * statsfd_scale() - the factor base^exponent of @st
 * @st: descriptor
 *
 * Multiplying a raw value by it gives the value in the stat's base unit:
 * seconds, bytes, cycles, or a plain number.
 * Return: the factor (1.0 for exponent 0).
 */
double statsfd_scale(const struct statsfd_stat *st);

/**
 * statsfd_scale_value() - @v times base^exponent, correctly rounded
 * @st: descriptor
 * @v: a raw quantity (a value, a rate, a sum of values)
 *
 * Return: @v in the stat's base unit.
 */
double statsfd_scale_value(const struct statsfd_stat *st, double v);

/**
 * statsfd_to_base() - @raw converted to the base unit of @st
 * @st: descriptor
 * @raw: a raw value of @st
 *
 * Return: raw * base^exponent, e.g. nanoseconds to seconds.
 */
double statsfd_to_base(const struct statsfd_stat *st, uint64_t raw);

/**
 * statsfd_base_unit() - name of the base unit statsfd_to_base() returns
 * @st: descriptor
 *
 * Return: "seconds", "bytes", "cycles", "boolean" or "" for none.
 */
const char *statsfd_base_unit(const struct statsfd_stat *st);

/**
 * statsfd_format_scaled() - print a base-unit quantity with a human prefix
 * @st: descriptor giving the unit
 * @v: value in base units (from statsfd_to_base(), or a rate)
 * @buf: output
 * @len: size of @buf
 *
 * "1.5 ms", "12 KiB", "3.2 Mcycles", "42", "true".
 * Return: snprintf()'s result.
 */
int statsfd_format_scaled(const struct statsfd_stat *st, double v, char *buf,
			  size_t len);

/**
 * statsfd_format_value() - print a raw value of @st in human units
 * @st: descriptor
 * @raw: raw value
 * @buf: output
 * @len: size of @buf
 *
 * Integers without a unit print exactly; others as statsfd_format_scaled().
 * Return: snprintf()'s result.
 */
int statsfd_format_value(const struct statsfd_stat *st, uint64_t raw,
			 char *buf, size_t len);

/**
 * struct statsfd_bucket - bounds of one histogram bucket, in raw units
 * @lo: inclusive lower bound
 * @hi: exclusive upper bound, meaningful only when !@open
 * @open: the bucket has no upper bound (the last one, or one whose bound
 *	does not fit in 64 bits)
 */
struct statsfd_bucket {
	uint64_t lo;
	uint64_t hi;
	bool open;
};

/**
 * statsfd_bucket() - bounds of bucket @i of histogram @st
 * @st: a histogram descriptor
 * @i: bucket index below @st->size
 * @b: filled with the bounds
 *
 * Linear: bucket N is [N * bucket_size, (N + 1) * bucket_size).
 * Log: bucket 0 is [0, 1), bucket N is [2^(N-1), 2^N).  The last bucket of
 * either kind is open-ended.
 * Return: 0, or -EINVAL when @st is not a histogram or @i is out of range.
 */
int statsfd_bucket(const struct statsfd_stat *st, unsigned int i,
		   struct statsfd_bucket *b);

/**
 * statsfd_format_bucket() - print bucket @i's range, e.g. "[1 us, 2 us)"
 * @st: a histogram descriptor
 * @i: bucket index
 * @buf: output
 * @len: size of @buf
 *
 * Return: snprintf()'s result, or -EINVAL.
 */
int statsfd_format_bucket(const struct statsfd_stat *st, unsigned int i,
			  char *buf, size_t len);

/**
 * enum statsfd_vmfd_kind - what a VMM's fd is, by its /proc/PID/fd name
 * @STATSFD_VMFD_NONE: none of the below
 * @STATSFD_VMFD_KVM_VM: "anon_inode:kvm-vm", a KVM VM
 * @STATSFD_VMFD_KVM_VCPU: "anon_inode:kvm-vcpu:N"
 * @STATSFD_VMFD_KVM_VM_STATS: "anon_inode:kvm-vm-stats", a stats fd the
 *	VMM already holds
 * @STATSFD_VMFD_KVM_VCPU_STATS: "anon_inode:kvm-vcpu-stats:N"
 * @STATSFD_VMFD_SFD_VM: "anon_inode:statsfd-vm", a statsfd_vm VM
 * @STATSFD_VMFD_SFD_VCPU: "anon_inode:statsfd-vcpu:N"
 */
enum statsfd_vmfd_kind {
	STATSFD_VMFD_NONE,
	STATSFD_VMFD_KVM_VM,
	STATSFD_VMFD_KVM_VCPU,
	STATSFD_VMFD_KVM_VM_STATS,
	STATSFD_VMFD_KVM_VCPU_STATS,
	STATSFD_VMFD_SFD_VM,
	STATSFD_VMFD_SFD_VCPU,
};

/**
 * statsfd_vmfd_classify() - classify the target of a /proc/PID/fd link
 * @link: what readlink() returned, e.g. "anon_inode:kvm-vcpu-stats:3"
 * @vcpu: set to the vCPU index the name carries, else -1
 *
 * Names are matched exactly; an index is decimal digits and nothing more.
 * Return: the kind, STATSFD_VMFD_NONE for anything else.
 */
enum statsfd_vmfd_kind statsfd_vmfd_classify(const char *link, int *vcpu);

/**
 * statsfd_vmfd_stats_fd() - a stats fd for a VM or vCPU fd
 * @fd: the fd (taken from the VMM with pidfd_getfd(), or the VMM's own)
 * @kind: what statsfd_vmfd_classify() said of it
 *
 * A stats fd (STATSFD_VMFD_KVM_*_STATS) is duplicated; a VM or vCPU fd is
 * asked with KVM_GET_STATS_FD or STATSFD_VM_GET_STATS_FD.  KVM answers that
 * only in the process that created the VM (kvm->mm != current->mm is
 * EIO), so from another process only the stats fds the VMM holds work.
 * Return: a new fd (close-on-exec), or -1 with errno set.
 */
int statsfd_vmfd_stats_fd(int fd, enum statsfd_vmfd_kind kind);

/**
 * statsfd_vmfd_stats_fd_remote() - a KVM stats fd asked by the VMM itself
 * @pid: the VMM
 * @pidfd: its pidfd (pidfd_open()), through which the new fd is taken
 * @fd: a KVM VM or vCPU fd of the VMM's, its number in the VMM
 * @kind: STATSFD_VMFD_KVM_VM or STATSFD_VMFD_KVM_VCPU
 *
 * For a VMM that keeps no stats fds (QEMU before 8.1 opens one per
 * query-stats and closes it), where statsfd_vmfd_stats_fd() of a copy of
 * @fd is EIO: one of the VMM's threads is stopped with ptrace and made to
 * call KVM_GET_STATS_FD on @fd, the new fd is taken with pidfd_getfd() and
 * closed in the VMM, and the thread goes on as it was (a system call the
 * stop interrupted is made again).  A vCPU is asked in the thread in
 * KVM_RUN on it, if /proc/PID/task/TID/syscall says which; else, and a VM,
 * in the main thread.  Needs ptrace permission over the VMM
 * (CAP_SYS_PTRACE for another user's) and a tracer-free VMM.  x86-64 only.
 * A thread stopped in its own code is let run to its next system call,
 * which is made after ours.  The tracing runs in a child of the caller's
 * (it forks; the child holds none of the caller's fds and blocks every
 * signal but SIGKILL).  Until the child first changes the thread's
 * registers, the caller kills it 1 s after it started, so a thread that
 * never stops cannot hang the caller; the kernel then detaches the thread,
 * untouched.  Once it has changed them it is never killed (the thread
 * would go on with them): the caller waits 1 s more at most, then returns
 * ETIMEDOUT and leaves it to put the registers back and close the VMM's
 * new fd when the VMM's system call returns; a later call reaps it.
 * Return: a new fd (close-on-exec), or -1 with errno set: EAGAIN when the
 * thread made no system call within 100 ms (try again), ETIMEDOUT when it
 * reached no stop within 1 s or KVM did not answer within 1 s more (try
 * again later), EBUSY while 8 children left so are still unfinished (try
 * again later), ENOSYS on other machines, EPERM without permission or when
 * the VMM is traced already (by a child left to finish, too).
 */
int statsfd_vmfd_stats_fd_remote(pid_t pid, int pidfd, int fd,
				 enum statsfd_vmfd_kind kind);

/*
 * The host's own stats fds (statsfd_host.ko, /dev/statsfd_host;
 * Documentation/statsfd-host-api.rst): which objects there are (the node,
 * every online CPU, every interface of the caller's network namespace,
 * every whole disk) and a stats fd for each.  Their exposition under
 * node_exporter's names is libstatsfd-expo's (statsfd_expo.h).
 */
#define STATSFD_HOST_DEVICE	"/dev/statsfd_host"
/* Room for an interface name (IFNAMSIZ) or a disk name (DISK_NAME_LEN). */
#define STATSFD_HOST_NAME_MAX	32

/**
 * struct statsfd_host_obj - one object the host has a stats fd for
 * @kind: enum statsfd_host_kind
 * @cpu: STATSFD_HOST_CPU: its number
 * @ifindex: STATSFD_HOST_NETDEV: its index in our network namespace
 * @major: STATSFD_HOST_BLOCK: the disk's major number
 * @minor: STATSFD_HOST_BLOCK: the disk's minor number
 * @name: the label: "" for the node, the CPU's number ("3"), the
 *	interface's or the disk's name ("eth0", "vda")
 */
struct statsfd_host_obj {
	unsigned int kind;
	unsigned int cpu;
	int ifindex;
	unsigned int major;
	unsigned int minor;
	char name[STATSFD_HOST_NAME_MAX];
};

/**
 * statsfd_host_cpulist() - parse a CPU list such as /sys/.../cpu/online's
 * @text: "0-3,5\n": ranges and numbers, comma-separated, one newline at
 *	most at the end; "" or "\n" is an empty list
 * @cpus: filled with the CPUs in ascending order of the text
 * @max: room in @cpus
 *
 * Return: the number of CPUs, -EINVAL for text that is not a CPU list (a
 * range going down, a number above 65535, anything else), -E2BIG when
 * more than @max.
 */
int statsfd_host_cpulist(const char *text, unsigned int *cpus,
			 unsigned int max);

/**
 * statsfd_host_scan() - every object of the host, as it is now
 * @sysfs: the sysfs mount point, "/sys" (tests use a fake tree)
 * @objs: set to a malloc()ed array: the node first, then the online CPUs
 *	(@sysfs/devices/system/cpu/online), the interfaces of our network
 *	namespace (if_nameindex()), the whole disks (@sysfs/block/NAME/dev,
 *	"MAJOR:MINOR"), each in that order
 * @n: set to its length
 *
 * A disk whose dev file cannot be read or parsed (it went away meanwhile)
 * is left out.
 * Return: 0, or a negative errno: the CPU list cannot be read or parsed,
 * if_nameindex() or @sysfs/block failed, -ENOMEM.
 */
int statsfd_host_scan(const char *sysfs, struct statsfd_host_obj **objs,
		      size_t *n);

/**
 * statsfd_host_get_fd() - a stats fd for @o (STATSFD_HOST_GET_STATS_FD)
 * @dev: an fd of /dev/statsfd_host, open for reading
 * @o: the object
 *
 * Return: the new fd (close-on-exec), or a negative errno (ENODEV: the
 * object went away since the scan; see statsfd-host-api.rst).
 */
int statsfd_host_get_fd(int dev, const struct statsfd_host_obj *o);

/**
 * statsfd_host_id_parse() - the object a stats fd of statsfd_host is about
 * @id: its id: "host-node", "host-cpu<N>", "host-net-<name>" or
 *	"host-block-<name>" (statsfd-host-api.rst)
 * @o: filled: kind, cpu (with name its number) or name; ifindex, major
 *	and minor are not in the id and stay 0
 *
 * Lets a saved image (statsfd dump) of a host stats fd be shown as one.
 * Return: true for such an id (N decimal without leading zeros, below
 * 65536; a name of 1 to STATSFD_HOST_NAME_MAX - 1 characters), else false.
 */
bool statsfd_host_id_parse(const char *id, struct statsfd_host_obj *o);

/**
 * statsfd_host_kind_name() - the target label of a kind
 * @kind: enum statsfd_host_kind
 *
 * Return: "node", "cpu", "net", "block", or "unknown".
 */
const char *statsfd_host_kind_name(unsigned int kind);

#endif /* STATSFD_LIB_H */
