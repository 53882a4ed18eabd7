// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: its sources.  Each registered stats fd is checked
 * against the quotas and its VM label's owner, validated once, read every
 * interval (through a view of the --stats it has, if any; a source whose
 * reads fail is down, then dropped), and waited on in the daemon's epoll
 * set: a hangup drops it at once.  Its schema records which stats the
 * exposition leaves out (--include, --exclude, --histograms).  Separate
 * so that host tests can drive it (tools/tests/collector_events_test.c,
 * collector_sources_test.c).
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <search.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include "collector.h"
#include "sd.h"

/**
 * add_stat_rule() - parse one --include or --exclude rule
 * @c: collector
 * @spec: "PROVIDER:TARGET:STAT", each an fnmatch() glob; "STAT" alone
 *	stands for "*:*:STAT"
 * @include: --include
 *
 * Return: 0, or -EINVAL for a spec with two fields or an empty field.
 */
int add_stat_rule(struct collector *c, const char *spec, bool include)
{
	const char *a = strchr(spec, ':'), *b = a ? strchr(a + 1, ':') : NULL;
	struct stat_rule *r;

	if ((a && !b) || (b && strchr(b + 1, ':')) || !*spec ||
	    (a && (a == spec || b == a + 1 || !b[1])))
		return -EINVAL;
	r = realloc(c->rules, (c->nrules + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	c->rules = r;
	r = &c->rules[c->nrules];
	r->include = include;
	r->provider = a ? strndup(spec, (size_t)(a - spec)) : strdup("*");
	r->target = a ? strndup(a + 1, (size_t)(b - a - 1)) : strdup("*");
	r->stat = strdup(b ? b + 1 : spec);
	if (!r->provider || !r->target || !r->stat) {
		free(r->provider);
		free(r->target);
		free(r->stat);
		return -ENOMEM;
	}
	c->nrules++;
	return 0;
}

/*
 * Whether the exposition leaves out @st of a source of @provider and
 * @target: histograms with --histograms=drop; then, when any --include
 * rule applies to the provider and target, a stat no such rule matches;
 * then a stat an --exclude rule matches.
 */
static bool stat_skipped(const struct collector *c, const char *provider,
			 const char *target, const struct statsfd_stat *st)
{
	bool has_include = false, included = false;
	unsigned int i;

	if (c->no_histograms && statsfd_stat_is_hist(st))
		return true;
	for (i = 0; i < c->nrules; i++) {
		const struct stat_rule *r = &c->rules[i];

		if (fnmatch(r->provider, provider, 0) || fnmatch(r->target, target, 0))
			continue;
		if (!r->include) {
			if (!fnmatch(r->stat, st->name, 0))
				return true;
			continue;
		}
		has_include = true;
		if (!fnmatch(r->stat, st->name, 0))
			included = true;
	}
	return has_include && !included;
}

static uint64_t schema_hash(const struct statsfd *sf, enum source_ns ns,
			    const char *provider, const char *target)
{
	uint64_t h = statsfd_schema_hash(sf);

	h = hash_bytes(h ^ HASH_INIT, &ns, sizeof(ns));
	return hash_str(hash_str(h, provider), target);
}

static struct schema *get_schema(struct collector *c, struct statsfd *sf,
				 enum source_ns ns,
				 const struct statsfd_labels *l)
{
	uint64_t h = schema_hash(sf, ns, l->provider, l->target);
	struct schema *sc;
	struct hnode *n;
	unsigned int i;

	for (n = htable_first(&c->schema_index, h); n; n = n->next) {
		sc = (struct schema *)((char *)n - offsetof(struct schema, by_hash));
		if (n->hash == h && sc->ns == ns &&
		    !strcmp(sc->provider, l->provider) &&
		    !strcmp(sc->target, l->target) &&
		    statsfd_same_schema(sc->members->sf, sf))
			return sc;
	}
	if (htable_reserve(&c->schema_index))
		return NULL;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	sc->skip = calloc(statsfd_num_stats(sf) + 1, 1);
	if (!sc->skip) {
		free(sc);
		return NULL;
	}
	for (i = 0; i < statsfd_num_stats(sf); i++)
		sc->skip[i] = stat_skipped(c, l->provider, l->target,
					   statsfd_stat(sf, i));
	sc->id = ++c->next_schema_id;
	sc->ns = ns;
	snprintf(sc->provider, sizeof(sc->provider), "%s", l->provider);
	snprintf(sc->target, sizeof(sc->target), "%s", l->target);
	DLIST_PUSH(c->schemas, sc, next, prev);
	htable_add(&c->schema_index, &sc->by_hash, h);
	return sc;
}

/* Unlink and free @sc, which has no member left. */
static void free_schema(struct collector *c, struct schema *sc)
{
	DLIST_UNLINK(c->schemas, sc, next, prev);
	htable_del(&c->schema_index, &sc->by_hash);
	free(sc->skip);
	free(sc);
}

/**
 * struct vm_label - a vm label and the sources that carry it
 * @node: in collector.by_vm, keyed by @vm
 * @sources: the sources, newest first (their order in collector.sources)
 * @nsources: how many
 * @ndiscovered: how many of them a discovered client owns
 * @uid: uid of the client of the first of them
 * @pid: its pid
 * @mixed: a source of another uid or pid came since (labels_check() never
 *	lets one in, but then the rules are applied source by source)
 * @vm: the label
 *
 * The host's own sources (--host) are left out: their vm label is a
 * device's name.  Freed with its last source.
 */
struct vm_label {
	struct hnode node;
	struct source *sources;
	unsigned int nsources;
	unsigned int ndiscovered;
	uid_t uid;
	pid_t pid;
	bool mixed;
	char vm[sizeof(((struct statsfd_labels *)0)->vm)];
};

static struct vm_label *vm_label_find(const struct collector *c, const char *vm,
				      uint64_t h)
{
	struct hnode *n;

	for (n = htable_first(&c->by_vm, h); n; n = n->next) {
		struct vm_label *v = (struct vm_label *)n;

		if (n->hash == h && !strcmp(v->vm, vm))
			return v;
	}
	return NULL;
}

/*
 * The provider (provider.h) that reserves provider label @provider, or
 * whose own client @cl is and that reserves one, or NULL.  A handful of
 * providers: no index needed.
 */
static const struct provider *reserving(const struct collector *c,
					const struct client *cl,
					const char *provider)
{
	unsigned int i;

	for (i = 0; i < c->nproviders; i++) {
		const struct provider *p = &c->providers[i];

		if (!p->ops->reserved_provider)
			continue;
		if ((cl && p->owner == cl) ||
		    (provider && !strcmp(p->ops->reserved_provider, provider)))
			return p;
	}
	return NULL;
}

/*
 * Does @s of @cl go in the vm label index?  Not without a label, nor
 * when its vm label names a device (a reserved provider's own sources,
 * --host's).
 */
static bool vm_indexed(const struct collector *c, const struct client *cl,
		       const struct statsfd_labels *l)
{
	return l->vm[0] && !reserving(c, cl, NULL);
}

static uint64_t labels_hash(const struct statsfd_labels *l)
{
	uint64_t h = hash_str(hash_str(hash_str(HASH_INIT, l->provider),
				       l->target), l->vm);

	return hash_bytes(h, &l->vcpu, sizeof(l->vcpu));
}

static bool same_labels(const struct statsfd_labels *a,
			const struct statsfd_labels *b)
{
	return a->vcpu == b->vcpu && !strcmp(a->vm, b->vm) &&
	       !strcmp(a->target, b->target) && !strcmp(a->provider, b->provider);
}

/* The live source with labels @l, or NULL. */
static struct source *find_labels(const struct collector *c,
				  const struct statsfd_labels *l)
{
	uint64_t h = labels_hash(l);
	struct hnode *n;

	for (n = htable_first(&c->by_labels, h); n; n = n->next) {
		struct source *s = (struct source *)((char *)n -
						     offsetof(struct source, by_labels));

		if (n->hash == h && same_labels(&s->labels, l))
			return s;
	}
	return NULL;
}

/*
 * Whether @cl may register a source with labels @l.  The combination of
 * provider, target, vm and vcpu is unique among live sources; and a VM
 * label belongs to the client (uid and pid) whose live sources carry it:
 * another uid, or another process of the same uid, can neither take it
 * nor shadow it under another provider.  Once its owner's sources are all
 * gone (the VMM exited or restarts), the label is free again.  A
 * provider label a source provider reserves (--host's statsfd_host) is
 * its own client's alone, and the vm label of its sources, a device's
 * name, is left out of the VM label rules.
 */
static int labels_check(struct collector *c, const struct client *cl,
			const struct statsfd_labels *l, char *why, size_t len)
{
	const struct provider *p = reserving(c, NULL, l->provider);
	struct vm_label *v = NULL;
	struct source *s, *next;

	/* --host's provider is the host's own: nobody else may take it. */
	if (p && cl != p->owner) {
		c->stats.labels_refused++;
		snprintf(why, len, "provider %s is reserved for the collector's --%s",
			 l->provider, p->ops->name);
		return -EACCES;
	}
	/*
	 * A host source's vm label is a device's name: it is no VM's,
	 * neither taken from nor owned against a VMM (the host's sources are
	 * not in c->by_vm).
	 */
	if (vm_indexed(c, cl, l))
		v = vm_label_find(c, l->vm, hash_str(HASH_INIT, l->vm));
	/*
	 * Only the sources carrying the vm label can refuse it or give it
	 * way.  When they all belong to @cl's uid and pid and none gives
	 * way (a VMM adding vCPUs to its VM), only the labels can clash;
	 * otherwise the rules run over them in the order they came, newest
	 * first, as they would over every source.
	 */
	for (s = v && (v->mixed || v->uid != cl->uid || v->pid != cl->pid ||
		       (v->ndiscovered && !cl->discovered)) ? v->sources : NULL;
	     s; s = next) {
		next = s->next_in_vm;
		/*
		 * A discovered source never keeps a VM label from a client
		 * that registers it: the name came from a command line anyone
		 * can choose (-name), the registration from an allowed VMM.
		 * The discovered one goes.
		 */
		if (s->owner->discovered && !cl->discovered) {
			logmsg("source %" PRIu64 " (discovered, vm \"%s\", pid %d): dropped: client pid %d uid %u registers that vm",
			       s->id, l->vm, s->owner->pid, cl->pid, cl->uid);
			drop_source(c, s);
			continue;
		}
		if (s->owner->uid != cl->uid || s->owner->pid != cl->pid) {
			c->stats.labels_refused++;
			snprintf(why, len, "vm \"%s\" is registered by uid %u pid %d",
				 l->vm, s->owner->uid, s->owner->pid);
			return -EACCES;
		}
		if (same_labels(&s->labels, l))
			break;
	}
	if (s || find_labels(c, l)) {
		snprintf(why, len, "a source with provider %s, target %s, vm \"%s\" and vcpu %d is already registered",
			 l->provider, l->target, l->vm, l->vcpu);
		return -EEXIST;
	}
	return 0;
}

static bool user_has_uid(const struct hnode *n, const void *key)
{
	const struct user *u = (const struct user *)((const char *)n -
			       offsetof(struct user, by_uid));

	return u->uid == *(const uid_t *)key;
}

/**
 * user_get() - the account of @uid, made on first use
 * @c: collector
 * @uid: the uid
 *
 * Return: the account, or NULL when out of memory.
 */
struct user *user_get(struct collector *c, uid_t uid)
{
	uint64_t h = hash_bytes(HASH_INIT, &uid, sizeof(uid));
	struct hnode *n = htable_find(&c->users, h, user_has_uid, &uid, NULL);
	struct user *u;

	if (n)
		return (struct user *)((char *)n - offsetof(struct user, by_uid));
	if (htable_reserve(&c->users))
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	htable_add(&c->users, &u->by_uid, h);
	return u;
}

/**
 * user_put() - free @u once it has neither connections nor sources
 * @c: collector
 * @u: the account, or NULL
 */
void user_put(struct collector *c, struct user *u)
{
	if (!u || u->nclients || u->nsources || u->out_bytes)
		return;
	htable_del(&c->users, &u->by_uid);
	free(u);
}

/*
 * Quotas, checked before the library reads the fd: @cost bytes more must
 * fit the client's sources and bytes, its uid's over all its connections,
 * and the collector's budget.
 */
static int quota_check(struct collector *c, const struct client *cl,
		       size_t cost, char *why, size_t len)
{
	const struct user *u = cl->user;

	if (c->nsources >= c->max_sources) {
		snprintf(why, len, "source limit (%u) reached", c->max_sources);
		return -ENOSPC;
	}
	if (cl->nsources >= c->client_max_sources) {
		snprintf(why, len, "this client's source quota (%u, --client-max-sources) reached",
			 c->client_max_sources);
		return -EDQUOT;
	}
	if (cl->bytes + cost > c->client_max_bytes) {
		snprintf(why, len, "this client's quota of %zu bytes (--client-max-bytes) reached",
			 c->client_max_bytes);
		return -EDQUOT;
	}
	if (u && c->user_max_sources && u->nsources >= c->user_max_sources) {
		snprintf(why, len, "uid %u's source quota (%u, --user-max-sources) reached",
			 u->uid, c->user_max_sources);
		return -EDQUOT;
	}
	if (u && c->user_max_bytes && u->bytes + cost > c->user_max_bytes) {
		snprintf(why, len, "uid %u's quota of %zu bytes (--user-max-bytes) reached",
			 u->uid, c->user_max_bytes);
		return -EDQUOT;
	}
	if (c->bytes + cost > c->max_bytes) {
		snprintf(why, len, "the collector's budget of %zu bytes (--max-bytes) reached",
			 c->max_bytes);
		return -ENOSPC;
	}
	return 0;
}

/*
 * The bytes @s adds to the exposition, estimated from its exported stats:
 * a line per value (a histogram's buckets, _sum and _count), each its
 * metric name, labels and a value.  Families' HELP and TYPE lines are
 * shared by a schema's sources and not counted.
 */
static size_t source_expo(const struct source *s)
{
	size_t lab = strlen(s->prom_labels), pre = strlen(source_ns_name(s->schema->ns));
	size_t est = 0;
	unsigned int i;

	for (i = 0; i < statsfd_num_stats(s->sf); i++) {
		const struct statsfd_stat *st = statsfd_stat(s->sf, i);
		size_t lines = st->size + (statsfd_stat_is_hist(st) ? 3 : 0);

		if (s->schema->skip[i])
			continue;
		/* name and suffix, labels (and le=), value and separators */
		est += lines * (pre + strlen(st->name) + lab + 32);
	}
	return est;
}

static int expo_check(struct collector *c, const struct client *cl,
		      size_t expo, char *why, size_t len)
{
	const struct user *u = cl->user;

	if (u && c->user_max_expo && u->expo + expo > c->user_max_expo) {
		snprintf(why, len,
			 "uid %u's exposition quota of %zu bytes (--user-max-exposition) reached: this source adds about %zu",
			 u->uid, c->user_max_expo, expo);
		return -EDQUOT;
	}
	if (c->max_expo && c->expo + expo > c->max_expo) {
		snprintf(why, len,
			 "the collector's exposition budget of %zu bytes (--max-exposition) reached",
			 c->max_expo);
		return -ENOSPC;
	}
	return 0;
}

/*
 * Duplicates: the open file of every source, ordered by kcmp(KCMP_FILE)
 * in a tree (its order is the kernel's, stable while the files are
 * open), so that an fd whose file is already a source is found in
 * O(log n) comparisons.  The items are pointers to struct source.file_fd.
 */
static int file_cmp(const void *a, const void *b)
{
	static pid_t self;
	long r;

	if (!self)
		self = getpid();
	r = syscall(SYS_kcmp, self, self, KCMP_FILE, *(const int *)a, *(const int *)b);
	/* 0 equal, 1 less, 2 greater; an error sorts as "greater". */
	return r == 0 ? 0 : r == 1 ? -1 : 1;
}

/* Can kcmp() compare files here (not so without CONFIG_KCMP)? */
static bool kcmp_works(struct collector *c, int fd);

/**
 * source_of_file() - the source whose open file @fd is
 * @c: collector
 * @fd: any fd of the collector
 *
 * O(log n) kcmp() comparisons in collector.files.
 *
 * Return: the source, or NULL (none, or kcmp() unavailable).
 */
struct source *source_of_file(struct collector *c, int fd)
{
	int **node;

	if (c->no_kcmp)
		return NULL;
	node = tfind(&fd, &c->files, file_cmp);
	return node ? (struct source *)((char *)*node - offsetof(struct source, file_fd)) :
		      NULL;
}

/*
 * Is @fd's open file already a source?  A discovered one gives way to a
 * client registering the same file, as it does for its VM label
 * (labels_check()); anyone else's is kept and @fd refused.
 */
static int duplicate_check(struct collector *c, const struct client *cl, int fd,
			   char *why, size_t len)
{
	struct source *old;

	if (!kcmp_works(c, fd))
		return 0;
	old = source_of_file(c, fd);
	if (!old)
		return 0;
	if (old->owner->discovered && !cl->discovered) {
		logmsg("source %" PRIu64 " (discovered, pid %d): dropped: client pid %d uid %u registers its file",
		       old->id, old->owner->pid, cl->pid, cl->uid);
		drop_source(c, old);
		return 0;
	}
	c->stats.duplicates_refused++;
	snprintf(why, len, "its open file is already a source: an fd is registered once");
	return -EEXIST;
}

/* Can kcmp() compare files here (not so without CONFIG_KCMP)? */
static bool kcmp_works(struct collector *c, int fd)
{
	if (c->no_kcmp)
		return false;
	if (syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, fd, fd) == 0)
		return true;
	logmsg("kcmp(KCMP_FILE): %s: an fd registered twice is not detected",
	       strerror(errno));
	c->no_kcmp = true;
	return false;
}

/*
 * With --stats: read @s through a view of the stats of the filter it has
 * (in the filter's order; none: an empty handle that reads nothing), made
 * by the kernel, or emulated by the library where the fd has no views
 * (KVM's fds, files).  The original handle is closed: the view holds the
 * source like it, and polls like it.
 */
static int use_view(struct collector *c, struct source *s, char *why,
		    size_t len)
{
	const char **sel = calloc(c->nfilter + 1, sizeof(*sel));
	struct statsfd_error err;
	struct statsfd *v;
	unsigned int i, k = 0;

	if (!sel) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < c->nfilter; i++)
		if (statsfd_find(s->sf, c->filter[i]))
			sel[k++] = c->filter[i];
	v = statsfd_open_view(s->sf, sel, k, STATSFD_VIEW_EMULATE, &err);
	free(sel);
	if (!v) {
		snprintf(why, len, "--stats: %s", err.msg);
		return -err.err;
	}
	statsfd_close(s->sf);
	s->sf = v;
	return 0;
}

