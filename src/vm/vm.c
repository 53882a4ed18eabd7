// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_vm VMs and their vCPUs: creation, the VM and vCPU fds and their
 * ioctls, and the lifetime of both.  One concern, as KVM keeps it in
 * kvm_main.c: a VM creates and frees its vCPUs, and every vCPU fd and
 * stats fd pins its VM.
 *
 * A VM is reference counted like a struct kvm: the VM fd, every vCPU fd and
 * every stats fd of the VM or of one of its vCPUs hold a reference, and the
 * VM is freed, vCPUs included, when the last one is dropped.  A vCPU lives
 * as long as its VM, like a struct kvm_vcpu: its fd and its stats fds hold
 * a reference on the VM, not on the vCPU.
 */
#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
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
static void statsfd_vm_vm_get(struct statsfd_vm_vm *vm)
{
	refcount_inc(&vm->users);
}

/* "statsfd-vcpu:" and a u32 in decimal, like KVM's "kvm-vcpu:%d". */
#define STATSFD_VM_VCPU_NAME_LEN (13 + 10 + 1)

/* Every vCPU comes from here, aligned as struct statsfd_vm_vcpu asks. */
static struct kmem_cache *statsfd_vm_vcpu_cache;

/**
 * statsfd_vm_vcpu_cache_init() - create the vCPU slab cache, at module load
 *
 * Return: 0 or -ENOMEM.
 */
int statsfd_vm_vcpu_cache_init(void)
{
	statsfd_vm_vcpu_cache =
		kmem_cache_create("statsfd_vm_vcpu",
				  sizeof(struct statsfd_vm_vcpu),
				  __alignof__(struct statsfd_vm_vcpu),
				  SLAB_ACCOUNT, NULL);
	return statsfd_vm_vcpu_cache ? 0 : -ENOMEM;
}

/**
 * statsfd_vm_vcpu_cache_exit() - destroy the vCPU slab cache, at unload
 */
void statsfd_vm_vcpu_cache_exit(void)
{
	kmem_cache_destroy(statsfd_vm_vcpu_cache);
	statsfd_vm_vcpu_cache = NULL;
}

/* Free a vCPU, when its VM is freed: no fd refers to either any more. */
static void statsfd_vm_vcpu_free(struct statsfd_vm_vcpu *vcpu)
{
	/* Also removes the text view and detaches @vcpu from its VM. */
	statsfd_source_destroy(&vcpu->src);
	mutex_destroy(&vcpu->mutex);
	kmem_cache_free(statsfd_vm_vcpu_cache, vcpu);
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
static void statsfd_vm_vm_put(struct statsfd_vm_vm *vm)
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
static void statsfd_vm_vm_close_handle(struct statsfd_vm_vm *vm)
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

/*
 * Every stats fd of the VM or of one of its vCPUs pins the VM, and counts
 * in the VM's and the device's stats_fds_open; both counters are updated
 * from any thread that opens or closes an fd: the VM's in a window under
 * its stats lock, the device's with statsfd_vm_counter_add().  (The system
 * source's own fds count only in the device's.)
 */
static void statsfd_vm_stats_fd_get(struct statsfd_vm_vm *vm)
{
	statsfd_vm_vm_get(vm);
	statsfd_vm_vm_stat_add(vm, &vm->stats.stats_fds_open, 1);
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.stats_fds_open, 1);
}

static void statsfd_vm_stats_fd_put(struct statsfd_vm_vm *vm)
{
	statsfd_vm_vm_stat_add(vm, &vm->stats.stats_fds_open, -1);
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.stats_fds_open, -1);
	/* May free the VM, its vCPUs and their sources with it. */
	statsfd_vm_vm_put(vm);
}

static void statsfd_vm_vm_src_get(struct statsfd_source *src)
{
	statsfd_vm_stats_fd_get(container_of(src, struct statsfd_vm_vm, src));
}

static void statsfd_vm_vm_src_put(struct statsfd_source *src)
{
	statsfd_vm_stats_fd_put(container_of(src, struct statsfd_vm_vm, src));
}

static const struct statsfd_source_ops statsfd_vm_vm_src_ops = {
	.owner = THIS_MODULE,
	.get = statsfd_vm_vm_src_get,
	.put = statsfd_vm_vm_src_put,
};

