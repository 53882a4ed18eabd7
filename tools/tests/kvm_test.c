// SPDX-License-Identifier: GPL-2.0
/*
 * libstatsfd against real KVM: create a VM and a vCPU on /dev/kvm, get
 * their KVM_GET_STATS_FD fds and parse them with the library, checking the
 * stats every KVM has since 5.14.  It runs in `make check`'s 6.1 guest
 * with the stock kvm modules loaded (tools/testing/check.sh), where /dev/kvm
 * is promised: a missing or refusing /dev/kvm is a failure, not a skip.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "statsfd_expo.h"
#include "tap.h"

static void check_fd(int fd, const char *what, const char *want_stat,
		     uint32_t want_type)
{
	struct statsfd_error err;
	const struct statsfd_stat *st;
	struct statsfd_buf out = { 0 };
	struct statsfd_prom_series ser;
	struct statsfd *sf;
	uint64_t *a, *b;
	unsigned int i, nhist = 0;
	int ret;

	sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
	if (!tap_ok(sf != NULL, "%s stats fd parsed (%s)", what, sf ? "ok" : err.msg))
		return;
	tap_ok(!strncmp(statsfd_id(sf), "kvm-", 4), "%s id '%s' starts with kvm-", what,
	       statsfd_id(sf));
	tap_ok(statsfd_header(sf)->id_offset == sizeof(struct kvm_stats_header) &&
	       statsfd_header(sf)->name_size == 48,
	       "%s header: id at 24, name_size 48 (KVM_STATS_NAME_SIZE)", what);
	st = statsfd_find(sf, want_stat);
	tap_ok(st && st->type == want_type, "%s has %s (%s)", what, want_stat,
	       st ? statsfd_type_name(st->type) : "missing");
	for (i = 0; i < statsfd_num_stats(sf); i++)
		nhist += statsfd_stat_is_hist(statsfd_stat(sf, i));
	tap_diag("%s: %u stats (%u histograms), data %zu bytes", what,
		 statsfd_num_stats(sf), nhist, statsfd_data_size(sf));
	a = calloc(1, statsfd_data_size(sf) + 8);
	b = calloc(1, statsfd_data_size(sf) + 8);
	tap_ok(!statsfd_is_mapped(sf),
	       "%s stats fd not mapped (KVM's has no mmap: ENODEV, pread only)", what);
	tap_ok(!statsfd_read(sf, a, &err) && !statsfd_read(sf, b, &err),
	       "%s data read twice with one pread each", what);
	tap_ok(st && !statsfd_read_stats(sf, &st, 1, b, &err) &&
	       (st->type != KVM_STATS_TYPE_CUMULATIVE ||
		statsfd_values(st, b)[0] >= statsfd_values(st, a)[0]),
	       "%s %s read alone with statsfd_read_stats()", what, want_stat);
	ser = (struct statsfd_prom_series){ sf, a, "kvm", "", NULL, NULL };
	/* Written first: the length in the message must be the one tested. */
	ret = statsfd_prom_write(&out, &ser, 1, NULL);
	tap_ok(!ret && out.len > 0, "%s exposed as Prometheus text (%zu bytes)",
	       what, out.len);
	statsfd_buf_free(&out);
	free(a);
	free(b);
	statsfd_close(sf);
}

int main(void)
{
	int kvm, vm, vcpu, fd;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		tap_ok(0, "real KVM stats fds: /dev/kvm: %s", strerror(errno));
		return tap_done();
	}
	if (ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_BINARY_STATS_FD) <= 0) {
		tap_ok(0, "real KVM stats fds: KVM_CAP_BINARY_STATS_FD not supported");
		return tap_done();
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		tap_ok(0, "real KVM stats fds: KVM_CREATE_VM: %s", strerror(errno));
		return tap_done();
	}
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0) {
		tap_ok(0, "real KVM vCPU stats fd: KVM_CREATE_VCPU: %s", strerror(errno));
	}
	fd = ioctl(vm, KVM_GET_STATS_FD, NULL);
	if (tap_ok(fd >= 0, "KVM_GET_STATS_FD on the VM"))
		check_fd(fd, "VM", "remote_tlb_flush", KVM_STATS_TYPE_CUMULATIVE);
	if (vcpu >= 0) {
		fd = ioctl(vcpu, KVM_GET_STATS_FD, NULL);
		if (tap_ok(fd >= 0, "KVM_GET_STATS_FD on the vCPU"))
			check_fd(fd, "vCPU", "halt_wait_hist", KVM_STATS_TYPE_LOG_HIST);
		close(vcpu);
	}
	close(vm);
	close(kvm);
	return tap_done();
}
