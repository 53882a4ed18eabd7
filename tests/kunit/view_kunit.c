// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_view: events and views of stats files.
 *
 * Events: the per-file generation behind EPOLLPRI | EPOLLERR (a change of
 * the source's children; cleared by a read of the header or of the data,
 * not of the id or descriptors; a change during a read stays pending; a
 * fresh file has none; every file has its own), EPOLLHUP after
 * statsfd_source_hangup() (idempotent), and which events wake a poller.
 *
 * Views: STATSFD_IOC_VIEW through the file's own ->unlocked_ioctl (the
 * view code is not exported, so its one caller is the way in), every byte
 * of the view's file compared with an image built here by hand (header,
 * id, descriptors with rewritten offsets, compact data block) for views
 * by name and by index, views of views, aggregates, sample_ns and
 * generation; and every error of STATSFD_IOC_VIEW, each its own case,
 * repeated so that a leak on a failure path is large enough for the
 * harness's kmemleak scan.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mman.h>
#include <linux/poll.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "statsfd_kunit.h"

#define NR_CHILDREN	3
/* How often each failing ioctl is repeated: a leak would be that many. */
#define FAIL_ROUNDS	64

/* poll() masks as plain integers, for the KUnit comparisons. */
#define EV(mask)	((__force unsigned int)(mask))
#define EV_IDLE		EV(EPOLLIN | EPOLLRDNORM)
#define EV_CHANGED	(EV_IDLE | EV(EPOLLPRI | EPOLLERR))
#define EV_HUP		EV(EPOLLHUP)

/* Where the helpers put things in the test's user memory. */
#define U_ARGS		0
#define U_LIST		64
#define U_NAMES		1024
#define U_READ		PAGE_SIZE
#define U_SIZE		(4 * PAGE_SIZE)
#define READ_MAX	(U_SIZE - U_READ)

/*
 * A parent of three children and a spare child, their stats, a file on
 * the parent and one on child 0, and user memory for the ioctl's
 * arguments and for reads.
 */
struct view_ctx {
	struct statsfd_kunit_family f;
	struct file *pfile;
	struct file *cfile;
	char __user *ubuf;
	char __user *bad;	/* a PROT_NONE page: faults */
	u8 *kbuf;
};

KUNIT_DEFINE_ACTION_WRAPPER(view_fput, __fput_sync, struct file *);

static int view_init(struct kunit *test)
{
	struct view_ctx *ctx;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;

	statsfd_kunit_family(test, &ctx->f, "vm-7-0", NR_CHILDREN + 1,
			     NR_CHILDREN);
	ctx->pfile = statsfd_kunit_file(test, ctx->f.parent);
	ctx->cfile = statsfd_kunit_file(test, ctx->f.child[0]);
	ctx->ubuf = statsfd_kunit_ubuf(test, U_SIZE, PROT_READ | PROT_WRITE);
	ctx->bad = statsfd_kunit_ubuf(test, PAGE_SIZE, PROT_NONE);
	ctx->kbuf = kunit_kzalloc(test, READ_MAX, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->kbuf);
	return 0;
}

static unsigned int events(struct file *file)
{
	return EV(file->f_op->poll(file, NULL));
}

/* pread @len bytes at @pos of @file into ctx->kbuf. */
static ssize_t rd(struct kunit *test, struct file *file, loff_t pos,
		  size_t len)
{
	struct view_ctx *ctx = test->priv;

	KUNIT_ASSERT_LE(test, len, READ_MAX);
	return statsfd_kunit_read(test, file, ctx->ubuf + U_READ, ctx->kbuf,
				  len, pos);
}

static u32 file_size(struct file *file)
{
	struct statsfd_file *sf = file->private_data;

	return sf->view ? sf->view->file_size : sf->src->priv->schema->file_size;
}

/* Write @names (as user strings) and the list of their addresses. */
static u64 put_names(struct kunit *test, const char *const *names, u32 n)
{
	struct view_ctx *ctx = test->priv;
	char __user *p = ctx->ubuf + U_NAMES;
	u64 __user *list = (u64 __user *)(ctx->ubuf + U_LIST);
	u32 i;

	for (i = 0; i < n; i++) {
		size_t len = strlen(names[i]) + 1;

		KUNIT_ASSERT_LE(test, p + len - ctx->ubuf, U_READ);
		KUNIT_ASSERT_EQ(test, copy_to_user(p, names[i], len), 0);
		KUNIT_ASSERT_EQ(test, put_user((u64)(uintptr_t)p, list + i), 0);
		p += len;
	}
	return (u64)(uintptr_t)list;
}

static u64 put_indices(struct kunit *test, const u32 *idx, u32 n)
{
	struct view_ctx *ctx = test->priv;
	u32 __user *list = (u32 __user *)(ctx->ubuf + U_LIST);

	KUNIT_ASSERT_LE(test, n * sizeof(u32), U_NAMES - U_LIST);
	KUNIT_ASSERT_EQ(test, copy_to_user(list, idx, n * sizeof(u32)), 0);
	return (u64)(uintptr_t)list;
}

/*
 * An fd the ioctl installed that a test did not want: its file is
 * released now, not by a delayed fput after the test freed the source.
 */
static void drop_fd(long fd)
{
	struct file *file;

	if (fd < 0)
		return;
	file = fget(fd);
	close_fd(fd);
	if (file)
		__fput_sync(file);
}

/* STATSFD_IOC_VIEW on @file with @args placed in user memory. */
static long view_ioctl(struct kunit *test, struct file *file,
		       const struct statsfd_view_args *args)
{
	struct view_ctx *ctx = test->priv;
	char __user *uargs = ctx->ubuf + U_ARGS;

	KUNIT_ASSERT_EQ(test, copy_to_user(uargs, args, sizeof(*args)), 0);
	return file->f_op->unlocked_ioctl(file, STATSFD_IOC_VIEW,
					  (unsigned long)uargs);
}

/*
 * The view's file: the ioctl installs an fd (in the test thread's table);
 * keep the file, drop the fd.  Closed when the test ends.
 */
static struct file *view_open(struct kunit *test, struct file *file, u32 flags,
			      u32 count, u64 list)
{
	struct statsfd_view_args args = {
		.flags = flags, .count = count, .list = list,
	};
	struct file *view;
	long fd;
	int ret;

	fd = view_ioctl(test, file, &args);
	KUNIT_ASSERT_GE_MSG(test, fd, 0, "STATSFD_IOC_VIEW: %ld", fd);
	view = fget(fd);
	KUNIT_ASSERT_NOT_NULL(test, view);
	KUNIT_EXPECT_EQ(test, close_fd(fd), 0);
	ret = kunit_add_action_or_reset(test, view_fput, view);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_PTR_EQ(test, view->f_op, file->f_op);
	return view;
}

