// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libstatsfd: open and read, lookup, every validation error
 * (one case each, checking the field the error names), unit scaling,
 * histogram buckets, formatting, the Prometheus writer, the collector
 * message framing, and reads through a mapping of the values (a memfd
 * playing the stats fd's mmap area, attached through the test seam of
 * statsfd_priv.h): the sequence protocol, its fallback to pread, the
 * mmap header checks, and consistent reads of several stats.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "statsfd_expo.h"
#include "statsfd_priv.h"
#include "statsfd_client.h"
#include "tap.h"

static unsigned char img[1 << 16];
static size_t img_len;

static struct statsfd *open_img(const void *buf, size_t len,
				struct statsfd_error *err)
{
	int fd = img_memfd(buf, len);

	if (fd < 0)
		return NULL;
	return statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, err);
}

static void test_open_read(int kvm_order)
{
	const char *layout = kvm_order ? "kvm" : "statsfd";
	struct statsfd_error err;
	const struct statsfd_stat *st;
	struct statsfd *sf;
	uint64_t *buf;
	int ok;

	img_len = img_build(img, sizeof(img), "vm-1-0/vcpu-3", 48,
			    img_vcpu_stats, img_vcpu_nstats, NULL, kvm_order);
	sf = open_img(img, img_len, &err);
	if (!tap_ok(sf != NULL, "%s layout: valid image opens (%s)", layout,
		    sf ? "ok" : err.msg))
		return;
	tap_ok(!strcmp(statsfd_id(sf), "vm-1-0/vcpu-3"), "%s layout: id read", layout);
	tap_ok(statsfd_num_stats(sf) == img_vcpu_nstats, "%s layout: all descriptors", layout);
	tap_ok(statsfd_data_size(sf) == (9 + 32 + 8) * 8, "%s layout: data size spans all values",
	       layout);
	buf = calloc(1, statsfd_data_size(sf));
	ok = !statsfd_read(sf, buf, &err);
	tap_ok(ok, "%s layout: one pread of the data block", layout);
	st = statsfd_find(sf, "io_exits");
	tap_ok(st && st->index == 1 && statsfd_values(st, buf)[0] == 2,
	       "%s layout: lookup by name and value", layout);
	st = statsfd_find(sf, "run_batch_hist");
	tap_ok(st && st->size == 8 && statsfd_values(st, buf)[7] == 47,
	       "%s layout: histogram values located", layout);
	st = statsfd_find(sf, "io_exits_sum");
	tap_ok(st && st->agg == STATSFD_AGG_SUM && !strcmp(statsfd_agg_name(st->agg), "sum"),
	       "%s layout: aggregation bits decoded", layout);
	tap_ok(!statsfd_find(sf, "nope") && !statsfd_find(sf, "") &&
	       !statsfd_find(sf, "io_exits_") && statsfd_find(sf, "blocking"),
	       "%s layout: lookup misses are NULL", layout);
	tap_ok(!statsfd_stat(sf, img_vcpu_nstats), "%s layout: index out of range is NULL",
	       layout);
	free(buf);
	statsfd_close(sf);
}

/* Image with one field replaced; @what names the expected error field. */
struct mutation {
	const char *what;
	size_t off;		/* byte offset in the statsfd-order image */
	int width;		/* 2 or 4 bytes */
	uint32_t value;
	const char *field;	/* expected statsfd_error.field */
	int err;
};

static void test_validation(void)
{
	const size_t ns = 48, stride = 16 + ns;
	struct statsfd_header h;
	size_t d0, d1, d7, d8;
	struct mutation m[] = {
		{ "header flags", 0, 4, 1, "header.flags", EINVAL },
		{ "name_size 0", 4, 4, 0, "header.name_size", EINVAL },
		{ "name_size huge", 4, 4, 1u << 20, "header.name_size", EINVAL },
		{ "num_desc huge", 8, 4, 1u << 30, "header.num_desc", EINVAL },
		{ "num_desc beyond the file", 8, 4, 60000, "descriptors", EIO },
		{ "descriptor block too large", 8, 4, 65536, "header.num_desc", EINVAL },
		{ "id_offset in header", 12, 4, 8, "header.id_offset", EINVAL },
		{ "id_offset past EOF", 12, 4, 0xfffffff0u, "id", EIO },
		{ "desc_offset in header", 16, 4, 4, "header.desc_offset", EINVAL },
		{ "desc_offset over id", 16, 4, 40, "header.desc_offset", EINVAL },
		{ "desc_offset past EOF", 16, 4, 0x7ffffff8u, "descriptors", EIO },
		{ "data_offset in header", 20, 4, 16, "header.data_offset", EINVAL },
		{ "data_offset unaligned", 20, 4, 76, "header.data_offset", EINVAL },
		{ "data over id", 20, 4, 24, "header.data_offset", EINVAL },
		{ "data over descriptors", 20, 4, 0, "header.data_offset", EINVAL },
		{ "data past EOF", 20, 4, 0x7ffffff8u, "data", EIO },
		{ "reserved flag bit", 0, 4, 0x10000, "desc[0].flags", EINVAL },
		{ "type 5", 0, 4, 5, "desc[0].flags", EINVAL },
		{ "unit 5", 0, 4, 0x50, "desc[0].flags", EINVAL },
		{ "base 2", 0, 4, 0x200, "desc[0].flags", EINVAL },
		{ "aggregation 6", 0, 4, 0x6000, "desc[0].flags", EINVAL },
		{ "histogram aggregated by max", 0, 4, 0x3004 | 0x20, "desc[7].flags", EINVAL },
		{ "seconds with positive exponent", 4, 2, 3, "desc[3].exponent", EINVAL },
		{ "count with negative exponent", 4, 2, (uint16_t)-1, "desc[0].exponent", EINVAL },
		{ "boolean with exponent", 4, 2, 1, "desc[2].exponent", EINVAL },
		{ "exponent out of range", 4, 2, 100, "desc[0].exponent", EINVAL },
		{ "size 0", 6, 2, 0, "desc[0].size", EINVAL },
		{ "scalar size 2", 6, 2, 2, "desc[0].size", EINVAL },
		{ "log histogram of 66 buckets", 6, 2, 66, "desc[7].size", EINVAL },
		{ "offset unaligned", 8, 4, 4, "desc[1].offset", EINVAL },
		{ "offset beyond limit", 8, 4, 0xfffffff8u, "desc[0].offset", EINVAL },
		{ "overlapping values", 8, 4, 0, "desc[1].offset", EINVAL },
		{ "linear histogram bucket_size 0", 12, 4, 0, "desc[8].bucket_size", EINVAL },
		{ "scalar with bucket_size", 12, 4, 10, "desc[0].bucket_size", EINVAL },
		{ "name not terminated", 16, 4, 0, "desc[0].name", EINVAL },
		{ "name empty", 16, 4, 0, "desc[0].name", EINVAL },
		{ "name with control char", 16, 4, 0x0a, "desc[0].name", EINVAL },
		{ "duplicate name", 16, 4, 0, "desc[1].name", EINVAL },
		{ "id not terminated", 24, 4, 0, "id", EINVAL },
		{ "id with space", 24, 4, 0x20, "id", EINVAL },
	};
	unsigned int i;

	img_len = img_build(img, sizeof(img), "vm-1-0/vcpu-3", ns,
			    img_vcpu_stats, img_vcpu_nstats, NULL, 0);
	memcpy(&h, img, sizeof(h));
	d0 = h.desc_offset;
	d1 = d0 + stride;
	d7 = d0 + 7 * stride;
	d8 = d0 + 8 * stride;
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		static unsigned char mod[sizeof(img)];
		struct statsfd_error err;
		struct statsfd *sf;
		size_t off = m[i].off;
		uint16_t v16 = (uint16_t)m[i].value;

		memcpy(mod, img, img_len);
		/* Descriptor fields are relative to the descriptor named. */
		if (!strncmp(m[i].field, "desc[", 5)) {
			unsigned int d = (unsigned int)atoi(m[i].field + 5);

			off += d0 + d * stride;
		}
		if (!strcmp(m[i].what, "desc_offset over id"))
			m[i].value = h.id_offset + 8;
		if (!strcmp(m[i].what, "data over descriptors"))
			m[i].value = (uint32_t)d1;
		if (!strcmp(m[i].what, "histogram aggregated by max"))
			off = d7;
		if (!strcmp(m[i].what, "linear histogram bucket_size 0"))
			off = d8 + 12;
		if (!strcmp(m[i].what, "overlapping values"))
			m[i].value = 0;
		if (!strcmp(m[i].what, "descriptor block too large")) {
			uint32_t big = STATSFD_LIB_NAME_SIZE_MAX;

			memcpy(mod + 4, &big, 4);
		}
		if (!strcmp(m[i].what, "name not terminated"))
			memset(mod + off, 'a', ns);
		else if (!strcmp(m[i].what, "id not terminated"))
			memset(mod + off, 'b', ns);
		else if (!strcmp(m[i].what, "duplicate name"))
			memcpy(mod + d1 + 16, mod + d0 + 16, ns);
		else if (m[i].width == 2)
			memcpy(mod + off, &v16, 2);
		else
			memcpy(mod + off, &m[i].value, 4);
		sf = open_img(mod, img_len, &err);
		tap_ok(!sf && err.err == m[i].err && !strcmp(err.field, m[i].field),
		       "rejects %s: %s", m[i].what,
		       sf ? "accepted!" : err.msg);
		statsfd_close(sf);
	}
}

