// SPDX-License-Identifier: GPL-2.0
/*
 * How statsfd-collector handles the events of its stats fds, on the host:
 * the daemon's own source code (collector/sources.c) with a real epoll set
 * and sources whose fds poll for real (fakesys.h: a pipe whose writer
 * closes hangs up, a TCP socket with urgent data polls POLLPRI), views
 * made by the fake STATSFD_IOC_VIEW.  Each event is dispatched exactly as
 * the daemon's loop does (data.ptr is the source): a hangup drops the
 * source at once, counted, out of the epoll set before its fd is closed
 * (the VMM may hold the same open file), and freed only after the batch;
 * a change of children is counted and acknowledged.  With --stats every
 * source is read through a view of the stats of the filter it has, by
 * names, emulated where the fd has none, empty where it has none of them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "fakesys.h"
#include "image.h"
#include "statsfd.h"
#include "tap.h"

static const struct img_stat vm_stats[] = {
	{ "vcpus_created", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "io_exits_sum", STATSFD_TYPE_CUMULATIVE | STATSFD_AGG_SUM, 0, 1, 0 },
};

static unsigned char img[1 << 16];

static struct collector col = {
	.max_sources = 100, .max_mapped = 100, .client_max_sources = 100,
	.client_max_bytes = 1 << 20, .max_bytes = 1 << 20, .drop_after = 10,
};
static struct client cl = { .kind = EP_CLIENT, .fd = -1 };

static struct source *add(int fd, const char *target, int vcpu)
{
	struct statsfd_labels l = { .vcpu = vcpu };
	/* These fds are fakes (pipes, sockets): admission is not tested here. */
	struct admit_info info = { .ns = SOURCE_NS_STATSFD, .cost = 4096,
				    .data_size = ADMIT_DATA_SIZE_MAX };
	struct source *s = NULL;
	char why[400];

	snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "%s", target);
	snprintf(l.vm, sizeof(l.vm), "web");
	if (add_source(&col, &cl, fd, &info, &l, why, sizeof(why), &s))
		tap_diag("add_source: %s", why);
	return s;
}

static int vcpu_pipe(unsigned int i, int *wr)
{
	char id[48];
	size_t len;

	snprintf(id, sizeof(id), "vm-7-0/vcpu-%u", i);
	len = img_build(img, sizeof(img), id, 48, img_vcpu_stats,
			img_vcpu_nstats, NULL, 0);
	return fake_pipe_source(img, len, wr);
}

static int vm_tcp(int *peer)
{
	size_t len = img_build(img, sizeof(img), "vm-7-0", 48, vm_stats, 2, NULL, 0);

	return fake_tcp_source(img, len, peer);
}

/* One round of the daemon's loop over the sources' events. */
static int loop_once(int timeout_ms)
{
	struct epoll_event ev[16];
	int n = epoll_wait(col.epfd, ev, 16, timeout_ms), i;

	for (i = 0; i < n; i++)
		if (*(int *)ev[i].data.ptr == EP_SOURCE)
			source_event(&col, ev[i].data.ptr, ev[i].events);
	reap_sources(&col);
	return n;
}

static void test_events(void)
{
	struct source *vm, *v0, *v1, *file;
	int peer, wr0, wr1, held, fds;
	size_t len;

	fds = fake_count_fds();
	vm = add(vm_tcp(&peer), "vm", -1);
	v0 = add(vcpu_pipe(0, &wr0), "vcpu", 0);
	v1 = add(vcpu_pipe(1, &wr1), "vcpu", 1);
	len = img_build(img, sizeof(img), "vm-7-0/vcpu-9", 48, img_vcpu_stats,
			img_vcpu_nstats, NULL, 0);
	file = add(img_memfd(img, len), "vcpu", 9);
	if (!tap_ok(vm && v0 && v1 && file && col.nsources == 4,
		    "4 sources: a VM (TCP socket), 2 vCPUs (pipes), a memfd"))
		return;
	tap_ok(vm->polled && v0->polled && v1->polled && !file->polled &&
	       col.npolled == 3,
	       "3 fds in the epoll set; a file (no events: EPERM) is read all the same");
	tap_ok(loop_once(50) == 0, "nothing pending");

	/* A vCPU added to the VM. */
	fake_children_changed(peer);
	tap_ok(loop_once(2000) == 1 && col.stats.children_changes == 1 &&
	       col.nsources == 4,
	       "EPOLLPRI on the VM: counted (children_changes 1), the source kept");
	tap_ok(loop_once(50) == 0, "acknowledged: the level-triggered set is quiet again");

	/*
	 * vCPU 0 hangs up.  The VMM still holds the same open file (a dup
	 * here): without EPOLL_CTL_DEL before close, epoll would keep the
	 * registration and report it again with a freed data.ptr.
	 */
	held = dup(statsfd_fd(v0->sf));
	close(wr0);
	tap_ok(loop_once(2000) == 1 && col.stats.sources_hung_up == 1 &&
	       col.nsources == 3 && cl.nsources == 3 && col.npolled == 2 && !col.dead,
	       "EPOLLHUP on vCPU 0: dropped at once (sources_hung_up 1), freed after the batch");
	tap_ok(loop_once(100) == 0,
	       "out of the epoll set although its file is still open elsewhere");
	close(held);

	/* A batch holding an event for a source dropped earlier in it. */
	drop_source(&col, v1);
	source_event(&col, v1, EPOLLHUP);
	tap_ok(col.stats.sources_hung_up == 1 && col.nsources == 2 && col.dead == v1,
	       "an event for a source dropped earlier in the batch is ignored");
	reap_sources(&col);
	close(wr1);
	tap_ok(loop_once(100) == 0, "and it never comes back");

	/* The VM's fd hangs up (both directions of the socket shut). */
	close(peer);
	shutdown(statsfd_fd(vm->sf), SHUT_WR);
	tap_ok(loop_once(2000) == 1 && col.stats.sources_hung_up == 2 &&
	       col.nsources == 1 && col.npolled == 0,
	       "EPOLLHUP on the VM: dropped");
	drop_source(&col, file);
	reap_sources(&col);
	tap_ok(col.nsources == 0 && !cl.sources && fake_count_fds() == fds,
	       "all dropped, every fd closed");
}

