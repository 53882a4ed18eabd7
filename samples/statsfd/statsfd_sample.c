// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_sample: a complete, minimal statsfd provider, built out of tree
 * against an installed statsfd (Documentation/statsfd-provider-guide.rst).
 *
 * /dev/statsfd_sample stands for a device with two queues.  Each write()
 * is one packet of write-length bytes on queue (length % 2), counted in
 * per-CPU counters as a network driver counts them, so each queue is a
 * *computed* source: its fill callback sums the CPUs at read time.  The
 * device is a *snapshot* source of a stats struct of its own, one counter
 * (opens, one update window under a lock since any thread may open), with
 * aggregates over its queues.  The
 * ioctl STATSFD_SAMPLE_GET_STATS_FD hands out stats fds, copying the fd
 * number out before installing the file (statsfd_source_getfile()).
 *
 * Everything is static and lives as long as the module: the stats fds pin
 * the module (ops->owner), so no get/put is needed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/statsfd.h>
#include <linux/uaccess.h>

/*
 * Written for version 3 of the API: the three set-up entry points, the
 * snapshot one taking the owner's stats struct.
 */
#if STATSFD_API_VERSION != 3
#error "statsfd_sample is written for statsfd kernel API version 3"
#endif

#include "statsfd_sample.h"

/* A queue's counters, one copy per CPU; also its schema's stats struct. */
struct sample_queue_stats {
	u64 packets;
	u64 bytes;
	u64 size_hist[8];	/* log2 of the packet size */
};

#define STATSFD_STATS_TYPE struct sample_queue_stats
static const struct statsfd_desc_def sample_queue_descs[] = {
	STATSFD_COUNTER(packets),
	STATSFD_BYTES(bytes),
	STATSFD_LOGHIST(size_hist),
};

#undef STATSFD_STATS_TYPE

static const struct statsfd_schema_def sample_queue_def = {
	.name = "statsfd_sample.queue",
	.descs = sample_queue_descs,
	.num_descs = ARRAY_SIZE(sample_queue_descs),
	.stats_size = sizeof(struct sample_queue_stats),
};

/* What the core derives from the definition, bound to the stats type. */
static STATSFD_SCHEMA_DECLARE(sample_queue_schema, struct sample_queue_stats);

/*
 * The device's own stats, then totals over its queues.  A snapshot source:
 * each update is one window, so every read sees a whole one and carries
 * its time (sample_ns) and number (generation).
 */
struct sample_dev_stats {
	u64 opens;
};

#define STATSFD_STATS_TYPE struct sample_dev_stats
static const struct statsfd_desc_def sample_dev_descs[] = {
	STATSFD_COUNTER(opens),
	STATSFD_AGG_SUM_OF(struct sample_queue_stats, packets),
	STATSFD_AGG_MAX_OF(struct sample_queue_stats, packets),
	STATSFD_AGG_SUM_OF(struct sample_queue_stats, bytes),
	STATSFD_AGG_SUM_OF(struct sample_queue_stats, size_hist),
};

#undef STATSFD_STATS_TYPE

static const struct statsfd_schema_def sample_dev_def = {
	.name = "statsfd_sample.device",
	.descs = sample_dev_descs,
	.num_descs = ARRAY_SIZE(sample_dev_descs),
	.stats_size = sizeof(struct sample_dev_stats),
	.child_schema = &sample_queue_schema.schema,
	.flags = STATSFD_SCHEMA_SNAPSHOT,
};

static STATSFD_SCHEMA_DECLARE(sample_dev_schema, struct sample_dev_stats);

struct sample_queue {
	struct statsfd_source src;
	struct sample_queue_stats __percpu *pcpu;
};

static struct sample_queue sample_queues[STATSFD_SAMPLE_NR_QUEUES];
static struct statsfd_source sample_dev_src;
/* The live values: only the writer reads them, windows publish a copy. */
static struct sample_dev_stats sample_dev_stats;
/* Any thread may open the device: the lock makes the window single-writer. */
static DEFINE_SPINLOCK(sample_dev_lock);

/* A computed source: the sum over every possible CPU, at read time. */
static int sample_queue_fill(struct statsfd_source *src, void *stats)
{
	struct sample_queue *q = container_of(src, struct sample_queue, src);
	struct sample_queue_stats *sum = stats;
	unsigned int i;
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct sample_queue_stats *c = per_cpu_ptr(q->pcpu, cpu);

		sum->packets += READ_ONCE(c->packets);
		sum->bytes += READ_ONCE(c->bytes);
		for (i = 0; i < ARRAY_SIZE(sum->size_hist); i++)
			sum->size_hist[i] += READ_ONCE(c->size_hist[i]);
	}
	return 0;
}

static const struct statsfd_source_ops sample_queue_ops = {
	.owner = THIS_MODULE,
	.fill = sample_queue_fill,
};

static const struct statsfd_source_ops sample_dev_ops = {
	.owner = THIS_MODULE,
};

static int sample_open(struct inode *inode, struct file *file)
{
	spin_lock(&sample_dev_lock);
	statsfd_update_begin(&sample_dev_src);
	statsfd_stat_add(&sample_dev_stats.opens, 1);
	statsfd_update_end(&sample_dev_src);
	spin_unlock(&sample_dev_lock);
	return 0;
}