static void test_bad_fds(void)
{
	struct statsfd_error err;
	struct statsfd *sf;
	int p[2], fd;

	if (pipe(p))
		return;
	sf = statsfd_open_fd(p[0], 0, &err);
	tap_ok(!sf && err.err == ESPIPE && !strcmp(err.field, "header"),
	       "pipe rejected: %s", err.msg);
	close(p[0]);
	close(p[1]);
	fd = open("/", O_RDONLY | O_DIRECTORY);
	sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
	tap_ok(!sf && err.err == EISDIR, "directory rejected: %s", err.msg);
	tap_ok(fcntl(fd, F_GETFD) < 0 && errno == EBADF,
	       "STATSFD_OPEN_CLOSE_FD closes the fd on failure too");
	fd = open("/dev/null", O_RDONLY);
	sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD, &err);
	tap_ok(!sf && err.err == EIO && strstr(err.msg, "0 of 24"),
	       "empty file rejected: %s", err.msg);
	sf = statsfd_open_path("/nonexistent/stats", &err);
	tap_ok(!sf && err.err == ENOENT, "missing path: %s", err.msg);

	/* A file that shrinks after open: the next read is a clean EIO. */
	img_len = img_build(img, sizeof(img), "x", 16, img_vcpu_stats,
			    img_vcpu_nstats, NULL, 1);
	fd = img_memfd(img, img_len);
	sf = statsfd_open_fd(fd, 0, &err);
	if (sf) {
		uint64_t *buf = calloc(1, statsfd_data_size(sf));

		tap_ok(!ftruncate(fd, (off_t)img_len - 8) &&
		       statsfd_read(sf, buf, &err) == -EIO &&
		       !strcmp(err.field, "data"),
		       "truncated after open: read fails with %s", err.msg);
		free(buf);
	}
	statsfd_close(sf);
	tap_ok(fcntl(fd, F_GETFD) >= 0, "without STATSFD_OPEN_CLOSE_FD the fd stays open");
	close(fd);
}

static void test_schema_identity(void)
{
	struct statsfd *a, *b, *c;
	struct statsfd_error err;

	img_len = img_build(img, sizeof(img), "vm-1-0/vcpu-0", 48,
			    img_vcpu_stats, img_vcpu_nstats, NULL, 0);
	a = open_img(img, img_len, &err);
	img_len = img_build(img, sizeof(img), "vm-1-0/vcpu-1", 48,
			    img_vcpu_stats, img_vcpu_nstats, NULL, 0);
	b = open_img(img, img_len, &err);
	img_len = img_build(img, sizeof(img), "vm-1-0/vcpu-1", 48,
			    img_vcpu_stats, img_vcpu_nstats - 1, NULL, 0);
	c = open_img(img, img_len, &err);
	tap_ok(a && b && c && statsfd_same_schema(a, b) &&
	       statsfd_schema_hash(a) == statsfd_schema_hash(b) &&
	       !statsfd_same_schema(a, c),
	       "schema identity: equal descriptors match, different ones do not");
	statsfd_close(a);
	statsfd_close(b);
	statsfd_close(c);
}

static const struct statsfd_stat *mk(uint32_t flags, int exp, uint32_t size,
				     uint32_t bs)
{
	static struct statsfd_stat st;

	memset(&st, 0, sizeof(st));
	st.name = "x";
	st.flags = flags;
	st.type = flags & STATSFD_TYPE_MASK;
	st.unit = flags & STATSFD_UNIT_MASK;
	st.base = flags & STATSFD_BASE_MASK;
	st.exponent = exp;
	st.size = size;
	st.bucket_size = bs;
	return &st;
}

static int streq_fmt(const struct statsfd_stat *st, uint64_t raw,
		     const char *want)
{
	char buf[64];

	statsfd_format_value(st, raw, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		tap_diag("format %" PRIu64 ": got '%s' want '%s'", raw, buf, want);
		return 0;
	}
	return 1;
}

static void test_scaling(void)
{
	const struct statsfd_stat *st;

	st = mk(STATSFD_UNIT_SECONDS, -9, 1, 0);
	tap_ok(statsfd_to_base(st, 1500000) == 1500000e-9 &&
	       !strcmp(statsfd_base_unit(st), "seconds"),
	       "ns to seconds");
	tap_ok(streq_fmt(st, 1500000, "1.5 ms") && streq_fmt(st, 2500, "2.5 us") &&
	       streq_fmt(st, 7, "7 ns") && streq_fmt(st, 3000000000ULL, "3 s") &&
	       streq_fmt(st, 0, "0 s"), "seconds formatted with ns/us/ms/s");
	st = mk(STATSFD_UNIT_SECONDS, -6, 1, 0);
	tap_ok(statsfd_to_base(st, 2) == 2e-6 && streq_fmt(st, 2, "2 us"), "us to seconds");
	st = mk(STATSFD_UNIT_BYTES | STATSFD_BASE_POW2, 10, 1, 0);
	tap_ok(statsfd_to_base(st, 3) == 3072 && streq_fmt(st, 3, "3 KiB") &&
	       streq_fmt(st, 2048, "2 MiB"), "KiB (pow2 exponent 10) to bytes");
	st = mk(STATSFD_UNIT_BYTES, 0, 1, 0);
	tap_ok(streq_fmt(st, 512, "512 B") && streq_fmt(st, 1536, "1.5 KiB"),
	       "bytes formatted with IEC prefixes");
	st = mk(STATSFD_UNIT_CYCLES, 3, 1, 0);
	tap_ok(statsfd_to_base(st, 5) == 5000 && streq_fmt(st, 5, "5 kcycles") &&
	       streq_fmt(st, 2500000, "2.5 Gcycles"), "kilocycles (pow10 exponent 3)");
	st = mk(STATSFD_UNIT_BOOLEAN, 0, 1, 0);
	tap_ok(streq_fmt(st, 0, "false") && streq_fmt(st, 1, "true"), "boolean");
	st = mk(STATSFD_UNIT_NONE, 0, 1, 0);
	tap_ok(streq_fmt(st, 18446744073709551615ULL, "18446744073709551615") &&
	       statsfd_scale(st) == 1.0, "plain counts print exactly up to U64_MAX");
	st = mk(STATSFD_UNIT_NONE, -64, 1, 0);
	tap_ok(statsfd_scale(mk(STATSFD_UNIT_NONE | STATSFD_BASE_POW2, -64, 1, 0)) ==
	       ldexp(1.0, -64) && statsfd_scale(mk(STATSFD_UNIT_NONE, 22, 1, 0)) == 1e22,
	       "scale exact for pow2 and pow10 up to 1e22");
}

