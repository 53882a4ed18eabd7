/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The statsfd collector wire format: framed JSON over a SOCK_SEQPACKET unix
 * socket, stats fds attached with SCM_RIGHTS.
 *
 * Every packet, in both directions, is a 16-byte header and a payload:
 *
 *	offset 0   u32 magic    STATSFD_MSG_MAGIC ("SFDC" on little endian)
 *	offset 4   u16 version  STATSFD_MSG_VERSION (1)
 *	offset 6   u16 flags    0, or STATSFD_MSG_F_MORE in a reply whose
 *	                        payload continues in the next packet
 *	offset 8   u32 length   payload bytes in this packet; header + payload
 *	                        is at most STATSFD_MSG_MAX
 *	offset 12  u32 reserved 0
 *	offset 16  payload      UTF-8 JSON, no NUL
 *
 * Integers are in host byte order: both ends share a kernel.  A request is
 * one packet, so the fds attached to it are unambiguously its own (the
 * reason for SOCK_SEQPACKET); replies may span packets.  The JSON commands
 * are documented in Documentation/statsfd-tools.rst.
 */
#ifndef STATSFD_MSG_H
#define STATSFD_MSG_H

#include <stddef.h>
#include <stdint.h>

#define STATSFD_MSG_MAGIC	0x43444653u
#define STATSFD_MSG_VERSION	1
#define STATSFD_MSG_F_MORE	0x0001
#define STATSFD_MSG_HDR_SIZE	16u
#define STATSFD_MSG_MAX		65536u
/* The kernel's SCM_MAX_FD: most fds one sendmsg() may carry. */
#define STATSFD_MSG_MAX_FDS	253u
/* Largest reassembled reply a client accepts. */
#define STATSFD_MSG_REPLY_MAX	(256u << 20)

/**
 * struct statsfd_msg_hdr - header of every packet
 * @magic: STATSFD_MSG_MAGIC
 * @version: STATSFD_MSG_VERSION
 * @flags: 0 or STATSFD_MSG_F_MORE
 * @length: payload bytes following the header in this packet
 * @reserved: 0
 */
struct statsfd_msg_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;
	uint32_t length;
	uint32_t reserved;
};

/**
 * statsfd_msg_check() - validate a received packet's header
 * @pkt: the packet
 * @n: its length as received
 * @more_ok: whether STATSFD_MSG_F_MORE is acceptable (replies only)
 * @why: set to a static description of the problem
 *
 * Return: 0, or -EPROTO / -EMSGSIZE.
 */
int statsfd_msg_check(const void *pkt, size_t n, int more_ok,
		      const char **why);

/**
 * statsfd_msg_connect() - connect a SOCK_SEQPACKET socket to @path
 * @path: the collector's socket
 *
 * Return: the connected socket (close-on-exec), or -errno.
 */
int statsfd_msg_connect(const char *path);

/**
 * statsfd_msg_send() - send one message, fds attached to its first packet
 * @sock: connected socket
 * @json: payload
 * @len: payload length; a request must fit in one packet, a longer reply
 *	is split with STATSFD_MSG_F_MORE
 * @fds: fds to attach, or NULL
 * @nfds: number of @fds, at most STATSFD_MSG_MAX_FDS
 *
 * Blocking; for the collector's nonblocking side see statsfd_msg_pack().
 * Return: 0, or -errno.
 */
int statsfd_msg_send(int sock, const char *json, size_t len, const int *fds,
		     unsigned int nfds);

/**
 * statsfd_msg_pack() - frame @json into packets for a nonblocking sender
 * @json: payload
 * @len: payload length
 * @cb: called once per packet with its bytes
 * @arg: passed to @cb
 *
 * Return: 0, or the first non-zero value @cb returned.
 */
int statsfd_msg_pack(const char *json, size_t len,
		     int (*cb)(void *arg, const void *pkt, size_t n),
		     void *arg);

/**
 * statsfd_msg_recv() - receive one complete message
 * @sock: connected socket
 * @json: set to the malloc()ed, NUL-terminated payload
 * @len: set to the payload length
 * @fds: receives the attached fds (close-on-exec), or NULL to close them
 * @nfds: in: room in @fds; out: fds received
 * @timeout_ms: give up after this long without a packet; -1 waits forever
 *
 * Fds beyond the room in @fds are closed and reported as -EMSGSIZE.
 * Return: 0, -ECONNRESET on EOF, -ETIMEDOUT, -EPROTO for a bad packet, or
 * another -errno.
 */
int statsfd_msg_recv(int sock, char **json, size_t *len, int *fds,
		     unsigned int *nfds, int timeout_ms);

#endif /* STATSFD_MSG_H */
