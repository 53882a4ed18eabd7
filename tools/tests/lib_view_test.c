// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libstatsfd's views and events, through the system call
 * seam (statsfd__set_sys(), fakesys.h): the exact struct statsfd_view_args
 * for a selection by names and by indices, views of views, the checks
 * made before the ioctl (one errno each, the ioctl never called), each
 * errno of the ioctl and what the library makes of it, a kernel view that
 * does not hold what was asked for, emulated views (their layout, their
 * one pread, views of them, empty ones) with the fake ioctl and with a
 * real memfd (ENOTTY); and events: the poll mask, POLLPRI acknowledged by
 * a header read, POLLHUP, POLLNVAL, statsfd_wait() and
 * statsfd_wait_many() over scripted and real poll() (a pipe that hangs
 * up, a TCP socket with urgent data), and an epoll set.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fakesys.h"
#include "image.h"
#include "statsfd.h"
#include "statsfd_priv.h"
#include "tap.h"

static unsigned char img[1 << 16];
static size_t img_len;

/* The vCPU-like image with sample_ns and generation, values 1, 2, ... */
static const struct img_stat snap_stats[] = {
	{ "halt_exits", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "io_exits", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "blocking", STATSFD_TYPE_INSTANT | STATSFD_UNIT_BOOLEAN, 0, 1, 0 },
	{ "halt_wait_hist_ns", STATSFD_TYPE_LOG_HIST | STATSFD_UNIT_SECONDS, -9, 32, 0 },
	{ "io_bytes", STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_BYTES, 0, 1, 0 },
	{ STATSFD_STAT_SAMPLE_NS, STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS, -9, 1, 0 },
	{ STATSFD_STAT_GENERATION, STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
};
#define NSNAP (sizeof(snap_stats) / sizeof(snap_stats[0]))

/* A handle on a memfd holding the image, registered with the fake. */
static struct statsfd *open_fake(void)
{
	struct statsfd_error err;
	int fd;

	img_len = img_build(img, sizeof(img), "vm-9-0/vcpu-1", 48, snap_stats,
			    NSNAP, NULL, 0);
	fd = img_memfd(img, img_len);
	if (fd < 0 || fake_register(fd, img, img_len))
		return NULL;
	return statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
}

/*
 * with_fake() - @test on a handle of open_fake(), then a check that it
 * left no fd behind ("no fd left behind" and @after).
 */
static void with_fake(void (*test)(struct statsfd *sf), const char *after)
{
	struct statsfd *sf = open_fake();
	int fds;

	if (!sf)
		return;
	fds = fake_count_fds();
	test(sf);
	tap_ok(fake_count_fds() == fds, "no fd left behind%s", after);
	statsfd_close(sf);
}

static bool same_value(const struct statsfd *a, const uint64_t *av,
		       const struct statsfd *b, const uint64_t *bv,
		       const char *name)
{
	const struct statsfd_stat *x = statsfd_find(a, name);
	const struct statsfd_stat *y = statsfd_find(b, name);

	return x && y && x->size == y->size &&
	       !memcmp(statsfd_values(x, av), statsfd_values(y, bv), x->size * 8);
}

static void test_view_by_names(void)
{
	const char *names[] = { "io_exits", "halt_wait_hist_ns", "generation" };
	struct statsfd *sf = open_fake(), *v;
	struct statsfd_error err;
	const struct statsfd_stat *st;
	uint64_t *pv, *vv;
	bool ok = true;
	unsigned int i;

	if (!tap_ok(sf != NULL, "image opens"))
		return;
	fake_view_calls = 0;
	v = statsfd_open_view(sf, names, 3, 0, &err);
	if (!tap_ok(v != NULL, "statsfd_open_view by names (%s)", v ? "ok" : err.msg)) {
		statsfd_close(sf);
		return;
	}
	tap_ok(fake_view_calls == 1 && fake_last_view.req == STATSFD_IOC_VIEW &&
	       fake_last_view.fd == statsfd_fd(sf),
	       "one STATSFD_IOC_VIEW (request %#lx) on the handle's fd",
	       fake_last_view.req);
	tap_ok(fake_last_view.args.flags == 0 && fake_last_view.args.count == 3 &&
	       !fake_last_view.args.reserved[0] && !fake_last_view.args.reserved[1],
	       "args: flags 0, count 3, reserved 0");
	for (i = 0; i < 3; i++)
		ok &= !strcmp(fake_last_view.names[i], names[i]);
	tap_ok(ok, "args.list: 3 user pointers to the NUL-terminated names, in order");
	tap_ok(statsfd_view_kind(v) == STATSFD_VIEW_KERNEL && !statsfd_is_mapped(v),
	       "a kernel view, read with pread (never mapped)");
	tap_ok(statsfd_num_stats(v) == 3 && !strcmp(statsfd_id(v), statsfd_id(sf)) &&
	       !strcmp(statsfd_stat(v, 0)->name, "io_exits") &&
	       !strcmp(statsfd_stat(v, 1)->name, "halt_wait_hist_ns") &&
	       !strcmp(statsfd_stat(v, 2)->name, "generation"),
	       "the view: same id, the 3 stats in the order asked");
	st = statsfd_stat(v, 2);
	tap_ok(statsfd_stat(v, 1)->offset == 8 && st->offset == 8 * 33 &&
	       statsfd_data_size(v) == 8 * 34,
	       "compact data block: values back to back (%zu bytes)",
	       statsfd_data_size(v));
	tap_ok(statsfd_generation_stat(v) == st && !statsfd_sample_stat(v),
	       "generation selected is recognized in the view");
	pv = calloc(1, statsfd_data_size(sf));
	vv = calloc(1, statsfd_data_size(v));
	fake_preads = 0;
	tap_ok(!statsfd_read(sf, pv, &err) && !statsfd_read(v, vv, &err) &&
	       fake_last_len == statsfd_data_size(v) &&
	       same_value(sf, pv, v, vv, "io_exits") &&
	       same_value(sf, pv, v, vv, "halt_wait_hist_ns") &&
	       same_value(sf, pv, v, vv, "generation"),
	       "a read of the view: one pread of its %zu bytes, the source's values",
	       fake_last_len);
	free(pv);
	free(vv);
	statsfd_close(v);
	statsfd_close(sf);
}

static void test_view_by_indices(void)
{
	const unsigned int idx[] = { 6, 0, 4 };
	const unsigned int idx2[] = { 2, 0 };
	struct statsfd *sf = open_fake(), *v, *vv;
	struct statsfd_error err;

	if (!sf)
		return;
	v = statsfd_open_view_indices(sf, idx, 3, 0, &err);
	tap_ok(v && fake_last_view.args.flags == STATSFD_VIEW_BY_INDEX &&
	       fake_last_view.args.count == 3 && fake_last_view.idx[0] == 6 &&
	       fake_last_view.idx[1] == 0 && fake_last_view.idx[2] == 4,
	       "by indices: STATSFD_VIEW_BY_INDEX, args.list = u32 {6, 0, 4}");
	if (!v) {
		statsfd_close(sf);
		return;
	}
	tap_ok(!strcmp(statsfd_stat(v, 0)->name, "generation") &&
	       !strcmp(statsfd_stat(v, 2)->name, "io_bytes"),
	       "by indices: the stats in the order of the list");
	/* A view of the view: indices are the view's own. */
	vv = statsfd_open_view_indices(v, idx2, 2, 0, &err);
	tap_ok(vv && fake_last_view.fd == statsfd_fd(v) &&
	       fake_last_view.idx[0] == 2 && fake_last_view.idx[1] == 0 &&
	       statsfd_view_kind(vv) == STATSFD_VIEW_KERNEL &&
	       !strcmp(statsfd_stat(vv, 0)->name, "io_bytes") &&
	       !strcmp(statsfd_stat(vv, 1)->name, "generation"),
	       "a view of a view: made on the view's fd with the view's indices");
	statsfd_close(vv);
	vv = statsfd_open_view(v, (const char *const[]){ "halt_exits" }, 1, 0, &err);
	tap_ok(vv && !strcmp(fake_last_view.names[0], "halt_exits") &&
	       statsfd_num_stats(vv) == 1,
	       "a view of a view by name");
	statsfd_close(vv);
	vv = statsfd_open_view(v, (const char *const[]){ "io_exits" }, 1, 0, &err);
	tap_ok(!vv && err.err == ENOENT && !strcmp(err.field, "names[0]"),
	       "a view of a view selects only among the view's stats (ENOENT)");
	statsfd_close(v);
	statsfd_close(sf);
}

/* Checks before the ioctl: each its errno and field, the ioctl not called. */
static void test_view_checks(struct statsfd *sf)
{
	static const struct {
		const char *what;
		const char *names[4];
		unsigned int n;
		unsigned int flags;
		int err;
		const char *field;
	} cases[] = {
		{ "empty selection", { NULL }, 0, 0, EINVAL, "count" },
		{ "unknown flags", { "io_exits" }, 1, 0x80, EINVAL, "flags" },
		{ "NULL name", { "io_exits", NULL }, 2, 0, EINVAL, "names[1]" },
		{ "unknown name", { "io_exits", "nope" }, 2, 0, ENOENT, "names[1]" },
		{ "name of name_size bytes",
		  { "a_name_of_exactly_forty_eight_bytes_xxxxxxxxxxxx" }, 1, 0,
		  ENAMETOOLONG, "names[0]" },
		{ "same stat twice", { "io_exits", "blocking", "io_exits" }, 3, 0,
		  EEXIST, "names[2]" },
	};
	const unsigned int many[] = { 0, 1, 2, 3, 4, 5, 6, 0 };
	const unsigned int bad[] = { 1, 7 };
	const unsigned int dup[] = { 3, 3 };
	struct statsfd_error err;
	struct statsfd *v;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_view_calls = 0;
		errno = 0;
		v = statsfd_open_view(sf, cases[i].names, cases[i].n, cases[i].flags,
				      &err);
		tap_ok(!v && err.err == cases[i].err && errno == cases[i].err &&
		       !strcmp(err.field, cases[i].field) && !fake_view_calls &&
		       !statsfd_view_unsupported(&err),
		       "%s: %s, field %s, no ioctl (%s)", cases[i].what,
		       strerror(cases[i].err), cases[i].field, err.msg);
	}
	fake_view_calls = 0;
	v = statsfd_open_view_indices(sf, many, 8, 0, &err);
	tap_ok(!v && err.err == E2BIG && !strcmp(err.field, "count") && !fake_view_calls,
	       "more stats than the fd has: E2BIG (%s)", err.msg);
	v = statsfd_open_view_indices(sf, bad, 2, 0, &err);
	tap_ok(!v && err.err == ENOENT && !strcmp(err.field, "indices[1]") && !fake_view_calls,
	       "index out of range: ENOENT (%s)", err.msg);
	v = statsfd_open_view_indices(sf, dup, 2, 0, &err);
	tap_ok(!v && err.err == EEXIST && !strcmp(err.field, "indices[1]") && !fake_view_calls,
	       "index twice: EEXIST (%s)", err.msg);
	v = statsfd_open_view_indices(sf, NULL, 2, 0, &err);
	tap_ok(!v && err.err == EINVAL && !fake_view_calls, "NULL list: EINVAL");
	v = statsfd_open_view(sf, (const char *const[]){ "io_exits" }, 1, 0, NULL);
	tap_ok(v != NULL, "err may be NULL");
	statsfd_close(v);
}

