// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the Prometheus protobuf exposition (a stream of
 * length-delimited io.prometheus.client.MetricFamily messages, schema in
 * metrics.proto, encoded by protobuf-c), for scrapers that ask for it:
 * Prometheus does when its native histograms are enabled
 * (--enable-feature=native-histograms).
 *
 * The families, names, labels and values are the text format's.  A log2
 * histogram of a source becomes a native histogram of schema 0, whose
 * buckets are the kernel's:
 *
 *  - KVM's log2 bucket i >= 1 counts the integers in [2^(i-1), 2^i), in
 *    the stat's unit; schema 0's bucket k is (2^(k-1), 2^k] in the
 *    exposed (base) unit.  Bucket i is sent as bucket k = i + shift, where
 *    2^shift is the stat's scale to its base unit rounded to a power of
 *    two (0 for counts and bytes, -30 for nanoseconds: 2^-30 s is
 *    0.93 ns).  The edges differ in which end is closed: the kernel's
 *    lowest value 2^(i-1) sits on Prometheus' open lower edge, its upper
 *    edge 2^i (closed for Prometheus) holds no value of bucket i but the
 *    largest, 2^i - 1, is below it.  So with an exact power-of-two scale
 *    every sample is counted in a bucket whose range is the kernel's but
 *    for its two edge points, and a quantile lands within the kernel
 *    bucket it is in; with a decimal scale (ns, us, ms) Prometheus' edges
 *    are the kernel's times 2^shift / scale (0.93 for ns, 0.95 for us,
 *    0.98 for ms): within the bucket's resolution, a factor of 2.
 *  - Bucket 0 ([0, 1): the value 0) is the zero bucket, with client
 *    libraries' default zero threshold 2^-128.
 *  - The open last bucket [2^(n-2), inf) is sent as bucket n - 1 + shift,
 *    as if it ended at 2^(n-1): the text format's +Inf bucket says no
 *    more about its values.
 *  - _sum is the text format's estimate from bucket midpoints.
 *
 * Linear histograms stay classic: cumulative buckets with the text
 * format's upper bounds (the +Inf bucket left out: Prometheus takes it
 * from the count).  OpenMetrics' _created and units have no field in the
 * protobuf schema Prometheus 2.42 reads: not sent.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expo.h"
#include "metrics.pb-c.h"
#include "statsfd_expo.h"

/* The message types of metrics.proto, as protoc-c names them. */
#define pb_family_msg	Io__Prometheus__Client__MetricFamily
#define pb_metric_msg	Io__Prometheus__Client__Metric
#define pb_label_msg	Io__Prometheus__Client__LabelPair
#define pb_hist_msg	Io__Prometheus__Client__Histogram
#define pb_bucket_msg	Io__Prometheus__Client__Bucket
#define pb_span_msg	Io__Prometheus__Client__BucketSpan
#define pb_counter_msg	Io__Prometheus__Client__Counter
#define pb_gauge_msg	Io__Prometheus__Client__Gauge

#define ARENA_CHUNK	(64 * 1024)

/* Bump allocation for one family's messages, freed when it is sent. */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

/**
 * struct pb_state - the family being built
 * @fam: the family; @fam.metric holds @nmetric of @cap
 * @cap: room in @fam.metric
 * @type: its type as the text format names it
 * @chunks: the arena of its messages and strings
 * @pack: scratch buffer of the encoding
 * @pack_cap: its size
 * @open: a family is being built
 */
struct pb_state {
	struct pb_family_msg fam;
	size_t cap;
	const char *type;
	struct arena_chunk *chunks;
	uint8_t *pack;
	size_t pack_cap;
	bool open;
};

static void *arena_alloc(struct pb_state *p, size_t n)
{
	struct arena_chunk *c = p->chunks;
	size_t size;
	void *r;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < n) {
		size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = p->chunks;
		p->chunks = c;
	}
	r = (char *)c->data + c->used;
	c->used += n;
	memset(r, 0, n);
	return r;
}

