// SPDX-License-Identifier: GPL-2.0
/*
 * The collector's admission, sources and exposition cache on the host,
 * its own source code driven directly (collector/admit.c, sources.c,
 * render.c): every refusal of admit_fd() and add_source() with its exact
 * errno, the --include/--exclude rule syntax, and render_cached(), which
 * renders again only after a read tick or a change of sources.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "image.h"
#include "statsfd.h"
#include "tap.h"

static struct collector col = {
	.max_sources = 100, .max_mapped = 0, .client_max_sources = 3,
	.client_max_bytes = 1 << 20, .max_bytes = 1 << 20, .drop_after = 2,
	.accept_memfd = true,
};
static struct client cl1 = { .kind = EP_CLIENT, .fd = -1, .uid = 1000, .pid = 10 };
static struct client cl2 = { .kind = EP_CLIENT, .fd = -1, .uid = 1001, .pid = 11 };

static int vcpu_memfd(void)
{
	static unsigned char buf[1 << 14];

	return img_memfd(buf, img_build(buf, sizeof(buf), "vm-1/vcpu-0", 48,
					img_vcpu_stats, img_vcpu_nstats, NULL, 0));
}

/* A memfd with a header of @name_size, @num_desc and one value at @off. */
static int header_memfd(uint32_t name_size, uint32_t num_desc, uint32_t off)
{
	struct statsfd_header h = {
		.name_size = name_size, .num_desc = num_desc, .id_offset = 24,
		.desc_offset = 24 + name_size,
	};
	struct statsfd_desc d = { .size = 1, .offset = off };
	int fd = memfd_create("hdr", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 1 << 20) || pwrite(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    pwrite(fd, &d, sizeof(d), h.desc_offset) != sizeof(d))
		tap_diag("header_memfd failed");
	return fd;
}

static int admit(int fd, bool memfd_ok, struct admit_info *info, char *why)
{
	int ret = admit_fd(fd, memfd_ok, info, why, 256);

	close(fd);
	return ret;
}