/* Each errno of STATSFD_IOC_VIEW, as the library reports it. */
static void test_view_ioctl_errors(struct statsfd *sf)
{
	static const struct {
		int e;
		bool unsupported;
		const char *says;
	} cases[] = {
		{ ENOTTY, true, "has no views" },
		{ EINVAL, true, "kernel without views" },
		{ EOPNOTSUPP, true, "has no views" },
		{ ENOENT, false, "does not describe itself consistently" },
		{ EEXIST, false, "does not describe itself consistently" },
		{ ENAMETOOLONG, false, "does not describe itself consistently" },
		{ E2BIG, false, "does not describe itself consistently" },
		{ EFAULT, false, "libstatsfd bug" },
		{ ENOMEM, false, "out of memory" },
		{ EMFILE, false, "RLIMIT_NOFILE" },
		{ ENFILE, false, "file table is full" },
		{ EBADF, false, "not open" },
		{ EPERM, false, "unexpected" },
	};
	const char *names[] = { "io_exits" };
	struct statsfd_error err;
	struct statsfd *v;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_view_errno = cases[i].e;
		errno = 0;
		v = statsfd_open_view(sf, names, 1, 0, &err);
		tap_ok(!v && err.err == cases[i].e && errno == cases[i].e &&
		       !strcmp(err.field, "view") && strstr(err.msg, strerror(cases[i].e)) &&
		       strstr(err.msg, cases[i].says) &&
		       statsfd_view_unsupported(&err) == cases[i].unsupported,
		       "ioctl %s: err %d, field view, %s (%s)", strerror(cases[i].e),
		       err.err, cases[i].unsupported ? "unsupported: fall back" :
		       "an error", err.msg);
		/* With STATSFD_VIEW_EMULATE only "no views" is emulated. */
		v = statsfd_open_view(sf, names, 1, STATSFD_VIEW_EMULATE, &err);
		tap_ok(cases[i].unsupported ?
		       v && statsfd_view_kind(v) == STATSFD_VIEW_EMULATED :
		       !v && err.err == cases[i].e,
		       "ioctl %s with STATSFD_VIEW_EMULATE: %s", strerror(cases[i].e),
		       cases[i].unsupported ? "emulated" : "still the error");
		statsfd_close(v);
	}
	fake_view_errno = 0;
}

