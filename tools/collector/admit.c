// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: admission of an fd as a source.  Only the stats fds
 * of statsfd and of KVM get in: an anon inode (fstatfs) whose name is one
 * of theirs.  Their reads copy kernel memory and never block, so no
 * source can stall the daemon's single loop, as a file on a stalled
 * FUSE or NFS mount would.  The header and descriptors are then checked
 * against the caps of admit.h with two small preads, before the library
 * allocates anything for the fd: a header claiming a huge block costs
 * the daemon 24 bytes read and an error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <linux/statsfd.h>

#include "admit.h"
#include "collector.h"

/*
 * readlink() of /proc/self/fd/N for each fd type we read, and its
 * namespace: the names given to anon_inode_getfile() by statsfd
 * (src/core/fd.c: every stats fd and view) and by KVM
 * (kvm_vm_ioctl_get_stats_fd(), kvm_vcpu_ioctl_get_stats_fd(), which
 * appends ":<vcpu id>").
 */
static const struct {
	const char *link;
	bool vcpu_id;
	enum source_ns ns;
} stats_fd_types[] = {
	{ "anon_inode:statsfd", false, SOURCE_NS_STATSFD },
	{ "anon_inode:kvm-vm-stats", false, SOURCE_NS_KVM },
	{ "anon_inode:kvm-vcpu-stats", true, SOURCE_NS_KVM },
};

/* @link is @name, or with @vcpu_id also "@name:<decimal>". */
static bool link_is(const char *link, const char *name, bool vcpu_id)
{
	size_t n = strlen(name);

	if (strncmp(link, name, n))
		return false;
	if (!link[n])
		return true;
	if (!vcpu_id || link[n] != ':' || !link[n + 1])
		return false;
	return strspn(link + n + 1, "0123456789") == strlen(link + n + 1);
}

/**
 * stats_fd_ns() - the namespace of a stats fd from its /proc/self/fd link
 * @link: what readlink() gave, e.g. "anon_inode:kvm-vcpu-stats:3"
 * @ns: set on success
 *
 * Return: true for a stats fd of statsfd or KVM.
 */
bool stats_fd_ns(const char *link, enum source_ns *ns)
{
	unsigned int i;

	for (i = 0; i < sizeof(stats_fd_types) / sizeof(*stats_fd_types); i++) {
		if (link_is(link, stats_fd_types[i].link, stats_fd_types[i].vcpu_id)) {
			*ns = stats_fd_types[i].ns;
			return true;
		}
	}
	return false;
}

/**
 * source_ns_name() - metric name prefix of a namespace
 * @ns: namespace
 *
 * Return: "statsfd" or "kvm".
 */
const char *source_ns_name(enum source_ns ns)
{
	return ns == SOURCE_NS_KVM ? "kvm" : "statsfd";
}

/* Test fixtures are memfds: tmpfs files named "/memfd:..." by the kernel. */
static bool is_memfd(const struct statfs *st, const char *link)
{
	return ((unsigned long)st->f_type == (unsigned long)TMPFS_MAGIC ||
		(unsigned long)st->f_type == (unsigned long)HUGETLBFS_MAGIC) &&
	       !strncmp(link, "/memfd:", 7);
}

static int fd_type(int fd, bool accept_memfd, enum source_ns *ns, char *why,
		   size_t len)
{
	char path[64], link[128];
	struct statfs st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (fstatfs(fd, &st) || n < 0) {
		snprintf(why, len, "cannot identify the fd: %s", strerror(errno));
		return -EBADF;
	}
	link[n] = '\0';
	if ((unsigned long)st.f_type == (unsigned long)ANON_INODE_FS_MAGIC &&
	    stats_fd_ns(link, ns))
		return 0;
	if (accept_memfd && is_memfd(&st, link)) {
		*ns = SOURCE_NS_STATSFD;
		return 0;
	}
	/* The link is the kernel's, but a path may hold anything: no quotes. */
	snprintf(why, len, "not a stats fd of statsfd or KVM (%.*s)",
		 (int)strcspn(link, "\"\\\n"), link);
	return -EPERM;
}

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(fd, buf, n, (off_t)off);

	return r == (ssize_t)n ? 0 : -EINVAL;
}

/**
 * admit_fd() - decide whether @fd may become a source
 * @fd: the fd a client sent; not consumed
 * @accept_memfd: test mode (--test-accept-memfd): memfds are taken too,
 *	in the statsfd namespace
 * @info: filled on success
 * @why: reason of a refusal
 * @len: size of @why
 *
 * The fd must be a stats fd of statsfd or KVM, with at most
 * ADMIT_NUM_DESC_MAX descriptors, names of at most ADMIT_NAME_SIZE_MAX
 * bytes and a data block of at most ADMIT_DATA_SIZE_MAX bytes.  Its cost
 * is what the collector keeps for it: two copies of the data block (the
 * last read and the read buffer) and the descriptors.
 *
 * Return: 0; -EPERM for an fd of another type, -EFBIG for one over a cap,
 * -EINVAL for a header or descriptors that cannot be read, -EBADF when
 * the fd cannot be identified.
 */
int admit_fd(int fd, bool accept_memfd, struct admit_info *info, char *why,
	     size_t len)
{
	struct statsfd_header h;
	uint64_t data = 0, stride;
	unsigned char *desc;
	unsigned int i;
	int ret;

	ret = fd_type(fd, accept_memfd, &info->ns, why, len);
	if (ret)
		return ret;
	if (read_at(fd, &h, sizeof(h), 0)) {
		snprintf(why, len, "cannot read the header");
		return -EINVAL;
	}
	if (h.name_size > ADMIT_NAME_SIZE_MAX) {
		snprintf(why, len, "header.name_size %u above the collector's cap %u",
			 h.name_size, ADMIT_NAME_SIZE_MAX);
		return -EFBIG;
	}
	if (h.num_desc > ADMIT_NUM_DESC_MAX) {
		snprintf(why, len, "header.num_desc %u above the collector's cap %u",
			 h.num_desc, ADMIT_NUM_DESC_MAX);
		return -EFBIG;
	}
	stride = sizeof(struct statsfd_desc) + (uint64_t)h.name_size;
	desc = malloc(stride * h.num_desc + 1);
	if (!desc) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	if (read_at(fd, desc, stride * h.num_desc, h.desc_offset)) {
		free(desc);
		snprintf(why, len, "cannot read the descriptors");
		return -EINVAL;
	}
	/* The extent of the data block, as the library will compute it. */
	for (i = 0; i < h.num_desc; i++) {
		struct statsfd_desc d;
		uint64_t end;

		memcpy(&d, desc + i * stride, sizeof(d));
		end = (uint64_t)d.offset + (uint64_t)d.size * 8;
		if (end > data)
			data = end;
	}
	free(desc);
	if (data > ADMIT_DATA_SIZE_MAX) {
		snprintf(why, len, "data block of %llu bytes above the collector's cap %u",
			 (unsigned long long)data, ADMIT_DATA_SIZE_MAX);
		return -EFBIG;
	}
	info->data_size = (size_t)data;
	info->cost = 2 * (size_t)data + (size_t)(stride * h.num_desc) + h.name_size;
	return 0;
}
