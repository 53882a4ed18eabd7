// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the JSON commands of the unix socket, modeled on
 * QEMU's QMP: {"execute": CMD, "arguments": {...}, "id": ANY} answered by
 * {"return": ..., "id": ANY} or {"error": {"class", "desc"}, "id": ANY}.
 * Schemas are served once (query-stats-schemas), values often
 * (query-stats), with filters by provider, target, VM, vCPU and name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static struct json_object *err_obj(const char *cls, const char *desc)
{
	struct json_object *e = json_object_new_object();

	json_object_object_add(e, "class", json_object_new_string(cls));
	json_object_object_add(e, "desc", json_object_new_string(desc));
	return e;
}

/* Optional string member; *@bad set when present with the wrong type. */
static const char *opt_str(struct json_object *args, const char *key,
			   bool *bad)
{
	struct json_object *v;

	if (!args || !json_object_object_get_ex(args, key, &v))
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		*bad = true;
		return NULL;
	}
	return json_object_get_string(v);
}

/* Optional array member; *@bad set when present but not an array of @t. */
static struct json_object *opt_arr(struct json_object *args, const char *key,
				   json_type t, bool *bad)
{
	struct json_object *v;
	size_t i;

	if (!args || !json_object_object_get_ex(args, key, &v))
		return NULL;
	if (!json_object_is_type(v, json_type_array)) {
		*bad = true;
		return NULL;
	}
	for (i = 0; i < json_object_array_length(v); i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i), t))
			*bad = true;
	return v;
}

/*
 * A filter array, sorted once per request: matching a name or a number is
 * then O(log n), whatever the number of sources and stats it is tried on.
 */
struct strset {
	const char **v;
	size_t n;
};

struct intset {
	int64_t *v;
	size_t n;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_int(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The entries of @arr (checked), each read by @get into @size bytes, in an
 * array sorted by @cmp; *@n set to their number.  Return: the array, NULL
 * when empty or out of memory.
 */
static void *sorted_make(struct json_object *arr, size_t size,
			 void (*get)(struct json_object *o, void *slot),
			 int (*cmp)(const void *, const void *), size_t *n)
{
	char *v;
	size_t i;

	*n = arr ? json_object_array_length(arr) : 0;
	v = *n ? malloc(*n * size) : NULL;
	if (!v)
		return NULL;
	for (i = 0; i < *n; i++)
		get(json_object_array_get_idx(arr, i), v + i * size);
	qsort(v, *n, size, cmp);
	return v;
}

static void get_str(struct json_object *o, void *slot)
{
	const char *s = json_object_get_string(o);

	memcpy(slot, &s, sizeof(s));
}

static void get_int(struct json_object *o, void *slot)
{
	int64_t x = json_object_get_int64(o);

	memcpy(slot, &x, sizeof(x));
}

/* @arr (strings, checked) as a sorted set; Return: false when out of memory. */
static bool strset_make(struct json_object *arr, struct strset *set)
{
	set->v = sorted_make(arr, sizeof(*set->v), get_str, cmp_str, &set->n);
	return !set->n || set->v;
}

static bool strset_has(const struct strset *set, const char *s)
{
	return set->n && bsearch(&s, set->v, set->n, sizeof(*set->v), cmp_str);
}

static bool intset_make(struct json_object *arr, struct intset *set)
{
	set->v = sorted_make(arr, sizeof(*set->v), get_int, cmp_int, &set->n);
	return !set->n || set->v;
}

static bool intset_has(const struct intset *set, int64_t x)
{
	return set->n && bsearch(&x, set->v, set->n, sizeof(*set->v), cmp_int);
}

/* Is any filter array of @args (or of its providers) above QUERY_FILTER_MAX? */
static const char *filter_too_long(struct json_object *args)
{
	static const char *const keys[] = { "names", "vms", "vcpus", "providers",
					    "sources" };
	struct json_object *v, *p, *pn;
	unsigned int i;
	size_t j;

	for (i = 0; args && i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!json_object_object_get_ex(args, keys[i], &v) ||
		    !json_object_is_type(v, json_type_array))
			continue;
		if (json_object_array_length(v) > QUERY_FILTER_MAX)
			return keys[i];
		if (strcmp(keys[i], "providers"))
			continue;
		for (j = 0; j < json_object_array_length(v); j++) {
			p = json_object_array_get_idx(v, j);
			if (json_object_is_type(p, json_type_object) &&
			    json_object_object_get_ex(p, "names", &pn) &&
			    json_object_is_type(pn, json_type_array) &&
			    json_object_array_length(pn) > QUERY_FILTER_MAX)
				return "providers[].names";
		}
	}
	return NULL;
}

/*
 * The error class of a refused fd: not a stats fd or not the client's VM
 * label, a limit, or anything else (caps, invalid files, labels in use).
 */
static const char *add_error_class(int err)
{
	if (err == -EPERM || err == -EACCES)
		return "PermissionDenied";
	if (err == -EDQUOT || err == -ENOSPC)
		return "QuotaExceeded";
	return "GenericError";
}

static struct json_object *cmd_add_sources(struct collector *c,
					   struct client *cl,
					   struct json_object *args, int *fds,
					   unsigned int nfds,
					   struct json_object **err)
{
	struct statsfd_labels *labels = calloc(nfds + 1, sizeof(*labels));
	struct source **added = calloc(nfds + 1, sizeof(*added));
	struct json_object *ret = NULL, *ids;
	char why[512], msg[600];
	unsigned int i, j;