static void test_view_mismatch(void)
{
	const char *names[] = { "io_exits", "blocking" };
	struct statsfd *sf = open_fake(), *v;
	struct statsfd_error err;
	int fds;

	if (!sf)
		return;
	fds = fake_count_fds();
	fake_view_mode = FAKE_VIEW_SWAPPED;
	v = statsfd_open_view(sf, names, 2, 0, &err);
	fake_view_mode = FAKE_VIEW_MEMFD;
	tap_ok(!v && err.err == EINVAL && !strcmp(err.field, "view") &&
	       strstr(err.msg, "desc[0]") && fake_count_fds() == fds,
	       "a kernel view in another order is refused, its fd closed (%s)",
	       err.msg);
	statsfd_close(sf);
}

static void test_view_emulated(void)
{
	const char *names[] = { "io_bytes", "halt_exits", "sample_ns" };
	const unsigned int one[] = { 1 };
	struct statsfd *sf = open_fake(), *v, *vv, *e;
	struct statsfd_error err;
	uint64_t pv[64], vb[8];
	unsigned int calls;

	if (!sf)
		return;
	fake_view_errno = ENOTTY;
	v = statsfd_open_view(sf, names, 3, STATSFD_VIEW_EMULATE, &err);
	fake_view_errno = 0;
	if (!tap_ok(v && statsfd_view_kind(v) == STATSFD_VIEW_EMULATED,
		    "ENOTTY + STATSFD_VIEW_EMULATE: an emulated view (%s)",
		    v ? "ok" : err.msg)) {
		statsfd_close(sf);
		return;
	}
	tap_ok(statsfd_num_stats(v) == 3 && statsfd_data_size(v) == 24 &&
	       statsfd_header(v)->id_offset == 24 &&
	       statsfd_header(v)->data_offset == 72 &&
	       statsfd_header(v)->desc_offset == 96 &&
	       statsfd_sample_stat(v) == statsfd_stat(v, 2),
	       "emulated: a kernel view's header and compact layout");
	tap_ok(statsfd_fd(v) != statsfd_fd(sf), "emulated: its own fd (a dup)");
	fake_preads = 0;
	memset(vb, 0xff, sizeof(vb));
	tap_ok(!statsfd_read(sf, pv, &err) && !statsfd_read(v, vb, &err) &&
	       fake_preads == 2 && fake_last_len == 8 * 37 &&
	       same_value(sf, pv, v, vb, "io_bytes") &&
	       same_value(sf, pv, v, vb, "halt_exits") &&
	       same_value(sf, pv, v, vb, "sample_ns"),
	       "emulated read: one pread spanning the stats, values in the view's layout");
	fake_preads = 0;
	tap_ok(!statsfd_read_stats(v, (const struct statsfd_stat *const[]){
					statsfd_stat(v, 0) }, 1, vb, &err) &&
	       fake_preads == 1 && fake_last_len == 8 && vb[0] == pv[35],
	       "emulated statsfd_read_stats(): 8 bytes read");
	calls = fake_view_calls;
	vv = statsfd_open_view_indices(v, one, 1, STATSFD_VIEW_EMULATE, &err);
	tap_ok(vv && statsfd_view_kind(vv) == STATSFD_VIEW_EMULATED &&
	       fake_view_calls == calls && !statsfd_read(vv, vb, &err) &&
	       !strcmp(statsfd_stat(vv, 0)->name, "halt_exits") && vb[0] == pv[0],
	       "a view of an emulated view: emulated, no ioctl, the right value");
	statsfd_close(vv);
	vv = statsfd_open_view_indices(v, one, 1, 0, &err);
	tap_ok(!vv && err.err == ENOTTY && statsfd_view_unsupported(&err),
	       "a view of an emulated view without STATSFD_VIEW_EMULATE: ENOTTY");
	e = statsfd_open_view(sf, NULL, 0, STATSFD_VIEW_EMULATE, &err);
	tap_ok(e && statsfd_num_stats(e) == 0 && statsfd_data_size(e) == 0 &&
	       !statsfd_read(e, vb, &err) && fake_view_calls == calls,
	       "an empty selection with STATSFD_VIEW_EMULATE: a handle without stats");
	statsfd_close(e);
	/* The emulated view does not depend on its parent staying open. */
	statsfd_close(sf);
	tap_ok(!statsfd_read(v, vb, &err) && vb[1] == pv[0],
	       "an emulated view outlives the handle it was made from");
	statsfd_close(v);
}

