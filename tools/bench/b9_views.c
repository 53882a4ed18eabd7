// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b9": reading eight of a vCPU's stats through a view
 * fd (STATSFD_IOC_VIEW by name) against reading them from the
 * vCPU's full stats fd.
 *
 * The judged contenders, side by side over NFD idle vCPUs of one VM:
 *   - view: one pread of the view's whole data block (8 values, 64 B, one
 *     snapshot of them);
 *   - full: one pread of the vCPU's whole data block (every value, its
 *     sample_ns and generation);
 *   - separate: 8 preads of 8 B, one per selected stat, at their offsets in
 *     the full fd's data block.
 * For context: one pread of the first 64 B of the full fd's data block (as
 * many bytes as the view, contiguous), one pread of 8 B of the full fd
 * (the syscall's floor), and a view of the view (the same 8 stats, in
 * reverse order).
 *
 * Before timing, every view is checked: 8 descriptors, a 64 B data block,
 * and the values the full fd has at the named offsets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bench.h"

#define B9_NSTATS	8

static const char *const b9_names[B9_NSTATS] = {
	"exits", "io_exits", "mmio_exits", "hypercall_exits",
	"halt_exits", "signal_exits", "io_bytes", "guest_cycles",
};

/* Offsets in the full fd's data block of the stats named in b9_names. */
static uint32_t b9_off[B9_NSTATS];

/* 8 preads of one value each, at b9_off[] of the data block. */
static void op_separate(struct cont *c)
{
	int fd = c->fds[c->calls % c->nfds];
	unsigned char *dst = slots + (c->calls / c->nfds % NSLOT) * SLOT_SIZE;
	int i;

	c->calls++;
	for (i = 0; i < B9_NSTATS; i++)
		if (pread(fd, dst + 8 * i, 8, c->off + b9_off[i]) != 8)
			die("pread %s (%s)", c->name, b9_names[i]);
}

/* STATSFD_IOC_VIEW on @fd with @flags: a view of the @n stats in @list. */
static int view_ioctl(int fd, uint32_t flags, const void *list, int n)
{
	struct statsfd_view_args a;
	int v;

	memset(&a, 0, sizeof(a));
	a.flags = flags;
	a.count = n;
	a.list = (uintptr_t)list;
	v = ioctl(fd, STATSFD_IOC_VIEW, &a);
	if (v < 0)
		die("STATSFD_IOC_VIEW%s", flags & STATSFD_VIEW_BY_INDEX ? " by index" : "");
	return v;
}

/* A view of @n stats named @names. */
static int view_by_name(int fd, const char *const *names, int n)
{
	uint64_t list[B9_NSTATS];
	int i;

	for (i = 0; i < n; i++)
		list[i] = (uintptr_t)names[i];
	return view_ioctl(fd, 0, list, n);
}

/* A view of the @n stats at indices @idx (STATSFD_VIEW_BY_INDEX). */
static int view_by_index(int fd, const uint32_t *idx, int n)
{
	return view_ioctl(fd, STATSFD_VIEW_BY_INDEX, idx, n);
}

