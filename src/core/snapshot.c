// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd snapshots: the values area of a source with update windows, the
 * reader side of the window protocol, and the read-only mapping of the
 * area.
 *
 * A writer opens a window by making the area's sequence count odd and
 * closes it by making it even again (statsfd_update_begin() and
 * statsfd_update_end(), inline in <linux/statsfd.h>).  A reader copies the
 * values between two loads of the count and keeps the copy if the count
 * was even and did not change: the values were then all current at any
 * moment between the loads.  That is the seqcount protocol, kept by hand
 * because the count must sit at a fixed place in a page user space maps.
 *
 * A writer never waits for a reader.  A reader of a source whose windows
 * follow each other so closely that no copy gets through (a vCPU that
 * does nothing but exit) asks the writer instead: it leaves a request in
 * the source, and one of the writer's next STATSFD_SERVE_WINDOWS
 * statsfd_update_end() calls copies the values into the reader's buffer,
 * between two windows, and marks the request done.  Checking for a
 * request costs the writer a test of the count it just stored, and one
 * load every STATSFD_SERVE_WINDOWS windows; serving one costs a copy of
 * the values, once per such read.
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/gfp.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/timekeeping.h>

#include "internal.h"

/*
 * How long the window count may stand still, even, while a request is
 * pending, before the reader takes the request back and copies the values
 * itself: a writer that has stopped writing will not serve it.
 */
#define STATSFD_SNAPSHOT_IDLE_NS	(20 * NSEC_PER_USEC)
/*
 * A reader that itself did not run for this long (its CPU, or the whole
 * machine, stood still) does not count that time against the writer.
 */
#define STATSFD_SNAPSHOT_STALL_NS	(10 * NSEC_PER_MSEC)

/**
 * statsfd_area_alloc() - allocate the values area of a snapshot source
 * @src: a source whose schema has STATSFD_SCHEMA_SNAPSHOT; @src->schema set
 *
 * The area is the struct statsfd_mmap_header followed by the values, zero.
 * With STATSFD_SCHEMA_MMAP it is whole pages, each with its own reference
 * count, so that a mapping can take references on them (vm_insert_page()
 * refuses slab memory).  Charged to the memory cgroup of the task that
 * creates the source, like the object the source describes.
 *
 * Context: process context; may sleep.
 * Return: 0 (also for a schema without an area) or -ENOMEM.
 */
int statsfd_area_alloc(struct statsfd_source *src)
{
	const struct statsfd_schema *schema = src->schema;
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
	src->area = area;
	src->stats = (void *)area + area->data_offset;
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
	const struct statsfd_schema *schema = src->schema;

	if (!src->area)
		return;
	if (schema->def->flags & STATSFD_SCHEMA_MMAP)
		free_pages_exact(src->area, schema->area_size);
	else
		kfree(src->area);
	src->area = NULL;
	src->stats = NULL;
}

/*
 * One optimistic copy of the values in @ranges of @src into the same
 * places of @dst.  Each value is loaded with READ_ONCE(): the writer may
 * be storing it right now, and the check below only tells afterwards
 * whether it did.
 */
static bool statsfd_snapshot_try(const struct statsfd_source *src, u64 *dst,
				 const struct statsfd_range *ranges, u32 nr,
				 struct statsfd_snap_meta *meta)
{
	const struct statsfd_mmap_header *area = src->area;
	const u64 *vals = src->stats;
	u64 seq, ns = 0;
	u32 r, i;

	seq = READ_ONCE(area->seq);
	if (seq & 1)
		return false;
	/* The count before the values; pairs with update_begin's smp_wmb(). */
	smp_rmb();
	for (r = 0; r < nr; r++)
		for (i = ranges[r].first; i < ranges[r].first + ranges[r].nr; i++)
			dst[i] = READ_ONCE(vals[i]);
	/* Between the two loads of the count: the values were current then. */
	if (meta)
		ns = ktime_get_boottime_ns();
	/* The values before the count again; pairs with update_end's smp_wmb(). */
	smp_rmb();
	if (READ_ONCE(area->seq) != seq)
		return false;
	if (meta) {
		meta->sample_ns = ns;
		meta->generation = seq >> 1;
	}
	return true;
}

/*
 * Take a request back from the writer.  True if it had not taken it yet;
 * false if it has served it, waiting for that if it is serving it now (a
 * copy of the values: the writer does not sleep doing it).
 */
static bool statsfd_snapshot_cancel(struct statsfd_source *src,
				    struct statsfd_snap_req *req)
{
	if (cmpxchg(&src->snap_req, req, NULL) == req)
		return true;
	/* Pairs with the release in statsfd_update_serve(): the copy is there. */
	while (!smp_load_acquire(&req->done))
		cond_resched();
	return false;
}

/*
 * The slow path of statsfd_snapshot_copy(): ask the writer for a copy and
 * wait for it, taking the request back and copying directly whenever the
 * writer stops writing.  One request at a time per source (@snap_lock).
 */
static int statsfd_snapshot_slow(struct statsfd_source *src, u64 *dst,
				 const struct statsfd_range *ranges, u32 nr,
				 struct statsfd_snap_meta *meta)
{
	struct statsfd_snap_req req = { .dst = dst };
	u64 now, prev, changed, seq, last;
	int ret;

	if (mutex_lock_killable(&src->snap_lock))
		return -EINTR;

