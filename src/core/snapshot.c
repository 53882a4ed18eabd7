// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd snapshots: the values area of a source with update windows, the
 * seqcount latch that publishes each window, and the read-only mapping of
 * the area.
 *
 * The writer updates its live values, which nobody else reads, and closes
 * each update window with statsfd_update_end(): it copies the live values
 * into the one of the area's two copies that readers are not using, then
 * advances the area's count, which selects the copy to read (seq & 1).
 * A reader loads the count, copies the selected copy and keeps the result
 * if the count has not moved: while the count stands at n, the writer
 * writes only copy (n + 1) & 1.  That is the kernel's seqcount latch
 * (raw_write_seqcount_latch(), as the timekeeping fast path and
 * sched_clock use it), with one copy per window rather than two: the copy
 * not selected is always rewritten whole before it is selected.  The count
 * is kept by hand, as a u64 at a fixed place of a page user space maps,
 * because seqcount_latch_t's count is 32 bits (it would wrap the
 * generation) and carries lockdep's map (kernel pointers, never to be
 * mapped to user space); the barriers are the latch's.
 *
 * What that buys: a reader never waits for the writer.  A writer
 * preempted or stopped (SIGSTOP, ptrace, SCHED_IDLE behind a CPU hog)
 * inside a window leaves the last published copy selected and untouched,
 * and a reader copies it at once.  A copy is retried only when the writer
 * published a window meanwhile, i.e. while it is running: a writer that
 * does real work between windows (a vCPU's stretch of exits) leaves a
 * reader ample time, one that does nothing but close windows back to back
 * can make it retry until it pauses (readers are lock-free, not
 * wait-free).  The price is a copy of the values per window and twice
 * their memory (the live values are the owner's stats struct, wherever
 * the owner keeps it).
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/gfp.h>
#include <linux/kcsan-checks.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/timekeeping.h>

#include "internal.h"

/* Copy @n of the area, for a source with update windows. */
static u64 *statsfd_area_copy(const struct statsfd_source *src, u64 n)
{
	const struct statsfd_mmap_header *area = src->area;

	return (void *)area + area->data_offset + (n & 1) * area->copy_stride;
}

/**
 * statsfd_area_alloc() - allocate the published values of a snapshot source
 * @src: a source whose schema has STATSFD_SCHEMA_SNAPSHOT; @src->schema set
 *
 * The area is the struct statsfd_mmap_header followed by the two published
 * copies of the values, all zero.  With STATSFD_SCHEMA_MMAP it is whole
 * pages, each with its own reference count, so that a mapping can take
 * references on them (vm_insert_page() refuses slab memory).  The live
 * values, which only the writer touches, are the owner's stats struct
 * (@src->stats), wherever the owner keeps it: never mapped, never
 * allocated here.  The area is charged to the memory cgroup of the task
 * that creates the source, like the object the source describes.
 *
 * Context: process context; may sleep.
 * Return: 0 (also for a schema without an area) or -ENOMEM.
 */
int statsfd_area_alloc(struct statsfd_source *src)
{
	const struct statsfd_schema *schema = src->priv->schema;
	struct statsfd_mmap_header *area;

	src->area = NULL;
	if (!schema->area_size)
		return 0;
	if (schema->def->flags & STATSFD_SCHEMA_MMAP)
		area = alloc_pages_exact(schema->area_size,
					 GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	else
		area = kzalloc(schema->area_size, GFP_KERNEL_ACCOUNT);
	if (!area)
		return -ENOMEM;

	area->version = STATSFD_MMAP_VERSION;
	area->header_size = sizeof(*area);
	area->data_offset = sizeof(*area);
	area->data_size = schema->def->stats_size;
	area->flags = STATSFD_MMAP_LATCH;
	area->copy_stride = statsfd_copy_stride(schema);
	src->area = area;
	return 0;
}

/**
 * statsfd_area_free() - free what statsfd_area_alloc() allocated
 * @src: the source; no stats file is open on it
 *
 * A mapping holds the stats file it was made from, and with it the
 * source, so no mapping can outlive the area.  The pages also carry the
 * mapping's own references, so even a bug there would not free them under
 * a user.
 */
void statsfd_area_free(struct statsfd_source *src)
{
	const struct statsfd_schema *schema = src->priv->schema;

	if (!src->area)
		return;
	if (schema->def->flags & STATSFD_SCHEMA_MMAP)
		free_pages_exact(src->area, schema->area_size);
	else
		kfree(src->area);
	src->area = NULL;
}

/**
 * statsfd_update_end() - close the update window opened on @src
 * @src: a source of a schema with STATSFD_SCHEMA_SNAPSHOT, whose writer
 *	the caller is
 *
 * Publishes the window's writes as one: copies the live values into the
 * copy readers are not using and then switches readers to it.  Costs a
 * copy of the values (stats_size bytes), two write barriers and a store of
 * the count; no lock, no atomic, no wait.  Readers that started on the
 * other copy before the switch find the count moved and copy again.
 * Everything it reads is reached from @src itself (the owner's live
 * values and the area) and is in the area's header beside the count (the size and places of the
 * copies): it follows no pointer to the schema or to the source's
 * private part.
 *
 * Context: any but NMI; the caller is the source's only writer.
 */
void statsfd_update_end(struct statsfd_source *src)
{
	struct statsfd_mmap_header *area = src->area;
	u32 i, n = area->data_size / sizeof(u64);
	const u64 *live = src->stats;
	u64 seq = area->seq;
	u64 *next = statsfd_area_copy(src, seq + 1);

	/* A second writer publishing at the same time is a provider bug. */
	ASSERT_EXCLUSIVE_WRITER(area->seq);
	/*
	 * The count a reader may have loaded before this copy's stores:
	 * raw_write_seqcount_latch()'s second barrier, for the previous
	 * window.
	 */
	smp_wmb();
	/*
	 * Readers may be copying this copy still; they will retry.  Four
	 * values a pass: the copy is the window's whole cost, and under
	 * emulation (TCG) the loop's own instructions cost as much as the
	 * moves.
	 */
	for (i = 0; i + 4 <= n; i += 4) {
		WRITE_ONCE(next[i], live[i]);
		WRITE_ONCE(next[i + 1], live[i + 1]);
		WRITE_ONCE(next[i + 2], live[i + 2]);
		WRITE_ONCE(next[i + 3], live[i + 3]);
	}
	for (; i < n; i++)
		WRITE_ONCE(next[i], live[i]);
	/* The copy before the count; pairs with the reader's smp_rmb(). */
	smp_wmb();
	WRITE_ONCE(area->seq, seq + 1);
}
EXPORT_SYMBOL_NS_GPL(statsfd_update_end, STATSFD_NS);

/*
 * One copy of the values in @ranges of @src into the same places of
 * @dst.  False when the writer published a window during the copy.
 */
static bool statsfd_snapshot_try(const struct statsfd_source *src, u64 *dst,
				 const struct statsfd_range *ranges, u32 nr,
				 struct statsfd_snap_meta *meta)
{
	const struct statsfd_mmap_header *area = src->area;
	const u64 *vals;
	u64 seq, ns = 0;
	u32 r, i;

	seq = READ_ONCE(area->seq);
	/* The count before the values; pairs with update_end's second smp_wmb(). */
	smp_rmb();
	vals = statsfd_area_copy(src, seq);
	for (r = 0; r < nr; r++)
		for (i = ranges[r].first; i < ranges[r].first + ranges[r].nr; i++)
			dst[i] = READ_ONCE(vals[i]);
	/* While the count stood still, these were the published values. */
	if (meta)
		ns = ktime_get_boottime_ns();
	/* The values before the count again; pairs with update_end's first smp_wmb(). */
	smp_rmb();
	if (READ_ONCE(area->seq) != seq)
		return false;
	if (meta) {
		meta->sample_ns = ns;
		meta->generation = seq;
	}
	return true;
}

/*
 * A computed source: every value computed by its owner now.  A positive
 * return is a provider bug; the read fails rather than return garbage.
 */
static int statsfd_snapshot_fill(struct statsfd_source *src, u64 *dst,
				 struct statsfd_snap_meta *meta)
{
	int ret = src->priv->ops->fill(src, dst);
	u64 generation;

	if (ret)
		return ret < 0 ? ret : -EIO;
	/* Counts the computations that succeeded, whoever asked for them. */
	generation = atomic64_inc_return(&src->priv->fills);
	if (meta) {
		meta->sample_ns = ktime_get_boottime_ns();
		meta->generation = generation;
	}
	return 0;
}

/**
 * statsfd_snapshot_copy_ranges() - copy values of @src of one window
 * @src: the source
 * @dst: the copy, indexed like @src's stats struct: value i goes to
 *	@dst[i]; schema stats_size bytes, all of which may be written
 * @ranges: the u64s wanted, as ranges of the stats struct
 * @nr: number of @ranges; 0 is valid (then only @meta is filled)
 * @meta: where to store when the copy was current, or NULL
 *
 * For a source with update windows the values copied are those the last
 * window published: all current at @meta->sample_ns, after
 * @meta->generation windows.  The copy never waits for the writer; it is
 * made again only if the writer published a window during it (so only
 * while the writer runs), rescheduling in between.  A source without
 * windows is copied value by value, each u64 untorn (@meta is then left
 * alone).  A computed source's values are computed into @dst, all of
 * them, by one call of its fill callback: @meta then gets the time that
 * call returned and how many computations of the source succeeded so far
 * (this one included).
 *
 * Context: process context; may sleep.
 * Return: 0; -EINTR if a fatal signal came while the copy was being made
 * again; or the error of a computed source's fill callback.
 */
int statsfd_snapshot_copy_ranges(struct statsfd_source *src, u64 *dst,
				 const struct statsfd_range *ranges, u32 nr,
				 struct statsfd_snap_meta *meta)
{
	const u64 *vals = src->stats;
	u32 r, i;

	if (src->priv->ops->fill)
		return statsfd_snapshot_fill(src, dst, meta);
	if (!src->area) {
		for (r = 0; r < nr; r++)
			for (i = ranges[r].first;
			     i < ranges[r].first + ranges[r].nr; i++)
				dst[i] = READ_ONCE(vals[i]);
		return 0;
	}
	/*
	 * Each failed try means a window was published during it: the
	 * writer is running.  Reschedule rather than spin, so a writer on
	 * this CPU gets on, and let a dying task go.
	 */
	while (!statsfd_snapshot_try(src, dst, ranges, nr, meta)) {
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/**
 * statsfd_snapshot_copy() - copy a range of values of @src of one window
 * @src: the source
 * @dst: as for statsfd_snapshot_copy_ranges()
 * @first: index of the first u64 wanted
 * @nr: number of u64s wanted; 0 is valid (then only @meta is filled)
 * @meta: where to store when the copy was current, or NULL
 *
 * statsfd_snapshot_copy_ranges() of one range.
 *
 * Context: process context; may sleep.
 * Return: as statsfd_snapshot_copy_ranges().
 */
int statsfd_snapshot_copy(struct statsfd_source *src, u64 *dst, u32 first,
			  u32 nr, struct statsfd_snap_meta *meta)
{
	struct statsfd_range range = { .first = first, .nr = nr };

	return statsfd_snapshot_copy_ranges(src, dst, &range, 1, meta);
}
EXPORT_SYMBOL_IF_KUNIT(statsfd_snapshot_copy);

/* Page @pgoff of @src's values area, as mmap() and faults insert it. */
static struct page *statsfd_area_page(const struct statsfd_source *src,
				      unsigned long pgoff)
{
	return virt_to_page((void *)src->area + (pgoff << PAGE_SHIFT));
}

/*
 * A page of the mapping that is not (or no longer: MADV_DONTNEED) in the
 * page tables is inserted again, with a reference of the mapping's own.
 * The mapping holds the stats file, so the area is there.
 */
static vm_fault_t statsfd_area_fault(struct vm_fault *vmf)
{
	struct statsfd_file *sf = vmf->vma->vm_file->private_data;
	struct statsfd_source *src = sf->src;
	int ret;

	if (vmf->pgoff >= src->priv->schema->area_size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	ret = vm_insert_page(vmf->vma, vmf->address,
			     statsfd_area_page(src, vmf->pgoff));
	if (ret == -ENOMEM)
		return VM_FAULT_OOM;
	/* -EBUSY: another fault mapped it first. */
	if (ret && ret != -EBUSY)
		return VM_FAULT_SIGBUS;
	return VM_FAULT_NOPAGE;
}

static const struct vm_operations_struct statsfd_area_vm_ops = {
	.fault = statsfd_area_fault,
};

/**
 * statsfd_area_mmap() - map the values area of @src read-only
 * @src: the source of the stats file being mapped
 * @vma: the new mapping
 *
 * The mapping covers pages [vm_pgoff, vm_pgoff + pages) of the area,
 * which must lie inside it.  It may never become writable or executable
 * (VM_MAYWRITE and VM_MAYEXEC are cleared, so mprotect() fails with
 * EACCES) nor grow (VM_DONTEXPAND, so mremap() to a larger size fails
 * with EFAULT).  Each page is inserted now, with a reference of the
 * mapping's own, and again on a fault if it was zapped (MADV_DONTNEED);
 * the mapping also holds the stats file and with it the source, so the
 * values stay live until it is unmapped, after every fd on the source is
 * closed.
 *
 * Context: process context, mmap lock held for writing.
 * Return: 0; -ENODEV if the schema is not mappable; -EACCES for a
 * writable or executable mapping; -EINVAL for a range outside the area;
 * the error of vm_insert_page().
 */
int statsfd_area_mmap(struct statsfd_source *src, struct vm_area_struct *vma)
{
	const struct statsfd_schema *schema = src->priv->schema;
	unsigned long pages, addr, pgoff;
	int ret;

	if (!(schema->def->flags & STATSFD_SCHEMA_MMAP))
		return -ENODEV;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EACCES;
	pages = schema->area_size >> PAGE_SHIFT;
	if (vma->vm_pgoff >= pages || vma_pages(vma) > pages - vma->vm_pgoff)
		return -EINVAL;

	/* VM_MIXEDMAP now: the fault handler must not have to set it. */
	statsfd_compat_vm_flags_mod(vma,
				    VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP,
				    VM_MAYWRITE | VM_MAYEXEC);
	vma->vm_ops = &statsfd_area_vm_ops;
	pgoff = vma->vm_pgoff;
	for (addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
		ret = vm_insert_page(vma, addr, statsfd_area_page(src, pgoff++));
		if (ret)
			return ret;
	}
	return 0;
}
