/* SPDX-License-Identifier: GPL-2.0 */
/*
 * host_util.h - what the statsfd_host lifetime selftests share: stats fds
 * from /dev/statsfd_host, reading and polling them, rtnetlink links, block
 * device numbers, and STATSFD_STRESS.
 */
#ifndef STATSFD_HOST_UTIL_H
#define STATSFD_HOST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/statsfd.h>
#include <linux/statsfd_host.h>

#define HOST_DEV	"/dev/statsfd_host"

/* 1 under STATSFD_STRESS=1 (CI): the loops run longer. */
static inline int host_stress(void)
{
	const char *s = getenv("STATSFD_STRESS");

	return s && strcmp(s, "1") == 0;
}

/* A stats fd for @a, or -errno (-1000 - errno if the device won't open). */
static inline int host_fd_args(const struct statsfd_host_stats_fd *a)
{
	int dev = open(HOST_DEV, O_RDONLY | O_CLOEXEC);
	int fd;

	if (dev < 0)
		return -1000 - errno;
	fd = ioctl(dev, STATSFD_HOST_GET_STATS_FD, a);
	fd = fd < 0 ? -errno : fd;
	close(dev);
	return fd;
}

static inline int host_net_fd(int ifindex)
{
	struct statsfd_host_stats_fd a = {
		.kind = STATSFD_HOST_NETDEV, .ifindex = ifindex,
	};

	return host_fd_args(&a);
}

static inline int host_block_fd(unsigned int major, unsigned int minor)
{
	struct statsfd_host_stats_fd a = {
		.kind = STATSFD_HOST_BLOCK, .major = major, .minor = minor,
	};

	return host_fd_args(&a);
}

/* The poll events of @fd (a stats fd always polls POLLIN), or -1. */
static inline int host_poll(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };

	if (poll(&p, 1, timeout_ms) < 0)
		return -1;
	return p.revents;
}

/* Waits up to @secs for POLLHUP on @fd, looking every 10 ms. */
static inline int host_wait_hup(int fd, int secs)
{
	int i, ev = 0;

	for (i = 0; i < secs * 100; i++) {
		ev = host_poll(fd, 0);
		if (ev < 0 || (ev & POLLHUP))
			return ev;
		usleep(10 * 1000);
	}
	return ev;
}

/* The header and data of a stats fd: 0 if it reads whole. */
static inline int host_read_ok(int fd)
{
	char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	return n > (ssize_t)sizeof(struct statsfd_header) &&
	       n < (ssize_t)sizeof(buf) ? 0 : -1;
}

/* ----- rtnetlink ----- */

struct host_nlreq {
	struct nlmsghdr n;
	struct ifinfomsg i;
	char attrs[1024];
};

/*
 * Appends attribute @type to the request @req: a struct host_nlreq, or any
 * buffer that starts with its struct nlmsghdr (pointers from @req itself,
 * so the compiler sees the whole buffer).
 */
static inline struct rtattr *host_nl_add(void *req, int type,
					 const void *data, int len)
{
	struct nlmsghdr *n = req;
	struct rtattr *rta = (void *)((char *)req + NLMSG_ALIGN(n->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return rta;
}

/* Closes the nested attribute @nest: it holds all added since. */
static inline void host_nl_end(void *req, struct rtattr *nest)
{
	struct nlmsghdr *n = req;

	nest->rta_len = (char *)req + n->nlmsg_len - (char *)nest;
}

/*
 * Sends @n and waits for its answer: 0 on an ack, -errno on an error;
 * with @reply, the first non-ack answer is copied there.
 */
static inline int host_nl_talk(struct nlmsghdr *n, void *reply,
			       size_t reply_size)
{
	static char buf[16384];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int s, ret = -EIO;
	ssize_t len;

	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0)
		return -errno;
	n->nlmsg_flags |= NLM_F_REQUEST | (reply ? 0 : NLM_F_ACK);
	n->nlmsg_seq = 1;
	if (sendto(s, n, n->nlmsg_len, 0, (void *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto out;
	}
	len = recv(s, buf, sizeof(buf), 0);
	if (len < (ssize_t)sizeof(struct nlmsghdr))
		goto out;
	n = (struct nlmsghdr *)buf;
	if (n->nlmsg_type == NLMSG_ERROR) {
		ret = ((struct nlmsgerr *)NLMSG_DATA(n))->error;
	} else if (reply) {
		memcpy(reply, buf, len < (ssize_t)reply_size ? len : reply_size);
		ret = 0;
	}
out:
	close(s);
	return ret;
}

static inline void host_nl_init(struct host_nlreq *r, int type, int flags,
				int ifindex)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_len = NLMSG_LENGTH(sizeof(r->i));
	r->n.nlmsg_type = type;
	r->n.nlmsg_flags = flags;
	r->i.ifi_family = AF_UNSPEC;
	r->i.ifi_index = ifindex;
}

/* ----- block devices ----- */

/*
 * fscanf(@fmt, ...) on the file that snprintf(@path_fmt, @name) names:
 * the items matched (0 at end of file), or -errno if it does not open.
 */
static inline int host_scan_file(const char *path_fmt, const char *name,
				 const char *fmt, ...)
{
	char path[128];
	va_list ap;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), path_fmt, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	n = vfscanf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	return n == EOF ? 0 : n;
}

/* "MAJ:MIN" of /sys/class/block/@name/dev: 0, or -errno. */
static inline int host_sysfs_devt(const char *name, unsigned int *major,
				  unsigned int *minor)
{
	int n = host_scan_file("/sys/class/block/%s/dev", name, "%u:%u",
			       major, minor);

	return n == 2 ? 0 : n < 0 ? n : -EIO;
}

/* The reference count of module @name, or -1 (built in, or no such). */
static inline int host_module_refcnt(const char *name)
{
	int n;

	if (host_scan_file("/sys/module/%s/refcnt", name, "%d", &n) != 1)
		return -1;
	return n;
}

#endif /* STATSFD_HOST_UTIL_H */
