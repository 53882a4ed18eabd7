/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd_vm: types and helpers shared by the VM/vCPU provider's files.
 */
#ifndef _STATSFD_VM_INTERNAL_H
#define _STATSFD_VM_INTERNAL_H

#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/statsfd.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <uapi/linux/statsfd_vm.h>

struct dentry;

/* Buckets of every histogram of the provider. */
#define STATSFD_VM_HIST_BUCKETS 32
/* Width of a bucket of run_exits_hist, in exits. */
#define STATSFD_VM_RUN_HIST_BUCKET 64
/*
 * The run loop checks for a pending signal, and offers to reschedule,
 * before the first exit and then every this many exits.
 */
#define STATSFD_VM_SIGNAL_CHECK_EXITS 256

/**
 * struct statsfd_vm_vcpu_stats - live stats of one vCPU
 * @exits: every exit, including the signal exit that ends a run
 * @io_exits: port I/O exits
 * @mmio_exits: MMIO exits
 * @hypercall_exits: hypercall exits
 * @halt_exits: HLT exits
 * @signal_exits: runs ended by a pending signal (the run returned -EINTR)
 * @halt_successful_poll: polling halts that ended without sleeping
 * @halt_attempted_poll: halts that polled
 * @halt_poll_invalid: successful polls ended by a signal, not a kick
 * @halt_wakeup: halts that slept and were woken by a kick
 * @halt_poll_success_ns: time spent in successful polls
 * @halt_poll_fail_ns: time spent in polls that were followed by a sleep
 * @halt_wait_ns: time spent sleeping in halts
 * @halt_poll_success_hist: log2 histogram of successful poll times (ns)
 * @halt_poll_fail_hist: log2 histogram of failed poll times (ns)
 * @halt_wait_hist: log2 histogram of halt sleep times (ns)
 * @run_exits_hist: linear histogram of the exits of each run
 * @blocking: 1 while the vCPU sleeps in a halt
 * @max_run_exits: most exits taken by one run
 * @max_halt_wait_ns: longest sleep of one halt
 * @io_bytes: bytes moved by port I/O exits
 * @guest_cycles: synthetic guest cycles charged to the exits
 * @runs: STATSFD_VM_RUN calls that passed validation
 *
 * Written only by the thread inside STATSFD_VM_RUN on this vCPU (RUN is
 * serialized by &statsfd_vm_vcpu.mutex), and only through the
 * statsfd_vm_stat_*() helpers: plain adds published with WRITE_ONCE(),
 * grouped in update windows (statsfd_vm_window_begin()/_end()): one per
 * stretch of exits between two guest entries, halt step or run boundary
 * (see statsfd_vm_vcpu_run()).  Embedded in struct statsfd_vm_vcpu and
 * read by no one else: each window's end publishes a copy to the page the
 * core allocates for the vCPU's source (the schema is mappable), which
 * stats fds, the mapping and the debugfs view read lock-free.
 */
struct statsfd_vm_vcpu_stats {
	u64 exits;
	u64 io_exits;
	u64 mmio_exits;
	u64 hypercall_exits;
	u64 halt_exits;
	u64 signal_exits;
	u64 halt_successful_poll;
	u64 halt_attempted_poll;
	u64 halt_poll_invalid;
	u64 halt_wakeup;
	u64 halt_poll_success_ns;
	u64 halt_poll_fail_ns;
	u64 halt_wait_ns;
	u64 halt_poll_success_hist[STATSFD_VM_HIST_BUCKETS];
	u64 halt_poll_fail_hist[STATSFD_VM_HIST_BUCKETS];
	u64 halt_wait_hist[STATSFD_VM_HIST_BUCKETS];
	u64 run_exits_hist[STATSFD_VM_HIST_BUCKETS];
	u64 blocking;
	u64 max_run_exits;
	u64 max_halt_wait_ns;
	u64 io_bytes;
	u64 guest_cycles;
	u64 runs;
};

/**
 * struct statsfd_vm_vm_stats - a VM's own stats (aggregates come on top)
 * @vcpus_created: vCPUs created on the VM
 * @kicks: STATSFD_VM_KICK calls on its vCPUs
 * @stats_fds_open: open stats fds of the VM and of its vCPUs
 *
 * Any thread may update them (any thread kicks, opens or closes a stats
 * fd), so every update is one window under &statsfd_vm_vm.stats_lock,
 * with statsfd_vm_vm_stat_add().  None of them is on the vCPU hot path.
 * Embedded in struct statsfd_vm_vm; each window publishes a copy to the
 * page the core allocates for the VM's source, which the VM's stats fds
 * and mapping and the system's aggregates read lock-free.
 */