static struct file *view_by_name(struct kunit *test, struct file *file,
				 const char *const *names, u32 n)
{
	return view_open(test, file, 0, n, put_names(test, names, n));
}

static struct file *view_by_index(struct kunit *test, struct file *file,
				  const u32 *idx, u32 n)
{
	return view_open(test, file, STATSFD_VIEW_BY_INDEX, n,
			 put_indices(test, idx, n));
}

/* The whole file of @file equals @image, @size bytes. */
static void expect_file(struct kunit *test, struct file *file,
			const void *image, u32 size)
{
	struct view_ctx *ctx = test->priv;

	KUNIT_EXPECT_EQ(test, file_size(file), size);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, 0, SEEK_END), (loff_t)size);
	/* One more byte asked for than there is: the read stops at EOF. */
	KUNIT_ASSERT_EQ(test, rd(test, file, 0, size + 1), (ssize_t)size);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, image, size);
}

/* ---------------------------------------------------------------------
 * Events
 */

static void statsfd_poll_fresh_file_has_no_event(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct file *again;

	/* The children were added before the files were made. */
	KUNIT_EXPECT_EQ(test, ctx->f.parent->src.priv->children_gen, NR_CHILDREN);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);
	KUNIT_EXPECT_EQ(test, events(ctx->cfile), EV_IDLE);

	/* A file made after a change (and unread) has none either. */
	statsfd_source_add_child(&ctx->f.parent->src,
				 &ctx->f.child[NR_CHILDREN]->src);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	again = statsfd_kunit_file(test, ctx->f.parent);
	KUNIT_EXPECT_EQ(test, events(again), EV_IDLE);
}

static void statsfd_poll_child_added_or_removed_is_an_event(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct statsfd_source *spare = &ctx->f.child[NR_CHILDREN]->src;

	statsfd_source_add_child(&ctx->f.parent->src, spare);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	/* Polling acknowledges nothing: still there. */
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, 24), 24);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);

	statsfd_source_del_child(spare);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, 24), 24);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);

	/* Two changes between two polls: one event, one read clears both. */
	statsfd_source_add_child(&ctx->f.parent->src, spare);
	statsfd_source_del_child(spare);
	KUNIT_EXPECT_EQ(test, ctx->f.parent->src.priv->num_children, NR_CHILDREN);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, 24), 24);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);
	/* A child's own file saw none of it: it has no children. */
	KUNIT_EXPECT_EQ(test, events(ctx->cfile), EV_IDLE);
}

/* A read of @len bytes at @pos. */
struct view_read {
	loff_t pos;
	size_t len;
};

/*
 * Each of the @n @reads of the parent's file, after a change of its
 * children (the spare child added, then removed, in turn), clears the
 * event the change raised.
 */
static void expect_reads_clear(struct kunit *test,
			       const struct view_read *reads, unsigned int n)
{
	struct view_ctx *ctx = test->priv;
	struct statsfd_source *spare = &ctx->f.child[NR_CHILDREN]->src;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (i % 2)
			statsfd_source_del_child(spare);
		else
			statsfd_source_add_child(&ctx->f.parent->src, spare);
		KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
		KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, reads[i].pos,
					 reads[i].len),
				(ssize_t)reads[i].len);
		KUNIT_EXPECT_EQ_MSG(test, events(ctx->pfile), EV_IDLE,
				    "read %lld+%zu", reads[i].pos, reads[i].len);
	}
}

static void statsfd_poll_header_read_clears(struct kunit *test)
{
	/* Any byte of [0, 24): the first, the last, a read across id. */
	static const struct view_read reads[] = {
		{ 0, 1 }, { 23, 1 }, { 12, 4 }, { 20, 40 }, { 0, 24 },
	};

	expect_reads_clear(test, reads, ARRAY_SIZE(reads));
}

static void statsfd_poll_data_read_clears(struct kunit *test)
{
	/*
	 * Any byte of the data block [72, 232): its first and last byte,
	 * a plain stat, an aggregate, a read from the id into the data and
	 * one from the data into the descriptors.
	 */
	static const struct view_read reads[] = {
		{ SFK_DATA_OFFSET, 1 },
		{ SFK_PARENT_DESC_OFFSET - 1, 1 },
		{ SFK_DATA_OFFSET + 8, 8 },
		{ SFK_DATA_OFFSET + SFK_PARENT_STATS_SIZE, 8 },
		{ SFK_DATA_OFFSET - 1, 2 },
		{ SFK_PARENT_DESC_OFFSET - 1, 17 },
	};

	expect_reads_clear(test, reads, ARRAY_SIZE(reads));
}

static void statsfd_poll_id_or_descriptor_read_keeps_event(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	/* Only the id, only descriptors, at and past EOF, nothing at all. */
	static const struct view_read reads[] = {
		{ 24, 1 }, { 24, SFK_NAME_SIZE }, { SFK_DATA_OFFSET - 1, 1 },
		{ SFK_PARENT_DESC_OFFSET, 1 },
		{ SFK_PARENT_DESC_OFFSET, SFK_PARENT_FILE_SIZE -
					  SFK_PARENT_DESC_OFFSET },
		{ SFK_PARENT_FILE_SIZE - 1, 1 }, { SFK_PARENT_FILE_SIZE, 8 },
		{ SFK_PARENT_FILE_SIZE + 100, 8 }, { 0, 0 },
	};
	unsigned int i;
	ssize_t want;

	statsfd_source_add_child(&ctx->f.parent->src,
				 &ctx->f.child[NR_CHILDREN]->src);
	for (i = 0; i < ARRAY_SIZE(reads); i++) {
		want = reads[i].pos >= SFK_PARENT_FILE_SIZE ? 0 : reads[i].len;
		KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, reads[i].pos,
					 reads[i].len), want);
		KUNIT_EXPECT_EQ_MSG(test, events(ctx->pfile), EV_CHANGED,
				    "read %lld+%zu", reads[i].pos, reads[i].len);
	}
	/* A read of the header still clears it. */
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, 1), 1);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);
}

/*
 * Holds the file's read lock, so that a read of its data stops there
 * (after it began: a reader waits for the lock), changes the children
 * while the read waits, and lets it finish.
 */
