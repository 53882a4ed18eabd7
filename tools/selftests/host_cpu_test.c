// SPDX-License-Identifier: GPL-2.0
/*
 * host_cpu_test - statsfd_host.ko's node and CPU stats fds
 * (Documentation/statsfd-host-api.rst, sections 1, 2, 3.1 and 3.2).
 *
 * Every value is checked against the text the kernel prints it from, read
 * before and after the stats fd (text, fd, text): a cumulative value,
 * converted exactly to the text's unit, lies between the two readings;
 * an instant lies between them give or take a stated tolerance; boot_time
 * equals btime.  Busy children keep the CPUs' times moving meanwhile.
 * Then ids and descriptors, online_sum, CPU hotplug (cpu1 offline and back)
 * and every error of the ioctl, each in its own test.
 *
 * Runs as root in the test guest (2 CPUs), where the module is loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/statsfd.h>
#include <linux/statsfd_host.h>

#include "kselftest_harness.h"
#include "stats_file.h"

/* See sample_test.c: a false positive of kselftest_harness.h with GCC 12. */
#pragma GCC diagnostic ignored "-Wclobbered"

#define HOST_DEV	"/dev/statsfd_host"
#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"
#define MAX_CPUS	64
#define NR_TIMES	10
/* How far an instant memory value may be outside the two text readings. */
#define MEM_TOLERANCE_KB	(16 * 1024)
/* Text, fd, text rounds per test, with load in between. */
#define ROUNDS		5

static const char *const time_names[NR_TIMES] = {
	"user", "nice", "system", "idle", "iowait", "irq", "softirq",
	"steal", "guest", "guest_nice",
};

/* /proc/meminfo keys of the node, in the node's order, and their stats. */
static const char *const mem_keys[][2] = {
	{ "MemTotal", "memtotal" },
	{ "MemFree", "memfree" },
	{ "MemAvailable", "memavailable" },
	{ "Buffers", "buffers" },
	{ "Cached", "cached" },
	{ "SwapCached", "swapcached" },
	{ "Active", "active" },
	{ "Inactive", "inactive" },
	{ "Active(anon)", "active_anon" },
	{ "Inactive(anon)", "inactive_anon" },
	{ "Active(file)", "active_file" },
	{ "Inactive(file)", "inactive_file" },
	{ "Unevictable", "unevictable" },
	{ "Mlocked", "mlocked" },
	{ "Dirty", "dirty" },
	{ "Writeback", "writeback" },
	{ "AnonPages", "anonpages" },
	{ "Mapped", "mapped" },
	{ "Shmem", "shmem" },
	{ "KReclaimable", "kreclaimable" },
	{ "Slab", "slab" },
	{ "SReclaimable", "sreclaimable" },
	{ "SUnreclaim", "sunreclaim" },
	{ "KernelStack", "kernelstack" },
	{ "PageTables", "pagetables" },
	{ "Committed_AS", "committed_as" },
};

#define NR_MEM	ARRAY_SIZE(mem_keys)

static const char *const vm_keys[] = {
	"pgpgin", "pgpgout", "pswpin", "pswpout", "pgfault", "pgmajfault",
	"oom_kill",
};

#define NR_VM	ARRAY_SIZE(vm_keys)

static const char *const load_names[3] = {
	"load1_x100", "load5_x100", "load15_x100",
};

/* ---- the device ---- */

static int host_open(void)
{
	return open(HOST_DEV, O_RDONLY | O_CLOEXEC);
}

static int host_ioctl(int dev, struct statsfd_host_stats_fd *a)
{
	int fd = ioctl(dev, STATSFD_HOST_GET_STATS_FD, a);

	return fd < 0 ? -errno : fd;
}

static int get_fd(int dev, uint32_t kind, uint32_t cpu)
{
	struct statsfd_host_stats_fd a = { .kind = kind, .cpu = cpu };

	return host_ioctl(dev, &a);
}

/* ---- the texts ---- */

