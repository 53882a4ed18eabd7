// SPDX-License-Identifier: GPL-2.0
/*
 * vm_stats_test - the stats fds of statsfd_vm: every check upstream's
 * kvm_binary_stats_test makes (on the system, VM and vCPU fds, on a dup()'d
 * fd, a second fd, and after the VM and vCPU fds are closed), the schemas
 * as documented, exact counter values after deterministic runs, halts,
 * kicks and signals (bad-inputs.md #28), counter wrap (#21), aggregates
 * against the vCPUs they are computed from, and the debugfs text view.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

/*
 * kvm_binary_stats_test's stats_test(), plus what statsfd promises on top:
 * id at offset 24, header flags 0, no reserved descriptor bits, 8-aligned
 * offsets, each stat readable alone.  Closes @fd, like upstream, and checks
 * that it is gone.
 */
static void stats_test(struct __test_metadata *_metadata, int fd,
		       const char *id_prefix)
{
	struct statsfd_header header;
	size_t size_desc, size_data = 0;
	struct statsfd_desc *pdesc;
	__u64 *stats_data, *one;
	char *id, *descs;
	ssize_t ret;
	__u32 i;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(sizeof(header), pread(fd, &header, sizeof(header), 0));
	size_desc = sizeof(*pdesc) + header.name_size;

	/* upstream hard-codes the id right after the header */
	id = malloc(header.name_size);
	ASSERT_NE(NULL, id);
	ret = pread(fd, id, header.name_size, sizeof(header));
	ASSERT_EQ(header.name_size, ret);
	EXPECT_EQ(sizeof(header), header.id_offset);
	EXPECT_EQ(0, strncmp(id, id_prefix, strlen(id_prefix)))
	{
		TH_LOG("id \"%.*s\" does not start with \"%s\"",
		       (int)header.name_size, id, id_prefix);
	}
	EXPECT_LT(strnlen(id, header.name_size), header.name_size);
	EXPECT_EQ(0, header.flags);
	EXPECT_EQ(0, header.name_size % 8);

	ASSERT_NE(0, header.num_desc);
	EXPECT_TRUE(header.desc_offset &&
		    header.desc_offset >= sizeof(header) &&
		    header.data_offset && header.data_offset >= sizeof(header));
	EXPECT_EQ(0, header.desc_offset % 8);
	EXPECT_EQ(0, header.data_offset % 8);
	EXPECT_TRUE(header.desc_offset > header.data_offset ||
		    header.desc_offset + size_desc * header.num_desc <=
			    header.data_offset)
	{
		TH_LOG("descriptor block overlaps the data block");
	}

	descs = calloc(header.num_desc, size_desc);
	ASSERT_NE(NULL, descs);
	ret = pread(fd, descs, size_desc * header.num_desc, header.desc_offset);
	ASSERT_EQ(size_desc * header.num_desc, ret);

	for (i = 0; i < header.num_desc; i++) {
		__u32 type, unit, base;

		pdesc = (struct statsfd_desc *)(descs + i * size_desc);
		type = pdesc->flags & STATSFD_TYPE_MASK;
		unit = pdesc->flags & STATSFD_UNIT_MASK;
		base = pdesc->flags & STATSFD_BASE_MASK;

		EXPECT_LT(strnlen(pdesc->name, header.name_size),
			  header.name_size);
		EXPECT_LE(type, STATSFD_TYPE_MAX);
		EXPECT_LE(unit, STATSFD_UNIT_MAX);
		EXPECT_LE(base, STATSFD_BASE_MAX);
		EXPECT_LE(pdesc->flags & STATSFD_AGG_MASK, STATSFD_AGG_MAX);
		EXPECT_EQ(0, pdesc->flags & STATSFD_DESC_FLAGS_RESERVED);
		switch (unit) {
		case STATSFD_UNIT_NONE:
		case STATSFD_UNIT_BYTES:
		case STATSFD_UNIT_CYCLES:
			EXPECT_GE(pdesc->exponent, 0)
			{
				TH_LOG("%s", pdesc->name);
			}
			break;
		case STATSFD_UNIT_SECONDS:
			EXPECT_LE(pdesc->exponent, 0)
			{
				TH_LOG("%s", pdesc->name);
			}
			break;
		case STATSFD_UNIT_BOOLEAN:
			EXPECT_EQ(0, pdesc->exponent)
			{
				TH_LOG("%s", pdesc->name);
			}
			break;
		}
		EXPECT_NE(0, pdesc->size)
		{
			TH_LOG("%s", pdesc->name);
		}
		if (type == STATSFD_TYPE_LINEAR_HIST) {
			EXPECT_NE(0, pdesc->bucket_size)
			{
				TH_LOG("%s", pdesc->name);
			}
		} else {
			EXPECT_EQ(0, pdesc->bucket_size)
			{
				TH_LOG("%s", pdesc->name);
			}
		}
		EXPECT_EQ(0, pdesc->offset % 8)
		{
			TH_LOG("%s", pdesc->name);
		}
		if (pdesc->offset + pdesc->size * sizeof(*stats_data) >
		    size_data)
			size_data = pdesc->offset +
				    pdesc->size * sizeof(*stats_data);
	}

	EXPECT_TRUE(header.data_offset >= header.desc_offset ||
		    header.data_offset + size_data <= header.desc_offset)
	{
		TH_LOG("data block overlaps the descriptor block");
	}
	EXPECT_GE(size_data, header.num_desc * sizeof(*stats_data));

	stats_data = malloc(size_data);
	ASSERT_NE(NULL, stats_data);
	ret = pread(fd, stats_data, size_data, header.data_offset);
	ASSERT_EQ(size_data, ret);

	/* and stat by stat */
	one = malloc(size_data);
	ASSERT_NE(NULL, one);
	for (i = 0; i < header.num_desc; i++) {
		size_t len;

		pdesc = (struct statsfd_desc *)(descs + i * size_desc);
		len = pdesc->size * sizeof(*stats_data);
		ret = pread(fd, one, len, header.data_offset + pdesc->offset);
		EXPECT_EQ(len, ret)
		{
			TH_LOG("%s", pdesc->name);
		}
	}

	free(one);
	free(stats_data);
	free(descs);
	free(id);

	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(-1, fcntl(fd, F_GETFD))
	{
		TH_LOG("stats fd not freed");
	}
}

#define NUM_VM 4
#define NUM_VCPU 4

/* Upstream's main(), on statsfd_vm's VMs and vCPUs, plus the system fd. */
TEST(kvm_binary_stats_checks)
{
	int vcpu_stats_fds[NUM_VCPU], vcpus[NUM_VM][NUM_VCPU], vms[NUM_VM];
	int dev, sys_fd, vm_stats_fd, i, j;
	char prefix[64];

	dev = dev_open();
	ASSERT_GE(dev, 0)
	{
		TH_LOG("open %s: %m", STATSFD_VM_DEV);
	}

	sys_fd = stats_fd(dev);
	stats_test(_metadata, dup(sys_fd), "statsfd_vm");
	stats_test(_metadata, stats_fd(dev), "statsfd_vm");

	for (i = 0; i < NUM_VM; i++) {
		vms[i] = vm_create(dev);
		ASSERT_GE(vms[i], 0);
		for (j = 0; j < NUM_VCPU; j++) {
			vcpus[i][j] = vcpu_create(vms[i], j);
			ASSERT_GE(vcpus[i][j], 0);
		}
	}

	snprintf(prefix, sizeof(prefix), "vm-%d-", getpid());
	for (i = 0; i < NUM_VM; i++) {
		/* several references to one stats file */
		vm_stats_fd = stats_fd(vms[i]);
		stats_test(_metadata, dup(vm_stats_fd), prefix);
		/* several stats files on one VM */
		stats_test(_metadata, stats_fd(vms[i]), prefix);

		for (j = 0; j < NUM_VCPU; j++) {
			vcpu_stats_fds[j] = stats_fd(vcpus[i][j]);
			stats_test(_metadata, dup(vcpu_stats_fds[j]), prefix);
			stats_test(_metadata, stats_fd(vcpus[i][j]), prefix);
		}

		/*
		 * Close every direct handle on the VM: the stats fds must
		 * keep it (and its vCPUs) alive and readable.
		 */
		for (j = 0; j < NUM_VCPU; j++)
			EXPECT_EQ(0, close(vcpus[i][j]));
		EXPECT_EQ(0, close(vms[i]));

		stats_test(_metadata, vm_stats_fd, prefix);
		for (j = 0; j < NUM_VCPU; j++)
			stats_test(_metadata, vcpu_stats_fds[j], prefix);
	}

	/* the system fd outlives the device fd too */
	EXPECT_EQ(0, close(dev));
	stats_test(_metadata, sys_fd, "statsfd_vm");
}