/* No seam at all: a memfd answers ENOTTY, as a file or a KVM fd does. */
static void test_view_real_enotty(void)
{
	const char *names[] = { "generation", "io_exits" };
	struct statsfd_error err;
	struct statsfd *sf, *v;
	uint64_t pv[64], vb[2];
	bool ok;

	fake_uninstall();
	img_len = img_build(img, sizeof(img), "vm-9-0/vcpu-2", 48, snap_stats,
			    NSNAP, NULL, 1);
	sf = statsfd_open_fd(img_memfd(img, img_len), STATSFD_OPEN_CLOSE_FD, &err);
	v = sf ? statsfd_open_view(sf, names, 2, 0, &err) : NULL;
	tap_ok(sf && !v && err.err == ENOTTY && statsfd_view_unsupported(&err),
	       "a real memfd: STATSFD_IOC_VIEW is ENOTTY, reported as no views (%s)",
	       err.msg);
	v = sf ? statsfd_open_view(sf, names, 2, STATSFD_VIEW_EMULATE, &err) : NULL;
	ok = v && !statsfd_read(sf, pv, &err) && !statsfd_read(v, vb, &err) &&
	     vb[0] == 38 && vb[0] == pv[37] && vb[1] == 2 && vb[1] == pv[1];
	tap_ok(ok, "and emulated over a KVM-layout image: generation %llu, io_exits %llu",
	       ok ? (unsigned long long)vb[0] : 0, ok ? (unsigned long long)vb[1] : 0);
	statsfd_close(v);
	statsfd_close(sf);
	fake_install();
}

