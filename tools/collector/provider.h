/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: the source-provider interface, and the option tables
 * each part of the daemon declares its command-line flags with.
 *
 * A source provider is one way stats fds come in: the unix socket's
 * clients (clients.c), --discover-kvm (discover.c), --host (host.c).  The
 * event loop (collector.c) knows them only through struct source_provider:
 * it parses their flags, starts them, hands them the epoll events of their
 * own fds, lets them add to the exposition and stops them.  Each keeps its
 * flags and its state to itself, so the next input is one new file and
 * one line in collector.c's providers[].
 */
#ifndef STATSFD_COLLECTOR_PROVIDER_H
#define STATSFD_COLLECTOR_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct collector;
struct expo;
struct provider;

/**
 * enum opt_type - what an option's value is
 * @OPT_FLAG: no value: sets a bool (or calls &struct opt.fn with NULL)
 * @OPT_UINT: an unsigned int, decimal, within [min, max]
 * @OPT_SIZE: a size_t, decimal, within [min, max]
 * @OPT_STR: a string, kept as given (a pointer into argv)
 * @OPT_FN: parsed by &struct opt.fn
 */
enum opt_type {
	OPT_FLAG,
	OPT_UINT,
	OPT_SIZE,
	OPT_STR,
	OPT_FN,
};

/**
 * struct opt - one command-line flag, "--@name"
 * @name: the flag without its dashes; an empty name ends a table
 * @type: its value
 * @off: offset of the field it sets in its table's configuration
 * @min: smallest value (OPT_UINT, OPT_SIZE)
 * @max: largest value (OPT_UINT, OPT_SIZE)
 * @fn: OPT_FN (and OPT_FLAG, if set): parses @arg (NULL for a flag) into
 *	@conf; returns 0, -EINVAL for a bad value (the caller says so), or
 *	another negative errno when it said why itself
 * @coll: the field is the collector's (struct collector), not of its
 *	table's configuration: the quotas and limits that the core's code
 *	(sources.c, clients.c) applies
 */
struct opt {
	const char *name;
	enum opt_type type;
	size_t off;
	unsigned long long min;
	unsigned long long max;
	int (*fn)(struct collector *c, void *conf, const char *arg);
	bool coll;
};

/* Largest byte limit a flag takes. */
#define OPT_SIZE_MAX	((unsigned long long)(SIZE_MAX / 2))

/* Table entries: flag --@n setting field @f of @T (of its table's conf). */
#define OPT_AT(n, t, T, f, lo, hi) \
	{ .name = (n), .type = (t), .off = offsetof(T, f), .min = (lo), .max = (hi) }
#define OPT_FLAG_AT(n, T, f)		OPT_AT(n, OPT_FLAG, T, f, 0, 0)
#define OPT_STR_AT(n, T, f)		OPT_AT(n, OPT_STR, T, f, 0, 0)
#define OPT_UINT_AT(n, T, f, lo, hi)	OPT_AT(n, OPT_UINT, T, f, lo, hi)
#define OPT_SIZE_AT(n, T, f, lo, hi)	OPT_AT(n, OPT_SIZE, T, f, lo, hi)
/* Flag --@n parsed by @f (OPT_FN), or calling it (OPT_FLAG). */
#define OPT_CALL(n, t, f)		{ .name = (n), .type = (t), .fn = (f) }
#define OPT_END				{ .name = "" }
/* A flag setting a field @f of struct collector. */
#define OPT_C_UINT(n, f, lo, hi) \
	{ .name = (n), .type = OPT_UINT, .off = offsetof(struct collector, f), \
	  .min = (lo), .max = (hi), .coll = true }
#define OPT_C_SIZE(n, f, lo, hi) \
	{ .name = (n), .type = OPT_SIZE, .off = offsetof(struct collector, f), \
	  .min = (lo), .max = (hi), .coll = true }

/**
 * struct opt_table - the flags of one part of the daemon
 * @opts: its flags, ended by an entry with an empty name
 * @conf: the configuration they set; NULL for the collector itself
 */
struct opt_table {
	const struct opt *opts;
	void *conf;
};

int opts_parse(struct collector *c, int argc, char **argv,
	       const struct opt_table *tables, unsigned int ntables,
	       const char *usage);

/**
 * struct source_provider - one source of stats fds
 * @name: its name, and the flag that enables it (--host); for logs
 * @opts: its flags (parsed into its own configuration)
 * @enabled: its enabling flag, NULL when it always runs
 * @rescans: it looks for its sources every --discover-interval
 * @setup: the privileged part of starting (may be NULL), before the
 *	daemon drops root: returns 0 (it may set &struct provider.state), or
 *	-1 (logged): the daemon exits
 * @reserved_provider: a provider label only this provider's own client
 *	(&struct provider.owner) may register, whose sources' vm label names
 *	a device, no VM (left out of the VM label rules); or NULL
 * @start: start when the flags ask for it: set &struct provider.state
 *	(and &struct provider.owner) and add its fds to the epoll set, their
 *	data.ptr pointing at an int equal to &struct provider.kind.  Returns
 *	0 (also when not enabled: state stays NULL), or -1 (logged): the
 *	daemon exits
 * @event: an epoll event of one of its fds; @ptr is the event's data.ptr
 * @render: append its own families to the exposition (may be NULL);
 *	returns 0 or a negative errno that fails the rendering
 * @stop: drop its sources and free its state (the daemon exits)
 *
 * Called only while &struct provider.state is set, but @setup and @start.
 */
struct source_provider {
	const char *name;
	const struct opt_table *opts;
	const bool *enabled;
	bool rescans;
	const char *reserved_provider;
	int (*setup)(struct collector *c, struct provider *p);
	int (*start)(struct collector *c, struct provider *p);
	void (*event)(struct provider *p, void *ptr, uint32_t events);
	int (*render)(struct provider *p, struct expo *x);
	void (*stop)(struct provider *p);
};

/**
 * struct provider - a provider of this daemon
 * @ops: what it is
 * @c: the collector
 * @kind: the epoll tag of its fds: EP_PROVIDER + its index
 * @state: its state once started, else NULL
 * @owner: the client standing for its own sources (no connection), or
 *	NULL
 */
struct provider {
	const struct source_provider *ops;
	struct collector *c;
	int kind;
	void *state;
	struct client *owner;
};

/* The providers (one line each in collector.c's providers[]). */
extern const struct source_provider clients_provider;
extern const struct source_provider discover_provider;
extern const struct source_provider host_provider;

/*
 * --discover-interval: how often the providers that look for their
 * sources (--discover-kvm, --host) look again, 0 for their default.
 */
extern unsigned int provider_rescan_ms;

#endif /* STATSFD_COLLECTOR_PROVIDER_H */
