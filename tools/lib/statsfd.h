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
 *		statsfd_read(sf, buf, &err);		// one pread per call
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
 * Not thread-safe per handle for statsfd_read() into a shared buffer, but
 * handles are immutable after open: several threads may read one handle
 * into their own buffers.  See Documentation/statsfd-tools.rst.
 */
#ifndef STATSFD_LIB_H
#define STATSFD_LIB_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/statsfd.h>

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

/**
 * statsfd_open_fd() - read and validate the header, id and descriptors
 * @fd: a readable fd supporting pread (stats fd, memfd, regular file)
 * @flags: 0 or STATSFD_OPEN_CLOSE_FD; with it, @fd is closed by
 *	statsfd_close(), and also on failure
 * @err: filled on failure; may be NULL
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
 * statsfd_read() - read every value with one pread of the data block
 * @sf: handle
 * @buf: statsfd_data_size() bytes, 8-aligned
 * @err: filled on failure; may be NULL
 *
 * Return: 0, or a negative errno (-EIO for a short read).
 */
int statsfd_read(const struct statsfd *sf, uint64_t *buf,
		 struct statsfd_error *err);

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
 * struct statsfd_buf - growable text buffer
 * @data: NUL-terminated text, or NULL before the first append
 * @len: bytes used, excluding the NUL
 * @cap: bytes allocated
 * @oom: an append failed; the content is truncated
 */
struct statsfd_buf {
	char *data;
	size_t len;
	size_t cap;
	bool oom;
};

/**
 * statsfd_buf_printf() - append formatted text
 * @b: buffer
 * @fmt: printf format
 *
 * On allocation failure sets @b->oom and leaves the text unchanged.
 */
__attribute__((format(printf, 2, 3)))
void statsfd_buf_printf(struct statsfd_buf *b, const char *fmt, ...);
/**
 * statsfd_buf_append() - append @len bytes of @s
 * @b: buffer
 * @s: bytes
 * @len: count
 */
void statsfd_buf_append(struct statsfd_buf *b, const char *s, size_t len);
/** statsfd_buf_free() - release @b's memory and reset it. @b: buffer */
void statsfd_buf_free(struct statsfd_buf *b);

/**
 * statsfd_prom_escape() - append @s as a Prometheus label value body
 * @b: buffer
 * @s: raw value; backslash, double quote and newline are escaped
 */
void statsfd_prom_escape(struct statsfd_buf *b, const char *s);

/**
 * statsfd_prom_name() - Prometheus metric family name of @st
 * @prefix: "<provider>_<target>", e.g. "kvm_vcpu"; sanitized here
 * @st: descriptor
 * @buf: output
 * @len: size of @buf
 *
 * The stat name is sanitized to [a-zA-Z0-9_], a time unit suffix such as
 * "_ns" is replaced by "_seconds" (values are converted to seconds), bytes
 * get "_bytes", counters "_total"; an aggregate's "_sum"/"_max"/... suffix
 * stays before the unit ("halt_wait_ns_max" -> "halt_wait_max_seconds").
 * Return: the Prometheus type: "counter", "gauge" or "histogram".
 */
const char *statsfd_prom_name(const char *prefix,
			      const struct statsfd_stat *st, char *buf,
			      size_t len);

/**
 * struct statsfd_prom_series - one source to expose
 * @sf: its handle
 * @values: its values, as statsfd_read() filled them
 * @prefix: metric name prefix, "<provider>_<target>"
 * @labels: preformatted, escaped labels without braces, e.g.
 *	"vm=\"web\",vcpu=\"0\"", or "" for none
 * @key: series with the same non-NULL @key share @prefix and a schema, so
 *	their names are computed once; NULL to compute them per series
 */
struct statsfd_prom_series {
	const struct statsfd *sf;
	const uint64_t *values;
	const char *prefix;
	const char *labels;
	const void *key;
};

/**
 * statsfd_prom_write() - append the text exposition of @n series
 * @out: buffer
 * @series: sources
 * @n: number of @series
 * @conflicts: set to the number of stats skipped because an earlier series
 *	declared the same family with another type; may be NULL
 *
 * Samples of one family are grouped under one HELP and TYPE line, families
 * sorted by name.  Counters and gauges are converted to base units.
 * Histograms get cumulative buckets: a bucket's `le` is its largest
 * integer raw value (kernel buckets exclude their upper bound, samples are
 * integers, so this is exact) scaled to base units, then +Inf; _count is the
 * total and _sum an estimate from bucket midpoints (the kernel keeps no
 * sum; see Documentation/statsfd-tools.rst).
 * Return: 0, or -ENOMEM.
 */
int statsfd_prom_write(struct statsfd_buf *out,
		       const struct statsfd_prom_series *series, size_t n,
		       unsigned long *conflicts);

#endif /* STATSFD_LIB_H */