static void statsfd_vm_vcpu_src_get(struct statsfd_source *src)
{
	statsfd_vm_stats_fd_get(container_of(src, struct statsfd_vm_vcpu,
					     src)->vm);
}

static void statsfd_vm_vcpu_src_put(struct statsfd_source *src)
{
	statsfd_vm_stats_fd_put(container_of(src, struct statsfd_vm_vcpu,
					     src)->vm);
}

static const struct statsfd_source_ops statsfd_vm_vcpu_src_ops = {
	.owner = THIS_MODULE,
	.get = statsfd_vm_vcpu_src_get,
	.put = statsfd_vm_vcpu_src_put,
};

static long statsfd_vm_vcpu_ioctl_run(struct statsfd_vm_vcpu *vcpu,
				      struct statsfd_vm_run __user *urun)
{
	struct statsfd_vm_run run;
	u64 exits_done;
	int ret;

	if (copy_from_user(&run, urun, sizeof(run)))
		return -EFAULT;
	ret = statsfd_vm_run_check(&run);
	if (ret)
		return ret;

	/*
	 * One thread at a time runs a vCPU, as with KVM's vcpu->mutex: that
	 * thread is then the only writer of the vCPU's stats.  The wait is
	 * killable, as KVM's is, not interruptible: a signal that is not
	 * fatal stays pending and ends the run before its first exit, so that
	 * every -EINTR of RUN is a counted signal exit.  A fatal signal
	 * returns at once; nobody is left to see the result.
	 */
	if (mutex_lock_killable(&vcpu->mutex))
		return -EINTR;
	ret = statsfd_vm_vcpu_run(vcpu, &run, &exits_done);
	mutex_unlock(&vcpu->mutex);

	/*
	 * The run has happened and is counted whatever the copy does; -EFAULT
	 * only says that its result could not be reported.
	 */
	if (put_user(exits_done, &urun->exits_done))
		return -EFAULT;
	return ret;
}

static long statsfd_vm_vcpu_ioctl(struct file *file, unsigned int cmd,
				  unsigned long arg)
{
	struct statsfd_vm_vcpu *vcpu = file->private_data;

	switch (cmd) {
	case STATSFD_VM_RUN:
		return statsfd_vm_vcpu_ioctl_run(vcpu, (void __user *)arg);
	case STATSFD_VM_KICK:
		if (arg)
			return -EINVAL;
		statsfd_vm_vcpu_kick(vcpu);
		return 0;
	case STATSFD_VM_GET_STATS_FD:
		return statsfd_vm_get_stats_fd(&vcpu->src, arg);
	default:
		return -ENOTTY;
	}
}

static int statsfd_vm_vcpu_release(struct inode *inode, struct file *file)
{
	struct statsfd_vm_vcpu *vcpu = file->private_data;

	statsfd_vm_vm_close_handle(vcpu->vm);
	return 0;
}

static const struct file_operations statsfd_vm_vcpu_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = statsfd_vm_vcpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = statsfd_vm_vcpu_release,
	.llseek = noop_llseek,
};

static bool
statsfd_vm_create_vcpu_valid(const struct statsfd_vm_create_vcpu *args)
{
	return !args->flags &&
	       !memchr_inv(args->reserved, 0, sizeof(args->reserved));
}

/*
 * The vCPU's text view goes inside its VM's directory, if the VM has one.
 * Called with vm->lock held; the VM's view lasts until the VM is freed.
 */
static void statsfd_vm_vcpu_debugfs_create(struct statsfd_vm_vcpu *vcpu)
{
	struct dentry *dir = statsfd_source_debugfs_dir(&vcpu->vm->src);
	char name[16];

	if (!dir)
		return;
	snprintf(name, sizeof(name), "vcpu-%u", vcpu->id);
	statsfd_source_debugfs_create(&vcpu->src, name, dir);
}

