// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_vm run loop: drive a vCPU through the synthetic workload of one
 * STATSFD_VM_RUN and update its stats where a hypervisor would (modelled on
 * KVM's vcpu_run(), kvm_vcpu_halt() and kvm_vcpu_block()).
 */
#include <linux/atomic.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/wait.h>

#include "internal.h"

enum statsfd_vm_exit_reason {
	STATSFD_VM_EXIT_IO,
	STATSFD_VM_EXIT_MMIO,
	STATSFD_VM_EXIT_HYPERCALL,
	STATSFD_VM_EXIT_HALT,
};

/**
 * statsfd_vm_run_check() - validate the argument of STATSFD_VM_RUN
 * @run: the argument, copied from userspace
 *
 * Return: 0, or -EINVAL if a flag or reserved field is set or a value is
 * out of its documented range.
 */
int statsfd_vm_run_check(const struct statsfd_vm_run *run)
{
	u64 total;

	if (run->flags || run->reserved0 ||
	    memchr_inv(run->reserved, 0, sizeof(run->reserved)))
		return -EINVAL;
	/*
	 * Per-exit amounts are bounded so that one run of at most
	 * STATSFD_VM_RUN_EXITS_MAX (2^32) exits adds at most 2^44 to io_bytes
	 * and 2^62 to guest_cycles: no single RUN can wrap a counter.
	 */
	if (run->io_bytes > STATSFD_VM_IO_BYTES_MAX ||
	    run->cycles_per_exit > STATSFD_VM_CYCLES_PER_EXIT_MAX ||
	    run->halt_poll_ns > READ_ONCE(statsfd_vm_halt_poll_ns_max) ||
	    run->halt_timeout_ns > STATSFD_VM_HALT_TIMEOUT_NS_MAX)
		return -EINVAL;
	/* Each count is checked first, so the sum cannot wrap. */
	if (run->io_exits > STATSFD_VM_RUN_EXITS_MAX ||
	    run->mmio_exits > STATSFD_VM_RUN_EXITS_MAX ||
	    run->hypercall_exits > STATSFD_VM_RUN_EXITS_MAX ||
	    run->halt_exits > STATSFD_VM_RUN_EXITS_MAX)
		return -EINVAL;
	total = run->io_exits + run->mmio_exits + run->hypercall_exits;
	total += run->halt_exits;
	if (total > STATSFD_VM_RUN_EXITS_MAX)
		return -EINVAL;
	return 0;
}

/**
 * statsfd_vm_vcpu_kick() - STATSFD_VM_KICK: wake the vCPU's halt
 * @vcpu: the vCPU
 *
 * Leaves a wakeup pending and wakes the vCPU if it sleeps.  A halted vCPU
 * consumes the wakeup and resumes; if none is halted, the next halt finds
 * it at once (in its poll, if it polls).  Kicks do not add up.  Never takes
 * the vCPU's mutex: RUN holds it for as long as the halt lasts.
 */
void statsfd_vm_vcpu_kick(struct statsfd_vm_vcpu *vcpu)
{
	statsfd_vm_vm_stat_add(vcpu->vm, &vcpu->vm->stats.kicks, 1);
	/*
	 * The store is ordered before the waker's check of the queue by
	 * wake_up()'s lock, and the halt's load after its prepare_to_wait().
	 */
	atomic_set(&vcpu->kick, 1);
	wake_up(&vcpu->wq);
}

static bool statsfd_vm_take_kick(struct statsfd_vm_vcpu *vcpu)
{
	/* Read first: polling must not keep dirtying the line it polls. */
	return atomic_read(&vcpu->kick) && atomic_xchg(&vcpu->kick, 0);
}

/*
 * Sleep until kicked, signalled or (@timeout_ns non-zero) @timeout_ns have
 * passed.  *@waited tells whether the vCPU went to sleep at all; it does
 * unless a kick or a signal is already pending, so a timed halt always
 * sleeps, for at least @timeout_ns (hrtimers never fire early).
 */
static int statsfd_vm_block(struct statsfd_vm_vcpu *vcpu, u64 timeout_ns,
			    bool *waited, bool *kicked)
{
	DEFINE_WAIT(wait);
	ktime_t expires = 0;
	int ret = 0;

	if (timeout_ns)
		expires = ktime_add_ns(ktime_get(), timeout_ns);

	statsfd_vm_window_begin(vcpu, vcpu->windows);
	statsfd_vm_stat_set(&vcpu->stats.blocking, 1);
	statsfd_vm_window_end(vcpu, vcpu->windows);
	for (;;) {
		prepare_to_wait(&vcpu->wq, &wait, TASK_INTERRUPTIBLE);
		if (statsfd_vm_take_kick(vcpu)) {
			*kicked = true;
			break;
		}
		if (signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (*waited && timeout_ns &&
		    !ktime_before(ktime_get(), expires))
			break;
		*waited = true;
		if (timeout_ns)
			schedule_hrtimeout(&expires, HRTIMER_MODE_ABS);
		else
			schedule();
	}
	finish_wait(&vcpu->wq, &wait);
	statsfd_vm_window_begin(vcpu, vcpu->windows);
	statsfd_vm_stat_set(&vcpu->stats.blocking, 0);
	statsfd_vm_window_end(vcpu, vcpu->windows);
	return ret;
}

/* Like KVM's update_halt_poll_stats(). */
static void statsfd_vm_halt_poll_stats(struct statsfd_vm_vcpu *vcpu,
				       u64 poll_ns, bool success, bool kicked)
{
	struct statsfd_vm_vcpu_stats *stats = &vcpu->stats;

	statsfd_vm_stat_add(&stats->halt_attempted_poll, 1);
	if (success) {
		statsfd_vm_stat_add(&stats->halt_successful_poll, 1);
		/* Ended early, but by a signal: the vCPU is not runnable. */
		if (!kicked)
			statsfd_vm_stat_add(&stats->halt_poll_invalid, 1);
		statsfd_vm_stat_add(&stats->halt_poll_success_ns, poll_ns);
		statsfd_vm_stat_loghist(stats->halt_poll_success_hist, poll_ns);
	} else {
		statsfd_vm_stat_add(&stats->halt_poll_fail_ns, poll_ns);
		statsfd_vm_stat_loghist(stats->halt_poll_fail_hist, poll_ns);
	}
}

/*
 * A halt, as kvm_vcpu_halt(): poll for a kick for up to @poll_ns, then
 * sleep.  As in KVM, a poll is successful when the vCPU never slept, even
 * if the kick came after the poll loop itself.  Return: 0 when the halt
 * ended by a kick or a timeout, -EINTR when a signal is pending.
 */
static int statsfd_vm_halt(struct statsfd_vm_vcpu *vcpu, u64 poll_ns,
			   u64 timeout_ns)
{
	struct statsfd_vm_vcpu_stats *stats = &vcpu->stats;
	bool waited = false, kicked = false;
	ktime_t start, cur, poll_end;
	u64 wait_ns;
	int ret = 0;

	start = ktime_get();
	cur = start;
	poll_end = start;
	if (poll_ns) {
		ktime_t stop = ktime_add_ns(start, poll_ns);

		do {
			if (statsfd_vm_take_kick(vcpu)) {
				kicked = true;
				goto out;
			}
			if (signal_pending(current)) {
				ret = -EINTR;
				goto out;
			}
			cpu_relax();
			cur = ktime_get();
			poll_end = cur;
		} while (!need_resched() && ktime_before(cur, stop));
	}

	ret = statsfd_vm_block(vcpu, timeout_ns, &waited, &kicked);
	cur = ktime_get();
out:
	/* The halt's outcome, all of it in one window. */
	statsfd_vm_window_begin(vcpu, vcpu->windows);
	if (waited) {
		wait_ns = ktime_to_ns(ktime_sub(cur, poll_end));
		statsfd_vm_stat_add(&stats->halt_wait_ns, wait_ns);
		statsfd_vm_stat_loghist(stats->halt_wait_hist, wait_ns);
		statsfd_vm_stat_max(&stats->max_halt_wait_ns, wait_ns);
		if (kicked)
			statsfd_vm_stat_add(&stats->halt_wakeup, 1);
	}
	if (poll_ns) {
		poll_ns = ktime_to_ns(ktime_sub(poll_end, start));
		statsfd_vm_halt_poll_stats(vcpu, poll_ns, !waited, kicked);
	}
	statsfd_vm_window_end(vcpu, vcpu->windows);
	return ret;
}

/*
 * The synthetic exit handler: what the hypervisor "emulates" for the exit.
 * It only advances a per-vCPU LCG, but that state is stored, so the
 * compiler can drop neither the loop nor the handler.
 */
static void statsfd_vm_handle_exit(struct statsfd_vm_vcpu *vcpu,
				   enum statsfd_vm_exit_reason reason,
				   const struct statsfd_vm_run *run)
{
	struct statsfd_vm_vcpu_stats *stats = &vcpu->stats;
	u64 state = vcpu->guest_state;

	/* Inside the caller's window: exits and exits by reason together. */
	statsfd_vm_stat_add(&stats->exits, 1);
	statsfd_vm_stat_add(&stats->guest_cycles, run->cycles_per_exit);
	switch (reason) {
	case STATSFD_VM_EXIT_IO:
		statsfd_vm_stat_add(&stats->io_exits, 1);
		statsfd_vm_stat_add(&stats->io_bytes, run->io_bytes);
		state += run->io_bytes;
		break;
	case STATSFD_VM_EXIT_MMIO:
		statsfd_vm_stat_add(&stats->mmio_exits, 1);
		state ^= state >> 17;
		break;
	case STATSFD_VM_EXIT_HYPERCALL:
		statsfd_vm_stat_add(&stats->hypercall_exits, 1);
		state += 0x9e3779b97f4a7c15ULL;
		break;
	case STATSFD_VM_EXIT_HALT:
		statsfd_vm_stat_add(&stats->halt_exits, 1);
		break;
	}
	vcpu->guest_state = state * 6364136223846793005ULL + reason + 1;
}

/**
 * statsfd_vm_vcpu_run() - STATSFD_VM_RUN: run the workload of @run
 * @vcpu: the vCPU, its mutex held: the caller is the only stats writer
 * @run: the validated workload
 * @exits_done: set to the workload exits taken, the signal exit not included
 *
 * Takes @run's exits in the order io, mmio, hypercall, halt.  Before the
 * first exit and every STATSFD_VM_SIGNAL_CHECK_EXITS exits it reschedules if
 * needed and checks for a signal, as KVM does before each guest entry;
 * halts check for one while they poll and sleep.  A pending signal ends
 * the run with a signal exit.  The exits of the run, that one included, go
 * into run_exits_hist and max_run_exits.
 *
 * Every stats write here is a plain add, published with WRITE_ONCE() for
 * lockless readers, to this vCPU's own stats: a count shared with other
 * vCPUs (the device's, or the VM's) would put one cache line written by
 * every RUN on every CPU in this path.  The writes are grouped in update
 * windows, so that a reader sees each group whole: one at the start of
 * the run (runs); one per stretch of exits handled back to back between
 * two guest entries, i.e. the at most STATSFD_VM_SIGNAL_CHECK_EXITS exits
 * between two signal checks, closed early before a halt; per change of
 * blocking and per halt outcome; and one at the end of the run.  No
 * window spans a guest entry or a sleep, as a hypervisor's would close
 * before VM entry, and the per-exit cost of a window is two stores per
 * stretch, not per exit.  A test build's update_windows parameter (read
 * here, once per run: statsfd_vm_windows_on()) turns them off, to
 * measure their cost and to show what a reader sees without them.
 *
 * Return: 0 when the whole workload ran, -EINTR when a signal ended it.
 */
int statsfd_vm_vcpu_run(struct statsfd_vm_vcpu *vcpu,
			const struct statsfd_vm_run *run, u64 *exits_done)
{
	const struct {
		enum statsfd_vm_exit_reason reason;
		u64 count;
	} phases[] = {
		{ STATSFD_VM_EXIT_IO, run->io_exits },
		{ STATSFD_VM_EXIT_MMIO, run->mmio_exits },
		{ STATSFD_VM_EXIT_HYPERCALL, run->hypercall_exits },
		{ STATSFD_VM_EXIT_HALT, run->halt_exits },
	};
	struct statsfd_vm_vcpu_stats *stats = &vcpu->stats;
	u64 done = 0, i;
	bool windows, open = false;
	size_t phase;
	int ret = 0;

	vcpu->windows = statsfd_vm_windows_on();
	windows = vcpu->windows;
	statsfd_vm_window_begin(vcpu, windows);
	statsfd_vm_stat_add(&stats->runs, 1);
	statsfd_vm_window_end(vcpu, windows);

	for (phase = 0; phase < ARRAY_SIZE(phases); phase++) {
		for (i = 0; i < phases[phase].count; i++) {
			if (done % STATSFD_VM_SIGNAL_CHECK_EXITS == 0) {
				/* "Guest entry": the stretch's window closes. */
				if (open) {
					statsfd_vm_window_end(vcpu, windows);
					open = false;
				}
				if (signal_pending(current)) {
					ret = -EINTR;
					goto out;
				}
				cond_resched();
			}
			if (!open) {
				statsfd_vm_window_begin(vcpu, windows);
				open = true;
			}
			statsfd_vm_handle_exit(vcpu, phases[phase].reason, run);
			done++;
			if (phases[phase].reason == STATSFD_VM_EXIT_HALT) {
				/* A halt sleeps: never inside a window. */
				statsfd_vm_window_end(vcpu, windows);
				open = false;
				ret = statsfd_vm_halt(vcpu, run->halt_poll_ns,
						      run->halt_timeout_ns);
				if (ret)
					goto out;
			}
		}
	}
out:
	*exits_done = done;
	/* The last stretch and the run's end: one window. */
	if (!open)
		statsfd_vm_window_begin(vcpu, windows);
	if (ret == -EINTR) {
		/* KVM_EXIT_INTR: back to userspace to handle the signal. */
		statsfd_vm_stat_add(&stats->exits, 1);
		statsfd_vm_stat_add(&stats->signal_exits, 1);
		done++;
	}
	statsfd_vm_stat_linhist(stats->run_exits_hist, done,
				STATSFD_VM_RUN_HIST_BUCKET);
	statsfd_vm_stat_max(&stats->max_run_exits, done);
	statsfd_vm_window_end(vcpu, windows);
	return ret;
}
