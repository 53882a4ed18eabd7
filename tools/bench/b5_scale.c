// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b5": statsfd at fleet scale.  Kernel memory per VM,
 * vCPU and stats fd of a fleet (1024 VMs x 8 vCPUs by default), the time to
 * read every stats fd once, the CPU the collector daemon spends reading them
 * all twice a second, and the core's own per-instance memory with
 * bench-module sources, of both kinds: plain (the values in the owner's
 * object), with snapshots (the core's values area, kmalloc) and mappable
 * (the values area in whole pages).
 *
 * Slab memory comes from /proc/meminfo and /proc/slabinfo.  Pages the core
 * allocates for a mappable source are in no meminfo field of their own, so
 * when the guest gives it a memory cgroup ($BENCH_CGROUP, cgroup v2), the
 * phase moves itself into it first and also reports what the cgroup was
 * charged: memory.current and the kernel, slab, ... fields of memory.stat
 * (everything statsfd allocates per instance is charged, GFP_KERNEL_ACCOUNT
 * or SLAB_ACCOUNT).  Kernel memory charged beyond slab objects is then the
 * pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/statsfd.h>

#include "bench.h"
#include "statsfd_bench.h"
#include "statsfd_client.h"

/**
 * struct mem_snap - kernel memory figures at one moment
 * @kb: selected /proc/meminfo fields in kB
 * @cg: memory.current, then selected memory.stat fields of the bench's
 *	memory cgroup, in bytes; all 0 without one
 * @slab_bytes: active_objs * objsize of each /proc/slabinfo cache
 * @slab_name: the caches' names
 * @nslab: number of caches
 */
struct mem_snap {
	long kb[8];
	long long cg[8];
	long long slab_bytes[512];
	char slab_name[512][40];
	int nslab;
};

static const char *const mem_fields[] = {
	"MemFree", "Slab", "SUnreclaim", "SReclaimable", "VmallocUsed",
	"Percpu", "KernelStack", "PageTables",
};

/* cg[0] is memory.current; these are cg[1...], from memory.stat. */
static const char *const cg_fields[] = {
	"current", "kernel", "slab", "anon", "percpu", "vmalloc",
	"kernel_stack", "pagetables",
};

#define CG_KERNEL	1
#define CG_SLAB		2

/* The bench's memory cgroup directory, once b5 has moved into it. */
static const char *cgroup_dir;

/*
 * Move this process into the cgroup $BENCH_CGROUP (prepared by guest.sh),
 * so that what it creates from now on is charged there.  Without it the
 * memcg figures are left out.
 */
static void cgroup_enter(void)
{
	const char *dir = getenv("BENCH_CGROUP");
	char path[512];

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (!write_param(path, "0")) {
		fprintf(stderr, "b5: cannot enter %s: %s\n", dir,
			strerror(errno));
		return;
	}
	cgroup_dir = dir;
}

static void cgroup_snap(struct mem_snap *m)
{
	char path[512], line[256], key[64];
	long long v;
	size_t i;
	FILE *f;

	if (!cgroup_dir)
		return;
	snprintf(path, sizeof(path), "%s/memory.current", cgroup_dir);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) == 1)
			m->cg[0] = v;
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/memory.stat", cgroup_dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lld", key, &v) != 2)
			continue;
		for (i = 1; i < ARRAY_SIZE(cg_fields); i++)
			if (!strcmp(key, cg_fields[i]))
				m->cg[i] = v;
	}
	fclose(f);
}

static void mem_snap(struct mem_snap *m)
{
	char line[512];
	size_t i;
	FILE *f;

	/* Let deferred frees (RCU, fput task work) finish first. */
	sync();
	usleep(300000);
	memset(m, 0, sizeof(*m));
	f = fopen("/proc/meminfo", "r");
	if (!f)
		die("open /proc/meminfo");
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < ARRAY_SIZE(mem_fields); i++) {
			size_t l = strlen(mem_fields[i]);

			if (!strncmp(line, mem_fields[i], l) && line[l] == ':')
				m->kb[i] = strtol(line + l + 1, NULL, 10);
		}
	}
	fclose(f);
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && m->nslab < 512) {
		char name[64];
		long active, total, objsize;

		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%63s %ld %ld %ld", name, &active, &total,
			   &objsize) != 4)
			continue;
		snprintf(m->slab_name[m->nslab], 40, "%.39s", name);
		m->slab_bytes[m->nslab++] = (long long)active * objsize;
	}
	fclose(f);
	cgroup_snap(m);
}