struct during_read {
	struct statsfd_file *sf;
	struct statsfd_source *parent;
	struct statsfd_source *child;
	struct completion locked;
	struct completion done;
	bool timed_out;
	u64 gen_after;
};

static int change_during_read(void *arg)
{
	struct during_read *d = arg;
	unsigned long deadline = jiffies + 10 * HZ;

	mutex_lock(&d->sf->lock);
	complete(&d->locked);
	while (list_empty_careful(&d->sf->lock.wait_list)) {
		if (time_after(jiffies, deadline)) {
			d->timed_out = true;
			break;
		}
		usleep_range(1000, 2000);
	}
	statsfd_source_add_child(d->parent, d->child);
	d->gen_after = READ_ONCE(d->parent->priv->children_gen);
	mutex_unlock(&d->sf->lock);
	kthread_complete_and_exit(&d->done, 0);
}

static void statsfd_poll_change_during_read_stays_pending(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct during_read *d;
	struct task_struct *t;
	u64 gen;

	d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d);
	/* A first change, which the read will acknowledge. */
	statsfd_source_del_child(&ctx->f.child[NR_CHILDREN - 1]->src);
	gen = ctx->f.parent->src.priv->children_gen;
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);

	d->sf = ctx->pfile->private_data;
	d->parent = &ctx->f.parent->src;
	d->child = &ctx->f.child[NR_CHILDREN]->src;
	init_completion(&d->locked);
	init_completion(&d->done);
	t = kthread_run(change_during_read, d, "statsfd_kunit_change");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t);
	wait_for_completion(&d->locked);

	/* Waits at the data while the other thread changes the children. */
	KUNIT_EXPECT_EQ(test, rd(test, ctx->pfile, 0, SFK_PARENT_FILE_SIZE),
			SFK_PARENT_FILE_SIZE);
	wait_for_completion(&d->done);
	KUNIT_ASSERT_FALSE_MSG(test, d->timed_out,
			       "the read never waited for the file's lock");
	KUNIT_EXPECT_EQ(test, d->gen_after, gen + 1);

	/* The second change came during the read: still pending. */
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, 24), 24);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);
}

static void statsfd_poll_failed_read_keeps_event(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	char __user *edge;
	loff_t pos;

	/* A page of user memory followed by none. */
	edge = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE, PROT_READ | PROT_WRITE);
	KUNIT_ASSERT_EQ(test, vm_munmap((unsigned long)edge + PAGE_SIZE,
					PAGE_SIZE), 0);
	edge += PAGE_SIZE;

	statsfd_source_add_child(&ctx->f.parent->src,
				 &ctx->f.child[NR_CHILDREN]->src);
	/* Nothing copied: a buffer that faults, a negative position. */
	pos = 0;
	KUNIT_EXPECT_EQ(test, ctx->pfile->f_op->read(ctx->pfile, ctx->bad, 24,
						     &pos),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	pos = SFK_DATA_OFFSET;
	KUNIT_EXPECT_EQ(test, ctx->pfile->f_op->read(ctx->pfile, ctx->bad, 8,
						     &pos),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	pos = -1;
	KUNIT_EXPECT_EQ(test, ctx->pfile->f_op->read(ctx->pfile,
						     ctx->ubuf + U_READ, 24,
						     &pos),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	/* A read that returned header bytes before a fault acknowledges. */
	pos = 0;
	KUNIT_EXPECT_EQ(test, ctx->pfile->f_op->read(ctx->pfile, edge - 16,
						     64, &pos),
			16);
	KUNIT_EXPECT_EQ(test, pos, 16);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);
}

static void statsfd_poll_each_file_has_its_own_generation(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "exits_sum" };
	struct file *other = statsfd_kunit_file(test, ctx->f.parent);
	struct file *view = view_by_name(test, ctx->pfile, names, 1);

	KUNIT_EXPECT_EQ(test, events(view), EV_IDLE);
	statsfd_source_add_child(&ctx->f.parent->src,
				 &ctx->f.child[NR_CHILDREN]->src);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED);
	KUNIT_EXPECT_EQ(test, events(other), EV_CHANGED);
	KUNIT_EXPECT_EQ(test, events(view), EV_CHANGED);

	/* Reading one file acknowledges nothing for the others. */
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, SFK_PARENT_FILE_SIZE),
			SFK_PARENT_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE);
	KUNIT_EXPECT_EQ(test, events(other), EV_CHANGED);
	KUNIT_EXPECT_EQ(test, events(view), EV_CHANGED);

	/* A view acknowledges with its own header or data... */
	KUNIT_ASSERT_EQ(test, rd(test, view, SFK_DATA_OFFSET, 8), 8);
	KUNIT_EXPECT_EQ(test, events(view), EV_IDLE);
	KUNIT_EXPECT_EQ(test, events(other), EV_CHANGED);
	/* ...not with its descriptors (one, at 72 + 8). */
	statsfd_source_del_child(&ctx->f.child[NR_CHILDREN]->src);
	KUNIT_ASSERT_EQ(test, rd(test, view, SFK_DATA_OFFSET + 8, SFK_STRIDE),
			SFK_STRIDE);
	KUNIT_EXPECT_EQ(test, events(view), EV_CHANGED);
	KUNIT_ASSERT_EQ(test, rd(test, view, 4, 4), 4);
	KUNIT_EXPECT_EQ(test, events(view), EV_IDLE);
	KUNIT_EXPECT_EQ(test, events(other), EV_CHANGED);
}

static void statsfd_poll_hangup_is_sticky_and_idempotent(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "alive" };
	struct file *view = view_by_name(test, ctx->pfile, names, 1);
	struct file *late;

	KUNIT_EXPECT_FALSE(test, ctx->f.parent->src.priv->hung_up);
	statsfd_source_hangup(&ctx->f.parent->src);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE | EV_HUP);
	KUNIT_EXPECT_EQ(test, events(view), EV_IDLE | EV_HUP);
	/* Only the source hung up: its children's files are untouched. */
	KUNIT_EXPECT_EQ(test, events(ctx->cfile), EV_IDLE);

	statsfd_source_hangup(&ctx->f.parent->src);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE | EV_HUP);

	/* Still readable, and a read does not clear a hangup. */
	KUNIT_EXPECT_EQ(test, rd(test, ctx->pfile, 0, SFK_PARENT_FILE_SIZE),
			SFK_PARENT_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_IDLE | EV_HUP);
	/* Independent of changes of the children. */
	statsfd_source_del_child(&ctx->f.child[0]->src);
	KUNIT_EXPECT_EQ(test, events(ctx->pfile), EV_CHANGED | EV_HUP);
	/* A file made afterwards hangs up from the start. */
	late = statsfd_kunit_file(test, ctx->f.parent);
	KUNIT_EXPECT_EQ(test, events(late), EV_IDLE | EV_HUP);
}