static void test_admit(void)
{
	struct admit_info info;
	char why[256], path[] = "/tmp/statsfd-sources-test.XXXXXX";
	int p[2], fd;

	tap_ok(admit(vcpu_memfd(), false, &info, why) == -EPERM &&
	       strstr(why, "not a stats fd of statsfd or KVM (/memfd:"),
	       "a memfd without --test-accept-memfd: -EPERM (%s)", why);
	tap_ok(admit(vcpu_memfd(), true, &info, why) == 0 && info.ns == SOURCE_NS_STATSFD &&
	       info.data_size > 0 && info.cost > 2 * info.data_size,
	       "with it: admitted in the statsfd namespace, cost %zu for %zu data bytes",
	       info.cost, info.data_size);
	fd = mkstemp(path);
	unlink(path);
	tap_ok(admit(fd, true, &info, why) == -EPERM && strstr(why, "(/tmp/statsfd-sources-test."),
	       "a regular file, even in test mode: -EPERM");
	if (!pipe(p)) {
		close(p[1]);
		tap_ok(admit(p[0], true, &info, why) == -EPERM && strstr(why, "(pipe:["),
		       "a pipe: -EPERM");
	}
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	tap_ok(admit(fd, true, &info, why) == -EPERM && strstr(why, "(/dev/null)"),
	       "/dev/null: -EPERM");
	tap_ok(admit_fd(-1, true, &info, why, sizeof(why)) == -EBADF &&
	       strstr(why, "cannot identify the fd"), "a closed fd: -EBADF");
	tap_ok(admit(header_memfd(8, 1, ADMIT_DATA_SIZE_MAX - 8), true, &info, why) == 0 &&
	       info.data_size == ADMIT_DATA_SIZE_MAX,
	       "a data block of exactly the cap (%u bytes): admitted", ADMIT_DATA_SIZE_MAX);
	tap_ok(admit(header_memfd(8, 1, ADMIT_DATA_SIZE_MAX), true, &info, why) == -EFBIG &&
	       strstr(why, "data block of 262152 bytes above the collector's cap 262144"),
	       "8 bytes more: -EFBIG");
	tap_ok(admit(header_memfd(8, 1, 0xfffffff8u), true, &info, why) == -EFBIG,
	       "an offset near 4 GiB: -EFBIG, no overflow");
	tap_ok(admit(header_memfd(8, ADMIT_NUM_DESC_MAX + 1, 0), true, &info, why) == -EFBIG &&
	       strstr(why, "header.num_desc 1025 above the collector's cap 1024"),
	       "1025 descriptors: -EFBIG");
	tap_ok(admit(header_memfd(ADMIT_NAME_SIZE_MAX + 8, 1, 0), true, &info, why) == -EFBIG &&
	       strstr(why, "header.name_size 264 above the collector's cap 256"),
	       "names of 264 bytes: -EFBIG");
	fd = memfd_create("short", MFD_CLOEXEC);
	tap_ok(admit(fd, true, &info, why) == -EINVAL && strstr(why, "cannot read the header"),
	       "an empty memfd: -EINVAL (no header)");
	{
		static const struct { const char *link; int ns; } links[] = {
			{ "anon_inode:statsfd", SOURCE_NS_STATSFD },
			{ "anon_inode:kvm-vm-stats", SOURCE_NS_KVM },
			{ "anon_inode:kvm-vcpu-stats:0", SOURCE_NS_KVM },
			{ "anon_inode:kvm-vcpu-stats:4095", SOURCE_NS_KVM },
			{ "anon_inode:kvm-vcpu-stats", SOURCE_NS_KVM },
			{ "anon_inode:kvm-vcpu-stats:", -1 },
			{ "anon_inode:kvm-vcpu-stats:1x", -1 },
			{ "anon_inode:kvm-vm-stats:1", -1 },
			{ "anon_inode:statsfd-vm", -1 },
			{ "anon_inode:statsfd-vcpu:0", -1 },
			{ "anon_inode:kvm-vm", -1 },
			{ "anon_inode:[eventfd]", -1 },
			{ "/statsfd", -1 },
		};
		enum source_ns ns;
		unsigned int i;

		for (i = 0; i < sizeof(links) / sizeof(*links); i++)
			tap_ok(links[i].ns < 0 ? !stats_fd_ns(links[i].link, &ns) :
			       stats_fd_ns(links[i].link, &ns) && (int)ns == links[i].ns,
			       "%s: %s", links[i].link, links[i].ns < 0 ? "not a stats fd" :
			       source_ns_name(links[i].ns));
	}
	fd = eventfd(0, EFD_CLOEXEC);
	tap_ok(admit(fd, true, &info, why) == -EPERM && strstr(why, "(anon_inode:[eventfd])"),
	       "an eventfd, an anon inode of another name: -EPERM");
	tap_ok(!strcmp(source_ns_name(SOURCE_NS_STATSFD), "statsfd") &&
	       !strcmp(source_ns_name(SOURCE_NS_KVM), "kvm"), "namespaces statsfd and kvm");
}

static struct source *add(struct client *cl, const char *vm, int vcpu, int *ret,
			  char *why)
{
	struct statsfd_labels l = { .vcpu = vcpu };
	struct admit_info info;
	struct source *s = NULL;
	int fd = vcpu_memfd();

	snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "vcpu");
	snprintf(l.vm, sizeof(l.vm), "%s", vm);
	*ret = admit_fd(fd, true, &info, why, 256);
	if (*ret) {
		close(fd);
		return NULL;
	}
	*ret = add_source(&col, cl, fd, &info, &l, why, 256, &s);
	return s;
}

