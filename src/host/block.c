// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_host: a disk's /proc/diskstats line as a stats fd
 * (Documentation/statsfd-host-api.rst, 3.4).
 *
 * Each stats fd gets its own computed source, whose fill callback sums the
 * disk's per-CPU struct disk_stats as diskstats_show() in block/genhd.c
 * does, keeping nanoseconds where the text prints milliseconds.
 *
 * Finding the disk, without opening it.  The number is looked up in the
 * block device inode cache (ilookup() on blockdev_superblock, both
 * exported on 6.1 and 6.12): that finds only devices that exist, never
 * loads a module or makes a RAM disk for an unknown number
 * (CONFIG_BLOCK_LEGACY_AUTOLOAD), and the inode it returns is referenced.
 * The disk is never opened: no driver ->open or ->release, no device
 * cgroup check, no partition rescan, no writeback or page cache drop at a
 * last close, no module reference.  Who may read the numbers is who may
 * read /proc/diskstats: everyone (Documentation/statsfd-host-api.rst, 3.4).
 *
 * Lifetimes.  The source holds, until it sees the disk gone or its last
 * fd is closed, only that inode reference: the whole disk's bdev inode,
 * which embeds its struct block_device (part0).  The block layer frees
 * part0's per-CPU bd_stats, and the struct gendisk itself, only when that
 * inode is freed (bdev_free_inode(), 6.1 and 6.12 alike), so both stay
 * readable while we hold it.  It holds neither the gendisk's struct
 * device nor the driver's module: disk_release(), which calls the
 * driver's ->free_disk(), runs when the driver drops its last reference,
 * in the driver's own removal path, and ends with an iput() of part0 that
 * is then simply not the last.  Our iput() evicts and frees an inode of
 * blockdev_superblock (bdev_evict_inode(), bdev_free_inode(): the page
 * cache of the inode, the bdi's reference, the gendisk's memory) and never
 * calls into the driver, so the driver's module can be unloaded while a
 * stats fd holds one of its disks.  We read only part0's counters, its
 * bd_stamp, and the gendisk's name and part0 pointer; never disk->fops,
 * the queue or anything else the driver owns.
 *
 * Removal.  del_gendisk() unhashes the inode (disk_live() is false from
 * then on) and zeroes the disk's counters (part_stat_set_all()), maybe
 * before, maybe while a read sums them, so the counts a removed disk ends
 * with are lost to everyone.  The source therefore keeps the values of its
 * last read while the disk was live.  The block layer tells no one about a
 * removed disk, so two things look: every read, and a delayed work that
 * runs once a second while any source holds a disk (statsfd_host_block_watch()).
 * Whichever finds the disk gone first stores, per counter, the larger of
 * the last values and what the counters hold now (each a value the
 * counter really had, and counters only grow), with in_flight 0, drops the
 * inode and hangs the source up; later reads return the stored values.
 *
 * Locking: each source's @lock protects its @inode, @disk and @last.
 * statsfd_host_block_lock protects statsfd_host_block_live and the 1 -> 0 transition of every
 * source's count (kref_put_mutex(), as in net.c): the watcher takes a
 * reference on a listed source under statsfd_host_block_lock.  Order: a source's @lock,
 * then statsfd_host_block_lock.
 */
#include <linux/blkdev.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kdev_t.h>
#include <linux/kref.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/part_stat.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/workqueue.h>

#include "internal.h"

/* The stats of Documentation/statsfd-host-api.rst, 3.4, in its order. */
struct statsfd_host_block_stats {
	u64 read_ios;
	u64 read_merges;
	u64 read_sectors;
	u64 read_time;
	u64 write_ios;
	u64 write_merges;
	u64 write_sectors;
	u64 write_time;
	u64 in_flight;
	u64 io_time;
	u64 time_in_queue;
	u64 discard_ios;
	u64 discard_merges;
	u64 discard_sectors;
	u64 discard_time;
	u64 flush_ios;
	u64 flush_time;
};

#define STATSFD_STATS_TYPE struct statsfd_host_block_stats
static const struct statsfd_desc_def statsfd_host_block_descs[] = {
	STATSFD_COUNTER(read_ios),
	STATSFD_COUNTER(read_merges),
	STATSFD_COUNTER(read_sectors),
	STATSFD_TIME_NSEC(read_time),
	STATSFD_COUNTER(write_ios),
	STATSFD_COUNTER(write_merges),
	STATSFD_COUNTER(write_sectors),
	STATSFD_TIME_NSEC(write_time),
	STATSFD_ICOUNTER(in_flight),
	STATSFD_TIME_NSEC(io_time),
	STATSFD_TIME_NSEC(time_in_queue),
	STATSFD_COUNTER(discard_ios),
	STATSFD_COUNTER(discard_merges),
	STATSFD_COUNTER(discard_sectors),
	STATSFD_TIME_NSEC(discard_time),
	STATSFD_COUNTER(flush_ios),
	STATSFD_TIME_NSEC(flush_time),
};

