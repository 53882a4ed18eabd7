// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd: events of stats fds.  A statsfd stats fd polls POLLPRI (with
 * POLLERR) while the set of its source's children changed since this open
 * file last read its header or data, and POLLHUP for good once the owner
 * hung the source up.  It is always readable, so POLLIN is never asked
 * for.  A change is acknowledged by reading the header.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "statsfd_priv.h"

#define set_err statsfd__set_err

/* One mask serves poll() and epoll. */
_Static_assert(POLLPRI == EPOLLPRI && POLLHUP == EPOLLHUP &&
	       POLLERR == EPOLLERR,
	       "poll and epoll event bits differ");

unsigned int statsfd_poll_events(const struct statsfd *sf)
{
	return POLLPRI;
}

int statsfd_events(const struct statsfd *sf, unsigned int revents,
		   struct statsfd_error *err)
{
	struct statsfd_header h;
	int ev = 0, ret;

	if (err)
		memset(err, 0, sizeof(*err));
	if (revents & POLLNVAL) {
		set_err(err, EBADF, "events: fd %d is not open (POLLNVAL)",
			sf->fd);
		return -EBADF;
	}
	if (revents & POLLPRI) {
		/* Reading the header acknowledges the change. */
		ret = statsfd__read_exact(sf->fd, &h, sizeof(h), 0, "events",
					  err);
		if (ret)
			return ret;
		ev |= STATSFD_EVENT_CHILDREN;
	}
	if (revents & POLLHUP)
		ev |= STATSFD_EVENT_HANGUP;
	return ev;
}

int statsfd_wait_many(struct statsfd_wait_item *items, unsigned int n,
		      int timeout_ms, struct statsfd_error *err)
{
	struct pollfd stackp[16], *p = stackp;
	unsigned int i;
	int r, ev, cnt = 0;

	if (err)
		memset(err, 0, sizeof(*err));
	if (n > sizeof(stackp) / sizeof(stackp[0])) {
		p = calloc(n, sizeof(*p));
		if (!p) {
			set_err(err, ENOMEM, "poll: out of memory");
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		p[i] = (struct pollfd){
			.fd = items[i].sf->fd,
			.events = (short)statsfd_poll_events(items[i].sf),
		};
		items[i].events = 0;
	}
	r = statsfd__sys.poll(p, n, timeout_ms);
	if (r < 0) {
		r = errno;
		set_err(err, r, "poll: %s", strerror(r));
		cnt = -r;
		goto out;
	}
	for (i = 0; r && i < n; i++) {
		if (!p[i].revents)
			continue;
		ev = statsfd_events(items[i].sf, (unsigned short)p[i].revents,
				    err);
		if (ev < 0) {
			cnt = ev;
			goto out;
		}
		items[i].events = (unsigned int)ev;
		cnt += ev != 0;
	}
out:
	if (p != stackp)
		free(p);
	return cnt;
}

int statsfd_wait(const struct statsfd *sf, int timeout_ms,
		 struct statsfd_error *err)
{
	struct statsfd_wait_item it = { .sf = sf };
	int r = statsfd_wait_many(&it, 1, timeout_ms, err);

	return r < 0 ? r : (int)it.events;
}
