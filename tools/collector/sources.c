// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: its sources.  Each registered stats fd is validated
 * once, read every interval (through a view of the --stats it has, if
 * any), and waited on in the daemon's epoll set: a hangup drops it at
 * once.  Separate from collector.c so that a host test can drive it
 * (tools/tests/collector_events_test.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "sd.h"

int collector_verbose;

void logmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "statsfd-collector: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct schema *get_schema(struct collector *c, struct statsfd *sf,
				 const struct statsfd_labels *l)
{
	struct schema *sc;

	for (sc = c->schemas; sc; sc = sc->next)
		if (!strcmp(sc->provider, l->provider) &&
		    !strcmp(sc->target, l->target) &&
		    statsfd_same_schema(sc->members->sf, sf))
			return sc;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	sc->id = ++c->next_schema_id;
	snprintf(sc->provider, sizeof(sc->provider), "%s", l->provider);
	snprintf(sc->target, sizeof(sc->target), "%s", l->target);
	snprintf(sc->prom_prefix, sizeof(sc->prom_prefix), "%s_%s", l->provider,
		 l->target);
	sc->next = c->schemas;
	c->schemas = sc;
	return sc;
}

static bool labels_taken(struct collector *c, const struct statsfd_labels *l)
{
	struct source *s;

	for (s = c->sources; s; s = s->next)
		if (s->labels.vcpu == l->vcpu && !strcmp(s->labels.vm, l->vm) &&
		    !strcmp(s->labels.target, l->target) &&
		    !strcmp(s->labels.provider, l->provider))
			return true;
	return false;
}

/*
 * With --stats: read @s through a view of the stats of the filter it has
 * (in the filter's order; none: an empty handle that reads nothing), made
 * by the kernel, or emulated by the library where the fd has no views
 * (KVM's fds, files).  The original handle is closed: the view holds the
 * source like it, and polls like it.
 */
static int use_view(struct collector *c, struct source *s, char *why,
		    size_t len)
{
	const char **sel = calloc(c->nfilter + 1, sizeof(*sel));
	struct statsfd_error err;
	struct statsfd *v;
	unsigned int i, k = 0;

	if (!sel) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < c->nfilter; i++)
		if (statsfd_find(s->sf, c->filter[i]))
			sel[k++] = c->filter[i];
	v = statsfd_open_view(s->sf, sel, k, STATSFD_VIEW_EMULATE, &err);
	free(sel);
	if (!v) {
		snprintf(why, len, "--stats: %s", err.msg);
		return -err.err;
	}
	statsfd_close(s->sf);
	s->sf = v;
	return 0;
}

/*
 * Wait for the events of @s in the daemon's epoll set: its hangup (the VM
 * is gone) drops it at once.  Fds that have no events (KVM's, files) are
 * refused with EPERM and simply never report any.
 */
static void watch_source(struct collector *c, struct source *s)
{
	struct epoll_event ev = {
		.events = statsfd_poll_events(s->sf), .data.ptr = s,
	};
	static bool warned;

	if (!epoll_ctl(c->epfd, EPOLL_CTL_ADD, statsfd_fd(s->sf), &ev)) {
		s->polled = true;
		c->npolled++;
		return;
	}
	/* ENOSPC: fs.epoll.max_user_watches; the source is read all the same. */
	if (errno != EPERM && !warned) {
		warned = true;
		logmsg("source %" PRIu64 " (%s): no events (epoll: %s)", s->id,
		       statsfd_id(s->sf), strerror(errno));
	}
}

/*
 * Validate and adopt @fd (always consumed).  The header and descriptors
 * are read here, once; from now on only the data block is.
 */
int add_source(struct collector *c, struct client *cl, int fd,
	       const struct statsfd_labels *l, char *why, size_t len,
	       struct source **out)
{
	struct statsfd_error err;
	struct statsfd_buf lab = { 0 };
	struct source *s;
	struct schema *sc;

	if (c->nsources >= c->max_sources) {
		close(fd);
		snprintf(why, len, "source limit (%u) reached", c->max_sources);
		return -ENOSPC;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	/*
	 * Rejects anything that is not a stats fd: pipes, sockets, garbage.
	 * A mapping costs no fd but one of the process's memory maps
	 * (vm.max_map_count, 65530 by default, also serves malloc): bounded.
	 */
	s->sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD |
				(c->nmapped < c->max_mapped && !c->nfilter ? 0 :
				 STATSFD_OPEN_NO_MMAP), &err);
	if (!s->sf) {
		free(s);
		c->stats.fds_rejected++;
		snprintf(why, len, "not a valid stats fd: %s", err.msg);
		return -err.err;
	}
	if (labels_taken(c, l)) {
		snprintf(why, len, "a source with provider %s, target %s, vm \"%s\" and vcpu %d is already registered",
			 l->provider, l->target, l->vm, l->vcpu);
		goto fail;
	}
	if (c->nfilter && use_view(c, s, why, len))
		goto fail;
	s->values = calloc(1, statsfd_data_size(s->sf) + 8);
	s->tmp = calloc(1, statsfd_data_size(s->sf) + 8);
	if (!s->values || !s->tmp) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	if (statsfd_read(s->sf, s->values, &err)) {
		snprintf(why, len, "first read failed: %s", err.msg);
		goto fail;
	}
	s->labels = *l;
	if (l->vm[0]) {
		statsfd_buf_printf(&lab, "vm=\"");
		statsfd_prom_escape(&lab, l->vm);
		statsfd_buf_printf(&lab, "\"");
	}
	if (l->vcpu >= 0)
		statsfd_buf_printf(&lab, "%svcpu=\"%d\"", l->vm[0] ? "," : "", l->vcpu);
	statsfd_buf_append(&lab, "", 0);
	if (lab.oom)
		goto fail_nomem;
	s->prom_labels = lab.data;
	sc = get_schema(c, s->sf, l);
	if (!sc)
		goto fail_nomem;

