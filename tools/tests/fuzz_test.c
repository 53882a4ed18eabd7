// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz-style test of libstatsfd: tens of thousands of corrupted images,
 * each served through a memfd so the same pread path runs as on a real
 * stats fd, must be either rejected with an error naming a field or
 * accepted as a file whose every stat lies inside the data block.  Built
 * with AddressSanitizer and UBSan by `make -C tools check`, so any
 * out-of-bounds access or undefined behaviour aborts the test.
 *
 * Then mutated mmap headers (struct statsfd_mmap_header, version 2, and
 * its two copies in a memfd attached through the test seam of
 * statsfd_priv.h) must be either refused, leaving pread, or accepted
 * as an area whose current copy's values read back exactly.
 *
 * Usage: fuzz_test [iterations] [seed]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image.h"
#include "statsfd_expo.h"
#include "statsfd_priv.h"
#include "tap.h"

static uint64_t rng_state;

/* xorshift64*: deterministic for a printed seed, no libc state. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint32_t interesting(size_t len)
{
	static const uint32_t v[] = {
		0, 1, 7, 8, 15, 16, 23, 24, 47, 48, 64, 0x7f, 0x80, 0xff,
		0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000u, 0xfffffff8u,
		0xffffffffu,
	};
	uint64_t r = rnd() % (sizeof(v) / sizeof(v[0]) + 4);

	if (r < sizeof(v) / sizeof(v[0]))
		return v[r];
	if (r == sizeof(v) / sizeof(v[0]))
		return (uint32_t)len;
	if (r == sizeof(v) / sizeof(v[0]) + 1)
		return (uint32_t)len - 8;
	return (uint32_t)rnd();
}

/* Everything a consumer would do with an accepted handle. */
static int exercise(struct statsfd *sf)
{
	size_t size = statsfd_data_size(sf);
	struct statsfd_buf out = { 0 };
	struct statsfd_prom_series ser;
	struct statsfd_error err;
	uint64_t *buf;
	unsigned int i, j;
	char tmp[128];
	int ok = 1;

	if (size > STATSFD_LIB_DATA_SIZE_MAX || size % 8)
		return 0;
	buf = malloc(size + 8);
	if (!buf)
		return 0;
	if (statsfd_read(sf, buf, &err)) {
		free(buf);
		return 0;
	}
	for (i = 0; i < statsfd_num_stats(sf); i++) {
		const struct statsfd_stat *st = statsfd_stat(sf, i);
		const uint64_t *v = statsfd_values(st, buf);

		if ((uint64_t)st->offset + st->size * 8ULL > size ||
		    statsfd_find(sf, st->name) != st)
			ok = 0;
		for (j = 0; j < st->size; j++) {
			statsfd_format_value(st, v[j], tmp, sizeof(tmp));
			if (statsfd_stat_is_hist(st))
				statsfd_format_bucket(st, j, tmp, sizeof(tmp));
		}
	}
	ser = (struct statsfd_prom_series){ sf, buf, "fuzz", "", NULL, NULL };
	if (statsfd_prom_write(&out, &ser, 1, NULL))
		ok = 0;
	statsfd_buf_free(&out);
	free(buf);
	return ok;
}

struct counts {
	unsigned long accepted, rejected, bad;
};

static void try_image(const unsigned char *img, size_t len, struct counts *c,
		      int must_reject)
{
	struct statsfd_error err;
	struct statsfd *sf;
	int fd = img_memfd(img, len);

	if (fd < 0) {
		c->bad++;
		return;
	}
	sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
	if (sf) {
		c->accepted++;
		if (must_reject || !exercise(sf))
			c->bad++;
		statsfd_close(sf);
		return;
	}
	c->rejected++;
	/* A rejection always says why, and which field (or block) is bad. */
	if (!err.err || !err.msg[0] || !err.field[0] ||
	    strncmp(err.msg, err.field, strlen(err.field))) {
		if (c->bad < 5)
			tap_diag("unhelpful error: err=%d field='%s' msg='%s'",
				 err.err, err.field, err.msg);
		c->bad++;
	}
}

