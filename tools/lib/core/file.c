// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: open, validate and read KVM-format binary stats fds.
 *
 * Everything a file claims is checked before it is used: every offset and
 * size is computed in 64 bits and bounded, every region is read with one
 * pread into a buffer of exactly the size asked for, and a short read is an
 * error.  Nothing is dereferenced through a value taken from the file.
 *
 * A stats fd whose values can be mapped (statsfd's, with update windows)
 * is also mapped read-only at open; its mmap header (version 2: two
 * published copies selected by a seqcount latch) is validated against the
 * descriptors like the file itself, and the values are then copied out of
 * the mapping with the latch reader protocol of the uapi header, with a
 * bounded number of tries before pread() takes over.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "statsfd_priv.h"

#define set_err statsfd__set_err
#define read_exact statsfd__read_exact

static int real_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg);
}

static const struct statsfd__sys real_sys = {
	.ioctl = real_ioctl,
	.poll = poll,
	.pread = pread,
};

struct statsfd__sys statsfd__sys = {
	.ioctl = real_ioctl,
	.poll = poll,
	.pread = pread,
};

void statsfd__set_sys(const struct statsfd__sys *sys)
{
	statsfd__sys.ioctl = sys && sys->ioctl ? sys->ioctl : real_sys.ioctl;
	statsfd__sys.poll = sys && sys->poll ? sys->poll : real_sys.poll;
	statsfd__sys.pread = sys && sys->pread ? sys->pread : real_sys.pread;
}

void statsfd__set_err(struct statsfd_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	const char *colon;
	size_t n;

	errno = code;
	if (!err)
		return;
	err->err = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	/* By convention every message starts with "<field>: ". */
	colon = strstr(err->msg, ": ");
	n = colon ? (size_t)(colon - err->msg) : 0;
	if (n >= sizeof(err->field))
		n = sizeof(err->field) - 1;
	memcpy(err->field, err->msg, n);
	err->field[n] = '\0';
}

