/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpc.h - a request to statsfd-collector's unix socket and its reply
 * parsed with json-c, for the collector's host tests (siege.c has the
 * same request with the reply as text, which the static bench links).
 */
#ifndef TESTS_RPC_H
#define TESTS_RPC_H

#include <json-c/json.h>

/* How long rpc_json() waits for a reply (default 5000 ms). */
extern int rpc_wait_ms;

/*
 * rpc_json() - send @json with @nfds fds @fds on the collector connection
 * @s. Return: its reply parsed (json_object_put() it), or NULL when none
 * came within rpc_wait_ms or it was not JSON.
 */
struct json_object *rpc_json(int s, const char *json, const int *fds,
			     unsigned int nfds);

/* The "return" member of reply @r, or NULL (an error, or no reply). */
struct json_object *rpc_ret(struct json_object *r);

#endif /* TESTS_RPC_H */