/*
 * Wait for the events of @s in the daemon's epoll set: its hangup (the VM
 * is gone) drops it at once.  Fds that have no events (KVM's, files) are
 * refused with EPERM and simply never report any.
 */
static void watch_source(struct collector *c, struct source *s)
{
	struct epoll_event ev = {
		.events = statsfd_poll_events(s->sf), .data.ptr = s,
	};
	static bool warned;

	if (!epoll_ctl(c->epfd, EPOLL_CTL_ADD, statsfd_fd(s->sf), &ev)) {
		s->polled = true;
		c->npolled++;
		return;
	}
	/* ENOSPC: fs.epoll.max_user_watches; the source is read all the same. */
	if (errno != EPERM && !warned) {
		warned = true;
		logmsg("source %" PRIu64 " (%s): no events (epoll: %s)", s->id,
		       statsfd_id(s->sf), strerror(errno));
	}
}

/* The labels of @l as one preformatted, escaped Prometheus label set. */
static char *format_labels(const struct statsfd_labels *l)
{
	struct statsfd_buf lab = { 0 };

	statsfd_buf_printf(&lab, "provider=\"");
	statsfd_prom_escape(&lab, l->provider);
	statsfd_buf_printf(&lab, "\",target=\"");
	statsfd_prom_escape(&lab, l->target);
	statsfd_buf_printf(&lab, "\"");
	if (l->vm[0]) {
		statsfd_buf_printf(&lab, ",vm=\"");
		statsfd_prom_escape(&lab, l->vm);
		statsfd_buf_printf(&lab, "\"");
	}
	if (l->vcpu >= 0)
		statsfd_buf_printf(&lab, ",vcpu=\"%d\"", l->vcpu);
	statsfd_buf_append(&lab, "", 0);
	if (lab.oom) {
		statsfd_buf_free(&lab);
		return NULL;
	}
	return lab.data;
}