static void test_filter(void)
{
	static char io[] = "io_exits", halt[] = "halt_exits";
	static char *filter[] = { io, halt };
	struct source *v0, *vm, *v2, *v3;
	int peer, wr0, wr2, wr3, fds, view_wr;
	char why[400];

	col.filter = filter;
	col.nfilter = 2;
	fds = fake_count_fds();
	fake_view_mode = FAKE_VIEW_PIPE;
	fake_view_calls = 0;
	v0 = add(vcpu_pipe(0, &wr0), "vcpu", 0);
	view_wr = fake_view_writer;
	tap_ok(v0 && fake_view_calls == 1 && fake_last_view.args.flags == 0 &&
	       fake_last_view.args.count == 2 &&
	       !strcmp(fake_last_view.names[0], "io_exits") &&
	       !strcmp(fake_last_view.names[1], "halt_exits"),
	       "--stats io_exits,halt_exits: a view by names, in the filter's order");
	if (!v0)
		return;
	tap_ok(statsfd_view_kind(v0->sf) == STATSFD_VIEW_KERNEL &&
	       statsfd_num_stats(v0->sf) == 2 && !v0->mapped && v0->polled,
	       "the source is the view: 2 stats, waited on");
	fake_preads = 0;
	fake_poke(wr0, 1, 777);	/* io_exits of vCPU 0 (a pipe: one inode) */
	read_sources(&col);
	tap_ok(fake_preads == 1 && fake_last_len == 16 && v0->values[0] == 777 &&
	       v0->values[1] == 1,
	       "a read: one pread of the view's 16 bytes, the source's values");
	vm = add(vm_tcp(&peer), "vm", -1);
	tap_ok(vm && statsfd_view_kind(vm->sf) == STATSFD_VIEW_EMULATED &&
	       statsfd_num_stats(vm->sf) == 0 && fake_view_calls == 1,
	       "a VM without any of them: kept (for its events), an empty handle, no ioctl");
	fake_view_errno = ENOTTY;
	v2 = add(vcpu_pipe(2, &wr2), "vcpu", 2);
	tap_ok(v2 && statsfd_view_kind(v2->sf) == STATSFD_VIEW_EMULATED &&
	       statsfd_num_stats(v2->sf) == 2 && v2->polled,
	       "ENOTTY (no views): emulated, still waited on");
	fake_view_errno = EMFILE;
	{
		struct statsfd_labels l = { .vcpu = 3 };
		struct admit_info info = { .ns = SOURCE_NS_STATSFD, .cost = 4096,
					   .data_size = ADMIT_DATA_SIZE_MAX };
		int fd = vcpu_pipe(3, &wr3);

		snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
		snprintf(l.target, sizeof(l.target), "vcpu");
		snprintf(l.vm, sizeof(l.vm), "web");
		v3 = NULL;
		tap_ok(add_source(&col, &cl, fd, &info, &l, why, sizeof(why), &v3) &&
		       !v3 && strstr(why, "EMFILE") && col.nsources == 3,
		       "a view that cannot be made (EMFILE): the source is refused (%s)", why);
	}
	fake_view_errno = 0;
	close(view_wr);
	tap_ok(loop_once(2000) == 1 && col.nsources == 2 && col.stats.sources_hung_up == 3,
	       "EPOLLHUP on a view: dropped");
	drop_source(&col, vm);
	drop_source(&col, v2);
	reap_sources(&col);
	close(peer);
	close(wr0);
	close(wr2);
	close(wr3);
	fake_view_mode = FAKE_VIEW_MEMFD;
	tap_ok(col.nsources == 0 && fake_count_fds() == fds, "no fd left behind");
	col.filter = NULL;
	col.nfilter = 0;
}

int main(void)
{
	col.epfd = epoll_create1(EPOLL_CLOEXEC);
	fake_install();
	test_events();
	test_filter();
	fake_uninstall();
	close(col.epfd);
	return tap_done();
}
