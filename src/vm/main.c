// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_vm: a synthetic VM/vCPU provider for statsfd.  This file is the
 * module: its parameters, the /dev/statsfd_vm character device, its ioctls
 * and the device-wide (system) stats source.
 */
#include <linux/cdev.h>
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/uidgid.h>

#include "compat.h"
#include "internal.h"

#define STATSFD_VM_NAME "statsfd_vm"

unsigned int statsfd_vm_max_vms = 1024;
module_param_named(max_vms, statsfd_vm_max_vms, uint, 0644);
MODULE_PARM_DESC(max_vms, "Most VMs alive at once (default 1024)");

unsigned int statsfd_vm_max_vcpus = 256;
module_param_named(max_vcpus, statsfd_vm_max_vcpus, uint, 0644);
MODULE_PARM_DESC(max_vcpus,
		 "vCPU ids of a new VM are below this (default 256)");

unsigned int statsfd_vm_halt_poll_ns_max = 200000;
module_param_named(halt_poll_ns_max, statsfd_vm_halt_poll_ns_max, uint, 0644);
MODULE_PARM_DESC(halt_poll_ns_max,
		 "Largest halt_poll_ns a run may ask for (default 200000)");

#ifdef STATSFD_VM_TEST_KNOBS
/* Only in the tests' and the bench's builds: see Kbuild. */
bool statsfd_vm_update_windows = true;
module_param_named(update_windows, statsfd_vm_update_windows, bool, 0644);
MODULE_PARM_DESC(update_windows,
		 "Test build only: group each vCPU exit's stats updates in an update window (default Y); N to measure their cost or to see torn snapshots");
#endif

bool statsfd_vm_debugfs = true;
module_param_named(debugfs, statsfd_vm_debugfs, bool, 0644);
MODULE_PARM_DESC(debugfs, "Per-stat debugfs view of new VMs (default Y)");

static int statsfd_vm_group = -1;
module_param_named(group, statsfd_vm_group, int, 0444);
MODULE_PARM_DESC(group,
		 "Group that may open the device (default -1: root only)");

struct statsfd_vm_sys_stats statsfd_vm_sys_stats;
struct statsfd_source statsfd_vm_sys_src;
struct dentry *statsfd_vm_debugfs_dir;

/* The stats fds of every source are counted here, whatever their source. */
static void statsfd_vm_sys_get(struct statsfd_source *src)
{
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.stats_fds_open, 1);
}

static void statsfd_vm_sys_put(struct statsfd_source *src)
{
	statsfd_vm_counter_add(&statsfd_vm_sys_stats.stats_fds_open, -1);
}

/*
 * The system source lives as long as the module; a stats fd on it pins
 * the module through @owner, which is all the lifetime it needs.
 */
static const struct statsfd_source_ops statsfd_vm_sys_ops = {
	.owner = THIS_MODULE,
	.get = statsfd_vm_sys_get,
	.put = statsfd_vm_sys_put,
};

