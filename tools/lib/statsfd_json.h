/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * JSON (json-c) helpers shared by the statsfd CLI, the collector and the
 * sample VMM: labels of a registered source, schemas and values in the
 * shape of QEMU's query-stats-schemas / query-stats answers.
 */
#ifndef STATSFD_JSON_H
#define STATSFD_JSON_H

#include <json-c/json.h>

#include "statsfd.h"

#define STATSFD_LABEL_MAX	64

/**
 * struct statsfd_labels - what a VMM says about one stats fd
 * @provider: who produced the fd, e.g. "kvm" or "statsfd_vm";
 *	[a-z][a-z0-9_]*, at most 32 characters
 * @target: what it describes: "vm", "vcpu", "system", ...; same syntax
 * @vm: the VM's name, printable ASCII without '"' and '\', may be empty
 * @vcpu: vCPU index for target "vcpu", else -1
 */
struct statsfd_labels {
	char provider[33];
	char target[33];
	char vm[STATSFD_LABEL_MAX + 1];
	int vcpu;
};

/**
 * statsfd_json_parse_sources() - parse the arguments of "add-sources"
 * @args: {"provider": P, "vm": V, "sources": [{"target": T, "vcpu": N,
 *	"provider": P, "vm": V}, ...]}; per-source keys override the outer ones
 * @nfds: number of fds attached to the message; must equal the length of
 *	"sources" (source i describes fd i)
 * @out: @nfds entries, filled
 * @why: error text on failure
 * @len: size of @why
 *
 * Return: 0, or -EINVAL with @why naming the offending key.
 */
int statsfd_json_parse_sources(struct json_object *args, unsigned int nfds,
			       struct statsfd_labels *out, char *why,
			       size_t len);

/**
 * statsfd_labels_from_id() - guess labels from a stats fd's id string
 * @id: "kvm-1234/vcpu-0", "vm-1234-0", "statsfd_vm", ...
 * @provider: provider to record, or NULL to guess from @id
 * @l: filled
 */
void statsfd_labels_from_id(const char *id, const char *provider,
			    struct statsfd_labels *l);

/**
 * statsfd_json_schema() - the descriptors of @sf as a JSON array
 * @sf: handle
 *
 * Each element: {"name", "type", "unit", "base", "exponent", "size",
 * "bucket-size" (linear histograms), "aggregation" (aggregates)}.
 * Return: a new array, or NULL on allocation failure.
 */
struct json_object *statsfd_json_schema(const struct statsfd *sf);

/**
 * statsfd_json_value() - the raw value(s) of @st
 * @st: descriptor
 * @buf: buffer statsfd_read() filled
 *
 * Return: a uint64 for a scalar, an array of bucket counts for a histogram.
 */
struct json_object *statsfd_json_value(const struct statsfd_stat *st,
				       const uint64_t *buf);

/**
 * statsfd_json_request() - a request object {"execute": @cmd, ...}
 * @cmd: command name
 * @args: arguments object (ownership taken), or NULL
 *
 * Return: a new object.
 */
struct json_object *statsfd_json_request(const char *cmd,
					 struct json_object *args);

#endif /* STATSFD_JSON_H */
