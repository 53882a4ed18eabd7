// SPDX-License-Identifier: GPL-2.0
/* statsfd_host: placeholder, replaced by the real cpu source. */
#include <linux/err.h>
#include <linux/fs.h>

#include "internal.h"

int statsfd_host_cpu_init(void)
{
	return 0;
}

void statsfd_host_cpu_exit(void)
{
}

struct file *statsfd_host_cpu_file(u32 cpu)
{
	return ERR_PTR(-ENODEV);
}
