/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libstatsfd private definitions shared by its source files; not
 * installed.  The test seams are in statsfd_internal.h.
 */
#ifndef STATSFD_LIB_PRIV_H
#define STATSFD_LIB_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statsfd.h"
#include "statsfd_internal.h"

#define HDR_SIZE	sizeof(struct statsfd_header)
#define DESC_SIZE	sizeof(struct statsfd_desc)

struct statsfd {
	int fd;
	bool close_fd;
	struct statsfd_header hdr;
	char *id;
	unsigned int num_stats;
	struct statsfd_stat *stats;
	/* Indices of @stats sorted by name, for statsfd_find(). */
	unsigned int *by_name;
	/* The raw descriptor block; the names point into it. */
	unsigned char *desc_raw;
	size_t desc_len;
	size_t data_size;
	uint64_t hash;
	/* The recognized sample_ns and generation stats, or NULL. */
	const struct statsfd_stat *sample_st;
	const struct statsfd_stat *gen_st;
	/*
	 * The read-only mapping of the values, or NULL: @map_len bytes, two
	 * published copies of the values, copy 0 at @map + @map_data_off and
	 * copy 1 @map_stride bytes after it, @map_data_size bytes each (the
	 * first bytes of the data block).  @map_full: every stat but
	 * sample_ns and generation is in it, so statsfd_read() can use it.
	 */
	const void *map;
	size_t map_len;
	uint32_t map_data_off;
	uint32_t map_data_size;
	uint32_t map_stride;
	bool map_full;
	/* Test seam (statsfd_internal.h). */
	void (*map_hook)(void *arg, unsigned int attempt);
	void *map_hook_arg;
	/* Updated with relaxed atomics, off the fast path only. */
	uint64_t map_retries;
	uint64_t map_fallbacks;
	/*
	 * A view (view.c): made by the kernel (STATSFD_IOC_VIEW; read like
	 * any stats fd) or emulated.  An emulated view's @fd is a dup of its
	 * parent's; @emul_off[i] is where the values of stat i are in the
	 * data block of that fd's file, which starts at @emul_data_offset.
	 */
	enum statsfd_view_kind view_kind;
	uint32_t emul_data_offset;
	uint32_t *emul_off;
};

/* The system calls the library makes on stats fds (statsfd__set_sys()). */
extern struct statsfd__sys statsfd__sys;

__attribute__((format(printf, 3, 4)))
void statsfd__set_err(struct statsfd_error *err, int code, const char *fmt, ...);
int statsfd__read_exact(int fd, void *buf, size_t len, uint64_t off,
			const char *what, struct statsfd_error *err);
int statsfd__parse(struct statsfd *sf, struct statsfd_error *err);
void statsfd__finish(struct statsfd *sf);

#endif /* STATSFD_LIB_PRIV_H */