struct statsfd_vm_vm_stats {
	u64 vcpus_created;
	u64 kicks;
	u64 stats_fds_open;
};

/**
 * struct statsfd_vm_sys_stats - device-wide stats
 * @vms_created: VMs ever created
 * @vms_alive: VMs not yet freed (a VM lives while any of its fds is open)
 * @max_vms_alive: peak of @vms_alive
 * @vcpus_created: vCPUs ever created
 * @vcpus_alive: vCPUs not yet freed
 * @stats_fds_open: open stats fds of the provider (system, VM and vCPU)
 *
 * Updated from many threads, so only with statsfd_vm_counter_add() and
 * statsfd_vm_counter_peak(); none of them is on the vCPU hot path.  That
 * is why there is no device-wide count of runs: RUN would have to write
 * this cache line from every CPU.  Runs are counted per vCPU, and summed
 * per VM (runs_sum) when a VM's stats are read.
 */
struct statsfd_vm_sys_stats {
	u64 vms_created;
	u64 vms_alive;
	u64 max_vms_alive;
	u64 vcpus_created;
	u64 vcpus_alive;
	u64 stats_fds_open;
};

/**
 * struct statsfd_vm_vm - a VM: a set of vCPUs plus its stats
 * @users: references: the VM fd, every vCPU fd and every stats fd of the VM
 *	or of one of its vCPUs; the VM and its vCPUs are freed at zero
 * @handles: the VM fd and the vCPU fds still open: the VMM's own handles.
 *	At zero the VM is gone for its VMM, and the stats sources of the VM
 *	and of its vCPUs are hung up (their stats fds poll EPOLLHUP)
 * @lock: serializes vCPU creation; protects @vcpus and @vcpus_created
 * @vcpus: the vCPUs, indexed by vcpu_id, so that the duplicate check of
 *	STATSFD_VM_CREATE_VCPU is one lookup, not a walk over every vCPU.
 *	Changed only under @lock (the xarray's own lock nests inside it):
 *	@lock makes "is the id free" and the insertion one step.  Read only
 *	under @lock, or by the final put, when no one else can reach the VM.
 *	The vCPUs live as long as the VM
 * @max_vcpus: the max_vcpus parameter when the VM was created
 * @stats_lock: serializes the writers of @stats, one update window each
 * @stats: the VM's own stats, which @src's windows publish
 * @src: the VM's stats source, a child of the system source
 */
struct statsfd_vm_vm {
	refcount_t users;
	atomic_t handles;
	struct mutex lock; /* vCPU creation, @vcpus */
	struct xarray vcpus;
	u32 max_vcpus;
	spinlock_t stats_lock; /* writers of @stats */
	struct statsfd_vm_vm_stats stats;
	struct statsfd_source src;
};

/**
 * struct statsfd_vm_vcpu - a vCPU of a VM
 * @vm: the VM; a vCPU holds no reference of its own, its fds hold the VM's
 * @id: the vcpu_id it was created with, its index in &statsfd_vm_vm.vcpus
 * @mutex: serializes STATSFD_VM_RUN, so that one thread writes the stats
 * @kick: a wakeup is pending (set by KICK, consumed by a halt)
 * @wq: where a halted vCPU sleeps until kicked
 * @guest_state: state of the synthetic exit handlers, so their work is
 *	observable and cannot be optimized away
 * @windows: whether this run groups its stats updates in update windows:
 *	always, but in a test build (statsfd_vm_windows_on())
 * @stats: the live stats, which @src's windows publish: cache lines of
 *	their own, away from @kick and @wq, which other threads write (KICK)
 *	while the vCPU thread writes the stats
 * @src: the vCPU's stats source, a child of the VM's
 *
 * Allocated from statsfd_vm_vcpu_cache, whose objects are aligned as this
 * struct requires (kmalloc() promises less for sizes that are not a power
 * of two).
 */
struct statsfd_vm_vcpu {
	struct statsfd_vm_vm *vm;
	u32 id;
	struct mutex mutex; /* held by STATSFD_VM_RUN */
	atomic_t kick;
	wait_queue_head_t wq;
	u64 guest_state;
	bool windows;
	struct statsfd_vm_vcpu_stats stats ____cacheline_aligned_in_smp;
	struct statsfd_source src;
};

/* Module parameters (main.c). */
extern unsigned int statsfd_vm_max_vms;
extern unsigned int statsfd_vm_max_vcpus;
extern unsigned int statsfd_vm_halt_poll_ns_max;
extern bool statsfd_vm_debugfs;

/*
 * Whether a run groups its stats updates in update windows.  Always, but
 * in a build with STATSFD_VM_TEST_KNOBS (the tests' and the bench's, see
 * Kbuild), whose update_windows parameter (main.c) turns them off to
 * measure their cost and to show what a reader sees without them.
 */