struct slab_delta {
	const char *name;
	long long bytes;
};

static int cmp_delta(const void *a, const void *b)
{
	long long x = llabs(((const struct slab_delta *)a)->bytes);
	long long y = llabs(((const struct slab_delta *)b)->bytes);

	return (y > x) - (y < x);
}

/* JSON of @b - @a: meminfo in bytes per instance and the top slab caches. */
static void jmem_delta(const char *key, const struct mem_snap *a,
		       const struct mem_snap *b, long instances)
{
	static struct slab_delta d[512];
	int i, j, nd = 0;
	size_t k;

	jopen(key, '{');
	jnum("instances", instances);
	for (k = 0; k < ARRAY_SIZE(mem_fields); k++) {
		char name[64];
		long long delta = (b->kb[k] - a->kb[k]) * 1024LL;

		/* MemFree shrinks as memory is used: report it as used. */
		if (k == 0)
			delta = -delta;
		snprintf(name, sizeof(name), "%s_bytes",
			 k == 0 ? "MemUsed" : mem_fields[k]);
		jnum(name, delta);
		snprintf(name, sizeof(name), "%s_per_instance",
			 k == 0 ? "MemUsed" : mem_fields[k]);
		jnum(name, (double)delta / instances);
	}
	if (cgroup_dir) {
		jopen("memcg", '{');
		for (k = 0; k < ARRAY_SIZE(cg_fields); k++) {
			char name[64];

			snprintf(name, sizeof(name), "%s_per_instance",
				 cg_fields[k]);
			jnum(name, (double)(b->cg[k] - a->cg[k]) / instances);
		}
		/* Kernel memory charged beyond slab objects: the pages. */
		jnum("kernel_not_slab_per_instance",
		     (double)((b->cg[CG_KERNEL] - a->cg[CG_KERNEL]) -
			      (b->cg[CG_SLAB] - a->cg[CG_SLAB])) / instances);
		jclose('}');
	}
	for (i = 0; i < b->nslab; i++) {
		long long before = 0;

		for (j = 0; j < a->nslab; j++)
			if (!strcmp(a->slab_name[j], b->slab_name[i]))
				before = a->slab_bytes[j];
		if (b->slab_bytes[i] != before) {
			d[nd].name = b->slab_name[i];
			d[nd++].bytes = b->slab_bytes[i] - before;
		}
	}
	qsort(d, nd, sizeof(d[0]), cmp_delta);
	jopen("slab_caches", '[');
	for (i = 0; i < nd && i < 10; i++) {
		jopen(NULL, '{');
		jstr("cache", d[i].name);
		jnum("bytes", d[i].bytes);
		jnum("per_instance", (double)d[i].bytes / instances);
		jclose('}');
	}
	jclose(']');
	jclose('}');
}

/*
 * Per-instance memory of the bench module's sources: a set with 1 source
 * and one with @count sources; the difference divided by @count - 1 is what
 * one more instance costs, the rest is the schema (descriptors) and cache.
 * @flags: 0 (plain, non-mappable), STATSFD_BENCH_SNAPSHOT (the core's
 * values area, kmalloc) or with STATSFD_BENCH_MMAP too (whole pages).
 */
static void b5_bench_sources(int bdev, uint32_t num_desc, uint32_t values,
			     uint32_t count, uint32_t flags,
			     struct mem_snap *m)
{
	char key[64];
	int one, many, *fds;
	uint32_t i;
	double per, base_one;

	mem_snap(&m[0]);
	one = bench_set_create(bdev, num_desc, values, 1, flags);
	mem_snap(&m[1]);
	many = bench_set_create(bdev, num_desc, values, count, flags);
	mem_snap(&m[2]);
	fds = calloc(count, sizeof(*fds));
	if (!fds)
		die("calloc");
	for (i = 0; i < count; i++) {
		fds[i] = ioctl(many, STATSFD_BENCH_GET_STATS_FD, i);
		if (fds[i] < 0)
			die("STATSFD_BENCH_GET_STATS_FD %u", i);
	}
	mem_snap(&m[3]);

