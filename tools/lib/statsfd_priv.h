/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The private header of tools/lib: what the sources of libstatsfd,
 * libstatsfd-expo and libstatsfd-client share, and the test seams the host
 * tests use.  Not installed, not an API, exported by no library.
 *
 * The test seams.  A regular file cannot imitate the mmap() of a stats fd
 * (its first page is the stats header, and statsfd_open_fd() maps only
 * anon-inode fds), so the tests open an image and then attach a mapping of
 * their own: a memfd holding a struct statsfd_mmap_header and the two
 * copies of the values, which they change through a writable mapping of
 * the same memfd to play the kernel's writer (fill the copy seq does not
 * select, then advance seq).
 *
 * Nor can a file make a view (STATSFD_IOC_VIEW) or poll EPOLLPRI and
 * EPOLLHUP, so the tests replace the three system calls the library makes
 * on stats fds with their own (statsfd__set_sys()): an ioctl() that checks
 * the struct statsfd_view_args it is given and answers with a view image
 * or an errno, a poll() that reports chosen events, and a pread() that
 * serves images from fds that can poll for real (a pipe whose writer
 * closes hangs up; a TCP socket with urgent data polls POLLPRI).
 */
#ifndef STATSFD_LIB_PRIV_H
#define STATSFD_LIB_PRIV_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "statsfd.h"

/* ---- libstatsfd: the handle (core/) -------------------------------------- */

#define HDR_SIZE	sizeof(struct statsfd_header)
#define DESC_SIZE	sizeof(struct statsfd_desc)

struct statsfd {
	int fd;
	bool close_fd;
	struct statsfd_header hdr;
	char *id;
	unsigned int num_stats;
	struct statsfd_stat *stats;
	/* Indices of @stats sorted by name, for statsfd_find(). */
	unsigned int *by_name;
	/* The raw descriptor block; the names point into it. */
	unsigned char *desc_raw;
	size_t desc_len;
	size_t data_size;
	uint64_t hash;
	/* The recognized sample_ns and generation stats, or NULL. */
	const struct statsfd_stat *sample_st;
	const struct statsfd_stat *gen_st;
	/*
	 * The read-only mapping of the values, or NULL: @map_len bytes, two
	 * published copies of the values, copy 0 at @map + @map_data_off and
	 * copy 1 @map_stride bytes after it, @map_data_size bytes each (the
	 * first bytes of the data block).  @map_full: every stat but
	 * sample_ns and generation is in it, so statsfd_read() can use it.
	 */
	const void *map;
	size_t map_len;
	uint32_t map_data_off;
	uint32_t map_data_size;
	uint32_t map_stride;
	bool map_full;
	/* Test seam (statsfd__set_map_hook()). */
	void (*map_hook)(void *arg, unsigned int attempt);
	void *map_hook_arg;
	/* Updated with relaxed atomics, off the fast path only. */
	uint64_t map_retries;
	uint64_t map_fallbacks;
	/*
	 * A view (view.c): made by the kernel (STATSFD_IOC_VIEW; read like
	 * any stats fd) or emulated.  An emulated view's @fd is a dup of its
	 * parent's; @emul_off[i] is where the values of stat i are in the
	 * data block of that fd's file, which starts at @emul_data_offset.
	 */
	enum statsfd_view_kind view_kind;
	uint32_t emul_data_offset;
	uint32_t *emul_off;
};

/* Copies through the mapping tried before statsfd_read() falls back. */
#define STATSFD_MAP_TRIES	16

/**
 * statsfd__attach_map() - map @fd's values area for @sf, as open does
 * @sf: a handle; a mapping it already has is dropped first
 * @fd: the fd to map (the handle's own fd at open, a memfd in the tests)
 * @err: why the mapping was refused; may be NULL
 *
 * The same mmap() calls and header validation as statsfd_open_fd() makes
 * on a stats fd, but reporting the reason (the field "mmap.version",
 * "mmap.flags", "mmap.header_size", "mmap.data_offset", "mmap.data_size",
 * "mmap.copy_stride", or "mmap" for a failed call or a header that changed
 * between the two mappings).  A regular file (a memfd) must hold the whole
 * area, both copies.
 * Return: 0 with the mapping attached, or a negative errno without one.
 */
int statsfd__attach_map(struct statsfd *sf, int fd, struct statsfd_error *err);

