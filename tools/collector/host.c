// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector --host: the host's own stats fds.  /dev/statsfd_host
 * (statsfd_host.ko) gives one for the node, each online CPU, each
 * interface of our network namespace and each whole disk; the collector
 * opens them itself, adds them as sources of a client standing for the
 * host (the same admission, reads, health and hangups as any source), and
 * looks for new and gone CPUs, interfaces and disks every
 * --discover-interval, as --discover-kvm does for VMMs.  An interface or
 * disk that goes away hangs its stats fd up: the source is dropped at
 * once, like a VM's.
 *
 * Their stats are exported under node_exporter's names (lib/expo/node_exporter.c, the
 * table in Documentation/statsfd-collector.rst); the few without a
 * node_exporter equivalent keep the collector's statsfd_* naming, with the
 * labels provider="statsfd_host", target (node, cpu, net, block) and cpu
 * or device.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "admit.h"
#include "discover.h"
#include "host.h"

/* One object followed: the source it gave. */
struct hent {
	struct statsfd_host_obj obj;
	uint64_t sid;
};

/**
 * struct host - --host state
 * @kind: epoll tag, its provider's (the rescan timer's data.ptr is this)
 * @c: the collector
 * @sysfs: the sysfs mount point
 * @dev: /dev/statsfd_host
 * @timerfd: rescans
 * @owner: stands for the host as the owner of its sources; not in the
 *	collector's list of clients (it has no connection)
 * @ents: the objects with a source, in scan order
 * @n: how many
 * @cap: allocated entries
 * @warned: a failed scan was logged (once until a scan succeeds)
 * @images: --test-host: the directory of the images standing for the
 *	stats fds, else ""
 * @stats: counters
 */
struct host {
	int kind;
	struct collector *c;
	char sysfs[PATH_MAX];
	int dev;
	int timerfd;
	struct client owner;
	struct hent *ents;
	size_t n, cap;
	bool warned;
	char images[PATH_MAX];
	struct host_stats stats;
};

static struct source *find_source(struct host *h, uint64_t sid)
{
	struct source *s;

	for (s = h->owner.sources; s; s = s->next_in_client)
		if (s->id == sid)
			return s;
	return NULL;
}

/* The same object: an interface by index and name, a disk by number and name. */
static bool same_obj(const struct statsfd_host_obj *a,
		     const struct statsfd_host_obj *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case STATSFD_HOST_CPU:
		return a->cpu == b->cpu;
	case STATSFD_HOST_NETDEV:
		return a->ifindex == b->ifindex && !strcmp(a->name, b->name);
	case STATSFD_HOST_BLOCK:
		return a->major == b->major && a->minor == b->minor &&
		       !strcmp(a->name, b->name);
	}
	return true;
}

/*
 * The labels of a host source.  The unique key of a source is provider,
 * target, vm and vcpu: a CPU's number goes in vcpu, a device's name in vm
 * (labels_check() does not treat it as a VM's); its Prometheus labels are
 * node_exporter's cpu and device instead.
 */
static void obj_labels(const struct statsfd_host_obj *o, struct statsfd_labels *l)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->provider, sizeof(l->provider), "%s", HOST_PROVIDER);
	snprintf(l->target, sizeof(l->target), "%s", statsfd_host_kind_name(o->kind));
	l->vcpu = o->kind == STATSFD_HOST_CPU ? (int)o->cpu : -1;
	if (o->kind == STATSFD_HOST_NETDEV || o->kind == STATSFD_HOST_BLOCK)
		snprintf(l->vm, sizeof(l->vm), "%s", o->name);
}

static char *prom_labels(const struct statsfd_host_obj *o)
{
	struct statsfd_buf b = { 0 };

	statsfd_buf_printf(&b, "provider=\"%s\",target=\"%s\"", HOST_PROVIDER,
			   statsfd_host_kind_name(o->kind));
	if (o->kind != STATSFD_HOST_NODE) {
		statsfd_buf_printf(&b, ",%s=\"", o->kind == STATSFD_HOST_CPU ?
				   "cpu" : "device");
		statsfd_prom_escape(&b, o->name);
		statsfd_buf_printf(&b, "\"");
	}
	if (b.oom) {
		statsfd_buf_free(&b);
		return NULL;
	}
	return b.data;
}

static int push(struct host *h, const struct statsfd_host_obj *o, uint64_t sid)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 32;
		struct hent *v = realloc(h->ents, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->ents = v;
		h->cap = cap;
	}
	h->ents[h->n].obj = *o;
	h->ents[h->n].sid = sid;
	h->n++;
	return 0;
}

/*
 * --test-host: a memfd holding the image IMAGES/<id>.img of @o, the id
 * its stats fd would have; -ENODEV without one, as for an object gone.
 */
