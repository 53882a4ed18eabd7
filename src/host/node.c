// SPDX-License-Identifier: GPL-2.0
/* statsfd_host: placeholder, replaced by the real node source. */
#include <linux/err.h>
#include <linux/fs.h>

#include "internal.h"

int statsfd_host_node_init(void)
{
	return 0;
}

void statsfd_host_node_exit(void)
{
}

struct file *statsfd_host_node_file(void)
{
	return ERR_PTR(-ENODEV);
}