static void test_sources(void)
{
	struct source *a, *b, *c;
	size_t bytes;
	char why[256];
	int ret;

	a = add(&cl1, "web", 0, &ret, why);
	tap_ok(a && !ret && col.bytes == a->cost && cl1.bytes == a->cost,
	       "a source's cost is accounted to its client and the collector");
	add(&cl1, "web", 0, &ret, why);
	tap_ok(ret == -EEXIST && strstr(why, "already registered"), "the same labels again: -EEXIST");
	add(&cl2, "web", 1, &ret, why);
	tap_ok(ret == -EACCES && strstr(why, "vm \"web\" is registered by uid 1000 pid 10"),
	       "VM web of another uid: -EACCES");
	cl2.uid = 1000;
	add(&cl2, "web", 1, &ret, why);
	tap_ok(ret == -EACCES, "of the same uid but another pid: -EACCES");
	cl2.uid = 1001;
	b = add(&cl1, "web", 1, &ret, why);
	c = add(&cl1, "db", 0, &ret, why);
	tap_ok(b && c, "its owner adds vCPU 1 and VM db");
	add(&cl1, "db", 1, &ret, why);
	tap_ok(ret == -EDQUOT && strstr(why, "source quota (3, --client-max-sources)"),
	       "a 4th source of the client: -EDQUOT");
	bytes = col.bytes;
	col.client_max_bytes = bytes;
	add(&cl2, "other", 0, &ret, why);
	tap_ok(!ret, "another client has its own quota");
	drop_source(&col, cl2.sources);
	col.max_bytes = bytes;
	add(&cl2, "other", 0, &ret, why);
	tap_ok(ret == -ENOSPC && strstr(why, "(--max-bytes) reached"), "over --max-bytes: -ENOSPC");
	col.max_bytes = col.client_max_bytes = 1 << 20;
	col.max_sources = 3;
	add(&cl2, "other", 0, &ret, why);
	tap_ok(ret == -ENOSPC && strstr(why, "source limit (3) reached"), "over --max-sources: -ENOSPC");
	col.max_sources = 100;
	drop_source(&col, a);
	drop_source(&col, b);
	add(&cl2, "web", 0, &ret, why);
	tap_ok(!ret && col.stats.labels_refused == 2,
	       "its owner's sources gone, VM web is free for another uid");
	drop_source(&col, c);
	drop_source(&col, cl2.sources);
	reap_sources(&col);
	tap_ok(!col.nsources && !col.bytes && !cl1.bytes && !cl2.bytes, "all bytes returned");
}

static void test_rules(void)
{
	const char *bad[] = { "", "a:b", "a::c", ":b:c", "a:b:", "a:b:c:d" };
	unsigned int i, n = col.nrules;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		tap_ok(add_stat_rule(&col, bad[i], true) == -EINVAL, "rule '%s': -EINVAL", bad[i]);
	tap_ok(!add_stat_rule(&col, "io_*", false) && col.nrules == n + 1 &&
	       !strcmp(col.rules[n].provider, "*") && !strcmp(col.rules[n].target, "*") &&
	       !strcmp(col.rules[n].stat, "io_*") && !col.rules[n].include,
	       "'io_*' is *:*:io_*");
	tap_ok(!add_stat_rule(&col, "statsfd_vm:vcpu:halt_*", true) &&
	       !strcmp(col.rules[n + 1].provider, "statsfd_vm") &&
	       !strcmp(col.rules[n + 1].target, "vcpu") && col.rules[n + 1].include,
	       "'statsfd_vm:vcpu:halt_*' parsed");
}

/* After test_rules(): --include statsfd_vm:vcpu:halt_*, --exclude io_*. */
static void test_render_cache(void)
{
	const char *t1, *t2;
	struct source *a;
	size_t n1, n2;
	char why[256], *copy;
	uint64_t gen;
	int ret;

	col.no_histograms = true;
	a = add(&cl1, "web", 0, &ret, why);
	t1 = render_cached(&col, &n1);
	gen = col.render.gen;
	copy = t1 ? strndup(t1, n1) : NULL;
	t2 = render_cached(&col, &n2);
	tap_ok(t1 && t1 == t2 && n1 == n2 && col.render.gen == gen,
	       "no read tick, no change: the same text, not rendered again");
	tap_ok(copy && strstr(copy, "\nstatsfd_halt_exits_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"web\",vcpu=\"0\"} ") &&
	       !strstr(copy, "statsfd_io_") && !strstr(copy, "guest_cycles") &&
	       !strstr(copy, "_bucket{") && strstr(copy, "statsfd_collector_sources 1\n"),
	       "rules applied: halt_* of the vCPU only, no histograms");
	read_sources(&col);
	t2 = render_cached(&col, &n2);
	tap_ok(t2 && strstr(t2, "statsfd_collector_reads_total 1\n"),
	       "a read tick: rendered again");
	drop_source(&col, a);
	reap_sources(&col);
	t2 = render_cached(&col, &n2);
	tap_ok(t2 && strstr(t2, "statsfd_collector_sources 0\n") && !strstr(t2, "halt_exits"),
	       "a source dropped: rendered again");
	free(copy);
	render_free(&col);
}

