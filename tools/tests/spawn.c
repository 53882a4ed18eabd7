// SPDX-License-Identifier: GPL-2.0
/*
 * spawn.c - the daemon tests' process plumbing (spawn.h): one copy of the
 * start / port-file wait / stop logic every collector test used to paste.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"
#include "statsfd_priv.h"

void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The port in @path, 0 while it has none. */
static unsigned int read_port(const char *path)
{
	unsigned int port = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	if (fscanf(f, "%u", &port) != 1)
		port = 0;
	fclose(f);
	return port;
}

pid_t spawn_daemon(const char *const *argv, const char *const *extra,
		   const char *port_file, double timeout_s, unsigned int *port,
		   void (*setup)(void *arg), void *arg)
{
	const char *all[65];
	unsigned int n = 0;
	double t0 = now_s();
	pid_t pid;

	while (*argv && n < 64)
		all[n++] = *argv++;
	while (extra && *extra && n < 64)
		all[n++] = *extra++;
	all[n] = NULL;
	unlink(port_file);
	*port = 0;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (setup)
			setup(arg);
		execvp(all[0], (char *const *)all);
		_exit(127);
	}
	/* Polled: a port file is written once, by a daemon we cannot wait on. */
	while (now_s() - t0 < timeout_s) {
		*port = read_port(port_file);
		if (*port)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		msleep(20);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

int spawn_dir(char *dir, char *sock, size_t sock_len, char *port, size_t port_len)
{
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return -1;
	snprintf(sock, sock_len, "%s/collector.sock", dir);
	snprintf(port, port_len, "%s/port", dir);
	return 0;
}

bool stop_daemon(pid_t *pid)
{
	int status;

	if (*pid < 0)
		return false;
	kill(*pid, SIGTERM);
	if (waitpid(*pid, &status, 0) != *pid)
		return false;
	*pid = -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

long proc_status(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

double proc_cpu(pid_t pid)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Past the command name, which may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

ssize_t notify_recv(int s, char *buf, size_t size, int *fds, unsigned int max,
		    unsigned int *nfds, int ms)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { buf, size - 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.b, .msg_controllen = sizeof(u.b),
	};
	struct pollfd p = { .fd = s, .events = POLLIN };
	ssize_t r;

	*nfds = 0;
	if (poll(&p, 1, ms) != 1) {
		errno = ETIMEDOUT;
		return -1;
	}
	r = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (r < 0)
		return -1;
	buf[r] = '\0';
	statsfd__msg_fds(&mh, fds, max, nfds);
	return r;
}
