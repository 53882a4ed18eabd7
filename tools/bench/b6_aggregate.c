// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b6": the cost of a VM-wide figure as vCPUs are added
 * (1 to 256).  One pread of the VM's stats fd, whose values the kernel
 * aggregates, against what a reader does without that aggregation: pread
 * every vCPU's stats fd and sum the values.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/**
 * struct vcpus_arg - the vCPU stats fds op_vcpus_sum() reads
 * @fds: stats fds of the VM's vCPUs
 * @count: how many of them
 */
struct vcpus_arg {
	const int *fds;
	int count;
};

static void op_vcpus_sum(struct cont *c)
{
	const struct vcpus_arg *a = c->arg;
	uint64_t *acc = (uint64_t *)(buf + BUF_SIZE / 2);
	const uint64_t *v = (const uint64_t *)buf;
	size_t n = c->len / 8, i;
	int k;

	/* What a reader without kernel aggregation does: read all, sum. */
	memset(acc, 0, c->len);
	for (k = 0; k < a->count; k++) {
		if (pread(a->fds[k], buf, c->len, c->off) != (ssize_t)c->len)
			die("pread vCPU stats");
		for (i = 0; i < n; i++)
			acc[i] += v[i];
	}
	c->sink += acc[0];
}

void phase_b6(int max_vcpus)
{
	static const int counts[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
	static int vcpu[256], vcpu_stats[256];
	struct vcpus_arg va;
	struct cont c[MAX_CONT];
	struct sfile vm_s, vc_s;
	int dev, vm, have = 0, n;
	size_t i;

	dev = vm_dev();
	vm = vm_create(dev);
	sfile_open(&vm_s, stats_fd(vm));
	vcpu[0] = vcpu_create(vm, 0);
	if (vcpu_run_exits(vcpu[0], 300))
		die("STATSFD_VM_RUN");
	vcpu_stats[0] = stats_fd(vcpu[0]);
	have = 1;
	sfile_open(&vc_s, dup(vcpu_stats[0]));
	jbegin("b6");
	jlayout("vm_layout", &vm_s);
	jlayout("vcpu_layout", &vc_s);
	jopen("counts", '[');
	for (i = 0; i < ARRAY_SIZE(counts) && counts[i] <= max_vcpus; i++) {
		while (have < counts[i]) {
			vcpu[have] = vcpu_create(vm, have);
			if (vcpu_run_exits(vcpu[have], 300))
				die("STATSFD_VM_RUN");
			vcpu_stats[have] = stats_fd(vcpu[have]);
			have++;
		}
		n = 0;
		cont_add(c, &n, "vm_pread", op_pread, vm_s.fd, vm_s.data_size,
			 vm_s.h.data_offset, counts[i] > 32 ? 10 : 50);
		va.fds = vcpu_stats;
		va.count = counts[i];
		cont_add(c, &n, "vcpus_pread_sum", op_vcpus_sum, -1,
			 vc_s.data_size, vc_s.h.data_offset,
			 counts[i] > 32 ? 1 : 10)->arg = &va;
		fprintf(stderr, "b6: %d vCPUs\n", counts[i]);
		measure(c, n, rounds);
		jopen(NULL, '{');
		jnum("vcpus", counts[i]);
		jnum("vm_pread_ns", c[0].median);
		jnum("vm_pread_p25_ns", c[0].p25);
		jnum("vm_pread_p75_ns", c[0].p75);
		jnum("vcpus_pread_sum_ns", c[1].median);
		jclose('}');
	}
	jclose(']');
	jend();
	for (i = 0; i < (size_t)have; i++) {
		close(vcpu_stats[i]);
		close(vcpu[i]);
	}
	sfile_close(&vc_s);
	sfile_close(&vm_s);
	close(vm);
	close(dev);
}