/* One pread of exactly @len bytes; a short read is reported as EIO. */
int statsfd__read_exact(int fd, void *buf, size_t len, uint64_t off,
			const char *what, struct statsfd_error *err)
{
	size_t done = 0;
	ssize_t r;

	/*
	 * Loop only on EINTR and on short reads of regular files; a stats fd
	 * returns everything at once or a short count at EOF.
	 */
	while (done < len) {
		r = statsfd__sys.pread(fd, (char *)buf + done, len - done,
				       (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			set_err(err, e, "%s: pread at offset %" PRIu64
				" failed: %s", what, off, strerror(e));
			return -e;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	if (done < len) {
		set_err(err, EIO, "%s: short read: %zu of %zu bytes at offset %"
			PRIu64 " (file truncated?)", what, done, len, off);
		return -EIO;
	}
	return 0;
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	if (!alen || !blen)
		return false;
	return a < b + blen && b < a + alen;
}

/* Names and ids are printed in tables, JSON and Prometheus: keep them tame. */
static int check_string(const char *s, size_t size, const char *field,
			bool allow_empty, struct statsfd_error *err)
{
	const char *nul = memchr(s, '\0', size);
	size_t i;

	if (!nul) {
		set_err(err, EINVAL, "%s: not NUL-terminated within name_size (%zu bytes)",
			field, size);
		return -EINVAL;
	}
	if (nul == s && !allow_empty) {
		set_err(err, EINVAL, "%s: empty", field);
		return -EINVAL;
	}
	for (i = 0; s + i < nul; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f) {
			set_err(err, EINVAL, "%s: invalid character 0x%02x at position %zu",
				field, c, i);
			return -EINVAL;
		}
	}
	return 0;
}

/* qsort_r() comparators; @ctx is the struct statsfd being validated. */
static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct statsfd *sf = ctx;
	const struct statsfd_stat *sa = &sf->stats[*(const unsigned int *)a];
	const struct statsfd_stat *sb = &sf->stats[*(const unsigned int *)b];
	int c = strcmp(sa->name, sb->name);

	return c ? c : (sa->index > sb->index) - (sa->index < sb->index);
}

static int cmp_offset(const void *a, const void *b, void *ctx)
{
	const struct statsfd *sf = ctx;
	const struct statsfd_stat *sa = &sf->stats[*(const unsigned int *)a];
	const struct statsfd_stat *sb = &sf->stats[*(const unsigned int *)b];

	if (sa->offset != sb->offset)
		return sa->offset < sb->offset ? -1 : 1;
	return (sa->index > sb->index) - (sa->index < sb->index);
}

static int check_header(const struct statsfd_header *h,
			struct statsfd_error *err)
{
	uint64_t stride = DESC_SIZE + (uint64_t)h->name_size;
	uint64_t desc_len = stride * h->num_desc;

	if (h->flags) {
		set_err(err, EINVAL, "header.flags: unknown flags 0x%x (must be 0)",
			h->flags);
		return -EINVAL;
	}
	if (!h->name_size || h->name_size > STATSFD_LIB_NAME_SIZE_MAX) {
		set_err(err, EINVAL, "header.name_size: %u out of range [1, %u]",
			h->name_size, STATSFD_LIB_NAME_SIZE_MAX);
		return -EINVAL;
	}
	if (h->num_desc > STATSFD_LIB_NUM_DESC_MAX) {
		set_err(err, EINVAL, "header.num_desc: %u above the limit %u",
			h->num_desc, STATSFD_LIB_NUM_DESC_MAX);
		return -EINVAL;
	}
	if (desc_len > STATSFD_LIB_DATA_SIZE_MAX) {
		set_err(err, EINVAL, "header.num_desc: descriptor block of %" PRIu64
			" bytes above the limit %u", desc_len,
			STATSFD_LIB_DATA_SIZE_MAX);
		return -EINVAL;
	}
	if (h->id_offset < HDR_SIZE) {
		set_err(err, EINVAL, "header.id_offset: %u overlaps the header",
			h->id_offset);
		return -EINVAL;
	}
	if (desc_len && h->desc_offset < HDR_SIZE) {
		set_err(err, EINVAL, "header.desc_offset: %u overlaps the header",
			h->desc_offset);
		return -EINVAL;
	}
	if (ranges_overlap(h->id_offset, h->name_size, h->desc_offset, desc_len)) {
		set_err(err, EINVAL, "header.desc_offset: descriptors [%u, +%" PRIu64
			") overlap the id [%u, +%u)", h->desc_offset, desc_len,
			h->id_offset, h->name_size);
		return -EINVAL;
	}
	if (h->data_offset < HDR_SIZE) {
		set_err(err, EINVAL, "header.data_offset: %u overlaps the header",
			h->data_offset);
		return -EINVAL;
	}
	if (h->data_offset % 8) {
		set_err(err, EINVAL, "header.data_offset: %u not 8-byte aligned",
			h->data_offset);
		return -EINVAL;
	}
	return 0;
}

static int check_desc(struct statsfd *sf, unsigned int i,
		      struct statsfd_error *err)
{
	const unsigned char *raw = sf->desc_raw + (size_t)i *
				   (DESC_SIZE + sf->hdr.name_size);
	struct statsfd_stat *st = &sf->stats[i];
	char field[48];
	int16_t exponent;
	uint16_t size;
	uint64_t end;

	snprintf(field, sizeof(field), "desc[%u].name", i);
	if (check_string((const char *)raw + DESC_SIZE, sf->hdr.name_size,
			 field, false, err))
		return -EINVAL;

	/* memcpy: the block is only 4-byte aligned when name_size is odd. */
	memcpy(&st->flags, raw + 0, sizeof(st->flags));
	memcpy(&exponent, raw + 4, sizeof(exponent));
	memcpy(&size, raw + 6, sizeof(size));
	memcpy(&st->offset, raw + 8, sizeof(st->offset));
	memcpy(&st->bucket_size, raw + 12, sizeof(st->bucket_size));
	st->name = (const char *)raw + DESC_SIZE;
	st->index = i;
	st->exponent = exponent;
	st->size = size;
	st->type = st->flags & STATSFD_TYPE_MASK;
	st->unit = st->flags & STATSFD_UNIT_MASK;
	st->base = st->flags & STATSFD_BASE_MASK;
	st->agg = st->flags & STATSFD_AGG_MASK;

#define BAD(fld, fmt, ...) do {						\
		set_err(err, EINVAL, "desc[%u].%s: " fmt " (stat %s)",	\
			i, fld, ##__VA_ARGS__, st->name);		\
		return -EINVAL;						\
	} while (0)

	if (st->flags & STATSFD_DESC_FLAGS_RESERVED)
		BAD("flags", "reserved bits 0x%x set",
		    st->flags & STATSFD_DESC_FLAGS_RESERVED);
	if (st->type > STATSFD_TYPE_MAX)
		BAD("flags", "unknown type 0x%x", st->type);
	if (st->unit > STATSFD_UNIT_MAX)
		BAD("flags", "unknown unit 0x%x", st->unit);
	if (st->base > STATSFD_BASE_MAX)
		BAD("flags", "unknown base 0x%x", st->base);
	if (st->agg > STATSFD_AGG_MAX)
		BAD("flags", "unknown aggregation 0x%x", st->agg);
	if (st->agg && st->agg != STATSFD_AGG_SUM && statsfd_stat_is_hist(st))
		BAD("flags", "a histogram can only be aggregated by sum");
	if (st->unit == STATSFD_UNIT_SECONDS && st->exponent > 0)
		BAD("exponent", "%d positive for unit seconds", st->exponent);
	if (st->unit != STATSFD_UNIT_SECONDS && st->exponent < 0)
		BAD("exponent", "%d negative for unit %s", st->exponent,
		    statsfd_unit_name(st->unit));
	if (st->unit == STATSFD_UNIT_BOOLEAN && st->exponent)
		BAD("exponent", "%d non-zero for unit boolean", st->exponent);
	if (st->exponent > STATSFD_LIB_EXPONENT_MAX ||
	    st->exponent < -STATSFD_LIB_EXPONENT_MAX)
		BAD("exponent", "%d out of range [-%d, %d]", st->exponent,
		    STATSFD_LIB_EXPONENT_MAX, STATSFD_LIB_EXPONENT_MAX);
	if (!st->size)
		BAD("size", "0");
	if (!statsfd_stat_is_hist(st) && st->size != 1)
		BAD("size", "%u for a scalar (must be 1)", st->size);
	if (st->type == STATSFD_TYPE_LOG_HIST &&
	    st->size > STATSFD_LIB_LOG_HIST_SIZE_MAX)
		BAD("size", "%u buckets for a log histogram (at most %u)",
		    st->size, STATSFD_LIB_LOG_HIST_SIZE_MAX);
	if (st->type == STATSFD_TYPE_LINEAR_HIST && !st->bucket_size)
		BAD("bucket_size", "0 for a linear histogram");
	if (st->type != STATSFD_TYPE_LINEAR_HIST && st->bucket_size)
		BAD("bucket_size", "%u for a stat that is not a linear histogram",
		    st->bucket_size);
	if (st->offset % 8)
		BAD("offset", "%u not 8-byte aligned", st->offset);
	end = (uint64_t)st->offset + (uint64_t)st->size * 8;
	if (end > STATSFD_LIB_DATA_SIZE_MAX)
		BAD("offset", "values end at %" PRIu64 ", above the limit %u",
		    end, STATSFD_LIB_DATA_SIZE_MAX);
#undef BAD
	if (end > sf->data_size)
		sf->data_size = (size_t)end;
	return 0;
}

static int check_layout(struct statsfd *sf, struct statsfd_error *err)
{
	const struct statsfd_header *h = &sf->hdr;
	unsigned int *by_off;
	unsigned int i;
	int ret = 0;

	if (!sf->num_stats)
		goto data;

	qsort_r(sf->by_name, sf->num_stats, sizeof(*sf->by_name), cmp_name, sf);
	for (i = 1; i < sf->num_stats; i++) {
		const struct statsfd_stat *a = &sf->stats[sf->by_name[i - 1]];
		const struct statsfd_stat *b = &sf->stats[sf->by_name[i]];

		if (!strcmp(a->name, b->name)) {
			set_err(err, EINVAL, "desc[%u].name: duplicate of desc[%u] (stat %s)",
				b->index, a->index, b->name);
			return -EINVAL;
		}
	}

	by_off = malloc(sf->num_stats * sizeof(*by_off));
	if (!by_off) {
		set_err(err, ENOMEM, "desc: out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < sf->num_stats; i++)
		by_off[i] = i;
	qsort_r(by_off, sf->num_stats, sizeof(*by_off), cmp_offset, sf);
	for (i = 1; i < sf->num_stats; i++) {
		const struct statsfd_stat *a = &sf->stats[by_off[i - 1]];
		const struct statsfd_stat *b = &sf->stats[by_off[i]];

		if ((uint64_t)a->offset + (uint64_t)a->size * 8 > b->offset) {
			set_err(err, EINVAL, "desc[%u].offset: values of %s overlap those of desc[%u] (%s)",
				b->index, b->name, a->index, a->name);
			ret = -EINVAL;
			break;
		}
	}
	free(by_off);
	if (ret)
		return ret;

data:
	if (ranges_overlap(h->data_offset, sf->data_size, h->id_offset,
			   h->name_size)) {
		set_err(err, EINVAL, "header.data_offset: data block [%u, +%zu) overlaps the id",
			h->data_offset, sf->data_size);
		return -EINVAL;
	}
	if (ranges_overlap(h->data_offset, sf->data_size, h->desc_offset,
			   sf->desc_len)) {
		set_err(err, EINVAL, "header.data_offset: data block [%u, +%zu) overlaps the descriptors",
			h->data_offset, sf->data_size);
		return -EINVAL;
	}
	return 0;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len--) {
		h ^= *c++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/*
 * The two stats a source with update windows ends its data block with,
 * recognized by name and exact shape (a stat of another shape with one of
 * these names is an ordinary stat).
 */
static bool is_sample_stat(const struct statsfd_stat *st)
{
	return !strcmp(st->name, STATSFD_STAT_SAMPLE_NS) &&
	       st->flags == (STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS |
			     STATSFD_BASE_POW10) &&
	       st->exponent == -9 && st->size == 1;
}

static bool is_generation_stat(const struct statsfd_stat *st)
{
	return !strcmp(st->name, STATSFD_STAT_GENERATION) &&
	       st->flags == (STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_NONE |
			     STATSFD_BASE_POW10) &&
	       st->exponent == 0 && st->size == 1;
}

static bool is_meta(const struct statsfd *sf, const struct statsfd_stat *st)
{
	return st == sf->sample_st || st == sf->gen_st;
}

static uint64_t stat_end(const struct statsfd_stat *st)
{
	return (uint64_t)st->offset + (uint64_t)st->size * 8;
}

static void map_detach(struct statsfd *sf)
{
	if (sf->map)
		munmap((void *)sf->map, sf->map_len);
	sf->map = NULL;
	sf->map_len = 0;
	sf->map_data_off = 0;
	sf->map_data_size = 0;
	sf->map_stride = 0;
	sf->map_full = false;
}

/*
 * Whether the mmap header @h fits the descriptors: the mapped values must
 * be exactly the plain stats (every stat that is neither an aggregate nor
 * sample_ns/generation), which start the data block, and nothing else;
 * and they must come as the two copies of the latch protocol, the second
 * @copy_stride bytes after the first and not overlapping it.
 */
static int map_check(const struct statsfd *sf,
		     const struct statsfd_mmap_header *h,
		     struct statsfd_error *err)
{
	uint64_t span = 0;
	unsigned int i;

	/* Version 1 had one copy guarded by an odd/even count: not readable here. */
	if (h->version < 2) {
		set_err(err, EINVAL, "mmap.version: %u (must be at least 2)",
			h->version);
		return -EINVAL;
	}
	/* A flag this library does not know changes the rules. */
	if (h->flags & ~STATSFD_MMAP_FLAGS) {
		set_err(err, EINVAL, "mmap.flags: %#x unknown", h->flags);
		return -EINVAL;
	}
	/* Without the latch there is no copy a reader may take without waiting. */
	if (!(h->flags & STATSFD_MMAP_LATCH)) {
		set_err(err, EINVAL, "mmap.flags: %#x without STATSFD_MMAP_LATCH",
			h->flags);
		return -EINVAL;
	}
	if (h->header_size < sizeof(*h)) {
		set_err(err, EINVAL, "mmap.header_size: %u smaller than the %zu bytes of version 2",
			h->header_size, sizeof(*h));
		return -EINVAL;
	}
	if (h->data_offset < h->header_size) {
		set_err(err, EINVAL, "mmap.data_offset: %u inside the header (header_size %u)",
			h->data_offset, h->header_size);
		return -EINVAL;
	}
	if (h->data_offset % 8) {
		set_err(err, EINVAL, "mmap.data_offset: %u not 8-byte aligned",
			h->data_offset);
		return -EINVAL;
	}
	if (h->data_offset > STATSFD_LIB_DATA_SIZE_MAX) {
		set_err(err, EINVAL, "mmap.data_offset: %u above the limit %u",
			h->data_offset, STATSFD_LIB_DATA_SIZE_MAX);
		return -EINVAL;
	}
	for (i = 0; i < sf->num_stats; i++) {
		const struct statsfd_stat *st = &sf->stats[i];

		if (!st->agg && !is_meta(sf, st) && stat_end(st) > span)
			span = stat_end(st);
	}
	if (h->data_size != span) {
		set_err(err, EINVAL, "mmap.data_size: %u bytes, but the plain stats span %" PRIu64,
			h->data_size, span);
		return -EINVAL;
	}
	for (i = 0; i < sf->num_stats; i++) {
		const struct statsfd_stat *st = &sf->stats[i];

		if (st->offset < h->data_size && (st->agg || is_meta(sf, st))) {
			set_err(err, EINVAL, "mmap.data_size: %u bytes cover desc[%u] (%s), not a plain stat",
				h->data_size, i, st->name);
			return -EINVAL;
		}
	}
	/* The copies must not overlap, and a copy's values stay 8-aligned. */
	if (h->copy_stride < h->data_size || h->copy_stride % 8) {
		set_err(err, EINVAL, "mmap.copy_stride: %u (must be a multiple of 8, at least data_size %u)",
			h->copy_stride, h->data_size);
		return -EINVAL;
	}
	if (h->copy_stride > STATSFD_LIB_DATA_SIZE_MAX) {
		set_err(err, EINVAL, "mmap.copy_stride: %u above the limit %u",
			h->copy_stride, STATSFD_LIB_DATA_SIZE_MAX);
		return -EINVAL;
	}
	return 0;
}

/* The fields map_check() validated, which must read the same in every mapping. */
static bool map_same_header(const struct statsfd_mmap_header *a,
			    const struct statsfd_mmap_header *b)
{
	return a->version == b->version && a->header_size == b->header_size &&
	       a->data_offset == b->data_offset &&
	       a->data_size == b->data_size && a->flags == b->flags &&
	       a->copy_stride == b->copy_stride;
}

/* At least the header and one page; the area is whole pages. */
static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p >= (long)sizeof(struct statsfd_mmap_header) ? (size_t)p : 4096;
}

int statsfd__attach_map(struct statsfd *sf, int fd, struct statsfd_error *err)
{
	struct statsfd_mmap_header h, h2;
	size_t page = page_size(), len = page, need;
	struct stat stb;
	unsigned int i;
	void *p;
	int e;

	if (err)
		memset(err, 0, sizeof(*err));
	map_detach(sf);
	if (fstat(fd, &stb)) {
		e = errno;
		set_err(err, e, "mmap: fstat failed: %s", strerror(e));
		return -e;
	}
	/* Reading past the end of a mapped file would be SIGBUS. */
	if (S_ISREG(stb.st_mode) && (uint64_t)stb.st_size < len) {
		set_err(err, EINVAL, "mmap: file of %lld bytes, less than a page",
			(long long)stb.st_size);
		return -EINVAL;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		e = errno;
		set_err(err, e, "mmap: %s", strerror(e));
		return -e;
	}
	/* The fields validated never change; only seq does. */
	memcpy(&h, p, sizeof(h));
	e = -map_check(sf, &h, err);
	if (e)
		goto fail;
	/* Both copies: map_check() bounded each term, so no overflow. */
	need = (size_t)h.data_offset + h.copy_stride + h.data_size;
	if (need > len) {
		munmap(p, len);
		if (sf->map_hook)
			sf->map_hook(sf->map_hook_arg, STATSFD_MAP_HOOK_ATTACH);
		len = (need + page - 1) / page * page;
		if (S_ISREG(stb.st_mode) && (uint64_t)stb.st_size < len) {
			if ((uint64_t)stb.st_size < (uint64_t)h.data_offset + h.data_size)
				set_err(err, EINVAL, "mmap.data_size: values end at %zu, past the file (%lld bytes)",
					(size_t)h.data_offset + h.data_size,
					(long long)stb.st_size);
			else
				set_err(err, EINVAL, "mmap.copy_stride: the second copy ends at %zu, past the file (%lld bytes)",
					need, (long long)stb.st_size);
			return -EINVAL;
		}
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			e = errno;
			set_err(err, e, "mmap: mapping %zu bytes: %s", len,
				strerror(e));
			return -e;
		}
		memcpy(&h2, p, sizeof(h2));
		if (!map_same_header(&h, &h2)) {
			e = EINVAL;
			set_err(err, e, "mmap: header changed between two mappings");
			goto fail;
		}
	}
	sf->map = p;
	sf->map_len = len;
	sf->map_data_off = h.data_offset;
	sf->map_data_size = h.data_size;
	sf->map_stride = h.copy_stride;
	sf->map_full = true;
	for (i = 0; i < sf->num_stats; i++)
		if (!is_meta(sf, &sf->stats[i]) &&
		    stat_end(&sf->stats[i]) > h.data_size)
			sf->map_full = false;
	return 0;
fail:
	munmap(p, len);
	return -e;
}

void statsfd__set_map_hook(struct statsfd *sf,
			   void (*hook)(void *arg, unsigned int attempt),
			   void *arg)
{
	sf->map_hook = hook;
	sf->map_hook_arg = arg;
}

void statsfd__map_counters(const struct statsfd *sf, uint64_t *retries,
			   uint64_t *fallbacks)
{
	*retries = __atomic_load_n(&sf->map_retries, __ATOMIC_RELAXED);
	*fallbacks = __atomic_load_n(&sf->map_fallbacks, __ATOMIC_RELAXED);
}

/* Only anon-inode fds can be stats fds; never map a file (SIGBUS). */
static bool may_be_stats_fd(int fd)
{
	struct statfs st;

	return !fstatfs(fd, &st) &&
	       (unsigned long)st.f_type == (unsigned long)ANON_INODE_FS_MAGIC;
}

/*
 * Validate the descriptors of @sf: its header, id and raw descriptor
 * block are filled in, @stats and @by_name allocated for them.
 */
int statsfd__parse(struct statsfd *sf, struct statsfd_error *err)
{
	unsigned int i;

	for (i = 0; i < sf->num_stats; i++) {
		if (check_desc(sf, i, err))
			return -EINVAL;
		sf->by_name[i] = i;
	}
	return check_layout(sf, err);
}

/* After statsfd__parse(): what is derived from the descriptors. */
/**
 * statsfd__probe() - read the whole data block of a handle once, to prove
 *	it is there before anyone relies on it
 * @sf: a parsed handle
 * @what: the field an allocation failure names ("data", "view")
 * @err: filled on failure; may be NULL
 *
 * Return: 0, or a negative errno (errno set).
 */
int statsfd__probe(const struct statsfd *sf, const char *what,
		   struct statsfd_error *err)
{
	uint64_t *probe = malloc(sf->data_size + 8);
	int ret;

	if (!probe) {
		set_err(err, ENOMEM, "%s: out of memory", what);
		return -ENOMEM;
	}
	ret = statsfd_read(sf, probe, err);
	free(probe);
	if (ret)
		errno = -ret;
	return ret;
}

void statsfd__finish(struct statsfd *sf)
{
	sf->sample_st = statsfd_find(sf, STATSFD_STAT_SAMPLE_NS);
	if (sf->sample_st && !is_sample_stat(sf->sample_st))
		sf->sample_st = NULL;
	sf->gen_st = statsfd_find(sf, STATSFD_STAT_GENERATION);
	if (sf->gen_st && !is_generation_stat(sf->gen_st))
		sf->gen_st = NULL;
	sf->hash = fnv1a(0xcbf29ce484222325ULL, &sf->hdr.name_size,
			 sizeof(sf->hdr.name_size));
	sf->hash = fnv1a(sf->hash, &sf->data_size, sizeof(sf->data_size));
	sf->hash = fnv1a(sf->hash, sf->desc_raw, sf->desc_len);
}

struct statsfd *statsfd_open_fd(int fd, unsigned int flags,
				struct statsfd_error *err)
{
	struct statsfd *sf;
	int e;

	if (err)
		memset(err, 0, sizeof(*err));
	if (flags & ~(STATSFD_OPEN_CLOSE_FD | STATSFD_OPEN_NO_MMAP)) {
		set_err(err, EINVAL, "flags: unknown open flags 0x%x", flags);
		goto fail_fd;
	}
	sf = calloc(1, sizeof(*sf));
	if (!sf) {
		set_err(err, ENOMEM, "handle: out of memory");
		goto fail_fd;
	}
	sf->fd = fd;
	sf->close_fd = flags & STATSFD_OPEN_CLOSE_FD;

	if (read_exact(fd, &sf->hdr, HDR_SIZE, 0, "header", err))
		goto fail;
	if (check_header(&sf->hdr, err))
		goto fail;

	sf->id = malloc(sf->hdr.name_size);
	sf->num_stats = sf->hdr.num_desc;
	sf->desc_len = (size_t)sf->hdr.num_desc *
		       (DESC_SIZE + sf->hdr.name_size);
	/* +1 so that malloc(0) never returns NULL for an empty schema. */
	sf->desc_raw = malloc(sf->desc_len + 1);
	sf->stats = calloc(sf->num_stats + 1, sizeof(*sf->stats));
	sf->by_name = calloc(sf->num_stats + 1, sizeof(*sf->by_name));
	if (!sf->id || !sf->desc_raw || !sf->stats || !sf->by_name) {
		set_err(err, ENOMEM, "descriptors: out of memory");
		goto fail;
	}
	if (read_exact(fd, sf->id, sf->hdr.name_size, sf->hdr.id_offset, "id",
		       err))
		goto fail;
	if (check_string(sf->id, sf->hdr.name_size, "id", true, err))
		goto fail;
	if (read_exact(fd, sf->desc_raw, sf->desc_len, sf->hdr.desc_offset,
		       "descriptors", err))
		goto fail;
	if (statsfd__parse(sf, err))
		goto fail;

	/* Prove the data block is really there before anyone relies on it. */
	if (statsfd__probe(sf, "data", err))
		goto fail;

	statsfd__finish(sf);
	/* Any failure (ENODEV for KVM and unmappable sources): pread only. */
	if (!(flags & STATSFD_OPEN_NO_MMAP) && may_be_stats_fd(fd))
		statsfd__attach_map(sf, fd, NULL);
	return sf;

fail:
	e = errno;
	statsfd_close(sf);
	errno = e;
	return NULL;
fail_fd:
	e = errno;
	if (flags & STATSFD_OPEN_CLOSE_FD)
		close(fd);
	errno = e;
	return NULL;
}

struct statsfd *statsfd_open_path(const char *path, struct statsfd_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		if (err)
			memset(err, 0, sizeof(*err));
		set_err(err, e, "path: cannot open %s: %s", path, strerror(e));
		return NULL;
	}
	return statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, err);
}

