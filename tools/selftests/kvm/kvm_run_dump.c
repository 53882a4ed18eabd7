// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_run_dump - run one deterministic VM on /dev/kvm and dump its stats
 * files, for comparing two KVMs (upstream and statsfd-served) byte for
 * byte.
 *
 * Usage: kvm_run_dump OUTDIR VCPUS IO_EXITS
 *
 * Each vCPU runs the same 16-bit real-mode loop from guest page 0x1000:
 * IO_EXITS "out" instructions to port 0x10, then "hlt".  With no in-kernel
 * irqchip every out and the hlt exit to this program, so each vCPU makes
 * exactly IO_EXITS io exits and one halt exit.  Then OUTDIR/vm.bin and
 * OUTDIR/vcpu-N.bin get the whole stats files (read with pread, as every
 * parser does), and OUTDIR/links the /proc/self/fd names of the stats fds.
 * Exits 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>
#include "kvm_guest.h"

#define MAX_VCPUS	8

static void die(const char *what)
{
	fprintf(stderr, "kvm_run_dump: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The file's size from its header and descriptors: end of its last block. */
static size_t stats_file_size(int fd)
{
	struct kvm_stats_header h;
	size_t stride, end, data_end = 0;
	char *descs;
	uint32_t i;

	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		die("header");
	stride = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(stride * h.num_desc);
	if (!descs || pread(fd, descs, stride * h.num_desc, h.desc_offset) !=
	    (ssize_t)(stride * h.num_desc))
		die("descriptors");
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i * stride);
		size_t e = d->offset + d->size * sizeof(uint64_t);

		if (e > data_end)
			data_end = e;
	}
	free(descs);
	end = h.desc_offset + stride * h.num_desc;
	if (h.data_offset + data_end > end)
		end = h.data_offset + data_end;
	return end;
}

static void dump(int fd, const char *dir, const char *name, FILE *links)
{
	char path[PATH_MAX], proc[64], link[256];
	size_t size = stats_file_size(fd);
	char *buf = malloc(size + 1);
	ssize_t n;
	FILE *f;

	if (!buf)
		die("malloc");
	/* One byte more than the file: the read must stop at its end. */
	n = pread(fd, buf, size + 1, 0);
	if (n != (ssize_t)size)
		die("whole-file pread is not the file's size");
	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(buf, 1, size, f) != size || fclose(f))
		die(path);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	if (n < 0)
		die("readlink");
	link[n] = 0;
	fprintf(links, "%s %s\n", name, link);
	free(buf);
}

int main(int argc, char **argv)
{
	/* mov $n, %cx; 1: out %al, $0x10; loop 1b; hlt */
	unsigned char code[] = { 0xb9, 0, 0, 0xe6, 0x10, 0xe2, 0xfc, 0xf4 };
	int kvm, vm, vcpu[MAX_VCPUS], nvcpus, exits, i;
	char path[PATH_MAX], name[32];
	FILE *links;

	if (argc != 4) {
		fprintf(stderr, "usage: kvm_run_dump OUTDIR VCPUS IO_EXITS\n");
		return 2;
	}
	nvcpus = atoi(argv[2]);
	exits = atoi(argv[3]);
	if (nvcpus < 1 || nvcpus > MAX_VCPUS || exits < 1 || exits > 65535) {
		fprintf(stderr, "kvm_run_dump: VCPUS 1-%d, IO_EXITS 1-65535\n",
			MAX_VCPUS);
		return 2;
	}
	code[1] = exits & 0xff;
	code[2] = exits >> 8;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("/dev/kvm");
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	kvm_guest_memory(vm, code, sizeof(code));

	for (i = 0; i < nvcpus; i++) {
		struct kvm_guest_vcpu v;
		int io;

		kvm_guest_vcpu(kvm, vm, i, &v);
		vcpu[i] = v.fd;
		io = kvm_guest_run_io(&v);
		if (v.run->exit_reason != KVM_EXIT_HLT) {
			fprintf(stderr, "kvm_run_dump: vcpu %d: exit reason %u\n",
				i, v.run->exit_reason);
			return 1;
		}
		if (io != exits) {
			fprintf(stderr, "kvm_run_dump: vcpu %d: %d io exits, not %d\n",
				i, io, exits);
			return 1;
		}
		kvm_guest_unmap(&v);
	}

	snprintf(path, sizeof(path), "%s/links", argv[1]);
	links = fopen(path, "w");
	if (!links)
		die(path);
	dump(ioctl(vm, KVM_GET_STATS_FD, NULL), argv[1], "vm", links);
	for (i = 0; i < nvcpus; i++) {
		snprintf(name, sizeof(name), "vcpu-%d", i);
		dump(ioctl(vcpu[i], KVM_GET_STATS_FD, NULL), argv[1], name, links);
	}
	if (fclose(links))
		die(path);
	return 0;
}
