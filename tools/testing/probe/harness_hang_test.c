// SPDX-License-Identifier: GPL-2.0
/*
 * harness_hang_test - a selftest that never returns, to prove a hung test
 * turns the verdict red: the guest's per-binary timeout must kill it and
 * global.hang_forever must be reported as failed.  Used only by the "hang"
 * probe of `make check-harness`; `make check` never runs it (tools/testing/probe
 * is copied into the guest by the harness probes alone).
 *
 * The kselftest harness has its own per-test timeout (30 s by default),
 * which would report the hang itself and hide whether the guest's timeout
 * (about 20 s in the probe) works.  So the test sets a harness timeout far
 * beyond the guest's: the guest's must fire first.  TEST_F_TIMEOUT() needs
 * a fixture; naming it "global", like the one plain TEST()s get, keeps the
 * TAP name global.hang_forever.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "kselftest_harness.h"

/* Far longer than any guest-side timeout of the probe. */
#define HANG_HARNESS_TIMEOUT_S 3600

FIXTURE(global) {};
FIXTURE_SETUP(global) {}
FIXTURE_TEARDOWN(global) {}

/* The parent of @pid, from /proc/@pid/stat, or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f)) {
		/* "pid (comm) state ppid ...": comm may hold anything but ')'. */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
			ppid = -1;
	}
	fclose(f);
	return ppid;
}

TEST_F_TIMEOUT(global, hang_forever, HANG_HARNESS_TIMEOUT_S)
{
	/*
	 * This body runs two forks below the test binary (the harness forks
	 * a runner per test, the fixture forks again), in a process group of
	 * its own that a timeout killing only the binary does not reach.
	 * Hang for as long as the binary lives, then go, so the probe leaves
	 * no process behind in the guest.
	 */
	pid_t binary = parent_of(getppid());

	TH_LOG("blocking forever on purpose for make check-harness");
	for (;;) {
		sleep(1);
		if (binary > 1 && kill(binary, 0) && errno == ESRCH)
			_exit(1);
	}
}

TEST_HARNESS_MAIN