/**
 * add_source() - adopt @fd as a source of @cl
 * @c: collector
 * @cl: the client registering it
 * @fd: an fd admit_fd() accepted; always consumed
 * @info: what admit_fd() said about it
 * @l: its labels
 * @why: reason of a refusal
 * @len: size of @why
 * @out: the new source, or NULL
 *
 * The quotas and the labels are checked first, then the header and
 * descriptors are read, once; from now on only the data block is.
 *
 * Return: 0; -ENOSPC or -EDQUOT over a limit, -EACCES for a VM label of
 * another client (or provider statsfd_host, under --host), -EEXIST for
 * labels in use, -EINVAL otherwise.
 */
/*
 * The checks before the fd is read: quotas, labels, duplicates.
 * Return: 0, or a negative errno with @why set.
 */
static int add_check(struct collector *c, struct client *cl, int fd,
		     const struct admit_info *info,
		     const struct statsfd_labels *l, char *why, size_t len)
{
	int ret = quota_check(c, cl, info->cost, why, len);

	if (ret) {
		c->stats.quota_refusals++;
		return ret;
	}
	ret = labels_check(c, cl, l, why, len);
	if (ret)
		return ret;
	return duplicate_check(c, cl, fd, why, len);
}

/* Free what source_open() made of @s, and @s. */
static void source_free(struct source *s)
{
	free(s->prom_labels);
	statsfd_close(s->sf);
	free(s->values);
	free(s->tmp);
	free(s);
}

