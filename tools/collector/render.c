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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

#ifndef STATSFD_VERSION
#define STATSFD_VERSION		"0.1"
#endif

static void self_metric(struct statsfd_buf *b, const char *name,
			const char *type, const char *help, uint64_t v)
{
	statsfd_buf_printf(b, "# HELP statsfd_collector_%s %s\n", name, help);
	statsfd_buf_printf(b, "# TYPE statsfd_collector_%s %s\n", name, type);
	statsfd_buf_printf(b, "statsfd_collector_%s %" PRIu64 "\n", name, v);
}

static void process_metric(struct statsfd_buf *b, const char *name,
			   const char *type, const char *help, double v)
{
	statsfd_buf_printf(b, "# HELP process_%s %s\n", name, help);
	statsfd_buf_printf(b, "# TYPE process_%s %s\n", name, type);
	statsfd_buf_printf(b, "process_%s %.17g\n", name, v);
}

/* One family of per-source health series, over the sources of @c. */
static void health_family(struct statsfd_buf *b, struct collector *c,
			  const char *name, const char *type, const char *help,
			  int which)
{
	struct source *s;

	statsfd_buf_printf(b, "# HELP statsfd_collector_source_%s %s\n", name, help);
	statsfd_buf_printf(b, "# TYPE statsfd_collector_source_%s %s\n", name, type);
	for (s = c->sources; s; s = s->next) {
		statsfd_buf_printf(b, "statsfd_collector_source_%s{%s} ", name,
				   s->prom_labels);
		if (which == 0)
			statsfd_buf_printf(b, "%d\n", !s->failures);
		else if (which == 1)
			statsfd_buf_printf(b, "%" PRIu64 "\n", s->read_errors);
		else
			statsfd_buf_printf(b, "%" PRIu64 ".%03u\n", s->last_read / 1000,
					   (unsigned int)(s->last_read % 1000));
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
static void process_metrics(struct statsfd_buf *b)
{
	unsigned long long utime, stime, start, vsize;
	long long rss;
	struct rlimit rl;
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
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
			 "%*d %*d %*d %*d %*d %*d %llu %llu %lld",
			 &utime, &stime, &start, &vsize, &rss) != 5)
		return;
	process_metric(b, "cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.",
		       (double)(utime + stime) / (double)clock_ticks());
	process_metric(b, "resident_memory_bytes", "gauge",
		       "Resident memory size in bytes.",
		       (double)rss * (double)sysconf(_SC_PAGESIZE));
	process_metric(b, "virtual_memory_bytes", "gauge",
		       "Virtual memory size in bytes.", (double)vsize);
	process_metric(b, "start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.",
		       boot_time() + (double)start / (double)clock_ticks());
	process_metric(b, "open_fds", "gauge", "Number of open file descriptors.",
		       open_fds());
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		process_metric(b, "max_fds", "gauge",
			       "Maximum number of open file descriptors.",
			       (double)rl.rlim_cur);
}