#undef STATSFD_STATS_TYPE

static const struct statsfd_schema_def statsfd_host_block_def =
	STATSFD_HOST_SCHEMA("statsfd_host.block", statsfd_host_block,
			    struct statsfd_host_block_stats);

static struct statsfd_schema statsfd_host_block_schema;

/**
 * struct statsfd_host_block - the source of one stats fd on a disk
 * @src: the computed source
 * @ref: one per stats fd, plus the creator's while it makes the fd, plus
 *	the watcher's while it looks at the source; reaches 0 only under
 *	statsfd_host_block_lock
 * @node: entry in statsfd_host_block_live while @inode is held (statsfd_host_block_lock)
 * @watch: entry in the watcher's private list of sources to look at
 * @lock: protects @inode, @disk and @last
 * @inode: the whole disk's block device inode, referenced, or NULL once
 *	the disk was seen removed
 * @disk: the disk, readable while @inode is held
 * @last: the values of the last read while @disk was live; once it was
 *	seen removed, the values every read returns
 */
struct statsfd_host_block {
	struct statsfd_source src;
	struct kref ref;
	struct list_head node;
	struct list_head watch;
	struct mutex lock;	/* inode, disk, last */
	struct inode *inode;
	struct gendisk *disk;
	struct statsfd_host_block_stats last;
};

/* How often the watcher looks for removed disks. */
#define BLOCK_WATCH_PERIOD	HZ

static DEFINE_MUTEX(statsfd_host_block_lock);
static LIST_HEAD(statsfd_host_block_live); /* statsfd_host_block_lock */
static void statsfd_host_block_watch(struct work_struct *work);
static DECLARE_DELAYED_WORK(statsfd_host_block_watch_work,
			    statsfd_host_block_watch);

static struct statsfd_host_block *
statsfd_host_to_block(struct statsfd_source *src)
{
	return container_of(src, struct statsfd_host_block, src);
}

/*
 * diskstats_show() of the disk's line, in nanoseconds: part_stat_read_all()
 * and part_in_flight() in one pass over the CPUs.  Bio-based drivers count
 * in flight I/O in the per-CPU in_flight counters, and so does blk-mq
 * since "block: support to account io_ticks precisely" (6.12, backported
 * by some distributions: Debian's 6.1.0-57 has it); without it blk-mq does
 * not, and /proc/diskstats counts its requests in the tag set instead
 * (blk_mq_in_flight(), not exported): there in_flight reads 0 for a blk-mq
 * disk.  Either way an I/O is accounted a moment after its waiter woke.
 */
static void statsfd_host_block_read(struct block_device *part,
				    struct statsfd_host_block_stats *s)
{
	u64 nsecs[NR_STAT_GROUPS] = {};
	unsigned long sectors[NR_STAT_GROUPS] = {};
	unsigned long ios[NR_STAT_GROUPS] = {};
	unsigned long merges[NR_STAT_GROUPS] = {};
	unsigned long ticks = 0, stamp, now;
	unsigned int inflight = 0;
	int cpu, g;

	for_each_possible_cpu(cpu) {
		struct disk_stats *ds = per_cpu_ptr(part->bd_stats, cpu);

		for (g = 0; g < NR_STAT_GROUPS; g++) {
			nsecs[g] += READ_ONCE(ds->nsecs[g]);
			sectors[g] += READ_ONCE(ds->sectors[g]);
			ios[g] += READ_ONCE(ds->ios[g]);
			merges[g] += READ_ONCE(ds->merges[g]);
		}
		ticks += READ_ONCE(ds->io_ticks);
		inflight += local_read(&ds->in_flight[0]) +
			    local_read(&ds->in_flight[1]);
	}
	if ((int)inflight < 0)
		inflight = 0;
	/*
	 * With I/O in flight diskstats_show() first adds the time since the
	 * last update (update_io_ticks(), not exported): add it here without
	 * storing it, which shows the same total.
	 */
	if (inflight) {
		stamp = READ_ONCE(part->bd_stamp);
		now = jiffies;
		if (time_after(now, stamp))
			ticks += now - stamp;
	}