static int test_fd(struct host *h, const struct statsfd_host_obj *o)
{
	char path[PATH_MAX + 64], buf[1 << 16];
	int in, fd;
	ssize_t n;

	switch (o->kind) {
	case STATSFD_HOST_NODE:
		snprintf(path, sizeof(path), "%s/host-node.img", h->images);
		break;
	case STATSFD_HOST_CPU:
		snprintf(path, sizeof(path), "%s/host-cpu%u.img", h->images, o->cpu);
		break;
	default:
		snprintf(path, sizeof(path), "%s/host-%s-%s.img", h->images,
			 statsfd_host_kind_name(o->kind), o->name);
	}
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -ENODEV;
	fd = memfd_create("statsfd-test-host", MFD_CLOEXEC);
	while (fd >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			n = -1;
	close(in);
	return fd < 0 ? -errno : fd;
}

/* Open @o's stats fd and add it as a source; logged when that fails. */
static void add_obj(struct host *h, const struct statsfd_host_obj *o)
{
	struct collector *c = h->c;
	struct statsfd_labels l;
	struct admit_info info;
	struct source *s = NULL;
	char why[400], *pl;
	unsigned int i;
	int fd;

	fd = h->images[0] ? test_fd(h, o) : statsfd_host_get_fd(h->dev, o);
	if (fd < 0) {
		/*
		 * Gone between the scan and the ioctl: the next scan knows.
		 * The node never goes: its ENODEV is worth a line.
		 */
		if (fd != -ENODEV || o->kind == STATSFD_HOST_NODE)
			logmsg("host: %s %s: STATSFD_HOST_GET_STATS_FD: %s",
			       statsfd_host_kind_name(o->kind), o->name, strerror(-fd));
		h->stats.failed++;
		return;
	}
	obj_labels(o, &l);
	if (admit_fd(fd, c->accept_memfd, &info, why, sizeof(why))) {
		close(fd);
		goto fail;
	}
	/* Consumes the fd, also on failure. */
	if (add_source(c, &h->owner, fd, &info, &l, why, sizeof(why), &s))
		goto fail;
	/* node_exporter's cpu and device labels, for the statsfd_* series too. */
	pl = prom_labels(o);
	if (pl) {
		free(s->prom_labels);
		s->prom_labels = pl;
	}
	/* The mapped stats are exported by host_render() only, some not at all. */
	for (i = 0; i < statsfd_num_stats(s->sf); i++)
		if (statsfd_host_not_generic(o->kind, statsfd_stat(s->sf, i)->name))
			s->schema->skip[i] = 1;
	if (push(h, o, s->id)) {
		drop_source(c, s);
		h->stats.failed++;
		return;
	}
	h->stats.sources++;
	if (collector_verbose)
		logmsg("host: %s %s: source %" PRIu64 " (%s)",
		       statsfd_host_kind_name(o->kind), o->name, s->id,
		       statsfd_id(s->sf));
	return;
fail:
	logmsg("host: %s %s: %s", statsfd_host_kind_name(o->kind), o->name, why);
	h->stats.failed++;
}

void host_scan(struct host *h)
{
	struct statsfd_host_obj *objs;
	size_t n, i, j;
	int ret;

	h->stats.scans++;
	/* Sources dropped meanwhile (a hangup, failed reads): forget them. */
	for (i = 0; i < h->n;) {
		if (!find_source(h, h->ents[i].sid)) {
			h->ents[i] = h->ents[--h->n];
			continue;
		}
		i++;
	}
	ret = statsfd_host_scan(h->sysfs, &objs, &n);
	if (ret) {
		if (!h->warned)
			logmsg("host: cannot list the CPUs, interfaces and disks (%s): %s",
			       h->sysfs, strerror(-ret));
		h->warned = true;
		return;
	}
	h->warned = false;
	/* Gone objects: an offline CPU still reads, but node_exporter drops it. */
	for (i = 0; i < h->n;) {
		for (j = 0; j < n && !same_obj(&h->ents[i].obj, &objs[j]); j++)
			;
		if (j == n) {
			struct source *s = find_source(h, h->ents[i].sid);

			logmsg("host: %s %s gone: source %" PRIu64 " dropped",
			       statsfd_host_kind_name(h->ents[i].obj.kind),
			       h->ents[i].obj.name, h->ents[i].sid);
			if (s)
				drop_source(h->c, s);
			h->stats.removed++;
			h->ents[i] = h->ents[--h->n];
			continue;
		}
		i++;
	}
	for (j = 0; j < n; j++) {
		for (i = 0; i < h->n && !same_obj(&h->ents[i].obj, &objs[j]); i++)
			;
		if (i == h->n)
			add_obj(h, &objs[j]);
	}
	free(objs);
}

static int cmp_ent(const void *a, const void *b)
{
	const struct statsfd_host_obj *x = &((const struct hent *)a)->obj;
	const struct statsfd_host_obj *y = &((const struct hent *)b)->obj;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == STATSFD_HOST_CPU)
		return (x->cpu > y->cpu) - (x->cpu < y->cpu);
	return strcmp(x->name, y->name);
}

