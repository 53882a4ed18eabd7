/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stats_file.h - the one stats-file parser of the programs that test and
 * measure statsfd without libstatsfd: the guests' selftests
 * (tools/selftests) and the bench (tools/bench).  Header-only, so that
 * both build it statically with nothing else from this tree.
 *
 * A stats file (Documentation/statsfd-abi.rst) is a header, an id string,
 * a block of descriptors of 16 + name_size bytes each, and a data block of
 * u64 values.  Two ways to read one:
 *
 * - its layout with pread() (stats_layout_read()): the header and the
 *   descriptor block, from which stats_data_size() and stats_file_size()
 *   follow; values are read where stats_find() says;
 * - the whole file in memory with one pread() (struct stats_image), for a
 *   test that looks up a few values of a small file.
 *
 * Lookups never read past the descriptor block: a descriptor's name is
 * compared within name_size bytes.
 */
#ifndef STATSFD_STATS_FILE_H
#define STATSFD_STATS_FILE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <linux/statsfd.h>

/* Bytes of one descriptor of a file laid out as @h says. */
static inline size_t stats_desc_stride(const struct statsfd_header *h)
{
	return sizeof(struct statsfd_desc) + h->name_size;
}

/* Descriptor @i of the descriptor block @descs. */
static inline struct statsfd_desc *stats_desc(const struct statsfd_header *h,
					      const void *descs, unsigned int i)
{
	return (struct statsfd_desc *)((const char *)descs +
				       (size_t)i * stats_desc_stride(h));
}

/* The descriptor named @name in the block @descs, or NULL. */
static inline struct statsfd_desc *stats_find(const struct statsfd_header *h,
					      const void *descs,
					      const char *name)
{
	unsigned int i;

	for (i = 0; i < h->num_desc; i++) {
		struct statsfd_desc *d = stats_desc(h, descs, i);

		if (!strncmp(d->name, name, h->name_size))
			return d;
	}
	return NULL;
}

/* Bytes of the data block: up to the end of the last descriptor's values. */
static inline size_t stats_data_size(const struct statsfd_header *h,
				     const void *descs)
{
	size_t end, size = 0;
	unsigned int i;

	for (i = 0; i < h->num_desc; i++) {
		const struct statsfd_desc *d = stats_desc(h, descs, i);

		end = d->offset + (size_t)d->size * sizeof(__u64);
		if (end > size)
			size = end;
	}
	return size;
}

/*
 * Bytes of the whole file: up to the end of whichever of the id, the
 * descriptors and the data (@data_size bytes) ends last.
 */
static inline size_t stats_file_size(const struct statsfd_header *h,
				     size_t data_size)
{
	size_t size = h->desc_offset + h->num_desc * stats_desc_stride(h);

	if (h->data_offset + data_size > size)
		size = h->data_offset + data_size;
	if (h->id_offset + h->name_size > size)
		size = h->id_offset + h->name_size;
	return size;
}

/* pread() of exactly @len bytes: 0, or -1 with errno (EIO if short). */
static inline int stats_pread_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t ret = pread(fd, buf, len, off);

	if (ret < 0)
		return -1;
	if ((size_t)ret != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * The header of @fd into @h and its descriptor block into *@descs (malloc()ed,
 * at least one byte; the caller frees it).  Returns 0, or -1 with errno
 * (EIO for a short read) and *@descs NULL.
 */
static inline int stats_layout_read(int fd, struct statsfd_header *h,
				    char **descs)
{
	size_t len;

	*descs = NULL;
	if (stats_pread_all(fd, h, sizeof(*h), 0))
		return -1;
	len = (size_t)h->num_desc * stats_desc_stride(h);
	*descs = calloc(1, len ? len : 1);
	if (!*descs) {
		errno = ENOMEM;
		return -1;
	}
	if (stats_pread_all(fd, *descs, len, h->desc_offset)) {
		free(*descs);
		*descs = NULL;
		return -1;
	}
	return 0;
}

/**
 * struct stats_image - a small stats file read whole with one pread()
 * @h: its header (a copy of the first bytes of @buf)
 * @len: bytes read
 * @buf: the file
 */
struct stats_image {
	struct statsfd_header h;
	ssize_t len;
	char buf[16384];
};

/*
 * Reads @fd whole into @f: 0, or -1 when it is shorter than a header or
 * does not fit in the buffer (a lookup would read past what was read).
 */
static inline int stats_image_read(int fd, struct stats_image *f)
{
	f->len = pread(fd, f->buf, sizeof(f->buf), 0);
	if (f->len < (ssize_t)sizeof(f->h) || f->len == sizeof(f->buf))
		return -1;
	memcpy(&f->h, f->buf, sizeof(f->h));
	return 0;
}

/* Descriptor @i of @f. */
static inline const struct statsfd_desc *
stats_image_desc(const struct stats_image *f, unsigned int i)
{
	return stats_desc(&f->h, f->buf + f->h.desc_offset, i);
}

/* The id string of @f. */
static inline const char *stats_image_id(const struct stats_image *f)
{
	return f->buf + f->h.id_offset;
}

/* The descriptor named @name in @f, or NULL. */
static inline const struct statsfd_desc *
stats_image_find(const struct stats_image *f, const char *name)
{
	return stats_find(&f->h, f->buf + f->h.desc_offset, name);
}

/* The values of @d in @f (not aligned: read them with memcpy()). */
static inline const void *stats_image_values(const struct stats_image *f,
					     const struct statsfd_desc *d)
{
	return f->buf + f->h.data_offset + d->offset;
}

/* The first value of stat @name in @f, or UINT64_MAX without one. */
static inline uint64_t stats_image_val(const struct stats_image *f,
				       const char *name)
{
	const struct statsfd_desc *d = stats_image_find(f, name);
	uint64_t v;

	if (!d)
		return UINT64_MAX;
	memcpy(&v, stats_image_values(f, d), sizeof(v));
	return v;
}

#endif /* STATSFD_STATS_FILE_H */
