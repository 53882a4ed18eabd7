// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b8": what update windows cost the provider's run
 * loop (issue 11).  The same module and the same vCPU, with the
 * statsfd_vm.update_windows parameter set to Y and to N in turn between
 * measurements (the run loop reads it once per RUN): the marginal cost of
 * one exit, measured as B4 does, as the slope between runs of two lengths.
 * With windows, every stretch of up to 256 exits between two "guest
 * entries" (the loop's signal checks) is one window: two stores of the
 * sequence count, write barriers and a test for a waiting reader per
 * stretch, not per exit; without, the same stats updates and nothing else.
 *
 * The sequence count in the vCPU's mapping tells that the parameter took
 * effect: a run with windows advances it by 2 per window (one per
 * stretch, plus one at the start of the run), a run without leaves it
 * alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

static const char b8_param[] = "/sys/module/statsfd_vm/parameters/update_windows";

/*
 * Exits of one stretch between two "guest entries" of the run loop
 * (STATSFD_VM_SIGNAL_CHECK_EXITS in src/vm/internal.h): one update window
 * covers a stretch.
 */
#define B8_STRETCH	256

/*
 * Windows of one run of @exits exits without halts or signals: one at the
 * start (runs), one per stretch, the last of which also holds the run's
 * end (or, with no exits, a window of its own for the end).
 */
static uint64_t b8_windows_per_run(uint64_t exits)
{
	return exits ? 1 + (exits + B8_STRETCH - 1) / B8_STRETCH : 2;
}

void phase_b8(uint64_t exits)
{
	double sample[2][MAX_ROUNDS], whole[2][MAX_ROUNDS];
	uint64_t shorter = exits / 5, seq_bad[2] = { 0, 0 };
	const struct statsfd_mmap_header *h;
	int dev, vm, vcpu, sfd, r, k, nr = rounds;
	size_t len;

	jbegin("b8");
	jnum("exits_per_run", exits);
	jnum("exits_per_short_run", shorter);
	jstr("param", b8_param);
	if (access(b8_param, W_OK)) {
		jstr("error", "update_windows parameter not writable");
		jend();
		return;
	}
	dev = vm_dev();
	vm = vm_create(dev);
	vcpu = vcpu_create(vm, 0);
	sfd = stats_fd(vcpu);
	h = stats_map(sfd, &len);
	if (!h)
		die("mmap of the vCPU stats fd");
	for (k = 0; k < 2; k++) {
		if (!write_param(b8_param, k ? "Y" : "N"))
			die("write %s", b8_param);
		for (r = 0; r < 3; r++)
			if (vcpu_run_exits(vcpu, exits))
				die("STATSFD_VM_RUN");
	}

	/*
	 * Each round measures both settings, in an order that alternates
	 * from round to round, so that drift favours neither.  k = 1: on.
	 */
	for (r = 0; r < nr; r++) {
		int i;

		for (i = 0; i < 2; i++) {
			double t0, t1, t2;
			uint64_t s0, s1, want;

			k = (r & 1) ^ i;
			if (!write_param(b8_param, k ? "Y" : "N"))
				die("write %s", b8_param);
			s0 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
			t0 = now_ns();
			if (vcpu_run_exits(vcpu, exits))
				die("STATSFD_VM_RUN");
			t1 = now_ns();
			if (vcpu_run_exits(vcpu, shorter))
				die("STATSFD_VM_RUN");
			t2 = now_ns();
			s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
			sample[k][r] = ((t1 - t0) - (t2 - t1)) /
				       (exits - shorter);
			whole[k][r] = (t1 - t0) / exits;
			want = k ? 2 * (b8_windows_per_run(exits) +
					b8_windows_per_run(shorter)) : 0;
			seq_bad[k] += s1 - s0 != want;
		}
	}
	/* Leave the default behind for the phases that follow. */
	if (!write_param(b8_param, "Y"))
		die("write %s", b8_param);

	jnum("rounds", nr);
	for (k = 1; k >= 0; k--) {
		jopen(k ? "on" : "off", '{');
		jnum("ns_per_exit", median_of(sample[k], nr));
		jnum("p25_ns_per_exit", quantile_of(sample[k], nr, 0.25));
		jnum("p75_ns_per_exit", quantile_of(sample[k], nr, 0.75));
		jnum("ns_per_exit_with_run_overhead", median_of(whole[k], nr));
		jnum("rounds_with_unexpected_seq", seq_bad[k]);
		jopen("samples", '[');
		for (r = 0; r < nr; r++)
			jnum(NULL, sample[k][r]);
		jclose(']');
		jclose('}');
	}
	jnum("ratio", median_of(sample[1], nr) / median_of(sample[0], nr));
	jend();
	munmap((void *)h, len);
	close(sfd);
	close(vcpu);
	close(vm);
	close(dev);
}
