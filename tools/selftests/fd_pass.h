/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Passing fds between the selftests' processes over an AF_UNIX socket
 * (SCM_RIGHTS), with one byte of payload that the receiver can check.
 * One implementation for every test that hands a stats fd to another
 * process (statsfd_vm_util.h's users and host_dev_test.c).
 *
 * Only static inline functions (see statsfd_vm_util.h).
 */
#ifndef STATSFD_FD_PASS_H
#define STATSFD_FD_PASS_H

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* The most fds one message carries. */
#define FD_PASS_MAX 4

/* Send @n (at most FD_PASS_MAX, maybe none) @fds and @byte; 0 or -1. */
static inline int send_fds(int sock, const int *fds, int n, char byte)
{
	char cbuf[CMSG_SPACE(sizeof(int) * FD_PASS_MAX)] = { 0 };
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (n < 0 || n > FD_PASS_MAX)
		return -1;
	if (n) {
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/*
 * Receive up to @n fds (close-on-exec) and one byte into @byte; returns
 * how many fds came, or -1 (nothing received, a control message that is
 * not SCM_RIGHTS, or more fds than @n).
 */
static inline int recv_fds(int sock, int *fds, int n, char *byte)
{
	char cbuf[CMSG_SPACE(sizeof(int) * FD_PASS_MAX)] = { 0 };
	struct iovec iov = { .iov_base = byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int got;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c)
		return 0;
	if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return -1;
	got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	if (got > n)
		return -1;
	memcpy(fds, CMSG_DATA(c), sizeof(int) * got);
	return got;
}

/* Pass @fd over @sock; 0 or -1. */
static inline int send_fd(int sock, int fd)
{
	return send_fds(sock, &fd, 1, 'F');
}

/* The one fd send_fd() passed over @sock; or -1. */
static inline int recv_fd(int sock)
{
	char byte;
	int fd;

	return recv_fds(sock, &fd, 1, &byte) == 1 ? fd : -1;
}

#endif /* STATSFD_FD_PASS_H */
