// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_host: a disk's /proc/diskstats line as a stats fd
 * (Documentation/statsfd-host-api.rst, 3.4).
 *
 * Each stats fd gets its own computed source, whose fill callback sums the
 * disk's per-CPU struct disk_stats as diskstats_show() in block/genhd.c
 * does, keeping nanoseconds where the text prints milliseconds.
 *
 * Finding the disk.  Modules may not walk block_class (not exported) nor
 * look a disk up by number without opening it (blkdev_get_no_open() is
 * not exported either).  So the number is first looked up in the block
 * device inode cache (ilookup() on blockdev_superblock, both exported):
 * that finds only devices that exist, without the open's fallback of
 * loading a module or making a RAM disk for an unknown number
 * (CONFIG_BLOCK_LEGACY_AUTOLOAD), which an unprivileged caller must not
 * trigger.  Then the device is opened read-only (and NDELAY, so a drive
 * without a medium opens too), only to take our references, and closed at
 * once.  The open is what any reader of the node does (blkid, say): it
 * checks the device cgroup, runs the driver's open and release, may scan
 * partitions a driver asked to rescan, and the last close writes back and
 * drops the device's page cache.  No data is read.
 *
 * Lifetimes.  The source holds, until it sees the disk gone or its last
 * fd is closed:
 *
 * - a reference on the disk's struct device (the whole disk's
 *   block_device): it keeps the gendisk, its part0 and part0's per-CPU
 *   disk_stats allocated (they are freed by disk_release() and the last
 *   iput() of part0), without keeping the device open;
 * - a reference on the module of the disk's driver (disk->fops->owner),
 *   taken while the open already pins it.  Without it the driver could be
 *   unloaded while we hold the gendisk, and our final put_device() would
 *   run disk_release(), which reads disk->fops and calls ->free_disk(), in
 *   freed module memory.  The price: a driver whose module exit removes
 *   its disks (brd) cannot be unloaded while a stats fd reads one of them
 *   and has not yet seen it removed, as it cannot while a file system is
 *   mounted on it.  Disks removed without a module unload (hot unplug,
 *   loop or nbd detach) are not held up at all.
 *
 * There is no notifier for a removed disk: fill checks disk_live() (false
 * once del_gendisk() started) at every read.  del_gendisk() also zeroes
 * the disk's counters (part_stat_set_all()), maybe before, maybe while
 * that read sums them, so the counts a removed disk ends with are lost to
 * everyone.  The source therefore keeps the values of its last read while
 * the disk was live: the first read that finds the disk gone stores, per
 * counter, the larger of that and what the counters hold now (each is a
 * value the counter really had, and counters only grow), with in_flight
 * 0, drops both references (the driver can then be unloaded) and hangs
 * the source up; later reads return the stored values.
 */
#include <linux/blkdev.h>
#include <linux/device.h>
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

#include "compat.h"
#include "internal.h"

