// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b8": what update windows cost the provider's run
 * loop.  The same module and the same vCPU, with the
 * statsfd_vm.update_windows parameter set to Y and to N in turn between
 * measurements (the run loop reads it once per RUN): the marginal cost of
 * one exit, measured as B4 does, as the slope between runs of two lengths.
 * With windows, every stretch of up to 256 exits between two "guest
 * entries" (the loop's signal checks) is one window, and its end
 * publishes the vCPU's live values (statsfd_update_end(): two write
 * barriers, a copy of the values into the copy readers are not using and
 * a store of the count) per stretch, not per exit; without, the same
 * stats updates into the live values and nothing else: nothing is
 * published, and readers see no change.
 *
 * The vCPU's mapping tells that the parameter took effect: a run with
 * windows advances its count by 1 per window (one per stretch, plus one
 * at the start of the run) and publishes the exits run so far; a run
 * without leaves both the count and the published values alone.
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

/* The published "exits" of the vCPU, as a mapped reader sees it. */
static uint64_t b8_published_exits(const struct statsfd_mmap_header *h,
				   uint32_t idx)
{
	uint64_t seq, v;

	do {
		seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		v = __atomic_load_n(&stats_map_values(h, seq)[idx],
				    __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != seq);
	return v;
}

void phase_b8(uint64_t exits)
{
	double sample[2][MAX_ROUNDS], whole[2][MAX_ROUNDS];
	uint64_t shorter = exits / 5, seq_bad[2] = { 0, 0 };
	uint64_t values_bad[2] = { 0, 0 }, total = 0;
	const struct statsfd_mmap_header *h;
	const struct statsfd_desc *d;
	int dev, vm, vcpu, sfd, r, k, nr = rounds;
	struct sfile sf;
	uint32_t exits_idx;
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
	sfile_open(&sf, dup(sfd));
	d = sfile_find(&sf, "exits");
	if (!d || d->offset + 8 > h->data_size)
		die("b8: no mapped \"exits\" stat");
	exits_idx = d->offset / 8;
	sfile_close(&sf);
	/* Ends with windows on: the warm-up's exits all published. */
	for (k = 0; k < 2; k++) {
		if (!write_param(b8_param, k ? "Y" : "N"))
			die("write %s", b8_param);
		for (r = 0; r < 3; r++) {
			if (vcpu_run_exits(vcpu, exits))
				die("STATSFD_VM_RUN");
			total += exits;
		}
	}

	/*
	 * Each round measures both settings, in an order that alternates
	 * from round to round, so that drift favours neither.  k = 1: on.
	 */
	for (r = 0; r < nr; r++) {
		int i;

		for (i = 0; i < 2; i++) {
			uint64_t s0, s1, want, e0, e1;

			k = (r & 1) ^ i;
			if (!write_param(b8_param, k ? "Y" : "N"))
				die("write %s", b8_param);
			s0 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
			e0 = b8_published_exits(h, exits_idx);
			sample[k][r] = vcpu_exit_ns(vcpu, exits, shorter, &whole[k][r]);
			total += exits + shorter;
			s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
			e1 = b8_published_exits(h, exits_idx);
			want = k ? b8_windows_per_run(exits) +
				   b8_windows_per_run(shorter) : 0;
			seq_bad[k] += s1 - s0 != want;
			/*
			 * Off: nothing published, the exits readers see stand
			 * still.  On: every exit run so far is published,
			 * those of the runs without windows included.
			 */
			values_bad[k] += k ? e1 != total : e1 != e0;
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
		jnum("rounds_with_unexpected_published_exits", values_bad[k]);
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