	if (!labels || !added) {
		*err = err_obj("GenericError", "out of memory");
		goto out_close;
	}
	if (!nfds) {
		*err = err_obj("GenericError", "add-sources: no fds attached (send them with SCM_RIGHTS)");
		goto out_close;
	}
	if (statsfd_json_parse_sources(args, nfds, labels, why, sizeof(why))) {
		*err = err_obj("GenericError", why);
		goto out_close;
	}
	/* All or nothing: a VMM never has to guess which fds were kept. */
	for (i = 0; i < nfds; i++) {
		struct admit_info info;
		int r = admit_fd(fds[i], c->accept_memfd, &info, why, sizeof(why));

		if (r) {
			c->stats.fds_rejected++;
		} else {
			r = add_source(c, cl, fds[i], &info, &labels[i], why,
				       sizeof(why), &added[i]);
			fds[i] = -1;
		}
		if (r) {
			snprintf(msg, sizeof(msg), "sources[%u]: %s", i, why);
			*err = err_obj(add_error_class(r), msg);
			for (j = 0; j < i; j++)
				drop_source(c, added[j]);
			goto out_close;
		}
	}
	ret = json_object_new_object();
	ids = json_object_new_array();
	for (i = 0; i < nfds; i++)
		json_object_array_add(ids, json_object_new_uint64(added[i]->id));
	json_object_object_add(ret, "sources", ids);
out_close:
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(labels);
	free(added);
	return ret;
}

/*
 * Drop the sources of @cl carrying vm label @vm.  Through the vm label
 * index: the work is the sources of that label, not all of @cl's; sources
 * without a vm label are in no index, so "" walks @cl's own.
 */
static unsigned int remove_vm(struct collector *c, struct client *cl,
			      const char *vm)
{
	struct source *s, *next;
	unsigned int n = 0;
	bool all = !vm[0];

	for (s = all ? cl->sources : vm_sources(c, vm); s; s = next) {
		next = all ? s->next_in_client : s->next_in_vm;
		c->steps++;
		if (s->owner == cl && !strcmp(s->labels.vm, vm)) {
			drop_source(c, s);
			n++;
		}
	}
	return n;
}

static struct json_object *cmd_remove_sources(struct collector *c,
					      struct client *cl,
					      struct json_object *args,
					      struct json_object **err)
{
	bool bad = false;
	const char *vm = opt_str(args, "vm", &bad);
	struct json_object *ids = opt_arr(args, "sources", json_type_int, &bad);
	struct intset idset = { 0 };
	unsigned int n = 0;
	struct json_object *ret;
	size_t i;

	if (bad || (!vm && !ids) || !intset_make(ids, &idset)) {
		*err = err_obj("GenericError",
			       "remove-sources: give \"vm\" (a string) or \"sources\" (an array of ids)");
		return NULL;
	}
	/* Only the client's own sources: one lookup per id asked for. */
	if (vm)
		n = remove_vm(c, cl, vm);
	for (i = 0; i < idset.n; i++) {
		struct source *s = idset.v[i] > 0 ?
				   source_find(c, (uint64_t)idset.v[i]) : NULL;

		if (s && s->owner == cl) {
			drop_source(c, s);
			n++;
		}
	}
	free(idset.v);
	ret = json_object_new_object();
	json_object_object_add(ret, "removed", json_object_new_int((int)n));
	return ret;
}

/* The "provider" and "target" filters of query-sources and -schemas. */
struct pt_filter {
	const char *provider;	/* NULL: any */
	const char *target;	/* NULL: any */
};

/*
 * The filters @f of command @cmd from @args.
 * Return: a new reply array, or NULL with *@err set.
 */
static struct json_object *filter_args(struct json_object *args,
				       const char *cmd, struct pt_filter *f,
				       struct json_object **err)
{
	char msg[96];
	bool bad = false;

