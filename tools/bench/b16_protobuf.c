// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b16": the fleet's scrape (B13's, 1024 VMs x 8
 * vCPUs by default) as the protobuf exposition with native histograms,
 * what Prometheus asks for with --enable-feature=native-histograms, vs
 * the text format, side by side in one collector.
 *
 * Each iteration forces a render of every format (a change of the
 * sources: VM 0 removed and registered again, as B13 does), then scrapes
 * the text and the protobuf exposition once each over one keep-alive
 * connection: the collector's utime + stime (/proc) across each scrape
 * is the CPU of rendering and sending that format, the body its bytes on
 * the wire; then both again with gzip (bytes only).  Medians.  Issue 20's
 * target: protobuf bytes at most 0.3x the text's (each log2 histogram is
 * one native histogram instead of up to 33 _bucket samples).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "spawn.h"

#define B16_PROTOBUF	"application/vnd.google.protobuf;" \
			"proto=io.prometheus.client.MetricFamily;encoding=delimited"
#define B16_MAX_SCRAPES	MAX_ROUNDS

void phase_b16(int nvm, int nvcpu, int scrapes)
{
	static double text_cpu[B16_MAX_SCRAPES], pb_cpu[B16_MAX_SCRAPES],
		      text_ms[B16_MAX_SCRAPES], pb_ms[B16_MAX_SCRAPES];
	const char *cmd = getenv("STATSFD_BENCH_COLLECTOR");
	struct scrape t, p, tz, pz;
	size_t text_len = 0, pb_len = 0, text_gz = 0, pb_gz = 0;
	double c0, c1, c2;
	struct fleet f;
	unsigned int port;
	int s, sock, it;
	pid_t pid;

	if (scrapes > B16_MAX_SCRAPES)
		scrapes = B16_MAX_SCRAPES;
	fleet_make(&f, nvm, nvcpu, vm_dev());
	jbegin("b16");
	jnum("vms", nvm);
	jnum("vcpus_per_vm", nvcpu);
	if (!cmd || !*cmd) {
		jstr("error", "no collector in the guest (statsfd-collector not built)");
		goto out;
	}
	/* Reading once an hour: only the forced changes render. */
	pid = collector_fleet(cmd, "3600000", &f, &port, &sock);
	if (pid < 0)
		goto out;
	for (it = 0; it < scrapes && !collector_reregister(sock, &f); it++) {
		s = collector_http(port);
		c0 = proc_cpu(pid);
		t = collector_scrape(s, NULL, false);
		c1 = proc_cpu(pid);
		p = collector_scrape(s, B16_PROTOBUF, false);
		c2 = proc_cpu(pid);
		tz = collector_scrape(s, NULL, true);
		pz = collector_scrape(s, B16_PROTOBUF, true);
		text_cpu[it] = (c1 - c0) * 1e3;
		pb_cpu[it] = (c2 - c1) * 1e3;
		text_ms[it] = t.ms;
		pb_ms[it] = p.ms;
		text_len = t.len;
		pb_len = p.len;
		text_gz = tz.len;
		pb_gz = pz.len;
		close(s);
	}
	collector_stop(pid, sock);
	jnum("iterations", it);
	jnum("text_bytes", text_len);
	jnum("protobuf_bytes", pb_len);
	jnum("bytes_ratio", text_len ? (double)pb_len / text_len : 0);
	jnum("text_gzip_bytes", text_gz);
	jnum("protobuf_gzip_bytes", pb_gz);
	if (it) {
		jnum("text_cpu_ms", median_of(text_cpu, it));
		jnum("protobuf_cpu_ms", median_of(pb_cpu, it));
		jnum("text_ms", median_of(text_ms, it));
		jnum("protobuf_ms", median_of(pb_ms, it));
	}
out:
	jend();
	fleet_free(&f);
}
