// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_vm stats: the three schemas of the provider (system, VM, vCPU)
 * and the helpers for the stats several threads update (atomic ones for
 * the device's, one window under a lock for a VM's).
 */
#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/spinlock.h>
#include <linux/statsfd.h>

#include "internal.h"

/*
 * Short names for the stats structs, only for the descriptor tables below
 * (prefixed: bare VCPU/VM/SYS could clash with any header's macros).
 */
#define SFD_VCPU struct statsfd_vm_vcpu_stats
#define SFD_VM struct statsfd_vm_vm_stats
#define SFD_SYS struct statsfd_vm_sys_stats

/*
 * The vCPU set follows KVM's generic vCPU stats (same names and types for
 * the halt-polling ones), plus exits by reason as a hypervisor counts them.
 */
#define STATSFD_STATS_TYPE SFD_VCPU
static const struct statsfd_desc_def statsfd_vm_vcpu_descs[] = {
	STATSFD_COUNTER(exits),
	STATSFD_COUNTER(io_exits),
	STATSFD_COUNTER(mmio_exits),
	STATSFD_COUNTER(hypercall_exits),
	STATSFD_COUNTER(halt_exits),
	STATSFD_COUNTER(signal_exits),
	STATSFD_COUNTER(halt_successful_poll),
	STATSFD_COUNTER(halt_attempted_poll),
	STATSFD_COUNTER(halt_poll_invalid),
	STATSFD_COUNTER(halt_wakeup),
	STATSFD_TIME_NSEC(halt_poll_success_ns),
	STATSFD_TIME_NSEC(halt_poll_fail_ns),
	STATSFD_TIME_NSEC(halt_wait_ns),
	STATSFD_LOGHIST_TIME_NSEC(halt_poll_success_hist),
	STATSFD_LOGHIST_TIME_NSEC(halt_poll_fail_hist),
	STATSFD_LOGHIST_TIME_NSEC(halt_wait_hist),
	STATSFD_LINHIST(run_exits_hist, STATSFD_VM_RUN_HIST_BUCKET),
	STATSFD_IBOOLEAN(blocking),
	STATSFD_PCOUNTER(max_run_exits),
	STATSFD_PEAK_TIME_NSEC(max_halt_wait_ns),
	STATSFD_BYTES(io_bytes),
	STATSFD_CYCLES(guest_cycles),
	STATSFD_COUNTER(runs),
};

#undef STATSFD_STATS_TYPE

/* Every u64 of the struct is one scalar or one bucket: nothing is missed. */
#define SFD_VCPU_SCALARS (ARRAY_SIZE(statsfd_vm_vcpu_descs) - 4)
static_assert(sizeof(SFD_VCPU) / sizeof(u64) ==
	      SFD_VCPU_SCALARS + 4 * STATSFD_VM_HIST_BUCKETS);

