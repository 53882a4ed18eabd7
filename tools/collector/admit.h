/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: which fds may become sources, and what they cost.
 */
#ifndef STATSFD_COLLECTOR_ADMIT_H
#define STATSFD_COLLECTOR_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Largest stats fd the collector takes.  KVM's largest block (an x86
 * vCPU) has about 150 stats, names of 48 bytes and a few KiB of data;
 * statsfd's providers stay within the kernel's 256-byte names.  The caps
 * leave an order of magnitude of room and bound what one fd can cost.
 */
#define ADMIT_NAME_SIZE_MAX	256u
#define ADMIT_NUM_DESC_MAX	1024u
#define ADMIT_DATA_SIZE_MAX	(256u << 10)

/**
 * enum source_ns - metric namespace of a source, decided by its fd's type
 * @SOURCE_NS_STATSFD: a statsfd stats fd (anon inode "statsfd"): statsfd_*
 * @SOURCE_NS_KVM: a KVM stats fd ("kvm-vm-stats", "kvm-vcpu-stats"): kvm_*
 */
enum source_ns {
	SOURCE_NS_STATSFD,
	SOURCE_NS_KVM,
};

/**
 * struct admit_info - what admit_fd() learned about an fd
 * @ns: its metric namespace
 * @data_size: bytes of its data block (from the descriptors)
 * @cost: bytes the collector will hold for it (see admit_fd())
 */
struct admit_info {
	enum source_ns ns;
	size_t data_size;
	size_t cost;
};

const char *source_ns_name(enum source_ns ns);
bool stats_fd_ns(const char *link, enum source_ns *ns);
int admit_fd(int fd, bool accept_memfd, struct admit_info *info, char *why,
	     size_t len);

#endif /* STATSFD_COLLECTOR_ADMIT_H */