	changed = ktime_get_ns();
	prev = changed;
	last = READ_ONCE(src->area->seq);
	/* Publishes req.dst; the writer takes it with xchg(). */
	smp_store_release(&src->snap_req, &req);
	for (;;) {
		/* Pairs with the release in statsfd_update_serve(). */
		if (smp_load_acquire(&req.done))
			goto served;

		now = ktime_get_ns();
		seq = READ_ONCE(src->area->seq);
		/*
		 * A gap in this loop is time the reader did not watch: the
		 * whole machine (a guest's vCPU, say) may have stood still,
		 * writer included.  It is not the writer's to account for.
		 */
		if (now - prev > STATSFD_SNAPSHOT_STALL_NS)
			changed = now;
		prev = now;
		if (seq != last) {
			last = seq;
			changed = now;
		} else if (!(seq & 1) &&
			   now - changed > STATSFD_SNAPSHOT_IDLE_NS) {
			/* The writer went quiet: copy without its help. */
			if (!statsfd_snapshot_cancel(src, &req))
				goto served;
			if (statsfd_snapshot_try(src, dst, ranges, nr, meta)) {
				ret = 0;
				goto out;
			}
			changed = now;
			/* Ask again; publishes req.dst as the first time. */
			smp_store_release(&src->snap_req, &req);
			continue;
		}

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		/*
		 * A writer that keeps closing windows serves the request
		 * within STATSFD_SERVE_WINDOWS of them, however long they
		 * are: give up only on one that stopped inside a window.
		 */
		if (now - changed > STATSFD_SNAPSHOT_WAIT_NS) {
			ret = -EAGAIN;
			break;
		}
		cond_resched();
		cpu_relax();
	}
	/* Giving up, unless the writer served the request meanwhile. */
	if (statsfd_snapshot_cancel(src, &req))
		goto out;
served:
	if (meta) {
		meta->sample_ns = req.sample_ns;
		meta->generation = req.generation;
	}
	ret = 0;
out:
	mutex_unlock(&src->snap_lock);
	return ret;
}

/*
 * A computed source: every value computed by its owner now.  A positive
 * return is a provider bug; the read fails rather than return garbage.
 */
static int statsfd_snapshot_fill(struct statsfd_source *src, u64 *dst,
				 struct statsfd_snap_meta *meta)
{
	int ret = src->ops->fill(src, dst);
	u64 generation;

	if (ret)
		return ret < 0 ? ret : -EIO;
	/* Counts the computations that succeeded, whoever asked for them. */
	generation = atomic64_inc_return(&src->fills);
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
 * For a source with update windows the values copied were all current at
 * one moment, @meta->sample_ns, after @meta->generation windows.  A few
 * optimistic copies come first; if the writer keeps opening windows, it is
 * asked to make the copy at the end of one of its next windows.  The
 * writer never waits.  A source without windows is copied value by value,
 * each u64 untorn (@meta is then left alone).  A computed source's values
 * are computed into @dst, all of them, by one call of its fill callback:
 * @meta then gets the time that call returned and how many computations
 * of the source succeeded so far (this one included).
 *
 * Context: process context; may sleep (only on the slow path).
 * Return: 0; -EINTR if a fatal signal ended the wait; -EAGAIN if the
 * writer kept one window open for STATSFD_SNAPSHOT_WAIT_NS (it stopped
 * inside it: a writer that keeps closing windows serves the reader); or
 * the error of a computed source's fill callback.
 */
int statsfd_snapshot_copy_ranges(struct statsfd_source *src, u64 *dst,
				 const struct statsfd_range *ranges, u32 nr,
				 struct statsfd_snap_meta *meta)
{
	const u64 *vals = src->stats;
	u32 r, i;

	if (src->ops->fill)
		return statsfd_snapshot_fill(src, dst, meta);
	if (!src->area) {
		for (r = 0; r < nr; r++)
			for (i = ranges[r].first;
			     i < ranges[r].first + ranges[r].nr; i++)
				dst[i] = READ_ONCE(vals[i]);
		return 0;
	}
	for (i = 0; i < STATSFD_SNAPSHOT_TRIES; i++) {
		if (statsfd_snapshot_try(src, dst, ranges, nr, meta))
			return 0;
		cpu_relax();
	}
	return statsfd_snapshot_slow(src, dst, ranges, nr, meta);
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
 * Context: process context; may sleep (only on the slow path).
 * Return: as statsfd_snapshot_copy_ranges().
 */
int statsfd_snapshot_copy(struct statsfd_source *src, u64 *dst, u32 first,
			  u32 nr, struct statsfd_snap_meta *meta)
{
	struct statsfd_range range = { .first = first, .nr = nr };

	return statsfd_snapshot_copy_ranges(src, dst, &range, 1, meta);
}
EXPORT_SYMBOL_IF_KUNIT(statsfd_snapshot_copy);

/**
 * statsfd_update_serve() - hand a waiting reader a copy of the values
 * @src: a source with update windows, whose writer just closed a window
 *
 * Called by statsfd_update_end() when a reader left a request: copies
 * every value into the reader's buffer, with the generation and the time,
 * and marks the request done.  The caller is the source's writer, outside
 * any window, so the values cannot change under the copy.  Never sleeps.
 *
 * Context: any; the caller is the source's only writer.
 */
void statsfd_update_serve(struct statsfd_source *src)
{
	struct statsfd_snap_req *req = xchg(&src->snap_req, NULL);
	const u64 *vals = src->stats;
	u32 i, n = src->schema->def->stats_size / sizeof(u64);

	/* The reader took the request back first. */
	if (!req)
		return;
	for (i = 0; i < n; i++)
		req->dst[i] = vals[i];
	req->generation = src->area->seq >> 1;
	req->sample_ns = ktime_get_boottime_ns();
	/* The copy before done; pairs with the reader's smp_load_acquire(). */
	smp_store_release(&req->done, true);
}
EXPORT_SYMBOL_NS_GPL(statsfd_update_serve, STATSFD_NS);

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

	if (vmf->pgoff >= src->schema->area_size >> PAGE_SHIFT)
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
	const struct statsfd_schema *schema = src->schema;
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