static void arena_free(struct pb_state *p)
{
	struct arena_chunk *c, *next;

	for (c = p->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	p->chunks = NULL;
}

static char *arena_strndup(struct pb_state *p, const char *s, size_t n)
{
	char *r = arena_alloc(p, n + 1);

	if (r)
		memcpy(r, s, n);
	return r;
}

/* Encode the current family, length-delimited, onto @x->out. */
static int pb_flush(struct expo *x)
{
	struct pb_state *p = x->priv;
	uint8_t var[10];
	size_t len, n = 0, v;
	int ret = 0;

	if (!p->open)
		return 0;
	p->open = false;
	/* A family without samples is not sent, as in the text format. */
	if (!p->fam.n_metric)
		goto out;
	len = io__prometheus__client__metric_family__get_packed_size(&p->fam);
	if (len > p->pack_cap) {
		free(p->pack);
		p->pack = malloc(len);
		p->pack_cap = p->pack ? len : 0;
		if (!p->pack) {
			ret = -ENOMEM;
			goto out;
		}
	}
	io__prometheus__client__metric_family__pack(&p->fam, p->pack);
	for (v = len; v >= 0x80; v >>= 7)
		var[n++] = (uint8_t)(v | 0x80);
	var[n++] = (uint8_t)v;
	statsfd_buf_append(x->out, (const char *)var, n);
	statsfd_buf_append(x->out, (const char *)p->pack, len);
out:
	free(p->fam.metric);
	p->fam.metric = NULL;
	p->fam.n_metric = 0;
	p->cap = 0;
	arena_free(p);
	return ret;
}

static int pb_begin(struct expo *x)
{
	x->priv = calloc(1, sizeof(struct pb_state));
	return x->priv ? 0 : -ENOMEM;
}

static int pb_family_start(struct expo *x, const char *name, const char *type,
			   const char *help, const char *unit)
{
	static const struct pb_family_msg init = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
	struct pb_state *p = x->priv;
	int ret = pb_flush(x);

	if (ret)
		return ret;
	p->fam = init;
	p->type = type;
	p->fam.name = arena_strndup(p, name, strlen(name));
	p->fam.help = arena_strndup(p, help, strlen(help));
	if (!p->fam.name || !p->fam.help)
		return -ENOMEM;
	p->fam.has_type = true;
	if (!strcmp(type, "counter"))
		p->fam.type = IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER;
	else if (!strcmp(type, "histogram"))
		p->fam.type = IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM;
	else
		p->fam.type = IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE;
	p->open = true;
	return 0;
}

/*
 * The labels of the text format ('a="x",b="y\"z"', escaped) as label
 * pairs of @m.
 */
static int pb_labels(struct pb_state *p, struct pb_metric_msg *m, const char *labels)
{
	static const struct pb_label_msg init = IO__PROMETHEUS__CLIENT__LABEL_PAIR__INIT;
	const char *s = labels, *q;
	size_t n = 0, k;
	char *v;

	if (!labels || !*labels)
		return 0;
	for (q = labels; *q; q++)
		n += *q == '=';
	m->label = arena_alloc(p, n * sizeof(*m->label));
	if (!m->label)
		return -ENOMEM;
	while (*s && m->n_label < n) {
		struct pb_label_msg *l = arena_alloc(p, sizeof(*l));

		q = strchr(s, '=');
		if (!l || !q || q[1] != '"')
			return l ? -EINVAL : -ENOMEM;
		*l = init;
		l->name = arena_strndup(p, s, (size_t)(q - s));
		/* The value, unescaped: at most as long as its text. */
		v = arena_alloc(p, strlen(q));
		l->value = v;
		if (!l->name || !v)
			return -ENOMEM;
		for (s = q + 2, k = 0; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1]) {
				s++;
				v[k++] = *s == 'n' ? '\n' : *s;
			} else {
				v[k++] = *s;
			}
		}
		if (*s != '"')
			return -EINVAL;
		s++;
		if (*s == ',')
			s++;
		m->label[m->n_label++] = l;
	}
	return 0;
}

