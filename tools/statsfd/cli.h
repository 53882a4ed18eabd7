/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd CLI: the sources it reads and how it finds them.
 */
#ifndef STATSFD_CLI_H
#define STATSFD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "statsfd.h"
#include "statsfd_hostfd.h"
#include "statsfd_json.h"

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

/* host.c: --host and the host pages. */
int cli_add_host(struct cli_sources *s, const char *path);
void cli_mark_host(struct cli_source *src);
bool cli_has_host(const struct cli_sources *s);
void cli_host_page(const struct cli_sources *s, double dt, bool rate);

/* watch.c: views for --stats, events for watch. */
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