/*
 * @fd (consumed) opened as a new source: its header and descriptors read
 * once, held to what admit_fd() admitted, and its values read a first
 * time.  Return: the source, or NULL with *@ret and @why set.
 */
static struct source *source_open(struct collector *c, int fd,
				  const struct admit_info *info, char *why,
				  size_t len, int *ret)
{
	struct statsfd_error err;
	struct source *s = calloc(1, sizeof(*s));

	*ret = -ENOMEM;
	if (!s) {
		close(fd);
		snprintf(why, len, "out of memory");
		return NULL;
	}
	/*
	 * Rejects what is not a valid stats file: a corrupt header, garbage.
	 * A mapping costs no fd but one of the process's memory maps
	 * (vm.max_map_count, 65530 by default, also serves malloc): bounded.
	 */
	s->sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD |
				(c->nmapped < c->max_mapped && !c->nfilter ? 0 :
				 STATSFD_OPEN_NO_MMAP), &err);
	if (!s->sf) {
		free(s);
		c->stats.fds_rejected++;
		snprintf(why, len, "not a valid stats fd: %s", err.msg);
		*ret = -EINVAL;
		return NULL;
	}
	/*
	 * The library read the header again: a file that changed since
	 * admit_fd() checked its caps (a memfd in test mode; a stats fd's
	 * header never changes) must not bring a larger block in.  What
	 * the library parsed is held to what was admitted.
	 */
	*ret = -EINVAL;
	if (statsfd_data_size(s->sf) > info->data_size ||
	    statsfd_header(s->sf)->name_size > ADMIT_NAME_SIZE_MAX ||
	    statsfd_header(s->sf)->num_desc > ADMIT_NUM_DESC_MAX) {
		c->stats.changed_refused++;
		c->stats.fds_rejected++;
		snprintf(why, len,
			 "its header changed after admission (a data block of %zu bytes, %zu admitted)",
			 statsfd_data_size(s->sf), info->data_size);
		goto fail;
	}
	if (c->nfilter && use_view(c, s, why, len))
		goto fail;
	s->values = calloc(1, statsfd_data_size(s->sf) + 8);
	s->tmp = calloc(1, statsfd_data_size(s->sf) + 8);
	if (!s->values || !s->tmp) {
		snprintf(why, len, "out of memory");
		*ret = -ENOMEM;
		goto fail;
	}
	if (statsfd_read(s->sf, s->values, &err)) {
		snprintf(why, len, "first read failed: %s", err.msg);
		goto fail;
	}
	return s;
