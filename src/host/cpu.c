// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_host: one computed source per possible CPU, "host-cpu<N>", whose
 * values are the CPU's line of /proc/stat in nanoseconds, computed as
 * fs/proc/stat.c computes them, plus whether the CPU is online.  CPU
 * hotplug makes an online CPU's source a child of the node and takes an
 * offline one's away (Documentation/statsfd-host-api.rst, 3.2).
 */
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel_stat.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/tick.h>

#include "internal.h"

/* The times first, then online (see cpu_times.h). */
static_assert(offsetof(struct statsfd_host_cpu_stats, times) == 0);

#define STATSFD_STATS_TYPE struct statsfd_host_cpu_times
static const struct statsfd_desc_def statsfd_host_cpu_descs[] = {
#include "cpu_times.h"
#undef STATSFD_STATS_TYPE
#define STATSFD_STATS_TYPE struct statsfd_host_cpu_stats
	STATSFD_IBOOLEAN(online),
};

#undef STATSFD_STATS_TYPE

static const struct statsfd_schema_def statsfd_host_cpu_def =
	STATSFD_HOST_SCHEMA("statsfd_host.cpu", statsfd_host_cpu,
			    struct statsfd_host_cpu_stats);

struct statsfd_schema statsfd_host_cpu_schema;

/* nr_cpu_ids of them, the source of CPU N at index N; NULL before init. */
static struct statsfd_source *statsfd_host_cpus;
/* The dynamic hotplug state cpuhp_setup_state() gave us, or 0. */
static int statsfd_host_cpu_hp_state;

/*
 * fs/proc/stat.c's get_idle_time() and get_iowait_time(), which are not
 * exported, as one: an online CPU's tick-less (NO_HZ) accounting of
 * @get_us (get_cpu_idle_time_us() or get_cpu_iowait_time_us()) when the
 * kernel keeps one (they return -1 when it does not: without
 * CONFIG_NO_HZ_COMMON, or with NO_HZ off at boot), else the tick's
 * cpustat[@idx].  An offline CPU's tick-less time is not looked at, as
 * there.  Architectures with arch_idle_time() (s390) add their own idle
 * time in /proc/stat; that helper is not reachable from a module.
 */
static u64 statsfd_host_nohz_time(const struct kernel_cpustat *kcs,
				  unsigned int cpu, enum cpu_usage_stat idx,
				  u64 (*get_us)(int cpu, u64 *last_update))
{
	u64 usecs = -1ULL;

	if (cpu_online(cpu))
		usecs = get_us(cpu, NULL);
	if (usecs == -1ULL)
		return kcs->cpustat[idx];
	return usecs * NSEC_PER_USEC;
}

/**
 * statsfd_host_cpu_times() - the times of one CPU as /proc/stat shows them
 * @cpu: a possible CPU
 * @times: where to store them, in nanoseconds
 *
 * What fs/proc/stat.c adds for the "cpu" line and prints for "cpuN", before
 * nsec_to_clock_t(): kcpustat_cpu_fetch() (which, with
 * CONFIG_VIRT_CPU_ACCOUNTING_GEN, adds the running task's pending vtime),
 * idle and iowait as above.  Takes no lock but what kcpustat_cpu_fetch()
 * takes (RCU, a seqcount): it runs under the node's children_lock and
 * inside CPU hotplug callbacks.
 *
 * Context: any process context.
 */
void statsfd_host_cpu_times(unsigned int cpu,
			    struct statsfd_host_cpu_times *times)
{
	struct kernel_cpustat kcs;
	const u64 *c = kcs.cpustat;

	kcpustat_cpu_fetch(&kcs, cpu);
	times->user = c[CPUTIME_USER];
	times->nice = c[CPUTIME_NICE];
	times->system = c[CPUTIME_SYSTEM];
	times->idle = statsfd_host_nohz_time(&kcs, cpu, CPUTIME_IDLE,
					     get_cpu_idle_time_us);
	times->iowait = statsfd_host_nohz_time(&kcs, cpu, CPUTIME_IOWAIT,
					       get_cpu_iowait_time_us);
	times->irq = c[CPUTIME_IRQ];
	times->softirq = c[CPUTIME_SOFTIRQ];
	times->steal = c[CPUTIME_STEAL];
	times->guest = c[CPUTIME_GUEST];
	times->guest_nice = c[CPUTIME_GUEST_NICE];
}

/*
 * Computed at each read, of this fd or of the node's online_sum (then
 * under the node's children_lock, which CPU hotplug takes inside
 * cpus_write_lock(): nothing here may take cpus_read_lock()).
 */
