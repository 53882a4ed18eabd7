// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: Prometheus text exposition over HTTP with
 * libmicrohttpd, driven from the collector's own epoll loop (MHD_USE_EPOLL
 * without an internal thread), so scrapes see a consistent set of sources
 * without locks.  libmicrohttpd buffers each response and sends it as the
 * socket allows, so a slow scraper never blocks the loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "collector.h"
#include "sd.h"

#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

static int tag_http = EP_HTTP;

static void self_metric(struct statsfd_buf *b, const char *name,
			const char *type, const char *help, uint64_t v)
{
	statsfd_buf_printf(b, "# HELP statsfd_collector_%s %s\n", name, help);
	statsfd_buf_printf(b, "# TYPE statsfd_collector_%s %s\n", name, type);
	statsfd_buf_printf(b, "statsfd_collector_%s %" PRIu64 "\n", name, v);
}

/* The exposition of every source, from the values of the last read. */
char *render_metrics(struct collector *c, size_t *len)
{
	struct statsfd_prom_series *ser;
	struct statsfd_buf b = { 0 };
	unsigned long conflicts = 0;
	struct source *s;
	size_t n = 0;

	ser = calloc(c->nsources + 1, sizeof(*ser));
	if (!ser)
		return NULL;
	for (s = c->sources; s; s = s->next)
		ser[n++] = (struct statsfd_prom_series){
			s->sf, s->values, s->schema->prom_prefix, s->prom_labels,
			s->schema,
		};
	c->stats.scrapes++;
	if (statsfd_prom_write(&b, ser, n, &conflicts)) {
		free(ser);
		statsfd_buf_free(&b);
		return NULL;
	}
	free(ser);
	self_metric(&b, "sources", "gauge", "Stats fds currently registered.",
		    c->nsources);
	self_metric(&b, "sources_mapped", "gauge",
		    "Stats fds whose values are read through a mapping.", c->nmapped);
	self_metric(&b, "clients", "gauge", "Connected clients on the unix socket.",
		    c->nclients);
	self_metric(&b, "reads_total", "counter", "Successful reads of a data block.",
		    c->stats.reads);
	self_metric(&b, "read_errors_total", "counter", "Failed reads of a data block.",
		    c->stats.read_errors);
	self_metric(&b, "scrapes_total", "counter", "Metrics requests served.",
		    c->stats.scrapes);
	self_metric(&b, "requests_total", "counter", "Messages received on the unix socket.",
		    c->stats.requests);
	self_metric(&b, "bad_requests_total", "counter", "Malformed messages received.",
		    c->stats.bad_requests);
	self_metric(&b, "fds_rejected_total", "counter",
		    "Fds refused because they are not valid stats fds.", c->stats.fds_rejected);
	self_metric(&b, "clients_refused_total", "counter",
		    "Connections refused (not allowed, or too many).", c->stats.clients_refused);
	self_metric(&b, "clients_dropped_total", "counter",
		    "Clients dropped for idling or not reading their replies.",
		    c->stats.clients_dropped);
	self_metric(&b, "sources_polled", "gauge",
		    "Stats fds waited on for their events (hangup, change of children).",
		    c->npolled);
	self_metric(&b, "sources_hung_up_total", "counter",
		    "Sources dropped because their owner hung them up (EPOLLHUP: the VM is gone).",
		    c->stats.sources_hung_up);
	self_metric(&b, "children_changes_total", "counter",
		    "Changes of a source's children reported (EPOLLPRI: a vCPU added to a VM).",
		    c->stats.children_changes);
	self_metric(&b, "family_conflicts", "gauge",
		    "Stats skipped in the last scrape: same metric name, different type.",
		    conflicts);
	if (b.oom) {
		statsfd_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return b.data;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **req_cls)
{
	static char index_page[] =
		"statsfd-collector: Prometheus metrics at /metrics\n";
	static char not_found[] = "not found\n";
	static char bad_method[] = "only GET and HEAD\n";
	struct collector *c = cls;
	char *body;
	size_t len;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", bad_method,
			     strlen(bad_method), MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/"))
		return reply(conn, MHD_HTTP_OK, "text/plain", index_page,
			     strlen(index_page), MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found,
			     strlen(not_found), MHD_RESPMEM_PERSISTENT);
	body = render_metrics(c, &len);
	if (!body)
		return MHD_NO;
	return reply(conn, MHD_HTTP_OK, PROM_CONTENT_TYPE, body, len,
		     MHD_RESPMEM_MUST_FREE);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	logmsg("http: %s", buf);
}

int http_start(struct collector *c, const char *listen, unsigned int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *info;
	char host[64];
	const char *colon = strrchr(listen, ':');
	unsigned long p;
	char *end;

	if (!colon || (size_t)(colon - listen) >= sizeof(host)) {
		logmsg("--listen %s: expected ADDR:PORT", listen);
		return -1;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	p = strtoul(colon + 1, &end, 10);
	if (*end || p > 65535 || inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		logmsg("--listen %s: expected an IPv4 address and a port", listen);
		return -1;
	}
	sin.sin_port = htons((uint16_t)p);
	c->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
				  (uint16_t)p, NULL, NULL, handler, c,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
				  MHD_OPTION_LISTEN_SOCKET, systemd_http_listen_fd(0),
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
				  MHD_OPTION_END);
	if (!c->mhd) {
		logmsg("http: cannot listen on %s", listen);
		return -1;
	}
	info = MHD_get_daemon_info(c->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		logmsg("http: no epoll fd");
		return -1;
	}
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &tag_http };

		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, info->epoll_fd, &ev)) {
			logmsg("http: epoll: %s", strerror(errno));
			return -1;
		}
	}
	info = MHD_get_daemon_info(c->mhd, MHD_DAEMON_INFO_BIND_PORT);
	*port = info ? info->port : (unsigned int)p;
	return 0;
}

void http_run(struct collector *c)
{
	if (c->mhd)
		MHD_run(c->mhd);
}

int http_timeout(struct collector *c)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (!c->mhd || MHD_get_timeout(c->mhd, &t) != MHD_YES)
		return -1;
	return t > 1000 ? 1000 : (int)t;
}

void http_stop(struct collector *c)
{
	if (c->mhd)
		MHD_stop_daemon(c->mhd);
	c->mhd = NULL;
}
