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
#include <unistd.h>

#include "collector.h"

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

static bool arr_has_str(struct json_object *arr, const char *s)
{
	size_t i;

	for (i = 0; i < json_object_array_length(arr); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s))
			return true;
	return false;
}

static bool arr_has_int(struct json_object *arr, int64_t x)
{
	size_t i;

	for (i = 0; i < json_object_array_length(arr); i++)
		if (json_object_get_int64(json_object_array_get_idx(arr, i)) == x)
			return true;
	return false;
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

static struct json_object *cmd_remove_sources(struct collector *c,
					      struct client *cl,
					      struct json_object *args,
					      struct json_object **err)
{
	bool bad = false;
	const char *vm = opt_str(args, "vm", &bad);
	struct json_object *ids = opt_arr(args, "sources", json_type_int, &bad);
	struct source *s, *next;
	unsigned int n = 0;
	struct json_object *ret;

	if (bad || (!vm && !ids)) {
		*err = err_obj("GenericError",
			       "remove-sources: give \"vm\" (a string) or \"sources\" (an array of ids)");
		return NULL;
	}
	/* Only the client's own sources. */
	for (s = cl->sources; s; s = next) {
		next = s->next_in_client;
		if ((vm && !strcmp(s->labels.vm, vm)) ||
		    (ids && arr_has_int(ids, (int64_t)s->id))) {
			drop_source(c, s);
			n++;
		}
	}
	ret = json_object_new_object();
	json_object_object_add(ret, "removed", json_object_new_int((int)n));
	return ret;
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
	struct json_object *arr = json_object_new_array();
	bool bad = false;
	const char *provider = opt_str(args, "provider", &bad);
	const char *target = opt_str(args, "target", &bad);
	struct source *s;

	if (bad) {
		json_object_put(arr);
		*err = err_obj("GenericError", "query-sources: provider and target must be strings");
		return NULL;
	}
	for (s = c->sources; s; s = s->next) {
		struct json_object *o, *cli;

		if ((provider && strcmp(provider, s->labels.provider)) ||
		    (target && strcmp(target, s->labels.target)))
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
	struct json_object *arr = json_object_new_array();
	bool bad = false;
	const char *provider = opt_str(args, "provider", &bad);
	const char *target = opt_str(args, "target", &bad);
	struct schema *sc;

	if (bad) {
		json_object_put(arr);
		*err = err_obj("GenericError", "query-stats-schemas: provider and target must be strings");
		return NULL;
	}
	for (sc = c->schemas; sc; sc = sc->next) {
		struct json_object *o;

		if ((provider && strcmp(provider, sc->provider)) ||
		    (target && strcmp(target, sc->target)))
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
 * stats.  Returns the entry for @s, or NULL when filtered out.
 */
static struct json_object *provider_entry(struct json_object *providers,
					  const struct source *s, bool *match)
{
	size_t i;

	*match = !providers;
	for (i = 0; providers && i < json_object_array_length(providers); i++) {
		struct json_object *p = json_object_array_get_idx(providers, i), *v;

		if (json_object_object_get_ex(p, "provider", &v) &&
		    strcmp(json_object_get_string(v), s->labels.provider))
			continue;
		*match = true;
		if (json_object_object_get_ex(p, "names", &v))
			return v;
		return NULL;
	}
	return NULL;
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
	struct json_object *arr;
	struct source *s;
	size_t i;

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
	arr = json_object_new_array();
	for (s = c->sources; s; s = s->next) {
		struct json_object *pnames, *o, *stats;
		unsigned int j;
		bool match;

		if (target && strcmp(target, s->labels.target))
			continue;
		if (vms && !arr_has_str(vms, s->labels.vm))
			continue;
		/* A vCPU subset selects vCPU sources with those indices. */
		if (vcpus && (s->labels.vcpu < 0 || !arr_has_int(vcpus, s->labels.vcpu)))
			continue;
		pnames = provider_entry(providers, s, &match);
		if (!match)
			continue;
		o = json_object_new_object();
		add_labels(o, s);
		stats = json_object_new_array();
		for (j = 0; j < statsfd_num_stats(s->sf); j++) {
			const struct statsfd_stat *st = statsfd_stat(s->sf, j);
			struct json_object *x;

			if ((names && !arr_has_str(names, st->name)) ||
			    (pnames && !arr_has_str(pnames, st->name)))
				continue;
			x = json_object_new_object();
			json_object_object_add(x, "name", json_object_new_string(st->name));
			json_object_object_add(x, "value", statsfd_json_value(st, s->values));
			json_object_array_add(stats, x);
		}
		json_object_object_add(o, "stats", stats);
		json_object_array_add(arr, o);
	}
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
	const char *name = "";
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
		char msg[128];

		snprintf(msg, sizeof(msg), "the command %.64s has not been found", name);
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
	return reply;
}