/* One expected descriptor: the documented schema, checked field by field. */
struct want_desc {
	const char *name;
	__u32 flags;
	__s16 exponent;
	__u16 size;
	__u32 bucket_size;
};

#define W_CUM STATSFD_TYPE_CUMULATIVE
#define W_INST STATSFD_TYPE_INSTANT
#define W_PEAK STATSFD_TYPE_PEAK
#define W_LIN STATSFD_TYPE_LINEAR_HIST
#define W_LOG STATSFD_TYPE_LOG_HIST
#define W_SEC STATSFD_UNIT_SECONDS
#define W_BYTES (STATSFD_UNIT_BYTES | STATSFD_BASE_POW2)
#define W_CYC STATSFD_UNIT_CYCLES
#define W_BOOL STATSFD_UNIT_BOOLEAN
#define W_SUM STATSFD_AGG_SUM
#define W_MIN STATSFD_AGG_MINIMUM
#define W_MAX STATSFD_AGG_MAXIMUM
#define W_AVG STATSFD_AGG_AVERAGE
#define W_CNZ STATSFD_AGG_COUNT_NONZERO

static const struct want_desc vcpu_schema[] = {
	{ "exits", W_CUM, 0, 1, 0 },
	{ "io_exits", W_CUM, 0, 1, 0 },
	{ "mmio_exits", W_CUM, 0, 1, 0 },
	{ "hypercall_exits", W_CUM, 0, 1, 0 },
	{ "halt_exits", W_CUM, 0, 1, 0 },
	{ "signal_exits", W_CUM, 0, 1, 0 },
	{ "halt_successful_poll", W_CUM, 0, 1, 0 },
	{ "halt_attempted_poll", W_CUM, 0, 1, 0 },
	{ "halt_poll_invalid", W_CUM, 0, 1, 0 },
	{ "halt_wakeup", W_CUM, 0, 1, 0 },
	{ "halt_poll_success_ns", W_CUM | W_SEC, -9, 1, 0 },
	{ "halt_poll_fail_ns", W_CUM | W_SEC, -9, 1, 0 },
	{ "halt_wait_ns", W_CUM | W_SEC, -9, 1, 0 },
	{ "halt_poll_success_hist", W_LOG | W_SEC, -9, HIST_BUCKETS, 0 },
	{ "halt_poll_fail_hist", W_LOG | W_SEC, -9, HIST_BUCKETS, 0 },
	{ "halt_wait_hist", W_LOG | W_SEC, -9, HIST_BUCKETS, 0 },
	{ "run_exits_hist", W_LIN, 0, HIST_BUCKETS, RUN_HIST_BUCKET },
	{ "blocking", W_INST | W_BOOL, 0, 1, 0 },
	{ "max_run_exits", W_PEAK, 0, 1, 0 },
	{ "max_halt_wait_ns", W_PEAK | W_SEC, -9, 1, 0 },
	{ "io_bytes", W_CUM | W_BYTES, 0, 1, 0 },
	{ "guest_cycles", W_CUM | W_CYC, 0, 1, 0 },
	{ "runs", W_CUM, 0, 1, 0 },
	/* with update windows: the last two, after everything else */
	{ STATSFD_STAT_SAMPLE_NS, W_INST | W_SEC, -9, 1, 0 },
	{ STATSFD_STAT_GENERATION, W_CUM, 0, 1, 0 },
};