/* A new metric of the current family, with @labels. */
static struct pb_metric_msg *pb_metric_new(struct expo *x, const char *labels, int *err)
{
	static const struct pb_metric_msg init = IO__PROMETHEUS__CLIENT__METRIC__INIT;
	struct pb_state *p = x->priv;
	struct pb_metric_msg *m, **grown;

	*err = -ENOMEM;
	if (!p->open) {
		*err = -EINVAL;
		return NULL;
	}
	if (p->fam.n_metric == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		grown = realloc(p->fam.metric, p->cap * sizeof(*grown));
		if (!grown)
			return NULL;
		p->fam.metric = grown;
	}
	m = arena_alloc(p, sizeof(*m));
	if (!m)
		return NULL;
	*m = init;
	*err = pb_labels(p, m, labels);
	if (*err)
		return NULL;
	p->fam.metric[p->fam.n_metric++] = m;
	return m;
}

/* A counter's or a gauge's value. */
static int pb_value(struct expo *x, struct pb_metric_msg *m, double v)
{
	static const struct pb_counter_msg cinit =
		IO__PROMETHEUS__CLIENT__COUNTER__INIT;
	static const struct pb_gauge_msg ginit =
		IO__PROMETHEUS__CLIENT__GAUGE__INIT;
	struct pb_state *p = x->priv;

	if (p->fam.type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER) {
		m->counter = arena_alloc(p, sizeof(*m->counter));
		if (!m->counter)
			return -ENOMEM;
		*m->counter = cinit;
		m->counter->has_value = true;
		m->counter->value = v;
	} else {
		m->gauge = arena_alloc(p, sizeof(*m->gauge));
		if (!m->gauge)
			return -ENOMEM;
		*m->gauge = ginit;
		m->gauge->has_value = true;
		m->gauge->value = v;
	}
	return 0;
}

static int pb_sample(struct expo *x, const char *name, const char *labels,
		     const char *value, double created)
{
	struct pb_metric_msg *m;
	int ret;

	m = pb_metric_new(x, labels, &ret);
	return m ? pb_value(x, m, strtod(value, NULL)) : ret;
}

/*
 * The power of two nearest to the stat's scale (base^exponent): the
 * native bucket index of a kernel log2 bucket is shifted by it.
 */
static int pb_shift(const struct statsfd_stat *st)
{
	return (int)lround(log2(statsfd_to_base(st, 1)));
}

/* Counts of the log2 histogram @st as a native histogram of schema 0. */
static int pb_native(struct pb_state *p, struct pb_hist_msg *h,
		     const struct statsfd_stat *st, const uint64_t *v)
{
	static const struct pb_span_msg init = IO__PROMETHEUS__CLIENT__BUCKET_SPAN__INIT;
	int shift = pb_shift(st);
	unsigned int i, j, nspans = 0, ndeltas = 0, gap;
	int64_t prev = 0;
	int last = 0;

	h->has_schema = true;
	h->schema = 0;
	h->has_zero_threshold = true;
	h->zero_threshold = ldexp(1, -128);
	h->has_zero_count = true;
	h->zero_count = st->size ? v[0] : 0;
	/* At most one span per populated bucket, one delta per bucket. */
	h->positive_span = arena_alloc(p, (st->size + 1) * sizeof(*h->positive_span));
	h->positive_delta = arena_alloc(p, (st->size + 1) * sizeof(*h->positive_delta));
	if (!h->positive_span || !h->positive_delta)
		return -ENOMEM;
	for (i = 1; i < st->size; i++) {
		if (!v[i])
			continue;
		/*
		 * A gap of up to 2 empty buckets costs less as zero deltas
		 * than as a new span (client_golang's rule).
		 */
		gap = nspans ? (unsigned int)((int)i - last - 1) : 0;
		if (!nspans || gap > 2) {
			struct pb_span_msg *s = arena_alloc(p, sizeof(*s));

			if (!s)
				return -ENOMEM;
			*s = init;
			s->has_offset = true;
			s->has_length = true;
			s->offset = nspans ? (int32_t)gap : (int32_t)i + shift;
			h->positive_span[nspans++] = s;
		} else {
			for (j = 0; j < gap; j++) {
				h->positive_delta[ndeltas++] = -prev;
				prev = 0;
			}
			h->positive_span[nspans - 1]->length += gap;
		}
		h->positive_delta[ndeltas++] = (int64_t)v[i] - prev;
		prev = (int64_t)v[i];
		h->positive_span[nspans - 1]->length++;
		last = (int)i;
	}
	if (!nspans) {
		/* A native histogram without buckets: the no-op span says so. */
		struct pb_span_msg *s = arena_alloc(p, sizeof(*s));

		if (!s)
			return -ENOMEM;
		*s = init;
		s->has_offset = true;
		s->has_length = true;
		h->positive_span[nspans++] = s;
	}
	h->n_positive_span = nspans;
	h->n_positive_delta = ndeltas;
	return 0;
}

