// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_host: the node, "host-node", a computed source whose values are
 * those of /proc/stat, /proc/loadavg, /proc/meminfo and /proc/vmstat,
 * computed at read time from the counters that text is printed from, the
 * way fs/proc/stat.c, fs/proc/loadavg.c, fs/proc/meminfo.c and
 * mm/vmstat.c compute them on 6.1 and 6.12 alike
 * (Documentation/statsfd-host-api.rst, 3.1).  Its children are the online
 * CPUs' sources (cpu.c).
 *
 * Only what both kernels export to modules is used; what they do not
 * (si_swapinfo(), vm_commit_limit(), the arch part of the "intr" line, the
 * scheduler's counters) is left out and the document says so.
 */
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/kernel_stat.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/sched/loadavg.h>
#include <linux/statsfd.h>
#include <linux/swap.h>
#include <linux/time_namespace.h>
#include <linux/timekeeping.h>
#include <linux/vmstat.h>

#include "internal.h"

/**
 * struct statsfd_host_node_stats - the node's stats (statsfd_host.node)
 * @times: the "cpu" line of /proc/stat, summed over the possible CPUs
 * @softirqs: first number of the "softirq" line of /proc/stat
 * @boot_time: "btime" of /proc/stat, seconds since the epoch, in the
 *	reader's time namespace
 * @load1_x100: first /proc/loadavg number, in hundredths
 * @load5_x100: second, same
 * @load15_x100: third, same
 * @memtotal: /proc/meminfo, bytes
 * @memfree: same
 * @memavailable: same
 * @buffers: same
 * @cached: same
 * @swapcached: same
 * @active: same
 * @inactive: same
 * @active_anon: same
 * @inactive_anon: same
 * @active_file: same
 * @inactive_file: same
 * @unevictable: same
 * @mlocked: same
 * @dirty: same
 * @writeback: same
 * @anonpages: same
 * @mapped: same
 * @shmem: same
 * @kreclaimable: same
 * @slab: same
 * @sreclaimable: same
 * @sunreclaim: same
 * @kernelstack: same
 * @pagetables: same
 * @committed_as: same
 * @pgpgin: /proc/vmstat
 * @pgpgout: same
 * @pswpin: same
 * @pswpout: same
 * @pgfault: same
 * @pgmajfault: same
 * @oom_kill: same
 */
struct statsfd_host_node_stats {
	struct statsfd_host_cpu_times times;
	u64 softirqs;
	u64 boot_time;
	u64 load1_x100;
	u64 load5_x100;
	u64 load15_x100;
	u64 memtotal;
	u64 memfree;
	u64 memavailable;
	u64 buffers;
	u64 cached;
	u64 swapcached;
	u64 active;
	u64 inactive;
	u64 active_anon;
	u64 inactive_anon;
	u64 active_file;
	u64 inactive_file;
	u64 unevictable;
	u64 mlocked;
	u64 dirty;
	u64 writeback;
	u64 anonpages;
	u64 mapped;
	u64 shmem;
	u64 kreclaimable;
	u64 slab;
	u64 sreclaimable;
	u64 sunreclaim;
	u64 kernelstack;
	u64 pagetables;
	u64 committed_as;
#ifdef CONFIG_VM_EVENT_COUNTERS
	/* Without them /proc/vmstat has none of these lines either. */
	u64 pgpgin;
	u64 pgpgout;
	u64 pswpin;
	u64 pswpout;
	u64 pgfault;
	u64 pgmajfault;
	u64 oom_kill;
#endif
};

/* The times first, then the rest (see cpu_times.h). */
static_assert(offsetof(struct statsfd_host_node_stats, times) == 0);

#define STATSFD_STATS_TYPE struct statsfd_host_cpu_times
static const struct statsfd_desc_def statsfd_host_node_descs[] = {
#include "cpu_times.h"
#undef STATSFD_STATS_TYPE
#define STATSFD_STATS_TYPE struct statsfd_host_node_stats
	STATSFD_COUNTER(softirqs),
	STATSFD_DESC(boot_time, STATSFD_TYPE_INSTANT,
		     STATSFD_UNIT_SECONDS, STATSFD_BASE_POW10, 0),
	STATSFD_ICOUNTER(load1_x100),
	STATSFD_ICOUNTER(load5_x100),
	STATSFD_ICOUNTER(load15_x100),
	STATSFD_IBYTES(memtotal),
	STATSFD_IBYTES(memfree),
	STATSFD_IBYTES(memavailable),
	STATSFD_IBYTES(buffers),
	STATSFD_IBYTES(cached),
	STATSFD_IBYTES(swapcached),
	STATSFD_IBYTES(active),
	STATSFD_IBYTES(inactive),
	STATSFD_IBYTES(active_anon),
	STATSFD_IBYTES(inactive_anon),
	STATSFD_IBYTES(active_file),
	STATSFD_IBYTES(inactive_file),
	STATSFD_IBYTES(unevictable),
	STATSFD_IBYTES(mlocked),
	STATSFD_IBYTES(dirty),
	STATSFD_IBYTES(writeback),
	STATSFD_IBYTES(anonpages),
	STATSFD_IBYTES(mapped),
	STATSFD_IBYTES(shmem),
	STATSFD_IBYTES(kreclaimable),
	STATSFD_IBYTES(slab),
	STATSFD_IBYTES(sreclaimable),
	STATSFD_IBYTES(sunreclaim),
	STATSFD_IBYTES(kernelstack),
	STATSFD_IBYTES(pagetables),
	STATSFD_IBYTES(committed_as),
#ifdef CONFIG_VM_EVENT_COUNTERS
	STATSFD_COUNTER(pgpgin),
	STATSFD_COUNTER(pgpgout),
	STATSFD_COUNTER(pswpin),
	STATSFD_COUNTER(pswpout),
	STATSFD_COUNTER(pgfault),
	STATSFD_COUNTER(pgmajfault),
	STATSFD_COUNTER(oom_kill),
#endif
	/* The online CPUs: each child's online is 1. */
	STATSFD_AGG_SUM_OF(struct statsfd_host_cpu_stats, online),
};

#undef STATSFD_STATS_TYPE

static const struct statsfd_schema_def statsfd_host_node_def =
	STATSFD_HOST_SCHEMA("statsfd_host.node", statsfd_host_node,
			    struct statsfd_host_node_stats,
			    .child_schema = &statsfd_host_cpu_schema);

static struct statsfd_schema statsfd_host_node_schema;

struct statsfd_source statsfd_host_node_src;

/*
 * /proc/stat: the "cpu" line is the sum of every possible CPU's times in
 * ns, which it then converts with nsec_to_clock_t(); "softirq" sums every
 * possible CPU's counts of every softirq.  "btime" is shifted into the
 * reader's time namespace (we run in the reader's read()).
 */
static void statsfd_host_node_stat(struct statsfd_host_node_stats *s)
{
	struct statsfd_host_cpu_times cpu_times;
	/* The times are u64s only: summed as an array. */
	u64 *sum = (u64 *)&s->times;
	const u64 *add = (const u64 *)&cpu_times;
	struct timespec64 boottime;
	unsigned int cpu, i;

	memset(&s->times, 0, sizeof(s->times));
	s->softirqs = 0;
	for_each_possible_cpu(cpu) {
		statsfd_host_cpu_times(cpu, &cpu_times);
		for (i = 0; i < sizeof(cpu_times) / sizeof(u64); i++)
			sum[i] += add[i];
		for (i = 0; i < NR_SOFTIRQS; i++)
			s->softirqs += kstat_softirqs_cpu(i, cpu);
	}

	getboottime64(&boottime);
	timens_sub_boottime(&boottime);
	s->boot_time = boottime.tv_sec;
}

/* /proc/loadavg prints "%lu.%02lu" of the average rounded to 1/100. */
static u64 statsfd_host_load_x100(unsigned int i)
{
	unsigned long a = READ_ONCE(avenrun[i]) + FIXED_1 / 200;

	return LOAD_INT(a) * 100 + LOAD_FRAC(a);
}

static u64 statsfd_host_bytes(unsigned long pages)
{
	return (u64)pages << PAGE_SHIFT;
}

/*
 * /proc/meminfo's lines, from the same calls as meminfo_proc_show() but
 * si_swapinfo() and vm_commit_limit() (not exported: SwapTotal, SwapFree
 * and CommitLimit are not in the node).
 */
static void statsfd_host_node_meminfo(struct statsfd_host_node_stats *s)
{
	unsigned long pages[NR_LRU_LISTS];
	unsigned long sreclaimable, sunreclaim, misc;
	struct sysinfo i;
	long cached;
	int lru;

	si_meminfo(&i);
	s->committed_as = statsfd_host_bytes(vm_memory_committed());

	cached = global_node_page_state(NR_FILE_PAGES) -
		 total_swapcache_pages() - i.bufferram;
	if (cached < 0)
		cached = 0;

	for (lru = LRU_BASE; lru < NR_LRU_LISTS; lru++)
		pages[lru] = global_node_page_state(NR_LRU_BASE + lru);

	sreclaimable = global_node_page_state_pages(NR_SLAB_RECLAIMABLE_B);
	sunreclaim = global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B);

	s->memtotal = statsfd_host_bytes(i.totalram);
	s->memfree = statsfd_host_bytes(i.freeram);
	s->memavailable = statsfd_host_bytes(si_mem_available());
	s->buffers = statsfd_host_bytes(i.bufferram);
	s->cached = statsfd_host_bytes(cached);
	s->swapcached = statsfd_host_bytes(total_swapcache_pages());
	s->active = statsfd_host_bytes(pages[LRU_ACTIVE_ANON] +
				       pages[LRU_ACTIVE_FILE]);
	s->inactive = statsfd_host_bytes(pages[LRU_INACTIVE_ANON] +
					 pages[LRU_INACTIVE_FILE]);
	s->active_anon = statsfd_host_bytes(pages[LRU_ACTIVE_ANON]);
	s->inactive_anon = statsfd_host_bytes(pages[LRU_INACTIVE_ANON]);
	s->active_file = statsfd_host_bytes(pages[LRU_ACTIVE_FILE]);
	s->inactive_file = statsfd_host_bytes(pages[LRU_INACTIVE_FILE]);
	s->unevictable = statsfd_host_bytes(pages[LRU_UNEVICTABLE]);
	s->mlocked = statsfd_host_bytes(global_zone_page_state(NR_MLOCK));
	s->dirty = statsfd_host_bytes(global_node_page_state(NR_FILE_DIRTY));
	s->writeback = statsfd_host_bytes(global_node_page_state(NR_WRITEBACK));
	s->anonpages =
		statsfd_host_bytes(global_node_page_state(NR_ANON_MAPPED));
	s->mapped = statsfd_host_bytes(global_node_page_state(NR_FILE_MAPPED));
	s->shmem = statsfd_host_bytes(i.sharedram);
	misc = global_node_page_state(NR_KERNEL_MISC_RECLAIMABLE);
	s->kreclaimable = statsfd_host_bytes(sreclaimable + misc);
	s->slab = statsfd_host_bytes(sreclaimable + sunreclaim);
	s->sreclaimable = statsfd_host_bytes(sreclaimable);
	s->sunreclaim = statsfd_host_bytes(sunreclaim);
	/* Kept in kB, not pages. */
	s->kernelstack = (u64)global_node_page_state(NR_KERNEL_STACK_KB) * 1024;
	s->pagetables =
		statsfd_host_bytes(global_node_page_state(NR_PAGETABLE));
}