	f->provider = opt_str(args, "provider", &bad);
	f->target = opt_str(args, "target", &bad);
	if (!bad)
		return json_object_new_array();
	snprintf(msg, sizeof(msg), "%s: provider and target must be strings", cmd);
	*err = err_obj("GenericError", msg);
	return NULL;
}

/* Whether @provider and @target pass @f. */
static bool pt_match(const struct pt_filter *f, const char *provider,
		     const char *target)
{
	return (!f->provider || !strcmp(f->provider, provider)) &&
	       (!f->target || !strcmp(f->target, target));
}

static void add_labels(struct json_object *o, const struct source *s)
{
	json_object_object_add(o, "source", json_object_new_uint64(s->id));
	json_object_object_add(o, "schema", json_object_new_int((int)s->schema->id));
	json_object_object_add(o, "provider", json_object_new_string(s->labels.provider));
	json_object_object_add(o, "target", json_object_new_string(s->labels.target));
	json_object_object_add(o, "vm", json_object_new_string(s->labels.vm));
	if (s->labels.vcpu >= 0)
		json_object_object_add(o, "vcpu", json_object_new_int(s->labels.vcpu));
	json_object_object_add(o, "id", json_object_new_string(statsfd_id(s->sf)));
}

static struct json_object *cmd_query_sources(struct collector *c,
					     struct json_object *args,
					     struct json_object **err)
{
	struct json_object *arr;
	struct pt_filter f;
	struct source *s;

