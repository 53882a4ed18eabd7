// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: Prometheus text exposition over HTTP with
 * libmicrohttpd, driven from the collector's own epoll loop (MHD_USE_EPOLL
 * without an internal thread), so scrapes see a consistent set of sources
 * without locks.  libmicrohttpd buffers each response and sends it as the
 * socket allows, so a slow scraper never blocks the loop.
 *
 * One libmicrohttpd daemon per --listen address (IPv4, IPv6 or both),
 * each with its own epoll fd in the collector's loop.  Hostile clients
 * are bounded by a connection limit over every address (enforced here,
 * across the daemons), a limit per client address and an idle timeout
 * (libmicrohttpd's, per daemon).  --web.config.file adds TLS (GnuTLS,
 * through libmicrohttpd) and basic auth with bcrypt hashes.
 *
 * The exposition is rendered at most once per read tick and per change of
 * the sources (render_cached()), and its gzip encoding once per render:
 * every scrape in between is served the same libmicrohttpd response (one
 * copy of the text per render), so a scrape costs neither a render nor a
 * copy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "collector.h"
#include "http.h"
#include "sd.h"
#include "webconfig.h"

#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define AUTH_REALM		"statsfd-collector"
/* The largest certificate, key or CA file read for TLS. */
#define TLS_FILE_MAX		(1u << 20)
/* libmicrohttpd log lines per second; a client cannot flood the journal. */
#define LOG_BURST		10
/*
 * bcrypt checks per second, for passwords not already known good: each
 * costs tens of milliseconds of the one loop that also reads the sources,
 * so a client guessing passwords gets 429 beyond this, while a scraper
 * whose password matched before is still let in (by its digest).
 */
#define BCRYPT_PER_SEC		4

static int tag_http = EP_HTTP;

/**
 * struct http_listener - one --listen address
 * @mhd: its libmicrohttpd daemon
 * @port: the port it listens on (the one picked, for port 0)
 */
struct http_listener {
	struct MHD_Daemon *mhd;
	unsigned int port;
};

/**
 * struct http_server - the HTTP side of the collector (collector.http)
 * @l: the listeners
 * @nl: how many
 * @wc: the --web.config.file, all zero without one
 * @cert: PEM of tls_server_config.cert_file, read before privileges drop
 * @key: PEM of tls_server_config.key_file
 * @ca: PEM of tls_server_config.client_ca_file, or NULL
 * @good_pw: per basic_auth_users entry, SHA-256 of the last password that
 *	matched (bcrypt is slow on purpose: a scraper sending the right
 *	password every few seconds must not cost a bcrypt each time)
 * @good_pw_set: @good_pw[i] holds a digest
 * @max_connections: --http-max-connections, over every listener
 * @nconnections: open connections, over every listener
 * @resp_gen: collector.render.gen that @resp and @resp_gz hold
 * @resp: the cached exposition as a response shared by every scrape
 * @resp_gz: the same, gzip encoded, made on the first scrape asking
 * @bcrypt_sec: the second of the last bcrypt check
 * @bcrypt_count: bcrypt checks in @bcrypt_sec
 * @log_sec: the second of the last libmicrohttpd log line
 * @log_count: lines logged in @log_sec
 * @log_dropped: lines not logged since
 */
struct http_server {
	struct http_listener l[HTTP_MAX_LISTEN];
	unsigned int nl;
	struct webconfig wc;
	char *cert, *key, *ca;
	unsigned char (*good_pw)[32];
	bool *good_pw_set;
	unsigned int max_connections;
	unsigned int nconnections;
	uint64_t resp_gen;
	struct MHD_Response *resp, *resp_gz;
	uint64_t bcrypt_sec;
	unsigned int bcrypt_count;
	uint64_t log_sec;
	unsigned int log_count;
	unsigned long log_dropped;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Does Accept-Encoding name gzip, with a q-value above 0? */
static bool wants_gzip(struct MHD_Connection *conn)
{
	const char *ae = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_ACCEPT_ENCODING);
	const char *p = ae;

	while (p && *p) {
		size_t n;

		p += strspn(p, " \t,");
		n = strcspn(p, " \t,;");
		if (n == 4 && !strncasecmp(p, "gzip", 4)) {
			const char *end = p + strcspn(p, ",");
			const char *q = strstr(p, "q=");

			/* "gzip;q=0" refuses gzip; q=0.5 or none accept it. */
			if (!q || q > end)
				return true;
			return strtod(q + 2, NULL) > 0;
		}
		p += strcspn(p, ",");
	}
	return false;
}

