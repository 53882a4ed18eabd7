// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the Prometheus exposition.  Sources' stats under the
 * namespace of their fd type (statsfd_* or kvm_*, the labels provider,
 * target, vm and vcpu), then per-source health, the daemon's own
 * statsfd_collector_* metrics and the usual process_* metrics.  Rendered
 * from the values of the last read tick and cached until the next tick or
 * change of sources, so scrapes cost a copy.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "expo.h"

#ifndef STATSFD_VERSION
#define STATSFD_VERSION		"0.1"
#endif

/* One sample's value as the text format writes it. */
#define VALUE_LEN	48

/* The time the collector's own counters started from 0, see below. */
static double process_start(void);

static void self_metric(struct expo *x, const char *name, const char *type,
			const char *help, uint64_t v)
{
	char full[128], val[VALUE_LEN];

	snprintf(full, sizeof(full), "statsfd_collector_%s", name);
	snprintf(val, sizeof(val), "%" PRIu64, v);
	expo_family(x, full, type, help);
	expo_sample(x, full, NULL, val,
		    strcmp(type, "counter") ? 0 : process_start());
}

static void process_metric(struct expo *x, const char *name, const char *type,
			   const char *help, double v)
{
	char full[128], val[VALUE_LEN];

	snprintf(full, sizeof(full), "process_%s", name);
	snprintf(val, sizeof(val), "%.17g", v);
	expo_family(x, full, type, help);
	expo_sample(x, full, NULL, val,
		    strcmp(type, "counter") ? 0 : process_start());
}

/* One family of per-source health series, over the sources of @c. */
static void health_family(struct expo *x, struct collector *c,
			  const char *name, const char *type, const char *help,
			  int which)
{
	char full[128], val[VALUE_LEN];
	struct source *s;

	snprintf(full, sizeof(full), "statsfd_collector_source_%s", name);
	expo_family(x, full, type, help);
	for (s = c->sources; s; s = s->next) {
		if (which == 0)
			snprintf(val, sizeof(val), "%d", !s->failures);
		else if (which == 1)
			snprintf(val, sizeof(val), "%" PRIu64, s->read_errors);
		else
			snprintf(val, sizeof(val), "%" PRIu64 ".%03u", s->last_read / 1000,
				 (unsigned int)(s->last_read % 1000));
		/*
		 * No _created for read_errors_total: the collector does not
		 * keep when it registered the source.
		 */
		expo_sample(x, full, s->prom_labels, val, 0);
	}
}

static long clock_ticks(void)
{
	long t = sysconf(_SC_CLK_TCK);

	return t > 0 ? t : 100;
}

/* Boot time in seconds since the epoch ("btime" of /proc/stat), once. */
/*
 * When the machine booted, in seconds since the epoch: the real-time clock
 * minus the time since boot, so no /proc/stat is needed (the unit's
 * ProcSubset=pid hides it).  Computed once: process start times are
 * relative to it.
 */
static double boot_time(void)
{
	static double btime = -1;
	struct timespec rt, bt;

	if (btime >= 0)
		return btime;
	btime = 0;
	if (clock_gettime(CLOCK_REALTIME, &rt) ||
	    clock_gettime(CLOCK_BOOTTIME, &bt))
		return btime;
	btime = (double)(rt.tv_sec - bt.tv_sec) +
		(double)(rt.tv_nsec - bt.tv_nsec) / 1e9;
	return btime;
}

static unsigned int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	unsigned int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	/* Not the directory's own fd. */
	return n ? n - 1 : 0;
}

/* The process_* metrics of the Prometheus client libraries. */
/*
 * The fields of /proc/self/stat the process_* metrics use; false when it
 * cannot be read.
 */
static bool self_stat(unsigned long long *utime, unsigned long long *stime,
		      unsigned long long *start, unsigned long long *vsize,
		      long long *rss)
{
	char buf[1024], *p;
	size_t n = 0;
	FILE *f;

	f = fopen("/proc/self/stat", "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	/* Fields after the command name, which may hold anything: ")" last. */
	p = strrchr(buf, ')');
	return p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
			   "%*d %*d %*d %*d %*d %*d %llu %llu %lld",
			   utime, stime, start, vsize, rss) == 5;
}

