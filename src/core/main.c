// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd core module: self-describing binary stats fds for any subsystem.
 *
 * The core registers nothing user-visible by itself: providers (such as
 * statsfd_vm) declare schemas and sources and hand out stats fds.  The
 * only thing the core creates is the debugfs directory "statsfd", which
 * providers may use as the parent of their text views.
 */

#include <linux/init.h>
#include <linux/module.h>

#include "internal.h"

static int __init statsfd_init(void)
{
	return statsfd_debugfs_init();
}

static void __exit statsfd_exit(void)
{
	statsfd_debugfs_exit();
}

module_init(statsfd_init);
module_exit(statsfd_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("statsfd: self-describing binary stats file descriptors");