#ifdef CONFIG_VM_EVENT_COUNTERS
/*
 * /proc/vmstat's events: all_vm_events() sums the online CPUs'
 * vm_event_states under cpus_read_lock(), so that a CPU going away cannot
 * be missed or counted twice while its counts are folded into another's;
 * then pgpgin and pgpgout go from sectors to kB.  The same sum of the
 * seven events needed, without all_vm_events()' array of every event
 * (NR_VM_EVENT_ITEMS longs: too large for the stack, and a read does not
 * allocate).  cpus_read_lock() is safe here: the node's fill runs under
 * the reading file's mutex only, never under a children_lock (the node is
 * no one's child), and CPU hotplug never takes a file's mutex.
 */
static void statsfd_host_node_vmstat(struct statsfd_host_node_stats *s)
{
	unsigned long ev[7] = {};
	int cpu;

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		const unsigned long *e = per_cpu(vm_event_states, cpu).event;

		ev[0] += READ_ONCE(e[PGPGIN]);
		ev[1] += READ_ONCE(e[PGPGOUT]);
		ev[2] += READ_ONCE(e[PSWPIN]);
		ev[3] += READ_ONCE(e[PSWPOUT]);
		ev[4] += READ_ONCE(e[PGFAULT]);
		ev[5] += READ_ONCE(e[PGMAJFAULT]);
		ev[6] += READ_ONCE(e[OOM_KILL]);
	}
	cpus_read_unlock();

	s->pgpgin = ev[0] / 2;
	s->pgpgout = ev[1] / 2;
	s->pswpin = ev[2];
	s->pswpout = ev[3];
	s->pgfault = ev[4];
	s->pgmajfault = ev[5];
	s->oom_kill = ev[6];
}
#else
static void statsfd_host_node_vmstat(struct statsfd_host_node_stats *s)
{
}
#endif