	snprintf(key, sizeof(key), "bench_%ux%u%s", num_desc, values,
		 (flags & STATSFD_BENCH_MMAP) ? "_mmap" :
		 (flags & STATSFD_BENCH_SNAPSHOT) ? "_snap" : "");
	jopen(key, '{');
	jnum("num_desc", num_desc);
	jnum("values", values);
	jnum("flags", flags);
	jbool("mappable", flags & STATSFD_BENCH_MMAP);
	jnum("data_size", values * 8);
	jnum("desc_block_size", num_desc * (16 + STATSFD_NAME_SIZE_DEFAULT));
	jmem_delta("set_of_1", &m[0], &m[1], 1);
	jmem_delta("set_of_n", &m[1], &m[2], count);
	jmem_delta("stats_fds", &m[2], &m[3], count);
	/* Slab (kB) grows by one schema + count instances, then by 1 + 1. */
	per = (m[2].kb[1] - m[1].kb[1]) * 1024.0 / count;
	base_one = (m[1].kb[1] - m[0].kb[1]) * 1024.0;
	jnum("slab_per_instance", per);
	jnum("slab_schema_and_cache", base_one - per);
	/* What the memory cgroup was charged beyond slab: the pages. */
	if (cgroup_dir)
		jnum("pages_per_instance",
		     (double)((m[2].cg[CG_KERNEL] - m[1].cg[CG_KERNEL]) -
			      (m[2].cg[CG_SLAB] - m[1].cg[CG_SLAB])) / count);
	jclose('}');

	for (i = 0; i < count; i++)
		close(fds[i]);
	free(fds);
	close(many);
	close(one);
}

/*
 * The collector daemon (statsfd-collector, command in
 * $STATSFD_BENCH_COLLECTOR) reading every stats fd of the fleet at 2 reads
 * per second (--interval 500): the fleet registers each VM's fds as a VMM
 * would (one add-sources per VM, fds attached), then the daemon's CPU time
 * is read from /proc over @seconds, and its own read counters are checked.
 */
static void b5_collector(const struct fleet *f, int seconds)
{
	const char *cmd = getenv("STATSFD_BENCH_COLLECTOR");
	uint64_t reads, errs;
	unsigned int nerr;
	char *reply;
	int sock;
	pid_t pid;

	jopen("collector", '{');
	if (!cmd || !*cmd) {
		jstr("error", "no collector in the guest (statsfd-collector not built)");
		jclose('}');
		return;
	}
	jstr("command", cmd);
	pid = collector_fleet(cmd, "500", f, NULL, &sock);
	if (pid < 0)
		goto out;
	jnum("pid", pid);
	reply = collector_window(pid, sock, seconds, &reads);
	errs = json_sum(reply, "read-errors", &nerr);
	free(reply);
	jnum("reads_in_window", reads);
	jnum("read_errors", errs);
	collector_stop(pid, sock);
out:
	jclose('}');
}