static void test_events(void)
{
	struct statsfd *sf = open_fake();
	struct statsfd_error err;
	int r;

	if (!sf)
		return;
	tap_ok(statsfd_poll_events(sf) == POLLPRI && POLLPRI == EPOLLPRI,
	       "statsfd_poll_events(): POLLPRI (== EPOLLPRI), never POLLIN");
	fake_acks = 0;
	r = statsfd_events(sf, POLLPRI | POLLERR, &err);
	tap_ok(r == STATSFD_EVENT_CHILDREN && fake_acks == 1,
	       "POLLPRI|POLLERR: children changed, acknowledged by one header read");
	fake_acks = 0;
	r = statsfd_events(sf, POLLHUP, &err);
	tap_ok(r == STATSFD_EVENT_HANGUP && !fake_acks, "POLLHUP: hangup, nothing read");
	r = statsfd_events(sf, POLLHUP | POLLPRI | POLLERR, &err);
	tap_ok(r == (STATSFD_EVENT_HANGUP | STATSFD_EVENT_CHILDREN), "both at once");
	r = statsfd_events(sf, POLLERR, &err);
	tap_ok(r == 0, "POLLERR alone: nothing");
	r = statsfd_events(sf, 0, &err);
	tap_ok(r == 0, "no event: 0");
	r = statsfd_events(sf, POLLNVAL, &err);
	tap_ok(r == -EBADF && err.err == EBADF, "POLLNVAL: -EBADF (%s)", err.msg);
	fake_pread_errno = EIO;
	r = statsfd_events(sf, POLLPRI, &err);
	fake_pread_errno = 0;
	tap_ok(r == -EIO && err.err == EIO && !strcmp(err.field, "events"),
	       "a failed acknowledging read: its errno (%s)", err.msg);

	fake_poll_mode = 1;
	fake_poll_revents = POLLPRI | POLLERR;
	r = statsfd_wait(sf, 1234, &err);
	tap_ok(r == STATSFD_EVENT_CHILDREN && fake_poll_nfds == 1 &&
	       fake_poll_last.fd == statsfd_fd(sf) && fake_poll_last.events == POLLPRI &&
	       fake_poll_timeout == 1234,
	       "statsfd_wait(): one pollfd (the handle's fd, POLLPRI, the timeout)");
	fake_poll_revents = 0;
	tap_ok(statsfd_wait(sf, 0, &err) == 0, "statsfd_wait(): timeout is 0");
	fake_poll_mode = 2;
	fake_poll_errno = EINTR;
	r = statsfd_wait(sf, -1, &err);
	tap_ok(r == -EINTR && err.err == EINTR, "statsfd_wait(): a signal is -EINTR");
	fake_poll_mode = 0;
	statsfd_close(sf);
}

