// SPDX-License-Identifier: GPL-2.0
/*
 * b17_kvm - B17: real KVM's stats, upstream vs served by statsfd
 * (kvm/patches/6.12), measured on whatever kvm.ko is loaded; the guest
 * script (b17-guest.sh) loads each in turn, rounds interleaved, and
 * report.py sets them side by side.
 *
 * Usage: b17_kvm LABEL
 *
 * Prints one BENCH-JSON line, phase "b17", with:
 *   pread_ns       one pread() of a vCPU's whole data block (median of
 *                  PREAD_BATCHES batches of PREAD_N)
 *   mmap_ns        one statsfd_mmap_copy() of the same values, when the
 *                  vCPU stats fd can be mapped (kvm.stats_snapshot=1)
 *   exit_ns        one CPUID exit of a guest looping on CPUID (handled in
 *                  the kernel, no return to userspace): the run loop's cost
 *                  per exit (median of EXIT_BATCHES runs of EXIT_N)
 *   vcpu_bytes     MemFree drop per vCPU while creating MEM_VCPUS vCPUs
 *                  and a stats fd on each, after dropping the page cache
 *                  (MemFree moves in batches of the per-CPU page lists:
 *                  enough vCPUs make that small beside their own memory)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <linux/statsfd.h>
#include "kvm_guest.h"

#define PREAD_N		500
#define PREAD_BATCHES	9
#define EXIT_N		5000
#define EXIT_BATCHES	5
#define MEM_VCPUS	256

static void die(const char *what)
{
	printf("BENCH-JSON {\"phase\":\"b17\",\"error\":\"%s: %s\"}\n", what,
	       strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median(uint64_t *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static long memfree_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* The data block's size: the end of the furthest stat's values. */
static size_t data_block_size(int fd, const struct kvm_stats_header *h)
{
	size_t stride = sizeof(struct kvm_stats_desc) + h->name_size, end = 0;
	char *descs = malloc(stride * h->num_desc);
	uint32_t i;

	if (!descs || pread(fd, descs, stride * h->num_desc, h->desc_offset) !=
	    (ssize_t)(stride * h->num_desc))
		die("descriptors");
	for (i = 0; i < h->num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i * stride);

		if (d->offset + d->size * sizeof(uint64_t) > end)
			end = d->offset + d->size * sizeof(uint64_t);
	}
	free(descs);
	return end;
}

/*
 * One run of the guest's loop, from its start: EXIT_N CPUIDs (each an exit
 * KVM handles itself), then hlt (an exit to us).  Timed: the KVM_RUN alone.
 */
static uint64_t cpuid_run(struct kvm_guest_vcpu *v)
{
	uint64_t t0;

	kvm_guest_restart(v->fd);
	t0 = now_ns();
	if (ioctl(v->fd, KVM_RUN, 0))
		die("KVM_RUN");
	if (v->run->exit_reason != KVM_EXIT_HLT)
		die("the CPUID loop did not end in hlt");
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	/* mov $EXIT_N, %edi; 1: xor %eax, %eax; cpuid; dec %edi; jnz 1b; hlt */
	unsigned char code[] = { 0x66, 0xbf, EXIT_N & 0xff, (EXIT_N >> 8) & 0xff,
				 (EXIT_N >> 16) & 0xff, 0, 0x66, 0x31, 0xc0,
				 0x0f, 0xa2, 0x66, 0x4f, 0x75, 0xf7, 0xf4 };
	uint64_t pread_v[PREAD_BATCHES], mmap_v[PREAD_BATCHES], exit_v[EXIT_BATCHES];
	struct kvm_stats_header h;
	struct statsfd_mmap_header *map;
	int kvm, vm, stats, i, j, drop, fds[MEM_VCPUS];
	struct kvm_guest_vcpu vcpu;
	long before, after;
	size_t data_size;
	char *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: b17_kvm LABEL\n");
		return 2;
	}
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	kvm_guest_memory(vm, code, sizeof(code));
	kvm_guest_vcpu(kvm, vm, 0, &vcpu);

	/* The run loop: a first run warms everything up. */
	cpuid_run(&vcpu);
	for (i = 0; i < EXIT_BATCHES; i++)
		exit_v[i] = cpuid_run(&vcpu) / EXIT_N;

	stats = ioctl(vcpu.fd, KVM_GET_STATS_FD, NULL);
	if (stats < 0 || pread(stats, &h, sizeof(h), 0) != sizeof(h))
		die("vCPU stats fd");
	data_size = data_block_size(stats, &h);
	buf = malloc(data_size);
	if (!buf)
		die("malloc");
	for (i = 0; i < PREAD_BATCHES; i++) {
		uint64_t t0 = now_ns();

		for (j = 0; j < PREAD_N; j++)
			if (pread(stats, buf, data_size, h.data_offset) != (ssize_t)data_size)
				die("pread data");
		pread_v[i] = (now_ns() - t0) / PREAD_N;
	}
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, stats, 0);
	if (map != MAP_FAILED) {
		for (i = 0; i < PREAD_BATCHES; i++) {
			uint64_t t0 = now_ns();

			for (j = 0; j < PREAD_N; j++)
				if (statsfd_mmap_copy(map, buf, 0, map->data_size, NULL))
					die("statsfd_mmap_copy");
			mmap_v[i] = (now_ns() - t0) / PREAD_N;
		}
	}

	/*
	 * Memory: a second VM, MEM_VCPUS vCPUs, a stats fd on each, from a
	 * page cache dropped first.
	 */
	close(stats);
	drop = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (drop < 0 || write(drop, "3", 1) != 1)
		die("drop_caches");
	close(drop);
	before = memfree_kb();
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	for (i = 0; i < MEM_VCPUS; i++) {
		fds[i] = ioctl(ioctl(vm, KVM_CREATE_VCPU, i), KVM_GET_STATS_FD, NULL);
		if (fds[i] < 0)
			die("vCPU and stats fd");
	}
	after = memfree_kb();

	printf("BENCH-JSON {\"phase\":\"b17\",\"kvm\":\"%s\",\"data_size\":%zu,"
	       "\"pread_ns\":%.0f,\"exit_ns\":%.0f,\"exit_n\":%d,"
	       "\"vcpu_bytes\":%.0f,\"mem_vcpus\":%d",
	       argv[1], data_size, median(pread_v, PREAD_BATCHES),
	       median(exit_v, EXIT_BATCHES), EXIT_N,
	       (before - after) * 1024.0 / MEM_VCPUS, MEM_VCPUS);
	if (map != MAP_FAILED)
		printf(",\"mmap_ns\":%.0f", median(mmap_v, PREAD_BATCHES));
	printf("}\n");
	return 0;
}
