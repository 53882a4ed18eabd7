// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b13": what statsfd-collector costs on a fleet
 * (issue 10), as ratios measured side by side in one run.
 *
 * CPU.  A fleet of VMs with vCPUs (1024 x 8 by default) and a stats fd for
 * each.  First the bench reads every data block itself, one pread() per
 * fd, twice a second for SECONDS: its own utime + stime (getrusage) is the
 * cost of the bare reads.  Then statsfd-collector ($STATSFD_BENCH_COLLECTOR)
 * gets the same fds, registered as VMMs would, and reads them at
 * --interval 500 for the same time, nobody scraping: its utime + stime
 * (/proc) over the bare reads' is the overhead (issue 10's target: 1.5 at
 * most).  The collector reads mapped vCPUs through their mapping
 * (--max-mapped), so its reads may be cheaper than the bench's preads.
 *
 * Scrapes.  GET /metrics over one keep-alive connection, SCRAPES times:
 * after a change of the sources, the first scrape renders the exposition
 * (what every scrape cost before the per-tick cache), the next one is
 * served the cached text; then the same with Accept-Encoding: gzip (the
 * first one compresses, the next is cached).  Wall time of each request
 * to its last byte, medians; issue 10's target for cached over rendered:
 * 0.2 at most.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "statsfd_client.h"

#define B13_INTERVAL_MS	500
#define B13_MAX_SCRAPES	MAX_ROUNDS

/* utime + stime of this process, in seconds. */
static double self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void sleep_until(double t_ns)
{
	double d = t_ns - now_ns();

	if (d > 0)
		usleep((useconds_t)(d / 1000));
}

/* The bench's own reads, every data block twice a second: its CPU. */
static void b13_bare(const struct fleet *f, int seconds)
{
	struct sfile vm_s, vc_s;
	double cpu0, cpu1, t0, t1, next, vm_ns, vcpu_ns, pass_ns = 0;
	int passes = 0;

	sfile_open(&vm_s, dup(f->vm_stats[0]));
	sfile_open(&vc_s, dup(f->vcpu_stats[0]));
	/* Fault everything in once, outside the window. */
	read_all(f, vm_s.h.data_offset, vm_s.data_size, vc_s.h.data_offset,
		 vc_s.data_size, &vm_ns, &vcpu_ns);
	cpu0 = self_cpu();
	t0 = now_ns();
	for (next = t0; next < t0 + seconds * 1e9; next += B13_INTERVAL_MS * 1e6) {
		sleep_until(next);
		read_all(f, vm_s.h.data_offset, vm_s.data_size,
			 vc_s.h.data_offset, vc_s.data_size, &vm_ns, &vcpu_ns);
		pass_ns += vm_ns + vcpu_ns;
		passes++;
	}
	sleep_until(t0 + seconds * 1e9);
	t1 = now_ns();
	cpu1 = self_cpu();
	jopen("bare_reads", '{');
	jnum("window_s", (t1 - t0) / 1e9);
	jnum("passes", passes);
	jnum("ms_per_pass", pass_ns / passes / 1e6);
	jnum("cpu_s", cpu1 - cpu0);
	jnum("cpu_percent", 100.0 * (cpu1 - cpu0) / ((t1 - t0) / 1e9));
	jclose('}');
	sfile_close(&vm_s);
	sfile_close(&vc_s);
}

/* GET /metrics on the keep-alive connection @s, as the text format. */
static struct scrape scrape(int s, bool gz)
{
	return collector_scrape(s, NULL, gz);
}

/* How many times @pat occurs in @s. */
static unsigned int count_of(const char *s, const char *pat)
{
	unsigned int n = 0;

	while ((s = strstr(s, pat))) {
		s += strlen(pat);
		n++;
	}
	return n;
}

/* statsfd-collector on the fleet at 2 reads/s, nobody scraping: its CPU. */
static void b13_collector_cpu(const struct fleet *f, const char *cmd,
			      int seconds)
{
	unsigned int port;
	uint64_t reads;
	char *reply;
	int sock;
	pid_t pid;

	jopen("collector", '{');
	jstr("command", cmd);
	pid = collector_fleet(cmd, "500", f, &port, &sock);
	if (pid < 0)
		goto out;
	reply = collector_window(pid, sock, seconds, &reads);
	jnum("sources_mapped", count_of(reply, "\"mapped\": true") +
	     count_of(reply, "\"mapped\":true"));
	free(reply);
	collector_stop(pid, sock);
out:
	jclose('}');
}

/*
 * Scrapes, rendered vs cached, plain and gzip.  This collector reads
 * once an hour: under TCG a render of the whole fleet can outlast a
 * 500 ms tick, and then every scrape would render.  A render is forced
 * instead by what else makes one: a change of the sources (VM 0
 * removed and registered again).  The fleet's vCPUs never run, so their
 * values are the same read or not.
 */
static void b13_scrapes(const struct fleet *f, const char *cmd, int scrapes)
{
	static double render[B13_MAX_SCRAPES], cached[B13_MAX_SCRAPES],
		      gz_first[B13_MAX_SCRAPES], gz_cached[B13_MAX_SCRAPES];
	struct scrape p1, p2, z1, z2;
	size_t plain_len = 0, gz_len = 0;
	unsigned int port;
	int s, sock, it, same = 0;
	pid_t pid;

	if (scrapes > B13_MAX_SCRAPES)
		scrapes = B13_MAX_SCRAPES;
	jopen("scrapes", '{');
	pid = collector_fleet(cmd, "3600000", f, &port, &sock);
	if (pid < 0)
		goto out;
	for (it = 0; it < scrapes && !collector_reregister(sock, f); it++) {
		s = collector_http(port);
		p1 = scrape(s, false);
		p2 = scrape(s, false);
		z1 = scrape(s, true);
		z2 = scrape(s, true);
		same += p1.reads == p2.reads && p1.len == p2.len;
		render[it] = p1.ms;
		cached[it] = p2.ms;
		gz_first[it] = z1.ms;
		gz_cached[it] = z2.ms;
		plain_len = p1.len;
		gz_len = z1.len;
		close(s);
	}
	collector_stop(pid, sock);
	jnum("iterations", it);
	jnum("same_body", same);
	jnum("body_bytes", plain_len);
	jnum("gzip_bytes", gz_len);
	if (it) {
		jnum("render_ms", median_of(render, it));
		jnum("cached_ms", median_of(cached, it));
		jnum("cached_over_render", median_of(cached, it) / median_of(render, it));
		jnum("gzip_first_ms", median_of(gz_first, it));
		jnum("gzip_cached_ms", median_of(gz_cached, it));
		jnum("gzip_cached_over_render",
		     median_of(gz_cached, it) / median_of(render, it));
	}
out:
	jclose('}');
}

void phase_b13(int nvm, int nvcpu, int seconds, int scrapes)
{
	const char *cmd = getenv("STATSFD_BENCH_COLLECTOR");
	struct fleet f;

	fleet_make(&f, nvm, nvcpu, vm_dev());

	jbegin("b13");
	jnum("vms", nvm);
	jnum("vcpus_per_vm", nvcpu);
	jnum("interval_ms", B13_INTERVAL_MS);
	b13_bare(&f, seconds);
	if (cmd && *cmd) {
		b13_collector_cpu(&f, cmd, seconds);
		b13_scrapes(&f, cmd, scrapes);
	} else {
		jopen("collector", '{');
		jstr("error", "no collector in the guest (statsfd-collector not built)");
		jclose('}');
	}
	jend();
	fleet_free(&f);
}