/* The stats of Documentation/statsfd-host-api.rst, 3.4, in its order. */
struct host_block_stats {
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

#define STATSFD_STATS_TYPE struct host_block_stats
static const struct statsfd_desc_def block_descs[] = {
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

static const struct statsfd_schema_def block_def = {
	.name = "statsfd_host.block",
	.descs = block_descs,
	.num_descs = ARRAY_SIZE(block_descs),
	.stats_size = sizeof(struct host_block_stats),
};

static struct statsfd_schema block_schema;

/**
 * struct host_block - the source of one stats fd on a disk
 * @src: the computed source
 * @ref: one per stats fd, plus the creator's while it makes the fd
 * @lock: protects @disk, @owner and @last
 * @disk: the disk, referenced, or NULL once it was seen removed
 * @owner: the module of the disk's driver, referenced with @disk
 * @last: the values of the last read while @disk was live; once it was
 *	seen removed, the values every read returns
 */
struct host_block {
	struct statsfd_source src;
	struct kref ref;
	struct mutex lock;	/* disk, owner, last */
	struct gendisk *disk;
	struct module *owner;
	struct host_block_stats last;
};

static struct host_block *to_host_block(struct statsfd_source *src)
{
	return container_of(src, struct host_block, src);
}

/*
 * diskstats_show() of the disk's line, in nanoseconds: part_stat_read_all()
 * and part_in_flight() in one pass over the CPUs.  Bio-based drivers count
 * in flight I/O in the per-CPU in_flight counters, and so does blk-mq on
 * 6.12; on older kernels blk-mq does not, and /proc/diskstats counts its
 * requests in the tag set instead (blk_mq_in_flight(), not exported): there
 * in_flight reads 0 for a blk-mq disk.
 */
static void block_read(struct gendisk *disk, struct host_block_stats *s)
{
	struct block_device *part = disk->part0;
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

/* The gendisk before the driver's module: see "Lifetimes" above. */
static void block_drop(struct host_block *b)
{
	put_device(disk_to_dev(b->disk));
	module_put(b->owner);
	b->disk = NULL;
	b->owner = NULL;
}

static void block_release(struct kref *ref)
{
	struct host_block *b = container_of(ref, struct host_block, ref);

	if (b->disk)
		block_drop(b);
	statsfd_source_destroy(&b->src);
	mutex_destroy(&b->lock);
	kfree(b);
}

static void block_get(struct statsfd_source *src)
{
	kref_get(&to_host_block(src)->ref);
}

static void block_put(struct statsfd_source *src)
{
	kref_put(&to_host_block(src)->ref, block_release);
}

/*
 * The final values of a removed disk: see the top of this file.  Every
 * field but in_flight is a counter.
 */
static void block_final(struct host_block *b, struct host_block_stats *now)
{
	u64 *last = (u64 *)&b->last, *cur = (u64 *)now;
	unsigned int i;

	for (i = 0; i < sizeof(*now) / sizeof(u64); i++)
		last[i] = max(last[i], cur[i]);
	b->last.in_flight = 0;
}

static int block_fill(struct statsfd_source *src, void *stats)
{
	struct host_block *b = to_host_block(src);
	bool gone = false;

	mutex_lock(&b->lock);
	if (b->disk) {
		block_read(b->disk, stats);
		if (disk_live(b->disk)) {
			memcpy(&b->last, stats, sizeof(b->last));
		} else {
			block_final(b, stats);
			block_drop(b);
			gone = true;
		}
	}
	if (!b->disk)
		memcpy(stats, &b->last, sizeof(b->last));
	mutex_unlock(&b->lock);
	if (gone)
		statsfd_source_hangup(src);
	return 0;
}

static const struct statsfd_source_ops block_ops = {
	.owner = THIS_MODULE,
	.get = block_get,
	.put = block_put,
	.fill = block_fill,
};

/*
 * Whether @dev is a block device that exists right now, and if so whether
 * it is a partition: looked up in the inode cache, which never loads a
 * module or creates a device.
 */
static int block_lookup(dev_t dev)
{
	struct inode *inode = ilookup(blockdev_superblock, dev);
	bool partition;

	if (!inode)
		return -ENODEV;
	partition = bdev_is_partition(I_BDEV(inode));
	iput(inode);
	return partition ? -EINVAL : 0;
}

/**
 * statsfd_host_block_file() - a new stats file on a whole disk
 * @major: the disk's major number
 * @minor: the disk's minor number
 *
 * Makes a source for the disk, which reads its /proc/diskstats values
 * until the disk is removed (then the source keeps its last values and
 * hangs up), and a stats file on it.  The id is "host-block-<disk name>".
 * The disk is opened read-only and closed again, only to find it.
 *
 * Context: process context.
 * Return: the file, or ERR_PTR(-ENODEV) when no block device has that
 * number, ERR_PTR(-EINVAL) when it is a partition, ERR_PTR(-ENOMEM), or
 * another error of the open (EPERM from the device cgroup).
 */
struct file *statsfd_host_block_file(u32 major, u32 minor)
{
	struct statsfd_compat_bdev h;
	struct gendisk *disk;
	struct host_block *b;
	struct file *file;
	dev_t dev;
	int ret;

	dev = MKDEV(major, minor);
	/* A number too large for a dev_t names no device. */
	if (!dev || MAJOR(dev) != major || MINOR(dev) != minor)
		return ERR_PTR(-ENODEV);
	ret = block_lookup(dev);
	if (ret)
		return ERR_PTR(ret);

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return ERR_PTR(-ENOMEM);
	kref_init(&b->ref);
	mutex_init(&b->lock);

	ret = statsfd_compat_bdev_open(dev, &h);
	if (ret) {
		/* Gone since the lookup. */
		if (ret == -ENXIO)
			ret = -ENODEV;
		goto err_free;
	}
	/* The number may have been reused by a partition since. */
	if (bdev_is_partition(h.bdev)) {
		ret = -EINVAL;
		goto err_close;
	}
	disk = h.bdev->bd_disk;
	ret = statsfd_source_init(&b->src, &block_schema, NULL, &block_ops,
				  "host-block-%s", disk->disk_name);
	if (ret)
		goto err_close;
	/* The open pins the driver's module: taking another cannot fail. */
	get_device(disk_to_dev(disk));
	__module_get(disk->fops->owner);
	b->disk = disk;
	b->owner = disk->fops->owner;
	statsfd_compat_bdev_close(&h);

	/* The file takes its own reference; ours goes either way. */
	file = statsfd_source_getfile(&b->src);
	kref_put(&b->ref, block_release);
	return file;

err_close:
	statsfd_compat_bdev_close(&h);
err_free:
	mutex_destroy(&b->lock);
	kfree(b);
	return ERR_PTR(ret);
}

/**
 * statsfd_host_block_init() - set up the disk sources
 *
 * Return: 0, or a negative errno from the schema.
 */
int statsfd_host_block_init(void)
{
	return statsfd_schema_init(&block_schema, &block_def);
}

/**
 * statsfd_host_block_exit() - tear down what statsfd_host_block_init() set up
 *
 * Every stats fd pins the module, so no source is left by now.
 */
void statsfd_host_block_exit(void)
{
	statsfd_schema_destroy(&block_schema);
}
