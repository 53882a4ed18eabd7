// SPDX-License-Identifier: GPL-2.0
/*
 * How `statsfd watch` reacts to the events of stats fds, on the host: the
 * CLI's own code (statsfd/events.c, statsfd/sources.c) with sources whose
 * fds poll for real (fakesys.h: a pipe whose writer closes hangs up, a
 * TCP socket with urgent data polls POLLPRI) and views made by the fake
 * STATSFD_IOC_VIEW.  A hangup drops the source at once; a change of
 * children makes the CLI rescan the VMM (cli_rescan, replaced here by a
 * function that "finds" the sources a VMM would show) once at once and
 * once more at the next refresh, keeping only the new sources; a VM is
 * read through a view of its own so that reads never consume its events;
 * --stats reads through views (emulated where there are none), and
 * sources without any of the stats are not shown but still waited on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../statsfd/cli.h"
#include "fakesys.h"
#include "image.h"
#include "statsfd.h"
#include "tap.h"

#define VM_ID	"vm-4242-0"

static const struct img_stat vm_stats[] = {
	{ "vcpus_created", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "io_exits_sum", STATSFD_TYPE_CUMULATIVE | STATSFD_AGG_SUM, 0, 1, 0 },
};

static unsigned char img[1 << 16];

/* Rescans asked for, and what the fake VMM "has" when asked. */
static unsigned int rescans;
static enum cli_root rescan_root_seen;
static pid_t rescan_pid_seen;
static int new_vcpu = -1;		/* a vCPU the next rescan finds */
static int new_vcpu_wr = -1;		/* its pipe's writer */
/* Writers of the pipes of the vCPUs rescans find: open, no hangup. */
static int writers[64];
static unsigned int nwriters;

static void close_writers(void)
{
	while (nwriters)
		close(writers[--nwriters]);
}

static int add(struct cli_sources *s, int fd, const char *target, int vcpu,
	       pid_t pid)
{
	struct statsfd_labels l = { .vcpu = vcpu };
	struct statsfd_error err;
	struct statsfd *sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);

	if (!sf)
		return -1;
	snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "%s", target);
	snprintf(l.vm, sizeof(l.vm), VM_ID);
	if (cli_add_handle(s, sf, &l, "test"))
		return -1;
	s->v[s->n - 1].pid = pid;
	s->v[s->n - 1].root = !strcmp(target, "vm") ? CLI_ROOT_PID : CLI_ROOT_NONE;
	return 0;
}

static int vcpu_source(unsigned int i, int *wr)
{
	char id[48];
	size_t len;

	snprintf(id, sizeof(id), VM_ID "/vcpu-%u", i);
	len = img_build(img, sizeof(img), id, 48, img_vcpu_stats,
			img_vcpu_nstats, NULL, 0);
	return fake_pipe_source(img, len, wr);
}

static int vm_source(int *peer)
{
	size_t len = img_build(img, sizeof(img), VM_ID, 48, vm_stats, 2, NULL, 0);

	return fake_tcp_source(img, len, peer);
}

/*
 * What a rescan of the VMM finds: its VM and vCPU 0 again (known, to be
 * dropped as duplicates) and, once, a new vCPU.
 */
static int fake_rescan(struct cli_sources *s, enum cli_root root, pid_t pid)
{
	unsigned int n0 = s->n;
	int peer, wr;

	rescans++;
	rescan_root_seen = root;
	rescan_pid_seen = pid;
	if (add(s, vm_source(&peer), "vm", -1, pid) == 0)
		close(peer);
	if (add(s, vcpu_source(0, &wr), "vcpu", 0, pid) == 0 && nwriters < 64)
		writers[nwriters++] = wr;
	if (new_vcpu >= 0) {
		add(s, new_vcpu, "vcpu", 2, pid);
		new_vcpu = -1;
	}
	return (int)(s->n - n0);
}

static int find(const struct cli_sources *s, const char *id)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(statsfd_id(s->v[i].sf), id))
			return (int)i;
	return -1;
}

