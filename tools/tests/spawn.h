/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spawn.h - start a daemon under test, wait for the port it says it
 * listens on, stop it; the clock and /proc figures the daemon tests read.
 * Shared by the collector's host tests and statsfd-bench's B15 (libc only:
 * the bench is linked static).
 */
#ifndef TESTS_SPAWN_H
#define TESTS_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Sleep @ms milliseconds (whole, across signals). */
void msleep(int ms);
/* CLOCK_MONOTONIC in seconds. */
double now_s(void);

/*
 * spawn_daemon() - fork and exec @argv followed by @extra (each
 * NULL-terminated, @extra may be NULL; argv[0] the binary, looked up in
 * PATH; 64 arguments in all at most), then wait up to @timeout_s for
 * @port_file to hold a non-zero port.  @port_file is removed first.  @setup, when
 * not NULL, runs in the child before the exec with @arg (environment,
 * limits, stderr).
 *
 * Return: the daemon's pid with *@port set, or -1 when it exited or never
 * wrote its port (then it is killed and reaped).
 */
pid_t spawn_daemon(const char *const *argv, const char *const *extra,
		   const char *port_file, double timeout_s, unsigned int *port,
		   void (*setup)(void *arg), void *arg);

/*
 * spawn_dir() - make the directory of template @dir (mkdtemp(), mode 0755:
 * a daemon that drops to nobody still reaches its socket there) and the
 * paths of the daemon's socket (@sock, "collector.sock") and port file
 * (@port, "port") in it.  Return: 0, or -1 (errno).
 */
int spawn_dir(char *dir, char *sock, size_t sock_len, char *port, size_t port_len);

/*
 * stop_daemon() - SIGTERM to *@pid, reaped; *@pid becomes -1.
 * Return: true when it exited with status 0.
 */
bool stop_daemon(pid_t *pid);

/*
 * The number in field @field of /proc/@pid/status (its first: "VmRSS" and
 * "VmHWM" in KiB, "Uid" the real uid), or -1.
 */
long proc_status(pid_t pid, const char *field);
/* utime + stime of @pid, in seconds, or -1. */
double proc_cpu(pid_t pid);

/*
 * notify_recv() - one sd_notify() datagram on @s within @ms, read as
 * systemd (PID 1) reads it: its text into @buf (@size bytes, NUL-
 * terminated), the fds it carries into @fds (*@nfds of them, at most
 * @max: the others are closed).  Return: its length; -1 with errno
 * ETIMEDOUT when none came in time, another errno when recvmsg() failed.
 */
ssize_t notify_recv(int s, char *buf, size_t size, int *fds, unsigned int max,
		    unsigned int *nfds, int ms);

#endif /* TESTS_SPAWN_H */
