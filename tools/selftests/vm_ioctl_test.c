// SPDX-License-Identifier: GPL-2.0
/*
 * vm_ioctl_test - every validation path of the statsfd_vm ioctls
 * (bad-inputs.md #24 and #27): reserved fields and flags, bad pointers,
 * out-of-range values, unknown ioctls, vCPU ids, the max_vms, max_vcpus
 * and halt_poll_ns_max limits, and running out of fds (#17).  Each failing
 * call must leave nothing behind: no fd, no VM, no vCPU, no stats change.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

/* The device-wide counters a failed call must not move. */
struct sys_snap {
	__u64 vms_created, vms_alive, vcpus_created, vcpus_alive;
	__u64 stats_fds_open;
	int next_fd;
};

static void sys_snap(struct sys_snap *s)
{
	s->vms_created = sys_stat("vms_created");
	s->vms_alive = sys_stat("vms_alive");
	s->vcpus_created = sys_stat("vcpus_created");
	s->vcpus_alive = sys_stat("vcpus_alive");
	s->stats_fds_open = sys_stat("stats_fds_open");
	s->next_fd = next_fd();
}

/* The counters are as in @before, and the lowest free fd is the same. */
static void expect_nothing_changed(struct __test_metadata *_metadata,
				   const struct sys_snap *before)
{
	struct sys_snap after;

	sys_snap(&after);
	EXPECT_EQ(before->vms_created, after.vms_created);
	EXPECT_EQ(before->vms_alive, after.vms_alive);
	EXPECT_EQ(before->vcpus_created, after.vcpus_created);
	EXPECT_EQ(before->vcpus_alive, after.vcpus_alive);
	EXPECT_EQ(before->stats_fds_open, after.stats_fds_open);
	EXPECT_EQ(before->next_fd, after.next_fd);
}

/* ioctl() is -1 with errno @err. */
#define EXPECT_ERRNO(err, call)        \
	do {                           \
		errno = 0;             \
		EXPECT_EQ(-1, (call)); \
		EXPECT_EQ(err, errno); \
	} while (0)

FIXTURE(ioc)
{
	struct vm_env e; /* a VM, its vCPU 0 and the vCPU's stats fd */
	long long max_vms; /* parameters to restore */
	long long max_vcpus;
	long long halt_poll_ns_max;
	void *guard; /* two pages, the second PROT_NONE */
	long page;
};

FIXTURE_SETUP(ioc)
{
	self->page = sysconf(_SC_PAGESIZE);
	self->max_vms = param_get("max_vms");
	self->max_vcpus = param_get("max_vcpus");
	self->halt_poll_ns_max = param_get("halt_poll_ns_max");
	/* the vCPU's stats fd only: the VM's would change the counts */
	ASSERT_VM_ENV(&self->e, -1, 1, NULL, 0);
	self->e.vcpu_stats[0] = stats_fd(self->e.vcpu[0]);
	ASSERT_GE(self->e.vcpu_stats[0], 0);
	self->guard = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->guard);
	ASSERT_EQ(0, mprotect((char *)self->guard + self->page, self->page,
			      PROT_NONE));
}

FIXTURE_TEARDOWN(ioc)
{
	if (self->max_vms >= 0)
		param_set("max_vms", self->max_vms);
	if (self->max_vcpus >= 0)
		param_set("max_vcpus", self->max_vcpus);
	if (self->halt_poll_ns_max >= 0)
		param_set("halt_poll_ns_max", self->halt_poll_ns_max);
	munmap(self->guard, 2 * self->page);
	vm_env_close(&self->e);
}

/*
 * A pointer to @size bytes whose last byte lies in the PROT_NONE page
 * after the page at @guard.
 */
static void *straddling(void *guard, long page, size_t size)
{
	return (char *)guard + page - size + 1;
}

/* #24: the device's argument-less ioctls want an argument of 0. */
TEST_F(ioc, device_arg_must_be_zero_24)
{
	struct sys_snap before;

	sys_snap(&before);
	EXPECT_ERRNO(EINVAL, ioctl(self->e.dev, STATSFD_VM_GET_API_VERSION, 1));
	EXPECT_ERRNO(EINVAL, ioctl(self->e.dev, STATSFD_VM_GET_STATS_FD, 1));
	EXPECT_ERRNO(EINVAL, ioctl(self->e.dev, STATSFD_VM_GET_STATS_FD, -1L));
	expect_nothing_changed(_metadata, &before);
	EXPECT_EQ(STATSFD_VM_API_VERSION,
		  ioctl(self->e.dev, STATSFD_VM_GET_API_VERSION, 0));
}

