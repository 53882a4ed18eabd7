// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd CLI: reading through views (--stats) and reacting to the events
 * of stats fds in `watch`: a source whose owner hung up (POLLHUP: the VMM
 * closed the VM) is dropped at once; a change of a source's children
 * (POLLPRI: a vCPU added to a VM, a VM to the device) makes the CLI look
 * through the VMM's fds (or every process's) again, and the sources found
 * are added.  Separate from the commands so that a host test can drive it
 * (tools/tests/cli_events_test.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int (*cli_rescan)(struct cli_sources *s, enum cli_root root, pid_t pid) =
	cli_rescan_default;

/* Sources whose children can change: a VM (vCPUs), the device (VMs). */
static bool has_children(const struct cli_source *src)
{
	return !strcmp(src->labels.target, "vm") ||
	       !strcmp(src->labels.target, "system");
}

/* Swap @src's handle for the view @v, with buffers of the view's size. */
static int use_view(struct cli_sources *s, struct cli_source *src,
		    struct statsfd *v)
{
	uint64_t *cur = calloc(1, statsfd_data_size(v) + 8);
	uint64_t *prev = calloc(1, statsfd_data_size(v) + 8);

	if (!cur || !prev) {
		free(cur);
		free(prev);
		statsfd_close(v);
		return -ENOMEM;
	}
	free(src->cur);
	free(src->prev);
	src->cur = cur;
	src->prev = prev;
	/*
	 * Any read of the data block acknowledges a change of children: a
	 * source with children keeps its original fd to wait on, unread, so
	 * that no read of ours ever consumes an event before we see it.  A
	 * vCPU has none to miss: the view is all it needs, one fd.
	 */
	if (s->watch && has_children(src) &&
	    statsfd_view_kind(v) == STATSFD_VIEW_KERNEL)
		src->ev = src->sf;
	else
		statsfd_close(src->sf);
	src->sf = v;
	return 0;
}

static int prepare_one(struct cli_sources *s, struct cli_source *src)
{
	struct statsfd_error err;
	const char **sel = NULL;
	unsigned int *idx = NULL;
	struct statsfd *v = NULL;
	unsigned int i, k = 0;
	int ret = 0;

	src->prepared = true;
	if (s->nstats) {
		sel = calloc(s->nstats, sizeof(*sel));
		if (!sel)
			return -ENOMEM;
		for (i = 0; i < s->nstats; i++)
			if (statsfd_find(src->sf, s->stats[i]))
				sel[k++] = s->stats[i];
		if (!k) {
			/* Not shown, but still waited on for its events. */
			src->hidden = true;
			goto out;
		}
		v = statsfd_open_view(src->sf, sel, k, STATSFD_VIEW_EMULATE, &err);
		if (!v) {
			fprintf(stderr, "statsfd: %s: --stats: %s\n",
				statsfd_id(src->sf), err.msg);
			ret = -err.err;
			goto out;
		}
		if (statsfd_view_kind(v) == STATSFD_VIEW_EMULATED)
			s->no_views++;
	} else if (s->watch && has_children(src)) {
		/* A view of everything: the same values, a separate file. */
		k = statsfd_num_stats(src->sf);
		idx = calloc(k + 1, sizeof(*idx));
		if (!idx)
			return -ENOMEM;
		for (i = 0; i < k; i++)
			idx[i] = i;
		v = k ? statsfd_open_view_indices(src->sf, idx, k, 0, &err) : NULL;
		/* Without views there are no events either: read it as it is. */
		if (!v)
			goto out;
	} else {
		goto out;
	}
	ret = use_view(s, src, v);
out:
	free(sel);
	free(idx);
	return ret;
}

/*
 * Give sources from index @from on their views (--stats), or in watch a
 * separate file to read for sources with children.  A source whose view
 * cannot be made for lack of resources is dropped, with a message.
 * Return: 0, or the last error.
 */
int cli_prepare(struct cli_sources *s, unsigned int from)
{
	unsigned int i = from;
	int ret = 0, r;

	while (i < s->n) {
		if (s->v[i].prepared) {
			i++;
			continue;
		}
		r = prepare_one(s, &s->v[i]);
		if (r < 0) {
			cli_drop_source(s, i);
			ret = r;
			continue;
		}
		i++;
	}
	return ret;
}

/* Names of --stats that no source has: probably misspelt. */
void cli_warn_missing(const struct cli_sources *s)
{
	unsigned int i, j;

	for (i = 0; i < s->nstats; i++) {
		for (j = 0; j < s->n; j++)
			if (statsfd_find(s->v[j].sf, s->stats[i]) ||
			    (s->v[j].ev && statsfd_find(s->v[j].ev, s->stats[i])))
				break;
		if (j == s->n)
			fprintf(stderr, "statsfd: --stats: no source has a stat named %s\n",
				s->stats[i]);
	}
}

void cli_changes_reset(struct cli_changes *ch)
{
	statsfd_buf_free(&ch->gone);
	statsfd_buf_free(&ch->added);
	ch->ngone = 0;
	ch->nadded = 0;
}

/* Whether source @i has the id of a source before it. */
static bool known(const struct cli_sources *s, unsigned int i)
{
	const char *id = statsfd_id(s->v[i].sf);
	unsigned int j;

	for (j = 0; j < i; j++)
		if (!strcmp(statsfd_id(s->v[j].sf), id) &&
		    !strcmp(s->v[j].labels.provider, s->v[i].labels.provider))
			return true;
	return false;
}

/* Look through @pid (or every process) again and keep what is new. */
static void rescan(struct cli_sources *s, enum cli_root root, pid_t pid,
		   struct cli_changes *ch)
{
	struct statsfd_error err;
	unsigned int n0 = s->n, i;
	char desc[200];

	cli_rescan(s, root, pid);
	for (i = n0; i < s->n;) {
		if (known(s, i)) {
			cli_drop_source(s, i);
			continue;
		}
		i++;
	}
	cli_prepare(s, n0);
	for (i = n0; i < s->n; i++) {
		struct cli_source *src = &s->v[i];

		/* Its first rates are over the time since it was found. */
		if (!src->hidden && !statsfd_read(src->sf, src->cur, &err))
			memcpy(src->prev, src->cur, statsfd_data_size(src->sf));
		cli_describe(src, desc, sizeof(desc));
		fprintf(stderr, "statsfd: new source %s (%s; from %s)\n",
			statsfd_id(src->sf), desc, src->origin);
		statsfd_buf_printf(&ch->added, "%s%s", ch->nadded ? ", " : "",
				   statsfd_id(src->sf));
		ch->nadded++;
	}
}

static void owe_rescan(struct cli_sources *s, enum cli_root root, pid_t pid)
{
	unsigned int i;

	for (i = 0; i < s->npending; i++)
		if (s->pending[i].root == root && s->pending[i].pid == pid)
			return;
	if (s->npending < CLI_MAX_PENDING) {
		s->pending[s->npending].root = root;
		s->pending[s->npending].pid = pid;
		s->npending++;
	}
}

/*
 * Wait up to @timeout_ms for events on every source and react: drop the
 * sources that hung up, rescan where children changed.  The rescans are
 * owed once more at the next refresh (cli_rescan_pending()): statsfd_vm
 * adds a vCPU to its VM just before the VMM gets the vCPU's fd.
 * Return: the number of sources with events, 0 on timeout, -EINTR on a
 * signal, or another negative errno.
 */
int cli_wait(struct cli_sources *s, int timeout_ms, struct cli_changes *ch)
{
	struct statsfd_wait_item *items = calloc(s->n + 1, sizeof(*items));
	struct {
		enum cli_root root;
		pid_t pid;
	} *roots = calloc(s->n + 1, sizeof(*roots));
	struct statsfd_error err;
	unsigned int i, j, nroots = 0;
	char desc[200];
	int r;

	if (!items || !roots) {
		free(items);
		free(roots);
		return -ENOMEM;
	}
	for (i = 0; i < s->n; i++)
		items[i].sf = s->v[i].ev ? s->v[i].ev : s->v[i].sf;
	r = statsfd_wait_many(items, s->n, timeout_ms, &err);
	if (r < 0 && r != -EINTR)
		fprintf(stderr, "statsfd: waiting for events: %s\n", err.msg);
	for (i = 0; r > 0 && i < s->n; i++) {
		const struct cli_source *src = &s->v[i];

		if (!(items[i].events & STATSFD_EVENT_CHILDREN) ||
		    src->root == CLI_ROOT_NONE ||
		    (items[i].events & STATSFD_EVENT_HANGUP))
			continue;
		for (j = 0; j < nroots; j++)
			if (roots[j].root == src->root && roots[j].pid == src->pid)
				break;
		if (j == nroots) {
			roots[nroots].root = src->root;
			roots[nroots].pid = src->pid;
			nroots++;
		}
	}
	/* From the end, so that the indices of the others stay valid. */
	for (i = s->n; r > 0 && i-- > 0;) {
		const struct cli_source *src = &s->v[i];

		if (!(items[i].events & STATSFD_EVENT_HANGUP))
			continue;
		cli_describe(src, desc, sizeof(desc));
		fprintf(stderr, "statsfd: %s (%s) went away (hangup): dropped\n",
			statsfd_id(src->sf), desc);
		statsfd_buf_printf(&ch->gone, "%s%s", ch->ngone ? ", " : "",
				   statsfd_id(src->sf));
		ch->ngone++;
		cli_drop_source(s, i);
	}
	for (j = 0; j < nroots; j++) {
		rescan(s, roots[j].root, roots[j].pid, ch);
		owe_rescan(s, roots[j].root, roots[j].pid);
	}
	free(items);
	free(roots);
	return r;
}

/* The rescans owed since the last refresh, once more. */
void cli_rescan_pending(struct cli_sources *s, struct cli_changes *ch)
{
	unsigned int i, n = s->npending;

	s->npending = 0;
	for (i = 0; i < n; i++)
		rescan(s, s->pending[i].root, s->pending[i].pid, ch);
}
