// SPDX-License-Identifier: GPL-2.0
/*
 * host_dev_test - statsfd_host's network interface and disk stats fds
 * (Documentation/statsfd-host-api.rst, 3.3 and 3.4): every counter read
 * between two readings of the kernel's own text (sysfs, rtnetlink,
 * /proc/diskstats), with traffic and I/O the test makes, and a disk's
 * in_flight 0 once its I/O is accounted; interfaces of
 * another network namespace; interfaces deleted or whose namespace dies
 * under an open fd (EPOLLHUP, last values kept); every argument error of
 * these two kinds.
 *
 * Runs as root in the test guest, with statsfd_host.ko loaded, the RAM
 * disks /dev/ram0 and /dev/ram1 (brd), veth, dummy and loop (stock
 * modules on the 6.1 leg).  Interfaces it makes are named sfd*,
 * its loop device loop77, and all are deleted again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/blkpg.h>
#include <linux/loop.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/statsfd.h>
#include <linux/statsfd_host.h>
#include <linux/veth.h>

#include "kselftest_harness.h"
#include "fd_pass.h"
#include "host_util.h"
#include "stats_file.h"

/* See sample_test.c: a false positive of kselftest_harness.h's longjmp. */
#pragma GCC diagnostic ignored "-Wclobbered"

/* An ifindex no interface of the guest's first namespace has. */
#define FAR_IFINDEX	4000

/* ----- stats files ----- */

/* The value of scalar stat @name, or UINT64_MAX without one. */
static uint64_t sfile_stat(const struct stats_image *f, const char *name)
{
	const struct statsfd_desc *d = stats_image_find(f, name);

	return d && d->size == 1 ? stats_image_val(f, name) : UINT64_MAX;
}

/* ----- rtnetlink ----- */

/* A dummy interface @name, at @ifindex (0: the kernel picks). */
static int link_add_dummy(const char *name, int ifindex)
{
	struct host_nlreq r;
	struct rtattr *li;

	host_nl_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, ifindex);
	host_nl_add(&r, IFLA_IFNAME, name, strlen(name) + 1);
	li = host_nl_add(&r, IFLA_LINKINFO, NULL, 0);
	host_nl_add(&r, IFLA_INFO_KIND, "dummy", 6);
	host_nl_end(&r, li);
	return host_nl_talk(&r.n, NULL, 0);
}

/* A veth pair @name - @peer. */
static int link_add_veth(const char *name, const char *peer)
{
	struct ifinfomsg pi = { .ifi_family = AF_UNSPEC };
	struct rtattr *li, *data, *p;
	struct host_nlreq r;

	host_nl_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	host_nl_add(&r, IFLA_IFNAME, name, strlen(name) + 1);
	li = host_nl_add(&r, IFLA_LINKINFO, NULL, 0);
	host_nl_add(&r, IFLA_INFO_KIND, "veth", 5);
	data = host_nl_add(&r, IFLA_INFO_DATA, NULL, 0);
	p = host_nl_add(&r, VETH_INFO_PEER, &pi, sizeof(pi));
	host_nl_add(&r, IFLA_IFNAME, peer, strlen(peer) + 1);
	host_nl_end(&r, p);
	host_nl_end(&r, data);
	host_nl_end(&r, li);
	return host_nl_talk(&r.n, NULL, 0);
}

static int link_up(int ifindex)
{
	struct host_nlreq r;

	host_nl_init(&r, RTM_NEWLINK, 0, ifindex);
	r.i.ifi_flags = IFF_UP;
	r.i.ifi_change = IFF_UP;
	return host_nl_talk(&r.n, NULL, 0);
}

static int link_del(int ifindex)
{
	struct host_nlreq r;

	host_nl_init(&r, RTM_DELLINK, 0, ifindex);
	return host_nl_talk(&r.n, NULL, 0);
}

/* The interface's IFLA_STATS64, as "ip -s link" prints it. */
static int link_stats64(int ifindex, struct rtnl_link_stats64 *st)
{
	static char reply[16384];
	struct nlmsghdr *n = (void *)reply;
	struct rtattr *rta;
	struct host_nlreq r;
	int len, ret;

	host_nl_init(&r, RTM_GETLINK, 0, ifindex);
	ret = host_nl_talk(&r.n, reply, sizeof(reply));
	if (ret)
		return ret;
	if (n->nlmsg_type != RTM_NEWLINK)
		return -EPROTO;
	len = n->nlmsg_len - NLMSG_LENGTH(sizeof(struct ifinfomsg));
	rta = (void *)((char *)NLMSG_DATA(n) +
		       NLMSG_ALIGN(sizeof(struct ifinfomsg)));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type != IFLA_STATS64)
			continue;
		memset(st, 0, sizeof(*st));
		memcpy(st, RTA_DATA(rta),
		       RTA_PAYLOAD(rta) < sizeof(*st) ? RTA_PAYLOAD(rta) :
							 sizeof(*st));
		return 0;
	}
	return -ENOENT;
}

/* ----- traffic ----- */