fail:
	source_free(s);
	return NULL;
}

/*
 * @s, open and checked, joins the collector: its lists, its indexes
 * (room reserved), its vm label's entry @v (new when @new_v, hash @vh)
 * and the accounts of its client and user.
 */
static void source_link(struct collector *c, struct client *cl,
			struct source *s, struct vm_label *v,
			struct vm_label *new_v, uint64_t vh)
{
	struct schema *sc = s->schema;

	DLIST_PUSH(sc->members, s, next_in_schema, prev_in_schema);
	sc->nmembers++;
	DLIST_PUSH(c->sources, s, next, prev);
	c->nsources++;
	c->bytes += s->cost;
	DLIST_PUSH(cl->sources, s, next_in_client, prev_in_client);
	cl->nsources++;
	htable_add(&c->by_labels, &s->by_labels, labels_hash(&s->labels));
	htable_add(&c->sources_by_id, &s->by_id,
		   hash_bytes(HASH_INIT, &s->id, sizeof(s->id)));
	if (v) {
		if (new_v)
			htable_add(&c->by_vm, &new_v->node, vh);
		else if (v->uid != cl->uid || v->pid != cl->pid)
			v->mixed = true;
		s->vm = v;
		DLIST_PUSH(v->sources, s, next_in_vm, prev_in_vm);
		v->nsources++;
		v->ndiscovered += cl->discovered;
	}
	cl->bytes += s->cost;
	c->expo += s->expo;
	if (cl->user) {
		cl->user->nsources++;
		cl->user->bytes += s->cost;
		cl->user->expo += s->expo;
	}
	c->data_gen++;
}

