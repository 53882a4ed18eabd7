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
 *	|             |  then aggregates computed at read time, then
 *	|             |  sample_ns and generation (update windows only)
 *	+-------------+  header.desc_offset = data_offset + data_size
 *	| descriptors |  num_desc * (16 + name_size), shared by the schema
 *	+-------------+  file_size
 *
 * or, for a schema with STATSFD_SCHEMA_DESC_FIRST, with the descriptors
 * before the data as KVM lays its files out.  Every block is 8-byte
 * aligned and the blocks are adjacent, so the file has no holes and every
 * byte comes from exactly one block: a read finds it by offset, in
 * whichever order the header puts them.
 */
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/fault-inject-usercopy.h>
#include <linux/instrumented.h>
#include <linux/minmax.h>
#include <linux/math.h>
#include <linux/mutex.h>
#include <linux/statsfd.h>
#include <linux/uaccess.h>

#include "internal.h"

/* Copy from an immutable or private kernel block; bytes copied. */
static size_t statsfd_copy_block(char __user *dst, const void *block,
				 size_t off, size_t len)
{
	return len - copy_to_user(dst, block + off, len);
}

/*
 * Copy bytes [@off, @off + @len) of the u64 array @vals, the file's own
 * buffer, to @dst: the u64s with one eight-byte store each, a head or
 * tail that covers part of a u64 (and, after a fault, the rest up to the
 * faulting byte) with raw_copy_to_user().  The data block is what readers
 * re-read all the time, and a string copy ("rep movsb") costs more than
 * eight-byte stores on some CPUs and much more under emulation: this is
 * what keeps a read of the values as cheap as KVM's.  The checks
 * copy_to_user() makes are made once, first: KASAN's and KCSAN's view of
 * the kernel side, the usercopy fault injection site (one per copy, as
 * for the copy_to_user() of every other block) and the range.
 *
 * Return: bytes copied, less than @len only if @dst faulted (at the
 * faulting byte, as copy_to_user()).
 */
static size_t statsfd_copy_words(char __user *dst, const u64 *vals,
				 size_t off, size_t len)
{
	const char *from = (const char *)vals + off;
	size_t head = min(len, -off % sizeof(u64));
	const u64 *word;
	size_t done;

	instrument_copy_to_user(dst, from, len);
	if (should_fail_usercopy() || !access_ok(dst, len))
		return 0;
	done = head - raw_copy_to_user(dst, from, head);
	if (done == head && len - done >= sizeof(u64) &&
	    user_write_access_begin(dst + done, len - done)) {
		word = (const u64 *)(from + done);
		while (len - done >= sizeof(u64)) {
			unsafe_put_user(*word, (u64 __user *)(dst + done),
					fault);
			word++;
			done += sizeof(u64);
		}
fault:
		user_write_access_end();
	}
	/* The tail, or what is left after a fault, up to the faulting byte. */
	if (done < len && done >= head)
		done += (len - done) -
			raw_copy_to_user(dst + done, from + done, len - done);
	return done;
}

/*
 * Assemble in @sf->buf the parts of the source's data block that a read
 * needs: @ranges of the plain values as one snapshot of the source (with
 * its time and generation if @meta), then, if @aggs, the aggregates,
 * computed over one snapshot of each child.
 *
 * Return: 0, or an error of a snapshot (-EINTR, a fill callback's).
 */
static int statsfd_fill(struct statsfd_file *sf,
			const struct statsfd_range *ranges, u32 nr_ranges,
			bool aggs, bool meta)
{
	struct statsfd_source *src = sf->src;
	const struct statsfd_schema *schema = src->priv->schema;
	struct statsfd_snap_meta snap;
	int ret;

	if (nr_ranges || meta) {
		ret = statsfd_snapshot_copy_ranges(src, sf->buf, ranges,
						   nr_ranges,
						   meta ? &snap : NULL);
		if (ret)
			return ret;
	}
	if (aggs) {
		if (mutex_lock_killable(&src->priv->children_lock))
			return -EINTR;
		ret = statsfd_agg_compute_locked(src, src->priv->agg_buf);
		if (!ret)
			memcpy(sf->buf + schema->def->stats_size / sizeof(u64),
			       src->priv->agg_buf, schema->agg_size);
		mutex_unlock(&src->priv->children_lock);
		if (ret)
			return ret;
	}
	if (meta) {
		sf->buf[schema->meta_offset / sizeof(u64)] = snap.sample_ns;
		sf->buf[schema->meta_offset / sizeof(u64) + 1] =
			snap.generation;
	}
	return 0;
}

/*
 * Bytes [@off, @off + @len) of the source's whole data block: the plain
 * values they cover, the aggregates if they reach them, the time and
 * generation if they reach those.  Only what the range covers is copied
 * or computed.
 */
static int statsfd_fill_data(struct statsfd_file *sf, u32 off, u32 len)
{
	const struct statsfd_schema *schema = sf->src->priv->schema;
	u32 stats_end = schema->def->stats_size;
	u32 aggs_end = stats_end + schema->agg_size;
	u32 end = off + len;
	struct statsfd_range range = { 0 };

	if (off < stats_end) {
		range.first = off / sizeof(u64);
		range.nr = DIV_ROUND_UP(min(end, stats_end), sizeof(u64)) -
			   range.first;
	}
	return statsfd_fill(sf, &range, range.nr ? 1 : 0,
			    schema->agg_size && off < aggs_end &&
			    end > stats_end,
			    schema->meta_offset && end > schema->meta_offset);
}