static void mutate(unsigned char *m, size_t *len, size_t cap,
		   const struct statsfd_header *h)
{
	size_t stride = sizeof(struct statsfd_desc) + h->name_size;
	uint32_t v32;
	uint16_t v16;
	size_t off;
	int k, n = 1 + (int)(rnd() % 3);

	for (k = 0; k < n; k++) {
		switch (rnd() % 7) {
		case 0:		/* header field */
			v32 = interesting(*len);
			memcpy(m + 4 * (rnd() % 6), &v32, 4);
			break;
		case 1: {	/* descriptor field */
			unsigned int d = (unsigned int)(rnd() % (h->num_desc ? h->num_desc : 1));
			static const int fo[] = { 0, 4, 6, 8, 12 };
			int f = fo[rnd() % 5];

			off = h->desc_offset + d * stride + (size_t)f;
			if (off + 4 > *len)
				break;
			if (f == 4 || f == 6) {
				v16 = (uint16_t)interesting(*len);
				memcpy(m + off, &v16, 2);
			} else {
				v32 = interesting(*len);
				memcpy(m + off, &v32, 4);
			}
			break;
		}
		case 2:		/* bit flips anywhere */
			off = rnd() % *len;
			m[off] ^= (unsigned char)(1u << (rnd() % 8));
			break;
		case 3:		/* random bytes in the descriptor names */
			off = h->desc_offset + 16 + rnd() % (stride * h->num_desc + 1);
			if (off < *len)
				m[off] = (unsigned char)rnd();
			break;
		case 4:		/* truncate */
			*len = rnd() % *len;
			if (!*len)
				*len = 1;
			break;
		case 5:		/* append garbage */
			while (*len < cap && rnd() % 16) {
				m[*len] = (unsigned char)rnd();
				(*len)++;
			}
			break;
		case 6:		/* copy one descriptor over another */
			if (h->num_desc > 1) {
				size_t a = rnd() % h->num_desc, b = rnd() % h->num_desc;

				if (h->desc_offset + stride * h->num_desc <= *len)
					memmove(m + h->desc_offset + a * stride,
						m + h->desc_offset + b * stride, stride);
			}
			break;
		}
	}
}