	s->read_ios = ios[STAT_READ];
	s->read_merges = merges[STAT_READ];
	s->read_sectors = sectors[STAT_READ];
	s->read_time = nsecs[STAT_READ];
	s->write_ios = ios[STAT_WRITE];
	s->write_merges = merges[STAT_WRITE];
	s->write_sectors = sectors[STAT_WRITE];
	s->write_time = nsecs[STAT_WRITE];
	s->in_flight = inflight;
	s->io_time = jiffies64_to_nsecs(ticks);
	s->time_in_queue = nsecs[STAT_READ] + nsecs[STAT_WRITE] +
			   nsecs[STAT_DISCARD] + nsecs[STAT_FLUSH];
	s->discard_ios = ios[STAT_DISCARD];
	s->discard_merges = merges[STAT_DISCARD];
	s->discard_sectors = sectors[STAT_DISCARD];
	s->discard_time = nsecs[STAT_DISCARD];
	s->flush_ios = ios[STAT_FLUSH];
	s->flush_time = nsecs[STAT_FLUSH];
}

/*
 * The count reached 0 with statsfd_host_block_lock held (kref_put_mutex()): unlist the
 * source before the watcher can find it, then free it.  The last iput()
 * of a removed disk frees its gendisk and counters: block-layer code only.
 */
static void statsfd_host_block_release(struct kref *ref)
{
	struct statsfd_host_block *b =
		container_of(ref, struct statsfd_host_block, ref);

	lockdep_assert_held(&statsfd_host_block_lock);
	list_del_init(&b->node);
	mutex_unlock(&statsfd_host_block_lock);
	if (b->inode)
		iput(b->inode);
	statsfd_source_destroy(&b->src);
	mutex_destroy(&b->lock);
	kfree(b);
}

static void statsfd_host_block_ref_put(struct statsfd_host_block *b)
{
	kref_put_mutex(&b->ref, statsfd_host_block_release,
		       &statsfd_host_block_lock);
}

static void statsfd_host_block_get(struct statsfd_source *src)
{
	kref_get(&statsfd_host_to_block(src)->ref);
}

static void statsfd_host_block_put(struct statsfd_source *src)
{
	statsfd_host_block_ref_put(statsfd_host_to_block(src));
}

/*
 * The final values of a removed disk: see the top of this file.  Every
 * field but in_flight is a counter.
 */
static void statsfd_host_block_final(struct statsfd_host_block *b,
				     struct statsfd_host_block_stats *now)
{
	u64 *last = (u64 *)&b->last, *cur = (u64 *)now;
	unsigned int i;

	for (i = 0; i < sizeof(*now) / sizeof(u64); i++)
		last[i] = max(last[i], cur[i]);
	b->last.in_flight = 0;
}

/*
 * Reads the disk into @s (b->lock held, b->inode set) and says whether it
 * is still live.  If not, the final values are stored, the source leaves
 * statsfd_host_block_live and drops the inode: the caller hangs it up.
 */
static bool statsfd_host_block_sample(struct statsfd_host_block *b,
				      struct statsfd_host_block_stats *s)
{
	lockdep_assert_held(&b->lock);
	statsfd_host_block_read(I_BDEV(b->inode), s);
	if (disk_live(b->disk)) {
		memcpy(&b->last, s, sizeof(b->last));
		return true;
	}
	statsfd_host_block_final(b, s);
	mutex_lock(&statsfd_host_block_lock);
	list_del_init(&b->node);
	mutex_unlock(&statsfd_host_block_lock);
	iput(b->inode);
	b->inode = NULL;
	b->disk = NULL;
	return false;
}

static int statsfd_host_block_fill(struct statsfd_source *src, void *stats)
{
	struct statsfd_host_block *b = statsfd_host_to_block(src);
	bool gone = false;

	mutex_lock(&b->lock);
	if (b->inode)
		gone = !statsfd_host_block_sample(b, stats);
	if (!b->inode)
		memcpy(stats, &b->last, sizeof(b->last));
	mutex_unlock(&b->lock);
	if (gone)
		statsfd_source_hangup(src);
	return 0;
}

/*
 * Once a second while any source holds a disk: hang up the sources of
 * removed disks, so that their fds poll EPOLLHUP without a read and the
 * inodes (and the gendisks in them) go.  A listed source holds its inode,
 * so disk_live() can be asked under statsfd_host_block_lock; a listed source's count
 * is above 0, so a reference can be taken.
 */