/*
 * When the process started, in seconds since the epoch, once: the
 * collector's own counters (statsfd_collector_*_total, process_cpu_*)
 * start from 0 then, so it is their OpenMetrics _created.  0 when
 * /proc/self/stat cannot be read: no _created then.
 */
static double process_start(void)
{
	static double started = -1;
	unsigned long long utime, stime, start, vsize;
	long long rss;

	if (started >= 0)
		return started;
	started = 0;
	if (self_stat(&utime, &stime, &start, &vsize, &rss))
		started = boot_time() + (double)start / (double)clock_ticks();
	return started;
}

/* The process_* metrics of the Prometheus client libraries. */
static void process_metrics(struct expo *x)
{
	unsigned long long utime, stime, start, vsize;
	long long rss;
	struct rlimit rl;

	if (!self_stat(&utime, &stime, &start, &vsize, &rss))
		return;
	process_metric(x, "cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.",
		       (double)(utime + stime) / (double)clock_ticks());
	process_metric(x, "resident_memory_bytes", "gauge",
		       "Resident memory size in bytes.",
		       (double)rss * (double)sysconf(_SC_PAGESIZE));
	process_metric(x, "virtual_memory_bytes", "gauge",
		       "Virtual memory size in bytes.", (double)vsize);
	process_metric(x, "start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.",
		       boot_time() + (double)start / (double)clock_ticks());
	process_metric(x, "open_fds", "gauge", "Number of open file descriptors.",
		       open_fds());
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		process_metric(x, "max_fds", "gauge",
			       "Maximum number of open file descriptors.",
			       (double)rl.rlim_cur);
}

/**
 * struct self_metric - one of the collector's own statsfd_collector_*
 *	families: a counter when its name ends in _total, else a gauge
 * @name: without the statsfd_collector_ prefix
 * @help: its HELP
 * @off: offset of its counter in struct collector (a uint64_t of
 *	collector.stats), or with @extra, its EXTRA_* index
 * @extra: a value collector_metrics() gathers (a gauge)
 */
struct self_metric {
	const char *name;
	const char *help;
	size_t off;
	bool extra;
};

/* The gauges, gathered while rendering. */
enum {
	EXTRA_SOURCES, EXTRA_DOWN, EXTRA_MAPPED, EXTRA_BYTES, EXTRA_CLIENTS,
	EXTRA_EXPO, EXTRA_REPLY, EXTRA_POLLED, EXTRA_CONFLICTS, EXTRA_N,
};

#define SELF_STAT(f)	.off = offsetof(struct collector, stats.f)
#define SELF_EXTRA(i)	.off = (i), .extra = true

