// SPDX-License-Identifier: GPL-2.0
/*
 * Fake system calls for libstatsfd's test seam; see fakesys.h.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakesys.h"
#include "statsfd_priv.h"

#define MAX_IMAGES	256

/*
 * A registered file: a static image, or a view of another registered
 * file whose image is rebuilt from its parent's at every read.
 */
struct image {
	dev_t dev;
	ino_t ino;
	unsigned char *buf;
	size_t len;
	bool tcp;
	/* A view: the parent's slot and the selected descriptor indices. */
	int parent;
	uint32_t sel[FAKE_MAX_LIST];
	unsigned int nsel;
	bool swapped;
};

static struct image images[MAX_IMAGES];
static unsigned int nimages;

struct fake_view_call fake_last_view;
unsigned int fake_view_calls;
int fake_view_errno;
enum fake_view_mode fake_view_mode;
int fake_view_writer = -1;
unsigned int fake_preads;
unsigned int fake_acks;
size_t fake_last_len;
int fake_pread_errno;
int fake_poll_mode;
short fake_poll_revents;
int fake_poll_errno;
struct pollfd fake_poll_last;
unsigned int fake_poll_nfds;
int fake_poll_timeout;

static int find(int fd)
{
	struct stat st;
	unsigned int i;

	if (fstat(fd, &st))
		return -1;
	for (i = 0; i < nimages; i++)
		if (images[i].buf && images[i].dev == st.st_dev &&
		    images[i].ino == st.st_ino)
			return (int)i;
	return -1;
}

static int add(int fd, unsigned char *buf, size_t len)
{
	struct stat st;
	int i = find(fd);

	if (fstat(fd, &st))
		return -1;
	if (i < 0) {
		for (i = 0; i < (int)nimages && images[i].buf; i++)
			;
		if (i == MAX_IMAGES)
			return -1;
		if (i == (int)nimages)
			nimages++;
	} else {
		free(images[i].buf);
	}
	memset(&images[i], 0, sizeof(images[i]));
	images[i].dev = st.st_dev;
	images[i].ino = st.st_ino;
	images[i].buf = buf;
	images[i].len = len;
	images[i].parent = -1;
	return i;
}

int fake_register(int fd, const void *img, size_t len)
{
	unsigned char *buf = malloc(len);

	if (!buf)
		return -1;
	memcpy(buf, img, len);
	if (add(fd, buf, len) < 0) {
		free(buf);
		return -1;
	}
	return 0;
}

void fake_poke(int fd, unsigned int idx, uint64_t v)
{
	struct statsfd_header h;
	int i = find(fd);

	if (i < 0 || images[i].len < sizeof(h))
		return;
	memcpy(&h, images[i].buf, sizeof(h));
	if (h.data_offset + (idx + 1) * 8ul <= images[i].len)
		memcpy(images[i].buf + h.data_offset + idx * 8ul, &v, 8);
}

void fake_forget(int fd)
{
	int i = find(fd);

	if (i >= 0) {
		free(images[i].buf);
		images[i].buf = NULL;
	}
}

/*
 * The view image of @sel (indices of @pimg's descriptors), in the kernel's
 * layout: header, id at 24, the data block (the selected values back to
 * back), the descriptors (copies, in order, offsets into that block).
 */
