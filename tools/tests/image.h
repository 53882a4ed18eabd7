/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Builds synthetic stats images for the host tests, in either block order:
 * statsfd's (header, id, data, descriptors) or KVM's (header, id,
 * descriptors, data), and puts them in a memfd so that the library's pread
 * path runs exactly as on a real stats fd.
 */
#ifndef STATSFD_TEST_IMAGE_H
#define STATSFD_TEST_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/statsfd.h>

/**
 * struct img_stat - one stat of a synthetic schema
 * @name: stat name
 * @flags: STATSFD_TYPE_* | STATSFD_UNIT_* | STATSFD_BASE_* | STATSFD_AGG_*
 * @exponent: exponent
 * @size: number of values
 * @bucket_size: linear histogram bucket width, else 0
 */
struct img_stat {
	const char *name;
	uint32_t flags;
	int16_t exponent;
	uint16_t size;
	uint32_t bucket_size;
};

/* A vCPU-like schema using every type, unit and base. */
extern const struct img_stat img_vcpu_stats[];
extern const unsigned int img_vcpu_nstats;

/**
 * img_build() - serialize an image
 * @buf: output, @cap bytes
 * @cap: room
 * @id: id string
 * @name_size: bytes per name, a multiple of 8
 * @stats: the schema
 * @n: number of @stats
 * @values: data block values (sum of sizes), or NULL for a ramp 1, 2, ...
 * @kvm_order: descriptors before data, as KVM lays them out
 *
 * Return: the image size, or 0 when @cap is too small.
 */
size_t img_build(unsigned char *buf, size_t cap, const char *id,
		 uint32_t name_size, const struct img_stat *stats,
		 unsigned int n, const uint64_t *values, int kvm_order);

/**
 * img_memfd() - a memfd holding @len bytes of @buf
 * @buf: bytes
 * @len: length
 *
 * Return: the fd, or -1.
 */
int img_memfd(const void *buf, size_t len);

/* img_memfd() of an image of img_vcpu_stats with id @id (48-byte names). */
int img_vcpu_memfd(const char *id);

/*
 * img_poke() - write @v as value @idx (u64 index) of the data block of the
 * statsfd-order image in the memfd @fd, as a provider updates its stats.
 * A failed write is said as a TAP comment.
 */
void img_poke(int fd, unsigned int idx, uint64_t v);

#endif /* STATSFD_TEST_IMAGE_H */