static void statsfd_host_block_watch(struct work_struct *work)
{
	struct statsfd_host_block_stats now;
	struct statsfd_host_block *b, *t;
	LIST_HEAD(gone);
	bool more;

	mutex_lock(&statsfd_host_block_lock);
	list_for_each_entry(b, &statsfd_host_block_live, node) {
		if (disk_live(b->disk))
			continue;
		kref_get(&b->ref);
		list_add(&b->watch, &gone);
	}
	mutex_unlock(&statsfd_host_block_lock);

	list_for_each_entry_safe(b, t, &gone, watch) {
		bool hangup = false;

		list_del(&b->watch);
		/* A read may have found it gone meanwhile, and hung it up. */
		mutex_lock(&b->lock);
		if (b->inode)
			hangup = !statsfd_host_block_sample(b, &now);
		mutex_unlock(&b->lock);
		if (hangup)
			statsfd_source_hangup(&b->src);
		statsfd_host_block_ref_put(b);
	}

	mutex_lock(&statsfd_host_block_lock);
	more = !list_empty(&statsfd_host_block_live);
	mutex_unlock(&statsfd_host_block_lock);
	if (more)
		schedule_delayed_work(&statsfd_host_block_watch_work,
				      BLOCK_WATCH_PERIOD);
}

static const struct statsfd_source_ops statsfd_host_block_ops = {
	.owner = THIS_MODULE,
	.get = statsfd_host_block_get,
	.put = statsfd_host_block_put,
	.fill = statsfd_host_block_fill,
};

/**
 * statsfd_host_block_file() - a new stats file on a whole disk
 * @major: the disk's major number
 * @minor: the disk's minor number
 *
 * Makes a source for the disk, which reads its /proc/diskstats values
 * until the disk is removed (then the source keeps its last values and
 * hangs up), and a stats file on it.  The id is "host-block-<disk name>".
 * The disk is found in the block device inode cache and never opened.
 *
 * Context: process context.
 * Return: the file, or ERR_PTR(-ENODEV) when no block device has that
 * number (or its disk is being removed), ERR_PTR(-EINVAL) when it is a
 * partition, ERR_PTR(-ENOMEM).
 */
struct file *statsfd_host_block_file(u32 major, u32 minor)
{
	struct statsfd_host_block *b;
	struct inode *inode;
	struct file *file;
	bool first;
	dev_t dev;
	int ret;

	dev = MKDEV(major, minor);
	/* A number too large for a dev_t names no device. */
	if (!dev || MAJOR(dev) != major || MINOR(dev) != minor)
		return ERR_PTR(-ENODEV);
	/* Referenced, if it exists: never loads a module nor makes a device. */
	inode = ilookup(blockdev_superblock, dev);
	if (!inode)
		return ERR_PTR(-ENODEV);
	if (bdev_is_partition(I_BDEV(inode))) {
		ret = -EINVAL;
		goto err_iput;
	}
	/* Unhashed since the lookup: del_gendisk() has begun. */
	if (!disk_live(I_BDEV(inode)->bd_disk)) {
		ret = -ENODEV;
		goto err_iput;
	}

	/* Any user can make many: charged to the caller's memory cgroup. */
	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b) {
		ret = -ENOMEM;
		goto err_iput;
	}
	kref_init(&b->ref);
	mutex_init(&b->lock);
	INIT_LIST_HEAD(&b->node);
	INIT_LIST_HEAD(&b->watch);
	b->inode = inode;
	b->disk = I_BDEV(inode)->bd_disk;
	ret = statsfd_source_init_computed(&b->src, &statsfd_host_block_schema,
					   &statsfd_host_block_ops,
					   "host-block-%s", b->disk->disk_name);
	if (ret) {
		mutex_destroy(&b->lock);
		kfree(b);
		goto err_iput;
	}
	mutex_lock(&statsfd_host_block_lock);
	first = list_empty(&statsfd_host_block_live);
	list_add(&b->node, &statsfd_host_block_live);
	mutex_unlock(&statsfd_host_block_lock);
	if (first)
		schedule_delayed_work(&statsfd_host_block_watch_work,
				      BLOCK_WATCH_PERIOD);

	/*
	 * The file takes its own reference; ours goes either way, and if it
	 * was the last (no file), the release unlists the source under
	 * statsfd_host_block_lock, so the watcher never sees it with a count of 0.
	 */
	file = statsfd_source_getfile(&b->src);
	statsfd_host_block_ref_put(b);
	return file;

err_iput:
	iput(inode);
	return ERR_PTR(ret);
}

/**
 * statsfd_host_block_init() - set up the disk sources
 *
 * Return: 0, or a negative errno from the schema.
 */
int statsfd_host_block_init(void)
{
	return statsfd_schema_init(&statsfd_host_block_schema,
				   &statsfd_host_block_def);
}

/**
 * statsfd_host_block_exit() - tear down what statsfd_host_block_init() set up
 *
 * Every stats fd pins the module, so no source is left by now; the
 * watcher may still be queued, to find the list empty.
 */
void statsfd_host_block_exit(void)
{
	cancel_delayed_work_sync(&statsfd_host_block_watch_work);
	WARN_ON(!list_empty(&statsfd_host_block_live));
	statsfd_schema_destroy(&statsfd_host_block_schema);
}
