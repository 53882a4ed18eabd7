// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_vm VMs: creation, the VM fd and the VM's lifetime.
 *
 * A VM is reference counted like a struct kvm: the VM fd, every vCPU fd and
 * every stats fd of the VM or of one of its vCPUs hold a reference, and the
 * VM is freed, vCPUs included, when the last one is dropped.
 */
#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "internal.h"

/* VMs alive or being created; bounded by the max_vms parameter. */
static atomic_t statsfd_vm_nr_vms = ATOMIC_INIT(0);
/* Device-wide sequence number that makes VM ids unique. */
static atomic64_t statsfd_vm_seq = ATOMIC64_INIT(0);

static bool statsfd_vm_reserve_vm(void)
{
	unsigned int max = READ_ONCE(statsfd_vm_max_vms);
	int nr = atomic_read(&statsfd_vm_nr_vms);

	do {
		if (nr >= max)
			return false;
	} while (!atomic_try_cmpxchg(&statsfd_vm_nr_vms, &nr, nr + 1));
	return true;
}

static void statsfd_vm_unreserve_vm(void)
{
	atomic_dec(&statsfd_vm_nr_vms);
}

/**
 * statsfd_vm_vm_get() - take a reference on a VM
 * @vm: the VM, on which the caller already holds a reference
 */
void statsfd_vm_vm_get(struct statsfd_vm_vm *vm)
{
	refcount_inc(&vm->users);
}

static void statsfd_vm_vm_free(struct statsfd_vm_vm *vm)
{
	struct statsfd_vm_vcpu *vcpu;
	unsigned long id;
	s64 nr_vcpus = 0;

	/* The last reference is gone: nobody else can reach @vm->vcpus. */
	xa_for_each(&vm->vcpus, id, vcpu) {
		statsfd_vm_vcpu_free(vcpu);
		nr_vcpus++;
	}
	xa_destroy(&vm->vcpus);
	/* Before the system's pollers are woken by the VM's departure. */
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.vcpus_alive, -nr_vcpus);
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.vms_alive, -1);
	/* Also removes the text view and detaches @vm from the system. */
	statsfd_source_destroy(&vm->src);
	mutex_destroy(&vm->lock);
	kfree(vm);
	statsfd_vm_unreserve_vm();
}

/**
 * statsfd_vm_vm_put() - drop a reference on a VM, freeing it on the last
 * @vm: the VM
 *
 * Called from the release of a VM, vCPU or stats fd: process context.
 */
void statsfd_vm_vm_put(struct statsfd_vm_vm *vm)
{
	if (refcount_dec_and_test(&vm->users))
		statsfd_vm_vm_free(vm);
}

/**
 * statsfd_vm_vm_close_handle() - the VMM closed the VM fd or a vCPU fd
 * @vm: the VM; the caller's reference (the closed fd's) is dropped here
 *
 * When the last of the VMM's handles goes, the VM no longer exists for
 * its VMM: the sources of the VM and of every vCPU are hung up, so that
 * their stats fds, which may live on in a monitor, poll EPOLLHUP.  Their
 * values stay readable.  No vCPU can be created any more (that takes the
 * VM fd), so walking @vm->vcpus needs no lock.
 *
 * Context: process context (the release of the fd).
 */
void statsfd_vm_vm_close_handle(struct statsfd_vm_vm *vm)
{
	struct statsfd_vm_vcpu *vcpu;
	unsigned long id;

	if (atomic_dec_and_test(&vm->handles)) {
		statsfd_source_hangup(&vm->src);
		xa_for_each(&vm->vcpus, id, vcpu)
			statsfd_source_hangup(&vcpu->src);
	}
	statsfd_vm_vm_put(vm);
}

/**
 * statsfd_vm_count_stats_fd() - count a stats fd of @vm opening or closing
 * @vm: the VM the fd is on, or the VM of the vCPU it is on; pinned by the
 *	caller
 * @delta: 1 when the fd is created, -1 when it is released
 *
 * The one place that keeps the VM's and the device's stats_fds_open in
 * step for the stats fds of a VM and of its vCPUs (the system source's
 * own fds count only in the device's).  Both counters are updated from any
 * thread that opens or closes an fd: the VM's in a window under its stats
 * lock, the device's with statsfd_vm_counter_add().
 */
void statsfd_vm_count_stats_fd(struct statsfd_vm_vm *vm, s64 delta)
{
	statsfd_vm_vm_stat_add(vm, &vm->stats.stats_fds_open, delta);
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.stats_fds_open, delta);
}

/**
 * statsfd_vm_vm_stat_add() - add to one of a VM's own stats
 * @vm: the VM
 * @stat: a u64 of @vm->stats
 * @delta: what to add (negative to subtract)
 *
 * Any thread may update a VM's stats, so each update is one window under
 * @vm->stats_lock: the lock makes its holder the source's single writer
 * for the window's duration.  Not on the vCPU hot path.
 *
 * Context: any context that may take a spinlock.
 */