static const struct want_desc vm_schema[] = {
	{ "vcpus_created", W_CUM, 0, 1, 0 },
	{ "kicks", W_CUM, 0, 1, 0 },
	{ "stats_fds_open", W_INST, 0, 1, 0 },
	{ "exits_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "exits_min", W_INST | W_MIN, 0, 1, 0 },
	{ "exits_max", W_INST | W_MAX, 0, 1, 0 },
	{ "exits_avg", W_INST | W_AVG, 0, 1, 0 },
	{ "io_exits_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "mmio_exits_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "hypercall_exits_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "halt_exits_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "signal_exits_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "halt_successful_poll_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "halt_attempted_poll_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "halt_poll_invalid_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "halt_wakeup_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "halt_poll_success_ns_sum", W_CUM | W_SEC | W_SUM, -9, 1, 0 },
	{ "halt_poll_fail_ns_sum", W_CUM | W_SEC | W_SUM, -9, 1, 0 },
	{ "halt_wait_ns_sum", W_CUM | W_SEC | W_SUM, -9, 1, 0 },
	{ "halt_wait_ns_min", W_INST | W_SEC | W_MIN, -9, 1, 0 },
	{ "halt_wait_ns_max", W_INST | W_SEC | W_MAX, -9, 1, 0 },
	{ "halt_wait_ns_avg", W_INST | W_SEC | W_AVG, -9, 1, 0 },
	{ "halt_wait_hist_sum", W_LOG | W_SEC | W_SUM, -9, HIST_BUCKETS, 0 },
	{ "run_exits_hist_sum", W_LIN | W_SUM, 0, HIST_BUCKETS,
	  RUN_HIST_BUCKET },
	{ "blocking_sum", W_INST | W_SUM, 0, 1, 0 },
	{ "blocking_count_nonzero", W_INST | W_CNZ, 0, 1, 0 },
	{ "max_run_exits_max", W_INST | W_MAX, 0, 1, 0 },
	{ "max_halt_wait_ns_max", W_INST | W_SEC | W_MAX, -9, 1, 0 },
	{ "io_bytes_sum", W_CUM | W_BYTES | W_SUM, 0, 1, 0 },
	{ "guest_cycles_sum", W_CUM | W_CYC | W_SUM, 0, 1, 0 },
	{ "runs_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "runs_count_nonzero", W_INST | W_CNZ, 0, 1, 0 },
	/* with update windows: the last two, after everything else */
	{ STATSFD_STAT_SAMPLE_NS, W_INST | W_SEC, -9, 1, 0 },
	{ STATSFD_STAT_GENERATION, W_CUM, 0, 1, 0 },
};

static const struct want_desc sys_schema[] = {
	{ "vms_created", W_CUM, 0, 1, 0 },
	{ "vms_alive", W_INST, 0, 1, 0 },
	{ "max_vms_alive", W_PEAK, 0, 1, 0 },
	{ "vcpus_created", W_CUM, 0, 1, 0 },
	{ "vcpus_alive", W_INST, 0, 1, 0 },
	{ "stats_fds_open", W_INST, 0, 1, 0 },
	{ "vcpus_created_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "vcpus_created_max", W_INST | W_MAX, 0, 1, 0 },
	{ "vcpus_created_avg", W_INST | W_AVG, 0, 1, 0 },
	{ "kicks_sum", W_CUM | W_SUM, 0, 1, 0 },
	{ "stats_fds_open_sum", W_INST | W_SUM, 0, 1, 0 },
};

/*
 * Every documented stat, in order, with its type, unit, base, exponent,
 * size and bucket size; the plain stats tile the start of the data block
 * in order, the aggregates follow, and (with update windows) sample_ns and
 * generation end it.
 */
static void schema_test(struct __test_metadata *_metadata, int fd,
			const struct want_desc *want, size_t num)
{
	struct sfile s;
	__u32 expect_offset = 0;
	size_t i;

	ASSERT_EQ(0, sfile_parse(fd, &s));
	EXPECT_EQ(STATSFD_NAME_SIZE_DEFAULT, s.hdr.name_size);
	ASSERT_EQ(num, s.hdr.num_desc);
	for (i = 0; i < num; i++) {
		const struct statsfd_desc *d = sfile_desc(&s, i);

		EXPECT_STREQ(want[i].name, d->name);
		EXPECT_EQ(want[i].flags, d->flags)
		{
			TH_LOG("%s", d->name);
		}
		EXPECT_EQ(want[i].exponent, d->exponent)
		{
			TH_LOG("%s", d->name);
		}
		EXPECT_EQ(want[i].size, d->size)
		{
			TH_LOG("%s", d->name);
		}
		EXPECT_EQ(want[i].bucket_size, d->bucket_size)
		{
			TH_LOG("%s", d->name);
		}
		EXPECT_EQ(expect_offset, d->offset)
		{
			TH_LOG("%s", d->name);
		}
		expect_offset += d->size * 8;
	}
	EXPECT_EQ(expect_offset, s.data_size);
	/* the stats of update windows, exactly, where the ABI puts them */
	if (!strcmp(want[num - 1].name, STATSFD_STAT_GENERATION)) {
		const struct statsfd_desc *d = sfile_desc(&s, num - 2);

		EXPECT_STREQ(STATSFD_STAT_SAMPLE_NS, d->name);
		EXPECT_EQ(0x021, d->flags);
		EXPECT_EQ(-9, d->exponent);
		EXPECT_EQ(1, d->size);
		EXPECT_EQ(s.data_size - 16, d->offset);
		d = sfile_desc(&s, num - 1);
		EXPECT_STREQ(STATSFD_STAT_GENERATION, d->name);
		EXPECT_EQ(0x000, d->flags);
		EXPECT_EQ(0, d->exponent);
		EXPECT_EQ(1, d->size);
		EXPECT_EQ(s.data_size - 8, d->offset);
	} else {
		EXPECT_EQ(NULL, sfile_find(&s, STATSFD_STAT_SAMPLE_NS));
		EXPECT_EQ(NULL, sfile_find(&s, STATSFD_STAT_GENERATION));
	}
	sfile_free(&s);
	close(fd);
}

TEST(schemas_as_documented)
{
	struct vm_env e;

	ASSERT_VM_ENV(&e, -1, 1, NULL, 0);
	schema_test(_metadata, stats_fd(e.dev), sys_schema,
		    ARRAY_SIZE(sys_schema));
	schema_test(_metadata, stats_fd(e.vm), vm_schema,
		    ARRAY_SIZE(vm_schema));
	schema_test(_metadata, stats_fd(e.vcpu[0]), vcpu_schema,
		    ARRAY_SIZE(vcpu_schema));
	vm_env_close(&e);
}

/* Reads the /proc/self/fd link of @fd into @buf. */
static void fd_link(int fd, char *buf, size_t size)
{
	char path[64];
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	len = readlink(path, buf, size - 1);
	buf[len < 0 ? 0 : len] = 0;
}

/* fdinfo shows "<key>:\t<value>": returns 1 if it has exactly that line. */
static int fdinfo_has(int fd, const char *key, const char *value)
{
	char path[64], line[256], want[256];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	snprintf(want, sizeof(want), "%s:\t%s\n", key, value);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, want))
			found = 1;
	fclose(f);
	return found;
}

/*
 * Names in /proc/PID/fd as PLAN.md fixes them, ids as documented, fdinfo
 * lines, and the fd flags: every fd O_CLOEXEC, stats fds O_RDONLY.
 */
TEST(names_ids_fdinfo_and_flags)
{
	int dev, vm, vm2, vcpu, sfd[3], fd2, i, pid;
	char link[128], id[64], tail[64];
	unsigned long long n;
	struct sfile s;

	dev = dev_open();
	ASSERT_GE(dev, 0);
	vm = vm_create(dev);
	ASSERT_GE(vm, 0);
	vcpu = vcpu_create(vm, 7);
	ASSERT_GE(vcpu, 0);
	sfd[0] = stats_fd(dev);
	sfd[1] = stats_fd(vm);
	sfd[2] = stats_fd(vcpu);

	fd_link(vm, link, sizeof(link));
	EXPECT_STREQ("anon_inode:statsfd-vm", link);
	fd_link(vcpu, link, sizeof(link));
	EXPECT_STREQ("anon_inode:statsfd-vcpu:7", link);
	for (i = 0; i < 3; i++) {
		ASSERT_GE(sfd[i], 0);
		fd_link(sfd[i], link, sizeof(link));
		EXPECT_STREQ("anon_inode:statsfd", link);
		EXPECT_EQ(FD_CLOEXEC, fcntl(sfd[i], F_GETFD));
		EXPECT_EQ(O_RDONLY, fcntl(sfd[i], F_GETFL) & O_ACCMODE);
	}
	EXPECT_EQ(FD_CLOEXEC, fcntl(vm, F_GETFD));
	EXPECT_EQ(FD_CLOEXEC, fcntl(vcpu, F_GETFD));

	EXPECT_TRUE(fdinfo_has(sfd[0], "statsfd-id", "statsfd_vm"));
	EXPECT_TRUE(fdinfo_has(sfd[0], "statsfd-schema", "statsfd_vm.system"));

	ASSERT_EQ(0, sfile_parse(sfd[1], &s));
	snprintf(id, sizeof(id), "%s", s.id);
	sfile_free(&s);
	/* "vm-<pid>-<n>", n a device-wide sequence number */
	i = sscanf(id, "vm-%d-%llu%63s", &pid, &n, tail);
	EXPECT_EQ(2, i);
	EXPECT_EQ(getpid(), pid);
	EXPECT_TRUE(fdinfo_has(sfd[1], "statsfd-id", id));
	EXPECT_TRUE(fdinfo_has(sfd[1], "statsfd-schema", "statsfd_vm.vm"));

	ASSERT_EQ(0, sfile_parse(sfd[2], &s));
	snprintf(link, sizeof(link), "%s/vcpu-7", id);
	EXPECT_STREQ(link, s.id);
	sfile_free(&s);
	EXPECT_TRUE(fdinfo_has(sfd[2], "statsfd-id", link));
	EXPECT_TRUE(fdinfo_has(sfd[2], "statsfd-schema", "statsfd_vm.vcpu"));

	/* two VMs of one process have different ids */
	vm2 = vm_create(dev);
	ASSERT_GE(vm2, 0);
	fd2 = stats_fd(vm2);
	ASSERT_EQ(0, sfile_parse(fd2, &s));
	EXPECT_STRNE(id, s.id);
	sfile_free(&s);
	close(fd2);
	close(vm2);

	for (i = 0; i < 3; i++)
		close(sfd[i]);
	close(vcpu);
	close(vm);
	close(dev);
}

FIXTURE(vcpu)
{
	struct vm_env e; /* a VM with vCPU 0, stats fds of both */
	struct sfile s; /* the vCPU's stats fd parsed */
	struct sfile vs; /* the VM's stats fd parsed */
};

FIXTURE_SETUP(vcpu)
{
	ASSERT_VM_ENV(&self->e, -1, 1, NULL, VM_ENV_STATS);
	ASSERT_EQ(0, sfile_parse(self->e.vcpu_stats[0], &self->s));
	ASSERT_EQ(0, sfile_parse(self->e.vm_stats, &self->vs));
}

FIXTURE_TEARDOWN(vcpu)
{
	sfile_free(&self->s);
	sfile_free(&self->vs);
	vm_env_close(&self->e);
}

/* Re-read the vCPU's data block; value of @name. */
#define V(name) sfile_val(&self->s, name)
#define REREAD() ASSERT_EQ(0, sfile_read_data(self->e.vcpu_stats[0], &self->s))

/*
 * A fresh vCPU reads all zero, but for the stats of the read itself:
 * sample_ns is the CLOCK_BOOTTIME time of the read, and generation the
 * update windows so far, which is also 0 here (creating a vCPU opens no
 * window on it: vcpus_created and stats_fds_open are the VM's), and so is
 * the mapping's seq.
 */
TEST_F(vcpu, fresh_vcpu_is_zero)
{
	long long ns_off = sfile_off(&self->s, STATSFD_STAT_SAMPLE_NS);
	long long gen_off = sfile_off(&self->s, STATSFD_STAT_GENERATION);
	const struct statsfd_mmap_header *mh;
	__u64 t0, t1, ns, gen;
	size_t i, len;

	ASSERT_LE(0, ns_off);
	ASSERT_LE(0, gen_off);
	ns_off = (ns_off - self->s.hdr.data_offset) / 8;
	gen_off = (gen_off - self->s.hdr.data_offset) / 8;
	t0 = boottime_ns();
	REREAD();
	t1 = boottime_ns();
	for (i = 0; i < self->s.data_size / 8; i++) {
		if ((long long)i == ns_off || (long long)i == gen_off)
			continue;
		EXPECT_EQ(0, self->s.data[i])
		{
			TH_LOG("u64 %zu", i);
		}
	}
	ns = self->s.data[ns_off];
	gen = self->s.data[gen_off];
	EXPECT_NE(0, ns);
	EXPECT_LE(t0, ns);
	EXPECT_GE(t1, ns);
	EXPECT_EQ(0, gen);

	mh = stats_map(self->e.vcpu_stats[0], &len);
	ASSERT_NE(MAP_FAILED, mh)
	{
		TH_LOG("mmap: %m");
	}
	EXPECT_EQ(gen, mh->seq);
	for (i = 0; i < mh->data_size / 8; i++)
		EXPECT_EQ(0, map_val(mh, i));
	munmap((void *)mh, len);
}

/* Exits without halts: every counter they touch, exactly. */
TEST_F(vcpu, exits_are_exact)
{
	struct statsfd_vm_run run = {
		.io_exits = 100,
		.mmio_exits = 20,
		.hypercall_exits = 3,
		.io_bytes = 4,
		.cycles_per_exit = 1000,
	};

	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(123, run.exits_done);
	REREAD();
	EXPECT_EQ(123, V("exits"));
	EXPECT_EQ(100, V("io_exits"));
	EXPECT_EQ(20, V("mmio_exits"));
	EXPECT_EQ(3, V("hypercall_exits"));
	EXPECT_EQ(0, V("halt_exits"));
	EXPECT_EQ(0, V("signal_exits"));
	EXPECT_EQ(400, V("io_bytes"));
	EXPECT_EQ(123000, V("guest_cycles"));
	EXPECT_EQ(1, V("runs"));
	EXPECT_EQ(123, V("max_run_exits"));
	/* 123 exits: bucket 1 of [64, 128) */
	EXPECT_EQ(1, sfile_val_at(&self->s, "run_exits_hist", 1));
	EXPECT_EQ(1, sfile_hist_sum(&self->s, "run_exits_hist"));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_wait_hist"));

	/* a second run adds up; the peak keeps the larger run */
	run.io_exits = 5000;
	run.mmio_exits = 0;
	run.hypercall_exits = 0;
	run.io_bytes = 4096;
	run.cycles_per_exit = 7;
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(5000, run.exits_done);
	REREAD();
	EXPECT_EQ(5123, V("exits"));
	EXPECT_EQ(5100, V("io_exits"));
	EXPECT_EQ(400 + 5000ULL * 4096, V("io_bytes"));
	EXPECT_EQ(123000 + 35000, V("guest_cycles"));
	EXPECT_EQ(2, V("runs"));
	EXPECT_EQ(5000, V("max_run_exits"));
	/* 5000 exits is past the last bucket's start (31 * 64): open end */
	EXPECT_EQ(1, sfile_val_at(&self->s, "run_exits_hist", 31));

	run.io_exits = 1;
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(1, run.exits_done);
	REREAD();
	EXPECT_EQ(5000, V("max_run_exits"));
	EXPECT_EQ(2, sfile_val_at(&self->s, "run_exits_hist", 0) +
			     sfile_val_at(&self->s, "run_exits_hist", 1));
	EXPECT_EQ(0, V("blocking"));
}

/* An empty workload is still a run, of zero exits. */
TEST_F(vcpu, empty_run_counts_a_run)
{
	struct statsfd_vm_run run = { .exits_done = 99 };

	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(0, run.exits_done);
	REREAD();
	EXPECT_EQ(1, V("runs"));
	EXPECT_EQ(0, V("exits"));
	EXPECT_EQ(1, sfile_val_at(&self->s, "run_exits_hist", 0));
	EXPECT_EQ(0, V("max_run_exits"));
}

/*
 * Halts that do not poll and time out: each sleeps at least the timeout
 * (hrtimers never fire early), nothing else.
 */
TEST_F(vcpu, timed_halts_sleep_and_count_exactly)
{
	struct statsfd_vm_run run = {
		.halt_exits = 5,
		.halt_timeout_ns = 200000,
		.cycles_per_exit = 3,
	};
	__u64 low = 0;
	int b;

	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(5, run.exits_done);
	REREAD();
	EXPECT_EQ(5, V("exits"));
	EXPECT_EQ(5, V("halt_exits"));
	EXPECT_EQ(15, V("guest_cycles"));
	EXPECT_EQ(0, V("halt_attempted_poll"));
	EXPECT_EQ(0, V("halt_successful_poll"));
	EXPECT_EQ(0, V("halt_wakeup"));
	EXPECT_EQ(5, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_GE(V("halt_wait_ns"), 5 * 200000ULL);
	EXPECT_GE(V("max_halt_wait_ns"), 200000ULL);
	EXPECT_LE(V("max_halt_wait_ns"), V("halt_wait_ns"));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_poll_success_hist"));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_poll_fail_hist"));
	EXPECT_EQ(0, V("blocking"));
	/* each sample is at least 200 us: bucket 18, [2^17, 2^18) ns, up */
	for (b = 0; b <= 17; b++)
		low += sfile_val_at(&self->s, "halt_wait_hist", b);
	EXPECT_EQ(0, low);
}

/* Polling halts that nobody kicks: every poll fails, then sleeps. */
TEST_F(vcpu, unkicked_polls_fail)
{
	struct statsfd_vm_run run = {
		.halt_exits = 4,
		.halt_poll_ns = 20000,
		.halt_timeout_ns = 50000,
	};

	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	REREAD();
	EXPECT_EQ(4, V("halt_exits"));
	EXPECT_EQ(4, V("halt_attempted_poll"));
	EXPECT_EQ(0, V("halt_successful_poll"));
	EXPECT_EQ(0, V("halt_poll_invalid"));
	EXPECT_EQ(0, V("halt_poll_success_ns"));
	EXPECT_EQ(4, sfile_hist_sum(&self->s, "halt_poll_fail_hist"));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_poll_success_hist"));
	EXPECT_EQ(4, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_GE(V("halt_wait_ns"), 4 * 50000ULL);
	EXPECT_EQ(0, V("halt_wakeup"));
}

/*
 * A kick before the run is a pending wakeup: the halt finds it in its
 * first poll check, so the poll succeeds after 0 ns (bucket 0) and the
 * vCPU never sleeps, even with an unbounded halt.
 */
TEST_F(vcpu, pending_kick_ends_the_poll)
{
	struct statsfd_vm_run run = {
		.halt_exits = 1,
		.halt_poll_ns = 100000,
		.halt_timeout_ns = 0,
	};

	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	REREAD();
	EXPECT_EQ(1, V("halt_exits"));
	EXPECT_EQ(1, V("halt_attempted_poll"));
	EXPECT_EQ(1, V("halt_successful_poll"));
	EXPECT_EQ(0, V("halt_poll_invalid"));
	EXPECT_EQ(0, V("halt_poll_success_ns"));
	EXPECT_EQ(1, sfile_val_at(&self->s, "halt_poll_success_hist", 0));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_poll_fail_hist"));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_EQ(0, V("halt_wait_ns"));
	EXPECT_EQ(0, V("halt_wakeup"));

	ASSERT_EQ(0, sfile_read_data(self->e.vm_stats, &self->vs));
	EXPECT_EQ(1, sfile_val(&self->vs, "kicks"));
}

/* Without polling, a pending kick ends the halt before it sleeps. */
TEST_F(vcpu, pending_kick_without_poll)
{
	struct statsfd_vm_run run = { .halt_exits = 1 };

	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	REREAD();
	EXPECT_EQ(1, V("halt_exits"));
	EXPECT_EQ(0, V("halt_attempted_poll"));
	EXPECT_EQ(0, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_EQ(0, V("halt_wakeup"));
}

/* Kicks do not add up: three kicks end one halt, the next one times out. */
TEST_F(vcpu, kicks_coalesce)
{
	struct statsfd_vm_run run = {
		.halt_exits = 2,
		.halt_timeout_ns = 100000,
	};

	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	REREAD();
	EXPECT_EQ(2, V("halt_exits"));
	EXPECT_EQ(1, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_GE(V("halt_wait_ns"), 100000ULL);
	EXPECT_EQ(0, V("halt_wakeup"));
	ASSERT_EQ(0, sfile_read_data(self->e.vm_stats, &self->vs));
	EXPECT_EQ(3, sfile_val(&self->vs, "kicks"));
}

/*
 * A RUN in a thread of its own.  @tid and @done are written by the thread
 * and polled by the test, hence the atomic accesses.
 */
struct runner {
	pthread_t thread;
	int vcpu;
	struct statsfd_vm_run run;
	int ret;
	int err;
	__u64 end_ns;
	int tid;
	int done;
};

static void *runner_fn(void *arg)
{
	struct runner *r = arg;

	__atomic_store_n(&r->tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	r->ret = vcpu_run(r->vcpu, &r->run);
	r->err = errno;
	r->end_ns = now_ns();
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Poll @name of stats fd @fd until it reads @want; false after 20 s. */
static bool wait_stat(int fd, const char *name, __u64 want)
{
	__u64 deadline = now_ns() + 20000000000ULL;

	while (now_ns() < deadline) {
		if (stat_get(fd, name) == want)
			return true;
		usleep(1000);
	}
	return false;
}

/* Poll @name of stats fd @fd until it is not 0; false after 20 s. */
static bool wait_stat_nonzero(int fd, const char *name)
{
	__u64 deadline = now_ns() + 20000000000ULL;

	while (now_ns() < deadline) {
		if (stat_get(fd, name) != 0)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * A kick wakes a vCPU asleep in an unbounded halt: blocking reads 1 while
 * it sleeps (and the VM counts it), halt_wakeup counts the wakeup.  The
 * stats are read while RUN holds the vCPU: readers never wait for it.
 */
TEST_F(vcpu, kick_wakes_a_sleeping_halt)
{
	struct runner r = {
		.vcpu = self->e.vcpu[0],
		.run = { .halt_exits = 1 },
	};

	ASSERT_EQ(0, pthread_create(&r.thread, NULL, runner_fn, &r));
	ASSERT_TRUE(wait_stat(self->e.vcpu_stats[0], "blocking", 1));
	ASSERT_EQ(0, sfile_read_data(self->e.vm_stats, &self->vs));
	EXPECT_EQ(1, sfile_val(&self->vs, "blocking_count_nonzero"));
	EXPECT_EQ(1, sfile_val(&self->vs, "blocking_sum"));
	REREAD();
	EXPECT_EQ(1, V("halt_exits"));
	EXPECT_EQ(1, V("runs"));

	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, pthread_join(r.thread, NULL));
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(1, r.run.exits_done);
	REREAD();
	EXPECT_EQ(0, V("blocking"));
	EXPECT_EQ(1, V("halt_wakeup"));
	EXPECT_EQ(1, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_EQ(V("halt_wait_ns"), V("max_halt_wait_ns"));
	EXPECT_EQ(1, V("exits"));
	ASSERT_EQ(0, sfile_read_data(self->e.vm_stats, &self->vs));
	EXPECT_EQ(0, sfile_val(&self->vs, "blocking_count_nonzero"));
}

static void on_sigusr1(int sig)
{
}

/*
 * bad-inputs.md #28: a signal to a thread asleep in a halt ends the run
 * with -EINTR promptly, and the stats count a signal exit.  SA_RESTART is
 * set on purpose: the run must return -EINTR, not be restarted.
 */
TEST_F(vcpu, signal_during_halt_returns_eintr_28)
{
	struct sigaction sa = { .sa_handler = on_sigusr1,
				.sa_flags = SA_RESTART };
	struct runner r = {
		.vcpu = self->e.vcpu[0],
		.run = { .io_exits = 2, .halt_exits = 3 },
	};
	__u64 sent;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&r.thread, NULL, runner_fn, &r));
	ASSERT_TRUE(wait_stat(self->e.vcpu_stats[0], "blocking", 1));
	sent = now_ns();
	ASSERT_EQ(0, pthread_kill(r.thread, SIGUSR1));
	ASSERT_EQ(0, pthread_join(r.thread, NULL));
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EINTR, r.err);
	/* "promptly": generous for a TCG guest, far below "never" */
	EXPECT_LT(r.end_ns - sent, 5000000000ULL);
	/* the two I/O exits and the halt the signal ended */
	EXPECT_EQ(3, r.run.exits_done);

	REREAD();
	EXPECT_EQ(1, V("signal_exits"));
	EXPECT_EQ(2, V("io_exits"));
	EXPECT_EQ(1, V("halt_exits"));
	EXPECT_EQ(4, V("exits"));
	EXPECT_EQ(1, sfile_hist_sum(&self->s, "halt_wait_hist"));
	EXPECT_EQ(0, V("halt_wakeup"));
	EXPECT_EQ(0, V("blocking"));
	EXPECT_EQ(4, V("max_run_exits"));
	EXPECT_EQ(1, sfile_val_at(&self->s, "run_exits_hist", 0));

	/* the vCPU runs again afterwards */
	ASSERT_EQ(0, vcpu_run_exits(self->e.vcpu[0], 1, 0, 0));
	REREAD();
	EXPECT_EQ(2, V("runs"));
	EXPECT_EQ(1, V("signal_exits"));
}

/*
 * #28 for a busy run: a signal during a run of 2^32 exits ends it long
 * before the end; exits is the sum of the exits by reason, signal included.
 */
TEST_F(vcpu, signal_during_long_run_returns_eintr_28)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	struct runner r = {
		.vcpu = self->e.vcpu[0],
		.run = { .io_exits = STATSFD_VM_RUN_EXITS_MAX,
			 .cycles_per_exit = 2 },
	};
	__u64 sent;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&r.thread, NULL, runner_fn, &r));
	/* wait until it is under way */
	ASSERT_TRUE(wait_stat_nonzero(self->e.vcpu_stats[0], "io_exits"));
	sent = now_ns();
	ASSERT_EQ(0, pthread_kill(r.thread, SIGUSR1));
	ASSERT_EQ(0, pthread_join(r.thread, NULL));
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EINTR, r.err);
	EXPECT_LT(r.end_ns - sent, 5000000000ULL);

	REREAD();
	EXPECT_EQ(1, V("signal_exits"));
	EXPECT_LT(V("io_exits"), STATSFD_VM_RUN_EXITS_MAX);
	/* RUN reports exactly what the stats counted */
	EXPECT_EQ(V("io_exits"), r.run.exits_done);
	EXPECT_NE(0, r.run.exits_done);
	EXPECT_EQ(V("io_exits") + 1, V("exits"));
	EXPECT_EQ(2 * V("io_exits"), V("guest_cycles"));
	EXPECT_EQ(V("exits"), V("max_run_exits"));
	EXPECT_EQ(1, sfile_hist_sum(&self->s, "run_exits_hist"));
}

/* State letter of task @tid (a thread or a process) in /proc, or 0. */
static char task_state(int tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * Wait until task @tid sleeps uninterruptibly ('D': a killable sleep, as
 * in mutex_lock_killable()); false after 20 s.
 */
static bool wait_task_d(int tid)
{
	__u64 deadline = now_ns() + 20000000000ULL;

	while (now_ns() < deadline) {
		if (task_state(tid) == 'D')
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * A RUN waiting for the vCPU (another thread's RUN holds it) waits
 * killably, as KVM_RUN does for vcpu->mutex: a signal that is not fatal
 * does not end the wait.  It stays pending and ends the RUN, once that
 * has the vCPU, before its first exit: -EINTR, exits_done 0, and a signal
 * exit counted.  So every -EINTR of RUN is a counted signal exit.
 */
TEST_F(vcpu, signal_while_waiting_for_the_vcpu)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	struct runner a = {
		.vcpu = self->e.vcpu[0],
		.run = { .halt_exits = 1 },
	};
	struct runner b = {
		.vcpu = self->e.vcpu[0],
		.run = { .io_exits = 10, .exits_done = 77 },
	};
	int tid = 0, i;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&a.thread, NULL, runner_fn, &a));
	ASSERT_TRUE(wait_stat(self->e.vcpu_stats[0], "blocking", 1));
	ASSERT_EQ(0, pthread_create(&b.thread, NULL, runner_fn, &b));
	for (i = 0; i < 20000 && !tid; i++) {
		tid = __atomic_load_n(&b.tid, __ATOMIC_SEQ_CST);
		usleep(1000);
	}
	ASSERT_NE(0, tid);
	ASSERT_TRUE(wait_task_d(tid));

	ASSERT_EQ(0, pthread_kill(b.thread, SIGUSR1));
	usleep(300000);
	EXPECT_EQ(0, __atomic_load_n(&b.done, __ATOMIC_SEQ_CST));
	EXPECT_EQ('D', task_state(tid));
	REREAD();
	EXPECT_EQ(1, V("runs"));
	EXPECT_EQ(0, V("signal_exits"));

	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	ASSERT_EQ(0, pthread_join(a.thread, NULL));
	ASSERT_EQ(0, pthread_join(b.thread, NULL));
	EXPECT_EQ(0, a.ret);
	EXPECT_EQ(1, a.run.exits_done);
	EXPECT_EQ(-1, b.ret);
	EXPECT_EQ(EINTR, b.err);
	EXPECT_EQ(0, b.run.exits_done);

	REREAD();
	EXPECT_EQ(2, V("runs"));
	EXPECT_EQ(1, V("signal_exits"));
	EXPECT_EQ(0, V("io_exits"));
	EXPECT_EQ(1, V("halt_exits"));
	EXPECT_EQ(2, V("exits"));
	EXPECT_EQ(2, sfile_hist_sum(&self->s, "run_exits_hist"));
}

/*
 * ... but a fatal signal does end the wait: a process killed while its
 * RUN waits for the vCPU dies at once, without running.
 */
TEST_F(vcpu, sigkill_while_waiting_for_the_vcpu)
{
	struct runner a = {
		.vcpu = self->e.vcpu[0],
		.run = { .halt_exits = 1 },
	};
	__u64 deadline;
	int status = 0;
	pid_t pid, got = 0;

	ASSERT_EQ(0, pthread_create(&a.thread, NULL, runner_fn, &a));
	ASSERT_TRUE(wait_stat(self->e.vcpu_stats[0], "blocking", 1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct statsfd_vm_run run = { .io_exits = 1 };

		vcpu_run(self->e.vcpu[0], &run);
		_exit(0);
	}
	EXPECT_TRUE(wait_task_d(pid));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	deadline = now_ns() + 5000000000ULL;
	while (!got && now_ns() < deadline) {
		got = waitpid(pid, &status, WNOHANG);
		if (!got)
			usleep(1000);
	}
	/* the vCPU is still halted: the child did not wait for it */
	EXPECT_EQ(1, stat_get(self->e.vcpu_stats[0], "blocking"));
	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	if (!got)
		got = waitpid(pid, &status, 0);
	EXPECT_EQ(pid, got);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ASSERT_EQ(0, pthread_join(a.thread, NULL));
	EXPECT_EQ(0, a.ret);
	REREAD();
	EXPECT_EQ(1, V("runs"));
	EXPECT_EQ(1, V("exits"));
	EXPECT_EQ(0, V("signal_exits"));
}

/*
 * bad-inputs.md #21: RUN bounds cycles_per_exit so that no run can wrap
 * guest_cycles (wrapping modulo 2^64 is covered by the KUnit cases
 * statsfd_stat_add_adds_and_wraps_modulo_2_64 and
 * statsfd_agg_compute_sum_wraps_like_a_counter); at the bound the cycles
 * are charged exactly, and summed exactly across vCPUs.
 */
TEST_F(vcpu, counters_at_bound_21)
{
	struct statsfd_vm_run run = {
		.hypercall_exits = 1,
		.cycles_per_exit = STATSFD_VM_CYCLES_PER_EXIT_MAX,
	};
	int vcpu1, fd1;

	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	REREAD();
	EXPECT_EQ(STATSFD_VM_CYCLES_PER_EXIT_MAX, V("guest_cycles"));
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	REREAD();
	EXPECT_EQ(2 * STATSFD_VM_CYCLES_PER_EXIT_MAX, V("guest_cycles"));

	vcpu1 = vcpu_create(self->e.vm, 1);
	ASSERT_GE(vcpu1, 0);
	run.hypercall_exits = 3;
	ASSERT_EQ(0, vcpu_run(vcpu1, &run));
	fd1 = stats_fd(vcpu1);
	EXPECT_EQ(3 * STATSFD_VM_CYCLES_PER_EXIT_MAX,
		  stat_get(fd1, "guest_cycles"));
	EXPECT_EQ(5 * STATSFD_VM_CYCLES_PER_EXIT_MAX,
		  stat_get(self->e.vm_stats, "guest_cycles_sum"));
	close(fd1);
	close(vcpu1);
}

static void *serial_runner_fn(void *arg)
{
	struct runner *r = arg;
	int i;

	r->ret = 0;
	for (i = 0; i < 50 && !r->ret; i++)
		r->ret = vcpu_run(r->vcpu, &r->run);
	return NULL;
}

/*
 * Two threads running one vCPU are serialized (KVM's vcpu->mutex): the
 * plain stats updates lose nothing.
 */
TEST_F(vcpu, concurrent_runs_are_serialized)
{
	struct runner r[2];
	int i;

	for (i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].vcpu = self->e.vcpu[0];
		r[i].run.hypercall_exits = 1000;
		r[i].run.cycles_per_exit = 5;
		ASSERT_EQ(0, pthread_create(&r[i].thread, NULL,
					    serial_runner_fn, &r[i]));
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(r[i].thread, NULL));
		EXPECT_EQ(0, r[i].ret);
	}
	REREAD();
	EXPECT_EQ(100, V("runs"));
	EXPECT_EQ(100000, V("exits"));
	EXPECT_EQ(100000, V("hypercall_exits"));
	EXPECT_EQ(500000, V("guest_cycles"));
	EXPECT_EQ(100, sfile_val_at(&self->s, "run_exits_hist", 15));
}

/* Reads every stat of @fd into a fresh sfile @s. */
static void read_all(struct __test_metadata *_metadata, int fd, struct sfile *s)
{
	ASSERT_EQ(0, sfile_parse(fd, s));
	ASSERT_EQ(0, sfile_read_data(fd, s));
}

#define AGG_VCPUS 5

/*
 * Every aggregate of a VM equals the sum, min, max, average or non-zero
 * count of its vCPUs' values, read from the vCPU fds, for different
 * workloads on each vCPU (one idle), and 0 over a VM without vCPUs.
 */
TEST(vm_aggregates_match_vcpus)
{
	struct sfile vm_s, vcpu_s[AGG_VCPUS];
	int dev, vm, vm_fd, vcpus[AGG_VCPUS], fds[AGG_VCPUS], i;

	dev = dev_open();
	ASSERT_GE(dev, 0);
	vm = vm_create(dev);
	ASSERT_GE(vm, 0);
	vm_fd = stats_fd(vm);
	ASSERT_GE(vm_fd, 0);

	/* no vCPUs: every aggregate is 0 */
	read_all(_metadata, vm_fd, &vm_s);
	EXPECT_EQ(0, agg_check(&vm_s, NULL, 0));
	EXPECT_EQ(0, sfile_val(&vm_s, "exits_min"));
	EXPECT_EQ(0, sfile_val(&vm_s, "exits_avg"));
	sfile_free(&vm_s);

	for (i = 0; i < AGG_VCPUS; i++) {
		struct statsfd_vm_run run = {
			.io_exits = 10 * i + 1,
			.mmio_exits = 3 * i,
			.hypercall_exits = 1000 * (i & 1),
			.halt_exits = i % 3,
			.io_bytes = i * 8,
			.cycles_per_exit = i * 100 + 1,
			.halt_poll_ns = i * 1000,
			.halt_timeout_ns = 10000 * (i + 1),
		};

		/* ids need not be dense */
		vcpus[i] = vcpu_create(vm, 3 * i + 1);
		ASSERT_GE(vcpus[i], 0);
		fds[i] = stats_fd(vcpus[i]);
		ASSERT_GE(fds[i], 0);
		if (i == 2)
			continue; /* idle vCPU: min and count_nonzero */
		if (i == 4)
			ASSERT_EQ(0, vcpu_kick(vcpus[i]));
		ASSERT_EQ(0, vcpu_run(vcpus[i], &run));
		if (i == 3)
			ASSERT_EQ(0, vcpu_run(vcpus[i], &run));
	}

	read_all(_metadata, vm_fd, &vm_s);
	for (i = 0; i < AGG_VCPUS; i++)
		read_all(_metadata, fds[i], &vcpu_s[i]);
	EXPECT_EQ(0, agg_check(&vm_s, vcpu_s, AGG_VCPUS));
	/* and the checker itself is not vacuous */
	EXPECT_EQ(0, sfile_val(&vm_s, "exits_min"));
	EXPECT_EQ(4, sfile_val(&vm_s, "runs_count_nonzero"));
	EXPECT_EQ(5, sfile_val(&vm_s, "vcpus_created"));
	EXPECT_EQ(6, sfile_val(&vm_s, "stats_fds_open"));
	EXPECT_EQ(1, sfile_val(&vm_s, "kicks"));
	EXPECT_NE(0, sfile_val(&vm_s, "exits_max"));
	EXPECT_NE(0, sfile_val(&vm_s, "halt_wait_ns_max"));
	vcpu_s[0].data[0]++;
	EXPECT_NE(0, agg_check(&vm_s, vcpu_s, AGG_VCPUS));

	for (i = 0; i < AGG_VCPUS; i++) {
		sfile_free(&vcpu_s[i]);
		close(fds[i]);
		close(vcpus[i]);
	}
	sfile_free(&vm_s);
	close(vm);

	/* the aggregates still read after every other handle is gone */
	read_all(_metadata, vm_fd, &vm_s);
	EXPECT_EQ(5, sfile_val(&vm_s, "vcpus_created"));
	EXPECT_EQ(1, sfile_val(&vm_s, "stats_fds_open"));
	EXPECT_EQ(4, sfile_val(&vm_s, "runs_count_nonzero"));
	sfile_free(&vm_s);
	close(vm_fd);
	close(dev);
}

/* How much stat @name grew from @b to @a. */
static __u64 delta(const struct sfile *a, const struct sfile *b,
		   const char *name)
{
	return sfile_val(a, name) - sfile_val(b, name);
}

/*
 * System counters move by exactly what this test does (nothing else runs
 * VMs while it does); the system's cumulative sums keep what freed VMs
 * counted, its other aggregates match the live VMs.
 */
TEST(system_counts_exact)
{
	struct sfile b, a, vm_s[2];
	int dev, sys, vm[2], vcpu[3], vmfd[2], vcpufd, i;

	dev = dev_open();
	ASSERT_GE(dev, 0);
	sys = stats_fd(dev);
	ASSERT_GE(sys, 0);
	read_all(_metadata, sys, &b);

	vm[0] = vm_create(dev);
	vm[1] = vm_create(dev);
	ASSERT_GE(vm[0], 0);
	ASSERT_GE(vm[1], 0);
	vcpu[0] = vcpu_create(vm[0], 0);
	vcpu[1] = vcpu_create(vm[0], 1);
	vcpu[2] = vcpu_create(vm[1], 5);
	for (i = 0; i < 3; i++)
		ASSERT_GE(vcpu[i], 0);
	ASSERT_EQ(0, vcpu_run_exits(vcpu[0], 1, 0, 0));
	ASSERT_EQ(0, vcpu_run_exits(vcpu[2], 1, 0, 0));
	ASSERT_EQ(0, vcpu_run_exits(vcpu[2], 1, 0, 0));
	ASSERT_EQ(0, vcpu_kick(vcpu[1]));
	vmfd[0] = stats_fd(vm[0]);
	vmfd[1] = stats_fd(vm[1]);
	vcpufd = stats_fd(vcpu[2]);

	read_all(_metadata, sys, &a);
	EXPECT_EQ(2, delta(&a, &b, "vms_created"));
	EXPECT_EQ(2, delta(&a, &b, "vms_alive"));
	EXPECT_EQ(3, delta(&a, &b, "vcpus_created"));
	EXPECT_EQ(3, delta(&a, &b, "vcpus_alive"));
	EXPECT_EQ(3, delta(&a, &b, "stats_fds_open"));
	EXPECT_EQ(1, delta(&a, &b, "kicks_sum"));
	EXPECT_GE(sfile_val(&a, "max_vms_alive"), sfile_val(&a, "vms_alive"));
	/*
	 * vcpus_created_sum is a cumulative sum: it keeps the vCPUs of freed
	 * VMs, so it counts every vCPU ever created.
	 */
	EXPECT_EQ(3, delta(&a, &b, "vcpus_created_sum"));
	EXPECT_EQ(sfile_val(&a, "vcpus_created_sum"),
		  sfile_val(&a, "vcpus_created"));
	/* every stats fd is a system one (just @sys) or counted by a VM */
	EXPECT_EQ(sfile_val(&a, "stats_fds_open_sum") + 1,
		  sfile_val(&a, "stats_fds_open"));
	read_all(_metadata, vmfd[0], &vm_s[0]);
	read_all(_metadata, vmfd[1], &vm_s[1]);
	/*
	 * No device-wide count of runs (it would be written by every RUN on
	 * every CPU): each VM sums its vCPUs' runs.
	 */
	EXPECT_EQ(STAT_MISSING, sfile_val(&a, "runs"));
	EXPECT_EQ(1, sfile_val(&vm_s[0], "runs_sum"));
	EXPECT_EQ(2, sfile_val(&vm_s[1], "runs_sum"));
	EXPECT_EQ(1, sfile_val(&vm_s[0], "stats_fds_open"));
	EXPECT_EQ(2, sfile_val(&vm_s[1], "stats_fds_open"));
	/* the others describe the live VMs: here, exactly ours */
	if (sfile_val(&b, "vms_alive") == 0) {
		EXPECT_EQ(0, agg_check_ex(&a, vm_s, 2, true));
		EXPECT_EQ(2, sfile_val(&a, "vcpus_created_max"));
		EXPECT_EQ(1, sfile_val(&a, "vcpus_created_avg"));
	}
	sfile_free(&vm_s[0]);
	sfile_free(&vm_s[1]);
	sfile_free(&a);

	/*
	 * Closing the VM and vCPU fds of vm[1] does not free it: its stats
	 * fd pins it.  Closing that frees it and its vCPU.
	 */
	close(vcpu[2]);
	close(vm[1]);
	read_all(_metadata, sys, &a);
	EXPECT_EQ(2, delta(&a, &b, "vms_alive"));
	EXPECT_EQ(3, delta(&a, &b, "vcpus_alive"));
	sfile_free(&a);
	close(vcpufd);
	close(vmfd[1]);
	read_all(_metadata, sys, &a);
	EXPECT_EQ(1, delta(&a, &b, "vms_alive"));
	EXPECT_EQ(2, delta(&a, &b, "vcpus_alive"));
	EXPECT_EQ(1, delta(&a, &b, "stats_fds_open"));
	/* vm[1] is gone: the cumulative sums keep it, the rest drop it */
	EXPECT_EQ(3, delta(&a, &b, "vcpus_created_sum"));
	EXPECT_EQ(1, delta(&a, &b, "kicks_sum"));
	EXPECT_EQ(sfile_val(&a, "stats_fds_open_sum") + 1,
		  sfile_val(&a, "stats_fds_open"));
	if (sfile_val(&b, "vms_alive") == 0) {
		EXPECT_EQ(2, sfile_val(&a, "vcpus_created_max"));
		EXPECT_EQ(2, sfile_val(&a, "vcpus_created_avg"));
	}
	sfile_free(&a);

	close(vcpu[0]);
	close(vcpu[1]);
	close(vmfd[0]);
	close(vm[0]);
	read_all(_metadata, sys, &a);
	EXPECT_EQ(0, delta(&a, &b, "vms_alive"));
	EXPECT_EQ(0, delta(&a, &b, "vcpus_alive"));
	EXPECT_EQ(0, delta(&a, &b, "stats_fds_open"));
	EXPECT_EQ(2, delta(&a, &b, "vms_created"));
	EXPECT_EQ(3, delta(&a, &b, "vcpus_created_sum"));
	EXPECT_EQ(1, delta(&a, &b, "kicks_sum"));
	EXPECT_EQ(0, delta(&a, &b, "stats_fds_open_sum"));
	sfile_free(&a);
	sfile_free(&b);
	close(sys);
	close(dev);
}

/* The whole file of stats fd @fd, malloc()ed; its size in *@size. */
static unsigned char *whole_file(int fd, size_t *size)
{
	unsigned char *buf = malloc(65536);
	ssize_t ret;

	if (!buf)
		return NULL;
	ret = pread(fd, buf, 65536, 0);
	*size = ret < 0 ? 0 : ret;
	return buf;
}

/* The u64 at file offset @off of the whole file @image. */
static __u64 image_u64(const unsigned char *image, long long off)
{
	__u64 v;

	memcpy(&v, image + off, sizeof(v));
	return v;
}

/*
 * #14: close the VM and vCPU fds (and the device), then read the stats
 * fds: the same bytes as before, final values included, aggregates still
 * over the (still alive) vCPUs; the VM is freed only when they close.
 * "The same bytes" but for sample_ns, which every read takes anew (it
 * only moves on); generation is frozen: closing those fds opens no update
 * window (a stats fd would: stats_fds_open is the VM's).
 */
TEST(stats_fd_outlives_vm_and_vcpu_fds_14)
{
	struct statsfd_vm_run run = { .io_exits = 9,
				      .halt_exits = 2,
				      .halt_timeout_ns = 1000 };
	unsigned char *before[3], *after;
	long long ns_off[3], gen_off[3];
	size_t size[3], size2;
	struct vm_env e;
	struct sfile s;
	int fd[3], i;
	__u64 alive = sys_stat("vms_alive");

	ASSERT_VM_ENV(&e, -1, 2, &run, VM_ENV_STATS);
	/* the stats fds are all that is left of the VM: keep them apart */
	fd[0] = e.vm_stats;
	fd[1] = e.vcpu_stats[0];
	fd[2] = e.vcpu_stats[1];
	e.vm_stats = -1;
	e.vcpu_stats[0] = -1;
	e.vcpu_stats[1] = -1;
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, sfile_parse(fd[i], &s));
		ns_off[i] = sfile_off(&s, STATSFD_STAT_SAMPLE_NS);
		gen_off[i] = sfile_off(&s, STATSFD_STAT_GENERATION);
		sfile_free(&s);
		ASSERT_LE(0, ns_off[i]);
		ASSERT_LE(0, gen_off[i]);
		before[i] = whole_file(fd[i], &size[i]);
		ASSERT_NE(NULL, before[i]);
		ASSERT_GT(size[i], 0);
	}
	vm_env_close(&e);
	EXPECT_EQ(alive + 1, sys_stat("vms_alive"));

	for (i = 0; i < 3; i++) {
		after = whole_file(fd[i], &size2);
		ASSERT_NE(NULL, after);
		EXPECT_EQ(size[i], size2);
		EXPECT_EQ(0, image_cmp(after, before[i], 0, size2, ns_off[i]))
		{
			TH_LOG("fd %d changed after the VM fd closed", i);
		}
		EXPECT_EQ(image_u64(before[i], gen_off[i]),
			  image_u64(after, gen_off[i]));
		EXPECT_LT(image_u64(before[i], ns_off[i]),
			  image_u64(after, ns_off[i]));
		free(after);
	}
	/*
	 * Each vCPU's windows: the run's start; one per stretch of exits
	 * (the 9 I/O exits and the first halt exit, then the second halt
	 * exit alone: a halt closes its stretch); per halt (it sleeps: no
	 * kick) blocking on, blocking off and its outcome; the run's end.
	 */
	EXPECT_EQ(1 + 2 + 2 * 3 + 1, image_u64(before[1], gen_off[1]));
	EXPECT_EQ(1 + 2 + 2 * 3 + 1, image_u64(before[2], gen_off[2]));
	EXPECT_EQ(18, stat_get(fd[0], "io_exits_sum"));
	EXPECT_EQ(2, stat_get(fd[0], "runs_count_nonzero"));
	EXPECT_EQ(11, stat_get(fd[2], "exits"));

	/* the VM goes with its last stats fd, in any order */
	close(fd[0]);
	close(fd[2]);
	EXPECT_EQ(alive + 1, sys_stat("vms_alive"));
	EXPECT_EQ(11, stat_get(fd[1], "exits"));
	close(fd[1]);
	EXPECT_EQ(alive, sys_stat("vms_alive"));
	for (i = 0; i < 3; i++)
		free(before[i]);
}