struct texts {
	uint64_t cpu[MAX_CPUS + 1][NR_TIMES];	/* [MAX_CPUS]: the "cpu" line */
	int has_cpu[MAX_CPUS];
	uint64_t softirqs;
	uint64_t btime;
	uint64_t load[3];
	uint64_t mem_kb[NR_MEM];
	uint64_t vm[NR_VM];
};

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, len = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	if (n < 0)
		return -1;
	buf[len] = '\0';
	return 0;
}

static int parse_times(const char *p, uint64_t *t)
{
	return sscanf(p, "%lu %lu %lu %lu %lu %lu %lu %lu %lu %lu", &t[0],
		      &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7], &t[8],
		      &t[9]) == NR_TIMES ? 0 : -1;
}

static int read_texts(struct texts *t)
{
	static char buf[1 << 17];
	unsigned int i, whole, frac;
	char *line, *save;
	int cpu, n;

	memset(t, 0, sizeof(*t));
	if (read_file("/proc/stat", buf, sizeof(buf)))
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "cpu ", 4) == 0) {
			if (parse_times(line + 4, t->cpu[MAX_CPUS]))
				return -1;
		} else if (sscanf(line, "cpu%d %n", &cpu, &n) == 1) {
			if (cpu < 0 || cpu >= MAX_CPUS ||
			    parse_times(line + n, t->cpu[cpu]))
				return -1;
			t->has_cpu[cpu] = 1;
		} else if (strncmp(line, "softirq ", 8) == 0) {
			t->softirqs = strtoull(line + 8, NULL, 10);
		} else if (strncmp(line, "btime ", 6) == 0) {
			t->btime = strtoull(line + 6, NULL, 10);
		}
	}

	if (read_file("/proc/loadavg", buf, sizeof(buf)))
		return -1;
	for (i = 0, line = buf; i < 3; i++) {
		if (sscanf(line, "%u.%2u%n", &whole, &frac, &n) != 2)
			return -1;
		t->load[i] = whole * 100ull + frac;
		line += n;
	}

	/* Keys are looked for after a newline: the buffer starts with one. */
	buf[0] = '\n';
	if (read_file("/proc/meminfo", buf + 1, sizeof(buf) - 1))
		return -1;
	for (i = 0; i < NR_MEM; i++) {
		char key[32];

		snprintf(key, sizeof(key), "\n%s:", mem_keys[i][0]);
		line = strstr(buf, key);
		if (!line)
			return -1;
		t->mem_kb[i] = strtoull(line + strlen(key), NULL, 10);
	}

	if (read_file("/proc/vmstat", buf + 1, sizeof(buf) - 1))
		return -1;
	for (i = 0; i < NR_VM; i++) {
		char key[32];

		snprintf(key, sizeof(key), "\n%s ", vm_keys[i]);
		line = strstr(buf, key);
		if (!line)
			return -1;
		t->vm[i] = strtoull(line + strlen(key), NULL, 10);
	}
	return 0;
}

/* nsec_to_clock_t(): exactly, with NSEC_PER_SEC a multiple of USER_HZ. */
static uint64_t ns_to_ticks(uint64_t ns)
{
	return ns / (1000000000ull / sysconf(_SC_CLK_TCK));
}

/* ---- load ---- */

struct load {
	pid_t pids[MAX_CPUS];
	int n;
};

/* One busy child per online CPU: user time, and system time in getppid(). */
static void load_start(struct load *l)
{
	long i, n = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t parent = getpid();

	l->n = 0;
	for (i = 0; i < n && i < MAX_CPUS; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			unsigned long x;

			/* A test that bails out leaves no spinner behind. */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) ||
			    getppid() != parent)
				_exit(0);
			for (;;) {
				/* The barrier keeps the loop from being elided. */
				for (x = 0; x < 100000; x++)
					__asm__ __volatile__("" : : : "memory");
				getppid();
			}
		}
		if (pid > 0)
			l->pids[l->n++] = pid;
	}
}

