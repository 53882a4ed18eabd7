// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: views.  STATSFD_IOC_VIEW on a stats fd returns a new stats
 * fd holding only the selected stats; the library opens it like any other
 * and checks that it holds what was asked for.  Where the fd has no views
 * (KVM's fds, files, kernels without them) the caller may have the
 * library emulate one: a handle with the descriptors and compact data
 * block a kernel view would have, read with one pread() of the original
 * fd spanning the selected stats.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* <linux/statsfd.h> uses _IOW() without including <linux/ioctl.h>. */
#include <sys/ioctl.h>

#include "statsfd_priv.h"

#define set_err statsfd__set_err

static size_t round8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

/*
 * Check the selection against @sf's descriptors, with the errnos the
 * kernel would give, and resolve it to indices of @sf in @sel.
 */
static int resolve(const struct statsfd *sf, const char *const *names,
		   const unsigned int *indices, unsigned int n,
		   unsigned int flags, unsigned int *sel,
		   struct statsfd_error *err)
{
	const char *what = names ? "names" : "indices";
	unsigned int i, j, idx;
	size_t len;

	if (flags & ~STATSFD_VIEW_EMULATE) {
		set_err(err, EINVAL, "flags: unknown view flags 0x%x", flags);
		return -EINVAL;
	}
	if (!n && !(flags & STATSFD_VIEW_EMULATE)) {
		set_err(err, EINVAL, "count: no stat selected (a view holds at least one)");
		return -EINVAL;
	}
	if (n > sf->num_stats || n > STATSFD_VIEW_COUNT_MAX) {
		set_err(err, E2BIG, "count: %u stats selected, the fd has %u",
			n, sf->num_stats);
		return -E2BIG;
	}
	for (i = 0; i < n; i++) {
		if (names) {
			const struct statsfd_stat *st;

			if (!names[i]) {
				set_err(err, EINVAL, "names[%u]: NULL", i);
				return -EINVAL;
			}
			len = strnlen(names[i], sf->hdr.name_size);
			if (len >= sf->hdr.name_size) {
				set_err(err, ENAMETOOLONG, "names[%u]: %zu bytes or more, longer than any name of the fd (name_size %u)",
					i, len, sf->hdr.name_size);
				return -ENAMETOOLONG;
			}
			st = statsfd_find(sf, names[i]);
			if (!st) {
				set_err(err, ENOENT, "names[%u]: no stat named %s",
					i, names[i]);
				return -ENOENT;
			}
			idx = st->index;
		} else {
			idx = indices[i];
			if (idx >= sf->num_stats) {
				set_err(err, ENOENT, "indices[%u]: %u out of range (the fd has %u stats)",
					i, idx, sf->num_stats);
				return -ENOENT;
			}
		}
		/* Quadratic, but a view is a handful of stats and made once. */
		for (j = 0; j < i; j++) {
			if (sel[j] == idx) {
				set_err(err, EEXIST, "%s[%u]: %s selected twice (also %s[%u])",
					what, i, sf->stats[idx].name, what, j);
				return -EEXIST;
			}
		}
		sel[i] = idx;
	}
	return 0;
}

static const char *errno_name(int e)
{
	switch (e) {
	case ENOTTY: return "ENOTTY";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case E2BIG: return "E2BIG";
	case EFAULT: return "EFAULT";
	case ENOMEM: return "ENOMEM";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	case EBADF: return "EBADF";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	}
	return "errno";
}

/* STATSFD_IOC_VIEW failed with @e on a selection checked by resolve(). */
static void ioctl_error(struct statsfd_error *err, int e, int fd)
{
	const char *why;

	switch (e) {
	case ENOTTY:
	case EOPNOTSUPP:
		why = "this fd has no views (a KVM stats fd, a file, or a statsfd kernel without views): read the whole fd and keep the stats wanted";
		break;
	case EINVAL:
		why = "the kernel does not take this request for a selection the fd's descriptors allow (a kernel without views?): read the whole fd and keep the stats wanted";
		break;
	case ENOENT:
	case EEXIST:
	case ENAMETOOLONG:
	case E2BIG:
		why = "the kernel refused a selection that the descriptors read at open allow: the fd does not describe itself consistently";
		break;
	case EFAULT:
		why = "the kernel could not read the selection (a libstatsfd bug)";
		break;
	case ENOMEM:
		why = "the kernel is out of memory";
		break;
	case EMFILE:
		why = "no fd left for the view (RLIMIT_NOFILE)";
		break;
	case ENFILE:
		why = "the system's file table is full";
		break;
	case EBADF:
		why = "the handle's fd is not open";
		break;
	default:
		why = "unexpected error";
		break;
	}
	set_err(err, e, "view: STATSFD_IOC_VIEW on fd %d failed: %s (%s): %s",
		fd, strerror(e), errno_name(e), why);
}

bool statsfd_view_unsupported(const struct statsfd_error *err)
{
	return err && !strcmp(err->field, "view") &&
	       (err->err == ENOTTY || err->err == EINVAL ||
		err->err == EOPNOTSUPP);
}

enum statsfd_view_kind statsfd_view_kind(const struct statsfd *sf)
{
	return sf->view_kind;
}

/* The kernel's view must hold exactly the stats selected, in order. */
static int verify(const struct statsfd *sf, const struct statsfd *v,
		  const unsigned int *sel, unsigned int n,
		  struct statsfd_error *err)
{
	unsigned int i;

	if (v->num_stats != n) {
		set_err(err, EINVAL, "view: the kernel's view has %u stats, %u were selected",
			v->num_stats, n);
		return -EINVAL;
	}
	if (v->hdr.name_size != sf->hdr.name_size || strcmp(v->id, sf->id)) {
		set_err(err, EINVAL, "view: the kernel's view is of %s (name_size %u), not of %s (name_size %u)",
			v->id, v->hdr.name_size, sf->id, sf->hdr.name_size);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		const struct statsfd_stat *a = &v->stats[i];
		const struct statsfd_stat *b = &sf->stats[sel[i]];

		if (strcmp(a->name, b->name) || a->flags != b->flags ||
		    a->exponent != b->exponent || a->size != b->size ||
		    a->bucket_size != b->bucket_size) {
			set_err(err, EINVAL, "view: desc[%u] of the kernel's view is %s where %s was selected (or its type differs)",
				i, a->name, b->name);
			return -EINVAL;
		}
	}
	return 0;
}

static struct statsfd *kernel_view(const struct statsfd *sf,
				   const char *const *names,
				   const unsigned int *sel, unsigned int n,
				   struct statsfd_error *err)
{
	struct statsfd_view_args args = { .count = n };
	uint64_t *ptrs = NULL;
	uint32_t *idx = NULL;
	struct statsfd *v;
	unsigned int i;
	int fd, e;

	if (names) {
		ptrs = calloc(n, sizeof(*ptrs));
		for (i = 0; ptrs && i < n; i++)
			ptrs[i] = (uint64_t)(uintptr_t)names[i];
		args.list = (uint64_t)(uintptr_t)ptrs;
	} else {
		idx = calloc(n, sizeof(*idx));
		for (i = 0; idx && i < n; i++)
			idx[i] = sel[i];
		args.flags = STATSFD_VIEW_BY_INDEX;
		args.list = (uint64_t)(uintptr_t)idx;
	}
	if (!ptrs && !idx) {
		set_err(err, ENOMEM, "view: out of memory");
		return NULL;
	}
	fd = statsfd__sys.ioctl(sf->fd, STATSFD_IOC_VIEW, &args);
	e = errno;
	free(ptrs);
	free(idx);
	if (fd < 0) {
		ioctl_error(err, e, sf->fd);
		return NULL;
	}
	/* The kernel maps no view: do not even try. */
	v = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD | STATSFD_OPEN_NO_MMAP,
			    err);
	if (!v)
		return NULL;
	if (verify(sf, v, sel, n, err)) {
		statsfd_close(v);
		errno = EINVAL;
		return NULL;
	}
	v->view_kind = STATSFD_VIEW_KERNEL;
	return v;
}

