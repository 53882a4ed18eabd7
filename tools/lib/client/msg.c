// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libstatsfd-client: the collector wire format: framing, fd passing,
 * reassembly.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "statsfd_client.h"
#include "statsfd_priv.h"

int statsfd_msg_check(const void *pkt, size_t n, int more_ok,
		      const char **why)
{
	struct statsfd_msg_hdr h;

	if (n < STATSFD_MSG_HDR_SIZE) {
		*why = "packet shorter than the 16-byte header";
		return -EPROTO;
	}
	memcpy(&h, pkt, sizeof(h));
	if (h.magic != STATSFD_MSG_MAGIC) {
		*why = "bad magic (not a statsfd collector message)";
		return -EPROTO;
	}
	if (h.version != STATSFD_MSG_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTO;
	}
	if (h.flags & ~(more_ok ? STATSFD_MSG_F_MORE : 0)) {
		*why = "unknown or unexpected header flags";
		return -EPROTO;
	}
	if (h.reserved) {
		*why = "reserved header field not zero";
		return -EPROTO;
	}
	if (h.length > STATSFD_MSG_MAX - STATSFD_MSG_HDR_SIZE) {
		*why = "payload length above the limit";
		return -EMSGSIZE;
	}
	if (h.length != n - STATSFD_MSG_HDR_SIZE) {
		*why = "payload length does not match the packet size";
		return -EPROTO;
	}
	return 0;
}

int statsfd_msg_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int s, e;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun))) {
		e = errno;
		close(s);
		return -e;
	}
	return s;
}

int statsfd_msg_pack(const char *json, size_t len,
		     int (*cb)(void *arg, const void *pkt, size_t n),
		     void *arg)
{
	const size_t room = STATSFD_MSG_MAX - STATSFD_MSG_HDR_SIZE;
	char *pkt = malloc(STATSFD_MSG_MAX);
	size_t off = 0;
	int ret = 0;

	if (!pkt)
		return -ENOMEM;
	do {
		struct statsfd_msg_hdr h = {
			.magic = STATSFD_MSG_MAGIC,
			.version = STATSFD_MSG_VERSION,
		};
		size_t chunk = len - off < room ? len - off : room;

		h.length = (uint32_t)chunk;
		if (off + chunk < len)
			h.flags = STATSFD_MSG_F_MORE;
		memcpy(pkt, &h, sizeof(h));
		memcpy(pkt + sizeof(h), json + off, chunk);
		ret = cb(arg, pkt, sizeof(h) + chunk);
		off += chunk;
	} while (!ret && off < len);
	free(pkt);
	return ret;
}

struct send_ctx {
	int sock;
	const int *fds;
	unsigned int nfds;
};

static int send_packet(void *arg, const void *pkt, size_t n)
{
	struct send_ctx *c = arg;
	union {
		char buf[CMSG_SPACE(sizeof(int) * STATSFD_MSG_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)pkt, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (c->nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * c->nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * c->nfds);
		memcpy(CMSG_DATA(cm), c->fds, sizeof(int) * c->nfds);
	}
	do {
		r = sendmsg(c->sock, &mh, MSG_NOSIGNAL);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	/* Only the first packet carries the fds. */
	c->nfds = 0;
	return 0;
}

int statsfd_msg_send(int sock, const char *json, size_t len, const int *fds,
		     unsigned int nfds)
{
	struct send_ctx c = { .sock = sock, .fds = fds, .nfds = nfds };

	if (nfds > STATSFD_MSG_MAX_FDS)
		return -E2BIG;
	return statsfd_msg_pack(json, len, send_packet, &c);
}

unsigned int statsfd__msg_fds(struct msghdr *mh, int *fds, unsigned int room,
			      unsigned int *got)
{
	unsigned int closed = 0;
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t i, n;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (fds && *got < room) {
				fds[(*got)++] = fd;
			} else {
				close(fd);
				closed++;
			}
		}
	}
	return closed;
}

int statsfd_msg_recv(int sock, char **json, size_t *len, int *fds,
		     unsigned int *nfds, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * STATSFD_MSG_MAX_FDS)];
		struct cmsghdr align;
	} u;
	unsigned int room = nfds ? *nfds : 0, got = 0;
	char *pkt = malloc(STATSFD_MSG_MAX);
	char *out = NULL, *p;
	size_t olen = 0;
	int ret = 0;

	*json = NULL;
	*len = 0;
	if (!pkt)
		return -ENOMEM;
	for (;;) {
		struct iovec iov = { .iov_base = pkt, .iov_len = STATSFD_MSG_MAX };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
		};
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		struct statsfd_msg_hdr h;
		const char *why;
		ssize_t r;

		r = poll(&pfd, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		if (!r) {
			ret = -ETIMEDOUT;
			break;
		}
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		if (statsfd__msg_fds(&mh, fds, room, &got))
			ret = -EMSGSIZE;
		if (r == 0) {
			ret = -ECONNRESET;
			break;
		}
		if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && !ret)
			ret = -EMSGSIZE;
		if (ret)
			break;
		if (statsfd_msg_check(pkt, (size_t)r, 1, &why)) {
			ret = -EPROTO;
			break;
		}
		memcpy(&h, pkt, sizeof(h));
		if (olen + h.length > STATSFD_MSG_REPLY_MAX) {
			ret = -EMSGSIZE;
			break;
		}
		p = realloc(out, olen + h.length + 1);
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		out = p;
		memcpy(out + olen, pkt + STATSFD_MSG_HDR_SIZE, h.length);
		olen += h.length;
		out[olen] = '\0';
		if (!(h.flags & STATSFD_MSG_F_MORE))
			break;
	}
	free(pkt);
	if (ret) {
		unsigned int i;

		for (i = 0; i < got; i++)
			close(fds[i]);
		got = 0;
		free(out);
		out = NULL;
		olen = 0;
	}
	if (nfds)
		*nfds = got;
	*json = out;
	*len = olen;
	return ret;
}