/* Computed at each read of a node fd, under that file's mutex. */
static int statsfd_host_node_fill(struct statsfd_source *src, void *stats)
{
	struct statsfd_host_node_stats *s = stats;

	statsfd_host_node_stat(s);
	s->load1_x100 = statsfd_host_load_x100(0);
	s->load5_x100 = statsfd_host_load_x100(1);
	s->load15_x100 = statsfd_host_load_x100(2);
	statsfd_host_node_meminfo(s);
	statsfd_host_node_vmstat(s);
	return 0;
}

/* Static for the module's life: the module reference pins it. */
static const struct statsfd_source_ops statsfd_host_node_ops = {
	.owner = THIS_MODULE,
	.fill = statsfd_host_node_fill,
};

/**
 * statsfd_host_node_init() - the node's schema and source
 *
 * The CPUs' schema, which the node's names as its child schema, must be
 * initialized (statsfd_host_cpu_schema_init()); cpu.c then adds the CPUs.
 *
 * Return: 0, or a negative errno with nothing left allocated.
 */
int statsfd_host_node_init(void)
{
	int ret;

	ret = statsfd_schema_init(&statsfd_host_node_schema,
				  &statsfd_host_node_def);
	if (ret)
		return ret;
	ret = statsfd_source_init_computed(&statsfd_host_node_src,
					   &statsfd_host_node_schema,
					   &statsfd_host_node_ops, "host-node");
	if (ret)
		statsfd_schema_destroy(&statsfd_host_node_schema);
	return ret;
}

/**
 * statsfd_host_node_exit() - undo statsfd_host_node_init()
 *
 * After statsfd_host_cpu_exit(): the CPUs are no children any more.
 */
void statsfd_host_node_exit(void)
{
	statsfd_source_destroy(&statsfd_host_node_src);
	statsfd_schema_destroy(&statsfd_host_node_schema);
}

/**
 * statsfd_host_node_file() - a stats file on the node
 *
 * Return: the file, or the error of statsfd_source_getfile().
 */
struct file *statsfd_host_node_file(void)
{
	return statsfd_source_getfile(&statsfd_host_node_src);
}