/* #24: CREATE_VM with a bad pointer is -EFAULT and creates nothing. */
TEST_F(ioc, create_vm_bad_pointer_24)
{
	struct sys_snap before;

	sys_snap(&before);
	EXPECT_ERRNO(EFAULT, ioctl(self->e.dev, STATSFD_VM_CREATE_VM, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(self->e.dev, STATSFD_VM_CREATE_VM,
				   (char *)self->guard + self->page));
	EXPECT_ERRNO(EFAULT,
		     ioctl(self->e.dev, STATSFD_VM_CREATE_VM,
			   straddling(self->guard, self->page,
				      sizeof(struct statsfd_vm_create_vm))));
	expect_nothing_changed(_metadata, &before);
}

/* #24: CREATE_VM with a flag set. */
TEST_F(ioc, create_vm_flags_24)
{
	struct statsfd_vm_create_vm args = { .flags = 1 };
	struct sys_snap before;

	sys_snap(&before);
	EXPECT_ERRNO(EINVAL, ioctl(self->e.dev, STATSFD_VM_CREATE_VM, &args));
	args.flags = 0x80000000u;
	EXPECT_ERRNO(EINVAL, ioctl(self->e.dev, STATSFD_VM_CREATE_VM, &args));
	expect_nothing_changed(_metadata, &before);
}

/* #24: CREATE_VM with any reserved word set. */
TEST_F(ioc, create_vm_reserved_24)
{
	struct statsfd_vm_create_vm args;
	struct sys_snap before;
	size_t i;

	sys_snap(&before);
	for (i = 0; i < ARRAY_SIZE(args.reserved); i++) {
		memset(&args, 0, sizeof(args));
		args.reserved[i] = 1u << (i * 4);
		EXPECT_ERRNO(EINVAL,
			     ioctl(self->e.dev, STATSFD_VM_CREATE_VM, &args));
	}
	expect_nothing_changed(_metadata, &before);
}

/*
 * max_vms: past the limit CREATE_VM is -ENOSPC; a VM kept alive only by a
 * stats fd still counts; freeing one makes room again.
 */
TEST_F(ioc, create_vm_limit_enospc)
{
	__u64 alive = sys_stat("vms_alive");
	struct sys_snap before;
	int vm1, vm2, sfd;

	ASSERT_NE(STAT_MISSING, alive);
	ASSERT_EQ(0, param_set("max_vms", alive + 1));
	vm1 = vm_create(self->e.dev);
	ASSERT_GE(vm1, 0);
	sys_snap(&before);
	EXPECT_ERRNO(ENOSPC, vm_create(self->e.dev));
	expect_nothing_changed(_metadata, &before);

	sfd = stats_fd(vm1);
	ASSERT_GE(sfd, 0);
	close(vm1);
	EXPECT_ERRNO(ENOSPC, vm_create(self->e.dev));
	close(sfd);
	vm2 = vm_create(self->e.dev);
	EXPECT_GE(vm2, 0);
	close(vm2);

	ASSERT_EQ(0, param_set("max_vms", 0));
	EXPECT_ERRNO(ENOSPC, vm_create(self->e.dev));
}

/* #24: CREATE_VCPU with a bad pointer. */
TEST_F(ioc, create_vcpu_bad_pointer_24)
{
	struct sys_snap before;
	int vm_stats = stats_fd(self->e.vm);

	ASSERT_GE(vm_stats, 0);
	sys_snap(&before);
	EXPECT_ERRNO(EFAULT, ioctl(self->e.vm, STATSFD_VM_CREATE_VCPU, NULL));
	EXPECT_ERRNO(EFAULT,
		     ioctl(self->e.vm, STATSFD_VM_CREATE_VCPU,
			   straddling(self->guard, self->page,
				      sizeof(struct statsfd_vm_create_vcpu))));
	expect_nothing_changed(_metadata, &before);
	EXPECT_EQ(1, stat_get(vm_stats, "vcpus_created"));
	close(vm_stats);
}

/* #24: CREATE_VCPU with a flag or a reserved word set. */
TEST_F(ioc, create_vcpu_flags_and_reserved_24)
{
	struct statsfd_vm_create_vcpu args = { .vcpu_id = 1, .flags = 1 };
	struct sys_snap before;
	size_t i;
	int v;

	sys_snap(&before);
	EXPECT_ERRNO(EINVAL, ioctl(self->e.vm, STATSFD_VM_CREATE_VCPU, &args));
	args.flags = 0x80000000u;
	EXPECT_ERRNO(EINVAL, ioctl(self->e.vm, STATSFD_VM_CREATE_VCPU, &args));
	for (i = 0; i < ARRAY_SIZE(args.reserved); i++) {
		memset(&args, 0, sizeof(args));
		args.vcpu_id = 1;
		args.reserved[i] = 1ULL << 63;
		EXPECT_ERRNO(EINVAL,
			     ioctl(self->e.vm, STATSFD_VM_CREATE_VCPU, &args));
	}
	expect_nothing_changed(_metadata, &before);
	/* the id the failed calls asked for is still free */
	v = vcpu_create(self->e.vm, 1);
	EXPECT_GE(v, 0);
	close(v);
}

/*
 * #27: a vCPU id not below max_vcpus is -EINVAL, a duplicate -EEXIST; the
 * VM and the existing vCPU are untouched.
 */
TEST_F(ioc, vcpu_id_range_and_duplicate_27)
{
	long long max = param_get("max_vcpus");
	struct sys_snap before;
	int vm_stats, v;

	ASSERT_GT(max, 0);
	vm_stats = stats_fd(self->e.vm);
	ASSERT_GE(vm_stats, 0);
	sys_snap(&before);
	EXPECT_ERRNO(EINVAL, vcpu_create(self->e.vm, max));
	EXPECT_ERRNO(EINVAL, vcpu_create(self->e.vm, max + 1));
	EXPECT_ERRNO(EINVAL, vcpu_create(self->e.vm, UINT32_MAX));
	EXPECT_ERRNO(EINVAL, vcpu_create(self->e.vm, 0x80000000u));
	EXPECT_ERRNO(EEXIST, vcpu_create(self->e.vm, 0));
	expect_nothing_changed(_metadata, &before);
	EXPECT_EQ(1, stat_get(vm_stats, "vcpus_created"));

	/* the highest id is fine, once */
	v = vcpu_create(self->e.vm, max - 1);
	EXPECT_GE(v, 0);
	EXPECT_ERRNO(EEXIST, vcpu_create(self->e.vm, max - 1));
	EXPECT_EQ(2, stat_get(vm_stats, "vcpus_created"));
	/* the first vCPU still runs */
	EXPECT_EQ(0, vcpu_run_exits(self->e.vcpu[0], 1, 0, 0));
	EXPECT_EQ(1, stat_get(self->e.vcpu_stats[0], "runs"));
	close(v);
	close(vm_stats);
}

/*
 * #27: ids are looked up by value, whatever order they come in: sparse
 * ids created highest first are each taken once, and every one of them
 * is a duplicate afterwards.
 */
TEST_F(ioc, vcpu_ids_sparse_any_order_27)
{
	long long max = param_get("max_vcpus");
	__u32 ids[4];
	int fds[4], vm_stats, i;

	ASSERT_GE(max, 8);
	ids[0] = max - 1;
	ids[1] = max / 2;
	ids[2] = 3;
	ids[3] = 1;
	vm_stats = stats_fd(self->e.vm);
	ASSERT_GE(vm_stats, 0);
	for (i = 0; i < 4; i++) {
		fds[i] = vcpu_create(self->e.vm, ids[i]);
		ASSERT_GE(fds[i], 0);
	}
	for (i = 0; i < 4; i++)
		EXPECT_ERRNO(EEXIST, vcpu_create(self->e.vm, ids[i]));
	EXPECT_ERRNO(EEXIST, vcpu_create(self->e.vm, 0));
	EXPECT_EQ(5, stat_get(vm_stats, "vcpus_created"));
	/* a vCPU lives as long as its VM: its id stays taken without an fd */
	close(fds[0]);
	EXPECT_ERRNO(EEXIST, vcpu_create(self->e.vm, ids[0]));
	/* and the ids between taken ones are still free */
	fds[0] = vcpu_create(self->e.vm, 2);
	EXPECT_GE(fds[0], 0);
	EXPECT_EQ(6, stat_get(vm_stats, "vcpus_created"));
	for (i = 0; i < 4; i++)
		close(fds[i]);
	close(vm_stats);
}

/* max_vcpus is read when a VM is created: changing it leaves old VMs be. */
TEST_F(ioc, max_vcpus_applies_to_new_vms)
{
	int vm2, v;

	ASSERT_EQ(0, param_set("max_vcpus", 2));
	vm2 = vm_create(self->e.dev);
	ASSERT_GE(vm2, 0);
	ASSERT_EQ(0, param_set("max_vcpus", 8));
	v = vcpu_create(vm2, 1);
	EXPECT_GE(v, 0);
	close(v);
	EXPECT_ERRNO(EINVAL, vcpu_create(vm2, 2));
	/* the fixture's VM predates both values */
	v = vcpu_create(self->e.vm, 7);
	EXPECT_GE(v, 0);
	close(v);
	close(vm2);
	vm2 = vm_create(self->e.dev);
	ASSERT_GE(vm2, 0);
	v = vcpu_create(vm2, 7);
	EXPECT_GE(v, 0);
	close(v);
	EXPECT_ERRNO(EINVAL, vcpu_create(vm2, 8));
	close(vm2);
}

/*
 * RUN that fails validation: nothing ran, the run is not counted, and
 * nothing was written back (exits_done keeps what the caller put there).
 */
static void expect_run_einval(struct __test_metadata *_metadata,
			      const struct vm_env *e,
			      struct statsfd_vm_run *run)
{
	int vcpu = e->vcpu[0], vcpu_stats = e->vcpu_stats[0];
	struct sys_snap before;
	__u64 mark = run->exits_done;

	sys_snap(&before);
	EXPECT_ERRNO(EINVAL, vcpu_run(vcpu, run));
	EXPECT_EQ(mark, run->exits_done);
	expect_nothing_changed(_metadata, &before);
	EXPECT_EQ(0, stat_get(vcpu_stats, "runs"));
	EXPECT_EQ(0, stat_get(vcpu_stats, "exits"));
}

/* #24: RUN with a bad pointer. */
TEST_F(ioc, run_bad_pointer_24)
{
	EXPECT_ERRNO(EFAULT, ioctl(self->e.vcpu[0], STATSFD_VM_RUN, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(self->e.vcpu[0], STATSFD_VM_RUN,
				   straddling(self->guard, self->page,
					      sizeof(struct statsfd_vm_run))));
	EXPECT_EQ(0, stat_get(self->e.vcpu_stats[0], "runs"));
}

/* #24: RUN with a flag, reserved0 or a reserved word set. */
TEST_F(ioc, run_flags_and_reserved_24)
{
	struct statsfd_vm_run run = { .flags = 1, .io_exits = 1 };
	size_t i;

	expect_run_einval(_metadata, &self->e, &run);
	run.flags = 0;
	run.reserved0 = 1;
	expect_run_einval(_metadata, &self->e, &run);
	run.reserved0 = 0;
	for (i = 0; i < ARRAY_SIZE(run.reserved); i++) {
		run.reserved[i] = 1;
		expect_run_einval(_metadata, &self->e, &run);
		run.reserved[i] = 0;
	}
	EXPECT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
}

/* #24: RUN values out of their documented ranges. */
TEST_F(ioc, run_values_out_of_range_24)
{
	static const struct statsfd_vm_run bad[] = {
		{ .io_bytes = STATSFD_VM_IO_BYTES_MAX + 1 },
		{ .io_bytes = UINT64_MAX },
		{ .halt_timeout_ns = STATSFD_VM_HALT_TIMEOUT_NS_MAX + 1 },
		{ .io_exits = STATSFD_VM_RUN_EXITS_MAX + 1 },
		{ .io_exits = UINT64_MAX },
		{ .mmio_exits = STATSFD_VM_RUN_EXITS_MAX + 1 },
		{ .hypercall_exits = STATSFD_VM_RUN_EXITS_MAX + 1 },
		{ .halt_exits = STATSFD_VM_RUN_EXITS_MAX + 1 },
		/* the total too, and without wrapping around */
		{ .halt_exits = 1, .io_exits = STATSFD_VM_RUN_EXITS_MAX },
		{ .halt_exits = 1,
		  .io_exits = STATSFD_VM_RUN_EXITS_MAX / 2,
		  .mmio_exits = STATSFD_VM_RUN_EXITS_MAX / 2 },
		{ .mmio_exits = STATSFD_VM_RUN_EXITS_MAX / 2,
		  .hypercall_exits = UINT64_MAX - STATSFD_VM_RUN_EXITS_MAX / 2 },
	};
	struct statsfd_vm_run run;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		run = bad[i];
		expect_run_einval(_metadata, &self->e, &run);
	}

	/* the limits themselves are fine (validated, then a short run) */
	memset(&run, 0, sizeof(run));
	run.io_bytes = STATSFD_VM_IO_BYTES_MAX;
	run.halt_timeout_ns = STATSFD_VM_HALT_TIMEOUT_NS_MAX;
	run.io_exits = 1;
	EXPECT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(STATSFD_VM_IO_BYTES_MAX,
		  stat_get(self->e.vcpu_stats[0], "io_bytes"));
}

/*
 * #24: cycles_per_exit is bounded so that one run cannot wrap
 * guest_cycles: STATSFD_VM_CYCLES_PER_EXIT_MAX is accepted and charged in
 * full, one more is EINVAL.
 */
TEST_F(ioc, run_cycles_per_exit_bound_24)
{
	struct statsfd_vm_run run = { .hypercall_exits = 3 };

	/* the documented guarantee: a whole run stays below 2^62 */
	EXPECT_EQ(1ULL << 30, STATSFD_VM_CYCLES_PER_EXIT_MAX);
	EXPECT_LE(STATSFD_VM_CYCLES_PER_EXIT_MAX,
		  (1ULL << 62) / STATSFD_VM_RUN_EXITS_MAX);

	run.cycles_per_exit = STATSFD_VM_CYCLES_PER_EXIT_MAX + 1;
	expect_run_einval(_metadata, &self->e, &run);
	run.cycles_per_exit = UINT64_MAX;
	expect_run_einval(_metadata, &self->e, &run);

	run.cycles_per_exit = STATSFD_VM_CYCLES_PER_EXIT_MAX;
	EXPECT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(3, run.exits_done);
	EXPECT_EQ(3 * STATSFD_VM_CYCLES_PER_EXIT_MAX,
		  stat_get(self->e.vcpu_stats[0], "guest_cycles"));
	EXPECT_EQ(1, stat_get(self->e.vcpu_stats[0], "runs"));
}

/* #24: halt_poll_ns above the halt_poll_ns_max parameter. */
TEST_F(ioc, run_halt_poll_over_max_24)
{
	struct statsfd_vm_run run = { .halt_poll_ns = 1 };
	long long max = param_get("halt_poll_ns_max");

	ASSERT_GE(max, 0);
	run.halt_poll_ns = max + 1;
	expect_run_einval(_metadata, &self->e, &run);
	run.halt_poll_ns = UINT64_MAX;
	expect_run_einval(_metadata, &self->e, &run);
	ASSERT_EQ(0, param_set("halt_poll_ns_max", 0));
	run.halt_poll_ns = 1;
	expect_run_einval(_metadata, &self->e, &run);
	ASSERT_EQ(0, param_set("halt_poll_ns_max", 5000));
	run.halt_poll_ns = 5000;
	EXPECT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
}

/*
 * RUN is _IOWR and its struct kept its size: exits_done took a reserved
 * word.  exits_done is output only: what the caller leaves there is
 * ignored, and overwritten with the exits taken.
 */
TEST_F(ioc, run_exits_done_is_output_only)
{
	struct statsfd_vm_run run = { .io_exits = 5, .exits_done = 12345 };

	EXPECT_EQ(104, sizeof(run));
	EXPECT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(STATSFD_VM_RUN));
	EXPECT_EQ(sizeof(run), _IOC_SIZE(STATSFD_VM_RUN));
	EXPECT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(5, run.exits_done);
	run.exits_done = UINT64_MAX;
	run.io_exits = 0;
	EXPECT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	EXPECT_EQ(0, run.exits_done);
	EXPECT_EQ(2, stat_get(self->e.vcpu_stats[0], "runs"));
	EXPECT_EQ(5, stat_get(self->e.vcpu_stats[0], "exits"));
}