/*
 * The render cache is keyed by format: an OpenMetrics scrape between two
 * read ticks neither renders the text again nor is served the text's
 * body, and each format is rendered again after a tick.
 */
static void test_render_formats(void)
{
	struct render_body *t1, *o1, *t2, *o2;
	struct source *a;
	char why[256];
	uint64_t gen;
	int ret;

	a = add(&cl1, "fmt", 0, &ret, why);
	t1 = render_body_get(&col, &expo_text);
	o1 = render_body_get(&col, &expo_openmetrics);
	gen = col.render.gen;
	t2 = render_body_get(&col, &expo_text);
	o2 = render_body_get(&col, &expo_openmetrics);
	tap_ok(t1 && o1 && t1 == t2 && o1 == o2 && t1 != o1 && col.render.gen == gen &&
	       t1->ops == &expo_text && o1->ops == &expo_openmetrics,
	       "one cached body per format, each rendered once per tick");
	tap_ok(o1 && o1->len > 6 && !strcmp(o1->text + o1->len - 6, "# EOF\n") &&
	       strstr(o1->text, "\n# TYPE statsfd_halt_exits counter\nstatsfd_halt_exits_total{") &&
	       t1 && !strstr(t1->text, "# EOF"),
	       "the OpenMetrics body ends in # EOF, its counters are named without _total; the text's is unchanged");
	render_body_put(t2);
	render_body_put(o2);
	read_sources(&col);
	t2 = render_body_get(&col, &expo_text);
	o2 = render_body_get(&col, &expo_openmetrics);
	tap_ok(t2 && o2 && t2 != t1 && o2 != o1 && col.render.gen == gen + 2,
	       "a read tick: both rendered again, the old bodies kept by their holders");
	tap_ok(t1 && o1 && !strstr(t1->text, "# EOF") && strstr(o1->text, "# EOF"),
	       "a held body is unchanged after the tick");
	render_body_put(t1);
	render_body_put(o1);
	render_body_put(t2);
	render_body_put(o2);
	drop_source(&col, a);
	reap_sources(&col);
	render_free(&col);
}

/*
 * Accept negotiation as client_golang's expfmt.Negotiate: q-values, then
 * the header's order; the delimited MetricFamily protobuf stream,
 * OpenMetrics 1.0.0 or 0.0.1; text for anything else.
 */
