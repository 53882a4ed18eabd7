// SPDX-License-Identifier: GPL-2.0
/*
 * rpc.c - rpc_json() and rpc_ret() (rpc.h), which the collector tests used
 * to paste.
 */
#include <stdlib.h>

#include "rpc.h"
#include "siege.h"

int rpc_wait_ms = 5000;

struct json_object *rpc_json(int s, const char *json, const int *fds,
			     unsigned int nfds)
{
	char *out = siege_call(s, json, fds, nfds, rpc_wait_ms);
	struct json_object *r = out ? json_tokener_parse(out) : NULL;

	free(out);
	return r;
}

struct json_object *rpc_ret(struct json_object *r)
{
	struct json_object *v = NULL;

	if (r)
		json_object_object_get_ex(r, "return", &v);
	return v;
}
