/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd CLI: its options, the sources it reads and how it finds them,
 * and the commands over them.
 */
#ifndef STATSFD_CLI_H
#define STATSFD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "statsfd.h"
#include "statsfd_expo.h"
#include "statsfd_client.h"

/* --name globs and query --vm names the command line may give. */
#define CLI_MAX_NAMES		64
#define CLI_MAX_VMS		16

/**
 * struct cli_opts - the command line, once parsed
 * @cmd: show, watch, list, dump or query
 * @json: show --json
 * @prom: show --prometheus
 * @all: --all: zero rows in watch, empty buckets in show
 * @ansi: watch --ansi: refresh in place even when stdout is no tty
 * @names: --name globs (CLI_MAX_NAMES at most)
 * @nnames: how many
 * @stats: --stats names, each once, in order
 * @nstats: how many
 * @interval: watch --interval, seconds
 * @count: watch --count, 0 for until ^C
 * @timeout_ms: --timeout (--socket, query)
 * @output: dump --output, or NULL for stdout
 * @collector: query --collector
 * @schemas: query --schemas
 * @list_sources: query --sources
 * @target: query --target
 * @provider: query --provider
 * @names_csv: query --names
 * @vcpus: query --vcpus
 * @raw: query --raw
 * @vms: query --vm names (CLI_MAX_VMS at most)
 * @nvms: how many
 */
struct cli_opts {
	const char *cmd;
	bool json, prom, all, ansi;
	const char **names;
	unsigned int nnames;
	const char *stats[256];
	unsigned int nstats;
	double interval;
	long count;
	int timeout_ms;
	const char *output;
	const char *collector;
	bool schemas, list_sources;
	const char *target, *provider, *names_csv, *vcpus, *raw;
	const char *vms[CLI_MAX_VMS];
	unsigned int nvms;
};

/* What a change of a source's children makes `watch` look through again. */
enum cli_root {
	CLI_ROOT_NONE,		/* nothing: no children, or found elsewhere */
	CLI_ROOT_PID,		/* the VMM it was found in (a VM: new vCPUs) */
	CLI_ROOT_DEVICE,	/* every process (the device: new VMs) */
};

/**
 * struct cli_source - one stats fd the CLI reads
 * @sf: parsed handle (owns the fd unless it came from --fd); after
 *	cli_prepare() possibly a view of it (--stats), which is what is read
 *	and shown
 * @ev: the original handle, waited on for events, when @sf is a kernel
 *	view of a source with children (reads of @sf then never acknowledge
 *	a change before `watch` sees it); NULL when events come from @sf
 * @labels: provider, target, vm, vcpu
 * @origin: where it came from, e.g. "pid 1234 fd 12 (anon_inode:kvm-vm)"
 * @cur: latest values
 * @prev: values of the previous sample (watch)
 * @pid: the process it was found in, 0 for none
 * @root: what a change of its children makes `watch` rescan
 * @prepared: cli_prepare() has been through it
 * @hidden: none of the --stats: not read, not shown (still waited on)
 * @host: a stats fd of statsfd_host (--host, or an image with its id):
 *	shown on the host pages (host.c), not in the generic tables
 * @hobj: with @host, what it is about
 */
struct cli_source {
	struct statsfd *sf;
	struct statsfd *ev;
	struct statsfd_labels labels;
	char origin[96];
	uint64_t *cur;
	uint64_t *prev;
	pid_t pid;
	enum cli_root root;
	bool prepared;
	bool hidden;
	bool host;
	struct statsfd_host_obj hobj;
};

/* Rescans `watch` still owes after a change of children. */
#define CLI_MAX_PENDING		64

/**
 * struct cli_sources - every source named on the command line
 * @v: the sources
 * @n: how many
 * @cap: allocated entries
 * @stats: --stats: the names to read through a view, or NULL
 * @nstats: how many
 * @watch: `watch`: sources with children are read through a view of
 *	their own, so that their reads never consume an event
 * @no_views: sources whose --stats view the library emulates
 * @pending: rescans to do once more at the next refresh (a VMM installs
 *	a new vCPU's fd just after the VM's children changed)
 * @npending: how many
 */
struct cli_sources {
	struct cli_source *v;
	unsigned int n;
	unsigned int cap;
	const char *const *stats;
	unsigned int nstats;
	bool watch;
	unsigned int no_views;
	struct {
		enum cli_root root;
		pid_t pid;
	} pending[CLI_MAX_PENDING];
	unsigned int npending;
};

/**
 * struct cli_changes - what came and went between two refreshes of watch
 * @gone: ids of the sources dropped on a hangup, ", "-separated
 * @added: ids of the sources found after a change of children
 * @ngone: how many in @gone
 * @nadded: how many in @added
 */
struct cli_changes {
	struct statsfd_buf gone;
	struct statsfd_buf added;
	unsigned int ngone;
	unsigned int nadded;
};

int cli_add_device(struct cli_sources *s, const char *path);
int cli_add_pid(struct cli_sources *s, const char *pid);
int cli_add_fd(struct cli_sources *s, const char *fd);
int cli_add_file(struct cli_sources *s, const char *path);
int cli_add_socket(struct cli_sources *s, const char *path, int timeout_ms);
int cli_add_handle(struct cli_sources *s, struct statsfd *sf,
		   const struct statsfd_labels *l, const char *origin);
void cli_free_sources(struct cli_sources *s);
void cli_drop_source(struct cli_sources *s, unsigned int i);
int cli_rescan_default(struct cli_sources *s, enum cli_root root, pid_t pid);
int cli_add_host(struct cli_sources *s, const char *path);
void cli_describe(const struct cli_source *src, char *buf, size_t len);

/* host.c: the host pages. */
bool cli_has_host(const struct cli_sources *s);
void cli_host_page(const struct cli_sources *s, double dt, bool rate);

/* show.c, watch.c, query.c: the commands. */
bool cli_name_ok(const struct cli_opts *o, const char *name);
int cli_read_all(struct cli_sources *s);
int cli_show(const struct cli_opts *o, struct cli_sources *s);
int cli_list(struct cli_sources *s);
int cli_dump(const struct cli_opts *o, struct cli_sources *s);
int cli_watch(const struct cli_opts *o, struct cli_sources *s);
int cli_query(const struct cli_opts *o);

/* events.c: views for --stats, events for watch. */
int cli_prepare(struct cli_sources *s, unsigned int from);
void cli_warn_missing(const struct cli_sources *s);
int cli_wait(struct cli_sources *s, int timeout_ms, struct cli_changes *ch);
void cli_rescan_pending(struct cli_sources *s, struct cli_changes *ch);
void cli_changes_reset(struct cli_changes *ch);

/*
 * How cli_wait() rescans after a change of children: cli_rescan_default()
 * (the VMM's fds in /proc, or every process's), or a test's own.  Returns
 * the number of sources it added to @s (at its end), or -errno.
 */
extern int (*cli_rescan)(struct cli_sources *s, enum cli_root root, pid_t pid);

#endif /* STATSFD_CLI_H */
