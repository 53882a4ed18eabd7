// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b14": snapshot reader latency under a stalled
 * writer.  Since the seqcount latch (version 2 of the mapped area), a
 * reader copies the values the writer last published and never waits for
 * the writer: not when it runs, not when it is preempted in the middle of
 * an update window, not when it is stopped.  This measures that.
 *
 * The writer: vCPU 0 of a statsfd_vm VM, run by a child process pinned to
 * the last CPU, in long RUNs of I/O exits (one update window per stretch
 * of up to 256 exits).  The readers: this process, pinned to CPU 0,
 * timing single reads of three kinds, interleaved:
 *
 * - vcpu_pread: one pread() of the vCPU's whole data block;
 * - vm_aggregates_pread: one pread() of the VM's aggregates (computed at
 *   read time over one snapshot of the vCPU);
 * - mmap_copy: statsfd_mmap_copy() (the uapi header's latch reader) of
 *   all of the vCPU's mapped values.
 *
 * The writer's three states, each measured in B14_TURNS turns that
 * alternate with the others' so that drift favours none:
 *
 * - running: alone on its CPU;
 * - preempted: the writer SCHED_IDLE and a busy-loop process pinned to its
 *   CPU, so that it runs in rare slices and is preempted wherever the
 *   tick finds it, inside windows most of the time (the run loop is
 *   almost all window; the guest boots with preempt=full);
 * - stopped: SIGSTOP (the writer is a process of its own for that), until
 *   waitpid() reports it stopped.
 *
 * Per state and kind: p50, p99 and max of the read latency, errors (EAGAIN
 * apart: the kernel no longer has it, so any is a failure) and copies that
 * did not hold together (exits != the sum of exits by reason, in the vCPU
 * values and in the VM's sums).  report.py judges p99 in each stalled
 * state against p99 with the writer running (target <= 2x) and the errors
 * (target 0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/statsfd.h>
#include <linux/statsfd_vm.h>

#include "bench.h"
#include "spawn.h"

/* Turns per state; the states alternate turn by turn. */
#define B14_TURNS	5

enum { B14_RUNNING, B14_PREEMPTED, B14_STOPPED, B14_STATES };
enum { B14_VCPU, B14_VM_AGG, B14_MMAP, B14_KINDS };

static const char *const b14_state[] = { "running", "preempted", "stopped" };
static const char *const b14_kind[] = { "vcpu_pread", "vm_aggregates_pread",
					"mmap_copy" };

/**
 * struct b14_series - the reads of one kind in one writer state
 * @ns: latency of each read
 * @n: reads so far
 * @errors: reads that failed (EAGAIN apart) or were short
 * @eagain: reads that failed with EAGAIN
 * @torn: reads whose values did not hold together
 */
struct b14_series {
	double *ns;
	int n;
	uint64_t errors, eagain, torn;
};

/**
 * struct b14_sum - offsets (u64 index) of "exits" and of its parts
 * @total: exits (or exits_sum)
 * @parts: io, mmio, hypercall, halt and signal exits (or their sums)
 * @ok: all six found
 */
struct b14_sum {
	uint32_t total, parts[5];
	bool ok;
};

/* Find "exits<suffix>" and its parts in @s, relative to @base bytes. */
static void b14_sum_init(struct b14_sum *k, const struct sfile *s,
			 const char *suffix, uint32_t base)
{
	static const char *const parts[] = { "io_exits", "mmio_exits",
		"hypercall_exits", "halt_exits", "signal_exits" };
	struct statsfd_desc *d;
	char name[64];
	size_t i;

	k->ok = false;
	snprintf(name, sizeof(name), "exits%s", suffix);
	d = sfile_find(s, name);
	if (!d || d->offset < base)
		return;
	k->total = (d->offset - base) / 8;
	for (i = 0; i < ARRAY_SIZE(parts); i++) {
		snprintf(name, sizeof(name), "%s%s", parts[i], suffix);
		d = sfile_find(s, name);
		if (!d || d->offset < base)
			return;
		k->parts[i] = (d->offset - base) / 8;
	}
	k->ok = true;
}

static bool b14_sum_holds(const struct b14_sum *k, const uint64_t *v)
{
	uint64_t sum = 0;
	size_t i;

	if (!k->ok)
		return true;
	for (i = 0; i < ARRAY_SIZE(k->parts); i++)
		sum += v[k->parts[i]];
	return v[k->total] == sum;
}

static void b14_pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(pid, sizeof(set), &set))
		die("sched_setaffinity(%d, CPU %d)", (int)pid, cpu);
}

/* Set @pid's scheduling policy (priority 0); false on failure. */
static bool b14_policy(pid_t pid, int policy)
{
	struct sched_param sp = { 0 };

	return !sched_setscheduler(pid, policy, &sp);
}

/*
 * A child process pinned to @cpu, which never outlives the bench, whatever
 * ends it.  Return: its pid in the parent, 0 in the child.
 */
static pid_t b14_child(int cpu, const char *what)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork (%s)", what);
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	b14_pin(0, cpu);
	return 0;
}