/* A poll table entry that counts wake-ups and keeps the last key. */
struct poll_rec {
	poll_table pt;
	wait_queue_entry_t wait;
	wait_queue_head_t *head;
	atomic_t wakes;
	unsigned int key;
};

static int poll_rec_wake(wait_queue_entry_t *wait, unsigned int mode,
			 int sync, void *key)
{
	struct poll_rec *r = container_of(wait, struct poll_rec, wait);

	WRITE_ONCE(r->key, EV(key_to_poll(key)));
	atomic_inc(&r->wakes);
	return 0;
}

static void poll_rec_queue(struct file *file, wait_queue_head_t *head,
			   poll_table *pt)
{
	struct poll_rec *r = container_of(pt, struct poll_rec, pt);

	r->head = head;
	init_waitqueue_func_entry(&r->wait, poll_rec_wake);
	add_wait_queue(head, &r->wait);
}

static void poll_rec_remove(void *arg)
{
	struct poll_rec *r = arg;

	if (r->head)
		remove_wait_queue(r->head, &r->wait);
}

/* Poll @file once with a table that registers @r on its wait queue. */
static struct poll_rec *poll_rec_add(struct kunit *test, struct file *file)
{
	struct poll_rec *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	init_poll_funcptr(&r->pt, poll_rec_queue);
	file->f_op->poll(file, &r->pt);
	KUNIT_ASSERT_NOT_NULL(test, r->head);
	KUNIT_ASSERT_EQ(test,
			kunit_add_action_or_reset(test, poll_rec_remove, r), 0);
	return r;
}

static void statsfd_poll_wakes_on_children_and_hangup_only(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct poll_rec *p = poll_rec_add(test, ctx->pfile);
	struct poll_rec *c = poll_rec_add(test, ctx->cfile);
	struct statsfd_kunit_child *stats = &ctx->f.cstats[0];
	unsigned int i;

	KUNIT_EXPECT_PTR_EQ(test, p->head, &ctx->f.parent->src.priv->wq);
	/* Stats updates and reads wake nobody. */
	for (i = 0; i < 1000; i++) {
		statsfd_stat_add(&stats->exits, 1);
		statsfd_stat_max(&stats->max_run, i);
		statsfd_stat_add(&ctx->f.pstats.created, 1);
	}
	KUNIT_ASSERT_EQ(test, rd(test, ctx->pfile, 0, SFK_PARENT_FILE_SIZE),
			SFK_PARENT_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->wakes), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->wakes), 0);

	statsfd_source_add_child(&ctx->f.parent->src,
				 &ctx->f.child[NR_CHILDREN]->src);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->wakes), 1);
	KUNIT_EXPECT_EQ(test, p->key, EV(EPOLLPRI | EPOLLERR));
	statsfd_source_del_child(&ctx->f.child[NR_CHILDREN]->src);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->wakes), 2);
	KUNIT_EXPECT_EQ(test, p->key, EV(EPOLLPRI | EPOLLERR));

	statsfd_source_hangup(&ctx->f.parent->src);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->wakes), 3);
	KUNIT_EXPECT_EQ(test, p->key, EV_HUP);
	/* Hanging up again wakes nobody. */
	statsfd_source_hangup(&ctx->f.parent->src);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->wakes), 3);
	/* The child's queue saw none of the parent's events. */
	KUNIT_EXPECT_EQ(test, atomic_read(&c->wakes), 0);
}

/* ---------------------------------------------------------------------
 * View layout
 */

/* child 0's view of log, exits, cycles, lin: by hand, offsets compact. */
static const char *const view_a_names[] = { "log", "exits", "cycles", "lin" };
static const u32 view_a_index[] = { 5, 0, 7, 4 };
static const struct statsfd_desc_def view_a_expect[] = {
	{ 0x004, 0, 6,  0,  0, "log" },
	{ 0x000, 0, 1, 48,  0, "exits" },
	{ 0x030, 0, 1, 56,  0, "cycles" },
	{ 0x003, 0, 4, 64, 10, "lin" },
};

#define VIEW_A_DATA_SIZE	96
#define VIEW_A_FILE_SIZE	(SFK_DATA_OFFSET + VIEW_A_DATA_SIZE + 4 * SFK_STRIDE)

static u8 *view_a_image(struct kunit *test, const struct statsfd_kunit_child *c)
{
	u64 data[VIEW_A_DATA_SIZE / 8];

	memcpy(&data[0], c->log, 6 * sizeof(u64));
	data[6] = c->exits;
	data[7] = c->cycles;
	memcpy(&data[8], c->lin, 4 * sizeof(u64));
	return statsfd_kunit_image(test, view_a_expect, 4, VIEW_A_DATA_SIZE,
				   "vm-7-0/vcpu-0", data);
}

static void statsfd_view_by_name_matches_image(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct statsfd_kunit_child *c = &ctx->f.cstats[0];
	struct file *view = view_by_name(test, ctx->cfile, view_a_names, 4);

	KUNIT_EXPECT_EQ(test, VIEW_A_FILE_SIZE, 424);
	expect_file(test, view, view_a_image(test, c), VIEW_A_FILE_SIZE);

	/* Live values: the next read has the new ones, in their place. */
	c->exits += 5;
	c->log[5] = 0xabcdef;
	c->lin[0] = 0;
	expect_file(test, view, view_a_image(test, c), VIEW_A_FILE_SIZE);
	/* The source's own file is what it always was. */
	KUNIT_EXPECT_EQ(test, file_size(ctx->cfile), SFK_CHILD_FILE_SIZE);
}

static void statsfd_view_by_index_matches_image(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct file *view = view_by_index(test, ctx->cfile, view_a_index, 4);
	static const u32 one[] = { 3 };
	static const struct statsfd_desc_def wait_ns[] = {
		{ 0x020, -9, 1, 0, 0, "wait_ns" },
	};

	expect_file(test, view, view_a_image(test, &ctx->f.cstats[0]),
		    VIEW_A_FILE_SIZE);

	view = view_by_index(test, ctx->cfile, one, 1);
	expect_file(test, view,
		    statsfd_kunit_image(test, wait_ns, 1, 8, "vm-7-0/vcpu-0",
					&ctx->f.cstats[0].wait_ns),
		    SFK_DATA_OFFSET + 8 + SFK_STRIDE);
}