/*
 * #24: RUN with an argument it can read but not write back: the run
 * happens (and is counted), then RUN fails with -EFAULT.
 */
TEST_F(ioc, run_read_only_argument_efault_24)
{
	struct statsfd_vm_run run = { .io_exits = 7, .cycles_per_exit = 2 };
	void *ro;

	ro = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memcpy(ro, &run, sizeof(run));
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ));
	EXPECT_ERRNO(EFAULT, ioctl(self->e.vcpu[0], STATSFD_VM_RUN, ro));
	EXPECT_EQ(1, stat_get(self->e.vcpu_stats[0], "runs"));
	EXPECT_EQ(7, stat_get(self->e.vcpu_stats[0], "exits"));
	EXPECT_EQ(14, stat_get(self->e.vcpu_stats[0], "guest_cycles"));
	munmap(ro, self->page);
}

/* #24: KICK and GET_STATS_FD on VM and vCPU fds want an argument of 0. */
TEST_F(ioc, vm_and_vcpu_arg_must_be_zero_24)
{
	struct sys_snap before;
	int vm_stats = stats_fd(self->e.vm);

	ASSERT_GE(vm_stats, 0);
	sys_snap(&before);
	EXPECT_ERRNO(EINVAL, ioctl(self->e.vcpu[0], STATSFD_VM_KICK, 1));
	EXPECT_ERRNO(EINVAL,
		     ioctl(self->e.vcpu[0], STATSFD_VM_GET_STATS_FD, 1));
	EXPECT_ERRNO(EINVAL, ioctl(self->e.vm, STATSFD_VM_GET_STATS_FD, 1));
	expect_nothing_changed(_metadata, &before);
	/* the refused KICK left no wakeup pending */
	EXPECT_EQ(0, stat_get(vm_stats, "kicks"));
	close(vm_stats);
}