void statsfd_vm_vm_stat_add(struct statsfd_vm_vm *vm, u64 *stat, s64 delta)
{
	spin_lock(&vm->stats_lock);
	statsfd_update_begin(&vm->src);
	statsfd_stat_add(stat, delta);
	statsfd_update_end(&vm->src);
	spin_unlock(&vm->stats_lock);
}

/* A stats fd on the VM (or, see vcpu.c, on one of its vCPUs) pins it. */
static void statsfd_vm_vm_src_get(struct statsfd_source *src)
{
	struct statsfd_vm_vm *vm = container_of(src, struct statsfd_vm_vm, src);

	statsfd_vm_vm_get(vm);
	statsfd_vm_count_stats_fd(vm, 1);
}

static void statsfd_vm_vm_src_put(struct statsfd_source *src)
{
	struct statsfd_vm_vm *vm = container_of(src, struct statsfd_vm_vm, src);

	statsfd_vm_count_stats_fd(vm, -1);
	statsfd_vm_vm_put(vm);
}

static const struct statsfd_source_ops statsfd_vm_vm_src_ops = {
	.owner = THIS_MODULE,
	.get = statsfd_vm_vm_src_get,
	.put = statsfd_vm_vm_src_put,
};

static long statsfd_vm_vm_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	struct statsfd_vm_vm *vm = file->private_data;

	switch (cmd) {
	case STATSFD_VM_CREATE_VCPU:
		return statsfd_vm_create_vcpu(vm, (const void __user *)arg);
	case STATSFD_VM_GET_STATS_FD:
		if (arg)
			return -EINVAL;
		return statsfd_source_get_fd(&vm->src);
	default:
		return -ENOTTY;
	}
}

static int statsfd_vm_vm_release(struct inode *inode, struct file *file)
{
	statsfd_vm_vm_close_handle(file->private_data);
	return 0;
}

static const struct file_operations statsfd_vm_vm_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = statsfd_vm_vm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = statsfd_vm_vm_release,
	.llseek = noop_llseek,
};

static bool statsfd_vm_create_vm_valid(const struct statsfd_vm_create_vm *args)
{
	return !args->flags &&
	       !memchr_inv(args->reserved, 0, sizeof(args->reserved));
}

/**
 * statsfd_vm_create_vm() - STATSFD_VM_CREATE_VM: create a VM and its fd
 * @uarg: the struct statsfd_vm_create_vm argument
 *
 * Everything that can fail happens before the VM becomes visible (as a
 * child of the system source, in debugfs, in the system stats) and the fd
 * is installed last, so a failure leaves nothing behind.
 *
 * Return: the new VM fd, or -EFAULT, -EINVAL, -ENOSPC (max_vms VMs are
 * alive), -ENOMEM, -EMFILE.
 */
int statsfd_vm_create_vm(const void __user *uarg)
{
	struct statsfd_vm_create_vm args;
	struct dentry *dir = statsfd_vm_debugfs_dir;
	struct statsfd_vm_sys_stats *sys = &statsfd_vm_sys_stats;
	struct statsfd_vm_vm *vm;
	struct file *file;
	int fd, ret;
	u64 alive;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (!statsfd_vm_create_vm_valid(&args))
		return -EINVAL;
	if (!statsfd_vm_reserve_vm())
		return -ENOSPC;

	vm = kzalloc(sizeof(*vm), GFP_KERNEL_ACCOUNT);
	if (!vm) {
		ret = -ENOMEM;
		goto out_unreserve;
	}
	refcount_set(&vm->users, 1);
	atomic_set(&vm->handles, 1);
	mutex_init(&vm->lock);
	xa_init(&vm->vcpus);
	vm->max_vcpus = READ_ONCE(statsfd_vm_max_vcpus);
	spin_lock_init(&vm->stats_lock);

	/* Zero, like the rest: the core adds the mappable page they go to. */
	ret = statsfd_source_init_snapshot(&vm->src, &statsfd_vm_vm_schema,
					   &vm->stats, &statsfd_vm_vm_src_ops,
					   "vm-%d-%lld", task_tgid_nr(current),
					   atomic64_inc_return(&statsfd_vm_seq));
	if (ret)
		goto out_free;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto out_destroy;
	}
	file = anon_inode_getfile("statsfd-vm", &statsfd_vm_vm_fops, vm,
				  O_RDWR);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_put_fd;
	}

	/* Nothing fails from here on. */
	if (dir && READ_ONCE(statsfd_vm_debugfs))
		statsfd_source_debugfs_create(&vm->src,
					      statsfd_source_id(&vm->src), dir);
	statsfd_vm_counter_add(&sys->vms_created, 1);
	alive = statsfd_vm_counter_add(&sys->vms_alive, 1);
	statsfd_vm_counter_peak(&sys->max_vms_alive, alive);
	/* Last: wakes the system's pollers, who find the counters updated. */
	statsfd_source_add_child(&statsfd_vm_sys_src, &vm->src);

	fd_install(fd, file);
	return fd;

out_put_fd:
	put_unused_fd(fd);
out_destroy:
	statsfd_source_destroy(&vm->src);
out_free:
	mutex_destroy(&vm->lock);
	kfree(vm);
out_unreserve:
	statsfd_vm_unreserve_vm();
	return ret;
}
