// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b13": what statsfd-collector costs on a fleet
 * as ratios measured side by side in one run.
 *
 * CPU.  A fleet of VMs with vCPUs (1024 x 8 by default) and a stats fd for
 * each.  First the bench reads every data block itself, one pread() per
 * fd, twice a second for SECONDS: its own utime + stime (getrusage) is the
 * cost of the bare reads.  Then statsfd-collector ($STATSFD_BENCH_COLLECTOR)
 * gets the same fds, registered as VMMs would, and reads them at
 * --interval 500 for the same time, nobody scraping: its utime + stime
 * (/proc) over the bare reads' is the overhead (target: 1.5 at most).  The collector reads mapped vCPUs through their mapping
 * (--max-mapped), so its reads may be cheaper than the bench's preads.
 *
 * Scrapes.  GET /metrics over one keep-alive connection, SCRAPES times:
 * after a change of the sources, the first scrape renders the exposition
 * (what every scrape cost before the per-tick cache), the next one is
 * served the cached text; then the same with Accept-Encoding: gzip (the
 * first one compresses, the next is cached).  Wall time of each request
 * to its last byte, medians; the target for cached over rendered: 0.2 at
 * most.
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
#include "statsfd_msg.h"

#define B13_SOCK	"/tmp/statsfd-bench-b13.sock"
#define B13_PORT_FILE	"/tmp/statsfd-bench-b13.port"
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

/**
 * struct scrape - one GET /metrics
 * @ms: wall time, request sent to last byte received
 * @len: body bytes
 * @reads: statsfd_collector_reads_total in a plain body (0 for gzip)
 */
struct scrape {
	double ms;
	size_t len;
	uint64_t reads;
};

/* GET /metrics on the keep-alive connection @s into buf; die on error. */
static struct scrape scrape(int s, bool gz)
{
	static const char plain_req[] =
		"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
	static const char gz_req[] =
		"GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
		"Accept-Encoding: gzip\r\n\r\n";
	static char *body;
	static size_t cap;
	const char *req = gz ? gz_req : plain_req;
	struct scrape r = { 0 };
	size_t have = 0, want = 0, hdr = 0;
	double t0 = now_ns();
	const char *p;

	if (write(s, req, strlen(req)) != (ssize_t)strlen(req))
		die("b13: send the request");
	for (;;) {
		ssize_t n;

		if (cap - have < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			body = realloc(body, cap + 1);
			if (!body)
				die("b13: realloc");
		}
		n = read(s, body + have, cap - have);
		if (n <= 0)
			die("b13: read the response");
		have += n;
		body[have] = '\0';
		if (!hdr) {
			p = strstr(body, "\r\n\r\n");
			if (!p)
				continue;
			hdr = p + 4 - body;
			p = strcasestr(body, "\r\nContent-Length:");
			if (strncmp(body, "HTTP/1.1 200", 12) || !p || p > body + hdr)
				die("b13: not a 200 with a Content-Length");
			want = hdr + strtoull(p + 17, NULL, 10);
		}
		if (have >= want)
			break;
	}
	r.ms = (now_ns() - t0) / 1e6;
	r.len = want - hdr;
	if (!gz) {
		p = memmem(body + hdr, r.len, "\nstatsfd_collector_reads_total ", 31);
		if (!p)
			die("b13: no statsfd_collector_reads_total in the exposition");
		r.reads = strtoull(p + 31, NULL, 10);
	}
	return r;
}

/*
 * Start the collector (@cmd) reading every @interval ms, with HTTP on a
 * free port of 127.0.0.1; *@port and *@sock (a connection to its socket)
 * set.  Return: its pid, or -1 after adding "error" to the open object.
 */