static const struct self_metric self_counts[] = {
	{ "sources",
	  "Stats fds currently registered.",
	  SELF_EXTRA(EXTRA_SOURCES) },
	{ "sources_down",
	  "Sources whose last read failed (their stats are not exported).",
	  SELF_EXTRA(EXTRA_DOWN) },
	{ "sources_mapped",
	  "Stats fds whose values are read through a mapping.",
	  SELF_EXTRA(EXTRA_MAPPED) },
	{ "source_bytes",
	  "Bytes held for the sources, against --max-bytes.",
	  SELF_EXTRA(EXTRA_BYTES) },
	{ "clients",
	  "Connected clients on the unix socket.",
	  SELF_EXTRA(EXTRA_CLIENTS) },
	{ "reads_total",
	  "Successful reads of a data block.",
	  SELF_STAT(reads) },
	{ "read_errors_total",
	  "Failed reads of a data block.",
	  SELF_STAT(read_errors) },
	{ "sources_failed_total",
	  "Sources dropped after --drop-after failed reads in a row.",
	  SELF_STAT(sources_failed) },
	{ "scrapes_total",
	  "Metrics requests served.",
	  SELF_STAT(scrapes) },
	{ "requests_total",
	  "Messages received on the unix socket.",
	  SELF_STAT(requests) },
	{ "bad_requests_total",
	  "Malformed messages received.",
	  SELF_STAT(bad_requests) },
	{ "fds_rejected_total",
	  "Fds refused because they are not stats fds of statsfd or KVM, or not valid.",
	  SELF_STAT(fds_rejected) },
	{ "quota_refusals_total",
	  "Fds refused by a limit: sources or bytes per client, or the collector's.",
	  SELF_STAT(quota_refusals) },
	{ "labels_refused_total",
	  "Registrations refused because their vm label belongs to another client.",
	  SELF_STAT(labels_refused) },
	{ "replies_too_large_total",
	  "Replies replaced by an error because they exceeded the per-client cap.",
	  SELF_STAT(replies_too_large) },
	{ "clients_refused_total",
	  "Connections refused (not allowed, or too many).",
	  SELF_STAT(clients_refused) },
	{ "clients_dropped_total",
	  "Clients dropped for idling or not reading their replies.",
	  SELF_STAT(clients_dropped) },
	{ "exposition_estimate_bytes",
	  "Estimated exposition bytes of the sources, against --max-exposition.",
	  SELF_EXTRA(EXTRA_EXPO) },
	{ "reply_bytes",
	  "Bytes of replies queued on the unix socket, against --max-reply-bytes.",
	  SELF_EXTRA(EXTRA_REPLY) },
	{ "duplicates_refused_total",
	  "Fds refused because their open file is already a source.",
	  SELF_STAT(duplicates_refused) },
	{ "fd_table_full_total",
	  "Times the fd table was full: a connection or the fds of a message refused.",
	  SELF_STAT(fd_table_full) },
	{ "changed_refused_total",
	  "Fds refused because their header changed between admission and parsing.",
	  SELF_STAT(changed_refused) },
	{ "filters_refused_total",
	  "Queries refused for a filter array longer than 1024 entries.",
	  SELF_STAT(filters_refused) },
};

static const struct self_metric self_http[] = {
	{ "http_refused_total",
	  "HTTP connections refused: no general slot and no reserved one for them.",
	  SELF_STAT(http_refused) },
	{ "http_evicted_total",
	  "HTTP connections cut because a newcomer took their reserved slot before they authenticated.",
	  SELF_STAT(http_evicted) },
	{ "http_deadlines_total",
	  "HTTP connections cut at --http-header-timeout or --http-send-timeout.",
	  SELF_STAT(http_deadlines) },
	{ "http_busy_total",
	  "Scrapes answered 503: responses still being sent held --http-max-held-bytes.",
	  SELF_STAT(http_busy) },
	{ "http_auth_busy_total",
	  "Requests answered 429: their address or every address spent its bcrypt budget.",
	  SELF_STAT(http_auth_busy) },
};

static const struct self_metric self_events[] = {
	{ "sources_polled",
	  "Stats fds waited on for their events (hangup, change of children).",
	  SELF_EXTRA(EXTRA_POLLED) },
	{ "sources_hung_up_total",
	  "Sources dropped because their owner hung them up (EPOLLHUP: the VM is gone).",
	  SELF_STAT(sources_hung_up) },
	{ "children_changes_total",
	  "Changes of a source's children reported (EPOLLPRI: a vCPU added to a VM).",
	  SELF_STAT(children_changes) },
	{ "family_conflicts",
	  "Stats skipped in the last rendering: same metric name, different type or same schema.",
	  SELF_EXTRA(EXTRA_CONFLICTS) },
};

static void self_metrics(struct expo *x, const struct collector *c,
			 const struct self_metric *m, size_t n,
			 const uint64_t *extra)
{
	const char *p = (const char *)c;
	size_t i, len;

	for (i = 0; i < n; i++) {
		uint64_t v;

		if (m[i].extra)
			v = extra[m[i].off];
		else
			memcpy(&v, p + m[i].off, sizeof(v));
		len = strlen(m[i].name);
		self_metric(x, m[i].name,
			    len > 6 && !strcmp(m[i].name + len - 6, "_total") ?
			    "counter" : "gauge", m[i].help, v);
	}
}