/*
 * One stat file of the debugfs view: a scalar is "%llu\n", a histogram its
 * buckets separated by spaces.  Returns how many values it parsed.
 */
static int debugfs_values(const char *path, __u64 *vals, int max)
{
	char buf[4096], *p, *end;
	int n = 0;

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (buf[strlen(buf) - 1] != '\n')
		return -1;
	for (p = buf; *p && *p != '\n' && n < max; p = end) {
		vals[n++] = strtoull(p, &end, 10);
		if (end == p)
			return -1;
		if (*end == ' ')
			end++;
	}
	return n;
}

/*
 * Every stat of @fd's file equals its file in @dir (a quiesced source),
 * except sample_ns and generation: they describe one read of the stats fd,
 * and the view has no files for them (statsfd-kernel-api.rst, "Debugfs
 * text view").
 */
static void debugfs_test(struct __test_metadata *_metadata, int fd,
			 const char *dir)
{
	struct sfile s;
	unsigned int i, k;

	read_all(_metadata, fd, &s);
	for (i = 0; i < s.hdr.num_desc; i++) {
		const struct statsfd_desc *d = sfile_desc(&s, i);
		__u64 vals[HIST_BUCKETS * 2];
		char path[512];
		struct stat st;
		int n;

		snprintf(path, sizeof(path), "%s/%s", dir, d->name);
		if (!strcmp(d->name, STATSFD_STAT_SAMPLE_NS) ||
		    !strcmp(d->name, STATSFD_STAT_GENERATION)) {
			errno = 0;
			EXPECT_EQ(-1, stat(path, &st));
			EXPECT_EQ(ENOENT, errno)
			{
				TH_LOG("%s", path);
			}
			continue;
		}
		n = debugfs_values(path, vals, HIST_BUCKETS * 2);
		EXPECT_EQ(d->size, n)
		{
			TH_LOG("%s", path);
		}
		for (k = 0; k < d->size && (int)k < n; k++)
			EXPECT_EQ(s.data[d->offset / 8 + k], vals[k])
			{
				TH_LOG("%s[%u]", path, k);
			}
	}
	sfile_free(&s);
}

