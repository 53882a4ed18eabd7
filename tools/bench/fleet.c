// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench: a fleet of VMs with vCPUs and a stats fd each, and the
 * collector reading it, as B5, B13 and B16 use them: made, read once in
 * full, registered with statsfd-collector as VMMs would, scraped, and the
 * CPU a process spent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench.h"
#include "spawn.h"
#include "statsfd_client.h"

/* Where collector_start() has its collector listen and say its port. */
#define COLLECTOR_SOCK		"/tmp/statsfd-bench-collector.sock"
#define COLLECTOR_PORT_FILE	"/tmp/statsfd-bench-collector.port"

void fleet_alloc(struct fleet *f)
{
	int n = f->nvm * f->nvcpu;

	f->vm = calloc(f->nvm, sizeof(int));
	f->vm_stats = calloc(f->nvm, sizeof(int));
	f->vcpu = calloc(n, sizeof(int));
	f->vcpu_stats = calloc(n, sizeof(int));
	if (!f->vm || !f->vm_stats || !f->vcpu || !f->vcpu_stats)
		die("calloc");
}


void read_all(const struct fleet *f, uint32_t vm_off, uint32_t vm_len,
	      uint32_t vc_off, uint32_t vc_len, double *vm_ns,
	      double *vcpu_ns)
{
	double t0, t1, t2;
	int i;

	t0 = now_ns();
	for (i = 0; i < f->nvm; i++)
		if (pread(f->vm_stats[i], buf, vm_len, vm_off) != vm_len)
			die("pread VM stats");
	t1 = now_ns();
	for (i = 0; i < f->nvm * f->nvcpu; i++)
		if (pread(f->vcpu_stats[i], buf, vc_len, vc_off) != vc_len)
			die("pread vCPU stats");
	t2 = now_ns();
	*vm_ns = t1 - t0;
	*vcpu_ns = t2 - t1;
}

/* Sum of every "key": N in a JSON text, and how many there were. */
uint64_t json_sum(const char *json, const char *key, unsigned int *n)
{
	char pat[64];
	uint64_t sum = 0;
	const char *p = json;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	*n = 0;
	while ((p = strstr(p, pat))) {
		p += strlen(pat);
		while (*p == ' ' || *p == ':')
			p++;
		sum += strtoull(p, NULL, 10);
		(*n)++;
	}
	return sum;
}

/* One request and its reply on the collector's socket; reply malloc()ed. */
char *collector_call(int sock, const char *json, const int *fds,
		     unsigned int nfds)
{
	unsigned int nrecv = 0;
	char *reply;
	size_t len;
	int ret;

	ret = statsfd_msg_send(sock, json, strlen(json), fds, nfds);
	if (ret) {
		errno = -ret;
		die("send to the collector");
	}
	ret = statsfd_msg_recv(sock, &reply, &len, NULL, &nrecv, 60000);
	if (ret) {
		errno = -ret;
		die("reply from the collector");
	}
	return reply;
}

/**
 * collector_register_vm() - register VM @i of @f on @sock as a VMM would:
 *	one add-sources with its stats fd and its vCPUs', labelled bench-@i
 * @sock: a connection to the collector
 * @f: the fleet
 * @i: the VM
 *
 * Return: 0, or -1 after adding "error" and "reply" to the open JSON
 * object when the collector refused the registration.
 */
int collector_register_vm(int sock, const struct fleet *f, int i)
{
	int fds[1 + 256];
	char json[4096], *reply;
	size_t len;
	int j;

	len = snprintf(json, sizeof(json),
		       "{\"execute\":\"add-sources\",\"id\":%d,"
		       "\"arguments\":{\"provider\":\"statsfd_vm\","
		       "\"vm\":\"bench-%d\",\"sources\":"
		       "[{\"target\":\"vm\"}", i, i);
	fds[0] = f->vm_stats[i];
	for (j = 0; j < f->nvcpu && j < 256; j++) {
		len += snprintf(json + len, sizeof(json) - len,
				",{\"target\":\"vcpu\",\"vcpu\":%d}", j);
		fds[1 + j] = f->vcpu_stats[i * f->nvcpu + j];
	}
	snprintf(json + len, sizeof(json) - len, "]}}");
	reply = collector_call(sock, json, fds, 1 + j);
	if (!strstr(reply, "\"return\"")) {
		fprintf(stderr, "bench: add-sources refused: %s\n", reply);
		jstr("error", "add-sources refused");
		jstr("reply", reply);
		free(reply);
		return -1;
	}
	free(reply);
	return 0;
}