static void statsfd_view_of_every_stat_reversed(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct statsfd_kunit_child *c = &ctx->f.cstats[0];
	static const u32 idx[] = { 7, 6, 5, 4, 3, 2, 1, 0 };
	static const struct statsfd_desc_def expect[] = {
		{ 0x030,  0, 1,   0,  0, "cycles" },
		{ 0x110,  0, 1,   8,  0, "io_bytes" },
		{ 0x004,  0, 6,  16,  0, "log" },
		{ 0x003,  0, 4,  64, 10, "lin" },
		{ 0x020, -9, 1,  96,  0, "wait_ns" },
		{ 0x002,  0, 1, 104,  0, "max_run" },
		{ 0x041,  0, 1, 112,  0, "blocking" },
		{ 0x000,  0, 1, 120,  0, "exits" },
	};
	u64 data[16];
	struct file *view = view_by_index(test, ctx->cfile, idx, 8);

	data[0] = c->cycles;
	data[1] = c->io_bytes;
	memcpy(&data[2], c->log, sizeof(c->log));
	memcpy(&data[8], c->lin, sizeof(c->lin));
	data[12] = c->wait_ns;
	data[13] = c->max_run;
	data[14] = c->blocking;
	data[15] = c->exits;
	/* As big as the source's file, the blocks in another order. */
	expect_file(test, view,
		    statsfd_kunit_image(test, expect, 8, 128, "vm-7-0/vcpu-0",
					data),
		    SFK_CHILD_FILE_SIZE);
}

static void statsfd_view_of_view_matches_image(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct statsfd_kunit_child *c = &ctx->f.cstats[0];
	struct file *a = view_by_name(test, ctx->cfile, view_a_names, 4);
	static const u32 lin_exits[] = { 3, 1 };
	static const struct statsfd_desc_def b_expect[] = {
		{ 0x003, 0, 4,  0, 10, "lin" },
		{ 0x000, 0, 1, 32,  0, "exits" },
	};
	static const char *const cycles[] = { "cycles" };
	static const struct statsfd_desc_def cycles_expect[] = {
		{ 0x030, 0, 1, 0, 0, "cycles" },
	};
	static const u32 second[] = { 1 };
	static const struct statsfd_desc_def exits_expect[] = {
		{ 0x000, 0, 1, 0, 0, "exits" },
	};
	struct file *b, *b1;
	u64 data[5];

	/* By index: indices of the view (3 is lin there, 4 in the source). */
	b = view_by_index(test, a, lin_exits, 2);
	memcpy(data, c->lin, sizeof(c->lin));
	data[4] = c->exits;
	expect_file(test, b,
		    statsfd_kunit_image(test, b_expect, 2, 40, "vm-7-0/vcpu-0",
					data),
		    SFK_DATA_OFFSET + 40 + 2 * SFK_STRIDE);

	/* By name, among the view's names only. */
	expect_file(test, view_by_name(test, a, cycles, 1),
		    statsfd_kunit_image(test, cycles_expect, 1, 8,
					"vm-7-0/vcpu-0", &c->cycles),
		    SFK_DATA_OFFSET + 8 + SFK_STRIDE);

	/* And a view of that view of a view. */
	b1 = view_by_index(test, b, second, 1);
	c->exits = 0x1122334455667788ULL;
	expect_file(test, b1,
		    statsfd_kunit_image(test, exits_expect, 1, 8,
					"vm-7-0/vcpu-0", &c->exits),
		    SFK_DATA_OFFSET + 8 + SFK_STRIDE);
	KUNIT_EXPECT_EQ(test, ((struct statsfd_file *)b1->private_data)
				      ->view->sel[0].full_index, 0);
}

static void statsfd_view_with_aggregates_matches_image(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = {
		"exits_avg", "alive", "log_sum", "created", "wait_ns_max",
	};
	static const struct statsfd_desc_def expect[] = {
		{ 0x4001,  0, 1,  0, 0, "exits_avg" },
		{ 0x0001,  0, 1,  8, 0, "alive" },
		{ 0x1004,  0, 6, 16, 0, "log_sum" },
		{ 0x0000,  0, 1, 64, 0, "created" },
		{ 0x3021, -9, 1, 72, 0, "wait_ns_max" },
	};
	const struct statsfd_kunit_child *c[NR_CHILDREN];
	u64 full[SFK_PARENT_DATA_SIZE / 8], data[10];
	struct file *view = view_by_name(test, ctx->pfile, names, 5);
	unsigned int i;

	for (i = 0; i < NR_CHILDREN; i++)
		c[i] = &ctx->f.cstats[i];
	statsfd_kunit_parent_data(&ctx->f.pstats, c, NR_CHILDREN, full);
	/* exits_avg is word 5 of the full data, alive 1, log_sum 14-19... */
	data[0] = full[5];
	data[1] = full[1];
	memcpy(&data[2], &full[14], 6 * sizeof(u64));
	data[8] = full[0];
	data[9] = full[9];
	/* ...which are, for these children: */
	KUNIT_EXPECT_EQ(test, data[0], (1011 + 2011 + 3011) / 3);
	KUNIT_EXPECT_EQ(test, data[9], 21000003);
	expect_file(test, view,
		    statsfd_kunit_image(test, expect, 5, 80, "vm-7-0", data),
		    SFK_DATA_OFFSET + 80 + 5 * SFK_STRIDE);
}