/*
 * The debugfs text view: statsfd/statsfd_vm/{system,<vm id>/vcpu-<id>}/,
 * one file per stat, equal to the binary values; gone when the VM is.
 */
TEST(debugfs_view_matches_stats_fd)
{
	char vm_dir[256], vcpu_dir[300];
	struct statsfd_vm_run run = {
		.io_exits = 70,
		.halt_exits = 2,
		.halt_timeout_ns = 1000,
		.io_bytes = 3,
		.cycles_per_exit = 9,
	};
	int vm_fd, vcpu_fd, sys_fd;
	struct vm_env e;
	unsigned int i;
	struct stat st;
	struct sfile s;

	/*
	 * statsfd_vm is loaded with its default debugfs=Y wherever this
	 * runs: a missing view is a bug, not a configuration to skip.
	 */
	ASSERT_TRUE(debugfs_param_get());
	ASSERT_EQ(0, stat(STATSFD_VM_DEBUGFS, &st))
	{
		TH_LOG("no debugfs view %s: %m", STATSFD_VM_DEBUGFS);
	}

	/* vCPU 2 of three: the view is named by id, not by position */
	ASSERT_VM_ENV(&e, -1, 3, NULL, VM_ENV_STATS);
	ASSERT_EQ(0, vcpu_run(e.vcpu[2], &run));
	vm_fd = e.vm_stats;
	vcpu_fd = e.vcpu_stats[2];
	sys_fd = stats_fd(e.dev);
	ASSERT_GE(sys_fd, 0);

	ASSERT_EQ(0, sfile_parse(vm_fd, &s));
	snprintf(vm_dir, sizeof(vm_dir), "%s/%s", STATSFD_VM_DEBUGFS, s.id);
	sfile_free(&s);
	snprintf(vcpu_dir, sizeof(vcpu_dir), "%s/vcpu-2", vm_dir);

	debugfs_test(_metadata, vm_fd, vm_dir);
	debugfs_test(_metadata, vcpu_fd, vcpu_dir);
	/* the system view also counts the fds this test holds: quiesced */
	debugfs_test(_metadata, sys_fd, STATSFD_VM_DEBUGFS "/system");

	for (i = 0; i < e.nr_vcpus; i++) {
		close_fd(&e.vcpu_stats[i]);
		close_fd(&e.vcpu[i]);
	}
	close_fd(&e.vm);
	EXPECT_EQ(0, stat(vcpu_dir, &st));
	close_fd(&e.vm_stats);
	EXPECT_EQ(-1, stat(vm_dir, &st));
	EXPECT_EQ(ENOENT, errno);
	close(sys_fd);
	vm_env_close(&e);
}

TEST_HARNESS_MAIN