/*
 * Room in the indexes for @s of @cl, and its vm label's entry: *@v (a
 * new one in *@new_v, hash *@vh), before anything is committed.
 * Return: 0, or -ENOMEM.
 */
static int source_reserve(struct collector *c, const struct client *cl,
			  struct source *s, struct vm_label **v,
			  struct vm_label **new_v, uint64_t *vh)
{
	const struct statsfd_labels *l = &s->labels;

	if (htable_reserve(&c->by_labels) || htable_reserve(&c->sources_by_id))
		return -ENOMEM;
	if (vm_indexed(c, cl, l)) {
		*vh = hash_str(HASH_INIT, l->vm);
		*v = vm_label_find(c, l->vm, *vh);
		if (!*v) {
			*new_v = calloc(1, sizeof(**new_v));
			if (!*new_v || htable_reserve(&c->by_vm))
				return -ENOMEM;
			snprintf((*new_v)->vm, sizeof((*new_v)->vm), "%s", l->vm);
			(*new_v)->uid = cl->uid;
			(*new_v)->pid = cl->pid;
			*v = *new_v;
		}
	}
	s->file_fd = statsfd_fd(s->sf);
	if (!c->no_kcmp && !tsearch(&s->file_fd, &c->files, file_cmp))
		return -ENOMEM;
	return 0;
}

int add_source(struct collector *c, struct client *cl, int fd,
	       const struct admit_info *info, const struct statsfd_labels *l,
	       char *why, size_t len, struct source **out)
{
	struct vm_label *v = NULL, *new_v = NULL;
	struct source *s;
	struct schema *sc;
	uint64_t vh = 0;
	int ret;

	ret = add_check(c, cl, fd, info, l, why, len);
	if (ret) {
		close(fd);
		return ret;
	}
	s = source_open(c, fd, info, why, len, &ret);
	if (!s)
		return ret;
	s->labels = *l;
	s->prom_labels = format_labels(l);
	sc = s->prom_labels ? get_schema(c, s->sf, info->ns, l) : NULL;
	if (!sc) {
		snprintf(why, len, "out of memory");
		source_free(s);
		return -ENOMEM;
	}
	s->schema = sc;
	s->expo = source_expo(s);
	ret = expo_check(c, cl, s->expo, why, len);
	if (ret) {
		c->stats.quota_refusals++;
		goto fail;
	}
	ret = source_reserve(c, cl, s, &v, &new_v, &vh);
	if (ret) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	s->kind = EP_SOURCE;
	s->id = ++c->next_source_id;
	s->owner = cl;
	s->cost = info->cost;
	s->mapped = statsfd_is_mapped(s->sf);
	c->nmapped += s->mapped;
	s->reads = 1;
	s->last_read = wall_ms();
	source_link(c, cl, s, v, new_v, vh);
	watch_source(c, s);
	systemd_store_source(s);
	if (out)
		*out = s;
	if (collector_verbose)
		logmsg("client %" PRIu64 " (pid %d uid %u): source %" PRIu64 " %s (%s %s vm=%s vcpu=%d), schema %u",
		       cl->id, cl->pid, cl->uid, s->id, statsfd_id(s->sf),
		       l->provider, l->target, l->vm, l->vcpu, sc->id);
	return 0;
fail:
	free(new_v);
	/* A schema made for it alone goes with it. */
	if (!sc->nmembers)
		free_schema(c, sc);
	source_free(s);
	return ret;
}