/* The writer: a child process running vCPU @vcpu on @cpu until killed. */
static pid_t b14_writer(int vcpu, int cpu)
{
	struct statsfd_vm_run run = {
		.io_exits = 1ULL << 30,
		.io_bytes = 4,
		.cycles_per_exit = 1000,
	};
	pid_t pid = b14_child(cpu, "writer");

	if (pid)
		return pid;
	/* A stop or another signal ends a RUN with EINTR: run again. */
	for (;;)
		if (ioctl(vcpu, STATSFD_VM_RUN, &run) && errno != EINTR)
			_exit(1);
}

/* The CPU hog of the preempted state: a busy loop on @cpu until killed. */
static pid_t b14_hog(int cpu)
{
	pid_t pid = b14_child(cpu, "hog");

	if (pid)
		return pid;
	for (;;)
		__asm__ __volatile__("" ::: "memory");
}

static void b14_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The field "nonvoluntary_ctxt_switches" of /proc/@pid/status, or 0. */
static uint64_t b14_preemptions(pid_t pid)
{
	long v = proc_status(pid, "nonvoluntary_ctxt_switches");

	return v > 0 ? (uint64_t)v : 0;
}

/* The kernel's preemption model, from debugfs or the command line. */
static void b14_preempt_model(char *out, size_t len)
{
	char line[512], *p = NULL, *e = NULL;
	FILE *f = fopen("/sys/kernel/debug/sched/preempt", "r");

	snprintf(out, len, "unknown");
	if (f) {
		/* "none voluntary (full)": the current one in parentheses. */
		if (fgets(line, sizeof(line), f))
			p = strchr(line, '(');
		if (p)
			e = strchr(p, ')');
		if (e) {
			*e = '\0';
			snprintf(out, len, "%s", p + 1);
		}
		fclose(f);
		return;
	}
	f = fopen("/proc/cmdline", "r");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f))
		p = strstr(line, "preempt=");
	if (p) {
		p += strlen("preempt=");
		p[strcspn(p, " \n")] = '\0';
		snprintf(out, len, "%s (command line)", p);
	}
	fclose(f);
}

struct b14_ctx {
	struct sfile vcpu, vm;
	const struct statsfd_mmap_header *h;
	uint32_t agg_lo, agg_hi;
	struct b14_sum vcpu_sum, vm_sum;
	uint64_t *v;
};

