// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b1": what one pread of stats costs.  Ours (a vCPU of
 * the provider, and bench-module schemas, one of them shaped exactly like
 * KVM's vCPU stats) against upstream KVM's binary stats and /dev/zero:
 * prefixes of the data block from 8 bytes to 4 KiB, then whole data blocks,
 * also cut to a common size.  The KVM-shaped source is measured twice side
 * by side, with snapshots off and on (STATSFD_BENCH_SNAPSHOT: update
 * windows, and sample_ns and generation after the values).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "bench.h"
#include "statsfd_bench.h"

void phase_b1(void)
{
	static const size_t sizes[] = { 8, 16, 32, 64, 128, 256, 512, 1024,
					 2048, 4096 };
	struct kvm_vcpu_stats k;
	struct bench_set shape, shape_snap, big;
	struct sfile ours;
	struct cont c[MAX_CONT];
	int dev, vm, vcpu[NFD], ours_fds[NFD], zero, bdev, n, j;
	bool have_kvm;
	size_t i, matched = 0;

	/* NFD vCPUs of one VM of ours, with values set by a short run. */
	dev = vm_dev();
	vm = vm_create(dev);
	for (j = 0; j < NFD; j++) {
		vcpu[j] = vcpu_create(vm, j);
		if (vcpu_run_exits(vcpu[j], 3000))
			die("STATSFD_VM_RUN");
		ours_fds[j] = stats_fd(vcpu[j]);
	}
	sfile_open(&ours, ours_fds[0]);
	zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero < 0)
		die("open /dev/zero");
	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	have_kvm = kvm_open(&k);
	/*
	 * Ours with exactly KVM's shape (same descriptor and value counts),
	 * and the same with snapshots on: two more stats (sample_ns and
	 * generation, 16 bytes) after the same values.
	 */
	if (have_kvm) {
		bench_set_open(&shape, bdev, k.stats.h.num_desc,
			       sfile_num_values(&k.stats), 0);
		bench_set_open(&shape_snap, bdev, k.stats.h.num_desc,
			       sfile_num_values(&k.stats),
			       STATSFD_BENCH_SNAPSHOT);
	}
	/* Ours with 4 KiB of values, for sizes beyond a vCPU's data. */
	bench_set_open(&big, bdev, 64, 512, 0);

	jbegin("b1");
	jbool("kvm", have_kvm);
	jnum("instances_per_contender", NFD);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jlayout("ours_vcpu_layout", &ours);
	jlayout("ours_big_layout", &big.stats);
	if (have_kvm) {
		jlayout("kvm_vcpu_layout", &k.stats);
		jlayout("ours_kvm_shape_layout", &shape.stats);
		jlayout("ours_kvm_shape_snap_layout", &shape_snap.stats);
	}

	/* Prefixes of the data block at matched byte counts. */
	jopen("sizes", '[');
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t sz = sizes[i];

		n = 0;
		cont_add(c, &n, "zero", op_pread, zero, sz, 0, 20);
		if (sz <= ours.data_size)
			cont_fds(cont_add(c, &n, "ours_vcpu", op_pread, -1, sz,
					  ours.h.data_offset, 20),
				 ours_fds, NFD);
		cont_fds(cont_add(c, &n, "ours_big", op_pread, -1, sz,
				  big.stats.h.data_offset, 20),
			 big.fds, NFD);
		if (have_kvm && sz <= k.stats.data_size)
			cont_fds(cont_add(c, &n, "kvm_vcpu", op_pread, -1, sz,
					  k.stats.h.data_offset, 20),
				 k.fds, NFD);
		fprintf(stderr, "b1: %zu bytes\n", sz);
		measure(c, n, 3 * rounds);
		jopen(NULL, '{');
		jnum("bytes", sz);
		for (j = 0; j < n; j++)
			jcont(&c[j]);
		jclose('}');
	}
	jclose(']');

	/*
	 * Whole data blocks: ours (the provider's vCPU), KVM's vCPU, ours with
	 * KVM's exact shape (snapshots off and on), the provider's vCPU cut to
	 * KVM's size, and /dev/zero at each size.  With snapshots on, the
	 * whole data block is KVM's values plus sample_ns and generation; the
	 * same source is also read for KVM's byte count alone (its values).
	 * Batches of 10 reads keep a round near a millisecond now that a read
	 * of a data block takes several microseconds under TCG.
	 */
	n = 0;
	cont_fds(cont_add(c, &n, "ours_vcpu", op_pread, -1, ours.data_size,
			  ours.h.data_offset, 10), ours_fds, NFD);
	cont_add(c, &n, "zero_ours_size", op_pread, zero, ours.data_size, 0,
		 10);
	if (have_kvm) {
		cont_fds(cont_add(c, &n, "kvm_vcpu", op_pread, -1,
				  k.stats.data_size, k.stats.h.data_offset,
				  10), k.fds, NFD);
		cont_fds(cont_add(c, &n, "ours_kvm_shape", op_pread, -1,
				  shape.stats.data_size,
				  shape.stats.h.data_offset, 10),
			 shape.fds, NFD);
		cont_add(c, &n, "zero_kvm_size", op_pread, zero,
			 k.stats.data_size, 0, 10);
		cont_fds(cont_add(c, &n, "ours_kvm_shape_snap", op_pread, -1,
				  shape_snap.stats.data_size,
				  shape_snap.stats.h.data_offset, 10),
			 shape_snap.fds, NFD);
		cont_fds(cont_add(c, &n, "ours_kvm_shape_snap_values", op_pread,
				  -1, k.stats.data_size,
				  shape_snap.stats.h.data_offset, 10),
			 shape_snap.fds, NFD);
		cont_add(c, &n, "zero_kvm_snap_size", op_pread, zero,
			 shape_snap.stats.data_size, 0, 10);
		matched = ours.data_size < k.stats.data_size ?
			  ours.data_size : k.stats.data_size;
		/* The larger of the two, cut to the smaller's size. */
		if (matched != ours.data_size)
			cont_fds(cont_add(c, &n, "ours_vcpu_matched", op_pread,
					  -1, matched, ours.h.data_offset,
					  10), ours_fds, NFD);
		if (matched != k.stats.data_size)
			cont_fds(cont_add(c, &n, "kvm_vcpu_matched", op_pread,
					  -1, matched, k.stats.h.data_offset,
					  10), k.fds, NFD);
	}
	fprintf(stderr, "b1: whole data blocks\n");
	measure(c, n, 3 * rounds);
	jconts("whole", c, n);
	jnum("matched_bytes", matched);
	jend();

	bench_set_close(&big);
	if (have_kvm) {
		bench_set_close(&shape_snap);
		bench_set_close(&shape);
		kvm_close(&k);
	}
	close(bdev);
	close(zero);
	sfile_close(&ours);
	for (j = 0; j < NFD; j++) {
		if (j)
			close(ours_fds[j]);
		close(vcpu[j]);
	}
	close(vm);
	close(dev);
}