static void collector_metrics(struct statsfd_buf *b, struct collector *c,
			      unsigned long conflicts)
{
	unsigned int down = 0;
	struct source *s;

	for (s = c->sources; s; s = s->next)
		down += !!s->failures;
	statsfd_buf_printf(b, "# HELP statsfd_collector_build_info The collector's version.\n"
			   "# TYPE statsfd_collector_build_info gauge\n"
			   "statsfd_collector_build_info{version=\"%s\"} 1\n",
			   STATSFD_VERSION);
	self_metric(b, "sources", "gauge", "Stats fds currently registered.",
		    c->nsources);
	self_metric(b, "sources_down", "gauge",
		    "Sources whose last read failed (their stats are not exported).", down);
	self_metric(b, "sources_mapped", "gauge",
		    "Stats fds whose values are read through a mapping.", c->nmapped);
	self_metric(b, "source_bytes", "gauge",
		    "Bytes held for the sources, against --max-bytes.", c->bytes);
	self_metric(b, "clients", "gauge", "Connected clients on the unix socket.",
		    c->nclients);
	self_metric(b, "reads_total", "counter", "Successful reads of a data block.",
		    c->stats.reads);
	self_metric(b, "read_errors_total", "counter", "Failed reads of a data block.",
		    c->stats.read_errors);
	self_metric(b, "sources_failed_total", "counter",
		    "Sources dropped after --drop-after failed reads in a row.",
		    c->stats.sources_failed);
	self_metric(b, "scrapes_total", "counter", "Metrics requests served.",
		    c->stats.scrapes);
	self_metric(b, "requests_total", "counter", "Messages received on the unix socket.",
		    c->stats.requests);
	self_metric(b, "bad_requests_total", "counter", "Malformed messages received.",
		    c->stats.bad_requests);
	self_metric(b, "fds_rejected_total", "counter",
		    "Fds refused because they are not stats fds of statsfd or KVM, or not valid.",
		    c->stats.fds_rejected);
	self_metric(b, "quota_refusals_total", "counter",
		    "Fds refused by a limit: sources or bytes per client, or the collector's.",
		    c->stats.quota_refusals);
	self_metric(b, "labels_refused_total", "counter",
		    "Registrations refused because their vm label belongs to another client.",
		    c->stats.labels_refused);
	self_metric(b, "replies_too_large_total", "counter",
		    "Replies replaced by an error because they exceeded the per-client cap.",
		    c->stats.replies_too_large);
	self_metric(b, "clients_refused_total", "counter",
		    "Connections refused (not allowed, or too many).", c->stats.clients_refused);
	self_metric(b, "clients_dropped_total", "counter",
		    "Clients dropped for idling or not reading their replies.",
		    c->stats.clients_dropped);
	self_metric(b, "exposition_estimate_bytes", "gauge",
		    "Estimated exposition bytes of the sources, against --max-exposition.",
		    c->expo);
	self_metric(b, "reply_bytes", "gauge",
		    "Bytes of replies queued on the unix socket, against --max-reply-bytes.",
		    c->out_bytes);
	self_metric(b, "duplicates_refused_total", "counter",
		    "Fds refused because their open file is already a source.",
		    c->stats.duplicates_refused);
	self_metric(b, "fd_table_full_total", "counter",
		    "Times the fd table was full: a connection or the fds of a message refused.",
		    c->stats.fd_table_full);
	self_metric(b, "changed_refused_total", "counter",
		    "Fds refused because their header changed between admission and parsing.",
		    c->stats.changed_refused);
	self_metric(b, "filters_refused_total", "counter",
		    "Queries refused for a filter array longer than 1024 entries.",
		    c->stats.filters_refused);
	statsfd_buf_printf(b, "# HELP statsfd_collector_request_max_seconds %s\n"
			   "# TYPE statsfd_collector_request_max_seconds gauge\n"
			   "statsfd_collector_request_max_seconds %" PRIu64 ".%06u\n",
			   "The longest a request on the unix socket held the loop.",
			   c->request_max_us / 1000000,
			   (unsigned int)(c->request_max_us % 1000000));
	self_metric(b, "http_refused_total", "counter",
		    "HTTP connections refused: no general slot and no reserved one for them.",
		    c->stats.http_refused);
	self_metric(b, "http_evicted_total", "counter",
		    "HTTP connections cut because a newcomer took their reserved slot before they authenticated.",
		    c->stats.http_evicted);
	self_metric(b, "http_deadlines_total", "counter",
		    "HTTP connections cut at --http-header-timeout or --http-send-timeout.",
		    c->stats.http_deadlines);
	self_metric(b, "http_busy_total", "counter",
		    "Scrapes answered 503: responses still being sent held --http-max-held-bytes.",
		    c->stats.http_busy);
	self_metric(b, "http_auth_busy_total", "counter",
		    "Requests answered 429: their address or every address spent its bcrypt budget.",
		    c->stats.http_auth_busy);
	statsfd_buf_printf(b, "# HELP statsfd_collector_http_auth_cpu_seconds_total %s\n"
			   "# TYPE statsfd_collector_http_auth_cpu_seconds_total counter\n"
			   "statsfd_collector_http_auth_cpu_seconds_total %" PRIu64 ".%03u\n",
			   "CPU time spent checking passwords with bcrypt.",
			   c->stats.http_auth_cpu_ms / 1000,
			   (unsigned int)(c->stats.http_auth_cpu_ms % 1000));
	self_metric(b, "sources_polled", "gauge",
		    "Stats fds waited on for their events (hangup, change of children).",
		    c->npolled);
	self_metric(b, "sources_hung_up_total", "counter",
		    "Sources dropped because their owner hung them up (EPOLLHUP: the VM is gone).",
		    c->stats.sources_hung_up);
	self_metric(b, "children_changes_total", "counter",
		    "Changes of a source's children reported (EPOLLPRI: a vCPU added to a VM).",
		    c->stats.children_changes);
	self_metric(b, "family_conflicts", "gauge",
		    "Stats skipped in the last rendering: same metric name, different type or same schema.",
		    conflicts);
	if (!c->nsources)
		return;
	health_family(b, c, "up", "gauge",
		      "1 when the last read of the source succeeded, else 0.", 0);
	health_family(b, c, "read_errors_total", "counter",
		      "Failed reads of the source.", 1);
	health_family(b, c, "last_read_timestamp_seconds", "gauge",
		      "Time of the last successful read of the source, since the epoch.", 2);
}