static void test_buckets(void)
{
	const struct statsfd_stat *st;
	struct statsfd_bucket b;
	char buf[64];
	int ok;

	st = mk(STATSFD_TYPE_LOG_HIST, 0, 65, 0);
	ok = !statsfd_bucket(st, 0, &b) && b.lo == 0 && b.hi == 1 && !b.open;
	ok &= !statsfd_bucket(st, 1, &b) && b.lo == 1 && b.hi == 2;
	ok &= !statsfd_bucket(st, 2, &b) && b.lo == 2 && b.hi == 4;
	ok &= !statsfd_bucket(st, 10, &b) && b.lo == 512 && b.hi == 1024;
	ok &= !statsfd_bucket(st, 63, &b) && b.lo == 1ULL << 62 && b.hi == 1ULL << 63;
	ok &= !statsfd_bucket(st, 64, &b) && b.lo == 1ULL << 63 && b.open;
	tap_ok(ok, "log histogram: [0,1), [1,2), [2,4), ..., [2^63, inf)");
	st = mk(STATSFD_TYPE_LOG_HIST, 0, 4, 0);
	tap_ok(!statsfd_bucket(st, 3, &b) && b.lo == 4 && b.open &&
	       statsfd_bucket(st, 4, &b) == -EINVAL, "log histogram: last bucket open, past it EINVAL");
	st = mk(STATSFD_TYPE_LINEAR_HIST, 0, 4, 100);
	ok = !statsfd_bucket(st, 0, &b) && b.lo == 0 && b.hi == 100 && !b.open;
	ok &= !statsfd_bucket(st, 2, &b) && b.lo == 200 && b.hi == 300 && !b.open;
	ok &= !statsfd_bucket(st, 3, &b) && b.lo == 300 && b.open;
	tap_ok(ok, "linear histogram: [N*bs, (N+1)*bs), last open");
	tap_ok(statsfd_bucket(mk(STATSFD_TYPE_CUMULATIVE, 0, 1, 0), 0, &b) == -EINVAL,
	       "bucket of a scalar is EINVAL");
	st = mk(STATSFD_TYPE_LOG_HIST | STATSFD_UNIT_SECONDS, -9, 32, 0);
	statsfd_format_bucket(st, 11, buf, sizeof(buf));
	tap_ok(!strcmp(buf, "[1.024 us, 2.048 us)"), "bucket range formatted: %s", buf);
	statsfd_format_bucket(st, 31, buf, sizeof(buf));
	tap_ok(!strcmp(buf, "[1.074 s, inf)"), "open bucket formatted: %s", buf);
}