static long statsfd_vm_dev_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	switch (cmd) {
	case STATSFD_VM_GET_API_VERSION:
		if (arg)
			return -EINVAL;
		return STATSFD_VM_API_VERSION;
	case STATSFD_VM_CREATE_VM:
		return statsfd_vm_create_vm((const void __user *)arg);
	case STATSFD_VM_GET_STATS_FD:
		return statsfd_vm_get_stats_fd(&statsfd_vm_sys_src, arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations statsfd_vm_dev_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.unlocked_ioctl = statsfd_vm_dev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/*
 * The device node.  A misc device cannot give its node a group: misc's
 * class only sets the mode, and devtmpfs creates the node inside
 * misc_register(), before anything could change it.  So the provider has
 * its own one-minor char device, whose device_type names the node, its
 * mode and its group; devtmpfs and udev (DEVMODE/DEVGID in the uevent)
 * both take them from here.
 */
static dev_t statsfd_vm_devt;

/**
 * struct statsfd_vm_node - the char device behind /dev/statsfd_vm
 * @dev: the device; its release frees the node
 * @cdev: the char device, a kobject child of @dev, so that @dev outlives it
 */
struct statsfd_vm_node {
	struct device dev;
	struct cdev cdev;
};

static struct statsfd_vm_node *statsfd_vm_node;

static struct class statsfd_vm_class = {
	.name = STATSFD_VM_NAME,
};

static char *statsfd_vm_devnode(STATSFD_VM_DEVNODE_CONST struct device *dev,
				umode_t *mode, kuid_t *uid, kgid_t *gid)
{
	if (mode)
		*mode = statsfd_vm_group < 0 ? 0600 : 0660;
	if (gid && statsfd_vm_group >= 0)
		*gid = make_kgid(&init_user_ns, statsfd_vm_group);
	return NULL;
}

static const struct device_type statsfd_vm_devtype = {
	.name = STATSFD_VM_NAME,
	.devnode = statsfd_vm_devnode,
};

static void statsfd_vm_node_release(struct device *dev)
{
	kfree(container_of(dev, struct statsfd_vm_node, dev));
}

static int __init statsfd_vm_chrdev_init(void)
{
	struct statsfd_vm_node *node;
	int ret;

	ret = alloc_chrdev_region(&statsfd_vm_devt, 0, 1, STATSFD_VM_NAME);
	if (ret)
		return ret;
	ret = class_register(&statsfd_vm_class);
	if (ret)
		goto out_region;

	node = kzalloc(sizeof(*node), GFP_KERNEL);
	if (!node) {
		ret = -ENOMEM;
		goto out_class;
	}
	device_initialize(&node->dev);
	node->dev.devt = statsfd_vm_devt;
	node->dev.class = &statsfd_vm_class;
	node->dev.type = &statsfd_vm_devtype;
	node->dev.release = statsfd_vm_node_release;
	ret = dev_set_name(&node->dev, STATSFD_VM_NAME);
	if (ret)
		goto out_put;

	cdev_init(&node->cdev, &statsfd_vm_dev_fops);
	node->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&node->cdev, &node->dev);
	if (ret)
		goto out_put;
	statsfd_vm_node = node;
	return 0;

out_put:
	put_device(&node->dev);
out_class:
	class_unregister(&statsfd_vm_class);
out_region:
	unregister_chrdev_region(statsfd_vm_devt, 1);
	return ret;
}

static void statsfd_vm_chrdev_exit(void)
{
	cdev_device_del(&statsfd_vm_node->cdev, &statsfd_vm_node->dev);
	put_device(&statsfd_vm_node->dev);
	statsfd_vm_node = NULL;
	class_unregister(&statsfd_vm_class);
	unregister_chrdev_region(statsfd_vm_devt, 1);
}

/*
 * The text view lives in the core's debugfs directory when it has one:
 * <debugfs>/statsfd/statsfd_vm/{system,vm-<pid>-<n>/vcpu-<id>}/<stat>.
 * The debugfs parameter decides at load whether the directory (and the
 * system view) exists at all, and then at each VM's creation whether that
 * VM and its vCPUs get a view: turning it off spares VM churn the cost.
 * debugfs errors are not fatal, as everywhere in the kernel: the view is
 * for quick scripts, the stats fds do not depend on it.
 */
static void __init statsfd_vm_debugfs_init(void)
{
	struct dentry *dir;

	if (!statsfd_vm_debugfs)
		return;
	dir = debugfs_create_dir(STATSFD_VM_NAME, statsfd_debugfs_root());
	if (IS_ERR_OR_NULL(dir))
		return;
	statsfd_vm_debugfs_dir = dir;
	if (statsfd_source_debugfs_create(&statsfd_vm_sys_src, "system", dir))
		pr_warn("no debugfs view of the system stats\n");
}

static void statsfd_vm_debugfs_exit(void)
{
	if (!statsfd_vm_debugfs_dir)
		return;
	statsfd_source_debugfs_remove(&statsfd_vm_sys_src);
	debugfs_remove(statsfd_vm_debugfs_dir);
	statsfd_vm_debugfs_dir = NULL;
}

static int __init statsfd_vm_init(void)
{
	int ret;

	if (statsfd_vm_group < -1 ||
	    (statsfd_vm_group >= 0 &&
	     !gid_valid(make_kgid(&init_user_ns, statsfd_vm_group)))) {
		pr_err("invalid group %d\n", statsfd_vm_group);
		return -EINVAL;
	}

	ret = statsfd_vm_vcpu_cache_init();
	if (ret)
		return ret;
	ret = statsfd_vm_schemas_init();
	if (ret)
		goto out_cache;
	ret = statsfd_source_init(&statsfd_vm_sys_src, &statsfd_vm_sys_schema,
				  &statsfd_vm_sys_stats, &statsfd_vm_sys_ops,
				  "%s", STATSFD_VM_NAME);
	if (ret)
		goto out_schemas;
	statsfd_vm_debugfs_init();

	/* Last: from here on, userspace can open the device. */
	ret = statsfd_vm_chrdev_init();
	if (ret)
		goto out_source;
	if (!STATSFD_VM_STATS_ENABLED)
		pr_info("built with STATSFD_VM_NO_STATS: vCPU stats stay 0\n");
	return 0;

out_source:
	statsfd_vm_debugfs_exit();
	statsfd_source_destroy(&statsfd_vm_sys_src);
out_schemas:
	statsfd_vm_schemas_exit();
out_cache:
	statsfd_vm_vcpu_cache_exit();
	return ret;
}

static void __exit statsfd_vm_exit(void)
{
	statsfd_vm_chrdev_exit();
	/* Every VM, vCPU and stats fd pins the module: none can be left. */
	WARN_ON(READ_ONCE(statsfd_vm_sys_stats.vms_alive));
	statsfd_vm_debugfs_exit();
	statsfd_source_destroy(&statsfd_vm_sys_src);
	statsfd_vm_schemas_exit();
	statsfd_vm_vcpu_cache_exit();
}

module_init(statsfd_vm_init);
module_exit(statsfd_vm_exit);

MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(STATSFD_NS);
MODULE_DESCRIPTION("statsfd VM/vCPU provider: a synthetic hypervisor");
MODULE_AUTHOR("statsfd developers");