	arr = filter_args(args, "query-sources", &f, err);
	for (s = c->sources; arr && s; s = s->next) {
		struct json_object *o, *cli;

		if (!pt_match(&f, s->labels.provider, s->labels.target))
			continue;
		o = json_object_new_object();
		add_labels(o, s);
		cli = json_object_new_object();
		json_object_object_add(cli, "pid", json_object_new_int(s->owner->pid));
		json_object_object_add(cli, "uid", json_object_new_int64(s->owner->uid));
		json_object_object_add(cli, "gid", json_object_new_int64(s->owner->gid));
		json_object_object_add(o, "client", cli);
		json_object_object_add(o, "reads", json_object_new_uint64(s->reads));
		json_object_object_add(o, "read-errors", json_object_new_uint64(s->read_errors));
		json_object_object_add(o, "up", json_object_new_boolean(!s->failures));
		json_object_object_add(o, "last-read-ms", json_object_new_uint64(s->last_read));
		json_object_object_add(o, "mapped", json_object_new_boolean(s->mapped));
		json_object_object_add(o, "view", json_object_new_string(
			statsfd_view_kind(s->sf) == STATSFD_VIEW_KERNEL ? "kernel" :
			statsfd_view_kind(s->sf) == STATSFD_VIEW_EMULATED ? "emulated" :
			"none"));
		json_object_object_add(o, "events", json_object_new_boolean(s->polled));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *cmd_query_schemas(struct collector *c,
					     struct json_object *args,
					     struct json_object **err)
{
	struct json_object *arr;
	struct pt_filter f;
	struct schema *sc;

	arr = filter_args(args, "query-stats-schemas", &f, err);
	for (sc = c->schemas; arr && sc; sc = sc->next) {
		struct json_object *o;

		if (!pt_match(&f, sc->provider, sc->target))
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "schema", json_object_new_int((int)sc->id));
		json_object_object_add(o, "provider", json_object_new_string(sc->provider));
		json_object_object_add(o, "target", json_object_new_string(sc->target));
		json_object_object_add(o, "sources", json_object_new_int((int)sc->nmembers));
		json_object_object_add(o, "stats", statsfd_json_schema(sc->members->sf));
		json_object_array_add(arr, o);
	}
	return arr;
}

/*
 * "providers": [{"provider": P, "names": [...]}] as in QEMU: a source is
 * reported when its provider is listed; "names" (optional) restricts the
 * stats.  The providers are sorted by name once per request.
 */
struct prov {
	const char *provider;	/* NULL: an entry without one, matches any */
	size_t index;		/* in the request: the first match wins */
	struct strset names;
	bool has_names;
};

struct provset {
	struct prov *v;
	size_t n;
};

static int cmp_prov(const void *a, const void *b)
{
	const struct prov *x = a, *y = b;
	int r;

	if (!x->provider || !y->provider)
		r = !!x->provider - !!y->provider;
	else
		r = strcmp(x->provider, y->provider);
	return r ? r : x->index < y->index ? -1 : x->index > y->index;
}

static void provset_free(struct provset *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		free(ps->v[i].names.v);
	free(ps->v);
}

static bool provset_make(struct json_object *providers, struct provset *ps)
{
	size_t i;

	ps->n = providers ? json_object_array_length(providers) : 0;
	ps->v = ps->n ? calloc(ps->n, sizeof(*ps->v)) : NULL;
	if (ps->n && !ps->v)
		return false;
	for (i = 0; i < ps->n; i++) {
		struct json_object *p = json_object_array_get_idx(providers, i), *v;

		ps->v[i].index = i;
		if (json_object_object_get_ex(p, "provider", &v))
			ps->v[i].provider = json_object_get_string(v);
		if (json_object_object_get_ex(p, "names", &v)) {
			ps->v[i].has_names = true;
			if (!strset_make(v, &ps->v[i].names))
				return false;
		}
	}
	/*
	 * Entries without a provider first (they match any), then by name,
	 * each group in request order: the first match in the request is
	 * the one that counts, as in QEMU.
	 */
	if (ps->n)
		qsort(ps->v, ps->n, sizeof(*ps->v), cmp_prov);
	return true;
}

/*
 * The entry for @provider: one without a provider (matches any), else the
 * one naming it.  Return: false when none matches (no providers: all do).
 */
static bool provset_match(const struct provset *ps, const char *provider,
			  const struct strset **names)
{
	size_t lo = 0, hi = ps->n, best = ps->n;

	*names = NULL;
	if (!ps->n)
		return true;
	if (!ps->v[0].provider)
		best = 0;
	/* The leftmost entry naming @provider: the first in the request. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = ps->v[mid].provider ? strcmp(ps->v[mid].provider, provider) : -1;

		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ps->n && ps->v[lo].provider && !strcmp(ps->v[lo].provider, provider) &&
	    (best == ps->n || ps->v[lo].index < ps->v[best].index))
		best = lo;
	if (best == ps->n)
		return false;
	*names = ps->v[best].has_names ? &ps->v[best].names : NULL;
	return true;
}

/*
 * The stats of @sc that pass the name filters, decided once per schema
 * and request (its sources share descriptors and provider): @cache holds
 * the decision for the schemas met so far.
 */
struct match_cache {
	const struct schema **sc;
	unsigned char **match;
	size_t n, cap;
};

static const unsigned char *schema_match(struct match_cache *mc,
					 const struct source *s,
					 const struct strset *names,
					 const struct strset *pnames)
{
	unsigned int j, n = statsfd_num_stats(s->sf);
	unsigned char *m;
	size_t i;

	for (i = 0; i < mc->n; i++)
		if (mc->sc[i] == s->schema)
			return mc->match[i];
	if (mc->n == mc->cap) {
		size_t cap = mc->cap ? 2 * mc->cap : 16;
		const struct schema **nsc = realloc(mc->sc, cap * sizeof(*nsc));
		unsigned char **nm;

		if (!nsc)
			return NULL;
		mc->sc = nsc;
		nm = realloc(mc->match, cap * sizeof(*nm));
		if (!nm)
			return NULL;
		mc->match = nm;
		mc->cap = cap;
	}
	m = malloc(n + 1);
	if (!m)
		return NULL;
	for (j = 0; j < n; j++) {
		const char *name = statsfd_stat(s->sf, j)->name;

		m[j] = (!names->n || strset_has(names, name)) &&
		       (!pnames || strset_has(pnames, name));
	}
	mc->sc[mc->n] = s->schema;
	mc->match[mc->n++] = m;
	return m;
}

static void match_cache_free(struct match_cache *mc)
{
	size_t i;

	for (i = 0; i < mc->n; i++)
		free(mc->match[i]);
	free(mc->sc);
	free(mc->match);
}

/*
 * The labels of @s and its stats that @m selects, as query-stats answers
 * them; *@est grows by at least the bytes they take in the reply.
 */
static struct json_object *source_stats(const struct source *s,
					const unsigned char *m, size_t *est)
{
	struct json_object *o = json_object_new_object();
	struct json_object *stats = json_object_new_array();
	unsigned int j;

	add_labels(o, s);
	*est += 100;
	for (j = 0; j < statsfd_num_stats(s->sf); j++) {
		const struct statsfd_stat *st = statsfd_stat(s->sf, j);
		struct json_object *x;

		if (!m[j])
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "name", json_object_new_string(st->name));
		json_object_object_add(x, "value", statsfd_json_value(st, s->values));
		json_object_array_add(stats, x);
		/* At least the name, the keys and a digit per value. */
		*est += strlen(st->name) + 20 + st->size;
	}
	json_object_object_add(o, "stats", stats);
	return o;
}

static struct json_object *cmd_query_stats(struct collector *c,
					   struct json_object *args,
					   struct json_object **err)
{
	bool bad = false;
	const char *target = opt_str(args, "target", &bad);
	struct json_object *vms = opt_arr(args, "vms", json_type_string, &bad);
	struct json_object *vcpus = opt_arr(args, "vcpus", json_type_int, &bad);
	struct json_object *names = opt_arr(args, "names", json_type_string, &bad);
	struct json_object *providers = opt_arr(args, "providers", json_type_object, &bad);
	struct strset vmset = { 0 }, nameset = { 0 };
	struct intset vcpuset = { 0 };
	struct provset provs = { 0 };
	struct match_cache mc = { 0 };
	struct json_object *arr = NULL;
	struct source *s;
	size_t i, est = 0;
	char msg[160];