/**
 * drop_source() - unlink @s everywhere and close its fd
 * @c: collector
 * @s: source
 *
 * Closing the fd releases the VM it pins.  The struct itself is freed by
 * reap_sources() after the current batch of epoll events, which may still
 * hold an event for it (its data.ptr): it is marked dead and the event
 * ignored.
 */
void drop_source(struct collector *c, struct source *s)
{
	struct schema *sc = s->schema;
	struct vm_label *v = s->vm;

	if (s->dead)
		return;
	systemd_unstore_source(s);
	DLIST_UNLINK(s->owner->sources, s, next_in_client, prev_in_client);
	htable_del(&c->by_labels, &s->by_labels);
	htable_del(&c->sources_by_id, &s->by_id);
	if (v) {
		DLIST_UNLINK(v->sources, s, next_in_vm, prev_in_vm);
		v->ndiscovered -= s->owner->discovered;
		if (!--v->nsources) {
			htable_del(&c->by_vm, &v->node);
			free(v);
		}
		s->vm = NULL;
	}
	s->owner->nsources--;
	s->owner->bytes -= s->cost;
	if (s->owner->user) {
		s->owner->user->nsources--;
		s->owner->user->bytes -= s->cost;
		s->owner->user->expo -= s->expo;
	}
	c->bytes -= s->cost;
	c->expo -= s->expo;
	/* Out of the tree while its fd still names its file. */
	if (!c->no_kcmp)
		tdelete(&s->file_fd, &c->files, file_cmp);
	c->data_gen++;
	DLIST_UNLINK(c->sources, s, next, prev);
	c->nsources--;
	DLIST_UNLINK(sc->members, s, next_in_schema, prev_in_schema);
	if (!--sc->nmembers)
		free_schema(c, sc);
	c->nmapped -= s->mapped;
	/*
	 * Out of the epoll set before the fd is closed: the VMM may still
	 * hold the same open file, which would keep the registration (and
	 * its events, pointing at @s) alive.
	 */
	if (s->polled) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, statsfd_fd(s->sf), NULL);
		c->npolled--;
	}
	/* Unmaps the values too: the VM is released only then. */
	statsfd_close(s->sf);
	s->sf = NULL;
	free(s->prom_labels);
	free(s->values);
	free(s->tmp);
	s->dead = true;
	s->next = c->dead;
	c->dead = s;
}

/**
 * source_find() - the live source numbered @id
 * @c: collector
 * @id: its id
 *
 * Return: the source, or NULL.
 */
struct source *source_find(struct collector *c, uint64_t id)
{
	return htable_find_id(&c->sources_by_id, id, offsetof(struct source, by_id),
			      offsetof(struct source, id), &c->steps);
}

/**
 * vm_sources() - the live sources carrying vm label @vm
 * @c: collector
 * @vm: a non-empty vm label
 *
 * The host's own sources (whose vm label names a device) are not among
 * them.
 * Return: the newest, the others through struct source.next_in_vm; NULL
 * for none.
 */
struct source *vm_sources(struct collector *c, const char *vm)
{
	struct vm_label *v = vm_label_find(c, vm, hash_str(HASH_INIT, vm));

	return v ? v->sources : NULL;
}

/**
 * reap_sources() - free the sources dropped during the last batch of events
 * @c: collector
 */
void reap_sources(struct collector *c)
{
	struct source *s;

	while ((s = c->dead)) {
		c->dead = s->next;
		free(s);
	}
}

/**
 * source_event() - handle the epoll events of a source
 * @c: collector
 * @s: source
 * @events: what epoll reported on its stats fd
 *
 * A hangup (the owner, the
 * VMM, is gone) drops it at once; a change of its children (a vCPU added
 * to a VM) is counted and acknowledged, so that the level-triggered set
 * does not report it again.  One source per event: nothing here depends
 * on the number of sources.
 */
