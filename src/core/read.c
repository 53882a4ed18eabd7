// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd read: serve any byte range of one logical stats file from the
 * schema's prebuilt blocks, the source's id and its live values.
 *
 * The file of a source is laid out as
 *
 *	+-------------+  0
 *	|   header    |  struct statsfd_header, shared by the schema
 *	+-------------+  header.id_offset = 24
 *	|  id string  |  name_size bytes, zero-padded, per source
 *	+-------------+  header.data_offset = 24 + name_size
 *	|    data     |  the live stats struct (stats_size bytes),
 *	|             |  then aggregates computed at read time
 *	+-------------+  header.desc_offset = data_offset + data_size
 *	| descriptors |  num_desc * (16 + name_size), shared by the schema
 *	+-------------+  file_size
 *
 * Every block is 8-byte aligned and the blocks are adjacent, so the file
 * has no holes and every byte comes from exactly one block.
 */
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/pagemap.h>
#include <linux/spinlock.h>
#include <linux/statsfd.h>
#include <linux/uaccess.h>

#include "internal.h"

/*
 * Copy bytes [@off, @off + @len) of the u64 array @vals to @dst without
 * ever tearing a value: each u64 is loaded once with READ_ONCE(), racing by
 * design with its writer's WRITE_ONCE() (statsfd_stat_add()), so a store
 * is seen entirely or not at all.  Not a memcpy(): that may copy a u64 in
 * pieces.  A head or tail that covers part of a u64 goes through a bounce
 * copy of it, so even a 1-byte read loads the whole u64 once.
 *
 * Return: bytes copied, less than @len only if @dst faulted.
 */
static size_t statsfd_copy_values(char __user *dst, const u64 *vals,
				  size_t off, size_t len)
{
	const u64 *word = vals + off / sizeof(u64);
	size_t head = off % sizeof(u64);
	size_t done = 0;
	u64 bounce;

	if (!user_write_access_begin(dst, len))
		return 0;
	if (head) {
		size_t n = min(sizeof(u64) - head, len);

		bounce = READ_ONCE(*word);
		word++;
		unsafe_copy_to_user(dst, (const char *)&bounce + head, n,
				    fault);
		done = n;
	}
	while (len - done >= sizeof(u64)) {
		unsafe_put_user(READ_ONCE(*word), (u64 __user *)(dst + done),
				fault);
		word++;
		done += sizeof(u64);
	}
	if (done < len) {
		bounce = READ_ONCE(*word);
		unsafe_copy_to_user(dst + done, (const char *)&bounce,
				    len - done, fault);
		done = len;
	}
fault:
	user_write_access_end();
	return done;
}

/* Copy from an immutable or private kernel block; bytes copied. */
static size_t statsfd_copy_block(char __user *dst, const void *block,
				 size_t off, size_t len)
{
	return len - copy_to_user(dst, block + off, len);
}

/*
 * Copy bytes [@off, @off + @len) of @src's aggregate area to @dst.  The
 * aggregates are computed into @src->agg_buf, allocated once at source
 * init, so a read never allocates and never fails for memory.  The buffer
 * is shared by all readers of @src, so it is copied out under the same
 * hold of children_lock it was filled under, with page faults disabled (a
 * spinlock holder must not sleep on a fault).  When the copy faults, the
 * lock is dropped, the user pages are faulted in, and the aggregates are
 * computed and copied again in full, so every value a read returns still
 * comes from one computation over one set of children.
 *
 * Return: bytes copied, less than @len only if @dst faulted for good.
 */
static size_t statsfd_copy_aggs(char __user *dst, struct statsfd_source *src,
				size_t off, size_t len)
{
	const char *block = (const char *)src->agg_buf + off;
	size_t left;

	for (;;) {
		spin_lock(&src->children_lock);
		statsfd_agg_compute_locked(src, src->agg_buf);
		pagefault_disable();
		left = copy_to_user(dst, block, len);
		pagefault_enable();
		spin_unlock(&src->children_lock);
		if (!left)
			return len;
		/* No progress possible: a bad address or a read-only page. */
		if (fault_in_writeable(dst + len - left, left) == left)
			return len - left;
	}
}

/**
 * statsfd_read_source() - read part of the stats file of @src
 * @src: the source
 * @buf: user buffer
 * @len: bytes wanted; reads past the end of the file are short
 * @ppos: file position; advanced by the bytes returned
 *
 * The header, id and descriptors are copied from the blocks built once
 * for the schema and the source; the data block from the live values,
 * never tearing a u64; the aggregates are computed for this call under the
 * source's children_lock, into a buffer allocated with the source.
 * Nothing here allocates memory or takes a lock the stats writers take.
 *
 * Context: process context; may fault in user pages.
 * Return: bytes read (0 at or past the end of the file), and @ppos
 * advanced by them, including a short read that stopped at a fault;
 * -EINVAL for a negative position; -EFAULT if nothing could be copied to
 * @buf.
 */
ssize_t statsfd_read_source(struct statsfd_source *src, char __user *buf,
			    size_t len, loff_t *ppos)
{
	const struct statsfd_schema *schema = src->schema;
	const struct statsfd_header *hdr = &schema->header;
	u32 stats_end = hdr->data_offset + schema->stats_size;
	loff_t pos = *ppos;
	size_t done = 0;

	if (pos < 0)
		return -EINVAL;
	if (pos >= schema->file_size || !len)
		return 0;
	len = min_t(u64, len, schema->file_size - pos);

	while (done < len) {
		u32 off = pos + done;	/* below file_size, a u32 */
		size_t want, got;

		if (off < hdr->id_offset) {
			want = min_t(size_t, len - done, hdr->id_offset - off);
			got = statsfd_copy_block(buf + done, hdr, off, want);
		} else if (off < hdr->data_offset) {
			want = min_t(size_t, len - done, hdr->data_offset - off);
			got = statsfd_copy_block(buf + done, src->id,
						 off - hdr->id_offset, want);
		} else if (off < stats_end) {
			want = min_t(size_t, len - done, stats_end - off);
			got = statsfd_copy_values(buf + done, src->stats,
						  off - hdr->data_offset, want);
		} else if (off < hdr->desc_offset) {
			want = min_t(size_t, len - done, hdr->desc_offset - off);
			got = statsfd_copy_aggs(buf + done, src, off - stats_end,
						want);
		} else {
			want = len - done;
			got = statsfd_copy_block(buf + done, schema->desc_block,
						 off - hdr->desc_offset, want);
		}
		done += got;
		if (got < want)
			break;
	}

	/* The one exit for a read that got this far: never lose bytes read. */
	if (!done)
		return -EFAULT;
	*ppos = pos + done;
	return done;
}