/* A snapshot parent with two snapshot children and windows on each. */
static void statsfd_view_with_sample_ns_and_generation(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = {
		"generation", "exits_max", "alive", "lin_sum", "sample_ns",
	};
	static const struct statsfd_desc_def expect[] = {
		{ 0x0000,  0, 1,  0,  0, "generation" },
		{ 0x3001,  0, 1,  8,  0, "exits_max" },
		{ 0x0001,  0, 1, 16,  0, "alive" },
		{ 0x1003,  0, 4, 24, 10, "lin_sum" },
		{ 0x0021, -9, 1, 56,  0, "sample_ns" },
	};
	static const char *const gen_only[] = { "generation" };
	static const struct statsfd_desc_def gen_expect[] = {
		{ 0x0000, 0, 1, 0, 0, "generation" },
	};
	static const char *const child_names[] = { "sample_ns", "lin" };
	static const struct statsfd_desc_def child_expect[] = {
		{ 0x0021, -9, 1, 0,  0, "sample_ns" },
		{ 0x0003,  0, 4, 8, 10, "lin" },
	};
	struct statsfd_schema *cs, *ps;
	struct statsfd_kunit_src *p, *ch[2];
	struct statsfd_kunit_parent *pv;
	struct statsfd_kunit_child *cv[2];
	struct file *pf, *cf, *view;
	u64 data[8], t0, t1, got;
	unsigned int i, j;

	cs = statsfd_kunit_schema(test, &statsfd_kunit_snap_child_tmpl, NULL);
	ps = statsfd_kunit_schema(test, &statsfd_kunit_snap_parent_tmpl, cs);
	/* The data block ends with sample_ns and generation, after aggs. */
	KUNIT_ASSERT_EQ(test, ps->meta_offset, SFK_PARENT_DATA_SIZE);
	KUNIT_ASSERT_EQ(test, cs->meta_offset, SFK_CHILD_DATA_SIZE);

	p = statsfd_kunit_source(test, ps, NULL, "vm-8-1");
	pv = statsfd_source_stats(&p->src);
	for (i = 0; i < 2; i++) {
		ch[i] = statsfd_kunit_source(test, cs, NULL, "vm-8-1/vcpu");
		cv[i] = statsfd_source_stats(&ch[i]->src);
		statsfd_source_add_child(&p->src, &ch[i]->src);
		/* i + 2 windows on child i. */
		for (j = 0; j < i + 2; j++) {
			statsfd_update_begin(&ch[i]->src);
			statsfd_stat_add(&cv[i]->exits, 40 * (i + 1) + j);
			statsfd_stat_add(&cv[i]->lin[j], 3 + i);
			statsfd_update_end(&ch[i]->src);
		}
	}
	/* Three windows on the parent. */
	statsfd_update_begin(&p->src);
	statsfd_stat_set(&pv->created, 2);
	statsfd_update_end(&p->src);
	statsfd_update_begin(&p->src);
	statsfd_stat_set(&pv->alive, 2);
	statsfd_update_end(&p->src);
	statsfd_update_begin(&p->src);
	statsfd_stat_add(&pv->created, 1);
	statsfd_update_end(&p->src);

	pf = statsfd_kunit_file(test, p);
	view = view_by_name(test, pf, names, 5);
	t0 = ktime_get_boottime_ns();
	KUNIT_ASSERT_EQ(test, rd(test, view, 0, 1000), 72 + 64 + 5 * 64);
	t1 = ktime_get_boottime_ns();
	memcpy(&got, ctx->kbuf + SFK_DATA_OFFSET + 56, sizeof(got));
	KUNIT_EXPECT_GE(test, got, t0);
	KUNIT_EXPECT_LE(test, got, t1);

	/*
	 * Child 0 counted 40 + 41 exits and 3 in lin[0] and lin[1]; child 1
	 * 80 + 81 + 82 exits and 4 in lin[0] to lin[2].
	 */
	data[0] = 3;		/* the parent's windows */
	data[1] = 243;		/* exits_max */
	data[2] = 2;		/* alive */
	data[3] = 7;		/* lin_sum */
	data[4] = 7;
	data[5] = 4;
	data[6] = 0;
	data[7] = got;		/* sample_ns, checked above */
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf,
			   statsfd_kunit_image(test, expect, 5, 64, "vm-8-1",
					       data),
			   72 + 64 + 5 * 64);

	/* Only generation: no value copied, still one snapshot's count. */
	view = view_by_name(test, pf, gen_only, 1);
	expect_file(test, view,
		    statsfd_kunit_image(test, gen_expect, 1, 8, "vm-8-1",
					&data[0]),
		    SFK_DATA_OFFSET + 8 + SFK_STRIDE);

	/* A child's view: its own sample_ns, then a histogram. */
	cf = statsfd_kunit_file(test, ch[1]);
	view = view_by_name(test, cf, child_names, 2);
	t0 = ktime_get_boottime_ns();
	KUNIT_ASSERT_EQ(test, rd(test, view, 0, 1000), 72 + 40 + 2 * 64);
	t1 = ktime_get_boottime_ns();
	memcpy(&got, ctx->kbuf + SFK_DATA_OFFSET, sizeof(got));
	KUNIT_EXPECT_GE(test, got, t0);
	KUNIT_EXPECT_LE(test, got, t1);
	data[0] = got;
	data[1] = 4;
	data[2] = 4;
	data[3] = 4;
	data[4] = 0;
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf,
			   statsfd_kunit_image(test, child_expect, 2, 40,
					       "vm-8-1/vcpu", data),
			   72 + 40 + 2 * 64);
}

static void statsfd_view_copies_only_what_it_selects(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "cycles", "exits", "blocking" };
	struct statsfd_file *sf;
	struct file *view;
	unsigned int i;

	view = view_by_name(test, ctx->cfile, names, 3);
	sf = view->private_data;
	/* cycles, then exits and blocking merged: two runs of values. */
	KUNIT_ASSERT_EQ(test, sf->view->nr_ranges, 2);
	KUNIT_EXPECT_EQ(test, sf->view->ranges[0].first, 15);
	KUNIT_EXPECT_EQ(test, sf->view->ranges[0].nr, 1);
	KUNIT_EXPECT_EQ(test, sf->view->ranges[1].first, 0);
	KUNIT_EXPECT_EQ(test, sf->view->ranges[1].nr, 2);
	KUNIT_EXPECT_FALSE(test, sf->view->need_aggs);
	KUNIT_EXPECT_FALSE(test, sf->view->need_meta);

	KUNIT_ASSERT_EQ(test, rd(test, view, SFK_DATA_OFFSET, 24), 24);
	KUNIT_EXPECT_EQ(test, ((u64 *)ctx->kbuf)[0], ctx->f.cstats[0].cycles);
	KUNIT_EXPECT_EQ(test, ((u64 *)ctx->kbuf)[1], ctx->f.cstats[0].exits);
	KUNIT_EXPECT_EQ(test, ((u64 *)ctx->kbuf)[2], ctx->f.cstats[0].blocking);
	/* Every other value of the source was left alone (all non-zero). */
	for (i = 0; i < SFK_CHILD_DATA_SIZE / 8; i++)
		if (i != 0 && i != 1 && i != 15)
			KUNIT_EXPECT_EQ_MSG(test, sf->buf[i], 0, "word %u", i);
}