/*
 * #24: every fd answers only its own ioctls: anything else, including a
 * known number with another direction or size, is -ENOTTY.
 */
TEST_F(ioc, unknown_ioctls_enotty_24)
{
	char buf[256] = { 0 };
	unsigned long dev_bad[] = {
		STATSFD_VM_CREATE_VCPU,
		STATSFD_VM_RUN,
		STATSFD_VM_KICK,
		_IO(STATSFD_VM_IO, 0x02),
		_IO(STATSFD_VM_IO, 0xcf),
		_IOW(STATSFD_VM_IO, 0x01, __u64),
		_IOWR(STATSFD_VM_IO, 0x01, struct statsfd_vm_create_vm),
		_IOR(STATSFD_VM_IO, 0xce, int),
		_IO(0xAE, 0x01) /* KVM_CREATE_VM */,
	};
	unsigned long vm_bad[] = {
		STATSFD_VM_GET_API_VERSION,
		STATSFD_VM_CREATE_VM,
		STATSFD_VM_RUN,
		STATSFD_VM_KICK,
		_IO(STATSFD_VM_IO, 0x42),
		_IOW(STATSFD_VM_IO, 0x41, __u32),
		_IO(0xAE, 0x41) /* KVM_CREATE_VCPU */,
	};
	unsigned long vcpu_bad[] = {
		STATSFD_VM_GET_API_VERSION,
		STATSFD_VM_CREATE_VM,
		STATSFD_VM_CREATE_VCPU,
		_IO(STATSFD_VM_IO, 0x82),
		_IOW(STATSFD_VM_IO, 0x80, __u64),
		/* RUN as it was before it wrote exits_done back */
		_IOW(STATSFD_VM_IO, 0x80, struct statsfd_vm_run),
		_IOR(STATSFD_VM_IO, 0x80, struct statsfd_vm_run),
		_IO(0xAE, 0x80) /* KVM_RUN */,
	};
	struct sys_snap before;
	size_t i;

	sys_snap(&before);
	for (i = 0; i < ARRAY_SIZE(dev_bad); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->e.dev, dev_bad[i], buf));
		EXPECT_EQ(ENOTTY, errno)
		{
			TH_LOG("dev cmd %#lx", dev_bad[i]);
		}
	}
	for (i = 0; i < ARRAY_SIZE(vm_bad); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->e.vm, vm_bad[i], buf));
		EXPECT_EQ(ENOTTY, errno)
		{
			TH_LOG("vm cmd %#lx", vm_bad[i]);
		}
	}
	for (i = 0; i < ARRAY_SIZE(vcpu_bad); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->e.vcpu[0], vcpu_bad[i], buf));
		EXPECT_EQ(ENOTTY, errno)
		{
			TH_LOG("vcpu cmd %#lx", vcpu_bad[i]);
		}
	}
	expect_nothing_changed(_metadata, &before);
	EXPECT_EQ(0, stat_get(self->e.vcpu_stats[0], "runs"));
}