static void test_negotiate(void)
{
	static const struct {
		const char *accept;
		enum expo_id want;
	} cases[] = {
		{ NULL, EXPO_TEXT },
		{ "", EXPO_TEXT },
		{ "*/*", EXPO_TEXT },
		/* Prometheus 2.42's scrape header. */
		{ "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		  EXPO_OPENMETRICS },
		{ "application/openmetrics-text; version=0.0.1", EXPO_OPENMETRICS },
		{ "APPLICATION/OpenMetrics-Text; VERSION=\"1.0.0\"", EXPO_OPENMETRICS },
		{ "application/openmetrics-text;version=2.0.0", EXPO_TEXT },
		{ "application/openmetrics-text;version=1.0.0;q=0", EXPO_TEXT },
		{ "text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=0.5", EXPO_TEXT },
		{ "text/plain;q=0.2, application/openmetrics-text;q=0.8", EXPO_OPENMETRICS },
		{ "text/plain;version=0.0.4, application/openmetrics-text", EXPO_TEXT },
		{ "application/json, application/openmetrics-text;q=0.1", EXPO_OPENMETRICS },
		{ "application/openmetrics-text;q=nan, text/plain;q=0.1", EXPO_TEXT },
		{ "application/openmetrics-text;q=2, text/plain;q=0.1", EXPO_TEXT },
		{ ",,;;=,application/openmetrics-text;;q=1;", EXPO_OPENMETRICS },
		{ "text/html, image/png", EXPO_TEXT },
		/* Prometheus 2.42 with --enable-feature=native-histograms. */
		{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		  EXPO_PROTOBUF },
		{ "application/vnd.google.protobuf; proto=\"io.prometheus.client.MetricFamily\"; encoding=delimited",
		  EXPO_PROTOBUF },
		/* Not the delimited MetricFamily stream: not protobuf. */
		{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
		  EXPO_TEXT },
		{ "application/vnd.google.protobuf;proto=other.Message;encoding=delimited", EXPO_TEXT },
		{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.1,application/openmetrics-text",
		  EXPO_OPENMETRICS },
	};
	unsigned int i, bad = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct expo_ops *f = expo_negotiate(cases[i].accept);

		if (f->id != cases[i].want) {
			bad++;
			tap_diag("Accept: %s: got %s", cases[i].accept ? cases[i].accept : "(none)",
				 f->name);
		}
	}
	tap_ok(!bad, "Accept negotiation: %u of %zu cases wrong", bad,
	       sizeof(cases) / sizeof(cases[0]));
}

/* Reads failing: down (not exported), then dropped at --drop-after (2). */
static void test_failures(void)
{
	struct source *a;
	const char *t;
	char why[256];
	size_t n;
	int ret;

	a = add(&cl1, "flaky", 0, &ret, why);
	if (!tap_ok(a != NULL, "source for failing reads added"))
		return;
	if (ftruncate(statsfd_fd(a->sf), 16))
		tap_diag("ftruncate failed");
	read_sources(&col);
	t = render_cached(&col, &n);
	tap_ok(a->failures == 1 && t &&
	       strstr(t, "statsfd_collector_source_up{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"flaky\",vcpu=\"0\"} 0\n") &&
	       !strstr(t, "statsfd_halt_exits_total") && strstr(t, "statsfd_collector_sources_down 1\n"),
	       "one failed read: down, its stats not exported");
	read_sources(&col);
	reap_sources(&col);
	tap_ok(col.nsources == 0 && col.stats.sources_failed == 1,
	       "a second one (--drop-after 2): dropped");
	render_free(&col);
}

/*
 * A VM label a discovered VMM took from its command line (-name, which
 * anyone can choose) gives way to a client that registers it; the
 * reverse is refused as for any other owner.
 */