static pid_t start_collector(const char *cmd, const char *interval,
			     unsigned int *port, int *sock)
{
	int status, i;
	FILE *pf;
	pid_t pid;

	unlink(B13_SOCK);
	unlink(B13_PORT_FILE);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		/*
		 * Our fds are O_CLOEXEC: it gets them only by registration.
		 * Its limits are the defaults, which are sized for this fleet
		 * (collector_scale_test checks it fits them).
		 */
		execlp(cmd, cmd, "--socket", B13_SOCK, "--listen", "127.0.0.1:0",
		       "--port-file", B13_PORT_FILE, "--interval", interval,
		       (char *)NULL);
		_exit(127);
	}
	*port = 0;
	for (i = 0; i < 300 && !*port; i++) {
		pf = fopen(B13_PORT_FILE, "r");
		if (!pf || fscanf(pf, "%u", port) != 1)
			*port = 0;
		if (pf)
			fclose(pf);
		if (!*port)
			usleep(100000);
	}
	*sock = *port ? statsfd_msg_connect(B13_SOCK) : -1;
	if (*sock < 0) {
		jstr("error", "collector never came up");
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		return -1;
	}
	return pid;
}

static void stop_collector(pid_t pid, int sock)
{
	int status;

	close(sock);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
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
	double cpu0, cpu1, t0, t1;
	uint64_t reads0, reads1;
	unsigned int nsrc, port;
	char *reply;
	int sock;
	pid_t pid;

	jopen("collector", '{');
	jstr("command", cmd);
	pid = start_collector(cmd, "500", &port, &sock);
	if (pid < 0)
		goto out;
	t0 = now_ns();
	if (collector_register(sock, f)) {
		stop_collector(pid, sock);
		goto out;
	}
	jnum("sources", f->nvm * (1 + f->nvcpu));
	jnum("register_ms", (now_ns() - t0) / 1e6);

	/* Let it settle into its read cycle, then measure. */
	sleep(3);
	reply = collector_call(sock, "{\"execute\":\"query-sources\"}", NULL, 0);
	reads0 = json_sum(reply, "reads", &nsrc);
	free(reply);
	cpu0 = cpu_seconds(pid);
	t0 = now_ns();
	sleep(seconds);
	cpu1 = cpu_seconds(pid);
	t1 = now_ns();
	reply = collector_call(sock, "{\"execute\":\"query-sources\"}", NULL, 0);
	reads1 = json_sum(reply, "reads", &nsrc);
	jnum("sources_mapped", count_of(reply, "\"mapped\": true") +
	     count_of(reply, "\"mapped\":true"));
	free(reply);
	jnum("window_s", (t1 - t0) / 1e9);
	jnum("cpu_s", cpu1 - cpu0);
	jnum("cpu_percent", 100.0 * (cpu1 - cpu0) / ((t1 - t0) / 1e9));
	jnum("sources_reported", nsrc);
	jnum("reads_per_source_per_s",
	     nsrc ? (reads1 - reads0) / ((t1 - t0) / 1e9) / nsrc : 0);
	stop_collector(pid, sock);
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
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct scrape p1, p2, z1, z2;
	size_t plain_len = 0, gz_len = 0;
	unsigned int port;
	int s, sock, it, same = 0;
	char *reply;
	pid_t pid;

	if (scrapes > B13_MAX_SCRAPES)
		scrapes = B13_MAX_SCRAPES;
	jopen("scrapes", '{');
	pid = start_collector(cmd, "3600000", &port, &sock);
	if (pid < 0)
		goto out;
	if (collector_register(sock, f)) {
		stop_collector(pid, sock);
		goto out;
	}
	sin.sin_port = htons(port);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sin, sizeof(sin)))
		die("b13: connect to the collector's HTTP port %u", port);
	for (it = 0; it < scrapes; it++) {
		reply = collector_call(sock, "{\"execute\":\"remove-sources\","
				       "\"arguments\":{\"vm\":\"bench-0\"}}", NULL, 0);
		free(reply);
		if (collector_register_vm(sock, f, 0))
			break;
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
	}
	close(s);
	stop_collector(pid, sock);
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
	struct fleet f = { .nvm = nvm, .nvcpu = nvcpu };
	int dev, i, n = nvm * nvcpu;

	fleet_alloc(&f);
	dev = fleet_create(&f);
	fprintf(stderr, "b13: %d VMs x %d vCPUs created\n", nvm, nvcpu);

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

	for (i = 0; i < n; i++) {
		close(f.vcpu_stats[i]);
		close(f.vcpu[i]);
	}
	for (i = 0; i < nvm; i++) {
		close(f.vm_stats[i]);
		close(f.vm[i]);
	}
	close(dev);
	free(f.vm);
	free(f.vm_stats);
	free(f.vcpu);
	free(f.vcpu_stats);
}
