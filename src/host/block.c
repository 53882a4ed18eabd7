// SPDX-License-Identifier: GPL-2.0
/* statsfd_host: placeholder, replaced by the real block source. */
#include <linux/err.h>
#include <linux/fs.h>

#include "internal.h"

int statsfd_host_block_init(void)
{
	return 0;
}

void statsfd_host_block_exit(void)
{
}

struct file *statsfd_host_block_file(u32 major, u32 minor)
{
	return ERR_PTR(-ENODEV);
}