/* One packet on queue (len % 2); nothing is copied, only counted. */
static ssize_t sample_write(struct file *file, const char __user *buf,
			    size_t len, loff_t *ppos)
{
	struct sample_queue *q = &sample_queues[len % STATSFD_SAMPLE_NR_QUEUES];
	struct sample_queue_stats *c;

	/* This CPU's copy has one writer while preemption is off. */
	c = get_cpu_ptr(q->pcpu);
	statsfd_stat_add(&c->packets, 1);
	statsfd_stat_add(&c->bytes, len);
	statsfd_loghist_update(c->size_hist, ARRAY_SIZE(c->size_hist), len);
	put_cpu_ptr(q->pcpu);
	return len;
}

static long sample_get_stats_fd(struct statsfd_sample_fd_args __user *uargs)
{
	struct statsfd_sample_fd_args args;
	struct statsfd_source *src;
	struct file *file;
	int fd;

	if (copy_from_user(&args, uargs, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.reserved)
		return -EINVAL;
	if (args.target > STATSFD_SAMPLE_TARGET_MAX)
		return -ENOENT;
	/* A user-chosen index: no speculative read past the array. */
	args.target = array_index_nospec(args.target,
					 STATSFD_SAMPLE_TARGET_MAX + 1);
	src = args.target == STATSFD_SAMPLE_TARGET_DEVICE ? &sample_dev_src :
	      &sample_queues[args.target - STATSFD_SAMPLE_TARGET_QUEUE0].src;

	/* The fd number goes out before the file is installed. */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	file = statsfd_source_getfile(src);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	args.fd = fd;
	if (copy_to_user(uargs, &args, sizeof(args))) {
		fput(file);
		put_unused_fd(fd);
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;
}

static long sample_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	switch (cmd) {
	case STATSFD_SAMPLE_GET_STATS_FD:
		return sample_get_stats_fd((void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations sample_fops = {
	.owner = THIS_MODULE,
	.open = sample_open,
	.write = sample_write,
	.unlocked_ioctl = sample_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice sample_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "statsfd_sample",
	.fops = &sample_fops,
	.mode = 0600,
};

static struct dentry *sample_debugfs;

static void sample_destroy_sources(void)
{
	unsigned int i;

	/* Children first is not required (destroying a parent detaches them). */
	statsfd_source_destroy(&sample_dev_src);
	for (i = 0; i < STATSFD_SAMPLE_NR_QUEUES; i++) {
		statsfd_source_destroy(&sample_queues[i].src);
		free_percpu(sample_queues[i].pcpu);
		sample_queues[i].pcpu = NULL;
	}
}

static int __init sample_init(void)
{
	unsigned int i;
	int ret;

	ret = statsfd_schema_init(&sample_queue_schema.schema, &sample_queue_def);
	if (ret)
		return ret;
	ret = statsfd_schema_init(&sample_dev_schema.schema, &sample_dev_def);
	if (ret)
		goto err_queue_schema;

	/*
	 * Type-checked: &sample_dev_stats must be a struct sample_dev_stats *.
	 * The stats stay here; the core adds the copies readers see.
	 */
	ret = statsfd_source_init_snapshot_stats(&sample_dev_src,
						 &sample_dev_schema,
						 &sample_dev_stats,
						 &sample_dev_ops,
						 "statsfd_sample");
	if (ret)
		goto err_dev_schema;
	for (i = 0; i < STATSFD_SAMPLE_NR_QUEUES; i++) {
		struct sample_queue *q = &sample_queues[i];

		q->pcpu = alloc_percpu(struct sample_queue_stats);
		ret = q->pcpu ? statsfd_source_init_computed(&q->src,
							     &sample_queue_schema.schema,
							     &sample_queue_ops,
							     "statsfd_sample/queue-%u", i) :
				-ENOMEM;
		if (ret)
			goto err_sources;
		statsfd_source_add_child(&sample_dev_src, &q->src);
	}

	/* Optional: failures here only cost the text view. */
	sample_debugfs = debugfs_create_dir("statsfd_sample",
					    statsfd_debugfs_root());
	statsfd_source_debugfs_create(&sample_dev_src, "device", sample_debugfs);
	for (i = 0; i < STATSFD_SAMPLE_NR_QUEUES; i++)
		statsfd_source_debugfs_create(&sample_queues[i].src,
					      statsfd_source_id(&sample_queues[i].src),
					      sample_debugfs);

	ret = misc_register(&sample_misc);
	if (ret) {
		/* The sources' views live in the directory: they go first. */
		sample_destroy_sources();
		debugfs_remove(sample_debugfs);
		goto err_dev_schema;
	}
	return 0;

err_sources:
	sample_destroy_sources();
err_dev_schema:
	statsfd_schema_destroy(&sample_dev_schema.schema);
err_queue_schema:
	statsfd_schema_destroy(&sample_queue_schema.schema);
	return ret;
}

static void __exit sample_exit(void)
{
	/* No stats fd can be open: each one pins this module. */
	misc_deregister(&sample_misc);
	sample_destroy_sources();
	debugfs_remove(sample_debugfs);
	statsfd_schema_destroy(&sample_dev_schema.schema);
	statsfd_schema_destroy(&sample_queue_schema.schema);
}

module_init(sample_init);
module_exit(sample_exit);

MODULE_DESCRIPTION("statsfd sample provider: computed per-CPU queue stats and device totals in snapshots");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(STATSFD_NS);