void statsfd_close(struct statsfd *sf)
{
	if (!sf)
		return;
	map_detach(sf);
	if (sf->close_fd)
		close(sf->fd);
	free(sf->id);
	free(sf->desc_raw);
	free(sf->stats);
	free(sf->by_name);
	free(sf->emul_off);
	free(sf);
}

int statsfd_fd(const struct statsfd *sf)
{
	return sf->fd;
}

const char *statsfd_id(const struct statsfd *sf)
{
	return sf->id;
}

const struct statsfd_header *statsfd_header(const struct statsfd *sf)
{
	return &sf->hdr;
}

unsigned int statsfd_num_stats(const struct statsfd *sf)
{
	return sf->num_stats;
}

const struct statsfd_stat *statsfd_stat(const struct statsfd *sf,
					unsigned int i)
{
	return i < sf->num_stats ? &sf->stats[i] : NULL;
}

const struct statsfd_stat *statsfd_find(const struct statsfd *sf,
					const char *name)
{
	size_t lo = 0, hi = sf->num_stats;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct statsfd_stat *st = &sf->stats[sf->by_name[mid]];
		int c = strcmp(name, st->name);

		if (!c)
			return st;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

size_t statsfd_data_size(const struct statsfd *sf)
{
	return sf->data_size;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* When the values of a copy from the mapping were current. */
struct map_meta {
	uint64_t sample_ns;
	uint64_t generation;
};

static bool in_map(const struct statsfd *sf, const struct statsfd_stat *st)
{
	return stat_end(st) <= sf->map_data_size;
}

/*
 * Copy values out of the mapping, all of them (@stats NULL) or those of
 * the mapped stats among @stats, into @buf at their data block offsets,
 * with the latch protocol of statsfd_mmap_copy() in the uapi header: load
 * the count (acquire), copy from the copy it selects (count & 1), and
 * keep the result only if the count is the same after an acquire fence.
 * The writer fills only the other copy, so a copy is thrown away only
 * when the writer published a window meanwhile; a writer that stopped or
 * was preempted costs the reader nothing.  The library keeps its own loop
 * rather than calling statsfd_mmap_copy(): it copies scattered stats in
 * one try, takes sample_ns inside the try, and bounds the tries.  Each
 * u64 is one relaxed atomic load (a plain mov).  With @want_ns the time
 * is taken between the two loads of the count, as the kernel does for a
 * pread.  After STATSFD_MAP_TRIES thrown-away copies (a writer
 * publishing back to back) the caller falls back to pread, which the
 * kernel completes without waiting for the writer either.
 */
static bool map_snapshot(const struct statsfd *sf, uint64_t *buf,
			 const struct statsfd_stat *const *stats,
			 unsigned int n, bool want_ns, struct map_meta *meta)
{
	const struct statsfd_mmap_header *h = sf->map;
	struct timespec ts = { 0, 0 };
	const uint64_t *vals;
	unsigned int attempt, i;
	size_t w, first, end;
	uint64_t s1, s2;

	for (attempt = 0; attempt < STATSFD_MAP_TRIES; attempt++) {
		/* Pairs with the writer's barrier before it advances seq. */
		s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		vals = (const uint64_t *)((const char *)sf->map +
					  sf->map_data_off +
					  (size_t)(s1 & 1) * sf->map_stride);
		for (i = 0; i < (stats ? n : 1); i++) {
			if (stats && !in_map(sf, stats[i]))
				continue;
			first = stats ? stats[i]->offset / 8 : 0;
			end = stats ? (size_t)stat_end(stats[i]) / 8 :
				      sf->map_data_size / 8;
			for (w = first; w < end; w++)
				buf[w] = __atomic_load_n(&vals[w],
							 __ATOMIC_RELAXED);
		}
		if (want_ns && clock_gettime(CLOCK_BOOTTIME, &ts))
			break;
		if (sf->map_hook)
			sf->map_hook(sf->map_hook_arg, attempt);
		/* The values before the count again. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			if (attempt)
				__atomic_fetch_add((uint64_t *)&sf->map_retries,
						   attempt, __ATOMIC_RELAXED);
			meta->generation = s1;
			meta->sample_ns = (uint64_t)ts.tv_sec * 1000000000u +
					  (uint64_t)ts.tv_nsec;
			return true;
		}
		cpu_relax();
	}
	__atomic_fetch_add((uint64_t *)&sf->map_retries, attempt,
			   __ATOMIC_RELAXED);
	__atomic_fetch_add((uint64_t *)&sf->map_fallbacks, 1, __ATOMIC_RELAXED);
	return false;
}

static void put_meta(const struct statsfd *sf, uint64_t *buf,
		     const struct map_meta *meta, bool sample, bool gen)
{
	if (sample && sf->sample_st)
		buf[sf->sample_st->offset / 8] = meta->sample_ns;
	if (gen && sf->gen_st)
		buf[sf->gen_st->offset / 8] = meta->generation;
}

/*
 * The read of a view the library emulates (statsfd_open_view() on an fd
 * without STATSFD_IOC_VIEW): one pread() of the span of the parent's data
 * block that holds the view's stats, gathered into the view's layout.
 */
static int emul_read(const struct statsfd *sf, uint64_t *buf,
		     const struct statsfd_stat *const *stats, unsigned int n,
		     struct statsfd_error *err)
{
	uint64_t stackbuf[512], *tmp = stackbuf;
	uint64_t lo = UINT64_MAX, hi = 0, off;
	unsigned int i, cnt = stats ? n : sf->num_stats;
	const struct statsfd_stat *st;
	int ret;

	for (i = 0; i < cnt; i++) {
		st = stats ? stats[i] : &sf->stats[i];
		off = sf->emul_off[st->index];
		if (off < lo)
			lo = off;
		if (off + (uint64_t)st->size * 8 > hi)
			hi = off + (uint64_t)st->size * 8;
	}
	if (hi <= lo)
		return 0;
	if (hi - lo > sizeof(stackbuf)) {
		tmp = malloc(hi - lo);
		if (!tmp) {
			set_err(err, ENOMEM, "data: out of memory");
			return -ENOMEM;
		}
	}
	/* One pread is one snapshot of every value it covers. */
	ret = statsfd__read_exact(sf->fd, tmp, hi - lo,
				  sf->emul_data_offset + lo, "data", err);
	for (i = 0; !ret && i < cnt; i++) {
		st = stats ? stats[i] : &sf->stats[i];
		memcpy((char *)buf + st->offset,
		       (char *)tmp + (sf->emul_off[st->index] - lo),
		       (size_t)st->size * 8);
	}
	if (tmp != stackbuf)
		free(tmp);
	return ret;
}

int statsfd_read(const struct statsfd *sf, uint64_t *buf,
		 struct statsfd_error *err)
{
	struct map_meta meta;

	if (!sf->data_size)
		return 0;
	if (sf->emul_off)
		return emul_read(sf, buf, NULL, 0, err);
	if (sf->map_full &&
	    map_snapshot(sf, buf, NULL, 0, sf->sample_st != NULL, &meta)) {
		/* Only sample_ns, generation and holes are past the mapping. */
		memset((char *)buf + sf->map_data_size, 0,
		       sf->data_size - sf->map_data_size);
		put_meta(sf, buf, &meta, true, true);
		return 0;
	}
	return read_exact(sf->fd, buf, sf->data_size, sf->hdr.data_offset,
			  "data", err);
}

int statsfd_read_stats(const struct statsfd *sf,
		       const struct statsfd_stat *const *stats, unsigned int n,
		       uint64_t *buf, struct statsfd_error *err)
{
	uintptr_t base = (uintptr_t)sf->stats;
	uint64_t lo = UINT64_MAX, hi = 0;
	bool mapped = sf->map != NULL, want_ns = false, want_gen = false;
	struct map_meta meta;
	unsigned int i;

	if (err)
		memset(err, 0, sizeof(*err));
	for (i = 0; i < n; i++) {
		uintptr_t p = (uintptr_t)stats[i];

		if (!stats[i] || p < base ||
		    p >= base + sf->num_stats * sizeof(*sf->stats) ||
		    (p - base) % sizeof(*sf->stats)) {
			set_err(err, EINVAL, "stats[%u]: not a descriptor of this handle",
				i);
			return -EINVAL;
		}
		if (stats[i]->offset < lo)
			lo = stats[i]->offset;
		if (stat_end(stats[i]) > hi)
			hi = stat_end(stats[i]);
		if (stats[i] == sf->sample_st)
			want_ns = true;
		else if (stats[i] == sf->gen_st)
			want_gen = true;
		else if (!is_meta(sf, stats[i]) && !in_map(sf, stats[i]))
			mapped = false;
	}
	if (!n)
		return 0;
	if (sf->emul_off)
		return emul_read(sf, buf, stats, n, err);
	if (mapped && map_snapshot(sf, buf, stats, n, want_ns, &meta)) {
		put_meta(sf, buf, &meta, want_ns, want_gen);
		return 0;
	}
	/* One pread is one snapshot of every value it covers. */
	return read_exact(sf->fd, (char *)buf + lo, (size_t)(hi - lo),
			  sf->hdr.data_offset + lo, "data", err);
}

bool statsfd_is_mapped(const struct statsfd *sf)
{
	return sf->map != NULL;
}

const struct statsfd_stat *statsfd_sample_stat(const struct statsfd *sf)
{
	return sf->sample_st;
}

const struct statsfd_stat *statsfd_generation_stat(const struct statsfd *sf)
{
	return sf->gen_st;
}

double statsfd_sample_interval(const struct statsfd *sf, const uint64_t *prev,
			       const uint64_t *cur, double fallback)
{
	uint64_t a, b;

	if (!sf->sample_st)
		return fallback;
	a = prev[sf->sample_st->offset / 8];
	b = cur[sf->sample_st->offset / 8];
	if (!a || b <= a)
		return fallback;
	return (double)(b - a) / 1e9;
}

const void *statsfd_schema_bytes(const struct statsfd *sf, size_t *len)
{
	*len = sf->desc_len;
	return sf->desc_raw;
}

bool statsfd_same_schema(const struct statsfd *a, const struct statsfd *b)
{
	return a->hash == b->hash && a->hdr.name_size == b->hdr.name_size &&
	       a->data_size == b->data_size && a->desc_len == b->desc_len &&
	       !memcmp(a->desc_raw, b->desc_raw, a->desc_len);
}

uint64_t statsfd_schema_hash(const struct statsfd *sf)
{
	return sf->hash;
}