static void collector_metrics(struct expo *x, struct collector *c,
			      unsigned long conflicts)
{
	uint64_t extra[EXTRA_N] = {
		[EXTRA_SOURCES] = c->nsources, [EXTRA_MAPPED] = c->nmapped,
		[EXTRA_BYTES] = c->bytes, [EXTRA_CLIENTS] = c->nclients,
		[EXTRA_EXPO] = c->expo, [EXTRA_REPLY] = c->out_bytes,
		[EXTRA_POLLED] = c->npolled, [EXTRA_CONFLICTS] = conflicts,
	};
	char val[VALUE_LEN];
	struct source *s;

	for (s = c->sources; s; s = s->next)
		extra[EXTRA_DOWN] += !!s->failures;
	expo_family(x, "statsfd_collector_build_info", "gauge",
		    "The collector's version.");
	expo_sample(x, "statsfd_collector_build_info",
		    "version=\"" STATSFD_VERSION "\"", "1", 0);
	self_metrics(x, c, self_counts, ARRAY_SIZE(self_counts), extra);
	expo_family(x, "statsfd_collector_request_max_seconds", "gauge",
		    "The longest a request on the unix socket held the loop.");
	snprintf(val, sizeof(val), "%" PRIu64 ".%06u", c->request_max_us / 1000000,
		 (unsigned int)(c->request_max_us % 1000000));
	expo_sample(x, "statsfd_collector_request_max_seconds", NULL, val, 0);
	self_metrics(x, c, self_http, ARRAY_SIZE(self_http), extra);
	expo_family(x, "statsfd_collector_http_auth_cpu_seconds_total", "counter",
		    "CPU time spent checking passwords with bcrypt.");
	snprintf(val, sizeof(val), "%" PRIu64 ".%03u", c->stats.http_auth_cpu_ms / 1000,
		 (unsigned int)(c->stats.http_auth_cpu_ms % 1000));
	expo_sample(x, "statsfd_collector_http_auth_cpu_seconds_total", NULL, val,
		    process_start());
	self_metrics(x, c, self_events, ARRAY_SIZE(self_events), extra);
	if (!c->nsources)
		return;
	health_family(x, c, "up", "gauge",
		      "1 when the last read of the source succeeded, else 0.", 0);
	health_family(x, c, "read_errors_total", "counter",
		      "Failed reads of the source.", 1);
	health_family(x, c, "last_read_timestamp_seconds", "gauge",
		      "Time of the last successful read of the source, since the epoch.", 2);
}

/* The whole exposition in @x's format; Return: 0, or a negative errno. */
static int render_expo(struct collector *c, struct expo *x)
{
	struct statsfd_prom_series *ser;
	uint64_t *ranks;
	unsigned long conflicts = 0;
	struct source *s;
	size_t n = 0;
	unsigned int i;
	int ret;

	ser = calloc(c->nsources + 1, sizeof(*ser));
	ranks = calloc(c->nsources + 1, sizeof(*ranks));
	if (!ser || !ranks) {
		free(ser);
		free(ranks);
		return -ENOMEM;
	}
	for (s = c->sources; s; s = s->next) {
		if (s->failures)
			continue;
		ser[n++] = (struct statsfd_prom_series){
			.sf = s->sf, .values = s->values,
			.prefix = source_ns_name(s->schema->ns),
			.labels = s->prom_labels, .key = s->schema,
			.skip = s->schema->skip,
		};
		/* Schemas are numbered as they register: the earlier wins. */
		ranks[n - 1] = s->schema->id;
	}
	ret = expo_stats(x, ser, ranks, n, &conflicts);
	free(ser);
	free(ranks);
	/* The providers' own families (--host: node_exporter's names). */
	for (i = 0; !ret && i < c->nproviders; i++) {
		struct provider *p = &c->providers[i];

		if (p->state && p->ops->render)
			ret = p->ops->render(p, x);
	}
	if (ret)
		return ret;
	collector_metrics(x, c, conflicts);
	process_metrics(x);
	return expo_end(x);
}