/* gzip (RFC 1952) of @in, or NULL; fast level: at most once per render. */
static char *gzip_encode(const char *in, size_t len, size_t *outlen)
{
	z_stream z = { 0 };
	char *out;
	uLong cap;

	/* zlib counts in 32 bits: from 2 GiB on, the caller serves it plain. */
	if (len >= UINT32_MAX / 2 ||
	    deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&z, len);
	out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*outlen = z.total_out;
	deflateEnd(&z);
	return out;
}

/*
 * The response for /metrics, made from the cached exposition once per
 * render and shared by every connection (libmicrohttpd counts its users
 * and frees it after the last one, so a slow scraper still gets the text
 * of its render after a newer one replaced it here).
 */
static struct MHD_Response *metrics_response(struct collector *c, bool gz)
{
	struct http_server *h = c->http;
	struct MHD_Response **slot;
	const char *text;
	size_t len, zlen;
	char *z;

	text = render_cached(c, &len);
	if (!text)
		return NULL;
	if (h->resp_gen != c->render.gen) {
		if (h->resp)
			MHD_destroy_response(h->resp);
		if (h->resp_gz)
			MHD_destroy_response(h->resp_gz);
		h->resp = NULL;
		h->resp_gz = NULL;
		h->resp_gen = c->render.gen;
	}
	slot = gz ? &h->resp_gz : &h->resp;
	if (*slot)
		return *slot;
	if (gz) {
		z = gzip_encode(text, len, &zlen);
		if (!z)
			return metrics_response(c, false);
		*slot = MHD_create_response_from_buffer(zlen, z, MHD_RESPMEM_MUST_FREE);
		if (!*slot) {
			free(z);
			return NULL;
		}
		MHD_add_response_header(*slot, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	} else {
		*slot = MHD_create_response_from_buffer(len, (void *)text,
							MHD_RESPMEM_MUST_COPY);
		if (!*slot)
			return NULL;
	}
	MHD_add_response_header(*slot, MHD_HTTP_HEADER_CONTENT_TYPE, PROM_CONTENT_TYPE);
	MHD_add_response_header(*slot, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	return *slot;
}

/* tls_server_config.client_auth_type: Return: NULL, or why to refuse. */
static const char *client_cert_refused(struct http_server *h,
				       struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	const gnutls_datum_t *certs;
	unsigned int n = 0, status = 0;
	gnutls_session_t s;

	if (!h->wc.tls || h->wc.client_auth == WEBCONFIG_NO_CLIENT_CERT)
		return NULL;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return "no TLS session\n";
	s = ci->tls_session;
	certs = gnutls_certificate_get_peers(s, &n);
	if (!certs || !n)
		return h->wc.client_auth == WEBCONFIG_REQUIRE_AND_VERIFY ?
			"client certificate required\n" : NULL;
	if (gnutls_certificate_verify_peers2(s, &status) || status)
		return "client certificate not trusted\n";
	return NULL;
}

enum auth { AUTH_OK, AUTH_FAILED, AUTH_BUSY };

/* May one more bcrypt check run in this second? */
static bool bcrypt_allowed(struct http_server *h)
{
	uint64_t sec = now_ms() / 1000;

	if (sec != h->bcrypt_sec) {
		h->bcrypt_sec = sec;
		h->bcrypt_count = 0;
	}
	return h->bcrypt_count++ < BCRYPT_PER_SEC;
}

/* basic_auth_users: may the request go on (AUTH_BUSY: no bcrypt left)? */
static enum auth authorized(struct http_server *h, struct MHD_Connection *conn)
{
	unsigned char digest[32], diff = 0;
	char *user, *pw = NULL;
	enum auth ret = AUTH_FAILED;
	unsigned int i;
	size_t k;

	if (!h->wc.nusers)
		return AUTH_OK;
	user = MHD_basic_auth_get_username_password(conn, &pw);
	if (!user || !pw)
		goto out;
	for (i = 0; i < h->wc.nusers; i++)
		if (!strcmp(h->wc.users[i].name, user))
			break;
	if (i == h->wc.nusers) {
		/* As slow as a known user: the time tells no user names. */
		if (!bcrypt_allowed(h))
			ret = AUTH_BUSY;
		else
			webconfig_check_password(h->wc.users[0].hash, pw);
		goto out;
	}
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, pw, strlen(pw), digest))
		goto out;
	if (h->good_pw_set[i]) {
		for (k = 0; k < sizeof(digest); k++)
			diff |= digest[k] ^ h->good_pw[i][k];
		if (!diff) {
			ret = AUTH_OK;
			goto out;
		}
	}
	if (!bcrypt_allowed(h)) {
		ret = AUTH_BUSY;
		goto out;
	}
	if (!webconfig_check_password(h->wc.users[i].hash, pw))
		goto out;
	memcpy(h->good_pw[i], digest, sizeof(digest));
	h->good_pw_set[i] = true;
	ret = AUTH_OK;
out:
	if (pw)
		MHD_free(pw);
	if (user)
		MHD_free(user);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **req_cls)
{
	static const char not_found[] = "not found\n";
	static const char bad_method[] = "only GET and HEAD\n";
	static const char unauthorized[] = "unauthorized\n";
	static const char busy[] = "too many password checks, retry in a second\n";
	struct collector *c = cls;
	struct http_server *h = c->http;
	struct MHD_Response *r;
	const char *why;
	enum MHD_Result ret;
	enum auth auth;

	/* Answered at once: libmicrohttpd then closes the connection. */
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, bad_method);
	/*
	 * The first call comes with the headers only: answering then makes
	 * libmicrohttpd close the connection (it cannot know the request
	 * ended), so answer on the next one and keep scrapers' connections
	 * alive.
	 */
	if (!*req_cls) {
		*req_cls = conn;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;	/* a GET's body is read and ignored */
		return MHD_YES;
	}
	why = client_cert_refused(h, conn);
	if (why)
		return reply(conn, MHD_HTTP_FORBIDDEN, why);
	auth = authorized(h, conn);
	if (auth == AUTH_BUSY) {
		r = MHD_create_response_from_buffer(strlen(busy), (void *)busy,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		ret = MHD_queue_response(conn, MHD_HTTP_TOO_MANY_REQUESTS, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (auth == AUTH_FAILED) {
		r = MHD_create_response_from_buffer(strlen(unauthorized),
						    (void *)unauthorized,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		ret = MHD_queue_basic_auth_fail_response(conn, AUTH_REALM, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (!strcmp(url, "/healthz"))
		return reply(conn, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, not_found);
	c->stats.scrapes++;
	r = metrics_response(c, wants_gzip(conn));
	if (!r)
		return MHD_NO;
	return MHD_queue_response(conn, MHD_HTTP_OK, r);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *h = cls;
	uint64_t sec = now_ms() / 1000;
	char buf[256];

	if (sec != h->log_sec) {
		if (h->log_dropped)
			logmsg("http: %lu messages not logged", h->log_dropped);
		h->log_sec = sec;
		h->log_count = 0;
		h->log_dropped = 0;
	}
	if (h->log_count++ >= LOG_BURST) {
		h->log_dropped++;
		return;
	}
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	logmsg("http: %s", buf);
}

/* Over every listener: libmicrohttpd's own limit counts one daemon only. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr,
				     socklen_t addrlen)
{
	struct http_server *h = cls;

	return h->nconnections < h->max_connections ? MHD_YES : MHD_NO;
}

static void notify_connection(void *cls, struct MHD_Connection *conn,
			      void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *ci;

	/*
	 * RequireAndVerifyClientCert: libmicrohttpd only asks for a client
	 * certificate; require and verify it in the handshake, as Go's
	 * crypto/tls does for exporter-toolkit, so a client without one
	 * gets no HTTP at all.  client_cert_refused() checks again.
	 */
	if (code == MHD_CONNECTION_NOTIFY_STARTED &&
	    h->wc.client_auth == WEBCONFIG_REQUIRE_AND_VERIFY) {
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
		if (ci && ci->tls_session) {
			gnutls_certificate_server_set_request(ci->tls_session,
							      GNUTLS_CERT_REQUIRE);
			gnutls_session_set_verify_cert(ci->tls_session, NULL, 0);
		}
	}
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		h->nconnections++;
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED && h->nconnections)
		h->nconnections--;
}

/**
 * struct listen_addr - a parsed --listen address
 * @sa: the address (unused for @any)
 * @any: ":PORT": every address, IPv6 and IPv4
 * @v6: @sa is an IPv6 address
 * @port: the port
 */
struct listen_addr {
	union {
		struct sockaddr sa;
		struct sockaddr_in sin;
		struct sockaddr_in6 sin6;
	} sa;
	bool any;
	bool v6;
	uint16_t port;
};

/* "HOST:PORT", "[V6ADDR]:PORT" or ":PORT"; numeric addresses only. */
static int parse_listen(const char *s, struct listen_addr *a)
{
	const char *colon, *host = s;
	char buf[INET6_ADDRSTRLEN + 1];
	size_t hlen;
	unsigned long p;
	char *end;

	memset(a, 0, sizeof(*a));
	if (*s == '[') {
		colon = strstr(s, "]:");
		if (!colon)
			return -1;
		host = s + 1;
		hlen = (size_t)(colon - host);
		colon++;
		a->v6 = true;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - s);
		if (memchr(s, ':', hlen))
			return -1;	/* a bare IPv6 address needs brackets */
	}
	if (!colon[1] || hlen >= sizeof(buf))
		return -1;
	p = strtoul(colon + 1, &end, 10);
	if (*end || colon[1] < '0' || colon[1] > '9' || p > 65535)
		return -1;
	a->port = (uint16_t)p;
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';
	if (!hlen && !a->v6) {
		a->any = true;
		return 0;
	}
	if (a->v6) {
		a->sa.sin6.sin6_family = AF_INET6;
		a->sa.sin6.sin6_port = htons(a->port);
		return inet_pton(AF_INET6, buf, &a->sa.sin6.sin6_addr) == 1 ? 0 : -1;
	}
	a->sa.sin.sin_family = AF_INET;
	a->sa.sin.sin_port = htons(a->port);
	return inet_pton(AF_INET, buf, &a->sa.sin.sin_addr) == 1 ? 0 : -1;
}

/* A whole PEM file, NUL-terminated, as libmicrohttpd wants it. */
static char *read_pem(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f) {
		logmsg("--web.config.file: %s: %s", path, strerror(errno));
		return NULL;
	}
	buf = malloc(TLS_FILE_MAX + 1);
	n = buf ? fread(buf, 1, TLS_FILE_MAX + 1, f) : 0;
	if (!buf || ferror(f) || !n || n > TLS_FILE_MAX) {
		logmsg("--web.config.file: %s: cannot read (empty, or larger than %u bytes)",
		       path, TLS_FILE_MAX);
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static int load_web_config(struct http_server *h, const char *path)
{
	char err[512];

	if (webconfig_load(path, &h->wc, err, sizeof(err))) {
		logmsg("--web.config.file %s: %s", path, err);
		return -1;
	}
	if (h->wc.nusers) {
		h->good_pw = calloc(h->wc.nusers, sizeof(*h->good_pw));
		h->good_pw_set = calloc(h->wc.nusers, sizeof(*h->good_pw_set));
		if (!h->good_pw || !h->good_pw_set)
			return -1;
	}
	if (!h->wc.tls)
		return 0;
	h->cert = read_pem(h->wc.cert_file);
	h->key = h->cert ? read_pem(h->wc.key_file) : NULL;
	if (!h->key)
		return -1;
	if (h->wc.client_ca_file) {
		h->ca = read_pem(h->wc.client_ca_file);
		if (!h->ca)
			return -1;
	}
	return 0;
}

/*
 * @listen_fd: the socket systemd activated for this address (its i-th
 * ListenStream=), or -1 to bind @a here.
 */
static struct MHD_Daemon *start_daemon(struct collector *c,
				       const struct http_config *cfg,
				       const struct listen_addr *a, bool v4_any,
				       int listen_fd)
{
	struct http_server *h = c->http;
	struct MHD_OptionItem o[16];
	struct sockaddr_in any4 = { .sin_family = AF_INET, .sin_port = htons(a->port) };
	unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	unsigned int n = 0;

	/* TLS 1.2 at least, as exporter-toolkit's default min_version. */
	static const char tls12[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
	static const char tls13[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3";

	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER,
					  (intptr_t)mhd_log, h };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION,
					  (intptr_t)notify_connection, h };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT,
					  cfg->max_connections, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					  cfg->max_per_ip, NULL };
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT,
					  cfg->idle_timeout_s, NULL };
	if (listen_fd >= 0)
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET,
						  listen_fd, NULL };
	if (a->any && !v4_any) {
		flags |= MHD_USE_DUAL_STACK;
	} else if (a->any) {
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &any4 };
	} else {
		if (a->v6)
			flags |= MHD_USE_IPv6;
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0,
						  (void *)&a->sa.sa };
	}
	if (h->wc.tls) {
		flags |= MHD_USE_TLS;
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert };
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, h->key };
		o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
			(void *)(h->wc.min_version == 13 ? tls13 : tls12) };
		if (h->ca)
			o[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST,
							  0, h->ca };
	}
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	return MHD_start_daemon(flags, a->port, accept_policy, h, handler, c,
				MHD_OPTION_ARRAY, o, MHD_OPTION_END);
}