static void test_discovered_labels(void)
{
	static struct client disc = {
		.kind = EP_CLIENT, .fd = -1, .uid = 2000, .pid = 20,
		.discovered = true,
	};
	static struct client vmm = {
		.kind = EP_CLIENT, .fd = -1, .uid = 1000, .pid = 30,
	};
	struct source *d, *r, *d2;
	uint64_t did;
	char why[256];
	int ret;

	d = add(&disc, "prod", 0, &ret, why);
	tap_ok(d && !ret, "a discovered VMM's source takes vm \"prod\"");
	did = d ? d->id : 0;
	r = add(&vmm, "prod", 0, &ret, why);
	tap_ok(r && !ret && disc.nsources == 0 && vmm.nsources == 1,
	       "a registering client takes vm \"prod\" back: the discovered source (%" PRIu64 ") is dropped",
	       did);
	d2 = add(&disc, "prod", 1, &ret, why);
	tap_ok(!d2 && ret == -EACCES && strstr(why, "is registered by uid 1000 pid 30"),
	       "a discovered VMM cannot take a registered VM label: -EACCES");
	if (r)
		drop_source(&col, r);
	reap_sources(&col);
	/*
	 * The same open file under another label: the discovered source
	 * gives way to the client's too; the client's is never refused as a
	 * duplicate of a discovered one, nor the other way round.
	 */
	{
		struct statsfd_labels l = { .vcpu = 0 };
		struct admit_info info;
		struct source *s1 = NULL, *s2 = NULL;
		int fd = vcpu_memfd(), fd2 = dup(fd);

		snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
		snprintf(l.target, sizeof(l.target), "vcpu");
		snprintf(l.vm, sizeof(l.vm), "found");
		if (!admit_fd(fd, true, &info, why, sizeof(why)))
			add_source(&col, &disc, fd, &info, &l, why, sizeof(why), &s1);
		snprintf(l.vm, sizeof(l.vm), "named");
		ret = admit_fd(fd2, true, &info, why, sizeof(why));
		if (!ret)
			ret = add_source(&col, &vmm, fd2, &info, &l, why, sizeof(why), &s2);
		tap_ok(s1 && !ret && s2 && disc.nsources == 0 && vmm.nsources == 1,
		       "a client registers the file of a discovered source: the discovered one goes (%s)",
		       ret ? why : "ok");
		fd = s2 ? dup(statsfd_fd(s2->sf)) : -1;
		snprintf(l.vm, sizeof(l.vm), "again");
		ret = fd >= 0 ? admit_fd(fd, true, &info, why, sizeof(why)) : -1;
		if (!ret)
			ret = add_source(&col, &disc, fd, &info, &l, why, sizeof(why), &s1);
		tap_ok(ret == -EEXIST && strstr(why, "already a source") && vmm.nsources == 1,
		       "and a discovered one cannot take it back: -EEXIST");
		if (s2)
			drop_source(&col, s2);
		reap_sources(&col);
	}
}

static struct source *add_as(struct client *cl, const char *provider,
			     const char *target, const char *vm, int vcpu,
			     int *ret, char *why)
{
	struct statsfd_labels l = { .vcpu = vcpu };
	struct admit_info info;
	struct source *s = NULL;
	int fd = vcpu_memfd();

	snprintf(l.provider, sizeof(l.provider), "%s", provider);
	snprintf(l.target, sizeof(l.target), "%s", target);
	snprintf(l.vm, sizeof(l.vm), "%s", vm);
	*ret = admit_fd(fd, true, &info, why, 256);
	if (*ret) {
		close(fd);
		return NULL;
	}
	*ret = add_source(&col, cl, fd, &info, &l, why, 256, &s);
	return s;
}

static int render_host_calls, render_host_ret;

static int fake_render_host(struct provider *p, struct expo *x)
{
	render_host_calls++;
	expo_family(x, "node_fake", "gauge", "Fake.");
	expo_sample(x, "node_fake", NULL, "1", 0);
	return render_host_ret;
}

/*
 * --host (host.c): provider statsfd_host is the host's alone; the vm
 * label of its sources is a device's name, no VM's; its render hook adds
 * to the exposition, and its failure fails the rendering.
 */
