// SPDX-License-Identifier: GPL-2.0
/*
 * libstatsfd: the VM and vCPU fds a VMM holds, as /proc/PID/fd names them,
 * and the stats fd each gives.  Shared by `statsfd --pid` and the
 * collector's --discover-kvm, which find them in other processes and take
 * them with pidfd_getfd().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>
#include <linux/statsfd_vm.h>

#include "statsfd.h"

/*
 * "PREFIX" exactly, or "PREFIXN" with N a decimal vCPU index and nothing
 * after it: the names the kernel gives (anon_inode_getfd()).
 */
static bool match(const char *link, const char *prefix, bool indexed,
		  int *vcpu)
{
	size_t n = strlen(prefix);
	const char *p = link + n;
	char *end;
	long v;

	if (strncmp(link, prefix, n))
		return false;
	if (!indexed)
		return *p == '\0';
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	v = strtol(p, &end, 10);
	if (*end || errno || v > INT_MAX)
		return false;
	*vcpu = (int)v;
	return true;
}

enum statsfd_vmfd_kind statsfd_vmfd_classify(const char *link, int *vcpu)
{
	static const struct {
		const char *prefix;
		bool indexed;
		enum statsfd_vmfd_kind kind;
	} names[] = {
		{ "anon_inode:kvm-vm", false, STATSFD_VMFD_KVM_VM },
		{ "anon_inode:kvm-vcpu:", true, STATSFD_VMFD_KVM_VCPU },
		{ "anon_inode:kvm-vm-stats", false, STATSFD_VMFD_KVM_VM_STATS },
		{ "anon_inode:kvm-vcpu-stats:", true, STATSFD_VMFD_KVM_VCPU_STATS },
		{ "anon_inode:statsfd-vm", false, STATSFD_VMFD_SFD_VM },
		{ "anon_inode:statsfd-vcpu:", true, STATSFD_VMFD_SFD_VCPU },
	};
	unsigned int i;

	*vcpu = -1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (match(link, names[i].prefix, names[i].indexed, vcpu))
			return names[i].kind;
	*vcpu = -1;
	return STATSFD_VMFD_NONE;
}

int statsfd_vmfd_stats_fd(int fd, enum statsfd_vmfd_kind kind)
{
	switch (kind) {
	case STATSFD_VMFD_KVM_VM_STATS:
	case STATSFD_VMFD_KVM_VCPU_STATS:
		/* Already a stats fd: a reference of our own. */
		return fcntl(fd, F_DUPFD_CLOEXEC, 3);
	case STATSFD_VMFD_KVM_VM:
	case STATSFD_VMFD_KVM_VCPU:
		return ioctl(fd, KVM_GET_STATS_FD, NULL);
	case STATSFD_VMFD_SFD_VM:
	case STATSFD_VMFD_SFD_VCPU:
		return ioctl(fd, STATSFD_VM_GET_STATS_FD, NULL);
	default:
		errno = EINVAL;
		return -1;
	}
}