void phase_b5(int nvm, int nvcpu, int collector_seconds)
{
	static struct mem_snap m[6];
	struct sfile vm_s, vc_s;
	struct fleet f = { .nvm = nvm, .nvcpu = nvcpu };
	double vm_ns, vcpu_ns;
	int dev, bdev, i, j, n = nvm * nvcpu;
	uint32_t vcpu_desc = 0, vcpu_values, d;
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	fleet_alloc(&f);

	cgroup_enter();
	jbegin("b5");
	jstr("memcg", cgroup_dir ? cgroup_dir : "");
	jnum("vms", nvm);
	jnum("vcpus_per_vm", nvcpu);
	jnum("rlimit_nofile", rl.rlim_cur);

	/*
	 * Grow the fd table to its final size first: it never shrinks, and its
	 * growth is not the cost of a VM, a vCPU or a stats fd.
	 */
	i = dup2(2, 2 * (nvm + n) + 64);
	if (i < 0)
		die("dup2 to grow the fd table");
	close(i);
	dev = vm_dev();
	mem_snap(&m[0]);
	for (i = 0; i < nvm; i++) {
		f.vm[i] = vm_create(dev);
		for (j = 0; j < nvcpu; j++)
			f.vcpu[i * nvcpu + j] = vcpu_create(f.vm[i], j);
	}
	mem_snap(&m[1]);
	for (i = 0; i < nvm; i++) {
		f.vm_stats[i] = stats_fd(f.vm[i]);
		for (j = 0; j < nvcpu; j++)
			f.vcpu_stats[i * nvcpu + j] =
				stats_fd(f.vcpu[i * nvcpu + j]);
	}
	mem_snap(&m[2]);
	fprintf(stderr, "b5: %d VMs x %d vCPUs created\n", nvm, nvcpu);

	/* Every VM and vCPU is alike: one layout each is enough. */
	sfile_open(&vm_s, dup(f.vm_stats[0]));
	sfile_open(&vc_s, dup(f.vcpu_stats[0]));
	jlayout("vm_layout", &vm_s);
	jlayout("vcpu_layout", &vc_s);
	jmem_delta("vms_and_vcpus", &m[0], &m[1], nvm + n);
	jmem_delta("stats_fds", &m[1], &m[2], nvm + n);
	jmem_delta("total", &m[0], &m[2], nvm + n);

	/* Read every fd once; the first pass faults things in, keep 3. */
	jopen("read_all", '[');
	for (i = 0; i < 4; i++) {
		read_all(&f, vm_s.h.data_offset, vm_s.data_size,
			 vc_s.h.data_offset, vc_s.data_size, &vm_ns, &vcpu_ns);
		jopen(NULL, '{');
		jnum("pass", i);
		jnum("vm_fds_ms", vm_ns / 1e6);
		jnum("vcpu_fds_ms", vcpu_ns / 1e6);
		jnum("total_ms", (vm_ns + vcpu_ns) / 1e6);
		jnum("ns_per_vm_fd", vm_ns / nvm);
		jnum("ns_per_vcpu_fd", vcpu_ns / n);
		jclose('}');
	}
	jclose(']');
	if (collector_seconds > 0)
		b5_collector(&f, collector_seconds);
	/*
	 * The vCPU's shape without what snapshots add (sample_ns and
	 * generation): its plain stats and values, as in earlier runs.
	 */
	vcpu_values = sfile_plain_size(&vc_s) / 8;
	for (d = 0; d < vc_s.h.num_desc; d++)
		vcpu_desc += sfile_desc(&vc_s, d)->offset < vcpu_values * 8;
	sfile_close(&vm_s);
	sfile_close(&vc_s);

	for (i = 0; i < n; i++)
		close(f.vcpu_stats[i]);
	for (i = 0; i < nvm; i++)
		close(f.vm_stats[i]);
	mem_snap(&m[3]);
	for (i = 0; i < n; i++)
		close(f.vcpu[i]);
	for (i = 0; i < nvm; i++)
		close(f.vm[i]);
	mem_snap(&m[4]);
	jmem_delta("after_closing_stats_fds", &m[0], &m[3], nvm + n);
	jmem_delta("after_closing_all", &m[0], &m[4], nvm + n);
	close(dev);

	/* The core's own per-instance cost, without a provider around it. */
	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	b5_bench_sources(bdev, 10, 1000, 4096, 0, m);
	b5_bench_sources(bdev, 1000, 1000, 4096, 0, m);
	/* vCPU-shaped, the three kinds: plain, snapshots, mappable. */
	b5_bench_sources(bdev, vcpu_desc, vcpu_values, 8192, 0, m);
	b5_bench_sources(bdev, vcpu_desc, vcpu_values, 8192,
			 STATSFD_BENCH_SNAPSHOT, m);
	b5_bench_sources(bdev, vcpu_desc, vcpu_values, 8192,
			 STATSFD_BENCH_SNAPSHOT | STATSFD_BENCH_MMAP, m);
	close(bdev);
	jend();
	free(f.vm);
	free(f.vm_stats);
	free(f.vcpu);
	free(f.vcpu_stats);
}