/* Can this host open IPv6 sockets (not so with ipv6.disable=1)? */
static bool have_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/**
 * http_start() - listen on every --listen address
 * @c: the collector; c->http is set
 * @cfg: the command line's HTTP options
 *
 * Reads --web.config.file and the TLS files it names, and binds, so it
 * runs before the collector drops its privileges.  ":PORT" listens on
 * IPv6 and IPv4 (one dual-stack socket), or IPv4 only where the host has
 * no IPv6.
 *
 * Return: 0, or -1 after logging why (http_stop() frees what was made).
 */
int http_start(struct collector *c, const struct http_config *cfg)
{
	struct http_server *h;
	unsigned int i;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	c->http = h;
	h->max_connections = cfg->max_connections;
	if (cfg->web_config_file && load_web_config(h, cfg->web_config_file))
		return -1;
	for (i = 0; i < cfg->nlisten; i++) {
		struct http_listener *l = &h->l[h->nl];
		const union MHD_DaemonInfo *info;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &tag_http };
		struct listen_addr a;

		if (parse_listen(cfg->listen[i], &a)) {
			logmsg("--listen %s: expected HOST:PORT, [IPV6]:PORT or :PORT, numeric",
			       cfg->listen[i]);
			return -1;
		}
		l->mhd = start_daemon(c, cfg, &a, a.any && !have_ipv6(),
				      systemd_http_listen_fd(i));
		if (!l->mhd) {
			logmsg("http: cannot listen on %s", cfg->listen[i]);
			return -1;
		}
		h->nl++;
		info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
		if (!info || epoll_ctl(c->epfd, EPOLL_CTL_ADD, info->epoll_fd, &ev)) {
			logmsg("http: epoll: %s", strerror(errno));
			return -1;
		}
		info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_BIND_PORT);
		l->port = info ? info->port : a.port;
	}
	return 0;
}