/*
 * A view's data block: one snapshot of the values it selects, gathered
 * from the source's data block layout in @sf->buf into its compact one.
 */
static int statsfd_fill_view(struct statsfd_file *sf)
{
	const struct statsfd_view *view = sf->view;
	u64 *out = sf->vbuf;
	u32 i;
	int ret;

	ret = statsfd_fill(sf, view->ranges, view->nr_ranges, view->need_aggs,
			   view->need_meta);
	if (ret)
		return ret;
	for (i = 0; i < view->nr; i++) {
		memcpy(out, sf->buf + view->sel[i].full_offset / sizeof(u64),
		       view->sel[i].size * sizeof(u64));
		out += view->sel[i].size;
	}
	return 0;
}

/*
 * Copy bytes [@off, @off + @len) of the data block to @dst: assembled in
 * the file's buffer under the file's own lock, then copied out with no
 * lock a writer, a child or another file could want.  A copy that faults
 * is simply short: nothing is retried, so a bad buffer cannot make a
 * read loop.
 *
 * Return: bytes copied, or a snapshot's error with nothing copied.
 */
static ssize_t statsfd_copy_data(char __user *dst, struct statsfd_file *sf,
				 u32 off, u32 len)
{
	ssize_t ret;

	if (mutex_lock_killable(&sf->lock))
		return -EINTR;
	if (sf->view) {
		ret = statsfd_fill_view(sf);
		if (!ret)
			ret = statsfd_copy_words(dst, sf->vbuf, off, len);
	} else {
		ret = statsfd_fill_data(sf, off, len);
		if (!ret)
			ret = statsfd_copy_words(dst, sf->buf, off, len);
	}
	mutex_unlock(&sf->lock);
	return ret;
}

/**
 * statsfd_read_file() - read part of the stats file of a stats fd
 * @sf: the stats file
 * @buf: user buffer
 * @len: bytes wanted; reads past the end of the file are short
 * @ppos: file position; advanced by the bytes returned
 *
 * The header, id and descriptors are copied from the blocks built once
 * for the schema (or the view) and the source.  The part of the data
 * block the read covers (for a view, all of its data block) is one
 * snapshot: the plain values of one update window (for a schema with
 * update windows; each u64 untorn otherwise), the aggregates over one
 * snapshot of each child, and the time and generation of the values.
 * Nothing here allocates memory or takes a lock the stats writers take.
 *
 * Context: process context; may sleep.
 * Return: bytes read (0 at or past the end of the file), and @ppos
 * advanced by them, including a short read that stopped at a fault;
 * -EINVAL for a negative position; -EFAULT if nothing could be copied to
 * @buf; -EINTR if a fatal signal came first; the error of a computed
 * source's fill callback.  A writer, running or stopped, never makes a
 * read wait or fail.
 */
ssize_t statsfd_read_file(struct statsfd_file *sf, char __user *buf,
			  size_t len, loff_t *ppos)
{
	struct statsfd_source *src = sf->src;
	const struct statsfd_schema *schema = src->priv->schema;
	const struct statsfd_header *hdr =
		sf->view ? &sf->view->header : &schema->header;
	const void *desc_block =
		sf->view ? sf->view->desc_block : schema->desc_block;
	u32 file_size = sf->view ? sf->view->file_size : schema->file_size;
	u32 data_end = hdr->data_offset +
		       (sf->view ? sf->view->data_size : schema->data_size);
	/* The descriptors end the file, or the data follow them. */
	u32 desc_end = hdr->desc_offset < hdr->data_offset ?
		       hdr->data_offset : file_size;
	/* Before the read: a change during it stays pending. */
	u64 gen = READ_ONCE(src->priv->children_gen);
	loff_t pos = *ppos;
	size_t done = 0;
	ssize_t err = 0;

	if (pos < 0)
		return -EINVAL;
	if (pos >= file_size || !len)
		return 0;
	len = min_t(u64, len, file_size - pos);

	while (done < len) {
		u32 off = pos + done;	/* below file_size, a u32 */
		size_t want, got;

		if (off < hdr->id_offset) {
			want = min_t(size_t, len - done, hdr->id_offset - off);
			got = statsfd_copy_block(buf + done, hdr, off, want);
		} else if (off < hdr->id_offset + hdr->name_size) {
			want = min_t(size_t, len - done,
				     hdr->id_offset + hdr->name_size - off);
			got = statsfd_copy_block(buf + done, src->priv->id,
						 off - hdr->id_offset, want);
		} else if (off >= hdr->data_offset && off < data_end) {
			want = min_t(size_t, len - done, data_end - off);
			err = statsfd_copy_data(buf + done, sf,
						off - hdr->data_offset, want);
			if (err < 0)
				break;
			got = err;
		} else {
			want = min_t(size_t, len - done, desc_end - off);
			got = statsfd_copy_block(buf + done, desc_block,
						 off - hdr->desc_offset, want);
		}
		done += got;
		if (got < want)
			break;
	}

	/* The one exit for a read that got this far: never lose bytes read. */
	if (!done)
		return err < 0 ? err : -EFAULT;
	/*
	 * Returning bytes of the header or of the data acknowledges the
	 * children's changes up to @gen; a failed read acknowledges nothing.
	 */
	if (pos < hdr->id_offset ||
	    (pos < data_end && pos + done > hdr->data_offset))
		WRITE_ONCE(sf->seen_gen, gen);
	*ppos = pos + done;
	return done;
}
