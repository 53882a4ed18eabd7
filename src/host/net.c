// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_host: a network interface's struct rtnl_link_stats64 as a stats
 * fd (Documentation/statsfd-host-api.rst, 3.3).
 *
 * Each stats fd gets its own computed source: its fill callback calls
 * dev_get_stats(), exactly what /proc/net/dev, "ip -s link" and
 * /sys/class/net/<if>/statistics/ print.  The source holds a tracked
 * reference on the net_device, which would stall the device's
 * unregistration forever if nothing dropped it: a netdevice notifier
 * therefore detaches every source of a device on NETDEV_UNREGISTER (sent
 * when the device is deleted, when its namespace is dismantled, and when
 * it moves to another namespace), keeping its last values and hanging the
 * source up.
 *
 * Locking: net_lock (a mutex) protects net_sources and every source's
 * @dev and @last.  The notifier runs under RTNL and takes net_lock;
 * statsfd_host_net_file() does the same, in the same order, so a source
 * is on the list before the device can be unregistered.  fill takes only
 * net_lock: dev_get_stats() does not sleep (/proc/net/dev calls it under
 * RCU), so a reader waits at most for another read or a detach.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <net/net_namespace.h>

#include "internal.h"

/* Every field of struct rtnl_link_stats64, under its own name. */
#define STATSFD_STATS_TYPE struct rtnl_link_stats64
static const struct statsfd_desc_def net_descs[] = {
	STATSFD_COUNTER(rx_packets),
	STATSFD_COUNTER(tx_packets),
	STATSFD_BYTES(rx_bytes),
	STATSFD_BYTES(tx_bytes),
	STATSFD_COUNTER(rx_errors),
	STATSFD_COUNTER(tx_errors),
	STATSFD_COUNTER(rx_dropped),
	STATSFD_COUNTER(tx_dropped),
	STATSFD_COUNTER(multicast),
	STATSFD_COUNTER(collisions),
	STATSFD_COUNTER(rx_length_errors),
	STATSFD_COUNTER(rx_over_errors),
	STATSFD_COUNTER(rx_crc_errors),
	STATSFD_COUNTER(rx_frame_errors),
	STATSFD_COUNTER(rx_fifo_errors),
	STATSFD_COUNTER(rx_missed_errors),
	STATSFD_COUNTER(tx_aborted_errors),
	STATSFD_COUNTER(tx_carrier_errors),
	STATSFD_COUNTER(tx_fifo_errors),
	STATSFD_COUNTER(tx_heartbeat_errors),
	STATSFD_COUNTER(tx_window_errors),
	STATSFD_COUNTER(rx_compressed),
	STATSFD_COUNTER(tx_compressed),
	STATSFD_COUNTER(rx_nohandler),
	STATSFD_COUNTER(rx_otherhost_dropped),
};

#undef STATSFD_STATS_TYPE

/*
 * The schema covers the struct exactly (statsfd_schema_init() checks
 * that), so a field added by a later kernel fails at load time rather than
 * going unread.
 */
static const struct statsfd_schema_def net_def = {
	.name = "statsfd_host.netdev",
	.descs = net_descs,
	.num_descs = ARRAY_SIZE(net_descs),
	.stats_size = sizeof(struct rtnl_link_stats64),
};

static struct statsfd_schema net_schema;

/**
 * struct host_net - the source of one stats fd on a network interface
 * @src: the computed source
 * @ref: one per stats fd, plus the creator's while it makes the fd
 * @node: entry in net_sources, while @dev is held
 * @dev: the interface, or NULL once it was unregistered (net_lock)
 * @tracker: tracks our reference on @dev (CONFIG_NET_DEV_REFCNT_TRACKER)
 * @last: the values of the last read while @dev was attached; once it was
 *	detached, the values every read returns (net_lock)
 */
struct host_net {
	struct statsfd_source src;
	struct kref ref;
	struct list_head node;
	struct net_device *dev;
	netdevice_tracker tracker;
	struct rtnl_link_stats64 last;
};

static DEFINE_MUTEX(net_lock);
static LIST_HEAD(net_sources);	/* net_lock */

static struct host_net *to_host_net(struct statsfd_source *src)
{
	return container_of(src, struct host_net, src);
}

/*
 * Keeps the last values and lets the device go; net_lock held.  The last
 * values are, counter by counter, the larger of the last read's and the
 * device's now: a driver may count less once it is being unregistered
 * (veth counts what a device received on its peer, which deleting the
 * pair unlinks first), and counters must not go back.
 */
static void net_detach(struct host_net *n)
{
	struct rtnl_link_stats64 now;
	u64 *last = (u64 *)&n->last, *cur = (u64 *)&now;
	unsigned int i;

	lockdep_assert_held(&net_lock);
	dev_get_stats(n->dev, &now);
	for (i = 0; i < sizeof(now) / sizeof(u64); i++)
		last[i] = max(last[i], cur[i]);
	list_del_init(&n->node);
	netdev_put(n->dev, &n->tracker);
	n->dev = NULL;
}