/* Real poll() and epoll on fds that poll as a stats fd would. */
static void test_events_real(void)
{
	struct statsfd_wait_item items[3];
	struct statsfd *a, *b, *c;
	struct statsfd_error err;
	struct epoll_event ev;
	int wr, peer, wr2, ep, r;

	img_len = img_build(img, sizeof(img), "vm-9-0/vcpu-0", 48, snap_stats,
			    NSNAP, NULL, 0);
	a = statsfd_open_fd(fake_pipe_source(img, img_len, &wr),
			    STATSFD_OPEN_CLOSE_FD, &err);
	b = statsfd_open_fd(fake_tcp_source(img, img_len, &peer),
			    STATSFD_OPEN_CLOSE_FD, &err);
	c = statsfd_open_fd(fake_pipe_source(img, img_len, &wr2),
			    STATSFD_OPEN_CLOSE_FD, &err);
	if (!tap_ok(a && b && c, "a pipe and a TCP socket serve images"))
		return;
	tap_ok(statsfd_wait(a, 50, &err) == 0 && statsfd_wait(b, 50, &err) == 0,
	       "real poll: nothing pending, a timeout");
	fake_children_changed(peer);
	r = statsfd_wait(b, 2000, &err);
	tap_ok(r == STATSFD_EVENT_CHILDREN, "real poll: urgent data is POLLPRI, children changed");
	tap_ok(statsfd_wait(b, 50, &err) == 0,
	       "acknowledged: a level-triggered poll does not report it again");
	close(wr);
	tap_ok(statsfd_wait(a, 2000, &err) == STATSFD_EVENT_HANGUP,
	       "real poll: the writer gone is POLLHUP, a hangup");
	tap_ok(statsfd_wait(a, 0, &err) == STATSFD_EVENT_HANGUP, "a hangup stays");

	items[0].sf = a;
	items[1].sf = b;
	items[2].sf = c;
	fake_children_changed(peer);
	r = statsfd_wait_many(items, 3, 2000, &err);
	tap_ok(r == 2 && items[0].events == STATSFD_EVENT_HANGUP &&
	       items[1].events == STATSFD_EVENT_CHILDREN && !items[2].events,
	       "statsfd_wait_many(): 2 of 3 with events, each its own");

	ep = epoll_create1(EPOLL_CLOEXEC);
	ev = (struct epoll_event){ .events = statsfd_poll_events(c), .data.ptr = c };
	tap_ok(!epoll_ctl(ep, EPOLL_CTL_ADD, statsfd_fd(c), &ev),
	       "epoll: statsfd_fd() with statsfd_poll_events()");
	tap_ok(epoll_wait(ep, &ev, 1, 50) == 0, "epoll: nothing pending");
	close(wr2);
	r = epoll_wait(ep, &ev, 1, 2000);
	tap_ok(r == 1 && ev.data.ptr == c &&
	       statsfd_events(c, ev.events, &err) == STATSFD_EVENT_HANGUP,
	       "epoll: EPOLLHUP reported unasked, statsfd_events() says hangup");
	ev = (struct epoll_event){ .events = statsfd_poll_events(b), .data.ptr = b };
	epoll_ctl(ep, EPOLL_CTL_DEL, statsfd_fd(c), NULL);
	epoll_ctl(ep, EPOLL_CTL_ADD, statsfd_fd(b), &ev);
	fake_children_changed(peer);
	r = epoll_wait(ep, &ev, 1, 2000);
	tap_ok(r == 1 && ev.data.ptr == b &&
	       statsfd_events(b, ev.events, &err) == STATSFD_EVENT_CHILDREN &&
	       epoll_wait(ep, &ev, 1, 50) == 0,
	       "epoll, level-triggered: EPOLLPRI once, then acknowledged");
	close(ep);
	close(peer);
	statsfd_close(a);
	statsfd_close(b);
	statsfd_close(c);
}

int main(void)
{
	fake_install();
	test_view_by_names();
	test_view_by_indices();
	with_fake(test_view_checks, " by the failures");
	with_fake(test_view_ioctl_errors, "");
	test_view_mismatch();
	test_view_emulated();
	test_view_real_enotty();
	test_events();
	test_events_real();
	fake_uninstall();
	return tap_done();
}