static void test_prom(void)
{
	static const struct img_stat s[] = {
		{ "exits", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
		{ "wait_ns", STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_SECONDS, -9, 1, 0 },
		{ "blocking", STATSFD_TYPE_INSTANT | STATSFD_UNIT_BOOLEAN, 0, 1, 0 },
		{ "mem", STATSFD_TYPE_PEAK | STATSFD_UNIT_BYTES | STATSFD_BASE_POW2, 10, 1, 0 },
		{ "lat_hist", STATSFD_TYPE_LOG_HIST, 0, 3, 0 },
		{ "lin_ns", STATSFD_TYPE_LINEAR_HIST | STATSFD_UNIT_SECONDS, -9, 2, 1000 },
	};
	const uint64_t v[] = { 7, 1500, 1, 4, 1, 2, 3, 5, 6 };
	const char *want =
		"# HELP vm_blocking statsfd stat blocking (instant, unit boolean)\n"
		"# TYPE vm_blocking gauge\n"
		"vm_blocking{vm=\"a\\\"b\"} 1\n"
		"# HELP vm_exits_total statsfd stat exits (cumulative, unit none)\n"
		"# TYPE vm_exits_total counter\n"
		"vm_exits_total{vm=\"a\\\"b\"} 7\n"
		"# HELP vm_lat_hist statsfd stat lat_hist (log2-histogram, unit none)\n"
		"# TYPE vm_lat_hist histogram\n"
		"vm_lat_hist_bucket{vm=\"a\\\"b\",le=\"0\"} 1\n"
		"vm_lat_hist_bucket{vm=\"a\\\"b\",le=\"1\"} 3\n"
		"vm_lat_hist_bucket{vm=\"a\\\"b\",le=\"+Inf\"} 6\n"
		"vm_lat_hist_sum{vm=\"a\\\"b\"} 8\n"
		"vm_lat_hist_count{vm=\"a\\\"b\"} 6\n"
		"# HELP vm_lin_seconds statsfd stat lin_ns (linear-histogram, unit seconds)\n"
		"# TYPE vm_lin_seconds histogram\n"
		"vm_lin_seconds_bucket{vm=\"a\\\"b\",le=\"9.99e-07\"} 5\n"
		"vm_lin_seconds_bucket{vm=\"a\\\"b\",le=\"+Inf\"} 11\n"
		"vm_lin_seconds_sum{vm=\"a\\\"b\"} 8.4975e-06\n"
		"vm_lin_seconds_count{vm=\"a\\\"b\"} 11\n"
		"# HELP vm_mem_bytes statsfd stat mem (peak, unit bytes)\n"
		"# TYPE vm_mem_bytes gauge\n"
		"vm_mem_bytes{vm=\"a\\\"b\"} 4096\n"
		"# HELP vm_wait_seconds_total statsfd stat wait_ns (cumulative, unit seconds)\n"
		"# TYPE vm_wait_seconds_total counter\n"
		"vm_wait_seconds_total{vm=\"a\\\"b\"} 1.5e-06\n";
	struct statsfd_buf out = { 0 }, lab = { 0 };
	struct statsfd_prom_series ser;
	struct statsfd_error err;
	struct statsfd *sf;
	uint64_t *buf;
	char name[128];

	img_len = img_build(img, sizeof(img), "t", 16, s, 6, v, 0);
	sf = open_img(img, img_len, &err);
	if (!tap_ok(sf != NULL, "prometheus: image opens"))
		return;
	buf = calloc(1, statsfd_data_size(sf));
	statsfd_read(sf, buf, &err);
	statsfd_buf_printf(&lab, "vm=\"");
	statsfd_prom_escape(&lab, "a\"b");
	statsfd_buf_printf(&lab, "\"");
	ser = (struct statsfd_prom_series){ sf, buf, "vm", lab.data, NULL, NULL };
	tap_ok(!statsfd_prom_write(&out, &ser, 1, NULL) && !strcmp(out.data, want),
	       "prometheus: exact exposition of every type");
	if (strcmp(out.data, want))
		tap_diag("got:\n%s", out.data);
	tap_ok(!strcmp(statsfd_prom_name("kvm_vcpu", statsfd_find(sf, "wait_ns"), name,
					 sizeof(name)), "counter") &&
	       !strcmp(name, "kvm_vcpu_wait_seconds_total"),
	       "prometheus: ns counter named *_seconds_total");
	statsfd_buf_free(&out);
	statsfd_buf_free(&lab);
	free(buf);
	statsfd_close(sf);
}

static void test_msg(void)
{
	char *big = malloc(200000), *json;
	int sv[2], fds[4], got_fds[4];
	unsigned int n = 4;
	size_t len;
	struct statsfd_msg_hdr h = { 0x12345678, 1, 0, 0, 0 };
	const char *why;
	int ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return;
	memset(big, 'x', 200000);
	big[0] = '"';
	big[199999] = '"';
	fds[0] = open("/dev/null", O_RDONLY);
	fds[1] = open("/dev/zero", O_RDONLY);
	ret = statsfd_msg_send(sv[0], "{\"a\":1}", 7, fds, 2);
	ret |= statsfd_msg_recv(sv[1], &json, &len, got_fds, &n, 1000);
	tap_ok(!ret && len == 7 && !strcmp(json, "{\"a\":1}") && n == 2 &&
	       fcntl(got_fds[0], F_GETFD) == FD_CLOEXEC,
	       "message with two fds round-trips");
	free(json);
	close(got_fds[0]);
	close(got_fds[1]);
	ret = statsfd_msg_send(sv[0], big, 200000, NULL, 0);
	n = 0;
	ret |= statsfd_msg_recv(sv[1], &json, &len, NULL, &n, 1000);
	tap_ok(!ret && len == 200000 && !memcmp(json, big, len),
	       "200 KB reply split into packets and reassembled");
	free(json);
	send(sv[0], &h, sizeof(h), 0);
	n = 0;
	ret = statsfd_msg_recv(sv[1], &json, &len, NULL, &n, 1000);
	tap_ok(ret == -EPROTO && !json, "bad magic rejected");
	n = 4;
	ret = statsfd_msg_send(sv[0], "{}", 2, fds, 2);
	n = 1;
	ret = statsfd_msg_recv(sv[1], &json, &len, got_fds, &n, 1000);
	tap_ok(ret == -EMSGSIZE && n == 0, "more fds than room: closed, EMSGSIZE");
	ret = statsfd_msg_recv(sv[1], &json, &len, NULL, &n, 50);
	tap_ok(ret == -ETIMEDOUT, "receive times out");
	close(sv[0]);
	ret = statsfd_msg_recv(sv[1], &json, &len, NULL, &n, 1000);
	tap_ok(ret == -ECONNRESET, "EOF reported as ECONNRESET");
	h.magic = STATSFD_MSG_MAGIC;
	h.length = 5;
	/* Its own statement: an argument list has no order of evaluation. */
	ret = statsfd_msg_check(&h, sizeof(h), 0, &why);
	tap_ok(ret == -EPROTO, "length not matching packet rejected (%s)",
	       ret ? why : "accepted");
	h.length = 0;
	h.flags = STATSFD_MSG_F_MORE;
	tap_ok(statsfd_msg_check(&h, sizeof(h), 0, &why) == -EPROTO &&
	       !statsfd_msg_check(&h, sizeof(h), 1, &why),
	       "MORE flag only accepted where allowed");
	h.flags = 0;
	h.version = 2;
	tap_ok(statsfd_msg_check(&h, sizeof(h), 0, &why) == -EPROTO, "version 2 rejected");
	h.version = 1;
	h.reserved = 1;
	tap_ok(statsfd_msg_check(&h, sizeof(h), 0, &why) == -EPROTO, "reserved field rejected");
	h.reserved = 0;
	tap_ok(statsfd_msg_check(&h, 10, 0, &why) == -EPROTO, "short packet rejected");
	close(sv[1]);
	close(fds[0]);
	close(fds[1]);
	free(big);
}


/* ---- reads through a mapping of the values --------------------------- */

#define S_SAMPLE	(STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS)

/* A vCPU-like source with update windows: plain stats, then the two. */
static const struct img_stat snap_stats[] = {
	{ "a", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },		/* offset 0 */
	{ "b", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },		/* 8 */
	{ "wait_ns", STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_SECONDS, -9, 1, 0 },
	{ "hist", STATSFD_TYPE_LOG_HIST, 0, 4, 0 },		/* 24..56 */
	{ "sample_ns", S_SAMPLE, -9, 1, 0 },			/* 56 */
	{ "generation", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },	/* 64 */
};
#define SNAP_N		6
#define SNAP_SPAN	56u

/* A VM-like one: an aggregate after the plain stats. */
static const struct img_stat agg_stats[] = {
	{ "x", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "y", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	{ "x_sum", STATSFD_TYPE_CUMULATIVE | STATSFD_AGG_SUM, 0, 1, 0 },
	{ "sample_ns", S_SAMPLE, -9, 1, 0 },
	{ "generation", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
};

/*
 * The fake values area: a memfd, and our writable view of it, laid out as
 * the kernel lays out version 2 (src/core/snapshot.c): the header, copy 0
 * at data_offset, copy 1 copy_stride bytes after it.  @live plays the
 * writer's private live values, which only fake_publish() makes visible.
 */
struct fake_map {
	int fd;
	size_t len;
	struct statsfd_mmap_header *h;
	uint64_t *live;
	uint32_t n;
};

#define FAKE_STRIDE(size)	(((size) + 63u) / 64u * 64u)
/* What the copy no window published holds: a reader must never see it. */
#define FAKE_UNPUBLISHED	0xbad0000000000000ULL

/* Copy @seq & 1 of @m: the current one for @seq == h->seq. */
static uint64_t *fake_copy(struct fake_map *m, uint64_t seq)
{
	return (uint64_t *)((char *)m->h + m->h->data_offset +
			    (seq & 1) * m->h->copy_stride);
}

/* Set seq: its copy holds the live values, the other one garbage. */
static void fake_set_seq(struct fake_map *m, uint64_t seq)
{
	uint64_t *cur = fake_copy(m, seq), *other = fake_copy(m, seq + 1);
	uint32_t i;

	for (i = 0; i < m->n; i++) {
		cur[i] = m->live[i];
		other[i] = FAKE_UNPUBLISHED + i;
	}
	m->h->seq = seq;
}

/*
 * statsfd_update_end(), as the kernel does it: the live values into the
 * copy readers are not using, then seq + 1 selects it.  The fences are
 * the kernel's two smp_wmb(): the first orders the previous window's
 * count before this copy's stores (a reader still on this copy sees the
 * count move), the second this copy before the count.
 */
static void fake_publish(struct fake_map *m)
{
	uint64_t seq = m->h->seq, *next = fake_copy(m, seq + 1);
	uint32_t i;

	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (i = 0; i < m->n; i++)
		__atomic_store_n(&next[i], m->live[i], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&m->h->seq, seq + 1, __ATOMIC_RELAXED);
}

/*
 * A writer that opened a window and stopped inside it (preempted, or its
 * task stopped): its live values changed, and part of the next copy is
 * written, but seq never moves.
 */
static void fake_stall(struct fake_map *m, uint64_t v)
{
	uint64_t *next = fake_copy(m, m->h->seq + 1);

	m->live[0] = v;
	m->live[1] = v + 1;
	next[0] = v;
}

static int fake_map_make(struct fake_map *m, size_t len, uint32_t data_offset,
			 uint32_t data_size)
{
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->fd = memfd_create("statsfd-test-map", MFD_CLOEXEC);
	if (m->fd < 0 || ftruncate(m->fd, (off_t)len))
		return -1;
	m->h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (m->h == MAP_FAILED)
		return -1;
	m->len = len;
	m->h->version = STATSFD_MMAP_VERSION;
	m->h->header_size = sizeof(*m->h);
	m->h->data_offset = data_offset;
	m->h->data_size = data_size;
	m->h->flags = STATSFD_MMAP_LATCH;
	m->h->copy_stride = FAKE_STRIDE(data_size);
	/* The values of both copies that fit in @len (all, if it is valid). */
	m->n = data_size / 8;
	while (m->n && data_offset + (size_t)m->h->copy_stride + 8 * m->n > len)
		m->n--;
	m->live = calloc(data_size / 8 + 1, 8);
	if (!m->live)
		return -1;
	for (i = 0; i < m->n; i++)
		m->live[i] = 1001 + i;
	fake_set_seq(m, 100);
	return 0;
}

static void fake_map_free(struct fake_map *m)
{
	if (m->h && m->h != MAP_FAILED)
		munmap(m->h, m->len);
	if (m->fd >= 0)
		close(m->fd);
	free(m->live);
	m->live = NULL;
}

/* Mappings of the fake area in this process (ours included). */
static int count_fake_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "statsfd-test-map") != NULL;
	fclose(f);
	return n;
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct statsfd *open_snap(const struct img_stat *st, unsigned int n,
				 const uint64_t *values)
{
	struct statsfd_error err;
	struct statsfd *sf;

	img_len = img_build(img, sizeof(img), "vm-1-0/vcpu-0", 16, st, n,
			    values, 0);
	sf = open_img(img, img_len, &err);
	if (!sf)
		tap_diag("image does not open: %s", err.msg);
	return sf;
}

static uint64_t val(const struct statsfd *sf, const uint64_t *buf,
		    const char *name)
{
	return statsfd_values(statsfd_find(sf, name), buf)[0];
}

static void test_map_files_not_mapped(void)
{
	struct statsfd_error err;
	struct statsfd *sf;
	int fd;

	img_len = img_build(img, sizeof(img), "x", 16, snap_stats, SNAP_N,
			    NULL, 0);
	sf = open_img(img, img_len, &err);
	tap_ok(sf && !statsfd_is_mapped(sf),
	       "mmap: an image in a memfd is not mapped (only anon-inode fds are)");
	statsfd_close(sf);
	fd = img_memfd(img, img_len);
	sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD | STATSFD_OPEN_NO_MMAP, &err);
	tap_ok(sf && !statsfd_is_mapped(sf), "mmap: STATSFD_OPEN_NO_MMAP accepted");
	statsfd_close(sf);
	fd = img_memfd(img, img_len);
	sf = statsfd_open_fd(fd, STATSFD_OPEN_CLOSE_FD | (1u << 2), &err);
	tap_ok(!sf && err.err == EINVAL && !strcmp(err.field, "flags") &&
	       fcntl(fd, F_GETFD) < 0,
	       "open: unknown flag rejected, fd closed: %s", err.msg);
}

static void test_map_recognizes_meta(void)
{
	static const struct img_stat odd[] = {
		{ "a", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
		{ "sample_ns", S_SAMPLE, -6, 1, 0 },	/* microseconds */
		{ "generation", STATSFD_TYPE_PEAK, 0, 1, 0 },
	};
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	struct fake_map m = { .fd = -1 };
	struct statsfd_error err;

	tap_ok(sf && statsfd_sample_stat(sf) == statsfd_find(sf, "sample_ns") &&
	       statsfd_generation_stat(sf) == statsfd_find(sf, "generation"),
	       "sample_ns and generation recognized");
	statsfd_close(sf);
	sf = open_snap(odd, 3, NULL);
	tap_ok(sf && !statsfd_sample_stat(sf) && !statsfd_generation_stat(sf),
	       "sample_ns/generation of another shape are ordinary stats");
	/* ... so a mapping of "a" alone does not cover the plain stats. */
	if (sf && !fake_map_make(&m, 4096, 64, 8)) {
		tap_ok(statsfd__attach_map(sf, m.fd, &err) == -EINVAL &&
		       !strcmp(err.field, "mmap.data_size"),
		       "mmap: a look-alike sample_ns counts as a plain stat: %s",
		       err.msg);
	}
	fake_map_free(&m);
	statsfd_close(sf);
}

static void test_map_read(void)
{
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	uint64_t *buf = calloc(1, 80), t0, t1, r, f;
	struct fake_map m = { .fd = -1 };
	struct statsfd_error err;
	int maps0, ok, i, stale = 0;

	if (!sf || fake_map_make(&m, 4096, 64, SNAP_SPAN)) {
		tap_ok(0, "mmap: setup");
		goto out;
	}
	maps0 = count_fake_maps();
	ok = !statsfd__attach_map(sf, m.fd, &err);
	tap_ok(ok && statsfd_is_mapped(sf) && count_fake_maps() == maps0 + 1,
	       "mmap: a valid area is attached (%s)", ok ? "one more mapping" : err.msg);
	if (!ok)
		goto out_map;
	memset(buf, 0xaa, 80);
	t0 = boottime_ns();
	ok = !statsfd_read(sf, buf, &err);
	t1 = boottime_ns();
	tap_ok(ok && val(sf, buf, "a") == 1001 && val(sf, buf, "b") == 1002 &&
	       val(sf, buf, "wait_ns") == 1003 &&
	       statsfd_values(statsfd_find(sf, "hist"), buf)[3] == 1007,
	       "mmap: statsfd_read() copies the current copy's values, not the file's nor the other copy's");
	tap_ok(val(sf, buf, "generation") == 100,
	       "mmap: generation is seq (%" PRIu64 ")", val(sf, buf, "generation"));
	tap_ok(val(sf, buf, "sample_ns") >= t0 && val(sf, buf, "sample_ns") <= t1,
	       "mmap: sample_ns is CLOCK_BOOTTIME during the read");
	statsfd__map_counters(sf, &r, &f);
	tap_ok(r == 0 && f == 0, "mmap: no retry, no fallback on a quiet area");

	/* The writer publishes a window: copy 1 and an odd count. */
	m.live[0] = 2001;
	fake_publish(&m);
	tap_ok(!statsfd_read(sf, buf, &err) && val(sf, buf, "a") == 2001 &&
	       val(sf, buf, "b") == 1002 && val(sf, buf, "generation") == 101,
	       "mmap: a published window is seen by the next read, from copy 1 (an odd seq is no open window)");

	/*
	 * The writer stops inside its next window: live values changed, the
	 * other copy half written, seq still.  Version 1 readers spun, then
	 * fell back to pread; now every read gets the last published values
	 * at once.
	 */
	fake_stall(&m, 3001);
	for (i = 0; i < 1000; i++) {
		memset(buf, 0, 80);
		stale += statsfd_read(sf, buf, &err) || val(sf, buf, "a") != 2001 ||
			 val(sf, buf, "b") != 1002 ||
			 val(sf, buf, "generation") != 101;
	}
	statsfd__map_counters(sf, &r, &f);
	tap_ok(!stale && r == 0 && f == 0,
	       "mmap: a writer stopped inside a window -> 1000 reads get the last published values at once, no retry, no pread (%d wrong, retries %" PRIu64
	       ", fallbacks %" PRIu64 ")", stale, r, f);
	fake_publish(&m);
	tap_ok(!statsfd_read(sf, buf, &err) && val(sf, buf, "a") == 3001 &&
	       val(sf, buf, "b") == 3002 && val(sf, buf, "generation") == 102,
	       "mmap: the stopped writer resumes and publishes: the next read sees its window whole");

	statsfd_close(sf);
	sf = NULL;
	tap_ok(count_fake_maps() == maps0, "mmap: statsfd_close() unmaps");
out_map:
	fake_map_free(&m);
out:
	statsfd_close(sf);
	free(buf);
}

/* The hook plays a writer active while a copy is made. */
struct hook_ctx {
	struct fake_map *m;
	unsigned int windows;	/* how many attempts see a new window */
	unsigned int calls;
	bool fill_only;		/* write the other copy, publish nothing */
};

static void writer_hook(void *arg, unsigned int attempt)
{
	struct hook_ctx *c = arg;

	c->calls++;
	if (attempt >= c->windows)
		return;
	if (c->fill_only) {
		fake_stall(c->m, 5000 + attempt);
		return;
	}
	c->m->live[0] = c->m->live[1] = 3000 + attempt;
	fake_publish(c->m);
}

static void test_map_seq_changes(void)
{
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	const struct statsfd_stat *ab[3];
	uint64_t *buf = calloc(1, 80), r, f;
	struct fake_map m = { .fd = -1 };
	struct statsfd_error err;
	struct hook_ctx c;
	int ok;

	if (!sf || fake_map_make(&m, 4096, 64, SNAP_SPAN) ||
	    statsfd__attach_map(sf, m.fd, &err)) {
		tap_ok(0, "mmap seq: setup");
		goto out;
	}
	c = (struct hook_ctx){ .m = &m, .windows = 3 };
	statsfd__set_map_hook(sf, writer_hook, &c);
	ok = !statsfd_read(sf, buf, &err);
	statsfd__map_counters(sf, &r, &f);
	tap_ok(ok && c.calls == 4 && r == 3 && f == 0 && val(sf, buf, "a") == 3002 &&
	       val(sf, buf, "b") == 3002 && val(sf, buf, "generation") == 103,
	       "mmap seq: a window published during the copy -> the copy is retried (3 times, then kept: the last window, generation 103)");

	/* Written into the other copy during the copy, not published: kept. */
	fake_set_seq(&m, 200);
	c = (struct hook_ctx){ .m = &m, .windows = 1, .fill_only = true };
	ok = !statsfd_read(sf, buf, &err);
	statsfd__map_counters(sf, &r, &f);
	tap_ok(ok && f == 0 && r == 3 && c.calls == 1 &&
	       val(sf, buf, "a") == 3002 && val(sf, buf, "generation") == 200,
	       "mmap seq: a window opened and filled during the copy but not published -> the copy is kept, no retry");

	/* A writer that never lets a copy through: bounded, then pread. */
	fake_set_seq(&m, 300);
	c = (struct hook_ctx){ .m = &m, .windows = 1000 };
	ab[0] = statsfd_find(sf, "a");
	ab[1] = statsfd_find(sf, "b");
	ab[2] = statsfd_find(sf, "generation");
	memset(buf, 0, 80);
	ok = !statsfd_read_stats(sf, ab, 3, buf, &err);
	statsfd__map_counters(sf, &r, &f);
	tap_ok(ok && c.calls == STATSFD_MAP_TRIES && f == 1 &&
	       r == 3 + STATSFD_MAP_TRIES &&
	       val(sf, buf, "a") == 1 && val(sf, buf, "b") == 2 &&
	       val(sf, buf, "generation") == 9,
	       "mmap seq: windows published back to back -> %u copies, then one pread (calls %u)",
	       STATSFD_MAP_TRIES, c.calls);
	statsfd__set_map_hook(sf, NULL, NULL);
	tap_ok(!statsfd_read_stats(sf, ab, 3, buf, &err) &&
	       val(sf, buf, "a") == 3000 + STATSFD_MAP_TRIES - 1 &&
	       val(sf, buf, "generation") == 300 + STATSFD_MAP_TRIES,
	       "mmap seq: read_stats through the mapping once the writer pauses");
	fake_map_free(&m);
out:
	statsfd_close(sf);
	free(buf);
}

/* Every mmap header check, one field each; a refused area is not used. */
static void test_map_header_checks(void)
{
	const uint32_t L = STATSFD_MMAP_LATCH, S = FAKE_STRIDE(SNAP_SPAN);
	struct {
		const char *what;
		uint32_t version, header_size, data_offset, data_size, flags;
		uint32_t stride;
		size_t file;
		const char *field;
	} t[] = {
		{ "version 0", 0, 64, 64, SNAP_SPAN, L, S, 4096, "mmap.version" },
		{ "version 1 (one copy, odd/even count, no flag)", 1, 64, 64, SNAP_SPAN, 0, 0, 4096, "mmap.version" },
		{ "version 1 even with the latch flag", 1, 64, 64, SNAP_SPAN, L, S, 4096, "mmap.version" },
		{ "version 2 without STATSFD_MMAP_LATCH", 2, 64, 64, SNAP_SPAN, 0, S, 4096, "mmap.flags" },
		{ "an unknown flag beside the latch", 2, 64, 64, SNAP_SPAN, L | 2, S, 4096, "mmap.flags" },
		{ "an unknown flag alone", 2, 64, 64, SNAP_SPAN, 1u << 31, S, 4096, "mmap.flags" },
		{ "header_size below 64", 2, 32, 64, SNAP_SPAN, L, S, 4096, "mmap.header_size" },
		{ "header_size above data_offset", 2, 72, 64, SNAP_SPAN, L, S, 4096, "mmap.data_offset" },
		{ "data_offset unaligned", 2, 64, 68, SNAP_SPAN, L, S, 4096, "mmap.data_offset" },
		{ "data_offset absurd", 2, 64, 0x7ffffff8u, SNAP_SPAN, L, S, 4096, "mmap.data_offset" },
		{ "data_size short of the plain stats", 2, 64, 64, SNAP_SPAN - 8, L, S, 4096, "mmap.data_size" },
		{ "data_size over sample_ns", 2, 64, 64, SNAP_SPAN + 8, L, S, 4096, "mmap.data_size" },
		{ "data_size unaligned", 2, 64, 64, SNAP_SPAN - 4, L, S, 4096, "mmap.data_size" },
		{ "copy_stride 0 (the copies overlap)", 2, 64, 64, SNAP_SPAN, L, 0, 4096, "mmap.copy_stride" },
		{ "copy_stride smaller than data_size", 2, 64, 64, SNAP_SPAN, L, SNAP_SPAN - 8, 4096, "mmap.copy_stride" },
		{ "copy_stride not a multiple of 8", 2, 64, 64, SNAP_SPAN, L, SNAP_SPAN + 4, 4096, "mmap.copy_stride" },
		{ "copy_stride absurd", 2, 64, 64, SNAP_SPAN, L, 0xfffffff8u, 4096, "mmap.copy_stride" },
		{ "the second copy past the area", 2, 64, 64, SNAP_SPAN, L, 4000, 4096, "mmap.copy_stride" },
		{ "values past the area", 2, 64, 4096, SNAP_SPAN, L, S, 4096, "mmap.data_size" },
		{ "area shorter than a page", 2, 64, 64, SNAP_SPAN, L, S, 2048, "mmap" },
	};
	uint64_t *buf = calloc(1, 80);
	struct statsfd_error err;
	struct fake_map m;
	unsigned int i;
	int maps0 = count_fake_maps();

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
		int ret;

		if (!sf || fake_map_make(&m, t[i].file, 64, SNAP_SPAN)) {
			tap_ok(0, "mmap header: setup");
			statsfd_close(sf);
			continue;
		}
		m.h->version = t[i].version;
		m.h->header_size = t[i].header_size;
		m.h->data_offset = t[i].data_offset;
		m.h->data_size = t[i].data_size;
		m.h->flags = t[i].flags;
		m.h->copy_stride = t[i].stride;
		ret = statsfd__attach_map(sf, m.fd, &err);
		tap_ok(ret == -EINVAL && err.err == EINVAL &&
		       !strcmp(err.field, t[i].field) && !statsfd_is_mapped(sf) &&
		       !statsfd_read(sf, buf, &err) && val(sf, buf, "a") == 1 &&
		       count_fake_maps() == maps0 + 1,
		       "mmap header: refuses %s, nothing left mapped, pread serves: %s",
		       t[i].what, ret ? err.msg : "accepted!");
		statsfd_close(sf);
		fake_map_free(&m);
	}
	free(buf);
}

/* The hook of test_map_header_changes(): one header field changes. */
struct change_ctx {
	struct fake_map *m;
	int field;
	unsigned int calls;
};

static void change_hook(void *arg, unsigned int attempt)
{
	struct change_ctx *c = arg;
	struct statsfd_mmap_header *h = c->m->h;

	if (attempt != STATSFD_MAP_HOOK_ATTACH)
		return;
	c->calls++;
	switch (c->field) {
	case 0: h->version++; break;
	case 1: h->header_size += 8; break;
	case 2: h->data_offset += 8; break;
	case 3: h->data_size -= 8; break;
	case 4: h->flags |= 2; break;
	case 5: h->copy_stride += 8; break;
	default: fake_publish(c->m); break;	/* seq may move */
	}
}

/*
 * A header that changes between the one-page mapping and the whole one
 * (each validated field in turn) is refused; one whose count moved is not.
 */
static void test_map_header_changes(void)
{
	static const struct img_stat big[] = {
		{ "runs", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
		{ "lin", STATSFD_TYPE_LINEAR_HIST, 0, 1000, 10 },
		{ "last", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
		{ "sample_ns", S_SAMPLE, -9, 1, 0 },
		{ "generation", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	};
	static const char *const what[] = { "version", "header_size",
		"data_offset", "data_size", "flags", "copy_stride", "seq" };
	uint64_t *buf = calloc(1, 8040);
	struct statsfd_error err;
	int field;

	for (field = 0; field < 7; field++) {
		struct statsfd *sf = open_snap(big, 5, NULL);
		struct fake_map m = { .fd = -1 };
		struct change_ctx c = { .m = &m, .field = field };
		int ret;

		if (!sf || !buf || fake_map_make(&m, 4 * 4096, 64, 8016)) {
			tap_ok(0, "mmap header change: setup");
			fake_map_free(&m);
			statsfd_close(sf);
			continue;
		}
		statsfd__set_map_hook(sf, change_hook, &c);
		ret = statsfd__attach_map(sf, m.fd, &err);
		statsfd__set_map_hook(sf, NULL, NULL);
		if (field < 6)
			tap_ok(c.calls == 1 && ret == -EINVAL && !strcmp(err.field, "mmap") &&
			       strstr(err.msg, "changed") && !statsfd_is_mapped(sf) &&
			       !statsfd_read(sf, buf, &err) && buf[0] == 1,
			       "mmap header: %s changed between the two mappings -> refused, pread serves: %s",
			       what[field], ret ? err.msg : "accepted!");
		else
			tap_ok(c.calls == 1 && !ret && statsfd_is_mapped(sf) &&
			       !statsfd_read(sf, buf, &err) && buf[0] == 1001 &&
			       val(sf, buf, "generation") == 101,
			       "mmap header: only seq moved between the two mappings -> accepted (%s)",
			       ret ? err.msg : "ok");
		fake_map_free(&m);
		statsfd_close(sf);
	}
	free(buf);
}

/*
 * copy_stride is the header's, not the kernel's choice (ALIGN(data_size,
 * 64)) built in: copy 1 is read where the header puts it, here past the
 * first page.
 */
static void test_map_stride(void)
{
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	uint64_t buf[9], *c1;
	struct fake_map m = { .fd = -1 };
	struct statsfd_error err;
	int ok;

	if (!sf || fake_map_make(&m, 2 * 4096, 64, SNAP_SPAN)) {
		tap_ok(0, "mmap stride: setup");
		goto out;
	}
	m.h->copy_stride = 4096 + 8;
	m.live[0] = 7001;
	fake_publish(&m);
	c1 = (uint64_t *)((char *)m.h + 64 + 4096 + 8);
	ok = !statsfd__attach_map(sf, m.fd, &err) && !statsfd_read(sf, buf, &err);
	tap_ok(ok && c1[0] == 7001 && buf[0] == 7001 && buf[1] == 1002 &&
	       buf[6] == 1007 && buf[8] == 101,
	       "mmap: copy 1 is read at data_offset + copy_stride (%s)",
	       ok ? "a stride of 4104" : err.msg);
out:
	fake_map_free(&m);
	statsfd_close(sf);
}

/*
 * The reader helper of the uapi header, statsfd_mmap_copy(), on the same
 * fake area: the selected copy, generation == seq, a stalled writer
 * ignored, and the areas and ranges it must refuse.
 */
static void test_uapi_mmap_copy(void)
{
	struct fake_map m = { .fd = -1 };
	uint64_t v[7];
	__u64 gen = 0;	/* the uapi type: uint64_t is unsigned long here */
	int ret;

	if (fake_map_make(&m, 4096, 64, SNAP_SPAN)) {
		tap_ok(0, "statsfd_mmap_copy: setup");
		goto out;
	}
	m.live[1] = 2002;
	fake_publish(&m);
	ret = statsfd_mmap_copy(m.h, v, 0, SNAP_SPAN, &gen);
	tap_ok(!ret && v[0] == 1001 && v[1] == 2002 && v[6] == 1007 && gen == 101,
	       "statsfd_mmap_copy: copy 1 after a window, generation == seq");
	fake_stall(&m, 3001);
	ret = statsfd_mmap_copy(m.h, v, 8, 16, NULL);
	tap_ok(!ret && v[0] == 2002 && v[1] == 1003,
	       "statsfd_mmap_copy: a writer stopped inside a window -> the last published values, at once");
	m.h->version = 1;
	tap_ok(statsfd_mmap_copy(m.h, v, 0, 8, NULL) == -1,
	       "statsfd_mmap_copy: refuses version 1");
	m.h->version = 2;
	m.h->flags = 0;
	tap_ok(statsfd_mmap_copy(m.h, v, 0, 8, NULL) == -1,
	       "statsfd_mmap_copy: refuses an area without STATSFD_MMAP_LATCH");
	m.h->flags = STATSFD_MMAP_LATCH | 4;
	tap_ok(statsfd_mmap_copy(m.h, v, 0, 8, NULL) == -1,
	       "statsfd_mmap_copy: refuses an unknown flag");
	m.h->flags = STATSFD_MMAP_LATCH;
	tap_ok(statsfd_mmap_copy(m.h, v, 4, 8, NULL) == -1 &&
	       statsfd_mmap_copy(m.h, v, 0, 12, NULL) == -1 &&
	       statsfd_mmap_copy(m.h, v, 48, 16, NULL) == -1 &&
	       statsfd_mmap_copy(m.h, v, SNAP_SPAN + 8, 0, NULL) == -1 &&
	       !statsfd_mmap_copy(m.h, v, SNAP_SPAN, 0, NULL),
	       "statsfd_mmap_copy: refuses unaligned or out-of-range offsets and lengths");
out:
	fake_map_free(&m);
}

static void test_map_not_mappable(void)
{
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	struct statsfd_error err;
	uint64_t buf[10];
	int p[2];

	if (!sf || pipe(p)) {
		tap_ok(0, "mmap ENODEV: setup");
		statsfd_close(sf);
		return;
	}
	tap_ok(statsfd__attach_map(sf, p[0], &err) == -ENODEV &&
	       !strcmp(err.field, "mmap") && !statsfd_is_mapped(sf) &&
	       !statsfd_read(sf, buf, &err) && buf[0] == 1,
	       "mmap: an fd without mmap (ENODEV, as KVM's) leaves pread: %s", err.msg);
	close(p[0]);
	close(p[1]);
	statsfd_close(sf);
}

/* Values past the first page: the area is mapped again, whole. */
static void test_map_large(void)
{
	static const struct img_stat big[] = {
		{ "runs", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
		{ "lin", STATSFD_TYPE_LINEAR_HIST, 0, 1000, 10 },	/* 8..8008 */
		{ "last", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },		/* 8008 */
		{ "sample_ns", S_SAMPLE, -9, 1, 0 },
		{ "generation", STATSFD_TYPE_CUMULATIVE, 0, 1, 0 },
	};
	struct statsfd *sf = open_snap(big, 5, NULL);
	uint64_t *buf = calloc(1, 8040);
	struct fake_map m = { .fd = -1 };
	struct statsfd_error err;
	int maps0 = count_fake_maps(), ok;

	/* Two copies of 8016 B, 8064 apart: 16144 bytes, 4 pages. */
	if (!sf || fake_map_make(&m, 4 * 4096, 64, 8016)) {
		tap_ok(0, "mmap large: setup");
		goto out;
	}
	ok = !statsfd__attach_map(sf, m.fd, &err);
	tap_ok(ok && count_fake_maps() == maps0 + 2,
	       "mmap: an area of 4 pages (two copies) is mapped whole, the first page unmapped (%s)",
	       ok ? "ok" : err.msg);
	ok = ok && !statsfd_read(sf, buf, &err);
	tap_ok(ok && val(sf, buf, "runs") == 1001 && val(sf, buf, "last") == 1001 + 1001 &&
	       statsfd_values(statsfd_find(sf, "lin"), buf)[999] == 1001 + 1000 &&
	       val(sf, buf, "generation") == 100,
	       "mmap: copy 0's values on the second and third pages read through the mapping");
	m.live[1001] = 42;
	fake_publish(&m);
	ok = ok && !statsfd_read(sf, buf, &err);
	tap_ok(ok && val(sf, buf, "runs") == 1001 && val(sf, buf, "last") == 42 &&
	       statsfd_values(statsfd_find(sf, "lin"), buf)[999] == 1001 + 1000 &&
	       val(sf, buf, "generation") == 101,
	       "mmap: copy 1's values, on the fourth page, read through the mapping");
	fake_map_free(&m);
	/* The same values at data_offset 4096 of a 2-page area. */
	if (!fake_map_make(&m, 2 * 4096, 4096, SNAP_SPAN)) {
		statsfd_close(sf);
		sf = open_snap(snap_stats, SNAP_N, NULL);
		ok = sf && !statsfd__attach_map(sf, m.fd, &err) &&
		     !statsfd_read(sf, buf, &err);
		tap_ok(ok && val(sf, buf, "a") == 1001 && val(sf, buf, "hist") == 1004,
		       "mmap: data_offset is honoured (values on the second page)");
	}
	fake_map_free(&m);
out:
	statsfd_close(sf);
	free(buf);
}

static void test_map_aggregates(void)
{
	struct statsfd *sf = open_snap(agg_stats, 5, NULL);
	const struct statsfd_stat *q[3];
	uint64_t buf[5], r, f;
	struct statsfd_error err;
	struct fake_map m = { .fd = -1 };
	int ok;

	if (!sf || fake_map_make(&m, 4096, 64, 16) ||
	    statsfd__attach_map(sf, m.fd, &err)) {
		tap_ok(0, "mmap aggregates: setup (%s)", err.msg);
		goto out;
	}
	tap_ok(statsfd_is_mapped(sf), "mmap: a VM-like source with aggregates is mapped");
	ok = !statsfd_read(sf, buf, &err);
	statsfd__map_counters(sf, &r, &f);
	tap_ok(ok && buf[0] == 1 && buf[1] == 2 && buf[2] == 3 && buf[4] == 5 &&
	       r == 0 && f == 0,
	       "mmap: statsfd_read() of a source with aggregates is one pread (whole block, one snapshot)");
	q[0] = statsfd_find(sf, "x");
	q[1] = statsfd_find(sf, "y");
	q[2] = statsfd_find(sf, "generation");
	memset(buf, 0, sizeof(buf));
	ok = !statsfd_read_stats(sf, q, 3, buf, &err);
	tap_ok(ok && buf[0] == 1001 && buf[1] == 1002 && buf[4] == 100 && buf[2] == 0 &&
	       buf[3] == 0,
	       "mmap: read_stats of mapped stats and generation uses the mapping, fills only them");
	q[1] = statsfd_find(sf, "x_sum");
	ok = !statsfd_read_stats(sf, q, 2, buf, &err);
	tap_ok(ok && buf[0] == 1 && buf[2] == 3,
	       "mmap: read_stats including an aggregate is one pread");
	fake_map_free(&m);
out:
	statsfd_close(sf);
}

static void test_read_stats_pread(void)
{
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	struct statsfd *other = open_snap(snap_stats, SNAP_N, NULL);
	const struct statsfd_stat *q[3];
	struct statsfd_error err;
	uint64_t buf[9];
	int ok;

	if (!sf || !other) {
		tap_ok(0, "read_stats: setup");
		goto out;
	}
	q[0] = statsfd_find(sf, "generation");
	q[1] = statsfd_find(sf, "b");
	q[2] = statsfd_find(sf, "wait_ns");
	memset(buf, 0xaa, sizeof(buf));
	ok = !statsfd_read_stats(sf, q, 3, buf, &err);
	tap_ok(ok && buf[1] == 2 && buf[2] == 3 && buf[8] == 9 &&
	       buf[0] == 0xaaaaaaaaaaaaaaaaULL,
	       "read_stats: values of the stats asked for, nothing below the lowest");
	tap_ok(!statsfd_read_stats(sf, q, 0, buf, &err),
	       "read_stats: zero stats is a no-op");
	q[1] = statsfd_find(other, "b");
	tap_ok(statsfd_read_stats(sf, q, 2, buf, &err) == -EINVAL &&
	       !strcmp(err.field, "stats[1]"),
	       "read_stats: a descriptor of another handle: %s", err.msg);
	q[1] = NULL;
	tap_ok(statsfd_read_stats(sf, q, 2, buf, &err) == -EINVAL,
	       "read_stats: a NULL descriptor is EINVAL");
	/* The span is one pread: cut the file inside it, and it is short. */
	q[0] = statsfd_find(sf, "b");
	q[1] = statsfd_find(sf, "hist");
	tap_ok(!ftruncate(statsfd_fd(sf), (off_t)(statsfd_header(sf)->data_offset + 40)) &&
	       statsfd_read_stats(sf, q, 2, buf, &err) == -EIO &&
	       strstr(err.msg, "32 of 48 bytes at offset"),
	       "read_stats: one pread spanning b..hist (%s)", err.msg);
out:
	statsfd_close(sf);
	statsfd_close(other);
}

static void test_sample_interval(void)
{
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, NULL);
	struct statsfd *plain = open_snap(agg_stats, 2, NULL);
	uint64_t a[9] = { 0 }, b[9] = { 0 };

	if (!sf || !plain) {
		tap_ok(0, "sample interval: setup");
		goto out;
	}
	a[7] = 5000000000ULL;
	b[7] = 7500000000ULL;
	tap_ok(statsfd_sample_interval(sf, a, b, 9.0) == 2.5,
	       "sample interval: the difference of sample_ns, in seconds");
	tap_ok(statsfd_sample_interval(sf, b, a, 9.0) == 9.0 &&
	       statsfd_sample_interval(sf, b, b, 9.0) == 9.0,
	       "sample interval: fallback when sample_ns did not advance");
	a[7] = 0;
	tap_ok(statsfd_sample_interval(sf, a, b, 9.0) == 9.0,
	       "sample interval: fallback from a zero sample");
	tap_ok(statsfd_sample_interval(plain, a, b, 0.25) == 0.25,
	       "sample interval: fallback without sample_ns");
out:
	statsfd_close(sf);
	statsfd_close(plain);
}

/*
 * A real writer thread, as the kernel's: each window sets a == b ==
 * the window's number in the live values, then publishes them into the
 * copy readers are not using, with a pause between the two stores, and
 * advances seq.  A copy that ignored seq would see a and b differ;
 * readers through the mapping and their pread fallback (the image holds
 * zeros) must never, and must always find generation == a.
 */
struct writer {
	struct fake_map *m;
	volatile int stop;
	uint64_t windows;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	struct fake_map *m = w->m;
	uint64_t seq = m->h->seq, *next, i;

	while (!w->stop) {
		m->live[0] = m->live[1] = seq + 1;
		/* fake_publish(), with a pause inside the copy. */
		next = fake_copy(m, seq + 1);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&next[0], m->live[0], __ATOMIC_RELAXED);
		for (i = 0; i < 300; i++)
			__asm__ __volatile__("" ::: "memory");
		__atomic_store_n(&next[1], m->live[1], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&m->h->seq, ++seq, __ATOMIC_RELAXED);
		w->windows++;
		for (i = 0; i < 100; i++)
			__asm__ __volatile__("" ::: "memory");
	}
	return NULL;
}

/*
 * Inside every 8th copy, between the copy and the second load of seq, a
 * pause of a few microseconds: the writer publishes during those copies
 * whenever both threads run, so the protocol's retry is exercised even
 * when the writer rarely lands inside a plain copy of seven values.
 */
static void spin_hook(void *arg, unsigned int attempt)
{
	unsigned int *calls = arg, i;

	if (++*calls % 8)
		return;
	for (i = 0; i < 2000; i++)
		__asm__ __volatile__("" ::: "memory");
}

static void test_map_concurrent(void)
{
	unsigned int hook_calls = 0;
	static const uint64_t zeros[9];
	struct statsfd *sf = open_snap(snap_stats, SNAP_N, zeros);
	const struct statsfd_stat *q[3];
	uint64_t buf[9], bad = 0, moved = 0, reads = 0, mixes = 0, r, f, t0;
	struct fake_map m = { .fd = -1 };
	struct statsfd_error err;
	struct writer w;
	pthread_t th;
	int i, errs = 0;

	if (!sf || fake_map_make(&m, 4096, 64, SNAP_SPAN) ||
	    statsfd__attach_map(sf, m.fd, &err)) {
		tap_ok(0, "mmap concurrent: setup");
		goto out;
	}
	m.live[0] = m.live[1] = 100;
	fake_set_seq(&m, 100);
	w = (struct writer){ .m = &m };
	if (pthread_create(&th, NULL, writer_thread, &w)) {
		tap_ok(0, "mmap concurrent: pthread_create");
		fake_map_free(&m);
		goto out;
	}
	q[0] = statsfd_find(sf, "a");
	q[1] = statsfd_find(sf, "generation");
	q[2] = statsfd_find(sf, "b");
	statsfd__set_map_hook(sf, spin_hook, &hook_calls);
	t0 = boottime_ns();
	/*
	 * At least 200000 reads; longer (up to 10 s) until the control has
	 * seen a mixed raw copy.  Retries are counted but not required: they
	 * need the two threads on two CPUs at once, which a loaded machine
	 * may never give them (test_map_seq_changes() forces them instead),
	 * while a writer descheduled in the middle of a copy leaves it mixed
	 * for as long as it waits.
	 */
	for (i = 0; i < 200000 || (!mixes && boottime_ns() - t0 < 10000000000ULL); i++) {
		const uint64_t *raw = fake_copy(&m, (uint64_t)i);
		uint64_t x, y;

		if (i & 1)
			errs += !!statsfd_read_stats(sf, q, 3, buf, &err);
		else
			errs += !!statsfd_read(sf, buf, &err);
		reads++;
		if (buf[0] != buf[1] || buf[8] != buf[0])
			bad++;
		moved += buf[0] != 0;
		/* Control: a copy of either copy, ignoring seq. */
		x = __atomic_load_n(&raw[0], __ATOMIC_RELAXED);
		y = __atomic_load_n(&raw[1], __ATOMIC_RELAXED);
		mixes += x != y;
	}
	w.stop = 1;
	pthread_join(th, NULL);
	statsfd__map_counters(sf, &r, &f);
	tap_diag("%" PRIu64 " reads, %" PRIu64 " windows, %" PRIu64 " retries, %" PRIu64
		 " pread fallbacks; control: %" PRIu64 " mixed raw copies", reads,
		 w.windows, r, f, mixes);
	tap_ok(!errs && !bad && w.windows > 0 && moved > 0,
	       "mmap concurrent: a == b == generation in every read while a writer publishes (%" PRIu64
	       " inconsistent)", bad);
	if (!mixes)
		tap_skip("mmap concurrent: control",
			 "the writer never ran during a copy in 10 s (one CPU free?)");
	else
		tap_ok(mixes > 0,
		       "mmap concurrent: control: the same writer leaves copies mixed for a raw copy that ignores seq (%" PRIu64
		       " times), never for the protocol (retries: %" PRIu64 ")", mixes, r);
	fake_map_free(&m);
out:
	statsfd_close(sf);
}

int main(void)
{
	test_open_read(0);
	test_open_read(1);
	test_validation();
	test_bad_fds();
	test_schema_identity();
	test_scaling();
	test_buckets();
	test_prom();
	test_msg();
	test_map_files_not_mapped();
	test_map_recognizes_meta();
	test_map_read();
	test_map_seq_changes();
	test_map_header_checks();
	test_map_header_changes();
	test_map_stride();
	test_uapi_mmap_copy();
	test_map_not_mappable();
	test_map_large();
	test_map_aggregates();
	test_read_stats_pread();
	test_sample_interval();
	test_map_concurrent();
	return tap_done();
}
