// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b12": CPU time per scrape of `statsfd-collector
 * --host` vs Debian's prometheus-node-exporter restricted to the same
 * collectors (cpu, stat, loadavg, meminfo, vmstat, netdev, diskstats,
 * every device included as --host does), in the same guest, scraped
 * alternately once per second each for SCRAPES rounds.
 *
 * node_exporter reads and parses its text files at every scrape; the
 * collector reads its stats fds once per --interval (1000 ms here, the
 * scrape period) and serves the rendered exposition from its cache, so
 * its CPU per scrape includes one read tick.  CPU is the process's utime
 * + stime from /proc (clock ticks), over the whole window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "spawn.h"
#include "siege.h"

#define B12_DIR		"/tmp/b12"
#define B12_NE_PORT	19101
#define B12_NE		"/usr/bin/prometheus-node-exporter"

/* One GET /metrics on a new connection, read to EOF; its bytes, or -1. */
static long get_metrics(unsigned int port)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
	long total = 0;
	ssize_t n;
	int s;

	siege_port = port;
	s = siege_connect(0, 0);
	if (s < 0)
		return -1;
	if (write(s, req, sizeof(req) - 1) != sizeof(req) - 1) {
		close(s);
		return -1;
	}
	/* The status line is in the first bytes: keep them, count the rest. */
	while ((n = read(s, buf + (total < 4096 ? total : 4096),
			 BUF_SIZE - 4096)) > 0)
		total += n;
	close(s);
	if (n < 0 || total < 12 || memcmp(buf, "HTTP/1.", 7) ||
	    memcmp(buf + 8, " 200", 4))
		return -1;
	return total;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void stop(pid_t pid)
{
	int status;

	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
	}
}

/* Wait up to 30 s for a 200 on @port; false if it never came. */
static bool wait_up(unsigned int port)
{
	int i;

	for (i = 0; i < 300; i++) {
		if (get_metrics(port) > 0)
			return true;
		usleep(100000);
	}
	return false;
}

static unsigned int read_port_file(const char *path)
{
	unsigned int port = 0;
	FILE *f;
	int i;

	for (i = 0; i < 300 && !port; i++) {
		f = fopen(path, "re");
		if (!f || fscanf(f, "%u", &port) != 1)
			port = 0;
		if (f)
			fclose(f);
		if (!port)
			usleep(100000);
	}
	return port;
}

void phase_b12(int scrapes)
{
	char *ne_argv[] = {
		B12_NE, "--web.listen-address=127.0.0.1:19101",
		"--collector.disable-defaults", "--collector.cpu",
		"--collector.stat", "--collector.loadavg", "--collector.meminfo",
		"--collector.vmstat", "--collector.netdev",
		"--collector.diskstats", "--collector.netdev.device-exclude=^$",
		"--collector.diskstats.device-exclude=^$", NULL,
	};
	char *col_argv[] = {
		"statsfd-collector", "--host", "--socket",
		B12_DIR "/c.sock", "--listen", "127.0.0.1:0", "--port-file",
		B12_DIR "/port", "--interval", "1000", NULL,
	};
	double ne0, ne1, col0, col1, t0, next;
	long ne_bytes = 0, col_bytes = 0;
	unsigned int col_port;
	pid_t ne, col;
	int i, fails = 0;

	jbegin("b12");
	jnum("scrapes", scrapes);
	if (access(B12_NE, X_OK)) {
		jstr("error", "no " B12_NE " in the guest");
		jend();
		return;
	}
	mkdir(B12_DIR, 0755);
	unlink(B12_DIR "/port");
	ne = spawn(ne_argv);
	col = spawn(col_argv);
	col_port = read_port_file(B12_DIR "/port");
	if (!col_port || !wait_up(col_port) || !wait_up(B12_NE_PORT)) {
		jstr("error", "node_exporter or statsfd-collector never came up");
		stop(ne);
		stop(col);
		jend();
		return;
	}
	/* Both warm: their first scrapes allocate and fill caches. */
	for (i = 0; i < 3; i++) {
		get_metrics(B12_NE_PORT);
		get_metrics(col_port);
	}
	ne0 = proc_cpu(ne);
	col0 = proc_cpu(col);
	t0 = now_ns();
	next = t0;
	for (i = 0; i < scrapes; i++) {
		long a, b;

		next += 1e9;
		a = get_metrics(B12_NE_PORT);
		b = get_metrics(col_port);
		fails += a < 0 || b < 0;
		ne_bytes = a > 0 ? a : ne_bytes;
		col_bytes = b > 0 ? b : col_bytes;
		while (now_ns() < next) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	ne1 = proc_cpu(ne);
	col1 = proc_cpu(col);
	jnum("window_s", (now_ns() - t0) / 1e9);
	jnum("failed_scrapes", fails);
	jopen("node_exporter", '{');
	jnum("cpu_s", ne1 - ne0);
	jnum("cpu_ms_per_scrape", (ne1 - ne0) * 1e3 / scrapes);
	jnum("bytes", ne_bytes);
	jclose('}');
	jopen("collector", '{');
	jnum("cpu_s", col1 - col0);
	jnum("cpu_ms_per_scrape", (col1 - col0) * 1e3 / scrapes);
	jnum("bytes", col_bytes);
	jclose('}');
	stop(ne);
	stop(col);
	jend();
}
