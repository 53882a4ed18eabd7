// SPDX-License-Identifier: GPL-2.0
/*
 * Synthetic stats images for the host tests (see image.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image.h"

#define S_CUM	STATSFD_TYPE_CUMULATIVE
#define S_INST	STATSFD_TYPE_INSTANT
#define S_PEAK	STATSFD_TYPE_PEAK

const struct img_stat img_vcpu_stats[] = {
	{ "halt_exits", S_CUM, 0, 1, 0 },
	{ "io_exits", S_CUM, 0, 1, 0 },
	{ "blocking", S_INST | STATSFD_UNIT_BOOLEAN, 0, 1, 0 },
	{ "max_halt_ns", S_PEAK | STATSFD_UNIT_SECONDS, -9, 1, 0 },
	{ "halt_wait_ns", S_CUM | STATSFD_UNIT_SECONDS, -9, 1, 0 },
	{ "io_bytes", S_CUM | STATSFD_UNIT_BYTES | STATSFD_BASE_POW2, 0, 1, 0 },
	{ "guest_cycles", S_CUM | STATSFD_UNIT_CYCLES, 0, 1, 0 },
	{ "halt_wait_hist_ns", STATSFD_TYPE_LOG_HIST | STATSFD_UNIT_SECONDS,
	  -9, 32, 0 },
	{ "run_batch_hist", STATSFD_TYPE_LINEAR_HIST, 0, 8, 10 },
	{ "io_exits_sum", S_CUM | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "pages_kib", S_INST | STATSFD_UNIT_BYTES | STATSFD_BASE_POW2, 10, 1, 0 },
};
const unsigned int img_vcpu_nstats = sizeof(img_vcpu_stats) /
				     sizeof(img_vcpu_stats[0]);

static size_t round8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

size_t img_build(unsigned char *buf, size_t cap, const char *id,
		 uint32_t name_size, const struct img_stat *stats,
		 unsigned int n, const uint64_t *values, int kvm_order)
{
	struct statsfd_header h = { .name_size = name_size, .num_desc = n };
	size_t stride = sizeof(struct statsfd_desc) + name_size;
	size_t data_size = 0, size, off, i;
	uint64_t v = 1;

	for (i = 0; i < n; i++)
		data_size += (size_t)stats[i].size * 8;
	h.id_offset = sizeof(h);
	if (kvm_order) {
		h.desc_offset = round8(sizeof(h) + name_size);
		h.data_offset = round8(h.desc_offset + stride * n);
		size = h.data_offset + data_size;
	} else {
		h.data_offset = round8(sizeof(h) + name_size);
		h.desc_offset = h.data_offset + data_size;
		size = h.desc_offset + stride * n;
	}
	if (size > cap)
		return 0;
	memset(buf, 0, size);
	memcpy(buf, &h, sizeof(h));
	strncpy((char *)buf + h.id_offset, id, name_size - 1);
	off = 0;
	for (i = 0; i < n; i++) {
		struct statsfd_desc d = {
			.flags = stats[i].flags,
			.exponent = stats[i].exponent,
			.size = stats[i].size,
			.offset = (uint32_t)off,
			.bucket_size = stats[i].bucket_size,
		};
		unsigned char *p = buf + h.desc_offset + stride * i;
		size_t j;

		memcpy(p, &d, sizeof(d));
		strncpy((char *)p + sizeof(d), stats[i].name, name_size - 1);
		for (j = 0; j < stats[i].size; j++, off += 8) {
			uint64_t x = values ? values[off / 8] : v++;

			memcpy(buf + h.data_offset + off, &x, 8);
		}
	}
	return size;
}

int img_memfd(const void *buf, size_t len)
{
	int fd = memfd_create("statsfd-test-image", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

int img_vcpu_memfd(const char *id)
{
	static unsigned char buf[1 << 14];
	size_t n = img_build(buf, sizeof(buf), id, 48, img_vcpu_stats,
			     img_vcpu_nstats, NULL, 0);

	return img_memfd(buf, n);
}

void img_poke(int fd, unsigned int idx, uint64_t v)
{
	struct statsfd_header h;

	if (pread(fd, &h, sizeof(h), 0) == sizeof(h))
		if (pwrite(fd, &v, 8, h.data_offset + idx * 8) != 8)
			printf("# pwrite failed\n");
}