/* Every VM of @f, in order: collector_register_vm() each. */
int collector_register(int sock, const struct fleet *f)
{
	int i;

	for (i = 0; i < f->nvm; i++)
		if (collector_register_vm(sock, f, i))
			return -1;
	return 0;
}

/**
 * fleet_make() - @nvm VMs of @nvcpu vCPUs each, with their stats fds
 * @f: filled; fleet_free() releases it
 * @nvm: VMs
 * @nvcpu: vCPUs per VM
 * @dev: the statsfd_vm device, closed by fleet_free()
 */
void fleet_make(struct fleet *f, int nvm, int nvcpu, int dev)
{
	int i, j;

	*f = (struct fleet){ .nvm = nvm, .nvcpu = nvcpu, .dev = dev };
	fleet_alloc(f);
	for (i = 0; i < nvm; i++) {
		f->vm[i] = vm_create(dev);
		f->vm_stats[i] = stats_fd(f->vm[i]);
		for (j = 0; j < nvcpu; j++) {
			f->vcpu[i * nvcpu + j] = vcpu_create(f->vm[i], j);
			f->vcpu_stats[i * nvcpu + j] = stats_fd(f->vcpu[i * nvcpu + j]);
		}
	}
	fprintf(stderr, "bench: %d VMs x %d vCPUs created\n", nvm, nvcpu);
}

/**
 * fleet_free() - close and free what fleet_make() made
 * @f: the fleet
 */
void fleet_free(struct fleet *f)
{
	int i;

	for (i = 0; i < f->nvm * f->nvcpu; i++) {
		close(f->vcpu_stats[i]);
		close(f->vcpu[i]);
	}
	for (i = 0; i < f->nvm; i++) {
		close(f->vm_stats[i]);
		close(f->vm[i]);
	}
	close(f->dev);
	free(f->vm);
	free(f->vm_stats);
	free(f->vcpu);
	free(f->vcpu_stats);
}

/**
 * collector_scrape() - one GET /metrics on a keep-alive connection
 * @s: the connection
 * @accept: the Accept header's value, or NULL for none (the text format)
 * @gz: ask for gzip
 *
 * Dies on error.
 * Return: wall time, body bytes, and statsfd_collector_reads_total of a
 * plain text body.
 */
struct scrape collector_scrape(int s, const char *accept, bool gz)
{
	static char *body;
	static size_t cap;
	char req[512];
	struct scrape r = { 0 };
	size_t have = 0, want = 0, hdr = 0;
	double t0 = now_ns();
	const char *p;

	snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: localhost\r\n%s%s%s%s\r\n",
		 accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : "",
		 gz ? "Accept-Encoding: gzip\r\n" : "");
	if (write(s, req, strlen(req)) != (ssize_t)strlen(req))
		die("scrape: send the request");
	for (;;) {
		ssize_t n;

		if (cap - have < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			body = realloc(body, cap + 1);
			if (!body)
				die("scrape: realloc");
		}
		n = read(s, body + have, cap - have);
		if (n <= 0)
			die("scrape: read the response");
		have += n;
		body[have] = '\0';
		if (!hdr) {
			p = strstr(body, "\r\n\r\n");
			if (!p)
				continue;
			hdr = p + 4 - body;
			p = strcasestr(body, "\r\nContent-Length:");
			if (strncmp(body, "HTTP/1.1 200", 12) || !p || p > body + hdr)
				die("scrape: not a 200 with a Content-Length");
			want = hdr + strtoull(p + 17, NULL, 10);
		}
		if (have >= want)
			break;
	}
	r.ms = (now_ns() - t0) / 1e6;
	r.len = want - hdr;
	if (!gz && !accept) {
		p = memmem(body + hdr, r.len, "\nstatsfd_collector_reads_total ", 31);
		if (!p)
			die("scrape: no statsfd_collector_reads_total in the exposition");
		r.reads = strtoull(p + 31, NULL, 10);
	}
	return r;
}

/* The port the collector wrote to COLLECTOR_PORT_FILE, or 0. */
static unsigned int collector_port(void)
{
	unsigned int port = 0;
	FILE *pf = fopen(COLLECTOR_PORT_FILE, "r");

	if (pf) {
		if (fscanf(pf, "%u", &port) != 1)
			port = 0;
		fclose(pf);
	}
	return port;
}

/**
 * collector_start() - start statsfd-collector for a fleet
 * @cmd: its command
 * @interval: its --interval, in ms
 * @port: set to its HTTP port on 127.0.0.1; NULL: no HTTP listener
 * @sock: set to a connection to its unix socket
 *
 * Return: its pid, or -1 after adding "error" to the open object.
 */