/*
 * Traffic out of an interface without AF_PACKET (the 6.12 test kernel has
 * none): an IPv4 address on it, and UDP to another address of its /24.
 * On a NOARP interface (dummy, or a veth end made so) each datagram leaves
 * at once, to the interface's own MAC address: the other end of a veth
 * pair receives it as PACKET_OTHERHOST and drops it (rx_otherhost_dropped).
 */
static int addr_add(int ifindex, const char *local)
{
	struct {
		struct nlmsghdr n;
		struct ifaddrmsg a;
		char attrs[64];
	} r = {};
	struct in_addr in;

	if (inet_pton(AF_INET, local, &in) != 1)
		return -EINVAL;
	r.n.nlmsg_len = NLMSG_LENGTH(sizeof(r.a));
	r.n.nlmsg_type = RTM_NEWADDR;
	r.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	r.a.ifa_family = AF_INET;
	r.a.ifa_prefixlen = 24;
	r.a.ifa_index = ifindex;
	host_nl_add(&r, IFA_LOCAL, &in, sizeof(in));
	host_nl_add(&r, IFA_ADDRESS, &in, sizeof(in));
	return host_nl_talk(&r.n, NULL, 0);
}

/* @n datagrams of 100 bytes to @dst, port 9 (discard). */
static int udp_send(const char *dst, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
	char buf[100] = "statsfd";
	int s, i, ret = 0;

	if (inet_pton(AF_INET, dst, &a.sin_addr) != 1)
		return -EINVAL;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	for (i = 0; i < n && !ret; i++)
		if (sendto(s, buf, sizeof(buf), 0, (void *)&a, sizeof(a)) !=
		    sizeof(buf))
			ret = -errno;
	close(s);
	return ret;
}

/* @ifindex up, NOARP, at @net.1/24; then @n datagrams to @net.2. */
static int traffic_out(int ifindex, const char *net, int n)
{
	char local[32], dst[32];
	struct host_nlreq r;
	int ret;

	host_nl_init(&r, RTM_NEWLINK, 0, ifindex);
	r.i.ifi_flags = IFF_UP | IFF_NOARP;
	r.i.ifi_change = IFF_UP | IFF_NOARP;
	ret = host_nl_talk(&r.n, NULL, 0);
	if (ret)
		return ret;
	snprintf(local, sizeof(local), "%s.1", net);
	snprintf(dst, sizeof(dst), "%s.2", net);
	ret = addr_add(ifindex, local);
	return ret ? ret : udp_send(dst, n);
}

/* @n UDP datagrams over the loopback, each received. */
static int udp_loopback(int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	char buf[200] = "statsfd";
	int rx, tx, i, ret = -EIO;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rx < 0 || tx < 0)
		goto out;
	if (bind(rx, (void *)&a, sizeof(a)) ||
	    getsockname(rx, (void *)&a, &alen))
		goto out;
	for (i = 0; i < n; i++) {
		if (sendto(tx, buf, sizeof(buf), 0, (void *)&a, alen) !=
		    sizeof(buf))
			goto out;
		if (recv(rx, buf, sizeof(buf), 0) != sizeof(buf))
			goto out;
	}
	ret = 0;
out:
	if (rx >= 0)
		close(rx);
	if (tx >= 0)
		close(tx);
	return ret;
}

/* ----- interfaces: text, fd, text ----- */

/* Every stat of 3.3, in order; all but the last are in sysfs. */
static const char *const net_names[] = {
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors",
	"tx_errors", "rx_dropped", "tx_dropped", "multicast", "collisions",
	"rx_length_errors", "rx_over_errors", "rx_crc_errors",
	"rx_frame_errors", "rx_fifo_errors", "rx_missed_errors",
	"tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
	"tx_heartbeat_errors", "tx_window_errors", "rx_compressed",
	"tx_compressed", "rx_nohandler", "rx_otherhost_dropped",
};

#define NET_NSTATS	25
#define NET_NSYSFS	24

struct net_text {
	unsigned long long v[NET_NSTATS];
};

/*
 * sysfs statistics/<name> for the first 24, then rx_otherhost_dropped
 * from rtnetlink (sysfs has no file for it).
 */
static int net_text_read(const char *ifname, int ifindex, struct net_text *t)
{
	struct rtnl_link_stats64 st;
	char path[128];
	unsigned int i;
	FILE *f;
	int ret;

	for (i = 0; i < NET_NSYSFS; i++) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s",
			 ifname, net_names[i]);
		f = fopen(path, "re");
		if (!f)
			return -errno;
		ret = fscanf(f, "%llu", &t->v[i]);
		fclose(f);
		if (ret != 1)
			return -EIO;
	}
	ret = link_stats64(ifindex, &st);
	if (ret)
		return ret;
	t->v[NET_NSYSFS] = st.rx_otherhost_dropped;
	return 0;
}

/*
 * Text, fd, text: each value of @fd lies between the text before and the
 * text after (every stat is a counter that only grows).  @f gets the fd's
 * read.
 */
