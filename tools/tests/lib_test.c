// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libstatsfd: open and read, lookup, every validation error
 * (one case each, checking the field the error names), unit scaling,
 * histogram buckets, formatting, the Prometheus writer and the collector
 * message framing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "image.h"
#include "statsfd.h"
#include "statsfd_msg.h"
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
	ser = (struct statsfd_prom_series){ sf, buf, "vm", lab.data, NULL };
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
	tap_ok(statsfd_msg_check(&h, sizeof(h), 0, &why) == -EPROTO,
	       "length not matching packet rejected (%s)", why);
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
	return tap_done();
}