/*
 * The attempt number statsfd__attach_map() passes to the map hook between
 * its one-page mapping and its whole one (a test changes the header there).
 */
#define STATSFD_MAP_HOOK_ATTACH	(~0u)

/**
 * statsfd__set_map_hook() - call @hook inside every copy from the mapping
 * @sf: handle
 * @hook: called after the values are copied and before the sequence count
 *	is loaded again, with @arg and the attempt number (0 first); NULL to
 *	remove.  A test publishes a window there to force a retry.  Also
 *	called by statsfd__attach_map(), with STATSFD_MAP_HOOK_ATTACH, after
 *	it validated the header of the first page and before it maps the
 *	whole area.
 * @arg: passed to @hook
 */
void statsfd__set_map_hook(struct statsfd *sf,
			   void (*hook)(void *arg, unsigned int attempt),
			   void *arg);

/**
 * statsfd__map_counters() - how often the mapping did not serve a read
 * @sf: handle
 * @retries: set to the copies that were thrown away (the count changed
 *	during the copy: the writer published a window)
 * @fallbacks: set to the reads that gave up on the mapping and used pread
 */
void statsfd__map_counters(const struct statsfd *sf, uint64_t *retries,
			   uint64_t *fallbacks);

/**
 * struct statsfd__sys - the system calls libstatsfd makes on stats fds
 * @ioctl: STATSFD_IOC_VIEW (statsfd_open_view*())
 * @poll: statsfd_wait() and statsfd_wait_many()
 * @pread: every read of a header, id, descriptors or data block,
 *	including the header read that acknowledges a change of children
 *	(statsfd_events())
 *
 * Each has the contract of the system call of the same name: -1 with
 * errno set on failure.
 */
struct statsfd__sys {
	int (*ioctl)(int fd, unsigned long req, void *arg);
	int (*poll)(struct pollfd *fds, nfds_t nfds, int timeout);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
};

/**
 * statsfd__set_sys() - replace the library's system calls, process-wide
 * @sys: the calls to make instead; a NULL member (or @sys NULL) restores
 *	the real one.  Not thread-safe: set it before any handle is used.
 */
void statsfd__set_sys(const struct statsfd__sys *sys);

/* The system calls the library makes on stats fds (statsfd__set_sys()). */
extern struct statsfd__sys statsfd__sys;

__attribute__((format(printf, 3, 4)))
void statsfd__set_err(struct statsfd_error *err, int code, const char *fmt, ...);
int statsfd__read_exact(int fd, void *buf, size_t len, uint64_t off,
			const char *what, struct statsfd_error *err);
int statsfd__parse(struct statsfd *sf, struct statsfd_error *err);
void statsfd__finish(struct statsfd *sf);
int statsfd__probe(const struct statsfd *sf, const char *what,
		   struct statsfd_error *err);

/* ---- libstatsfd-expo (expo/) ---------------------------------------------- */

struct statsfd_buf;

void statsfd__buf_double(struct statsfd_buf *b, double v);

/* ---- libstatsfd-client (client/) ------------------------------------------ */

struct msghdr;

/*
 * statsfd__msg_fds() - the fds of every SCM_RIGHTS message of @mh (a
 * recvmsg() result), into @fds while *@got < @room; the others are closed
 * (@fds may be NULL with @room 0: all are).  Also what statsfd-collector
 * and the host tests receive fds with.  Return: how many were closed.
 */
unsigned int statsfd__msg_fds(struct msghdr *mh, int *fds, unsigned int room,
			      unsigned int *got);

/* ---- libstatsfd (core/remote.c) ------------------------------------------- */

/**
 * statsfd__remote_ioctl_fd() - ioctl(@fd, @req) made by a thread of another
 *	process, the fd it returns taken (statsfd_vmfd_stats_fd_remote())
 * @tid: the thread (ptrace-able by us; stopped and resumed)
 * @pidfd: a pidfd of its process
 * @fd: the fd number in that process
 * @req: an ioctl returning a new fd there, closed there once taken
 *
 * Any fd-returning ioctl will do, so the host tests need no KVM
 * (NS_GET_USERNS on a namespace fd).  Runs in a child killed after 1 s.
 * Return: our copy of the new fd, or -1 with errno set (ETIMEDOUT when
 * @tid reached no stop in time).
 */
int statsfd__remote_ioctl_fd(pid_t tid, int pidfd, int fd, unsigned long req);

#endif /* STATSFD_LIB_PRIV_H */