static void test_events(void)
{
	struct cli_sources s = { 0 };
	struct cli_changes ch = { 0 };
	struct statsfd_error err;
	int peer, wr0, wr1, r, i;
	uint64_t buf[8];

	s.watch = true;
	if (!tap_ok(!add(&s, vm_source(&peer), "vm", -1, 4242) &&
		    !add(&s, vcpu_source(0, &wr0), "vcpu", 0, 4242) &&
		    !add(&s, vcpu_source(1, &wr1), "vcpu", 1, 4242),
		    "a VM (TCP socket) and 2 vCPUs (pipes) from pid 4242"))
		return;
	fake_view_calls = 0;
	tap_ok(!cli_prepare(&s, 0) && fake_view_calls == 1 &&
	       fake_last_view.args.flags == STATSFD_VIEW_BY_INDEX &&
	       fake_last_view.args.count == 2 &&
	       statsfd_view_kind(s.v[0].sf) == STATSFD_VIEW_KERNEL && s.v[0].ev &&
	       !s.v[1].ev && statsfd_view_kind(s.v[1].sf) == STATSFD_VIEW_NONE,
	       "watch: the VM is read through a view of all its stats, its fd kept to wait on; vCPUs as they are");
	tap_ok(cli_wait(&s, 50, &ch) == 0 && s.n == 3 && !rescans,
	       "nothing pending: cli_wait() times out, nothing changes");

	/* A vCPU is added: the VM's fd polls POLLPRI. */
	new_vcpu = vcpu_source(2, &new_vcpu_wr);
	fake_children_changed(peer);
	usleep(20000);
	tap_ok(!statsfd_read(s.v[0].sf, buf, &err),
	       "a read of the VM's values meanwhile (through its view)");
	r = cli_wait(&s, 2000, &ch);
	i = find(&s, VM_ID "/vcpu-2");
	tap_ok(r == 1 && rescans == 1 && rescan_root_seen == CLI_ROOT_PID &&
	       rescan_pid_seen == 4242,
	       "POLLPRI on the VM: the VMM (pid 4242) rescanned, the read did not consume the event");
	tap_ok(s.n == 4 && i == 3 && ch.nadded == 1 &&
	       !strcmp(ch.added.data, VM_ID "/vcpu-2"),
	       "the new vCPU is added, the VM and vCPU 0 found again are not (%u sources)",
	       s.n);
	tap_ok(i >= 0 && !memcmp(s.v[i].cur, s.v[i].prev,
				 statsfd_data_size(s.v[i].sf)) && s.v[i].cur[1] == 2,
	       "the new source is read at once, its first rates start from that read");
	tap_ok(s.npending == 1 && s.pending[0].pid == 4242,
	       "one more rescan owed at the next refresh");
	tap_ok(cli_wait(&s, 50, &ch) == 0 && rescans == 1,
	       "the change was acknowledged: no second wake-up");
	cli_changes_reset(&ch);
	cli_rescan_pending(&s, &ch);
	tap_ok(rescans == 2 && !s.npending && s.n == 4 && !ch.nadded,
	       "next refresh: rescanned once more, nothing new");

	/* vCPU 1's fd hangs up. */
	close(wr1);
	r = cli_wait(&s, 2000, &ch);
	tap_ok(r == 1 && s.n == 3 && find(&s, VM_ID "/vcpu-1") < 0 && ch.ngone == 1 &&
	       !strcmp(ch.gone.data, VM_ID "/vcpu-1"),
	       "POLLHUP on vCPU 1: dropped at once, listed as gone");
	tap_ok(find(&s, VM_ID) == 0 && find(&s, VM_ID "/vcpu-0") == 1 &&
	       find(&s, VM_ID "/vcpu-2") == 2, "the others kept, in order");

	/* The VM's own fd hangs up (both directions of the socket shut). */
	close(peer);
	shutdown(statsfd_fd(s.v[0].ev), SHUT_WR);
	cli_changes_reset(&ch);
	r = cli_wait(&s, 2000, &ch);
	tap_ok(r == 1 && s.n == 2 && find(&s, VM_ID) < 0 && rescans == 2,
	       "POLLHUP on the VM's fd: the VM dropped, no rescan");
	close(wr0);
	close(new_vcpu_wr);
	cli_changes_reset(&ch);
	for (i = 0; i < 10 && s.n; i++)
		cli_wait(&s, 500, &ch);
	tap_ok(s.n == 0 && ch.ngone == 2, "its vCPUs hang up too: no source left");
	cli_changes_reset(&ch);
	cli_free_sources(&s);
	close_writers();
}