#ifdef STATSFD_VM_TEST_KNOBS
extern bool statsfd_vm_update_windows;
#define statsfd_vm_windows_on()	READ_ONCE(statsfd_vm_update_windows)
#else
#define statsfd_vm_windows_on()	true
#endif

/* Device-wide state (main.c). */
extern struct statsfd_vm_sys_stats statsfd_vm_sys_stats;
extern struct statsfd_source statsfd_vm_sys_src;
extern struct dentry *statsfd_vm_debugfs_dir;

/* The three schemas (stats.c). */
extern struct statsfd_schema statsfd_vm_sys_schema;
extern struct statsfd_schema statsfd_vm_vm_schema;
extern struct statsfd_schema statsfd_vm_vcpu_schema;

int statsfd_vm_schemas_init(void);
void statsfd_vm_schemas_exit(void);

u64 statsfd_vm_counter_add(u64 *counter, s64 delta);
void statsfd_vm_counter_peak(u64 *peak, u64 value);
void statsfd_vm_vm_stat_add(struct statsfd_vm_vm *vm, u64 *stat, s64 delta);
long statsfd_vm_get_stats_fd(struct statsfd_source *src, unsigned long arg);

int statsfd_vm_create_vm(const void __user *uarg);
int statsfd_vm_vcpu_cache_init(void);
void statsfd_vm_vcpu_cache_exit(void);

int statsfd_vm_run_check(const struct statsfd_vm_run *run);
int statsfd_vm_vcpu_run(struct statsfd_vm_vcpu *vcpu,
			const struct statsfd_vm_run *run, u64 *exits_done);
void statsfd_vm_vcpu_kick(struct statsfd_vm_vcpu *vcpu);

/*
 * The vCPU stats update sites.  Every write to struct statsfd_vm_vcpu_stats
 * goes through one of these, so that the bench's build with
 * STATSFD_VM_NO_STATS (Kbuild variable of the same name) compiles every
 * update out and measures the run loop without them; the code stays
 * type-checked either way.  The adds are plain, like KVM's, with no lock
 * and no atomic: the vCPU thread inside RUN is the only writer.  They
 * store with WRITE_ONCE() (the core's statsfd_stat_*() helpers) because
 * stats fd readers load each aligned u64 concurrently with READ_ONCE(): a
 * marked store cannot be torn or repeated by the compiler, and tells
 * KCSAN that the race is intended.
 */
#ifdef STATSFD_VM_NO_STATS
#define STATSFD_VM_STATS_ENABLED 0
#else
#define STATSFD_VM_STATS_ENABLED 1
#endif

/*
 * An update window on the vCPU's source: what the run loop writes between
 * these two reaches readers as one.  Two plain stores, no lock, no atomic.
 * @windows is the run's &statsfd_vm_vcpu.windows, which the run loop keeps
 * in a register, so that it does not reload it around a window's barriers.
 */
static inline void statsfd_vm_window_begin(struct statsfd_vm_vcpu *vcpu,
					   bool windows)
{
	if (STATSFD_VM_STATS_ENABLED && windows)
		statsfd_update_begin(&vcpu->src);
}

static inline void statsfd_vm_window_end(struct statsfd_vm_vcpu *vcpu,
					 bool windows)
{
	if (STATSFD_VM_STATS_ENABLED && windows)
		statsfd_update_end(&vcpu->src);
}

static inline void statsfd_vm_stat_add(u64 *stat, u64 delta)
{
	if (STATSFD_VM_STATS_ENABLED)
		statsfd_stat_add(stat, delta);
}

static inline void statsfd_vm_stat_set(u64 *stat, u64 value)
{
	if (STATSFD_VM_STATS_ENABLED)
		statsfd_stat_set(stat, value);
}

static inline void statsfd_vm_stat_max(u64 *stat, u64 value)
{
	if (STATSFD_VM_STATS_ENABLED)
		statsfd_stat_max(stat, value);
}

static inline void statsfd_vm_stat_loghist(u64 *hist, u64 value)
{
	if (STATSFD_VM_STATS_ENABLED)
		statsfd_loghist_update(hist, STATSFD_VM_HIST_BUCKETS, value);
}

static inline void statsfd_vm_stat_linhist(u64 *hist, u64 value,
					   u64 bucket_size)
{
	if (STATSFD_VM_STATS_ENABLED)
		statsfd_linhist_update(hist, STATSFD_VM_HIST_BUCKETS, value,
				       bucket_size);
}

#endif /* _STATSFD_VM_INTERNAL_H */