int host_render(struct host *h, struct expo *x)
{
	struct statsfd_host_series *ser;
	size_t i, n = 0;
	int ret;

	if (!h || !h->n)
		return 0;
	/* Samples by CPU number and device name, whatever the scan order. */
	qsort(h->ents, h->n, sizeof(*h->ents), cmp_ent);
	ser = calloc(h->n, sizeof(*ser));
	if (!ser)
		return -ENOMEM;
	for (i = 0; i < h->n; i++) {
		struct source *s = find_source(h, h->ents[i].sid);

		if (!s || s->failures)
			continue;
		ser[n++] = (struct statsfd_host_series){
			.sf = s->sf, .values = s->values,
			.kind = h->ents[i].obj.kind, .name = h->ents[i].obj.name,
		};
	}
	ret = expo_host(x, ser, n);
	free(ser);
	return ret;
}

struct host *host_start(struct collector *c, const char *device,
			const char *sysfs, const char *images,
			unsigned int interval_ms, struct provider *p)
{
	struct host *h;

	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->kind = p->kind;
	h->c = c;
	snprintf(h->sysfs, sizeof(h->sysfs), "%s", sysfs);
	snprintf(h->images, sizeof(h->images), "%s", images ? images : "");
	h->dev = open(device, O_RDONLY | O_CLOEXEC);
	if (h->dev < 0) {
		logmsg("--host: %s: %s%s", device, strerror(errno),
		       errno == ENOENT ? " (is statsfd_host.ko loaded?)" : "");
		free(h);
		return NULL;
	}
	h->owner.kind = EP_CLIENT;
	h->owner.fd = -1;
	/* Found, not registered: never put in systemd's fd store. */
	h->owner.discovered = true;
	h->owner.id = ++c->next_client_id;
	h->owner.pid = getpid();
	h->owner.uid = geteuid();
	h->owner.gid = getegid();
	h->timerfd = interval_timer(c, interval_ms, h);
	if (h->timerfd < 0) {
		logmsg("--host: timer: %s", strerror(errno));
		close(h->dev);
		free(h);
		return NULL;
	}
	/* Its client reserves the provider label from the first scan on. */
	p->state = h;
	p->owner = &h->owner;
	host_scan(h);
	if (h->warned) {
		host_stop(h);
		p->state = NULL;
		p->owner = NULL;
		return NULL;
	}
	logmsg("host: %zu sources (node, CPUs, interfaces, disks) from %s, rescanning every %u ms",
	       h->n, device, interval_ms);
	return h;
}

void host_event(struct host *h)
{
	uint64_t ticks;

	if (read(h->timerfd, &ticks, sizeof(ticks)) > 0)
		host_scan(h);
}

const struct host_stats *host_get_stats(const struct host *h)
{
	return &h->stats;
}

void host_stop(struct host *h)
{
	struct collector *c;

	if (!h)
		return;
	c = h->c;
	while (h->owner.sources)
		drop_source(c, h->owner.sources);
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, h->timerfd, NULL);
	close(h->timerfd);
	close(h->dev);
	free(h->ents);
	free(h);
}

/* ---- --host as a source provider ------------------------------------------ */

/**
 * struct host_conf - the flags of --host
 * @enabled: --host (or --test-host)
 * @test_host: --test-host DIR, or NULL
 */
struct host_conf {
	bool enabled;
	const char *test_host;
};

static struct host_conf host_conf;

static int opt_test_host(struct collector *c, void *conf, const char *arg)
{
	struct host_conf *hc = conf;

	hc->enabled = true;
	hc->test_host = arg;
	return 0;
}

static const struct opt host_opts[] = {
	OPT_FLAG_AT("host", struct host_conf, enabled),
	OPT_CALL("test-host", OPT_FN, opt_test_host),
	OPT_END,
};

static const struct opt_table host_opt_table = { host_opts, &host_conf };

static int host_provider_start(struct collector *c, struct provider *p)
{
	const char *t = host_conf.test_host;
	char dev[PATH_MAX], sys[PATH_MAX], img[PATH_MAX];
	struct host *h;

	if (!host_conf.enabled)
		return 0;
	snprintf(dev, sizeof(dev), "%s%s", t ?: "",
		 t ? "/statsfd_host" : STATSFD_HOST_DEVICE);
	snprintf(sys, sizeof(sys), "%s/sys", t ?: "");
	snprintf(img, sizeof(img), "%s/images", t ?: "");
	if (t)
		logmsg("--test-host %s: images instead of stats fds; for tests only",
		       t);
	h = host_start(c, dev, sys, t ? img : NULL,
		       provider_rescan_ms ?: DISCOVER_INTERVAL_MS, p);
	return h ? 0 : -1;
}

static void host_provider_event(struct provider *p, void *ptr,
				uint32_t events)
{
	host_event(p->state);
}

static int host_provider_render(struct provider *p, struct expo *x)
{
	return host_render(p->state, x);
}

static void host_provider_stop(struct provider *p)
{
	host_stop(p->state);
	p->state = NULL;
	p->owner = NULL;
}

const struct source_provider host_provider = {
	.name = "host",
	.opts = &host_opt_table,
	.enabled = &host_conf.enabled,
	.rescans = true,
	.reserved_provider = HOST_PROVIDER,
	.start = host_provider_start,
	.event = host_provider_event,
	.render = host_provider_render,
	.stop = host_provider_stop,
};