void phase_b9(void)
{
	struct sfile full[NFD], view[NFD], vv;
	struct cont c[MAX_CONT];
	int dev, vm, vcpu[NFD], fds[NFD], vfds[NFD], vvfds[NFD], n = 0, i, k;
	uint64_t *a = (uint64_t *)buf, *b = a + BUF_SIZE / 16;
	uint32_t rev[B9_NSTATS];
	bool layout_ok = true, values_ok = true, vv_ok = true;

	dev = vm_dev();
	vm = vm_create(dev);
	for (i = 0; i < NFD; i++) {
		vcpu[i] = vcpu_create(vm, i);
		if (vcpu_run_exits(vcpu[i], 3000 + 7 * i))
			die("STATSFD_VM_RUN");
		fds[i] = stats_fd(vcpu[i]);
		sfile_open(&full[i], fds[i]);
	}
	for (k = 0; k < B9_NSTATS; k++) {
		struct statsfd_desc *d = sfile_find(&full[0], b9_names[k]);

		if (!d) {
			errno = ENOENT;
			die("vCPU stat %s", b9_names[k]);
		}
		b9_off[k] = d->offset;
		rev[k] = B9_NSTATS - 1 - k;
	}
	for (i = 0; i < NFD; i++) {
		vfds[i] = view_by_name(fds[i], b9_names, B9_NSTATS);
		sfile_open(&view[i], vfds[i]);
		vvfds[i] = view_by_index(vfds[i], rev, B9_NSTATS);
	}
	sfile_open(&vv, vvfds[0]);

	/*
	 * The views hold what the full fds hold, in the order asked for (the
	 * vCPUs are idle: nothing changes between the two reads).
	 */
	for (i = 0; i < NFD; i++) {
		layout_ok &= view[i].h.num_desc == B9_NSTATS &&
			     view[i].data_size == 8 * B9_NSTATS;
		for (k = 0; k < B9_NSTATS; k++) {
			struct statsfd_desc *d = sfile_desc(&view[i], k);

			layout_ok &= !strncmp(d->name, b9_names[k],
					      view[i].h.name_size) &&
				     d->offset == 8u * k && d->size == 1;
		}
		if (pread(fds[i], a, full[i].data_size, full[i].h.data_offset) !=
		    (ssize_t)full[i].data_size ||
		    pread(vfds[i], b, 8 * B9_NSTATS, view[i].h.data_offset) !=
		    8 * B9_NSTATS)
			die("b9 check read");
		for (k = 0; k < B9_NSTATS; k++)
			values_ok &= b[k] == a[b9_off[k] / 8];
		if (pread(vvfds[i], a, 8 * B9_NSTATS, vv.h.data_offset) !=
		    8 * B9_NSTATS)
			die("b9 check read (view of a view)");
		for (k = 0; k < B9_NSTATS; k++)
			vv_ok &= a[k] == b[rev[k]];
	}
	vv_ok &= vv.h.num_desc == B9_NSTATS;

	jbegin("b9");
	jnum("instances_per_contender", NFD);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jlayout("vcpu_layout", &full[0]);
	jlayout("view_layout", &view[0]);
	jopen("stats", '[');
	for (k = 0; k < B9_NSTATS; k++)
		jstr(NULL, b9_names[k]);
	jclose(']');
	jbool("view_layout_ok", layout_ok);
	jbool("view_equals_full", values_ok);
	jbool("view_of_view_ok", vv_ok);

	cont_fds(cont_add(c, &n, "view", op_pread, -1, view[0].data_size,
			  view[0].h.data_offset, 20), vfds, NFD);
	cont_fds(cont_add(c, &n, "full", op_pread, -1, full[0].data_size,
			  full[0].h.data_offset, 10), fds, NFD);
	cont_fds(cont_add(c, &n, "separate", op_separate, -1, 8 * B9_NSTATS,
			  full[0].h.data_offset, 4), fds, NFD);
	cont_fds(cont_add(c, &n, "full_prefix_64", op_pread, -1,
			  8 * B9_NSTATS, full[0].h.data_offset, 20), fds, NFD);
	cont_fds(cont_add(c, &n, "full_one_value", op_pread, -1, 8,
			  full[0].h.data_offset + b9_off[0], 20), fds, NFD);
	cont_fds(cont_add(c, &n, "view_of_view", op_pread, -1, vv.data_size,
			  vv.h.data_offset, 20), vvfds, NFD);
	fprintf(stderr, "b9: view vs full vs separate\n");
	measure(c, n, 3 * rounds);
	jconts("reads", c, n);
	jnum("view_vs_full", c[0].median / c[1].median);
	jnum("view_vs_separate", c[0].median / c[2].median);
	jend();

	sfile_close(&vv);
	for (i = 0; i < NFD; i++) {
		if (i)
			close(vvfds[i]);
		sfile_close(&view[i]);
		sfile_close(&full[i]);
		close(vcpu[i]);
	}
	close(vm);
	close(dev);
}