/* A VM's own counters, then what it derives from its vCPUs at read time. */
#define STATSFD_STATS_TYPE SFD_VM
static const struct statsfd_desc_def statsfd_vm_vm_descs[] = {
	STATSFD_COUNTER(vcpus_created),
	STATSFD_COUNTER(kicks),
	STATSFD_ICOUNTER(stats_fds_open),

	STATSFD_AGG_SUM_OF(SFD_VCPU, exits),
	STATSFD_AGG_MIN_OF(SFD_VCPU, exits),
	STATSFD_AGG_MAX_OF(SFD_VCPU, exits),
	STATSFD_AGG_AVG_OF(SFD_VCPU, exits),
	STATSFD_AGG_SUM_OF(SFD_VCPU, io_exits),
	STATSFD_AGG_SUM_OF(SFD_VCPU, mmio_exits),
	STATSFD_AGG_SUM_OF(SFD_VCPU, hypercall_exits),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_exits),
	STATSFD_AGG_SUM_OF(SFD_VCPU, signal_exits),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_successful_poll),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_attempted_poll),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_poll_invalid),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_wakeup),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_poll_success_ns),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_poll_fail_ns),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_wait_ns),
	STATSFD_AGG_MIN_OF(SFD_VCPU, halt_wait_ns),
	STATSFD_AGG_MAX_OF(SFD_VCPU, halt_wait_ns),
	STATSFD_AGG_AVG_OF(SFD_VCPU, halt_wait_ns),
	STATSFD_AGG_SUM_OF(SFD_VCPU, halt_wait_hist),
	STATSFD_AGG_SUM_OF(SFD_VCPU, run_exits_hist),
	STATSFD_AGG_SUM_OF(SFD_VCPU, blocking),
	STATSFD_AGG_COUNT_NONZERO_OF(SFD_VCPU, blocking),
	STATSFD_AGG_MAX_OF(SFD_VCPU, max_run_exits),
	STATSFD_AGG_MAX_OF(SFD_VCPU, max_halt_wait_ns),
	STATSFD_AGG_SUM_OF(SFD_VCPU, io_bytes),
	STATSFD_AGG_SUM_OF(SFD_VCPU, guest_cycles),
	STATSFD_AGG_SUM_OF(SFD_VCPU, runs),
	STATSFD_AGG_COUNT_NONZERO_OF(SFD_VCPU, runs),
};

#undef STATSFD_STATS_TYPE

/*
 * Device-wide counters, then what is derived from the live VMs.  No runs:
 * see struct statsfd_vm_sys_stats.
 */
#define STATSFD_STATS_TYPE SFD_SYS
static const struct statsfd_desc_def statsfd_vm_sys_descs[] = {
	STATSFD_COUNTER(vms_created),
	STATSFD_ICOUNTER(vms_alive),
	STATSFD_PCOUNTER(max_vms_alive),
	STATSFD_COUNTER(vcpus_created),
	STATSFD_ICOUNTER(vcpus_alive),
	STATSFD_ICOUNTER(stats_fds_open),

	STATSFD_AGG_SUM_OF(SFD_VM, vcpus_created),
	STATSFD_AGG_MAX_OF(SFD_VM, vcpus_created),
	STATSFD_AGG_AVG_OF(SFD_VM, vcpus_created),
	STATSFD_AGG_SUM_OF(SFD_VM, kicks),
	STATSFD_AGG_SUM_OF(SFD_VM, stats_fds_open),
};

#undef STATSFD_STATS_TYPE

static_assert(sizeof(SFD_VM) / sizeof(u64) == 3);
static_assert(sizeof(SFD_SYS) / sizeof(u64) == 6);

static const struct statsfd_schema_def statsfd_vm_vcpu_def = {
	.name = "statsfd_vm.vcpu",
	.flags = STATSFD_SCHEMA_SNAPSHOT | STATSFD_SCHEMA_MMAP,
	.descs = statsfd_vm_vcpu_descs,
	.num_descs = ARRAY_SIZE(statsfd_vm_vcpu_descs),
	.stats_size = sizeof(SFD_VCPU),
};

static const struct statsfd_schema_def statsfd_vm_vm_def = {
	.name = "statsfd_vm.vm",
	.flags = STATSFD_SCHEMA_SNAPSHOT | STATSFD_SCHEMA_MMAP,
	.descs = statsfd_vm_vm_descs,
	.num_descs = ARRAY_SIZE(statsfd_vm_vm_descs),
	.stats_size = sizeof(SFD_VM),
	.child_schema = &statsfd_vm_vcpu_schema,
};

static const struct statsfd_schema_def statsfd_vm_sys_def = {
	.name = "statsfd_vm.system",
	.descs = statsfd_vm_sys_descs,
	.num_descs = ARRAY_SIZE(statsfd_vm_sys_descs),
	.stats_size = sizeof(SFD_SYS),
	.child_schema = &statsfd_vm_vm_schema,
};

/* What the core derives from the definitions above, built at load. */
struct statsfd_schema statsfd_vm_vcpu_schema;
struct statsfd_schema statsfd_vm_vm_schema;
struct statsfd_schema statsfd_vm_sys_schema;

