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
 * Finding a device's sources: statsfd_host_net_table, hashed by the net_device's
 * address, so that NETDEV_UNREGISTER walks one bucket, not every stats fd
 * of the host.  A source is in it from its creation until it is detached
 * or released.  statsfd_host_net_lock (a mutex) protects statsfd_host_net_table, and the 1 -> 0
 * transition of every source's count: the last put is kref_put_mutex(),
 * which takes statsfd_host_net_lock before the count can reach 0 and releases with it
 * held, so a source found in the table under statsfd_host_net_lock always has a count
 * above 0 and the notifier's kref_get() is safe; the release unlists it
 * before anyone else can take statsfd_host_net_lock.  The notifier runs under RTNL and
 * takes statsfd_host_net_lock; statsfd_host_net_file() does the same, in the same
 * order, so a source is in the table before its device can be
 * unregistered.
 *
 * Reading: each source has its own mutex, for @dev and @last, taken by
 * fill and by the detach.  A read of one stats fd thus waits at most for
 * another read of the same fd or for its detach, never for the reads of
 * other fds; dev_get_stats() does not sleep (/proc/net/dev calls it under
 * RCU).
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
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
static const struct statsfd_desc_def statsfd_host_net_descs[] = {
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
static const struct statsfd_schema_def statsfd_host_net_def =
	STATSFD_HOST_SCHEMA("statsfd_host.netdev", statsfd_host_net,
			    struct rtnl_link_stats64);

static struct statsfd_schema statsfd_host_net_schema;

/**
 * struct statsfd_host_net - the source of one stats fd on a network interface
 * @src: the computed source
 * @ref: one per stats fd, plus the creator's while it makes the fd, plus
 *	the notifier's while it detaches the source; reaches 0 only under
 *	statsfd_host_net_lock (kref_put_mutex())
 * @node: entry in statsfd_host_net_table under @dev's address (statsfd_host_net_lock), from the
 *	creation until the detach or the release
 * @gone: entry in the notifier's private list of sources to detach
 * @lock: protects @dev and @last
 * @dev: the interface, or NULL once it was unregistered; constant while
 *	@node is hashed
 * @tracker: tracks our reference on @dev (CONFIG_NET_DEV_REFCNT_TRACKER)
 * @last: the values of the last read while @dev was attached; once it was
 *	detached, the values every read returns
 */
struct statsfd_host_net {
	struct statsfd_source src;
	struct kref ref;
	struct hlist_node node;
	struct list_head gone;
	struct mutex lock;	/* dev, last */
	struct net_device *dev;
	netdevice_tracker tracker;
	struct rtnl_link_stats64 last;
};

static DEFINE_MUTEX(statsfd_host_net_lock);
/* 64 buckets: a bucket's walk is short even with thousands of fds. */
static DEFINE_HASHTABLE(statsfd_host_net_table, 6); /* statsfd_host_net_lock */

static struct statsfd_host_net *statsfd_host_to_net(struct statsfd_source *src)
{
	return container_of(src, struct statsfd_host_net, src);
}

/*
 * Keeps the last values and lets the device go.  The last values are,
 * counter by counter, the larger of the last read's and @now, the
 * device's values as it is being unregistered: a driver may count less by
 * then (veth counts what a device received on its peer, which deleting
 * the pair unlinks first), and counters must not go back.  The source is
 * already out of statsfd_host_net_table, and its reference keeps it alive.
 */
static void statsfd_host_net_detach(struct statsfd_host_net *n,
				    struct net_device *dev,
				    const struct rtnl_link_stats64 *now)
{
	const u64 *cur = (const u64 *)now;
	u64 *last = (u64 *)&n->last;
	unsigned int i;

	mutex_lock(&n->lock);
	for (i = 0; i < sizeof(*now) / sizeof(u64); i++)
		last[i] = max(last[i], cur[i]);
	n->dev = NULL;
	mutex_unlock(&n->lock);
	netdev_put(dev, &n->tracker);
}

/*
 * The count reached 0 with statsfd_host_net_lock held (kref_put_mutex()): unlist the
 * source before anyone else can find it, then free it.
 */
static void statsfd_host_net_release(struct kref *ref)
{
	struct statsfd_host_net *n =
		container_of(ref, struct statsfd_host_net, ref);

	lockdep_assert_held(&statsfd_host_net_lock);
	if (hash_hashed(&n->node)) {
		hash_del(&n->node);
		netdev_put(n->dev, &n->tracker);
		n->dev = NULL;
	}
	mutex_unlock(&statsfd_host_net_lock);
	statsfd_source_destroy(&n->src);
	mutex_destroy(&n->lock);
	kfree(n);
}

static void statsfd_host_net_ref_put(struct statsfd_host_net *n)
{
	kref_put_mutex(&n->ref, statsfd_host_net_release,
		       &statsfd_host_net_lock);
}

static void statsfd_host_net_get(struct statsfd_source *src)
{
	kref_get(&statsfd_host_to_net(src)->ref);
}

static void statsfd_host_net_put(struct statsfd_source *src)
{
	statsfd_host_net_ref_put(statsfd_host_to_net(src));
}

static int statsfd_host_net_fill(struct statsfd_source *src, void *stats)
{
	struct statsfd_host_net *n = statsfd_host_to_net(src);

	mutex_lock(&n->lock);
	if (n->dev) {
		dev_get_stats(n->dev, stats);
		memcpy(&n->last, stats, sizeof(n->last));
	} else {
		memcpy(stats, &n->last, sizeof(n->last));
	}
	mutex_unlock(&n->lock);
	return 0;
}

static const struct statsfd_source_ops statsfd_host_net_ops = {
	.owner = THIS_MODULE,
	.get = statsfd_host_net_get,
	.put = statsfd_host_net_put,
	.fill = statsfd_host_net_fill,
};

/*
 * NETDEV_UNREGISTER comes, under RTNL, when the device is deleted, when
 * its namespace goes away (virtual devices are deleted, physical ones
 * moved to init_net) and when it moves to another namespace: in each
 * case it left the namespace its stats fds were made in, so they hang up.
 */
static int statsfd_host_net_notify(struct notifier_block *nb,
				   unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct rtnl_link_stats64 now;
	struct hlist_node *tmp;
	struct statsfd_host_net *n, *t;
	LIST_HEAD(gone);

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	/*
	 * Unlist this device's sources, each with a reference of our own:
	 * a listed source's count is above 0 (see the top of this file).
	 */
	mutex_lock(&statsfd_host_net_lock);
	hash_for_each_possible_safe(statsfd_host_net_table, n, tmp, node,
				    (unsigned long)dev) {
		if (n->dev != dev)
			continue;
		hash_del(&n->node);
		kref_get(&n->ref);
		list_add(&n->gone, &gone);
	}
	mutex_unlock(&statsfd_host_net_lock);
	if (list_empty(&gone))
		return NOTIFY_DONE;

	/* The device's values once, for all its sources. */
	dev_get_stats(dev, &now);
	list_for_each_entry_safe(n, t, &gone, gone) {
		list_del(&n->gone);
		statsfd_host_net_detach(n, dev, &now);
		statsfd_source_hangup(&n->src);
		statsfd_host_net_ref_put(n);
	}
	return NOTIFY_DONE;
}

static struct notifier_block statsfd_host_net_nb = {
	.notifier_call = statsfd_host_net_notify,
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
 * Context: process context; takes RTNL.  The source is allocated with
 * GFP_KERNEL_ACCOUNT: any user can make many.
 * Return: the file, or ERR_PTR(-EINVAL) for an @ifindex not positive,
 * ERR_PTR(-ENODEV) when the caller's namespace has no such interface,
 * ERR_PTR(-ENOMEM).
 */
struct file *statsfd_host_net_file(s32 ifindex)
{
	struct net *net = current->nsproxy->net_ns;
	struct net_device *dev;
	struct statsfd_host_net *n;
	struct file *file;
	int ret;

	if (ifindex <= 0)
		return ERR_PTR(-EINVAL);
	/* Any user can make one: charged to the caller's memory cgroup. */
	n = kzalloc(sizeof(*n), GFP_KERNEL_ACCOUNT);
	if (!n)
		return ERR_PTR(-ENOMEM);
	kref_init(&n->ref);
	INIT_HLIST_NODE(&n->node);
	mutex_init(&n->lock);

	/*
	 * Under RTNL a listed device is registered and its NETDEV_UNREGISTER
	 * has not run yet (unlisting and the notifier happen in one RTNL
	 * section), so the notifier will find the source on the list.
	 */
	rtnl_lock();
	dev = __dev_get_by_index(net, ifindex);
	if (!dev) {
		ret = -ENODEV;
		goto err_unlock;
	}
	ret = statsfd_source_init_computed(&n->src, &statsfd_host_net_schema,
					   &statsfd_host_net_ops, "host-net-%s",
					   dev->name);
	if (ret)
		goto err_unlock;
	netdev_hold(dev, &n->tracker, GFP_KERNEL_ACCOUNT);
	n->dev = dev;
	mutex_lock(&statsfd_host_net_lock);
	hash_add(statsfd_host_net_table, &n->node, (unsigned long)dev);
	mutex_unlock(&statsfd_host_net_lock);
	rtnl_unlock();

	/*
	 * The file takes its own reference; ours goes either way, and if it
	 * was the last (no file), the release unlists the source under
	 * statsfd_host_net_lock, so the notifier never sees it with a count of 0.
	 */
	file = statsfd_source_getfile(&n->src);
	statsfd_host_net_ref_put(n);
	return file;

err_unlock:
	rtnl_unlock();
	mutex_destroy(&n->lock);
	kfree(n);
	return ERR_PTR(ret);
}

/**
 * statsfd_host_net_init() - set up the network interface sources
 *
 * Return: 0, or a negative errno from the schema or the notifier.
 */
int statsfd_host_net_init(void)
{
	int ret;

	ret = statsfd_schema_init(&statsfd_host_net_schema,
				  &statsfd_host_net_def);
	if (ret)
		return ret;
	ret = register_netdevice_notifier(&statsfd_host_net_nb);
	if (ret)
		statsfd_schema_destroy(&statsfd_host_net_schema);
	return ret;
}

/**
 * statsfd_host_net_exit() - tear down what statsfd_host_net_init() set up
 *
 * Every stats fd pins the module, so no source is left by now.
 */
void statsfd_host_net_exit(void)
{
	unregister_netdevice_notifier(&statsfd_host_net_nb);
	WARN_ON(!hash_empty(statsfd_host_net_table));
	statsfd_schema_destroy(&statsfd_host_net_schema);
}