static unsigned char *build_view(const unsigned char *pimg, size_t plen,
				 const uint32_t *sel, unsigned int n,
				 bool swapped, size_t *len)
{
	struct statsfd_header ph, h;
	size_t stride, data = 0, i;
	unsigned char *out;
	uint32_t off = 0;

	if (plen < sizeof(ph))
		return NULL;
	memcpy(&ph, pimg, sizeof(ph));
	stride = sizeof(struct statsfd_desc) + ph.name_size;
	for (i = 0; i < n; i++) {
		struct statsfd_desc d;

		memcpy(&d, pimg + ph.desc_offset + sel[i] * stride, sizeof(d));
		data += d.size * 8ul;
	}
	h = (struct statsfd_header){
		.name_size = ph.name_size, .num_desc = n,
		.id_offset = sizeof(h),
		.data_offset = (uint32_t)sizeof(h) + ph.name_size,
	};
	h.desc_offset = h.data_offset + (uint32_t)data;
	*len = h.desc_offset + n * stride;
	out = calloc(1, *len);
	if (!out)
		return NULL;
	memcpy(out, &h, sizeof(h));
	memcpy(out + h.id_offset, pimg + ph.id_offset, ph.name_size);
	for (i = 0; i < n; i++) {
		uint32_t s = sel[swapped && n > 1 && i < 2 ? 1 - i : i];
		unsigned char *d = out + h.desc_offset + i * stride;
		struct statsfd_desc pd;

		memcpy(&pd, pimg + ph.desc_offset + s * stride, sizeof(pd));
		memcpy(d, pimg + ph.desc_offset + s * stride, stride);
		memcpy(d + offsetof(struct statsfd_desc, offset), &off,
		       sizeof(off));
		memcpy(out + h.data_offset + off, pimg + ph.data_offset + pd.offset,
		       pd.size * 8ul);
		off += pd.size * 8u;
	}
	return out;
}

/* Rebuild the image of view slot @i from its parent's current values. */
static void refresh(int i)
{
	struct image *im = &images[i];
	unsigned char *buf;
	size_t len;

	if (im->parent < 0 || !images[im->parent].buf)
		return;
	refresh(im->parent);
	buf = build_view(images[im->parent].buf, images[im->parent].len,
			 im->sel, im->nsel, im->swapped, &len);
	if (!buf)
		return;
	free(im->buf);
	im->buf = buf;
	im->len = len;
}

static ssize_t fake_pread(int fd, void *buf, size_t len, off_t off)
{
	int i = find(fd);
	char c;

	if (i < 0)
		return pread(fd, buf, len, off);
	fake_preads++;
	fake_last_len = len;
	if (!off && len == sizeof(struct statsfd_header)) {
		fake_acks++;
		if (fake_pread_errno) {
			errno = fake_pread_errno;
			return -1;
		}
		/* The acknowledging read consumes the change. */
		if (images[i].tcp)
			while (recv(fd, &c, 1, MSG_OOB | MSG_DONTWAIT) == 1)
				;
	}
	refresh(i);
	if ((size_t)off >= images[i].len)
		return 0;
	if (len > images[i].len - (size_t)off)
		len = images[i].len - (size_t)off;
	memcpy(buf, images[i].buf + off, len);
	return (ssize_t)len;
}

