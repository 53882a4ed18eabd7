// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd CLI: `query`, a JSON request to statsfd-collector over its unix
 * socket (the wire protocol of statsfd_client.h), the reply printed as it
 * came.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "statsfd_client.h"

static struct json_object *csv_array(const char *csv, bool ints)
{
	struct json_object *a = json_object_new_array();
	char *dup = strdup(csv), *tok, *save = NULL;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_object_array_add(a, ints ? json_object_new_int(atoi(tok)) :
				      json_object_new_string(tok));
	free(dup);
	return a;
}

/**
 * cli_query() - `query`: ask the collector, print its reply
 * @o: the options (--collector, --timeout and the query filters)
 *
 * Return: 0, 1 when the collector could not be asked or answered with an
 * error, 2 for --raw that is not JSON.
 */
int cli_query(const struct cli_opts *o)
{
	struct json_object *req, *args = json_object_new_object(), *reply, *e;
	const char *out;
	char *json;
	size_t len;
	unsigned int i, nfds = 0;
	int sock, ret;

	if (o->raw) {
		req = json_tokener_parse(o->raw);
		json_object_put(args);
		if (!req) {
			fprintf(stderr, "statsfd: --raw: not valid JSON\n");
			return 2;
		}
	} else if (o->schemas || o->list_sources) {
		if (o->provider)
			json_object_object_add(args, "provider", json_object_new_string(o->provider));
		if (o->target)
			json_object_object_add(args, "target", json_object_new_string(o->target));
		req = statsfd_json_request(o->schemas ? "query-stats-schemas" :
					   "query-sources", args);
	} else {
		if (o->target)
			json_object_object_add(args, "target", json_object_new_string(o->target));
		if (o->nvms) {
			struct json_object *a = json_object_new_array();

			for (i = 0; i < o->nvms; i++)
				json_object_array_add(a, json_object_new_string(o->vms[i]));
			json_object_object_add(args, "vms", a);
		}
		if (o->vcpus)
			json_object_object_add(args, "vcpus", csv_array(o->vcpus, true));
		if (o->provider || o->names_csv) {
			struct json_object *p = json_object_new_object(), *a;

			if (o->provider)
				json_object_object_add(p, "provider",
						       json_object_new_string(o->provider));
			if (o->names_csv)
				json_object_object_add(p, "names", csv_array(o->names_csv, false));
			a = json_object_new_array();
			json_object_array_add(a, p);
			json_object_object_add(args, "providers", a);
		}
		req = statsfd_json_request("query-stats", args);
	}
	sock = statsfd_msg_connect(o->collector);
	if (sock < 0) {
		fprintf(stderr, "statsfd: %s: %s\n", o->collector, strerror(-sock));
		json_object_put(req);
		return 1;
	}
	out = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN, &len);
	ret = statsfd_msg_send(sock, out, len, NULL, 0);
	json_object_put(req);
	if (!ret)
		ret = statsfd_msg_recv(sock, &json, &len, NULL, &nfds, o->timeout_ms);
	close(sock);
	if (ret) {
		fprintf(stderr, "statsfd: query: %s\n", strerror(-ret));
		return 1;
	}
	reply = json_tokener_parse(json);
	free(json);
	if (!reply) {
		fprintf(stderr, "statsfd: query: the collector sent invalid JSON\n");
		return 1;
	}
	printf("%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	ret = json_object_object_get_ex(reply, "error", &e) ? 1 : 0;
	json_object_put(reply);
	return ret;
}