static void test_stats(void)
{
	static const char *const stats[] = { "io_exits", "halt_exits" };
	struct cli_sources s = { 0 };
	struct cli_changes ch = { 0 };
	int peer, wr0, wr1, vcpu0_view_wr, fds;

	s.watch = true;
	s.stats = stats;
	s.nstats = 2;
	fds = fake_count_fds();
	add(&s, vm_source(&peer), "vm", -1, 4242);
	add(&s, vcpu_source(0, &wr0), "vcpu", 0, 4242);
	fake_view_mode = FAKE_VIEW_PIPE;
	fake_view_calls = 0;
	cli_prepare(&s, 0);
	vcpu0_view_wr = fake_view_writer;
	tap_ok(s.n == 2 && s.v[0].hidden && !s.v[0].ev &&
	       statsfd_view_kind(s.v[0].sf) == STATSFD_VIEW_NONE,
	       "--stats: the VM has none of them: not shown, still waited on");
	tap_ok(fake_view_calls == 1 && fake_last_view.args.flags == 0 &&
	       fake_last_view.args.count == 2 &&
	       !strcmp(fake_last_view.names[0], "io_exits") &&
	       !strcmp(fake_last_view.names[1], "halt_exits") &&
	       statsfd_view_kind(s.v[1].sf) == STATSFD_VIEW_KERNEL && !s.v[1].ev &&
	       statsfd_num_stats(s.v[1].sf) == 2 && !s.no_views,
	       "--stats io_exits,halt_exits: the vCPU read through a view by names, in that order, one fd");
	tap_ok(fake_count_fds() == fds + 3 + 2,
	       "fds: the VM's, the vCPU's view (its original closed), and the test's 2 ends");

	/* The vCPU's view hangs up: it polls like its source. */
	close(vcpu0_view_wr);
	tap_ok(cli_wait(&s, 2000, &ch) == 1 && s.n == 1 && ch.ngone == 1,
	       "POLLHUP on the vCPU's view: dropped");
	cli_changes_reset(&ch);

	/* A new vCPU found after a change gets its view too; ENOTTY: emulated. */
	fake_view_errno = ENOTTY;
	new_vcpu = vcpu_source(2, &wr1);
	fake_children_changed(peer);
	tap_ok(cli_wait(&s, 2000, &ch) == 1 && ch.nadded == 2 && s.n == 3 &&
	       statsfd_view_kind(s.v[2].sf) == STATSFD_VIEW_EMULATED &&
	       statsfd_num_stats(s.v[2].sf) == 2 && s.no_views == 2,
	       "POLLPRI with --stats: new sources get views (emulated where the fd has none)");
	fake_view_errno = EMFILE;
	close(wr0);
	new_vcpu = vcpu_source(3, &wr0);
	fake_children_changed(peer);
	tap_ok(cli_wait(&s, 2000, &ch) == 1 && s.n == 3 &&
	       find(&s, VM_ID "/vcpu-3") < 0,
	       "a view that cannot be made (EMFILE): that source is dropped, with a message");
	fake_view_errno = 0;
	fake_view_mode = FAKE_VIEW_MEMFD;
	cli_changes_reset(&ch);
	cli_free_sources(&s);
	close(peer);
	close(wr1);
	close(wr0);
	close_writers();
	tap_ok(fake_count_fds() == fds, "no fd left behind");
}

int main(void)
{
	fake_install();
	cli_rescan = fake_rescan;
	test_events();
	test_stats();
	fake_uninstall();
	return tap_done();
}