/* Counts of the linear histogram @st as classic cumulative buckets. */
static int pb_classic(struct pb_state *p, struct pb_hist_msg *h,
		      const struct statsfd_stat *st, const uint64_t *v)
{
	static const struct pb_bucket_msg init = IO__PROMETHEUS__CLIENT__BUCKET__INIT;
	struct statsfd_bucket bk;
	uint64_t cum = 0;
	unsigned int i;

	h->bucket = arena_alloc(p, (st->size + 1) * sizeof(*h->bucket));
	if (!h->bucket)
		return -ENOMEM;
	for (i = 0; i < st->size; i++) {
		struct pb_bucket_msg *b;

		statsfd_bucket(st, i, &bk);
		cum += v[i];
		if (bk.open)
			continue;
		b = arena_alloc(p, sizeof(*b));
		if (!b)
			return -ENOMEM;
		*b = init;
		b->has_cumulative_count = true;
		b->has_upper_bound = true;
		b->cumulative_count = cum;
		/* The text format's le: the largest integer the bucket holds. */
		b->upper_bound = st->exponent ? statsfd_to_base(st, bk.hi - 1) :
						(double)(bk.hi - 1);
		h->bucket[h->n_bucket++] = b;
	}
	return 0;
}

static int pb_stat(struct expo *x, const char *name, const char *type,
		   const struct statsfd_prom_series *s,
		   const struct statsfd_stat *st)
{
	static const struct pb_hist_msg init = IO__PROMETHEUS__CLIENT__HISTOGRAM__INIT;
	struct pb_state *p = x->priv;
	const uint64_t *v = statsfd_values(st, s->values);
	uint64_t total = 0;
	unsigned int i;
	struct pb_metric_msg *m;
	int ret;

	m = pb_metric_new(x, s->labels, &ret);
	if (!m)
		return ret;
	if (!statsfd_stat_is_hist(st))
		return pb_value(x, m, st->exponent ? statsfd_to_base(st, v[0]) :
						     (double)v[0]);
	m->histogram = arena_alloc(p, sizeof(*m->histogram));
	if (!m->histogram)
		return -ENOMEM;
	*m->histogram = init;
	for (i = 0; i < st->size; i++)
		total += v[i];
	m->histogram->has_sample_count = true;
	m->histogram->has_sample_sum = true;
	m->histogram->sample_count = total;
	m->histogram->sample_sum = statsfd_prom_hist_sum(st, v);
	if (st->type == STATSFD_TYPE_LOG_HIST)
		return pb_native(p, m->histogram, st, v);
	return pb_classic(p, m->histogram, st, v);
}

static int pb_end(struct expo *x)
{
	return pb_flush(x);
}

static void pb_destroy(struct expo *x)
{
	struct pb_state *p = x->priv;

	if (!p)
		return;
	free(p->fam.metric);
	arena_free(p);
	free(p->pack);
	free(p);
}

const struct expo_ops expo_protobuf = {
	.id = EXPO_PROTOBUF,
	.name = "protobuf",
	.content_type = "application/vnd.google.protobuf; "
			"proto=io.prometheus.client.MetricFamily; encoding=delimited",
	.begin = pb_begin,
	.family = pb_family_start,
	.sample = pb_sample,
	.stat = pb_stat,
	.end = pb_end,
	.destroy = pb_destroy,
};