static void statsfd_view_file_pins_source_and_shows_fdinfo(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "lin_sum", "created" };
	struct file *view;
	int gets = atomic_read(&ctx->f.parent->gets);
	int puts = atomic_read(&ctx->f.parent->puts);
	int mine = module_refcount(THIS_MODULE);

	view = view_by_name(test, ctx->pfile, names, 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->f.parent->gets), gets + 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->f.parent->puts), puts);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine + 1);
	KUNIT_EXPECT_EQ(test, view->f_flags & O_ACCMODE, O_RDONLY);
	KUNIT_EXPECT_FALSE(test, view->f_mode & FMODE_WRITE);
	KUNIT_EXPECT_TRUE(test, view->f_mode & FMODE_PREAD);

	KUNIT_EXPECT_STREQ(test, statsfd_kunit_fdinfo(test, view),
			   "statsfd-id:\tvm-7-0\n"
			   "statsfd-schema:\tkunit.parent\n"
			   "statsfd-view:\t2\n");

	/* Outside its own (smaller) file: -EINVAL, as for any stats file. */
	KUNIT_EXPECT_EQ(test, vfs_llseek(view, 0, SEEK_END),
			SFK_DATA_OFFSET + 40 + 2 * SFK_STRIDE);
	KUNIT_EXPECT_EQ(test, vfs_llseek(view, SFK_DATA_OFFSET + 41 +
						2 * SFK_STRIDE, SEEK_SET),
			-EINVAL);
}

/* ---------------------------------------------------------------------
 * STATSFD_IOC_VIEW errors: each returns its errno, FAIL_ROUNDS times,
 * makes no file (no reference taken on the source) and leaves nothing
 * allocated (kmemleak runs after the suite).
 */

static void expect_fails(struct kunit *test, struct file *file,
			 const struct statsfd_view_args *args, long err)
{
	struct view_ctx *ctx = test->priv;
	int gets = atomic_read(&ctx->f.parent->gets) +
		   atomic_read(&ctx->f.child[0]->gets);
	unsigned int i;
	long ret;

	for (i = 0; i < FAIL_ROUNDS; i++) {
		ret = view_ioctl(test, file, args);
		drop_fd(ret);
		KUNIT_ASSERT_EQ_MSG(test, ret, err, "round %u", i);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->f.parent->gets) +
				      atomic_read(&ctx->f.child[0]->gets),
			gets);
}

static void statsfd_view_unknown_flags_einval(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const u32 idx[] = { 0 };
	struct statsfd_view_args args = {
		.count = 1, .list = put_indices(test, idx, 1),
	};

	args.flags = 1U << 1;
	expect_fails(test, ctx->cfile, &args, -EINVAL);
	args.flags = STATSFD_VIEW_BY_INDEX | (1U << 31);
	expect_fails(test, ctx->cfile, &args, -EINVAL);
	/* The same arguments with known flags work. */
	args.flags = STATSFD_VIEW_BY_INDEX;
	view_open(test, ctx->cfile, args.flags, args.count, args.list);
}

static void statsfd_view_reserved_nonzero_einval(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "exits" };
	struct statsfd_view_args args = {
		.count = 1, .list = put_names(test, names, 1),
	};

	args.reserved[0] = 1;
	expect_fails(test, ctx->cfile, &args, -EINVAL);
	args.reserved[0] = 0;
	args.reserved[1] = 1ULL << 63;
	expect_fails(test, ctx->cfile, &args, -EINVAL);
}

static void statsfd_view_count_zero_einval(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "exits" };
	struct statsfd_view_args args = { .list = put_names(test, names, 1) };

	expect_fails(test, ctx->cfile, &args, -EINVAL);
	/* Even with no list at all. */
	args.list = 0;
	args.flags = STATSFD_VIEW_BY_INDEX;
	expect_fails(test, ctx->cfile, &args, -EINVAL);
}

static void statsfd_view_count_above_num_desc_e2big(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const u32 idx[] = { 0, 1, 2, 3, 4, 5, 6, 7, 0 };
	struct statsfd_view_args args = {
		.flags = STATSFD_VIEW_BY_INDEX, .count = 9,
		.list = put_indices(test, idx, 9),
	};
	struct file *a;

	expect_fails(test, ctx->cfile, &args, -E2BIG);
	args.count = U32_MAX;
	expect_fails(test, ctx->cfile, &args, -E2BIG);
	/* A view has as many stats as it selected. */
	a = view_by_name(test, ctx->cfile, view_a_names, 4);
	args.count = 5;
	expect_fails(test, a, &args, -E2BIG);
}

static void statsfd_view_unknown_name_enoent(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	/* Known names first: the failure comes after allocating. */
	static const char *const names[] = { "exits", "lin", "exit" };
	static const char *const other[] = { "exits_sum" };
	/* Fits in name_size (47 characters) but is no stat. */
	static const char *const long_name[] = {
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefg",
	};
	static const char *const empty[] = { "" };
	static const char *const not_in_a[] = { "exits", "blocking" };
	struct statsfd_view_args args = {
		.count = 3, .list = put_names(test, names, 3),
	};
	struct file *a;

	expect_fails(test, ctx->cfile, &args, -ENOENT);
	/* A stat of the parent is not one of the child. */
	args.count = 1;
	args.list = put_names(test, other, 1);
	expect_fails(test, ctx->cfile, &args, -ENOENT);
	args.list = put_names(test, long_name, 1);
	expect_fails(test, ctx->cfile, &args, -ENOENT);
	args.list = put_names(test, empty, 1);
	expect_fails(test, ctx->cfile, &args, -ENOENT);
	/* A view knows only its own stats. */
	a = view_by_name(test, ctx->cfile, view_a_names, 4);
	args.count = 2;
	args.list = put_names(test, not_in_a, 2);
	expect_fails(test, a, &args, -ENOENT);
}

static void statsfd_view_index_out_of_range_enoent(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const u32 idx[] = { 0, 7, SFK_CHILD_NUM_DESCS };
	static const u32 huge[] = { U32_MAX };
	static const u32 in_view[] = { 4 };
	struct statsfd_view_args args = {
		.flags = STATSFD_VIEW_BY_INDEX, .count = 3,
		.list = put_indices(test, idx, 3),
	};
	struct file *a;

	expect_fails(test, ctx->cfile, &args, -ENOENT);
	args.count = 1;
	args.list = put_indices(test, huge, 1);
	expect_fails(test, ctx->cfile, &args, -ENOENT);
	/* 4 is a stat of the source, not of a view of 4 stats. */
	a = view_by_name(test, ctx->cfile, view_a_names, 4);
	args.list = put_indices(test, in_view, 1);
	expect_fails(test, a, &args, -ENOENT);
}