	for (i = 0; !bad && providers && i < json_object_array_length(providers); i++) {
		struct json_object *p = json_object_array_get_idx(providers, i);

		if (opt_str(p, "provider", &bad), bad)
			break;
		opt_arr(p, "names", json_type_string, &bad);
	}
	if (bad) {
		*err = err_obj("GenericError",
			       "query-stats: expected target: string, vms: [string], vcpus: [int], names: [string], providers: [{provider: string, names: [string]}]");
		return NULL;
	}
	if (vcpus && target && strcmp(target, "vcpu")) {
		*err = err_obj("GenericError", "query-stats: vcpus only applies to target \"vcpu\"");
		return NULL;
	}
	if (!strset_make(vms, &vmset) || !intset_make(vcpus, &vcpuset) ||
	    !strset_make(names, &nameset) || !provset_make(providers, &provs)) {
		*err = err_obj("GenericError", "out of memory");
		goto out;
	}
	arr = json_object_new_array();
	for (s = c->sources; s; s = s->next) {
		const struct strset *pnames;
		const unsigned char *m;

		if (target && strcmp(target, s->labels.target))
			continue;
		if (vms && !strset_has(&vmset, s->labels.vm))
			continue;
		/* A vCPU subset selects vCPU sources with those indices. */
		if (vcpus && (s->labels.vcpu < 0 || !intset_has(&vcpuset, s->labels.vcpu)))
			continue;
		if (!provset_match(&provs, s->labels.provider, &pnames))
			continue;
		m = schema_match(&mc, s, &nameset, pnames);
		if (!m) {
			json_object_put(arr);
			arr = NULL;
			*err = err_obj("GenericError", "out of memory");
			goto out;
		}
		json_object_array_add(arr, source_stats(s, m, &est));
		/*
		 * Past the reply cap already: stop building what would be
		 * refused anyway; the work of one request stays bounded by the
		 * cap, not by the number of sources times their stats.
		 */
		if (c->reply_max && est > c->reply_max) {
			json_object_put(arr);
			arr = NULL;
			c->stats.replies_too_large++;
			snprintf(msg, sizeof(msg),
				 "reply larger than %zu bytes: narrow the query with filters",
				 c->reply_max);
			*err = err_obj("GenericError", msg);
			goto out;
		}
	}
out:
	free(vmset.v);
	free(nameset.v);
	free(vcpuset.v);
	provset_free(&provs);
	match_cache_free(&mc);
	return arr;
}

static struct json_object *cmd_hello(struct collector *c, struct client *cl)
{
	struct json_object *r = json_object_new_object();
	struct json_object *me = json_object_new_object();