static void net_check(struct __test_metadata *_metadata, int fd,
		      const char *ifname, struct stats_image *f)
{
	struct net_text before, after;
	int ifindex = if_nametoindex(ifname);
	char id[64];
	unsigned int i;

	ASSERT_NE(0, ifindex);
	ASSERT_EQ(0, net_text_read(ifname, ifindex, &before));
	ASSERT_EQ(0, stats_image_read(fd, f));
	ASSERT_EQ(0, net_text_read(ifname, ifindex, &after));

	snprintf(id, sizeof(id), "host-net-%s", ifname);
	EXPECT_STREQ(id, stats_image_id(f));
	ASSERT_EQ(NET_NSTATS, f->h.num_desc);
	for (i = 0; i < NET_NSTATS; i++) {
		const struct statsfd_desc *d = stats_image_desc(f, i);
		uint64_t v = sfile_stat(f, net_names[i]);

		EXPECT_STREQ(net_names[i], d->name);
		EXPECT_EQ(STATSFD_TYPE_CUMULATIVE, d->flags & STATSFD_TYPE_MASK);
		EXPECT_EQ(i == 2 || i == 3 ? STATSFD_UNIT_BYTES :
					     STATSFD_UNIT_NONE,
			  d->flags & STATSFD_UNIT_MASK);
		EXPECT_LE(before.v[i], v)
			TH_LOG("%s %s: text %llu before, fd %llu", ifname,
			       net_names[i],
			       (unsigned long long)before.v[i],
			       (unsigned long long)v);
		EXPECT_LE(v, after.v[i])
			TH_LOG("%s %s: fd %llu, text %llu after", ifname,
			       net_names[i], (unsigned long long)v,
			       (unsigned long long)after.v[i]);
	}
}

TEST(loopback_text_fd_text)
{
	static struct stats_image f1, f2;
	int fd, lo = if_nametoindex("lo");

	ASSERT_NE(0, lo);
	ASSERT_EQ(0, link_up(lo));
	fd = host_net_fd(lo);
	ASSERT_LE(0, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD));
	EXPECT_EQ(0, host_poll(fd, 0) & (POLLHUP | POLLPRI));
	net_check(_metadata, fd, "lo", &f1);
	ASSERT_EQ(0, udp_loopback(50));
	net_check(_metadata, fd, "lo", &f2);
	/* Fifty datagrams out and back in, each over 200 bytes. */
	EXPECT_LE(sfile_stat(&f1, "rx_packets") + 50,
		  sfile_stat(&f2, "rx_packets"));
	EXPECT_LE(sfile_stat(&f1, "tx_packets") + 50,
		  sfile_stat(&f2, "tx_packets"));
	EXPECT_LE(sfile_stat(&f1, "rx_bytes") + 50 * 200,
		  sfile_stat(&f2, "rx_bytes"));
	EXPECT_LE(sfile_stat(&f1, "tx_bytes") + 50 * 200,
		  sfile_stat(&f2, "tx_bytes"));
	close(fd);
}

/* Frames out of one end of a veth pair come in at the other. */
TEST(veth_pair_text_fd_text)
{
	static struct stats_image a1, b1, a2, b2;
	int ia, ib, fa, fb;
	unsigned int i;

	ASSERT_EQ(0, link_add_veth("sfdv0", "sfdv1"));
	ia = if_nametoindex("sfdv0");
	ib = if_nametoindex("sfdv1");
	ASSERT_NE(0, ia);
	ASSERT_NE(0, ib);
	ASSERT_EQ(0, link_up(ib));
	fa = host_net_fd(ia);
	fb = host_net_fd(ib);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	net_check(_metadata, fa, "sfdv0", &a1);
	net_check(_metadata, fb, "sfdv1", &b1);
	ASSERT_EQ(0, traffic_out(ia, "10.97.0", 40));
	net_check(_metadata, fa, "sfdv0", &a2);
	net_check(_metadata, fb, "sfdv1", &b2);
	EXPECT_LE(sfile_stat(&a1, "tx_packets") + 40,
		  sfile_stat(&a2, "tx_packets"));
	EXPECT_LE(sfile_stat(&a1, "tx_bytes") + 40 * 100,
		  sfile_stat(&a2, "tx_bytes"));
	EXPECT_LE(sfile_stat(&b1, "rx_packets") + 40,
		  sfile_stat(&b2, "rx_packets"));
	EXPECT_LE(sfile_stat(&b1, "rx_bytes") + 40 * 100,
		  sfile_stat(&b2, "rx_bytes"));
	/* Sent to sfdv0's own MAC address: not for sfdv1. */
	EXPECT_LE(sfile_stat(&b1, "rx_otherhost_dropped") + 40,
		  sfile_stat(&b2, "rx_otherhost_dropped"));

	/* Deleting one end deletes both, at once: both fds hang up. */
	ASSERT_EQ(0, link_del(ia));
	EXPECT_NE(0, host_poll(fa, 0) & POLLHUP);
	EXPECT_NE(0, host_poll(fb, 0) & POLLHUP);
	EXPECT_EQ(0u, if_nametoindex("sfdv1"));
	/*
	 * The last values never go back, although veth then reads 0
	 * received on both ends (it counts them on the peer, which deleting
	 * the pair unlinks first): each is at least the last read's.
	 */
	ASSERT_EQ(0, stats_image_read(fa, &a1));
	ASSERT_EQ(0, stats_image_read(fb, &b1));
	for (i = 0; i < NET_NSTATS; i++) {
		EXPECT_LE(sfile_stat(&a2, net_names[i]),
			  sfile_stat(&a1, net_names[i]))
			TH_LOG("sfdv0 %s", net_names[i]);
		EXPECT_LE(sfile_stat(&b2, net_names[i]),
			  sfile_stat(&b1, net_names[i]))
			TH_LOG("sfdv1 %s", net_names[i]);
	}
	EXPECT_LE(40u, sfile_stat(&b1, "rx_packets"));
	usleep(100 * 1000);
	ASSERT_EQ(0, stats_image_read(fa, &a2));
	ASSERT_EQ(0, stats_image_read(fb, &b2));
	EXPECT_EQ(0, memcmp(a1.buf + a1.h.data_offset, a2.buf + a2.h.data_offset,
			    NET_NSTATS * sizeof(uint64_t)));
	EXPECT_EQ(0, memcmp(b1.buf + b1.h.data_offset, b2.buf + b2.h.data_offset,
			    NET_NSTATS * sizeof(uint64_t)));
	close(fa);
	close(fb);
}

