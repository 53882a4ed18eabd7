// SPDX-License-Identifier: GPL-2.0
/*
 * device_test - smoke test of /dev/statsfd_vm: the node, its default
 * permissions, the API version ioctl and the answer to unknown ioctls.
 *
 * Runs as root in the test guest with statsfd_vm.ko loaded with its default
 * parameters (no `group`), which is what the permission checks assume.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/statsfd_vm.h>

#include "kselftest_harness.h"

#define STATSFD_VM_DEV "/dev/statsfd_vm"
#define UID_NOBODY 65534
#define GID_NOBODY 65534

/* Node type, owner and mode: 0600 root:root unless `group` was given. */
TEST(device_node_is_root_only_char_device)
{
	struct stat st;
	int ret;

	ret = stat(STATSFD_VM_DEV, &st);
	if (ret)
		TH_LOG("stat %s: %m (statsfd_vm.ko loaded?)", STATSFD_VM_DEV);
	ASSERT_EQ(0, ret);
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600u, st.st_mode & 07777);
	EXPECT_EQ(0u, st.st_uid);
	EXPECT_EQ(0u, st.st_gid);
}

/* The mode bits must really keep others out, not just look right. */
TEST(unprivileged_open_is_refused)
{
	int status;
	pid_t pid;

	/* the guest runs every test as root: dropping to nobody needs it */
	ASSERT_EQ(0, geteuid());

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid(GID_NOBODY) ||
		    setuid(UID_NOBODY))
			_exit(2);
		fd = open(STATSFD_VM_DEV, O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			_exit(3);
		_exit(errno == EACCES ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	/* 2: could not drop privileges, 3: open succeeded, 4: wrong errno */
	EXPECT_EQ(0, WEXITSTATUS(status));
}

FIXTURE(dev)
{
	int fd; /* /dev/statsfd_vm, opened read-write as root */
};

FIXTURE_SETUP(dev)
{
	self->fd = open(STATSFD_VM_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0)
		TH_LOG("open %s: %m (statsfd_vm.ko loaded?)", STATSFD_VM_DEV);
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(dev, api_version)
{
	EXPECT_EQ(STATSFD_VM_API_VERSION,
		  ioctl(self->fd, STATSFD_VM_GET_API_VERSION, 0));
}

/* A number nobody defines, within our magic, must be ENOTTY. */
TEST_F(dev, unknown_ioctl_is_enotty)
{
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IO(STATSFD_VM_IO, 0xff), 0));
	EXPECT_EQ(ENOTTY, errno);
}

/*
 * The command word is matched whole: the API version number with a
 * direction and size attached is a different, unknown ioctl.
 */
TEST_F(dev, known_number_with_wrong_encoding_is_enotty)
{
	__u64 v = 0;

	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(STATSFD_VM_IO, 0x00, __u64), &v));
	EXPECT_EQ(ENOTTY, errno);
}

/* Another subsystem's magic must not be mistaken for ours. */
TEST_F(dev, foreign_magic_is_enotty)
{
	errno = 0;
	/* KVM_GET_API_VERSION */
	EXPECT_EQ(-1, ioctl(self->fd, _IO(0xAE, 0x00), 0));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_HARNESS_MAIN
