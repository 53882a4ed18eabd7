/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fake system calls for libstatsfd's test seam (statsfd__set_sys() in
 * statsfd_priv.h), shared by the host tests of views and events:
 *
 * - pread(): an fd whose file (device and inode) has an image registered
 *   reads that image, so a pipe or a TCP socket, which poll for real, can
 *   play a stats fd: closing the pipe's write end hangs it up (POLLHUP),
 *   urgent data on the socket polls POLLPRI until the acknowledging
 *   header read (a pread at offset 0), which consumes it as the kernel's
 *   per-file generation would;
 * - ioctl(): STATSFD_IOC_VIEW checked as the kernel checks it, recorded
 *   (the struct statsfd_view_args and the names or indices it points to),
 *   and answered with a view fd whose image is built here, independently
 *   of the library, in the kernel's layout (header, id, data,
 *   descriptors), its values read from the parent's image at each read;
 *   or with a chosen errno;
 * - poll(): the real one, or chosen revents, or a chosen errno.
 */
#ifndef STATSFD_TEST_FAKESYS_H
#define STATSFD_TEST_FAKESYS_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/statsfd.h>

#define FAKE_MAX_LIST	64

/**
 * struct fake_view_call - what the last STATSFD_IOC_VIEW was given
 * @fd: the fd it was made on
 * @req: the request number
 * @args: the struct, byte for byte
 * @names: with flags 0: the names @args.list pointed to
 * @idx: with STATSFD_VIEW_BY_INDEX: the indices
 */
struct fake_view_call {
	int fd;
	unsigned long req;
	struct statsfd_view_args args;
	char names[FAKE_MAX_LIST][64];
	uint32_t idx[FAKE_MAX_LIST];
};

/* How the fake ioctl answers a valid request. */
enum fake_view_mode {
	FAKE_VIEW_MEMFD,	/* a memfd holding the view image */
	FAKE_VIEW_PIPE,		/* a pipe's read end: fake_view_writer hangs it up */
	FAKE_VIEW_SWAPPED,	/* a view with its first two stats swapped */
};

extern struct fake_view_call fake_last_view;
extern unsigned int fake_view_calls;
extern int fake_view_errno;		/* non-zero: the ioctl fails with it */
extern enum fake_view_mode fake_view_mode;
extern int fake_view_writer;		/* write end of the last FAKE_VIEW_PIPE */

extern unsigned int fake_preads;	/* preads of registered images */
extern unsigned int fake_acks;		/* of them: 24 bytes at offset 0 */
extern size_t fake_last_len;		/* length of the last one */
extern int fake_pread_errno;		/* non-zero: preads at 0 fail with it */

extern int fake_poll_mode;		/* 0 real; 1 fake_poll_revents; 2 error */
extern short fake_poll_revents;		/* reported on every fd */
extern int fake_poll_errno;
extern struct pollfd fake_poll_last;	/* first fd of the last call */
extern unsigned int fake_poll_nfds;
extern int fake_poll_timeout;

/* Route libstatsfd's system calls here (and back with fake_uninstall()). */
void fake_install(void);
void fake_uninstall(void);

/**
 * fake_register() - serve @len bytes of @img for every read of @fd's file
 * @fd: any fd (its device and inode identify the file, dups included)
 * @img: the image, copied
 * @len: its length
 *
 * Return: 0, or -1.
 */
int fake_register(int fd, const void *img, size_t len);
/* Write @v as value @idx (u64 index) of the data block of @fd's image. */
void fake_poke(int fd, unsigned int idx, uint64_t v);
/* Stop serving @fd's file. */
void fake_forget(int fd);

/**
 * fake_pipe_source() - a pipe's read end serving @img
 * @img: image
 * @len: its length
 * @wr: set to the write end: closing it makes the read end poll POLLHUP
 *
 * Return: the read end, or -1.
 */
int fake_pipe_source(const void *img, size_t len, int *wr);

/**
 * fake_tcp_source() - a connected TCP socket serving @img
 * @img: image
 * @len: its length
 * @peer: set to the other end: fake_children_changed(*peer) makes the
 *	socket poll POLLPRI until the acknowledging read
 *
 * Return: the socket, or -1.
 */
int fake_tcp_source(const void *img, size_t len, int *peer);
/* One byte of urgent data from @peer: its socket polls POLLPRI. */
int fake_children_changed(int peer);

/* Number of fds open in this process. */
int fake_count_fds(void);

#endif /* STATSFD_TEST_FAKESYS_H */