/**
 * statsfd_vm_create_vcpu() - STATSFD_VM_CREATE_VCPU: add a vCPU to a VM
 * @vm: the VM, pinned by the caller's VM fd
 * @uarg: the struct statsfd_vm_create_vcpu argument
 *
 * Creation is serialized per VM by @vm->lock, which makes the duplicate
 * check and the insertion one step; as for VMs, the vCPU becomes visible
 * only once nothing can fail, and its fd is installed last.  The id's slot
 * in @vm->vcpus is reserved up front (the only step of the insertion that
 * allocates), so the final store cannot fail.
 *
 * Return: the new vCPU fd, or -EFAULT, -EINVAL (flags, reserved fields, or
 * vcpu_id not below the VM's max_vcpus), -EEXIST (vcpu_id already used),
 * -ENOMEM, -EMFILE, -EINTR (a signal arrived while waiting for @vm->lock).
 */
static int statsfd_vm_create_vcpu(struct statsfd_vm_vm *vm,
				  const void __user *uarg)
{
	char name[STATSFD_VM_VCPU_NAME_LEN];
	struct statsfd_vm_create_vcpu args;
	struct statsfd_vm_vcpu *vcpu;
	struct file *file;
	int fd, ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (!statsfd_vm_create_vcpu_valid(&args) ||
	    args.vcpu_id >= vm->max_vcpus)
		return -EINVAL;

	if (mutex_lock_interruptible(&vm->lock))
		return -EINTR;
	/* A reserved slot also reads as NULL, but only we reserve, under @lock. */
	if (xa_load(&vm->vcpus, args.vcpu_id)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	ret = xa_reserve(&vm->vcpus, args.vcpu_id, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto out_unlock;

	/* The cache is SLAB_ACCOUNT: charged to the creator's memory cgroup. */
	vcpu = kmem_cache_zalloc(statsfd_vm_vcpu_cache, GFP_KERNEL);
	if (!vcpu) {
		ret = -ENOMEM;
		goto out_release;
	}
	vcpu->vm = vm;
	vcpu->id = args.vcpu_id;
	mutex_init(&vcpu->mutex);
	atomic_set(&vcpu->kick, 0);
	init_waitqueue_head(&vcpu->wq);

	/* Zero, like the rest: the core adds the mappable page they go to. */
	ret = statsfd_source_init_snapshot(&vcpu->src, &statsfd_vm_vcpu_schema,
					   &vcpu->stats, &statsfd_vm_vcpu_src_ops,
					   "%s/vcpu-%u",
					   statsfd_source_id(&vm->src), vcpu->id);
	if (ret)
		goto out_free;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto out_destroy;
	}
	snprintf(name, sizeof(name), "statsfd-vcpu:%u", vcpu->id);
	file = anon_inode_getfile(name, &statsfd_vm_vcpu_fops, vcpu, O_RDWR);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_put_fd;
	}

	/* Nothing fails from here on.  The vCPU fd's reference and handle: */
	statsfd_vm_vm_get(vm);
	atomic_inc(&vm->handles);
	/* Into the reserved slot: allocates nothing, cannot fail. */
	xa_store(&vm->vcpus, vcpu->id, vcpu, GFP_KERNEL_ACCOUNT);
	statsfd_vm_vcpu_debugfs_create(vcpu);
	statsfd_vm_vm_stat_add(vm, &vm->stats.vcpus_created, 1);
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.vcpus_created, 1);
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.vcpus_alive, 1);
	/*
	 * Last: this wakes the VM's pollers (EPOLLPRI), who must find the
	 * counters that announce the vCPU already updated.
	 */
	statsfd_source_add_child(&vm->src, &vcpu->src);
	mutex_unlock(&vm->lock);

	fd_install(fd, file);
	return fd;

out_put_fd:
	put_unused_fd(fd);
out_destroy:
	statsfd_source_destroy(&vcpu->src);
out_free:
	mutex_destroy(&vcpu->mutex);
	kmem_cache_free(statsfd_vm_vcpu_cache, vcpu);
out_release:
	xa_release(&vm->vcpus, args.vcpu_id);
out_unlock:
	mutex_unlock(&vm->lock);
	return ret;
}

static long statsfd_vm_vm_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	struct statsfd_vm_vm *vm = file->private_data;

	switch (cmd) {
	case STATSFD_VM_CREATE_VCPU:
		return statsfd_vm_create_vcpu(vm, (const void __user *)arg);
	case STATSFD_VM_GET_STATS_FD:
		return statsfd_vm_get_stats_fd(&vm->src, arg);
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