/* Index of @name among the descriptors of @img, or -1. */
static int lookup(const unsigned char *img, const char *name)
{
	struct statsfd_header h;
	size_t stride;
	unsigned int i;

	memcpy(&h, img, sizeof(h));
	stride = sizeof(struct statsfd_desc) + h.name_size;
	for (i = 0; i < h.num_desc; i++)
		if (!strncmp((const char *)img + h.desc_offset + i * stride +
			     sizeof(struct statsfd_desc), name, h.name_size))
			return (int)i;
	return -1;
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	struct statsfd_view_args *a = arg;
	struct statsfd_header h;
	uint32_t sel[FAKE_MAX_LIST];
	unsigned char *img;
	unsigned int i, j;
	int p = find(fd), vfd, slot, pfd[2];
	size_t len;

	if (req != STATSFD_IOC_VIEW || p < 0)
		return ioctl(fd, req, arg);
	fake_view_calls++;
	memset(&fake_last_view, 0, sizeof(fake_last_view));
	fake_last_view.fd = fd;
	fake_last_view.req = req;
	memcpy(&fake_last_view.args, a, sizeof(*a));
	refresh(p);
	memcpy(&h, images[p].buf, sizeof(h));
	/* The kernel's checks, in its order. */
	if (a->flags & ~STATSFD_VIEW_FLAGS || a->reserved[0] || a->reserved[1] ||
	    !a->count) {
		errno = EINVAL;
		return -1;
	}
	if (a->count > h.num_desc || a->count > FAKE_MAX_LIST) {
		errno = E2BIG;
		return -1;
	}
	for (i = 0; i < a->count; i++) {
		if (a->flags & STATSFD_VIEW_BY_INDEX) {
			uint32_t x = ((const uint32_t *)(uintptr_t)a->list)[i];

			fake_last_view.idx[i] = x;
			if (x >= h.num_desc) {
				errno = ENOENT;
				return -1;
			}
			sel[i] = x;
		} else {
			const char *name = (const char *)(uintptr_t)
				((const uint64_t *)(uintptr_t)a->list)[i];
			int x;

			if (strnlen(name, h.name_size) >= h.name_size) {
				errno = ENAMETOOLONG;
				return -1;
			}
			snprintf(fake_last_view.names[i], sizeof(fake_last_view.names[i]),
				 "%s", name);
			x = lookup(images[p].buf, name);
			if (x < 0) {
				errno = ENOENT;
				return -1;
			}
			sel[i] = (uint32_t)x;
		}
		for (j = 0; j < i; j++) {
			if (sel[j] == sel[i]) {
				errno = EEXIST;
				return -1;
			}
		}
	}
	if (fake_view_errno) {
		errno = fake_view_errno;
		return -1;
	}
	/* A view of a view selects among the view's stats. */
	if (images[p].parent >= 0)
		for (i = 0; i < a->count; i++)
			sel[i] = images[p].sel[sel[i]];
	img = build_view(images[images[p].parent >= 0 ? images[p].parent : p].buf,
			 images[images[p].parent >= 0 ? images[p].parent : p].len,
			 sel, a->count, fake_view_mode == FAKE_VIEW_SWAPPED, &len);
	if (!img) {
		errno = ENOMEM;
		return -1;
	}
	if (fake_view_mode == FAKE_VIEW_PIPE) {
		if (pipe2(pfd, O_CLOEXEC)) {
			free(img);
			return -1;
		}
		vfd = pfd[0];
		fake_view_writer = pfd[1];
	} else {
		vfd = memfd_create("fake-view", MFD_CLOEXEC);
		if (vfd < 0 || write(vfd, img, len) != (ssize_t)len) {
			free(img);
			return -1;
		}
	}
	slot = add(vfd, img, len);
	if (slot < 0) {
		free(img);
		close(vfd);
		errno = ENOMEM;
		return -1;
	}
	images[slot].parent = images[p].parent >= 0 ? images[p].parent : p;
	memcpy(images[slot].sel, sel, a->count * sizeof(sel[0]));
	images[slot].nsel = a->count;
	images[slot].swapped = fake_view_mode == FAKE_VIEW_SWAPPED;
	return vfd;
}

static int fake_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	nfds_t i;

	fake_poll_nfds = (unsigned int)n;
	fake_poll_timeout = timeout;
	if (n)
		fake_poll_last = fds[0];
	if (fake_poll_mode == 0)
		return poll(fds, n, timeout);
	if (fake_poll_mode == 2) {
		errno = fake_poll_errno;
		return -1;
	}
	for (i = 0; i < n; i++)
		fds[i].revents = fake_poll_revents;
	return fake_poll_revents ? (int)n : 0;
}

void fake_install(void)
{
	static const struct statsfd__sys sys = {
		.ioctl = fake_ioctl, .poll = fake_poll, .pread = fake_pread,
	};

	statsfd__set_sys(&sys);
}

void fake_uninstall(void)
{
	statsfd__set_sys(NULL);
}

int fake_pipe_source(const void *img, size_t len, int *wr)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (fake_register(p[0], img, len)) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	*wr = p[1];
	return p[0];
}

int fake_tcp_source(const void *img, size_t len, int *peer)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int l, c, s, one = 1, i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -1;
	if (bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sin, &sl)) {
		close(l);
		return -1;
	}
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sin, sizeof(sin))) {
		close(l);
		if (c >= 0)
			close(c);
		return -1;
	}
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	if (s < 0) {
		close(c);
		return -1;
	}
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	i = add(s, malloc(len), len);
	if (i < 0 || !images[i].buf) {
		close(s);
		close(c);
		return -1;
	}
	memcpy(images[i].buf, img, len);
	images[i].tcp = true;
	*peer = c;
	return s;
}

int fake_children_changed(int peer)
{
	return send(peer, "!", 1, MSG_OOB) == 1 ? 0 : -1;
}

int fake_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = -1;	/* the directory's own fd */

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}