/**
 * http_write_ports() - the port of every listener, one a line, in
 *	--listen order (0 when there is no HTTP server)
 * @c: the collector
 * @f: the --port-file
 *
 * Return: 0, or -1 when the write failed.
 */
int http_write_ports(struct collector *c, FILE *f)
{
	struct http_server *h = c->http;
	unsigned int i;

	if (!h || !h->nl)
		return fprintf(f, "0\n") < 0 ? -1 : 0;
	for (i = 0; i < h->nl; i++)
		if (fprintf(f, "%u\n", h->l[i].port) < 0)
			return -1;
	return 0;
}

/**
 * http_run() - serve whatever every listener has to do now
 * @c: the collector
 */
void http_run(struct collector *c)
{
	unsigned int i;

	for (i = 0; c->http && i < c->http->nl; i++)
		MHD_run(c->http->l[i].mhd);
}

/**
 * http_timeout() - when http_run() must run next
 * @c: the collector
 *
 * Return: milliseconds (at most 1000), or -1 for no deadline.
 */
int http_timeout(struct collector *c)
{
	MHD_UNSIGNED_LONG_LONG t;
	unsigned int i;
	int best = -1;

	for (i = 0; c->http && i < c->http->nl; i++) {
		if (MHD_get_timeout(c->http->l[i].mhd, &t) != MHD_YES)
			continue;
		if (t > 1000)
			t = 1000;
		if (best < 0 || (int)t < best)
			best = (int)t;
	}
	return best;
}

/**
 * http_stop() - close every listener and connection, free the server
 * @c: the collector
 */
void http_stop(struct collector *c)
{
	struct http_server *h = c->http;
	unsigned int i;

	if (!h)
		return;
	for (i = 0; i < h->nl; i++)
		MHD_stop_daemon(h->l[i].mhd);
	if (h->resp)
		MHD_destroy_response(h->resp);
	if (h->resp_gz)
		MHD_destroy_response(h->resp_gz);
	webconfig_free(&h->wc);
	free(h->cert);
	free(h->key);
	free(h->ca);
	free(h->good_pw);
	free(h->good_pw_set);
	free(h);
	c->http = NULL;
}
