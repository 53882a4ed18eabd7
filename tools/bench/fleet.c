// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench: a fleet of VMs with vCPUs and a stats fd each, and the
 * collector reading it, as B5 and B13 use them: made, read once in full,
 * registered with statsfd-collector as VMMs would, and the CPU a process
 * spent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "statsfd_msg.h"

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

int fleet_create(struct fleet *f)
{
	int dev = vm_dev(), i, j, k;

	for (i = 0; i < f->nvm; i++) {
		f->vm[i] = vm_create(dev);
		f->vm_stats[i] = stats_fd(f->vm[i]);
		for (j = 0; j < f->nvcpu; j++) {
			k = i * f->nvcpu + j;
			f->vcpu[k] = vcpu_create(f->vm[i], j);
			f->vcpu_stats[k] = stats_fd(f->vcpu[k]);
		}
	}
	return dev;
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

double cpu_seconds(pid_t pid)
{
	char path[64], line[1024], *p;
	unsigned long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(line, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
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