pid_t collector_start(const char *cmd, const char *interval,
		      unsigned int *port, int *sock)
{
	int status, i;
	pid_t pid;

	unlink(COLLECTOR_SOCK);
	unlink(COLLECTOR_PORT_FILE);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		/*
		 * Our fds are O_CLOEXEC: it gets them only by registration.
		 * Without HTTP it only reads, B5's fleets (which can be larger
		 * than the default --max-sources allows).  With HTTP its
		 * limits are the defaults, which are sized for this fleet
		 * (collector_scale_test checks it fits them), but for one:
		 * under TCG the fleet's whole exposition (156 MB) takes about
		 * 15 s to render and as long to send, past the default
		 * --http-send-timeout (30 s) meant for hostile readers, which
		 * would cut the bench's scrapes.
		 */
		if (!port)
			execlp(cmd, cmd, "--socket", COLLECTOR_SOCK, "--listen", "none",
			       "--interval", interval, "--max-sources", "65536",
			       (char *)NULL);
		else
			execlp(cmd, cmd, "--socket", COLLECTOR_SOCK,
			       "--listen", "127.0.0.1:0", "--port-file", COLLECTOR_PORT_FILE,
			       "--interval", interval, "--http-send-timeout", "600",
			       (char *)NULL);
		_exit(127);
	}
	*sock = -1;
	for (i = 0; i < 300 && *sock < 0; i++) {
		if (port)
			*port = collector_port();
		if (!port || *port)
			*sock = statsfd_msg_connect(COLLECTOR_SOCK);
		if (*sock < 0)
			usleep(100000);
	}
	if (*sock < 0) {
		jstr("error", "collector never came up");
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		return -1;
	}
	return pid;
}

pid_t collector_fleet(const char *cmd, const char *interval,
		      const struct fleet *f, unsigned int *port, int *sock)
{
	pid_t pid = collector_start(cmd, interval, port, sock);
	double t0 = now_ns();

	if (pid < 0)
		return -1;
	if (collector_register(*sock, f)) {
		collector_stop(pid, *sock);
		return -1;
	}
	jnum("sources", f->nvm * (1 + f->nvcpu));
	jnum("register_ms", (now_ns() - t0) / 1e6);
	return pid;
}

int collector_reregister(int sock, const struct fleet *f)
{
	free(collector_call(sock, "{\"execute\":\"remove-sources\","
			    "\"arguments\":{\"vm\":\"bench-0\"}}", NULL, 0));
	return collector_register_vm(sock, f, 0);
}

char *collector_window(pid_t pid, int sock, int seconds, uint64_t *reads)
{
	const char *q = "{\"execute\":\"query-sources\"}";
	double cpu0, cpu1, t0, t1;
	uint64_t reads0;
	unsigned int nsrc;
	char *reply;

	/* Let it settle into its read cycle, then measure. */
	sleep(3);
	reply = collector_call(sock, q, NULL, 0);
	reads0 = json_sum(reply, "reads", &nsrc);
	free(reply);
	cpu0 = proc_cpu(pid);
	t0 = now_ns();
	sleep(seconds);
	cpu1 = proc_cpu(pid);
	t1 = now_ns();
	reply = collector_call(sock, q, NULL, 0);
	*reads = json_sum(reply, "reads", &nsrc) - reads0;
	jnum("window_s", (t1 - t0) / 1e9);
	jnum("cpu_s", cpu1 - cpu0);
	jnum("cpu_percent", 100.0 * (cpu1 - cpu0) / ((t1 - t0) / 1e9));
	jnum("sources_reported", nsrc);
	jnum("reads_per_source_per_s", nsrc ? *reads / ((t1 - t0) / 1e9) / nsrc : 0);
	return reply;
}

/**
 * collector_stop() - stop what collector_start() started
 * @pid: its pid
 * @sock: the connection to its socket, closed
 */
void collector_stop(pid_t pid, int sock)
{
	int status;

	close(sock);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
}

/*
 * A new HTTP connection to the collector on 127.0.0.1:@port, made just
 * before the scrapes that use it: the collector cuts a connection whose
 * request has not come --http-header-timeout (5 s) after it was opened or
 * its last response ended, and a fleet's re-registration between two
 * rounds of scrapes takes longer than that under TCG.
 */
int collector_http(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sin, sizeof(sin)))
		die("connect to the collector's HTTP port %u", port);
	return s;
}