	s->kind = EP_SOURCE;
	s->id = ++c->next_source_id;
	s->owner = cl;
	s->mapped = statsfd_is_mapped(s->sf);
	c->nmapped += s->mapped;
	s->schema = sc;
	s->reads = 1;
	s->next_in_schema = sc->members;
	if (sc->members)
		sc->members->prev_in_schema = s;
	sc->members = s;
	sc->nmembers++;
	s->next = c->sources;
	if (c->sources)
		c->sources->prev = s;
	c->sources = s;
	c->nsources++;
	s->next_in_client = cl->sources;
	cl->sources = s;
	cl->nsources++;
	watch_source(c, s);
	systemd_store_source(s);
	if (out)
		*out = s;
	if (collector_verbose)
		logmsg("client %" PRIu64 " (pid %d uid %u): source %" PRIu64 " %s (%s %s vm=%s vcpu=%d), schema %u",
		       cl->id, cl->pid, cl->uid, s->id, statsfd_id(s->sf),
		       l->provider, l->target, l->vm, l->vcpu, sc->id);
	return 0;

fail_nomem:
	snprintf(why, len, "out of memory");
fail:
	statsfd_buf_free(&lab);
	statsfd_close(s->sf);
	free(s->values);
	free(s->tmp);
	free(s);
	return -EINVAL;
}

/*
 * Unlink @s everywhere and close its fd, which releases the VM it pins.
 * The struct itself is freed by reap_sources() after the current batch of
 * epoll events, which may still hold an event for it (its data.ptr): it
 * is marked dead and the event ignored.
 */
void drop_source(struct collector *c, struct source *s)
{
	struct schema *sc = s->schema, **psc;
	struct source **ps;

	if (s->dead)
		return;
	systemd_unstore_source(s);
	for (ps = &s->owner->sources; *ps; ps = &(*ps)->next_in_client) {
		if (*ps == s) {
			*ps = s->next_in_client;
			break;
		}
	}
	s->owner->nsources--;
	if (s->prev)
		s->prev->next = s->next;
	else
		c->sources = s->next;
	if (s->next)
		s->next->prev = s->prev;
	c->nsources--;
	if (s->prev_in_schema)
		s->prev_in_schema->next_in_schema = s->next_in_schema;
	else
		sc->members = s->next_in_schema;
	if (s->next_in_schema)
		s->next_in_schema->prev_in_schema = s->prev_in_schema;
	if (!--sc->nmembers) {
		for (psc = &c->schemas; *psc; psc = &(*psc)->next) {
			if (*psc == sc) {
				*psc = sc->next;
				break;
			}
		}
		free(sc);
	}
	c->nmapped -= s->mapped;
	/*
	 * Out of the epoll set before the fd is closed: the VMM may still
	 * hold the same open file, which would keep the registration (and
	 * its events, pointing at @s) alive.
	 */
	if (s->polled) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, statsfd_fd(s->sf), NULL);
		c->npolled--;
	}
	/* Unmaps the values too: the VM is released only then. */
	statsfd_close(s->sf);
	s->sf = NULL;
	free(s->prom_labels);
	free(s->values);
	free(s->tmp);
	s->dead = true;
	s->next = c->dead;
	c->dead = s;
}

/* Free the sources dropped during the last batch of events. */
void reap_sources(struct collector *c)
{
	struct source *s;

	while ((s = c->dead)) {
		c->dead = s->next;
		free(s);
	}
}

/*
 * epoll reported @events on the stats fd of @s: a hangup (the owner, the
 * VMM, is gone) drops it at once; a change of its children (a vCPU added
 * to a VM) is counted and acknowledged, so that the level-triggered set
 * does not report it again.  One source per event: nothing here depends
 * on the number of sources.
 */
void source_event(struct collector *c, struct source *s, uint32_t events)
{
	struct statsfd_error err;
	int ev;

	if (s->dead)
		return;
	ev = statsfd_events(s->sf, events, &err);
	if (ev < 0) {
		/* Left in the set, it would be reported again and again. */
		logmsg("source %" PRIu64 " (%s): %s: dropped", s->id,
		       statsfd_id(s->sf), err.msg);
		drop_source(c, s);
		return;
	}
	if (ev & STATSFD_EVENT_HANGUP) {
		c->stats.sources_hung_up++;
		logmsg("source %" PRIu64 " (%s, %s %s vm=%s vcpu=%d): hung up by its owner (the VM is gone): dropped",
		       s->id, statsfd_id(s->sf), s->labels.provider,
		       s->labels.target, s->labels.vm, s->labels.vcpu);
		drop_source(c, s);
		return;
	}
	if (ev & STATSFD_EVENT_CHILDREN) {
		c->stats.children_changes++;
		if (collector_verbose)
			logmsg("source %" PRIu64 " (%s): its children changed",
			       s->id, statsfd_id(s->sf));
	}
}

/*
 * One read of the data block per source (through the mapping for a
 * mapped vCPU, else one pread); scrapes use the result.
 */
void read_sources(struct collector *c)
{
	struct statsfd_error err;
	struct source *s;

	for (s = c->sources; s; s = s->next) {
		uint64_t *t;

		if (statsfd_read(s->sf, s->tmp, &err)) {
			if (!s->read_errors++)
				logmsg("source %" PRIu64 " (%s): %s", s->id,
				       statsfd_id(s->sf), err.msg);
			c->stats.read_errors++;
			continue;
		}
		t = s->values;
		s->values = s->tmp;
		s->tmp = t;
		s->reads++;
		c->stats.reads++;
	}
}

