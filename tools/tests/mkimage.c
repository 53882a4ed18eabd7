// SPDX-License-Identifier: GPL-2.0
/*
 * Writes a synthetic vCPU-like stats image to stdout, for the shell tests:
 *   mkimage [ID [kvm]]   (kvm: descriptors before data, as KVM lays out)
 *   mkimage ID snap [SAMPLE_NS [SCALE]]
 *	a source with update windows: the plain vCPU stats, then sample_ns
 *	(SAMPLE_NS, default 1000000000) and generation; every other value
 *	is its 1-based position times SCALE (default 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

int main(int argc, char **argv)
{
	static unsigned char buf[1 << 16];
	static struct img_stat snap[64];
	static uint64_t values[1024];
	const char *id = argc > 1 ? argv[1] : "vm-1-0/vcpu-0";
	unsigned int i, n = 0, words = 0;
	uint64_t scale;
	size_t len;

	if (argc > 2 && !strcmp(argv[2], "snap")) {
		scale = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
		for (i = 0; i < img_vcpu_nstats && n < 62; i++) {
			if (img_vcpu_stats[i].flags & STATSFD_AGG_MASK)
				continue;
			snap[n++] = img_vcpu_stats[i];
			words += img_vcpu_stats[i].size;
		}
		snap[n++] = (struct img_stat){ STATSFD_STAT_SAMPLE_NS,
			STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS, -9, 1, 0 };
		snap[n++] = (struct img_stat){ STATSFD_STAT_GENERATION,
			STATSFD_TYPE_CUMULATIVE, 0, 1, 0 };
		for (i = 0; i < words + 2; i++)
			values[i] = (i + 1) * scale;
		values[words] = argc > 3 ? strtoull(argv[3], NULL, 0) : 1000000000;
		len = img_build(buf, sizeof(buf), id, 48, snap, n, values, 0);
	} else {
		len = img_build(buf, sizeof(buf), id, 48, img_vcpu_stats,
				img_vcpu_nstats, NULL,
				argc > 2 && !strcmp(argv[2], "kvm"));
	}
	return len && fwrite(buf, 1, len, stdout) == len ? 0 : 1;
}