static int statsfd_host_cpu_fill(struct statsfd_source *src, void *stats)
{
	struct statsfd_host_cpu_stats *s = stats;
	unsigned int cpu = src - statsfd_host_cpus;

	statsfd_host_cpu_times(cpu, &s->times);
	s->online = cpu_online(cpu);
	return 0;
}

/* Static for the module's life: the module reference pins them. */
static const struct statsfd_source_ops statsfd_host_cpu_ops = {
	.owner = THIS_MODULE,
	.fill = statsfd_host_cpu_fill,
};

/*
 * Hotplug callbacks, at CPUHP_AP_ONLINE_DYN: on the CPU coming up, after
 * it is in cpu_online_mask; on it going down, before it leaves the mask.
 * They run under cpus_write_lock() and take the node's children_lock.
 */
static int statsfd_host_cpu_online(unsigned int cpu)
{
	statsfd_source_add_child(&statsfd_host_node_src,
				 &statsfd_host_cpus[cpu]);
	return 0;
}

static int statsfd_host_cpu_offline(unsigned int cpu)
{
	statsfd_source_del_child(&statsfd_host_cpus[cpu]);
	return 0;
}

static void statsfd_host_cpu_destroy_sources(void)
{
	unsigned int cpu;

	/* A source never initialized (not a possible CPU) has no id: a no-op. */
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		statsfd_source_destroy(&statsfd_host_cpus[cpu]);
	kfree(statsfd_host_cpus);
	statsfd_host_cpus = NULL;
}

/**
 * statsfd_host_cpu_schema_init() - the CPUs' schema
 *
 * Before the node's, which names it as its child schema.
 *
 * Return: 0 or the error of statsfd_schema_init().
 */
int statsfd_host_cpu_schema_init(void)
{
	return statsfd_schema_init(&statsfd_host_cpu_schema,
				   &statsfd_host_cpu_def);
}

/**
 * statsfd_host_cpu_schema_exit() - undo statsfd_host_cpu_schema_init()
 *
 * After the node's schema, whose child schema it is.
 */
void statsfd_host_cpu_schema_exit(void)
{
	statsfd_schema_destroy(&statsfd_host_cpu_schema);
}

/**
 * statsfd_host_cpu_init() - the sources of the possible CPUs, the online
 *	ones as children of the node
 *
 * The CPU schema (statsfd_host_cpu_schema_init()) and the node must be
 * initialized.
 *
 * Return: 0, or a negative errno with nothing left allocated.
 */
int statsfd_host_cpu_init(void)
{
	unsigned int cpu;
	int ret;

	statsfd_host_cpus =
		kcalloc(nr_cpu_ids, sizeof(*statsfd_host_cpus), GFP_KERNEL);
	if (!statsfd_host_cpus)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		ret = statsfd_source_init_computed(&statsfd_host_cpus[cpu],
						   &statsfd_host_cpu_schema,
						   &statsfd_host_cpu_ops,
						   "host-cpu%u", cpu);
		if (ret)
			goto err;
	}
	/* Calls statsfd_host_cpu_online() for every CPU online now, then on each. */
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "statsfd_host:online",
				statsfd_host_cpu_online,
				statsfd_host_cpu_offline);
	if (ret < 0)
		goto err;
	statsfd_host_cpu_hp_state = ret;
	return 0;

err:
	statsfd_host_cpu_destroy_sources();
	return ret;
}

/**
 * statsfd_host_cpu_exit() - undo statsfd_host_cpu_init()
 *
 * Removing the hotplug state calls statsfd_host_cpu_offline() for every online
 * CPU, so the node has no child left when the sources go.  No stats fd is
 * open: each pins the module.
 */
void statsfd_host_cpu_exit(void)
{
	if (statsfd_host_cpu_hp_state > 0)
		cpuhp_remove_state(statsfd_host_cpu_hp_state);
	statsfd_host_cpu_hp_state = 0;
	statsfd_host_cpu_destroy_sources();
}

/**
 * statsfd_host_cpu_file() - a stats file on one CPU
 * @cpu: the CPU's number, from the caller
 *
 * The file stays readable when the CPU goes offline afterwards; only a new
 * one needs the CPU online.
 *
 * Return: the file, or ERR_PTR(-EINVAL) for a number not below
 * nr_cpu_ids, ERR_PTR(-ENODEV) for a CPU not online, or the error of
 * statsfd_source_getfile().
 */
struct file *statsfd_host_cpu_file(u32 cpu)
{
	if (cpu >= nr_cpu_ids)
		return ERR_PTR(-EINVAL);
	/* A user-chosen index: no speculative access past the array. */
	cpu = array_index_nospec(cpu, nr_cpu_ids);
	if (!cpu_online(cpu))
		return ERR_PTR(-ENODEV);
	return statsfd_source_getfile(&statsfd_host_cpus[cpu]);
}