/*
 * A deleted interface: its fds poll EPOLLHUP and keep reading the values
 * it had, which no longer change; the deletion itself proves that no
 * reference was left behind (unregistration would wait for it forever).
 */
TEST(deleted_interface_hangs_up_and_keeps_last_values)
{
	static struct stats_image f1, f2, f3, g;
	int ifindex, fd, fd2;

	ASSERT_EQ(0, link_add_dummy("sfdd1", 0));
	ifindex = if_nametoindex("sfdd1");
	ASSERT_NE(0, ifindex);
	fd = host_net_fd(ifindex);
	fd2 = host_net_fd(ifindex);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, traffic_out(ifindex, "10.98.0", 7));
	net_check(_metadata, fd, "sfdd1", &f1);
	EXPECT_LE(7u, sfile_stat(&f1, "tx_packets"));
	EXPECT_EQ(0, host_poll(fd, 0) & POLLHUP);

	ASSERT_EQ(0, link_del(ifindex));
	EXPECT_NE(0, host_poll(fd, 0) & POLLHUP);
	EXPECT_NE(0, host_poll(fd2, 0) & POLLHUP);
	EXPECT_EQ(0u, if_nametoindex("sfdd1"));
	EXPECT_EQ(-ENODEV, host_net_fd(ifindex));

	ASSERT_EQ(0, stats_image_read(fd, &f2));
	ASSERT_EQ(0, stats_image_read(fd2, &g));
	EXPECT_STREQ("host-net-sfdd1", stats_image_id(&f2));
	EXPECT_LE(sfile_stat(&f1, "tx_packets"), sfile_stat(&f2, "tx_packets"));
	usleep(200 * 1000);
	ASSERT_EQ(0, stats_image_read(fd, &f3));
	/* Frozen, and the same for every fd of the device. */
	EXPECT_EQ(0, memcmp(f2.buf + f2.h.data_offset,
			    f3.buf + f3.h.data_offset,
			    NET_NSTATS * sizeof(uint64_t)));
	EXPECT_EQ(0, memcmp(f2.buf + f2.h.data_offset,
			    g.buf + g.h.data_offset,
			    NET_NSTATS * sizeof(uint64_t)));
	close(fd);
	close(fd2);
}

/* ----- namespaces ----- */

/*
 * The child, in a namespace of its own: a dummy at FAR_IFINDEX with some
 * traffic, a stats fd on it (its exit status says what failed), sent to
 * the parent; it exits, and so its namespace dies, when the parent says.
 */
static int netns_child(int sock)
{
	struct stats_image *f = malloc(sizeof(*f));
	char go;
	int fd;

	if (!f || unshare(CLONE_NEWNET))
		return 10;
	if (link_add_dummy("sfdns0", FAR_IFINDEX))
		return 11;
	if (traffic_out(FAR_IFINDEX, "10.96.0", 5))
		return 12;
	fd = host_net_fd(FAR_IFINDEX);
	if (fd < 0)
		return 13;
	if (stats_image_read(fd, f) || strcmp(stats_image_id(f), "host-net-sfdns0") ||
	    sfile_stat(f, "tx_packets") < 5)
		return 14;
	if (send_fd(sock, fd))
		return 15;
	close(fd);
	if (read(sock, &go, 1) != 1)
		return 16;
	return 0;
}