static void test_host_labels(void)
{
	static struct client host = {
		.kind = EP_CLIENT, .fd = -1, .uid = 0, .pid = 1, .discovered = true,
	};
	struct source *h, *v, *h2;
	const char *t;
	uint64_t refused = col.stats.labels_refused;
	char why[256];
	size_t n;
	int ret;

	static const struct source_provider fake_host = {
		.name = "host", .reserved_provider = "statsfd_host",
	};
	static const struct source_provider fake_host_render = {
		.name = "host", .reserved_provider = "statsfd_host",
		.render = fake_render_host,
	};

	col.providers[0] = (struct provider){
		.ops = &fake_host, .c = &col, .state = &host, .owner = &host,
	};
	col.nproviders = 1;
	add_as(&cl1, "statsfd_host", "net", "eth0", -1, &ret, why);
	tap_ok(ret == -EACCES && strstr(why, "provider statsfd_host is reserved") &&
	       col.stats.labels_refused == refused + 1,
	       "--host: a client registering provider statsfd_host: -EACCES");
	h = add_as(&host, "statsfd_host", "net", "eth0", -1, &ret, why);
	tap_ok(h && !ret, "the host's own source of interface eth0 (vm label eth0)");
	v = add_as(&cl1, "statsfd_vm", "vm", "eth0", -1, &ret, why);
	tap_ok(v && !ret && host.nsources == 1,
	       "a VMM's VM named eth0: neither refused nor taking the host's source");
	h2 = add_as(&host, "statsfd_host", "block", "eth0", -1, &ret, why);
	tap_ok(h2 && !ret, "the host's source named like the VMM's VM: not refused either");
	add_as(&host, "statsfd_host", "net", "eth0", -1, &ret, why);
	tap_ok(ret == -EEXIST, "the same host labels twice: -EEXIST");
	col.providers[0].ops = &fake_host_render;
	render_host_ret = 0;
	t = render_cached(&col, &n);
	tap_ok(t && render_host_calls == 1 && strstr(t, "\nnode_fake 1\n# HELP statsfd_collector_build_info"),
	       "the render hook's families come before the collector's own");
	read_sources(&col);
	render_host_ret = -ENOMEM;
	t = render_cached(&col, &n);
	tap_ok(!t && render_host_calls == 2, "the hook failing fails the rendering");
	col.providers[0].ops = &fake_host;
	render_free(&col);
	col.nproviders = 0;
	add_as(&cl2, "statsfd_host", "net", "lo", -1, &ret, why);
	tap_ok(!ret, "without --host, provider statsfd_host is anybody's");
	while (host.sources)
		drop_source(&col, host.sources);
	while (cl1.sources)
		drop_source(&col, cl1.sources);
	while (cl2.sources)
		drop_source(&col, cl2.sources);
	reap_sources(&col);
}

/*
 * The file changes between admit_fd() and add_source(): its descriptor
 * then claims a 64 MiB data block (a sparse memfd, test mode).  What the
 * library parsed is held to what was admitted: refused, nothing allocated.
 */
