// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd-client: the JSON of the commands, labels, schemas and
 * values (statsfd_client.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsfd_client.h"

static bool valid_ident(const char *s)
{
	size_t i;

	if (!s[0] || strlen(s) > 32 || s[0] < 'a' || s[0] > 'z')
		return false;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_'))
			return false;
	return true;
}

static bool valid_vm(const char *s)
{
	size_t i;

	if (strlen(s) > STATSFD_LABEL_MAX)
		return false;
	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ||
		    s[i] == '"' || s[i] == '\\')
			return false;
	return true;
}

/* A string member, or @def when absent; NULL when present but not a string. */
static const char *get_str(struct json_object *o, const char *key,
			   const char *def)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return def;
	if (!json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int statsfd_json_parse_sources(struct json_object *args, unsigned int nfds,
			       struct statsfd_labels *out, char *why,
			       size_t len)
{
	const char *provider, *vm;
	struct json_object *srcs;
	size_t i, n;

	if (!args || !json_object_is_type(args, json_type_object)) {
		snprintf(why, len, "arguments: missing or not an object");
		return -EINVAL;
	}
	provider = get_str(args, "provider", "");
	vm = get_str(args, "vm", "");
	if (!provider || !vm) {
		snprintf(why, len, "arguments.%s: not a string", provider ? "vm" : "provider");
		return -EINVAL;
	}
	if (!json_object_object_get_ex(args, "sources", &srcs) ||
	    !json_object_is_type(srcs, json_type_array)) {
		snprintf(why, len, "arguments.sources: missing or not an array");
		return -EINVAL;
	}
	n = json_object_array_length(srcs);
	if (n != nfds) {
		snprintf(why, len, "arguments.sources: %zu entries but %u fds attached",
			 n, nfds);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(srcs, i), *v;
		struct statsfd_labels *l = &out[i];
		const char *p, *t, *m;

		if (!json_object_is_type(s, json_type_object)) {
			snprintf(why, len, "arguments.sources[%zu]: not an object", i);
			return -EINVAL;
		}
		p = get_str(s, "provider", provider);
		t = get_str(s, "target", NULL);
		m = get_str(s, "vm", vm);
		if (!p || !valid_ident(p)) {
			snprintf(why, len, "arguments.sources[%zu].provider: missing or not [a-z][a-z0-9_]{0,31}", i);
			return -EINVAL;
		}
		if (!t || !valid_ident(t)) {
			snprintf(why, len, "arguments.sources[%zu].target: missing or not [a-z][a-z0-9_]{0,31}", i);
			return -EINVAL;
		}
		if (!m || !valid_vm(m)) {
			snprintf(why, len, "arguments.sources[%zu].vm: not a printable string of at most %d characters without quotes or backslashes",
				 i, STATSFD_LABEL_MAX);
			return -EINVAL;
		}
		l->vcpu = -1;
		if (json_object_object_get_ex(s, "vcpu", &v)) {
			int64_t x = json_object_get_int64(v);

			if (!json_object_is_type(v, json_type_int) || x < 0 ||
			    x > 0x7fffffff || strcmp(t, "vcpu")) {
				snprintf(why, len, "arguments.sources[%zu].vcpu: must be an integer in [0, 2^31) and only for target \"vcpu\"",
					 i);
				return -EINVAL;
			}
			l->vcpu = (int)x;
		} else if (!strcmp(t, "vcpu")) {
			snprintf(why, len, "arguments.sources[%zu].vcpu: required for target \"vcpu\"", i);
			return -EINVAL;
		}
		snprintf(l->provider, sizeof(l->provider), "%s", p);
		snprintf(l->target, sizeof(l->target), "%s", t);
		snprintf(l->vm, sizeof(l->vm), "%s", m);
	}
	return 0;
}

void statsfd_labels_from_id(const char *id, const char *provider,
			    struct statsfd_labels *l)
{
	const char *v = strstr(id, "/vcpu-");
	size_t n;

	memset(l, 0, sizeof(*l));
	l->vcpu = -1;
	if (!provider)
		provider = !strncmp(id, "kvm-", 4) ? "kvm" : "statsfd_vm";
	snprintf(l->provider, sizeof(l->provider), "%s", provider);
	if (v) {
		char *end;
		long x = strtol(v + 6, &end, 10);

		snprintf(l->target, sizeof(l->target), "vcpu");
		if (end != v + 6 && x >= 0 && x <= 0x7fffffff)
			l->vcpu = (int)x;
		n = (size_t)(v - id);
	} else {
		snprintf(l->target, sizeof(l->target), "%s",
			 !strchr(id, '-') && id[0] ? "system" : "vm");
		n = strlen(id);
	}
	if (n > STATSFD_LABEL_MAX)
		n = STATSFD_LABEL_MAX;
	memcpy(l->vm, id, n);
	l->vm[n] = '\0';
	if (!strcmp(l->target, "system"))
		l->vm[0] = '\0';
}

struct json_object *statsfd_json_schema(const struct statsfd *sf)
{
	struct json_object *arr = json_object_new_array();
	unsigned int i;

	if (!arr)
		return NULL;
	for (i = 0; i < statsfd_num_stats(sf); i++) {
		const struct statsfd_stat *st = statsfd_stat(sf, i);
		struct json_object *o = json_object_new_object();

		if (!o) {
			json_object_put(arr);
			return NULL;
		}
		json_object_object_add(o, "name", json_object_new_string(st->name));
		json_object_object_add(o, "type", json_object_new_string(statsfd_type_name(st->type)));
		json_object_object_add(o, "unit", json_object_new_string(statsfd_unit_name(st->unit)));
		json_object_object_add(o, "base", json_object_new_int(st->base == STATSFD_BASE_POW2 ? 2 : 10));
		json_object_object_add(o, "exponent", json_object_new_int(st->exponent));
		json_object_object_add(o, "size", json_object_new_int((int)st->size));
		if (st->type == STATSFD_TYPE_LINEAR_HIST)
			json_object_object_add(o, "bucket-size",
					       json_object_new_int64(st->bucket_size));
		if (st->agg)
			json_object_object_add(o, "aggregation",
					       json_object_new_string(statsfd_agg_name(st->agg)));
		json_object_array_add(arr, o);
	}
	return arr;
}

struct json_object *statsfd_json_value(const struct statsfd_stat *st,
				       const uint64_t *buf)
{
	const uint64_t *v = statsfd_values(st, buf);
	struct json_object *arr;
	unsigned int i;

	if (!statsfd_stat_is_hist(st))
		return json_object_new_uint64(v[0]);
	arr = json_object_new_array_ext((int)st->size);
	for (i = 0; arr && i < st->size; i++)
		json_object_array_add(arr, json_object_new_uint64(v[i]));
	return arr;
}

struct json_object *statsfd_json_request(const char *cmd,
					 struct json_object *args)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "execute", json_object_new_string(cmd));
	if (args)
		json_object_object_add(o, "arguments", args);
	return o;
}