static void net_release(struct kref *ref)
{
	struct host_net *n = container_of(ref, struct host_net, ref);

	mutex_lock(&net_lock);
	if (n->dev) {
		list_del(&n->node);
		netdev_put(n->dev, &n->tracker);
		n->dev = NULL;
	}
	mutex_unlock(&net_lock);
	statsfd_source_destroy(&n->src);
	kfree(n);
}

static void net_get(struct statsfd_source *src)
{
	kref_get(&to_host_net(src)->ref);
}

static void net_put(struct statsfd_source *src)
{
	kref_put(&to_host_net(src)->ref, net_release);
}

static int net_fill(struct statsfd_source *src, void *stats)
{
	struct host_net *n = to_host_net(src);

	mutex_lock(&net_lock);
	if (n->dev) {
		dev_get_stats(n->dev, stats);
		memcpy(&n->last, stats, sizeof(n->last));
	} else {
		memcpy(stats, &n->last, sizeof(n->last));
	}
	mutex_unlock(&net_lock);
	return 0;
}

static const struct statsfd_source_ops net_ops = {
	.owner = THIS_MODULE,
	.get = net_get,
	.put = net_put,
	.fill = net_fill,
};

/*
 * NETDEV_UNREGISTER comes, under RTNL, when the device is deleted, when
 * its namespace goes away (virtual devices are deleted, physical ones
 * moved to init_net) and when it moves to another namespace: in each
 * case it left the namespace its stats fds were made in, so they hang up.
 */
static int net_notify(struct notifier_block *nb, unsigned long event,
		      void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct host_net *n, *tmp;
	LIST_HEAD(gone);

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&net_lock);
	list_for_each_entry_safe(n, tmp, &net_sources, node) {
		if (n->dev != dev)
			continue;
		net_detach(n);
		/* Hung up below, outside net_lock: readers need not wait. */
		kref_get(&n->ref);
		list_add(&n->node, &gone);
	}
	mutex_unlock(&net_lock);
	list_for_each_entry_safe(n, tmp, &gone, node) {
		list_del_init(&n->node);
		statsfd_source_hangup(&n->src);
		kref_put(&n->ref, net_release);
	}
	return NOTIFY_DONE;
}

static struct notifier_block net_nb = {
	.notifier_call = net_notify,
};

/**
 * statsfd_host_net_file() - a new stats file on a network interface
 * @ifindex: the interface's index in the caller's network namespace
 *
 * Makes a source for the interface, attached to it until the interface
 * is unregistered (then the source keeps its last values and hangs up),
 * and a stats file on it.  The interface's name when the file is made is
 * in the id, "host-net-<name>".
 *
 * Context: process context; takes RTNL.
 * Return: the file, or ERR_PTR(-EINVAL) for an @ifindex not positive,
 * ERR_PTR(-ENODEV) when the caller's namespace has no such interface,
 * ERR_PTR(-ENOMEM).
 */
struct file *statsfd_host_net_file(s32 ifindex)
{
	struct net *net = current->nsproxy->net_ns;
	struct net_device *dev;
	struct host_net *n;
	struct file *file;
	int ret;

	if (ifindex <= 0)
		return ERR_PTR(-EINVAL);
	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return ERR_PTR(-ENOMEM);
	kref_init(&n->ref);
	INIT_LIST_HEAD(&n->node);

	/*
	 * Under RTNL a listed device is registered and its NETDEV_UNREGISTER
	 * has not run yet (unlisting and the notifier happen in one RTNL
	 * section), so the notifier will find the source on the list.
	 */
	rtnl_lock();
	dev = __dev_get_by_index(net, ifindex);
	if (!dev) {
		rtnl_unlock();
		kfree(n);
		return ERR_PTR(-ENODEV);
	}
	ret = statsfd_source_init(&n->src, &net_schema, NULL, &net_ops,
				  "host-net-%s", dev->name);
	if (ret) {
		rtnl_unlock();
		kfree(n);
		return ERR_PTR(ret);
	}
	netdev_hold(dev, &n->tracker, GFP_KERNEL);
	mutex_lock(&net_lock);
	n->dev = dev;
	list_add(&n->node, &net_sources);
	mutex_unlock(&net_lock);
	rtnl_unlock();

	/* The file takes its own reference; ours goes either way. */
	file = statsfd_source_getfile(&n->src);
	kref_put(&n->ref, net_release);
	return file;
}

/**
 * statsfd_host_net_init() - set up the network interface sources
 *
 * Return: 0, or a negative errno from the schema or the notifier.
 */
int statsfd_host_net_init(void)
{
	int ret;

	ret = statsfd_schema_init(&net_schema, &net_def);
	if (ret)
		return ret;
	ret = register_netdevice_notifier(&net_nb);
	if (ret)
		statsfd_schema_destroy(&net_schema);
	return ret;
}

/**
 * statsfd_host_net_exit() - tear down what statsfd_host_net_init() set up
 *
 * Every stats fd pins the module, so no source is left by now.
 */
void statsfd_host_net_exit(void)
{
	unregister_netdevice_notifier(&net_nb);
	WARN_ON(!list_empty(&net_sources));
	statsfd_schema_destroy(&net_schema);
}