static void test_changed_header(void)
{
	struct statsfd_header h = {
		.name_size = 8, .num_desc = 1, .id_offset = 24, .desc_offset = 32,
		.data_offset = 32 + 16 + 8,
	};
	struct statsfd_desc d = { .size = 1, .offset = 0 };
	struct statsfd_labels l = { .vcpu = 0 };
	struct admit_info info;
	struct source *s = NULL;
	char why[256] = "";
	int fd = memfd_create("changing", MFD_CLOEXEC), ret;

	snprintf(l.provider, sizeof(l.provider), "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "vcpu");
	snprintf(l.vm, sizeof(l.vm), "changing");
	if (fd < 0 || ftruncate(fd, (off_t)h.data_offset + (64 << 20) + 8) ||
	    pwrite(fd, &h, sizeof(h), 0) != sizeof(h) || pwrite(fd, "chg", 4, 24) != 4 ||
	    pwrite(fd, &d, sizeof(d), 32) != sizeof(d) || pwrite(fd, "x", 2, 48) != 2)
		tap_diag("changing memfd: %s", strerror(errno));
	tap_ok(admit_fd(fd, true, &info, why, sizeof(why)) == 0 && info.data_size == 8,
	       "a file with an 8-byte data block: admitted");
	d.offset = (64 << 20) - 16;
	if (pwrite(fd, &d, sizeof(d), 32) != sizeof(d))
		tap_diag("pwrite: %s", strerror(errno));
	ret = add_source(&col, &cl1, fd, &info, &l, why, sizeof(why), &s);
	tap_ok(ret == -EINVAL && strstr(why, "its header changed after admission") &&
	       col.stats.changed_refused == 1 && !col.nsources,
	       "then it claims 64 MiB before the library reads it: refused (%s)", why);
	if (!ret)
		drop_source(&col, s);
	reap_sources(&col);
}

/*
 * The indexes behind the label rules (sources.c): a vm label held by
 * several connections of one process, freed with its last source; a
 * discovered holder beside a client of the same process gives way to
 * another client's registration only if that one may have the label; a
 * source dropped from the middle of its client's list.
 */
static void test_index(void)
{
	static struct client p1a = { .kind = EP_CLIENT, .fd = -1, .uid = 3000, .pid = 40 };
	static struct client p1b = { .kind = EP_CLIENT, .fd = -1, .uid = 3000, .pid = 40 };
	static struct client p2 = { .kind = EP_CLIENT, .fd = -1, .uid = 3000, .pid = 41 };
	static struct client disc = {
		.kind = EP_CLIENT, .fd = -1, .uid = 3000, .pid = 40, .discovered = true,
	};
	struct source *a, *b, *c, *d, *s;
	unsigned int n = 0;
	char why[256];
	int ret;

	a = add(&p1a, "multi", 0, &ret, why);
	b = add(&p1b, "multi", 1, &ret, why);
	tap_ok(a && b && !ret,
	       "two connections of one process (same uid and pid) share vm \"multi\"");
	add(&p1b, "multi", 0, &ret, why);
	tap_ok(ret == -EEXIST, "the same labels from the other connection: -EEXIST");
	add(&p2, "multi", 2, &ret, why);
	tap_ok(ret == -EACCES && strstr(why, "is registered by uid 3000 pid 40"),
	       "another process of that uid: -EACCES");
	drop_source(&col, a);
	add(&p2, "multi", 2, &ret, why);
	tap_ok(ret == -EACCES, "still held while one of its sources lives");
	drop_source(&col, b);
	c = add(&p2, "multi", 2, &ret, why);
	tap_ok(c && !ret, "free again once they are all gone: another process takes it");
	if (c)
		drop_source(&col, c);
	reap_sources(&col);

	/* A discovered source and a client of the same process on one label. */
	d = add(&disc, "both", 0, &ret, why);
	a = add(&p1a, "both", 1, &ret, why);
	tap_ok(d && a && !ret && !disc.nsources,
	       "the process registers the label its discovered self holds: the discovered source goes");
	d = add(&disc, "both", 2, &ret, why);
	tap_ok(d && !ret, "its discovered self may add to it (same uid and pid)");
	add(&p2, "both", 3, &ret, why);
	tap_ok(ret == -EACCES && disc.nsources == 0,
	       "another process of the uid cannot take it (the rules run newest first: the discovered source gave way before the refusal)");
	add(&p1b, "both", 1, &ret, why);
	tap_ok(ret == -EEXIST, "its other connection, labels in use: -EEXIST");
	b = add(&p1b, "both", 4, &ret, why);
	tap_ok(b && !ret && p1a.nsources == 1 && p1b.nsources == 1,
	       "and a new vCPU of that VM: registered");
	if (a)
		drop_source(&col, a);
	if (b)
		drop_source(&col, b);
	reap_sources(&col);

	/* The owner's list is doubly linked: drop the middle one. */
	a = add(&p2, "list", 0, &ret, why);
	b = add(&p2, "list", 1, &ret, why);
	c = add(&p2, "list", 2, &ret, why);
	if (b)
		drop_source(&col, b);
	for (s = p2.sources; s; s = s->next_in_client)
		n++;
	tap_ok(a && c && n == 2 && p2.nsources == 2 && p2.sources == c &&
	       c->next_in_client == a && !a->next_in_client,
	       "a source dropped from the middle of its client's list: the others stay linked");
	add(&p2, "list", 1, &ret, why);
	tap_ok(!ret, "its labels are free again");
	while (p2.sources)
		drop_source(&col, p2.sources);
	reap_sources(&col);
	tap_ok(!col.nsources && !col.by_labels.n && !col.by_vm.n && !col.by_labels.b &&
	       !col.by_vm.b, "every index empty, its buckets freed, once the sources are gone");
}

int main(void)
{
	col.epfd = epoll_create1(EPOLL_CLOEXEC);
	test_admit();
	test_changed_header();
	test_sources();
	test_rules();
	test_render_cache();
	test_render_formats();
	test_negotiate();
	test_failures();
	test_discovered_labels();
	test_host_labels();
	test_index();
	while (col.nrules--) {
		free(col.rules[col.nrules].provider);
		free(col.rules[col.nrules].target);
		free(col.rules[col.nrules].stat);
	}
	free(col.rules);
	close(col.epfd);
	return tap_done();
}