static struct statsfd *emulated_view(const struct statsfd *sf,
				     const unsigned int *sel, unsigned int n,
				     struct statsfd_error *err)
{
	size_t stride = DESC_SIZE + sf->hdr.name_size, data_size = 0;
	uint32_t data_offset = (uint32_t)round8(HDR_SIZE + sf->hdr.name_size);
	struct statsfd *v = calloc(1, sizeof(*v));
	unsigned int i;
	int e;

	if (!v) {
		set_err(err, ENOMEM, "view: out of memory");
		return NULL;
	}
	v->fd = fcntl(sf->fd, F_DUPFD_CLOEXEC, 0);
	if (v->fd < 0) {
		e = errno;
		set_err(err, e, "view: dup of fd %d: %s", sf->fd, strerror(e));
		free(v);
		errno = e;
		return NULL;
	}
	v->close_fd = true;
	v->view_kind = STATSFD_VIEW_EMULATED;
	v->num_stats = n;
	v->desc_len = n * stride;
	v->id = malloc(sf->hdr.name_size);
	v->desc_raw = malloc(v->desc_len + 1);
	v->stats = calloc(n + 1, sizeof(*v->stats));
	v->by_name = calloc(n + 1, sizeof(*v->by_name));
	v->emul_off = calloc(n + 1, sizeof(*v->emul_off));
	if (!v->id || !v->desc_raw || !v->stats || !v->by_name ||
	    !v->emul_off) {
		set_err(err, ENOMEM, "view: out of memory");
		goto fail;
	}
	memcpy(v->id, sf->id, sf->hdr.name_size);
	/* The layout of a kernel view: header, id, data, descriptors. */
	for (i = 0; i < n; i++) {
		unsigned char *d = v->desc_raw + i * stride;
		const struct statsfd_stat *st = &sf->stats[sel[i]];
		uint32_t off = (uint32_t)data_size;

		memcpy(d, sf->desc_raw + (size_t)sel[i] * stride, stride);
		memcpy(d + offsetof(struct statsfd_desc, offset), &off,
		       sizeof(off));
		v->emul_off[i] = sf->emul_off ? sf->emul_off[sel[i]] : st->offset;
		data_size += (size_t)st->size * 8;
	}
	v->emul_data_offset = sf->emul_off ? sf->emul_data_offset :
					     sf->hdr.data_offset;
	v->hdr = (struct statsfd_header){
		.flags = 0,
		.name_size = sf->hdr.name_size,
		.num_desc = n,
		.id_offset = HDR_SIZE,
		.desc_offset = data_offset + (uint32_t)data_size,
		.data_offset = data_offset,
	};
	if (statsfd__parse(v, err))
		goto fail;
	statsfd__finish(v);
	/* As for any handle: the values are really there. */
	if (statsfd__probe(v, "view", err))
		goto fail;
	return v;
fail:
	e = errno;
	statsfd_close(v);
	errno = e;
	return NULL;
}