static void statsfd_view_name_without_nul_enametoolong(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	char name[SFK_NAME_SIZE + 1];
	const char *names[2];
	struct statsfd_view_args args = { .count = 2 };

	names[0] = "exits";
	names[1] = name;

	/* name_size bytes without a NUL (the NUL comes one later). */
	memset(name, 'x', SFK_NAME_SIZE);
	name[SFK_NAME_SIZE] = 0;
	args.list = put_names(test, names, 2);
	expect_fails(test, ctx->cfile, &args, -ENAMETOOLONG);
	/* A known name followed by more characters is no longer known. */
	memcpy(name, "cycles", 6);
	args.list = put_names(test, names, 2);
	expect_fails(test, ctx->cfile, &args, -ENAMETOOLONG);
}

static void statsfd_view_same_stat_twice_eexist(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "exits", "lin", "exits" };
	static const u32 idx[] = { 2, 5, 6, 5 };
	static const u32 in_view[] = { 0, 0 };
	struct statsfd_view_args args = {
		.count = 3, .list = put_names(test, names, 3),
	};
	struct file *a;

	expect_fails(test, ctx->cfile, &args, -EEXIST);
	args.flags = STATSFD_VIEW_BY_INDEX;
	args.count = 4;
	args.list = put_indices(test, idx, 4);
	expect_fails(test, ctx->cfile, &args, -EEXIST);
	a = view_by_name(test, ctx->cfile, view_a_names, 4);
	args.count = 2;
	args.list = put_indices(test, in_view, 2);
	expect_fails(test, a, &args, -EEXIST);
}

static void statsfd_view_bad_pointer_efault(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	static const char *const names[] = { "exits", "lin" };
	struct statsfd_view_args args = { .count = 2 };
	u64 __user *list = (u64 __user *)(ctx->ubuf + U_LIST);
	int gets = atomic_read(&ctx->f.child[0]->gets);
	unsigned int i;
	long ret;

	/* The argument itself. */
	for (i = 0; i < FAIL_ROUNDS; i++) {
		ret = ctx->cfile->f_op->unlocked_ioctl(ctx->cfile,
						       STATSFD_IOC_VIEW,
						       (unsigned long)ctx->bad);
		drop_fd(ret);
		KUNIT_ASSERT_EQ(test, ret, -EFAULT);
		ret = ctx->cfile->f_op->unlocked_ioctl(ctx->cfile,
						       STATSFD_IOC_VIEW, 0);
		drop_fd(ret);
		KUNIT_ASSERT_EQ(test, ret, -EFAULT);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->f.child[0]->gets), gets);

	/* The list, of names and of indices. */
	args.list = (u64)(uintptr_t)ctx->bad;
	expect_fails(test, ctx->cfile, &args, -EFAULT);
	args.list = 0;
	expect_fails(test, ctx->cfile, &args, -EFAULT);
	args.flags = STATSFD_VIEW_BY_INDEX;
	args.list = (u64)(uintptr_t)ctx->bad;
	expect_fails(test, ctx->cfile, &args, -EFAULT);
	/* A name, after a good one. */
	args.flags = 0;
	args.list = put_names(test, names, 2);
	KUNIT_ASSERT_EQ(test, put_user((u64)(uintptr_t)ctx->bad, list + 1), 0);
	expect_fails(test, ctx->cfile, &args, -EFAULT);
	KUNIT_ASSERT_EQ(test, put_user(0ULL, list + 1), 0);
	expect_fails(test, ctx->cfile, &args, -EFAULT);
}

static void statsfd_view_other_ioctl_enotty(struct kunit *test)
{
	struct view_ctx *ctx = test->priv;
	struct file *f = ctx->cfile;

	KUNIT_EXPECT_EQ(test, f->f_op->unlocked_ioctl(f, _IO(STATSFD_IOC_MAGIC,
							     0x01), 0),
			-ENOTTY);
	KUNIT_EXPECT_EQ(test,
			f->f_op->unlocked_ioctl(f, _IOW(STATSFD_IOC_MAGIC, 0x02,
						    struct statsfd_view_args),
						(unsigned long)ctx->ubuf),
			-ENOTTY);
	/* The VM provider's STATSFD_VM_GET_STATS_FD is no stats fd ioctl. */
	KUNIT_EXPECT_EQ(test, f->f_op->unlocked_ioctl(f, _IO(0xB9, 0xce), 0),
			-ENOTTY);
}

static struct kunit_case statsfd_view_cases[] = {
	KUNIT_CASE(statsfd_poll_fresh_file_has_no_event),
	KUNIT_CASE(statsfd_poll_child_added_or_removed_is_an_event),
	KUNIT_CASE(statsfd_poll_header_read_clears),
	KUNIT_CASE(statsfd_poll_data_read_clears),
	KUNIT_CASE(statsfd_poll_id_or_descriptor_read_keeps_event),
	KUNIT_CASE(statsfd_poll_change_during_read_stays_pending),
	KUNIT_CASE(statsfd_poll_failed_read_keeps_event),
	KUNIT_CASE(statsfd_poll_each_file_has_its_own_generation),
	KUNIT_CASE(statsfd_poll_hangup_is_sticky_and_idempotent),
	KUNIT_CASE(statsfd_poll_wakes_on_children_and_hangup_only),
	KUNIT_CASE(statsfd_view_by_name_matches_image),
	KUNIT_CASE(statsfd_view_by_index_matches_image),
	KUNIT_CASE(statsfd_view_of_every_stat_reversed),
	KUNIT_CASE(statsfd_view_of_view_matches_image),
	KUNIT_CASE(statsfd_view_with_aggregates_matches_image),
	KUNIT_CASE(statsfd_view_with_sample_ns_and_generation),
	KUNIT_CASE(statsfd_view_copies_only_what_it_selects),
	KUNIT_CASE(statsfd_view_file_pins_source_and_shows_fdinfo),
	KUNIT_CASE(statsfd_view_unknown_flags_einval),
	KUNIT_CASE(statsfd_view_reserved_nonzero_einval),
	KUNIT_CASE(statsfd_view_count_zero_einval),
	KUNIT_CASE(statsfd_view_count_above_num_desc_e2big),
	KUNIT_CASE(statsfd_view_unknown_name_enoent),
	KUNIT_CASE(statsfd_view_index_out_of_range_enoent),
	KUNIT_CASE(statsfd_view_name_without_nul_enametoolong),
	KUNIT_CASE(statsfd_view_same_stat_twice_eexist),
	KUNIT_CASE(statsfd_view_bad_pointer_efault),
	KUNIT_CASE(statsfd_view_other_ioctl_enotty),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_view, view_init);