/* VM and vCPU fds are ioctl-only: no read, write or mmap. */
TEST_F(ioc, vm_and_vcpu_fds_are_ioctl_only)
{
	char buf[8] = { 0 };
	int fds[2] = { self->e.vm, self->e.vcpu[0] }, i;

	for (i = 0; i < 2; i++) {
		EXPECT_ERRNO(EINVAL, read(fds[i], buf, sizeof(buf)));
		EXPECT_ERRNO(EINVAL, write(fds[i], buf, sizeof(buf)));
		errno = 0;
		EXPECT_EQ(MAP_FAILED, mmap(NULL, self->page, PROT_READ,
					   MAP_SHARED, fds[i], 0));
		EXPECT_EQ(ENODEV, errno);
	}
}

/*
 * #17: stats fds until RLIMIT_NOFILE: then -EMFILE, also for VM and vCPU
 * creation, with nothing created; closing them all returns every count to
 * where it was.
 */
TEST_F(ioc, stats_fds_until_emfile_17)
{
	struct rlimit old, lim;
	struct sys_snap before, full;
	int fds[256], n = 0, vm_stats, i, v;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	vm_stats = stats_fd(self->e.vm);
	ASSERT_GE(vm_stats, 0);
	sys_snap(&before);
	lim = old;
	lim.rlim_cur = before.next_fd + 100;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim));

	for (;;) {
		int fd = stats_fd(n % 2 ? self->e.vcpu[0] : self->e.vm);

		if (fd < 0) {
			EXPECT_EQ(EMFILE, errno);
			break;
		}
		ASSERT_LT(n, 256);
		fds[n++] = fd;
	}
	/* the fds below the limit that were free, all of them */
	EXPECT_GE(n, 90);
	EXPECT_LE(n, 100);

	EXPECT_ERRNO(EMFILE, stats_fd(self->e.dev));
	EXPECT_ERRNO(EMFILE, vm_create(self->e.dev));
	EXPECT_ERRNO(EMFILE, vcpu_create(self->e.vm, 1));
	EXPECT_ERRNO(EMFILE, stats_fd(self->e.vcpu[0]));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	sys_snap(&full);
	EXPECT_EQ(before.vms_created, full.vms_created);
	EXPECT_EQ(before.vms_alive, full.vms_alive);
	EXPECT_EQ(before.vcpus_created, full.vcpus_created);
	EXPECT_EQ(before.vcpus_alive, full.vcpus_alive);
	EXPECT_EQ(before.stats_fds_open + n, full.stats_fds_open);
	/* @vm_stats, the fixture's vCPU stats fd and the @n new ones */
	EXPECT_EQ(2 + n, stat_get(vm_stats, "stats_fds_open"));
	EXPECT_EQ(1, stat_get(vm_stats, "vcpus_created"));

	for (i = 0; i < n; i++)
		close(fds[i]);
	expect_nothing_changed(_metadata, &before);
	EXPECT_EQ(2, stat_get(vm_stats, "stats_fds_open"));
	/* and vCPU 1 was never created */
	v = vcpu_create(self->e.vm, 1);
	EXPECT_GE(v, 0);
	close(v);
	close(vm_stats);
}

/*
 * The device node as the default parameters make it (device_test
 * checks its mode): the node's mode and group come from the device's
 * devnode() callback, which the uevent shows too.
 */
TEST(device_uevent_has_mode)
{
	char buf[1024];
	struct stat st;

	/*
	 * The guest loads statsfd_vm without a group, and
	 * vm_fault_test's module_reload_with_group puts it back so.
	 */
	ASSERT_EQ(-1, param_get("group"));
	ASSERT_GT(read_file("/sys/class/statsfd_vm/statsfd_vm/uevent", buf,
			    sizeof(buf)),
		  0);
	EXPECT_NE(NULL, strstr(buf, "DEVNAME=statsfd_vm\n"));
	EXPECT_NE(NULL, strstr(buf, "DEVMODE=0600\n"));
	EXPECT_EQ(NULL, strstr(buf, "DEVGID="));
	ASSERT_EQ(0, stat(STATSFD_VM_DEV, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
}

TEST_HARNESS_MAIN