/* One read of @kind, timed, into @s. */
static void b14_read(struct b14_ctx *x, int kind, struct b14_series *s)
{
	ssize_t want, got = 0;
	double t0, t1;
	bool ok;
	int e = 0;

	t0 = now_ns();
	switch (kind) {
	case B14_VCPU:
		want = x->vcpu.data_size;
		got = pread(x->vcpu.fd, x->v, want, x->vcpu.h.data_offset);
		break;
	case B14_VM_AGG:
		want = x->agg_hi - x->agg_lo;
		got = pread(x->vm.fd, x->v, want,
			    x->vm.h.data_offset + x->agg_lo);
		break;
	default:
		want = x->h->data_size;
		if (!statsfd_mmap_copy(x->h, x->v, 0, want, NULL))
			got = want;
		else
			errno = EPROTO;
		break;
	}
	if (got < 0)
		e = errno;
	t1 = now_ns();
	s->ns[s->n++] = t1 - t0;
	if (got != want) {
		if (e == EAGAIN)
			s->eagain++;
		else
			s->errors++;
		return;
	}
	ok = b14_sum_holds(kind == B14_VM_AGG ? &x->vm_sum : &x->vcpu_sum,
			   x->v);
	s->torn += !ok;
}

static int cmp_ns(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @q quantile of @s's sorted latencies (nearest rank above). */
static double b14_quantile(const struct b14_series *s, double q)
{
	int i = (int)(q * s->n);

	if (!s->n)
		return 0;
	return s->ns[i < s->n ? i : s->n - 1];
}

void phase_b14(int samples)
{
	static struct b14_series ser[B14_STATES][B14_KINDS];
	uint64_t seq0, windows[B14_STATES] = { 0 }, preempt[B14_STATES] = { 0 };
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), wcpu, dev, vm, vcpu;
	int per_turn, turn, st, k, i;
	struct b14_ctx x = { 0 };
	const char *error = NULL;
	char model[64];
	pid_t writer, hog;
	size_t len = 0;
	uint32_t d;

	jbegin("b14");
	jnum("cpus", ncpu);
	b14_preempt_model(model, sizeof(model));
	jstr("preempt", model);
	if (ncpu < 2) {
		jstr("error", "needs 2 CPUs: the writer's and the readers'");
		jend();
		return;
	}
	if (samples < B14_TURNS)
		samples = B14_TURNS;
	per_turn = samples / B14_TURNS;
	samples = per_turn * B14_TURNS;
	wcpu = ncpu - 1;
	jnum("writer_cpu", wcpu);
	jnum("reader_cpu", 0);
	jnum("turns_per_state", B14_TURNS);
	jnum("reads_per_kind_and_state", samples);
	b14_pin(0, 0);

	dev = vm_dev();
	vm = vm_create(dev);
	vcpu = vcpu_create(vm, 0);
	if (vcpu_run_exits(vcpu, 3000))
		die("STATSFD_VM_RUN");
	sfile_open(&x.vcpu, stats_fd(vcpu));
	sfile_open(&x.vm, stats_fd(vm));
	x.h = stats_map(x.vcpu.fd, &len);
	if (!x.h)
		die("mmap of the vCPU stats fd");
	/* The VM's aggregates: from the first to the end of the last. */
	x.agg_lo = x.vm.data_size;
	x.agg_hi = 0;
	for (d = 0; d < x.vm.h.num_desc; d++) {
		struct statsfd_desc *desc = sfile_desc(&x.vm, d);

		if (!(desc->flags & STATSFD_AGG_MASK))
			continue;
		if (desc->offset < x.agg_lo)
			x.agg_lo = desc->offset;
		if (desc->offset + desc->size * 8 > x.agg_hi)
			x.agg_hi = desc->offset + desc->size * 8;
	}
	if (x.agg_hi <= x.agg_lo)
		die("b14: the VM's stats fd has no aggregates");
	b14_sum_init(&x.vcpu_sum, &x.vcpu, "", 0);
	b14_sum_init(&x.vm_sum, &x.vm, "_sum", x.agg_lo);
	jnum("vcpu_data_bytes", x.vcpu.data_size);
	jnum("vm_aggregate_bytes", x.agg_hi - x.agg_lo);
	jnum("mapped_bytes", x.h->data_size);
	jbool("vcpu_sum_checked", x.vcpu_sum.ok);
	jbool("vm_sum_checked", x.vm_sum.ok);
	x.v = (uint64_t *)buf;
	for (st = 0; st < B14_STATES; st++)
		for (k = 0; k < B14_KINDS; k++) {
			ser[st][k].ns = calloc(samples, sizeof(double));
			if (!ser[st][k].ns)
				die("calloc");
		}

	writer = b14_writer(vcpu, wcpu);
	/* Let the writer get going. */
	usleep(200000);
	fprintf(stderr, "b14: %d reads per kind and writer state, writer on CPU %d (%s)\n",
		samples, wcpu, model);
	/*
	 * A failure past this point is reported in the JSON ("error") rather
	 * than fatal: the children are killed and the other phases go on.
	 */
	for (turn = 0; turn < B14_TURNS && !error; turn++) {
		for (i = 0; i < B14_STATES && !error; i++) {
			uint64_t p0;
			int status;

			/* A new order of the states each turn. */
			st = (turn + i) % B14_STATES;
			hog = -1;
			if (waitpid(writer, &status, WNOHANG)) {
				error = "the writer exited (STATSFD_VM_RUN failed)";
				break;
			}
			if (st == B14_PREEMPTED) {
				if (!b14_policy(writer, SCHED_IDLE)) {
					error = "SCHED_IDLE refused for the writer";
					break;
				}
				hog = b14_hog(wcpu);
			} else if (st == B14_STOPPED) {
				kill(writer, SIGSTOP);
				if (waitpid(writer, &status, WUNTRACED) != writer ||
				    !WIFSTOPPED(status)) {
					error = "the writer did not stop";
					break;
				}
			}
			/* Let the state settle (the hog take the CPU). */
			usleep(50000);
			p0 = b14_preemptions(writer);
			seq0 = __atomic_load_n(&x.h->seq, __ATOMIC_ACQUIRE);
			for (k = 0; k < per_turn; k++) {
				int j;

				for (j = 0; j < B14_KINDS; j++) {
					int kind = (k + j) % B14_KINDS;

					b14_read(&x, kind, &ser[st][kind]);
				}
			}
			windows[st] += __atomic_load_n(&x.h->seq,
						       __ATOMIC_ACQUIRE) - seq0;
			preempt[st] += b14_preemptions(writer) - p0;
			if (st == B14_PREEMPTED) {
				b14_kill(hog);
				if (!b14_policy(writer, SCHED_OTHER))
					error = "SCHED_OTHER refused for the writer";
			} else if (st == B14_STOPPED) {
				kill(writer, SIGCONT);
				if (waitpid(writer, &status, WCONTINUED) != writer)
					error = "the writer did not continue";
			}
		}
	}
	b14_kill(writer);
	/* Without a running writer the comparison means nothing. */
	if (!error && !windows[B14_RUNNING])
		error = "the writer published no window while running";
	if (error) {
		fprintf(stderr, "b14: %s\n", error);
		jstr("error", error);
	}

	jopen("states", '{');
	for (st = 0; st < B14_STATES; st++) {
		jopen(b14_state[st], '{');
		jnum("writer_windows_published", windows[st]);
		jnum("writer_preemptions", preempt[st]);
		jopen("reads", '{');
		for (k = 0; k < B14_KINDS; k++) {
			struct b14_series *s = &ser[st][k];

			qsort(s->ns, s->n, sizeof(double), cmp_ns);
			jopen(b14_kind[k], '{');
			jnum("reads", s->n);
			jnum("p50_ns", b14_quantile(s, 0.5));
			jnum("p90_ns", b14_quantile(s, 0.9));
			jnum("p99_ns", b14_quantile(s, 0.99));
			jnum("max_ns", s->n ? s->ns[s->n - 1] : 0);
			jnum("errors", s->errors);
			jnum("eagain", s->eagain);
			jnum("inconsistent", s->torn);
			jclose('}');
			free(s->ns);
		}
		jclose('}');
		jclose('}');
	}
	jclose('}');
	jend();

	munmap((void *)x.h, len);
	sfile_close(&x.vcpu);
	sfile_close(&x.vm);
	close(vcpu);
	close(vm);
	close(dev);
}