void source_event(struct collector *c, struct source *s, uint32_t events)
{
	struct statsfd_error err;
	int ev;

	if (s->dead)
		return;
	ev = statsfd_events(s->sf, events, &err);
	if (ev < 0) {
		/* Left in the set, it would be reported again and again. */
		logmsg("source %" PRIu64 " (%s): %s: dropped", s->id,
		       statsfd_id(s->sf), err.msg);
		drop_source(c, s);
		return;
	}
	if (ev & STATSFD_EVENT_HANGUP) {
		c->stats.sources_hung_up++;
		logmsg("source %" PRIu64 " (%s, %s %s vm=%s vcpu=%d): hung up by its owner (the VM is gone): dropped",
		       s->id, statsfd_id(s->sf), s->labels.provider,
		       s->labels.target, s->labels.vm, s->labels.vcpu);
		drop_source(c, s);
		return;
	}
	if (ev & STATSFD_EVENT_CHILDREN) {
		c->stats.children_changes++;
		if (collector_verbose)
			logmsg("source %" PRIu64 " (%s): its children changed",
			       s->id, statsfd_id(s->sf));
	}
}

/**
 * read_sources() - one read tick: read the data block of every source
 * @c: collector
 *
 * Through the mapping for a mapped vCPU, else one pread; scrapes and
 * queries use the result.  A failed read marks the source down (its
 * values are no longer exported); --drop-after consecutive failures
 * drop it.
 */
void read_sources(struct collector *c)
{
	struct statsfd_error err;
	struct source *s, *next;
	uint64_t now = wall_ms();

	for (s = c->sources; s; s = next) {
		uint64_t *t;

		next = s->next;
		if (statsfd_read(s->sf, s->tmp, &err)) {
			s->read_errors++;
			c->stats.read_errors++;
			if (!s->failures++)
				logmsg("source %" PRIu64 " (%s): %s: down", s->id,
				       statsfd_id(s->sf), err.msg);
			if (s->failures >= c->drop_after) {
				logmsg("source %" PRIu64 " (%s): %u failed reads in a row: dropped",
				       s->id, statsfd_id(s->sf), s->failures);
				c->stats.sources_failed++;
				drop_source(c, s);
			}
			continue;
		}
		t = s->values;
		s->values = s->tmp;
		s->tmp = t;
		s->reads++;
		s->failures = 0;
		s->last_read = now;
		c->stats.reads++;
	}
	c->data_gen++;
}

/* ---- their flags --------------------------------------------------------- */

/* --stats a,b (repeatable): each name once, in order. */
static int opt_stats(struct collector *c, void *conf, const char *csv)
{
	char *dup = strdup(csv), *tok, *save = NULL, **f;
	unsigned int i;

	if (!dup)
		return -EINVAL;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < c->nfilter; i++)
			if (!strcmp(c->filter[i], tok))
				break;
		if (i < c->nfilter)
			continue;
		if (strlen(tok) >= STATSFD_LIB_NAME_SIZE_MAX || c->nfilter >= 4096)
			goto bad;
		f = realloc(c->filter, (c->nfilter + 1) * sizeof(*f));
		if (!f)
			goto bad;
		c->filter = f;
		c->filter[c->nfilter] = strdup(tok);
		if (!c->filter[c->nfilter])
			goto bad;
		c->nfilter++;
	}
	free(dup);
	return c->nfilter ? 0 : -EINVAL;
bad:
	free(dup);
	return -EINVAL;
}

static int opt_include(struct collector *c, void *conf, const char *arg)
{
	return add_stat_rule(c, arg, true) ? -EINVAL : 0;
}

static int opt_exclude(struct collector *c, void *conf, const char *arg)
{
	return add_stat_rule(c, arg, false) ? -EINVAL : 0;
}

static int opt_histograms(struct collector *c, void *conf, const char *arg)
{
	if (strcmp(arg, "keep") && strcmp(arg, "drop"))
		return -EINVAL;
	c->no_histograms = !strcmp(arg, "drop");
	return 0;
}

static const struct opt sources_opts[] = {
	OPT_C_UINT("max-sources", max_sources, 1, 1000000),
	OPT_C_UINT("max-mapped", max_mapped, 0, 1000000),
	OPT_C_SIZE("max-bytes", max_bytes, 1024, OPT_SIZE_MAX),
	OPT_C_UINT("user-max-sources", user_max_sources, 1, 1000000),
	OPT_C_SIZE("user-max-bytes", user_max_bytes, 1024, OPT_SIZE_MAX),
	OPT_C_SIZE("user-max-exposition", user_max_expo, 1024, OPT_SIZE_MAX),
	OPT_C_SIZE("max-exposition", max_expo, 1024, OPT_SIZE_MAX),
	OPT_CALL("stats", OPT_FN, opt_stats),
	OPT_CALL("include", OPT_FN, opt_include),
	OPT_CALL("exclude", OPT_FN, opt_exclude),
	OPT_CALL("histograms", OPT_FN, opt_histograms),
	OPT_C_UINT("drop-after", drop_after, 1, 1000000),
	OPT_FLAG_AT("test-accept-memfd", struct collector, accept_memfd),
	OPT_END,
};

/* The flags of the sources: quotas, what is read and exported. */
const struct opt_table sources_opt_table = { sources_opts, NULL };