	json_object_object_add(r, "server", json_object_new_string("statsfd-collector"));
	json_object_object_add(r, "version", json_object_new_int(1));
	json_object_object_add(me, "pid", json_object_new_int(cl->pid));
	json_object_object_add(me, "uid", json_object_new_int64(cl->uid));
	json_object_object_add(me, "gid", json_object_new_int64(cl->gid));
	json_object_object_add(me, "sources", json_object_new_int((int)cl->nsources));
	json_object_object_add(r, "client", me);
	json_object_object_add(r, "sources", json_object_new_int((int)c->nsources));
	json_object_object_add(r, "commands",
			       json_object_new_string("hello add-sources remove-sources query-sources query-stats-schemas query-stats"));
	return r;
}

/**
 * handle_request() - execute one JSON request
 * @c: collector
 * @cl: the client that sent it
 * @json: its payload, NUL-terminated
 * @len: payload bytes
 * @fds: fds attached to it; every one is consumed
 * @nfds: how many
 *
 * Return: the reply to queue, {"return": ...} or {"error": ...}, with the
 * request's "id".
 */
struct json_object *handle_request(struct collector *c, struct client *cl,
				   char *json, size_t len, int *fds,
				   unsigned int nfds)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req = NULL, *cmd, *args = NULL, *id = NULL;
	struct json_object *ret = NULL, *err = NULL, *reply;
	const char *name = "", *too_long;
	uint64_t t0 = now_us();
	unsigned int i;

	if (tok)
		req = json_tokener_parse_ex(tok, json, (int)len);
	if (!req || json_tokener_get_error(tok) != json_tokener_success ||
	    (tok && json_tokener_get_parse_end(tok) != len) ||
	    !json_object_is_type(req, json_type_object)) {
		err = err_obj("GenericError", "request is not one JSON object");
	} else if (!json_object_object_get_ex(req, "execute", &cmd) ||
		   !json_object_is_type(cmd, json_type_string)) {
		err = err_obj("GenericError", "request has no \"execute\" string");
	} else {
		name = json_object_get_string(cmd);
		json_object_object_get_ex(req, "id", &id);
		json_object_object_get_ex(req, "arguments", &args);
		if (args && !json_object_is_type(args, json_type_object))
			err = err_obj("GenericError", "\"arguments\" must be an object");
	}
	too_long = err ? NULL : filter_too_long(args);
	if (too_long) {
		char msg[160];

		c->stats.filters_refused++;
		snprintf(msg, sizeof(msg), "%s: more than %u entries: split the query",
			 too_long, QUERY_FILTER_MAX);
		err = err_obj("GenericError", msg);
	}
	if (err) {
		c->stats.bad_requests++;
	} else if (!strcmp(name, "add-sources")) {
		ret = cmd_add_sources(c, cl, args, fds, nfds, &err);
		nfds = 0;	/* consumed */
	} else if (nfds) {
		err = err_obj("GenericError", "fds may only be attached to add-sources");
	} else if (!strcmp(name, "hello")) {
		ret = cmd_hello(c, cl);
	} else if (!strcmp(name, "remove-sources")) {
		ret = cmd_remove_sources(c, cl, args, &err);
	} else if (!strcmp(name, "query-sources")) {
		ret = cmd_query_sources(c, args, &err);
	} else if (!strcmp(name, "query-stats-schemas")) {
		ret = cmd_query_schemas(c, args, &err);
	} else if (!strcmp(name, "query-stats")) {
		ret = cmd_query_stats(c, args, &err);
	} else {
		char msg[128], shown[65];
		size_t k;

		/*
		 * Echoed as printable ASCII only: a client's bytes (invalid
		 * UTF-8, control characters, a character cut at 64 bytes)
		 * must not make the reply invalid JSON text.
		 */
		for (k = 0; name[k] && k < sizeof(shown) - 1; k++)
			shown[k] = name[k] >= 0x20 && name[k] < 0x7f ? name[k] : '?';
		shown[k] = '\0';
		snprintf(msg, sizeof(msg), "the command %s has not been found", shown);
		err = err_obj("CommandNotFound", msg);
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);

	reply = json_object_new_object();
	if (err)
		json_object_object_add(reply, "error", err);
	else
		json_object_object_add(reply, "return", ret);
	if (id)
		json_object_object_add(reply, "id", json_object_get(id));
	json_object_put(req);
	if (tok)
		json_tokener_free(tok);
	/* The longest slice of the loop one request took: measured. */
	t0 = now_us() - t0;
	if (t0 > c->request_max_us)
		c->request_max_us = t0;
	return reply;
}