/* Sources with update windows: without aggregates, and with one. */
static const struct img_stat map_vcpu[] = {
	{ "a", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "hist", STATSFD_TYPE_LOG_HIST, 0, 8, 0 },
	{ "lin", STATSFD_TYPE_LINEAR_HIST, 0, 600, 10 },	/* past one page */
	{ "sample_ns", STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS, -9, 1, 0 },
	{ "generation", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
};
static const struct img_stat map_vm[] = {
	{ "x", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "y", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "x_sum", STATSFD_TYPE_CUMULATIVE | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "sample_ns", STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS, -9, 1, 0 },
	{ "generation", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
};

/* Fill copy @n of @h's values, as far as @flen allows, with @base + w. */
static void fill_copy(struct statsfd_mmap_header *h, size_t flen, uint64_t n,
		      uint32_t span, uint64_t base)
{
	size_t off = (size_t)h->data_offset + (n & 1) * (size_t)h->copy_stride;
	unsigned int w;

	for (w = 0; !(off % 8) && w < span / 8 && off + 8 * (w + 1) <= flen; w++)
		((uint64_t *)((char *)h + off))[w] = base + w;
}

/*
 * One mutated mmap header on a handle of @stats (plain span @span): either
 * refused with an "mmap..." field and the handle reading the image, or
 * accepted with every field sane and the current copy's values read back
 * (never the other copy's).
 */
static void try_map(const struct img_stat *stats, unsigned int n,
		    uint32_t span, bool full, struct counts *c)
{
	static const size_t sizes[] = { 2048, 4096, 8192, 3 * 4096, 4 * 4096 };
	static unsigned char image[1 << 14];
	size_t ilen = img_build(image, sizeof(image), "fuzz-map", 16, stats, n,
				NULL, 0);
	size_t flen = sizes[rnd() % 5], dsize;
	struct statsfd_mmap_header *h;
	struct statsfd_error err;
	struct statsfd *sf;
	uint64_t *buf, seq;
	unsigned int k, w;
	int fd = img_memfd(image, ilen), mfd, ok = 1;

	sf = fd < 0 ? NULL : statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
	mfd = memfd_create("fuzz-map", MFD_CLOEXEC);
	if (!sf || mfd < 0 || ftruncate(mfd, (off_t)flen)) {
		c->bad++;
		goto out;
	}
	h = mmap(NULL, flen, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (h == MAP_FAILED) {
		c->bad++;
		goto out;
	}
	*h = (struct statsfd_mmap_header){ .version = STATSFD_MMAP_VERSION,
		.header_size = 64, .data_offset = 64, .data_size = span,
		.flags = STATSFD_MMAP_LATCH,
		.copy_stride = (span + 63) / 64 * 64 };
	/* Any count: odd ones select copy 1, and none means a window is open. */
	h->seq = seq = rnd() % 1000;
	for (k = 1 + rnd() % 3; k; k--) {
		switch (rnd() % 7) {
		case 0: h->version = interesting(flen); break;
		case 1: h->header_size = interesting(flen); break;
		case 2: h->data_offset = interesting(flen); break;
		case 3: h->data_size = interesting(flen); break;
		case 4: h->flags = rnd() % 2 ? interesting(flen) : 1u << (rnd() % 32); break;
		case 5: h->copy_stride = interesting(flen); break;
		default: h->copy_stride = span + 8 * (uint32_t)(rnd() % 8) - 24; break;
		}
	}
	/* The copy seq does not select holds what a wrong reader would return. */
	fill_copy(h, flen, seq + 1, span, 9000);
	fill_copy(h, flen, seq, span, 7000);
	dsize = statsfd_data_size(sf);
	buf = calloc(1, dsize);
	if (statsfd__attach_map(sf, mfd, &err)) {
		c->rejected++;
		ok = !strncmp(err.field, "mmap", 4) && !statsfd_is_mapped(sf) &&
		     !statsfd_read(sf, buf, &err) && buf[0] == 1;
	} else {
		c->accepted++;
		ok = h->version >= 2 && h->flags == STATSFD_MMAP_LATCH &&
		     h->header_size >= 64 &&
		     h->header_size <= h->data_offset && !(h->data_offset % 8) &&
		     h->data_size == span && h->copy_stride >= span &&
		     !(h->copy_stride % 8) &&
		     (size_t)h->data_offset + h->copy_stride + h->data_size <= flen &&
		     !statsfd_read(sf, buf, &err);
		for (w = 0; ok && full && w < span / 8; w++)
			ok = buf[w] == 7000 + w;
		if (ok && full)
			ok = statsfd_values(statsfd_generation_stat(sf), buf)[0] ==
			     seq;
		if (ok && !full)	/* a VM: pread, the image's values */
			ok = buf[0] == 1 && buf[2] == 3;
	}
	c->bad += !ok;
	free(buf);
	munmap(h, flen);
out:
	if (mfd >= 0)
		close(mfd);
	statsfd_close(sf);
}

int main(int argc, char **argv)
{
	static unsigned char base[1 << 16], mod[(1 << 16) + 4096];
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 30000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed5eedULL;
	static const uint32_t name_sizes[] = { 48, 16, 24, 64 };
	struct counts trunc = { 0 }, fuzz = { 0 }, clean = { 0 }, maps = { 0 };
	unsigned long i;
	int layout, ns;

	tap_diag("seed 0x%" PRIx64 ", %lu iterations per layout and name size", seed,
		 iters / 8);
	rng_state = seed ? seed : 1;
	for (layout = 0; layout < 2; layout++) {
		for (ns = 0; ns < 4; ns++) {
			struct statsfd_header h;
			size_t len, l;

			len = img_build(base, sizeof(base), "fuzz-vm/vcpu-0",
					name_sizes[ns], img_vcpu_stats,
					img_vcpu_nstats, NULL, layout);
			memcpy(&h, base, sizeof(h));
			try_image(base, len, &clean, 0);
			/* Every proper prefix misses part of a block. */
			for (l = 0; l < len; l++)
				try_image(base, l, &trunc, 1);
			for (i = 0; i < iters / 8; i++) {
				size_t ml = len;

				memcpy(mod, base, len);
				mutate(mod, &ml, sizeof(mod), &h);
				try_image(mod, ml, &fuzz, 0);
			}
		}
	}
	for (i = 0; i < iters / 10; i++) {
		try_map(map_vcpu, 5, (1 + 8 + 600) * 8, true, &maps);
		try_map(map_vm, 5, 16, false, &maps);
	}
	tap_ok(!maps.bad && maps.accepted && maps.rejected,
	       "%lu mutated mmap headers: %lu refused (pread kept), %lu accepted and read back exactly, %lu bad",
	       maps.accepted + maps.rejected, maps.rejected, maps.accepted,
	       maps.bad);
	tap_ok(clean.accepted == 8 && !clean.bad,
	       "8 valid images (2 layouts x 4 name sizes) accepted");
	tap_ok(trunc.rejected && !trunc.accepted && !trunc.bad,
	       "all %lu truncated images rejected with a field-naming error",
	       trunc.rejected);
	tap_ok(!fuzz.bad && fuzz.rejected > fuzz.accepted,
	       "%lu mutated images: %lu rejected with a field-naming error, %lu accepted and fully consistent, %lu bad",
	       fuzz.accepted + fuzz.rejected, fuzz.rejected, fuzz.accepted,
	       fuzz.bad);
	return tap_done();
}