/**
 * render_metrics() - the whole exposition, from the values of the last read
 * @c: collector
 * @len: set to its length
 *
 * Sources that are down (last read failed) export no stats, only their
 * health series.
 *
 * Return: the text (malloc()ed, the caller frees it), or NULL.
 */
char *render_metrics(struct collector *c, size_t *len)
{
	struct statsfd_prom_series *ser;
	struct statsfd_buf b = { 0 };
	uint64_t *ranks;
	unsigned long conflicts = 0;
	struct source *s;
	size_t n = 0;

	ser = calloc(c->nsources + 1, sizeof(*ser));
	ranks = calloc(c->nsources + 1, sizeof(*ranks));
	if (!ser || !ranks) {
		free(ser);
		free(ranks);
		return NULL;
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
	if (statsfd_prom_write_ranked(&b, ser, ranks, n, &conflicts)) {
		free(ser);
		free(ranks);
		statsfd_buf_free(&b);
		return NULL;
	}
	free(ser);
	free(ranks);
	/* --host: the host's mapped stats under node_exporter's names. */
	if (c->render_host && c->render_host(c, &b)) {
		statsfd_buf_free(&b);
		return NULL;
	}
	collector_metrics(&b, c, conflicts);
	process_metrics(&b);
	if (b.oom) {
		statsfd_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return b.data;
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

/* The current rendering, made again when the sources changed since. */
static struct render_body *render_current(struct collector *c)
{
	struct render_body *b;

	if (c->render.valid && c->render.generation == c->generation)
		return c->render.body;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->text = render_metrics(c, &b->len);
	if (!b->text) {
		free(b);
		return NULL;
	}
	b->refs = 1;
	b->gen = ++c->render.gen;
	render_body_put(c->render.body);
	c->render.body = b;
	c->render.generation = c->generation;
	c->render.valid = true;
	return b;
}

/**
 * render_cached() - the exposition, rendered at most once per read tick
 * @c: collector
 * @len: set to its length
 *
 * Rendered again only when a read tick or a source added or dropped
 * changed c->generation since the last rendering; otherwise the same text
 * (its statsfd_collector_* and process_* values are those of that time).
 * Each new rendering bumps c->render.gen.  Scrapes are counted by the
 * HTTP handler, once per request, not here.
 *
 * Return: the text, owned by @c and valid until the next call or
 * render_free(); NULL when out of memory.
 */
const char *render_cached(struct collector *c, size_t *len)
{
	struct render_body *b = render_current(c);

	if (!b)
		return NULL;
	*len = b->len;
	return b->text;
}

/**
 * render_body_get() - a reference to the current rendering
 * @c: collector
 *
 * As render_cached(), but the body stays valid, unchanged, until
 * render_body_put(): one body per render tick is shared by every response
 * being sent from it.
 *
 * Return: the body, or NULL when out of memory.
 */
struct render_body *render_body_get(struct collector *c)
{
	struct render_body *b = render_current(c);

	if (b)
		b->refs++;
	return b;
}

/**
 * render_free() - release the cached exposition
 * @c: collector
 *
 * Responses still holding a reference keep their body until they end.
 */
void render_free(struct collector *c)
{
	render_body_put(c->render.body);
	c->render.body = NULL;
	c->render.valid = false;
}