#undef SFD_VCPU_SCALARS
#undef SFD_VCPU
#undef SFD_VM
#undef SFD_SYS

/**
 * statsfd_vm_schemas_init() - build the three schemas, children first
 *
 * Return: 0, or the error of the schema the core rejected.
 */
int statsfd_vm_schemas_init(void)
{
	int ret;

	ret = statsfd_schema_init(&statsfd_vm_vcpu_schema, &statsfd_vm_vcpu_def);
	if (ret)
		return ret;
	ret = statsfd_schema_init(&statsfd_vm_vm_schema, &statsfd_vm_vm_def);
	if (ret)
		goto out_vcpu;
	ret = statsfd_schema_init(&statsfd_vm_sys_schema, &statsfd_vm_sys_def);
	if (ret)
		goto out_vm;
	return 0;

out_vm:
	statsfd_schema_destroy(&statsfd_vm_vm_schema);
out_vcpu:
	statsfd_schema_destroy(&statsfd_vm_vcpu_schema);
	return ret;
}

/**
 * statsfd_vm_schemas_exit() - free what statsfd_vm_schemas_init() built
 */
void statsfd_vm_schemas_exit(void)
{
	statsfd_schema_destroy(&statsfd_vm_sys_schema);
	statsfd_schema_destroy(&statsfd_vm_vm_schema);
	statsfd_schema_destroy(&statsfd_vm_vcpu_schema);
}

/**
 * statsfd_vm_counter_add() - add to a stat that several threads update
 * @counter: a u64 of a stats struct, read lock-free by stats fds
 * @delta: what to add (negative to subtract)
 *
 * A compare-and-exchange loop on the u64 itself: the stats structs must
 * hold plain u64s (that is what readers copy), so atomic64_t is not an
 * option, and a lock would only serialize the writers.
 *
 * Return: the new value.
 */
u64 statsfd_vm_counter_add(u64 *counter, s64 delta)
{
	u64 old = READ_ONCE(*counter);

	while (!try_cmpxchg64(counter, &old, old + delta))
		;
	return old + delta;
}

/**
 * statsfd_vm_counter_peak() - raise a peak stat that several threads update
 * @peak: a u64 of a stats struct that only ever grows
 * @value: a new sample
 */
void statsfd_vm_counter_peak(u64 *peak, u64 value)
{
	u64 old = READ_ONCE(*peak);

	while (value > old && !try_cmpxchg64(peak, &old, value))
		;
}

/**
 * statsfd_vm_vm_stat_add() - add to one of a VM's own stats
 * @vm: the VM
 * @stat: a u64 of @vm->stats
 * @delta: what to add (negative to subtract)
 *
 * Any thread may update a VM's stats, so each update is one window under
 * @vm->stats_lock: the lock makes its holder the source's single writer
 * for the window's duration.  Not on the vCPU hot path.
 *
 * Context: any context that may take a spinlock.
 */
void statsfd_vm_vm_stat_add(struct statsfd_vm_vm *vm, u64 *stat, s64 delta)
{
	spin_lock(&vm->stats_lock);
	statsfd_update_begin(&vm->src);
	statsfd_stat_add(stat, delta);
	statsfd_update_end(&vm->src);
	spin_unlock(&vm->stats_lock);
}

/**
 * statsfd_vm_get_stats_fd() - STATSFD_VM_GET_STATS_FD, on any of the fds
 * @src: the source of the device, VM or vCPU whose fd got the ioctl
 * @arg: the ioctl's argument, which must be 0
 *
 * Return: the new stats fd; -EINVAL for a non-zero @arg; or the error of
 * statsfd_source_get_fd().
 */
long statsfd_vm_get_stats_fd(struct statsfd_source *src, unsigned long arg)
{
	if (arg)
		return -EINVAL;
	return statsfd_source_get_fd(src);
}