/**
 * render_format() - the whole exposition, from the values of the last read
 * @c: collector
 * @ops: the format
 * @len: set to its length
 *
 * Sources that are down (last read failed) export no stats, only their
 * health series.
 *
 * Return: the body (malloc()ed, the caller frees it), or NULL.
 */
char *render_format(struct collector *c, const struct expo_ops *ops,
		    size_t *len)
{
	struct statsfd_buf b = { 0 };
	struct expo x;
	int ret;

	ret = expo_begin(&x, ops, &b);
	if (!ret)
		ret = render_expo(c, &x);
	expo_destroy(&x);
	if (ret) {
		statsfd_buf_free(&b);
		return NULL;
	}
	/* An empty body is still a body. */
	if (!b.data)
		statsfd_buf_append(&b, "", 0);
	if (b.oom) {
		statsfd_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return b.data;
}

/**
 * render_metrics() - the text exposition, from the values of the last read
 * @c: collector
 * @len: set to its length
 *
 * Return: the text (malloc()ed, the caller frees it), or NULL.
 */
char *render_metrics(struct collector *c, size_t *len)
{
	return render_format(c, &expo_text, len);
}

/**
 * render_body_put() - drop a reference to a rendering
 * @b: the body, or NULL; freed with its last reference
 */
void render_body_put(struct render_body *b)
{
	if (!b || --b->refs)
		return;
	free(b->text);
	free(b->gz);
	free(b);
}

/* The current rendering in @ops's format, made again when stale. */
static struct render_body *render_current(struct collector *c,
					  const struct expo_ops *ops)
{
	struct render_cache *rc = &c->render.cache[ops->id];
	struct render_body *b;

	if (rc->body && rc->data_gen == c->data_gen)
		return rc->body;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->text = render_format(c, ops, &b->len);
	if (!b->text) {
		free(b);
		return NULL;
	}
	b->refs = 1;
	b->ops = ops;
	b->gen = ++c->render.gen;
	render_body_put(rc->body);
	rc->body = b;
	rc->data_gen = c->data_gen;
	return b;
}

/**
 * render_cached() - the text exposition, rendered at most once per read tick
 * @c: collector
 * @len: set to its length
 *
 * Rendered again only when a read tick or a source added or dropped
 * changed c->data_gen since the last rendering; otherwise the same text
 * (its statsfd_collector_* and process_* values are those of that time).
 * Each new rendering, of any format, bumps c->render.gen.  Scrapes are
 * counted by the HTTP handler, once per request, not here.
 *
 * Return: the text, owned by @c and valid until the next call or
 * render_free(); NULL when out of memory.
 */
const char *render_cached(struct collector *c, size_t *len)
{
	struct render_body *b = render_current(c, &expo_text);

	if (!b)
		return NULL;
	*len = b->len;
	return b->text;
}

/**
 * render_body_get() - a reference to the current rendering in a format
 * @c: collector
 * @ops: the format (expo_negotiate())
 *
 * As render_cached(), but the body stays valid, unchanged, until
 * render_body_put(): one body per format and render tick is shared by
 * every response being sent from it.
 *
 * Return: the body, or NULL when out of memory.
 */
struct render_body *render_body_get(struct collector *c,
				    const struct expo_ops *ops)
{
	struct render_body *b = render_current(c, ops);

	if (b)
		b->refs++;
	return b;
}

/**
 * render_free() - release the cached expositions
 * @c: collector
 *
 * Responses still holding a reference keep their body until they end.
 */
void render_free(struct collector *c)
{
	unsigned int i;

	for (i = 0; i < EXPO_NFORMATS; i++) {
		render_body_put(c->render.cache[i].body);
		c->render.cache[i].body = NULL;
	}
}