static void load_stop(struct load *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		kill(l->pids[i], SIGKILL);
	for (i = 0; i < l->n; i++)
		waitpid(l->pids[i], NULL, 0);
	l->n = 0;
}

/* A RAM disk to read from, so that pgpgin moves (the 6.12 kernel has one). */
#define RAM_DISK	"/dev/ram0"

/*
 * Page faults, so that pgfault moves, direct reads of the RAM disk if
 * there is one (pgpgin), then some time for the ticks.
 */
static void churn(void)
{
	size_t len = 64 << 12;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t off;
	int fd;

	if (p != MAP_FAILED) {
		for (off = 0; off < len; off += 4096)
			p[off] = 1;
		fd = open(RAM_DISK, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (fd >= 0) {
			/* Not cached: every read is a bio, counted in sectors. */
			if (pread(fd, p, len, 0) < 0)
				perror(RAM_DISK);
			close(fd);
		}
		munmap(p, len);
	}
	nanosleep(&ts, NULL);
}

/* ---- small system helpers ---- */

static int cpu_count_online(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* nr_cpu_ids: the last possible CPU's number plus one. */
static int nr_cpu_ids(void)
{
	char buf[256], *p;

	if (read_file("/sys/devices/system/cpu/possible", buf, sizeof(buf)))
		return -1;
	p = buf + strlen(buf);
	while (p > buf && (p[-1] < '0' || p[-1] > '9'))
		p--;
	while (p > buf && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return atoi(p) + 1;
}

static int set_cpu1_online(int on)
{
	int fd = open(CPU1_ONLINE, O_WRONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

static int cpu1_is_online(void)
{
	char buf[8];

	if (read_file(CPU1_ONLINE, buf, sizeof(buf)))
		return -1;
	return buf[0] == '1';
}

/* The checks need a second CPU: say so plainly rather than skip. */
static int need_two_cpus(struct __test_metadata *_metadata)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	if (conf < 2 || access(CPU1_ONLINE, W_OK)) {
		TH_LOG("this test needs a guest with >= 2 CPUs and a hot-pluggable cpu1");
		TH_LOG("(%ld CPUs configured, %s: %s)", conf, CPU1_ONLINE,
		       strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- checks ---- */

#define EXPECT_BETWEEN(lo, v, hi, what) do {				\
	uint64_t __lo = (lo), __v = (v), __hi = (hi);			\
	if (__v < __lo || __v > __hi)					\
		TH_LOG("%s: %llu not in [%llu, %llu]", (what),		\
		       (unsigned long long)__v, (unsigned long long)__lo, \
		       (unsigned long long)__hi);			\
	EXPECT_TRUE(__v >= __lo && __v <= __hi);			\
} while (0)

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* One text, fd, text round on the node. */
static void check_node_round(struct __test_metadata *_metadata, int fd)
{
	static struct texts a, b;
	static struct stats_image f;
	char what[64];
	unsigned int i;

	ASSERT_EQ(0, read_texts(&a));
	ASSERT_EQ(0, stats_image_read(fd, &f));
	ASSERT_EQ(0, read_texts(&b));

	for (i = 0; i < NR_TIMES; i++) {
		snprintf(what, sizeof(what), "node %s", time_names[i]);
		EXPECT_BETWEEN(a.cpu[MAX_CPUS][i],
			       ns_to_ticks(stats_image_val(&f, time_names[i])),
			       b.cpu[MAX_CPUS][i], what);
	}
	EXPECT_BETWEEN(a.softirqs, stats_image_val(&f, "softirqs"), b.softirqs,
		       "softirqs");
	EXPECT_EQ(a.btime, stats_image_val(&f, "boot_time"));
	EXPECT_EQ(b.btime, stats_image_val(&f, "boot_time"));
	/* The averages change every 5 s, at once: one reading or the other. */
	for (i = 0; i < 3; i++)
		EXPECT_BETWEEN(min64(a.load[i], b.load[i]),
			       stats_image_val(&f, load_names[i]),
			       max64(a.load[i], b.load[i]), load_names[i]);
	for (i = 0; i < NR_MEM; i++) {
		uint64_t v = stats_image_val(&f, mem_keys[i][1]);
		uint64_t lo = min64(a.mem_kb[i], b.mem_kb[i]);
		uint64_t hi = max64(a.mem_kb[i], b.mem_kb[i]);

		/* Bytes, whole kB. */
		EXPECT_EQ(0u, v % 1024);
		if (i == 0) {
			EXPECT_EQ(a.mem_kb[0], v / 1024);
			continue;
		}
		EXPECT_BETWEEN(lo > MEM_TOLERANCE_KB ? lo - MEM_TOLERANCE_KB : 0,
			       v / 1024, hi + MEM_TOLERANCE_KB, mem_keys[i][1]);
	}
	for (i = 0; i < NR_VM; i++)
		EXPECT_BETWEEN(a.vm[i], stats_image_val(&f, vm_keys[i]), b.vm[i],
			       vm_keys[i]);
	EXPECT_EQ((uint64_t)cpu_count_online(), stats_image_val(&f, "online_sum"));
}

/* One text, fd, text round on a CPU that stays online. */
static void check_cpu_round(struct __test_metadata *_metadata, int fd,
			    int cpu)
{
	static struct texts a, b;
	static struct stats_image f;
	char what[64];
	unsigned int i;

	ASSERT_EQ(0, read_texts(&a));
	ASSERT_EQ(0, stats_image_read(fd, &f));
	ASSERT_EQ(0, read_texts(&b));
	ASSERT_TRUE(a.has_cpu[cpu] && b.has_cpu[cpu]);
	for (i = 0; i < NR_TIMES; i++) {
		snprintf(what, sizeof(what), "cpu%d %s", cpu, time_names[i]);
		EXPECT_BETWEEN(a.cpu[cpu][i],
			       ns_to_ticks(stats_image_val(&f, time_names[i])),
			       b.cpu[cpu][i], what);
	}
	EXPECT_EQ(1u, stats_image_val(&f, "online"));
}

/* ---- tests ---- */

/* The node's values equal /proc/stat, loadavg, meminfo and vmstat. */
TEST(node_equals_proc_text)
{
	static struct texts first, last;
	struct load l;
	int dev, fd, r;

	dev = host_open();
	ASSERT_LE(0, dev);
	fd = get_fd(dev, STATSFD_HOST_NODE, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, read_texts(&first));
	load_start(&l);
	for (r = 0; r < ROUNDS; r++) {
		churn();
		check_node_round(_metadata, fd);
	}
	load_stop(&l);
	ASSERT_EQ(0, read_texts(&last));
	/* The load moved the numbers, so the checks above could fail. */
	EXPECT_LT(first.cpu[MAX_CPUS][0], last.cpu[MAX_CPUS][0]);
	EXPECT_LT(first.vm[4], last.vm[4]);
	if (access(RAM_DISK, R_OK) == 0)
		EXPECT_LT(first.vm[0], last.vm[0]);
	close(fd);
	close(dev);
}

/* Every online CPU's fd equals its cpuN line. */
TEST(cpus_equal_proc_stat)
{
	static struct texts first, last;
	int dev, cpu, r, fds[MAX_CPUS];
	int n = 0, moved = 0;
	struct load l;

	dev = host_open();
	ASSERT_LE(0, dev);
	for (cpu = 0; cpu < MAX_CPUS; cpu++) {
		fds[cpu] = -1;
		if (sysconf(_SC_NPROCESSORS_CONF) <= cpu)
			continue;
		fds[cpu] = get_fd(dev, STATSFD_HOST_CPU, cpu);
		if (fds[cpu] == -ENODEV)
			continue;
		ASSERT_LE(0, fds[cpu]);
		n++;
	}
	ASSERT_EQ(cpu_count_online(), n);
	ASSERT_EQ(0, read_texts(&first));
	load_start(&l);
	for (r = 0; r < ROUNDS; r++) {
		churn();
		for (cpu = 0; cpu < MAX_CPUS; cpu++)
			if (fds[cpu] >= 0)
				check_cpu_round(_metadata, fds[cpu], cpu);
	}
	load_stop(&l);
	ASSERT_EQ(0, read_texts(&last));
	for (cpu = 0; cpu < MAX_CPUS; cpu++) {
		if (fds[cpu] < 0)
			continue;
		moved += first.cpu[cpu][0] < last.cpu[cpu][0];
		close(fds[cpu]);
	}
	/* Every busy child ran somewhere: user time grew. */
	EXPECT_LT(0, moved);
	close(dev);
}

/* Header, id and every descriptor of the node, as documented. */
TEST(node_descriptors)
{
	static struct stats_image f;
	static const char *const pre[] = { "softirqs", "boot_time",
		"load1_x100", "load5_x100", "load15_x100" };
	const struct statsfd_desc *d;
	unsigned int i, k = 0;
	int dev, fd;

	dev = host_open();
	ASSERT_LE(0, dev);
	fd = get_fd(dev, STATSFD_HOST_NODE, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, stats_image_read(fd, &f));
	EXPECT_STREQ("host-node", f.buf + f.h.id_offset);
	ASSERT_EQ(NR_TIMES + 5 + NR_MEM + NR_VM + 1, f.h.num_desc);

	for (i = 0; i < NR_TIMES; i++, k++) {
		d = stats_image_desc(&f, k);
		EXPECT_STREQ(time_names[i], d->name);
		EXPECT_EQ(STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_SECONDS |
			  STATSFD_BASE_POW10, d->flags);
		EXPECT_EQ(-9, d->exponent);
		EXPECT_EQ(1, d->size);
	}
	for (i = 0; i < 5; i++, k++) {
		d = stats_image_desc(&f, k);
		EXPECT_STREQ(pre[i], d->name);
		EXPECT_EQ(0, d->exponent);
		EXPECT_EQ(1, d->size);
	}
	EXPECT_EQ(STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_NONE |
		  STATSFD_BASE_POW10, stats_image_find(&f, "softirqs")->flags);
	EXPECT_EQ(STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS |
		  STATSFD_BASE_POW10, stats_image_find(&f, "boot_time")->flags);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(STATSFD_TYPE_INSTANT | STATSFD_UNIT_NONE |
			  STATSFD_BASE_POW10, stats_image_find(&f, load_names[i])->flags);
	for (i = 0; i < NR_MEM; i++, k++) {
		d = stats_image_desc(&f, k);
		EXPECT_STREQ(mem_keys[i][1], d->name);
		EXPECT_EQ(STATSFD_TYPE_INSTANT | STATSFD_UNIT_BYTES |
			  STATSFD_BASE_POW2, d->flags);
		EXPECT_EQ(0, d->exponent);
	}
	for (i = 0; i < NR_VM; i++, k++) {
		d = stats_image_desc(&f, k);
		EXPECT_STREQ(vm_keys[i], d->name);
		EXPECT_EQ(STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_NONE |
			  STATSFD_BASE_POW10, d->flags);
		EXPECT_EQ(0, d->exponent);
	}
	d = stats_image_desc(&f, k);
	EXPECT_STREQ("online_sum", d->name);
	EXPECT_EQ(STATSFD_TYPE_INSTANT | STATSFD_UNIT_NONE |
		  STATSFD_BASE_POW10 | STATSFD_AGG_SUM, d->flags);
	/* Not in the node: see the document. */
	EXPECT_EQ(NULL, stats_image_find(&f, "intr"));
	EXPECT_EQ(NULL, stats_image_find(&f, "swaptotal"));
	EXPECT_EQ(NULL, stats_image_find(&f, "swapfree"));
	EXPECT_EQ(NULL, stats_image_find(&f, "commitlimit"));
	EXPECT_EQ((uint64_t)cpu_count_online(), stats_image_val(&f, "online_sum"));
	close(fd);
	close(dev);
}

/* Header, id and descriptors of each online CPU. */
TEST(cpu_descriptors)
{
	static struct stats_image f;
	const struct statsfd_desc *d;
	char id[32];
	int dev, fd, cpu, n = 0;
	unsigned int i;

	dev = host_open();
	ASSERT_LE(0, dev);
	for (cpu = 0; cpu < sysconf(_SC_NPROCESSORS_CONF); cpu++) {
		fd = get_fd(dev, STATSFD_HOST_CPU, cpu);
		if (fd == -ENODEV)
			continue;
		ASSERT_LE(0, fd);
		n++;
		ASSERT_EQ(0, stats_image_read(fd, &f));
		snprintf(id, sizeof(id), "host-cpu%d", cpu);
		EXPECT_STREQ(id, f.buf + f.h.id_offset);
		ASSERT_EQ(NR_TIMES + 1, f.h.num_desc);
		for (i = 0; i < NR_TIMES; i++) {
			d = stats_image_desc(&f, i);
			EXPECT_STREQ(time_names[i], d->name);
			EXPECT_EQ(STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_SECONDS |
				  STATSFD_BASE_POW10, d->flags);
			EXPECT_EQ(-9, d->exponent);
		}
		d = stats_image_desc(&f, NR_TIMES);
		EXPECT_STREQ("online", d->name);
		EXPECT_EQ(STATSFD_TYPE_INSTANT | STATSFD_UNIT_BOOLEAN |
			  STATSFD_BASE_POW10, d->flags);
		EXPECT_EQ(1u, stats_image_val(&f, "online"));
		close(fd);
	}
	EXPECT_EQ(cpu_count_online(), n);
	close(dev);
}

/* cpu1 offline and back; cpu1 is brought back online whatever happens. */
FIXTURE(hotplug) {
	int dev;
	int node;
};

FIXTURE_SETUP(hotplug)
{
	self->dev = -1;
	self->node = -1;
	ASSERT_EQ(0, need_two_cpus(_metadata));
	ASSERT_EQ(1, cpu1_is_online());
	self->dev = host_open();
	ASSERT_LE(0, self->dev);
	self->node = get_fd(self->dev, STATSFD_HOST_NODE, 0);
	ASSERT_LE(0, self->node);
}

FIXTURE_TEARDOWN(hotplug)
{
	if (cpu1_is_online() == 0)
		set_cpu1_online(1);
	close(self->node);
	close(self->dev);
}

static short poll_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

TEST_F(hotplug, cpu1_offline_and_back)
{
	static struct stats_image f;
	int online = cpu_count_online();
	int cpu1, again;

	cpu1 = get_fd(self->dev, STATSFD_HOST_CPU, 1);
	ASSERT_LE(0, cpu1);
	/* Read: nothing pending. */
	ASSERT_EQ(0, stats_image_read(self->node, &f));
	EXPECT_EQ((uint64_t)online, stats_image_val(&f, "online_sum"));
	EXPECT_FALSE(poll_now(self->node) & POLLPRI);

	ASSERT_EQ(0, set_cpu1_online(0));
	EXPECT_TRUE(poll_now(self->node) & POLLPRI);
	ASSERT_EQ(0, stats_image_read(self->node, &f));
	EXPECT_FALSE(poll_now(self->node) & POLLPRI);
	EXPECT_EQ((uint64_t)online - 1, stats_image_val(&f, "online_sum"));
	EXPECT_EQ((uint64_t)cpu_count_online(), stats_image_val(&f, "online_sum"));
	/* The fd opened before still reads: its CPU is offline. */
	ASSERT_EQ(0, stats_image_read(cpu1, &f));
	EXPECT_STREQ("host-cpu1", f.buf + f.h.id_offset);
	EXPECT_EQ(0u, stats_image_val(&f, "online"));
	/* A new one cannot be made. */
	EXPECT_EQ(-ENODEV, get_fd(self->dev, STATSFD_HOST_CPU, 1));

	ASSERT_EQ(0, set_cpu1_online(1));
	EXPECT_TRUE(poll_now(self->node) & POLLPRI);
	ASSERT_EQ(0, stats_image_read(self->node, &f));
	EXPECT_EQ((uint64_t)online, stats_image_val(&f, "online_sum"));
	ASSERT_EQ(0, stats_image_read(cpu1, &f));
	EXPECT_EQ(1u, stats_image_val(&f, "online"));
	again = get_fd(self->dev, STATSFD_HOST_CPU, 1);
	ASSERT_LE(0, again);
	ASSERT_EQ(0, stats_image_read(again, &f));
	EXPECT_STREQ("host-cpu1", f.buf + f.h.id_offset);
	close(again);
	close(cpu1);
}

/* After the round trip, cpu1 still equals its text (and the node too). */
TEST_F(hotplug, values_after_round_trip)
{
	int cpu1;

	ASSERT_EQ(0, set_cpu1_online(0));
	ASSERT_EQ(0, set_cpu1_online(1));
	cpu1 = get_fd(self->dev, STATSFD_HOST_CPU, 1);
	ASSERT_LE(0, cpu1);
	churn();
	check_cpu_round(_metadata, cpu1, 1);
	check_node_round(_metadata, self->node);
	close(cpu1);
}

/* Readers of the node and of every CPU while cpu1 goes and comes back. */
struct reader {
	int fds[3];
	int stop;
	unsigned long reads;
	int err;
};

static void *reader_main(void *arg)
{
	static struct stats_image f;
	struct reader *r = arg;
	unsigned int i;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < 3; i++) {
			if (stats_image_read(r->fds[i], &f)) {
				r->err = errno ? errno : EIO;
				return NULL;
			}
			r->reads++;
		}
	}
	return NULL;
}

TEST_F(hotplug, reads_during_hotplug)
{
	struct reader r = { .fds = { self->node } };
	pthread_t t;
	int i;

	r.fds[1] = get_fd(self->dev, STATSFD_HOST_CPU, 0);
	ASSERT_LE(0, r.fds[1]);
	r.fds[2] = get_fd(self->dev, STATSFD_HOST_CPU, 1);
	ASSERT_LE(0, r.fds[2]);
	ASSERT_EQ(0, pthread_create(&t, NULL, reader_main, &r));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, set_cpu1_online(0));
		EXPECT_EQ(0, set_cpu1_online(1));
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, r.err);
	EXPECT_LT(0, r.reads);
	close(r.fds[1]);
	close(r.fds[2]);
}

TEST_F(hotplug, offline_cpu_is_enodev)
{
	ASSERT_EQ(0, set_cpu1_online(0));
	EXPECT_EQ(-ENODEV, get_fd(self->dev, STATSFD_HOST_CPU, 1));
	ASSERT_EQ(0, set_cpu1_online(1));
}

/* ---- the ioctl's errors, one test each ---- */

FIXTURE(bad) {
	int dev;
	struct statsfd_host_stats_fd a;
};

FIXTURE_SETUP(bad)
{
	self->dev = host_open();
	ASSERT_LE(0, self->dev);
	memset(&self->a, 0, sizeof(self->a));
}

FIXTURE_TEARDOWN(bad)
{
	close(self->dev);
}

/* The argument as given is valid: only the one change makes it fail. */
TEST_F(bad, baseline_is_valid)
{
	int fd = host_ioctl(self->dev, &self->a);

	ASSERT_LE(0, fd);
	close(fd);
	self->a.kind = STATSFD_HOST_CPU;
	fd = host_ioctl(self->dev, &self->a);
	ASSERT_LE(0, fd);
	close(fd);
}

TEST_F(bad, unknown_kind)
{
	self->a.kind = STATSFD_HOST_KIND_MAX + 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, unknown_kind_all_ones)
{
	self->a.kind = 0xffffffff;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, flags)
{
	self->a.flags = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, reserved0)
{
	self->a.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, reserved1)
{
	self->a.reserved[1] = 1ull << 63;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, reserved2)
{
	self->a.kind = STATSFD_HOST_CPU;
	self->a.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, cpu_for_node)
{
	self->a.kind = STATSFD_HOST_NODE;
	self->a.cpu = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, ifindex_for_cpu)
{
	self->a.kind = STATSFD_HOST_CPU;
	self->a.ifindex = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, major_for_cpu)
{
	self->a.kind = STATSFD_HOST_CPU;
	self->a.major = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, minor_for_cpu)
{
	self->a.kind = STATSFD_HOST_CPU;
	self->a.minor = 1;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, cpu_nr_cpu_ids)
{
	int fd, n = nr_cpu_ids();

	ASSERT_LT(0, n);
	self->a.kind = STATSFD_HOST_CPU;
	self->a.cpu = n - 1;
	/* The last possible CPU is a valid number (maybe offline). */
	fd = host_ioctl(self->dev, &self->a);
	EXPECT_NE(-EINVAL, fd);
	if (fd >= 0)
		close(fd);
	self->a.cpu = n;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, cpu_all_ones)
{
	self->a.kind = STATSFD_HOST_CPU;
	self->a.cpu = 0xffffffff;
	EXPECT_EQ(-EINVAL, host_ioctl(self->dev, &self->a));
}

TEST_F(bad, offline_cpu)
{
	ASSERT_EQ(0, need_two_cpus(_metadata));
	ASSERT_EQ(0, set_cpu1_online(0));
	self->a.kind = STATSFD_HOST_CPU;
	self->a.cpu = 1;
	EXPECT_EQ(-ENODEV, host_ioctl(self->dev, &self->a));
	ASSERT_EQ(0, set_cpu1_online(1));
	EXPECT_EQ(1, cpu1_is_online());
}

TEST_F(bad, bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_HOST_GET_STATS_FD, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(bad, null_pointer)
{
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_HOST_GET_STATS_FD, NULL));
	EXPECT_EQ(EFAULT, errno);
}

/* Another number in our magic, and KVM_GET_STATS_FD's own number. */
TEST_F(bad, wrong_command)
{
	EXPECT_EQ(-1, ioctl(self->dev, _IOW(STATSFD_HOST_IO, 0xcf,
					    struct statsfd_host_stats_fd),
			    &self->a));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->dev, _IO(0xAE, 0xce), &self->a));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(bad, wrong_size)
{
	EXPECT_EQ(-1, ioctl(self->dev, _IOW(STATSFD_HOST_IO, 0xce, uint64_t),
			    &self->a));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(bad, wrong_direction)
{
	EXPECT_EQ(-1, ioctl(self->dev, _IOWR(STATSFD_HOST_IO, 0xce,
					     struct statsfd_host_stats_fd),
			    &self->a));
	EXPECT_EQ(ENOTTY, errno);
}

/* The fd is O_CLOEXEC and read-only, like KVM's. */
TEST_F(bad, fd_cloexec_read_only)
{
	int fd = host_ioctl(self->dev, &self->a);

	ASSERT_LE(0, fd);
	EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDONLY, fcntl(fd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(-1, write(fd, "x", 1));
	EXPECT_EQ(EBADF, errno);
	close(fd);
}

/* /dev/statsfd_host is 0444: nobody (65534) opens it and gets a node fd. */
TEST(device_world_readable)
{
	struct stat st;
	int status;
	pid_t pid;

	ASSERT_EQ(0, stat(HOST_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0444, st.st_mode & 07777);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		static struct stats_image f;
		int dev, fd;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(10);
		if (geteuid() != 65534)
			_exit(11);
		dev = host_open();
		if (dev < 0)
			_exit(12);
		fd = get_fd(dev, STATSFD_HOST_NODE, 0);
		if (fd < 0)
			_exit(13);
		if (stats_image_read(fd, &f) ||
		    strcmp(f.buf + f.h.id_offset, "host-node"))
			_exit(14);
		/* Opening it for writing is not granted. */
		if (open(HOST_DEV, O_WRONLY | O_CLOEXEC) >= 0 || errno != EACCES)
			_exit(15);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
