// SPDX-License-Identifier: GPL-2.0
/* statsfd_host: placeholder, replaced by the real net source. */
#include <linux/err.h>
#include <linux/fs.h>

#include "internal.h"

int statsfd_host_net_init(void)
{
	return 0;
}

void statsfd_host_net_exit(void)
{
}

struct file *statsfd_host_net_file(s32 ifindex)
{
	return ERR_PTR(-ENODEV);
}