TEST(other_namespace_is_enodev_and_fd_outlives_it)
{
	static struct stats_image f1, f2;
	char go = 'g', name[IF_NAMESIZE];
	int sv[2], fd, status;
	pid_t pid;

	/* The index is free here, so only the namespace can hide it. */
	ASSERT_TRUE(!if_indextoname(FAR_IFINDEX, name));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sv[0]);
		_exit(netns_child(sv[1]));
	}
	close(sv[1]);
	fd = recv_fd(sv[0]);
	if (fd < 0) {
		waitpid(pid, &status, 0);
		TH_LOG("child exited %d", WEXITSTATUS(status));
	}
	ASSERT_LE(0, fd);

	/* Made in the child's namespace, asked for from ours: not found. */
	EXPECT_EQ(-ENODEV, host_net_fd(FAR_IFINDEX));
	/* ...but the fd made there reads here. */
	ASSERT_EQ(0, stats_image_read(fd, &f1));
	EXPECT_STREQ("host-net-sfdns0", stats_image_id(&f1));
	EXPECT_LE(5u, sfile_stat(&f1, "tx_packets"));
	EXPECT_EQ(0, host_poll(fd, 0) & POLLHUP);

	/* The child exits: its namespace, and the dummy in it, go away. */
	ASSERT_EQ(1, write(sv[0], &go, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Namespaces are dismantled by a worker: give it time. */
	EXPECT_NE(0, host_wait_hup(fd, 30) & POLLHUP);
	ASSERT_EQ(0, stats_image_read(fd, &f2));
	EXPECT_STREQ("host-net-sfdns0", stats_image_id(&f2));
	EXPECT_LE(sfile_stat(&f1, "tx_packets"), sfile_stat(&f2, "tx_packets"));
	close(fd);
	close(sv[0]);
}

/* ----- interface arguments ----- */

TEST(netdev_bad_ifindex)
{
	EXPECT_EQ(-EINVAL, host_net_fd(0));
	EXPECT_EQ(-EINVAL, host_net_fd(-1));
	EXPECT_EQ(-EINVAL, host_net_fd(INT32_MIN));
	/* Free in this namespace (checked above for FAR_IFINDEX). */
	EXPECT_EQ(-ENODEV, host_net_fd(INT32_MAX));
	EXPECT_EQ(-ENODEV, host_net_fd(FAR_IFINDEX + 1));
}

/* NETDEV and BLOCK refuse a field of another kind, even a valid one. */
TEST(other_kinds_fields_are_einval)
{
	int lo = if_nametoindex("lo");
	struct statsfd_host_stats_fd bad[] = {
		{ .kind = STATSFD_HOST_NETDEV, .ifindex = lo, .cpu = 1 },
		{ .kind = STATSFD_HOST_NETDEV, .ifindex = lo, .major = 1 },
		{ .kind = STATSFD_HOST_NETDEV, .ifindex = lo, .minor = 1 },
		{ .kind = STATSFD_HOST_BLOCK, .major = 1, .cpu = 1 },
		{ .kind = STATSFD_HOST_BLOCK, .major = 1, .ifindex = lo },
		{ .kind = STATSFD_HOST_BLOCK, .major = 1, .flags = 1 },
		{ .kind = STATSFD_HOST_NETDEV, .ifindex = lo, .reserved[2] = 1 },
	};
	struct statsfd_host_stats_fd ok_net = {
		.kind = STATSFD_HOST_NETDEV, .ifindex = lo,
	};
	unsigned int i;
	int fd;

	ASSERT_NE(0, lo);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_EQ(-EINVAL, host_fd_args(&bad[i]))
			TH_LOG("argument %u", i);
	/* The same without the stray field works. */
	fd = host_fd_args(&ok_net);
	EXPECT_LE(0, fd);
	close(fd);
}

/* ----- disks ----- */

/* Every stat of 3.4, in /proc/diskstats order; 1 where the text has ms. */
static const struct {
	const char *name;
	int ms;
} block_stats[] = {
	{ "read_ios", 0 }, { "read_merges", 0 }, { "read_sectors", 0 },
	{ "read_time", 1 }, { "write_ios", 0 }, { "write_merges", 0 },
	{ "write_sectors", 0 }, { "write_time", 1 }, { "in_flight", 0 },
	{ "io_time", 1 }, { "time_in_queue", 1 }, { "discard_ios", 0 },
	{ "discard_merges", 0 }, { "discard_sectors", 0 },
	{ "discard_time", 1 }, { "flush_ios", 0 }, { "flush_time", 1 },
};

#define BLOCK_NSTATS	17

/* @disk's line of /proc/diskstats: its number and the 17 values. */
static int diskstats_read(const char *disk, unsigned int *major,
			  unsigned int *minor, unsigned long long *v)
{
	char line[512], name[64];
	int ret = -ENOENT, n;
	FILE *f = fopen("/proc/diskstats", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		n = sscanf(line,
			   "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   major, minor, name, &v[0], &v[1], &v[2], &v[3],
			   &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
			   &v[11], &v[12], &v[13], &v[14], &v[15], &v[16]);
		if (n >= 3 && strcmp(name, disk) == 0) {
			ret = n == 3 + BLOCK_NSTATS ? 0 : -EPROTO;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* The value of stat @name in @v, a line diskstats_read() read. */
static unsigned long long block_text(const unsigned long long *v,
				     const char *name)
{
	unsigned int i;

	for (i = 0; i < BLOCK_NSTATS; i++)
		if (strcmp(block_stats[i].name, name) == 0)
			return v[i];
	return ULLONG_MAX;
}

/* How long block_settle() waits, in steps of 10 ms: 10 s. */
#define BLOCK_SETTLE_STEPS	1000

/*
 * Waits for @disk to be quiet: in_flight 0 in the text and in a stats fd
 * and, given @since (a read from before I/O of the test that read and
 * wrote), the text counting more reads and more writes than it.
 *
 * A task waiting for its I/O is woken in blk_update_request()
 * (bio_endio()), before __blk_mq_end_request() accounts the request: ios,
 * nsecs, then the per-CPU in_flight that blk-mq keeps on 6.12 and on
 * Debian's 6.1 ("block: support to account io_ticks precisely",
 * backported).  So right after pread() returns, its read may not be
 * counted yet and in_flight may still read 1: seen on the 6.1 leg under
 * load as a fd's in_flight 1 above the text after it, and the read missing
 * from the text and the fd.  A stats fd reads in_flight 0 only once that
 * decrement, the last step, is done.
 */
static void block_settle(struct __test_metadata *_metadata, const char *disk,
			 const struct stats_image *since)
{
	static struct stats_image f;
	unsigned long long v[BLOCK_NSTATS];
	unsigned int major, minor, i;
	uint64_t fd_in_flight = 0;
	int fd, quiet = 0;

	for (i = 0; i < BLOCK_SETTLE_STEPS && !quiet; i++) {
		if (i)
			usleep(10 * 1000);
		ASSERT_EQ(0, diskstats_read(disk, &major, &minor, v));
		fd = host_block_fd(major, minor);
		ASSERT_LE(0, fd) TH_LOG("%s (%u:%u): %s", disk, major, minor,
					strerror(-fd));
		ASSERT_EQ(0, stats_image_read(fd, &f));
		close(fd);
		fd_in_flight = sfile_stat(&f, "in_flight");
		quiet = !block_text(v, "in_flight") && !fd_in_flight &&
			(!since || (block_text(v, "read_ios") >
					    sfile_stat(since, "read_ios") &&
				    block_text(v, "write_ios") >
					    sfile_stat(since, "write_ios")));
	}
	EXPECT_TRUE(quiet)
		TH_LOG("%s busy %d s: in_flight %llu (fd %llu), read_ios %llu, write_ios %llu",
		       disk, BLOCK_SETTLE_STEPS / 100,
		       block_text(v, "in_flight"),
		       (unsigned long long)fd_in_flight,
		       block_text(v, "read_ios"), block_text(v, "write_ios"));
}

/*
 * Text, fd, text for @disk once it is quiet (block_settle(), @since as
 * there).  Each counter, in the text's unit (floor of ns / 10^6 where the
 * text has ms), lies between the two texts.  in_flight is instant: it can
 * rise and fall between two reads, so no two texts bracket it; on a quiet
 * disk that nothing else in the guest reads or writes (no udev, no
 * partition scan: loop77 is bound without LO_FLAGS_PARTSCAN and loop.ko
 * loaded with max_part 0; brd accounts nothing) all three read 0.
 */
static void block_check(struct __test_metadata *_metadata, const char *disk,
			const struct stats_image *since,
			struct stats_image *f)
{
	unsigned long long before[BLOCK_NSTATS], after[BLOCK_NSTATS];
	unsigned int major, minor, i;
	char id[64];
	int fd;

	block_settle(_metadata, disk, since);
	ASSERT_EQ(0, diskstats_read(disk, &major, &minor, before));
	fd = host_block_fd(major, minor);
	ASSERT_LE(0, fd) TH_LOG("%s (%u:%u): %s", disk, major, minor,
				strerror(-fd));
	ASSERT_EQ(0, stats_image_read(fd, f));
	ASSERT_EQ(0, diskstats_read(disk, &major, &minor, after));
	EXPECT_EQ(0, host_poll(fd, 0) & (POLLHUP | POLLPRI));
	close(fd);

	snprintf(id, sizeof(id), "host-block-%s", disk);
	EXPECT_STREQ(id, stats_image_id(f));
	ASSERT_EQ(BLOCK_NSTATS, f->h.num_desc);
	for (i = 0; i < BLOCK_NSTATS; i++) {
		const struct statsfd_desc *d = stats_image_desc(f, i);
		uint64_t v = sfile_stat(f, block_stats[i].name);
		int instant = strcmp(block_stats[i].name, "in_flight") == 0;

		EXPECT_STREQ(block_stats[i].name, d->name);
		if (block_stats[i].ms) {
			EXPECT_EQ(STATSFD_UNIT_SECONDS,
				  d->flags & STATSFD_UNIT_MASK);
			EXPECT_EQ(-9, d->exponent);
			v /= 1000000;
		}
		EXPECT_EQ(instant ? STATSFD_TYPE_INSTANT :
				    STATSFD_TYPE_CUMULATIVE,
			  d->flags & STATSFD_TYPE_MASK);
		if (instant) {
			EXPECT_EQ(0ULL, before[i] | v | after[i])
				TH_LOG("%s %s, quiet: text %llu, fd %llu, text %llu",
				       disk, block_stats[i].name,
				       (unsigned long long)before[i],
				       (unsigned long long)v,
				       (unsigned long long)after[i]);
			continue;
		}
		EXPECT_LE(before[i], v)
			TH_LOG("%s %s: text %llu before, fd %llu", disk,
			       block_stats[i].name,
			       (unsigned long long)before[i],
			       (unsigned long long)v);
		EXPECT_LE(v, after[i])
			TH_LOG("%s %s: fd %llu, text %llu after", disk,
			       block_stats[i].name, (unsigned long long)v,
			       (unsigned long long)after[i]);
	}
}

/* Writes, syncs and reads back 64 KiB at @off of @path, bypassing caches. */
static int disk_io(const char *path, off_t off)
{
	const size_t len = 64 * 1024;
	void *wbuf, *rbuf;
	int fd, ret = -EIO;

	if (posix_memalign(&wbuf, 4096, len) || posix_memalign(&rbuf, 4096, len))
		return -ENOMEM;
	memset(wbuf, 0x5a, len);
	fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (pwrite(fd, wbuf, len, off) == (ssize_t)len && !fsync(fd) &&
	    pread(fd, rbuf, len, off) == (ssize_t)len &&
	    !memcmp(wbuf, rbuf, len))
		ret = 0;
	close(fd);
out:
	free(wbuf);
	free(rbuf);
	return ret;
}

/*
 * The RAM disks, before and after real I/O.  brd accounts no I/O (it
 * never calls bio_start_io_acct()), so their diskstats lines stay 0 and
 * this checks the mapping, the ids, the descriptors and that the I/O did
 * not make the two disagree; a disk that accounts (queue/iostat 1) must
 * also show the I/O.
 */
TEST(ram_disks_text_fd_text)
{
	static struct stats_image f1, f2;
	const char *const disks[] = { "ram0", "ram1" };
	unsigned int i;
	FILE *st;
	int iostat;

	for (i = 0; i < 2; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/sys/block/%s/queue/iostat",
			 disks[i]);
		st = fopen(path, "re");
		iostat = 0;
		if (st) {
			if (fscanf(st, "%d", &iostat) != 1)
				iostat = 0;
			fclose(st);
		}

		snprintf(path, sizeof(path), "/dev/%s", disks[i]);
		block_check(_metadata, disks[i], NULL, &f1);
		ASSERT_EQ(0, disk_io(path, i * 128 * 1024));
		/* Only a disk that accounts has I/O to wait for. */
		block_check(_metadata, disks[i], iostat ? &f1 : NULL, &f2);
		if (!iostat)
			continue;
		EXPECT_LT(sfile_stat(&f1, "write_ios"),
			  sfile_stat(&f2, "write_ios"));
		EXPECT_LT(sfile_stat(&f1, "read_ios"),
			  sfile_stat(&f2, "read_ios"));
		EXPECT_LE(sfile_stat(&f1, "write_sectors") + 128,
			  sfile_stat(&f2, "write_sectors"));
	}
}

static int ram0_partition(int op)
{
	struct blkpg_partition p = {
		.start = 1 << 20, .length = 1 << 20, .pno = 1,
	};
	struct blkpg_ioctl_arg a = {
		.op = op, .datalen = sizeof(p), .data = &p,
	};
	int fd = open("/dev/ram0", O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, BLKPG, &a) ? -errno : 0;
	close(fd);
	return ret;
}

/*
 * A partition's number is EINVAL.  brd reserves one minor per disk, so
 * the partition added to /dev/ram0 with BLKPG gets an extended number
 * (major 259): the lookup must tell it by what it is, not by its number.
 */
TEST(partition_is_einval)
{
	unsigned int major, minor, dmaj, dmin;
	int ret, fd;

	ret = ram0_partition(BLKPG_ADD_PARTITION);
	ASSERT_EQ(0, ret) TH_LOG("BLKPG_ADD_PARTITION on /dev/ram0: %s",
				 strerror(-ret));
	ret = host_sysfs_devt("ram0p1", &major, &minor);
	EXPECT_EQ(0, ret);
	if (!ret) {
		EXPECT_EQ(-EINVAL, host_block_fd(major, minor))
			TH_LOG("ram0p1 is %u:%u", major, minor);
		/* The whole disk still works, partition or not. */
		ASSERT_EQ(0, host_sysfs_devt("ram0", &dmaj, &dmin));
		fd = host_block_fd(dmaj, dmin);
		EXPECT_LE(0, fd);
		close(fd);
	}
	EXPECT_EQ(0, ram0_partition(BLKPG_DEL_PARTITION));
	/* Gone with it: its number names nothing now. */
	if (!ret)
		EXPECT_EQ(-ENODEV, host_block_fd(major, minor));
}

/*
 * Numbers of no disk are ENODEV, without side effects: brd would make a
 * RAM disk for any of its minors that is opened (module autoload of
 * "block-major-1-N"); looking one up must not.
 */
TEST(unknown_disk_is_enodev)
{
	EXPECT_EQ(-ENODEV, host_block_fd(0, 0));
	EXPECT_EQ(-ENODEV, host_block_fd(1, 200));
	EXPECT_NE(0, access("/sys/block/ram200", F_OK));
	EXPECT_EQ(-ENODEV, host_block_fd(4095, 0xfffff));
	/* Too large for a dev_t: not silently truncated to 1:0 (ram0). */
	EXPECT_EQ(-ENODEV, host_block_fd(4096 + 1, 0));
	EXPECT_EQ(-ENODEV, host_block_fd(1, 1u << 20));
}

#define LOOP_NR		77
#define LOOP_IMG	"/tmp/sfd-loop.img"

/* /dev/loop77 backed by a 1 MiB file, or -errno. */
static int loop_bind(void)
{
	int img, dev, ret = 0;

	img = open(LOOP_IMG, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (img < 0)
		return -errno;
	if (ftruncate(img, 1 << 20)) {
		close(img);
		return -errno;
	}
	dev = open("/dev/loop77", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		ret = -errno;
	else if (ioctl(dev, LOOP_SET_FD, img))
		ret = -errno;
	close(img);
	return ret ? ret : dev;
}

/*
 * A disk that accounts its I/O (loop is blk-mq), then removed under an
 * open stats fd: text, fd, text with real I/O; the fd holds no reference
 * on the driver's module; after the removal the fd hangs up by itself
 * (the watcher, within about a second) with the last values.  Both test
 * kernels have loop (built in on 6.12, the stock loop.ko on 6.1).
 */
TEST(loop_disk_io_then_removed_hangs_up)
{
	static struct stats_image f1, f2, f3;
	unsigned int major, minor, i;
	int ctl, dev, fd, r0;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		SKIP(return, "no /dev/loop-control: this kernel has no loop");
	ASSERT_EQ(LOOP_NR, ioctl(ctl, LOOP_CTL_ADD, LOOP_NR));
	ASSERT_EQ(0, host_sysfs_devt("loop77", &major, &minor));

	dev = loop_bind();
	ASSERT_LE(0, dev) TH_LOG("binding /dev/loop77: %s", strerror(-dev));
	block_check(_metadata, "loop77", NULL, &f1);
	ASSERT_EQ(0, disk_io("/dev/loop77", 0));
	block_check(_metadata, "loop77", &f1, &f2);
	EXPECT_LT(sfile_stat(&f1, "write_ios"), sfile_stat(&f2, "write_ios"));
	EXPECT_LT(sfile_stat(&f1, "read_ios"), sfile_stat(&f2, "read_ios"));
	EXPECT_LE(sfile_stat(&f1, "write_sectors") + 128,
		  sfile_stat(&f2, "write_sectors"));
	EXPECT_LE(sfile_stat(&f1, "read_sectors") + 128,
		  sfile_stat(&f2, "read_sectors"));
	EXPECT_EQ(0, ioctl(dev, LOOP_CLR_FD, 0));
	close(dev);

	r0 = host_module_refcnt("loop");
	fd = host_block_fd(major, minor);
	ASSERT_LE(0, fd);
	/* No reference on the driver's module. */
	if (r0 >= 0)
		EXPECT_EQ(r0, host_module_refcnt("loop"));
	ASSERT_EQ(0, stats_image_read(fd, &f1));
	EXPECT_LE(sfile_stat(&f2, "write_ios"), sfile_stat(&f1, "write_ios"));
	EXPECT_EQ(0, host_poll(fd, 0) & POLLHUP);

	/* Never opened (the stats fd only holds the inode): it can go. */
	ASSERT_EQ(0, ioctl(ctl, LOOP_CTL_REMOVE, LOOP_NR));
	EXPECT_EQ(-ENODEV, host_block_fd(major, minor));
	/* Hung up without a read, by the watcher: generous under load. */
	EXPECT_NE(0, host_wait_hup(fd, 30) & POLLHUP);
	ASSERT_EQ(0, stats_image_read(fd, &f2));
	EXPECT_STREQ("host-block-loop77", stats_image_id(&f2));
	if (r0 >= 0)
		EXPECT_EQ(r0, host_module_refcnt("loop"));
	ASSERT_EQ(0, stats_image_read(fd, &f3));
	/*
	 * del_gendisk() zeroes the counters: the last values are those of
	 * the last read before the removal (or larger), never less.
	 */
	for (i = 0; i < ARRAY_SIZE(block_stats); i++) {
		uint64_t a = sfile_stat(&f1, block_stats[i].name);
		uint64_t b = sfile_stat(&f2, block_stats[i].name);

		EXPECT_LE(a, b) TH_LOG("stat %u: %llu before the removal, %llu after",
				       i, (unsigned long long)a,
				       (unsigned long long)b);
	}
	EXPECT_EQ(0u, sfile_stat(&f2, "in_flight"));
	/* Frozen from then on. */
	EXPECT_EQ(0, memcmp(f2.buf + f2.h.data_offset,
			    f3.buf + f3.h.data_offset,
			    BLOCK_NSTATS * sizeof(uint64_t)));
	close(fd);
	close(ctl);
	unlink(LOOP_IMG);
}

TEST_HARNESS_MAIN