static struct statsfd *open_view(const struct statsfd *sf,
				 const char *const *names,
				 const unsigned int *indices, unsigned int n,
				 unsigned int flags, struct statsfd_error *err)
{
	struct statsfd_error tmp;
	struct statsfd *v = NULL;
	unsigned int *sel;

	if (err)
		memset(err, 0, sizeof(*err));
	if (n && !names && !indices) {
		set_err(err, EINVAL, "list: NULL for %u stats", n);
		return NULL;
	}
	sel = calloc(n + 1, sizeof(*sel));
	if (!sel) {
		set_err(err, ENOMEM, "view: out of memory");
		return NULL;
	}
	if (resolve(sf, names, indices, n, flags, sel, err))
		goto out;
	/*
	 * An emulated view has no fd of its own (its fd is the original's),
	 * and no kernel view is empty: those are always emulated.
	 */
	if (sf->emul_off || !n) {
		if (flags & STATSFD_VIEW_EMULATE)
			v = emulated_view(sf, sel, n, err);
		else
			set_err(err, ENOTTY, "view: an emulated view has no view fd to make a view of; ask with STATSFD_VIEW_EMULATE");
		goto out;
	}
	memset(&tmp, 0, sizeof(tmp));
	v = kernel_view(sf, names, sel, n, &tmp);
	if (v)
		goto out;
	if ((flags & STATSFD_VIEW_EMULATE) && statsfd_view_unsupported(&tmp)) {
		v = emulated_view(sf, sel, n, err);
		goto out;
	}
	if (err)
		*err = tmp;
	errno = tmp.err;
out:
	free(sel);
	return v;
}

struct statsfd *statsfd_open_view(const struct statsfd *sf,
				  const char *const *names, unsigned int n,
				  unsigned int flags, struct statsfd_error *err)
{
	return open_view(sf, names, NULL, n, flags, err);
}

struct statsfd *statsfd_open_view_indices(const struct statsfd *sf,
					  const unsigned int *indices,
					  unsigned int n, unsigned int flags,
					  struct statsfd_error *err)
{
	static const unsigned int none[1];

	/* NULL with n 0 is an empty selection, not a list by name. */
	return open_view(sf, NULL, indices ? indices : (n ? NULL : none), n,
			 flags, err);
}
