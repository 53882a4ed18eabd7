// SPDX-License-Identifier: GPL-2.0
/*
 * Writes a synthetic vCPU-like stats image to stdout, for the shell tests:
 *   mkimage [ID [kvm]]   (kvm: descriptors before data, as KVM lays out)
 */
#include <stdio.h>
#include <string.h>

#include "image.h"

int main(int argc, char **argv)
{
	static unsigned char buf[1 << 16];
	size_t n = img_build(buf, sizeof(buf), argc > 1 ? argv[1] : "vm-1-0/vcpu-0",
			     48, img_vcpu_stats, img_vcpu_nstats, NULL,
			     argc > 2 && !strcmp(argv[2], "kvm"));

	return fwrite(buf, 1, n, stdout) == n ? 0 : 1;
}
