// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: Prometheus text exposition over HTTP with
 * libmicrohttpd, driven from the collector's own epoll loop (MHD_USE_EPOLL
 * without an internal thread), so scrapes see a consistent set of sources
 * without locks.  libmicrohttpd sends each response as the socket allows,
 * so a slow scraper never blocks the loop.
 *
 * One libmicrohttpd daemon per --listen address (IPv4, IPv6 or both),
 * each with its own epoll fd in the collector's loop.  Every connection is
 * tracked here (struct hconn), across the daemons, because hostile local
 * users share the loopback addresses with a same-host Prometheus:
 *
 *  - connection slots: --http-max-connections over every address, at
 *    most --http-max-per-ip of them from one address, and
 *    --http-reserved more that only a --http-scraper address or a client
 *    that authenticates (basic auth, a verified client certificate) keeps:
 *    a connection that gets a reserved slot must authenticate on its first
 *    request, and while it has not, a newcomer may take its slot (the
 *    oldest such is cut);
 *  - absolute deadlines, which progress does not move: the request line
 *    and headers within --http-header-timeout of the connection (or of the
 *    end of the previous request), the response sent within
 *    --http-send-timeout; past one the connection is shut down;
 *  - memory: the exposition is rendered at most once per read tick into
 *    one immutable, reference-counted body (render_body_get()), and every
 *    response of that tick, plain or gzip, is sent from it without a
 *    copy.  The bytes of the bodies that responses still being sent hold
 *    are capped by --http-max-held-bytes: a request that would pin one
 *    more body beyond it is answered 503 with Retry-After (a trusted
 *    client is still served), so slow readers cannot multiply the
 *    exposition; each connection's kernel send buffer is capped too
 *    (SO_SNDBUF, HTTP_SNDBUF), so they cannot hold it there either;
 *  - password checks: bcrypt's CPU time is charged to the client's address
 *    (--http-auth-cpu-per-ip) and to a ceiling over every address
 *    (--http-auth-cpu); a --http-scraper address only to its own; a
 *    password that matched once is known by its digest and costs no
 *    bcrypt again.
 *
 * --web.config.file adds TLS (GnuTLS, through libmicrohttpd) and basic
 * auth with bcrypt hashes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <stddef.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "collector.h"
#include "http.h"
#include "sd.h"
#include "webconfig.h"

#define AUTH_REALM		"statsfd-collector"
/* The largest certificate, key or CA file read for TLS. */
#define TLS_FILE_MAX		(1u << 20)
/* libmicrohttpd log lines per second; a client cannot flood the journal. */
#define LOG_BURST		10
/*
 * Client addresses whose bcrypt spending is remembered; beyond, the
 * address that spent least recently is forgotten (the global ceiling
 * still bounds them all).
 */
#define AUTH_ADDRS		256
/* A budget in CPU ms may be saved up for this many seconds. */
#define AUTH_BURST_S		2

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

/* A client address, IPv4 as IPv4-mapped IPv6. */
struct ip_key {
	unsigned char a[16];
};

/**
 * struct hconn - one HTTP connection
 * @next: in http_server.conns
 * @prev: in http_server.conns
 * @fd: its socket
 * @ip: the client's address
 * @deadline: monotonic ms by which its request headers must have arrived
 *	(no request being answered) or its response must have been sent
 * @since: monotonic ms it got its slot, or ended its last request
 * @reserved: holds one of the --http-reserved slots
 * @trusted: a --http-scraper address, or it authenticated
 * @cut: shut down here (a deadline, or its reserved slot taken): no longer
 *	counted, libmicrohttpd closes it on its next event
 */
struct hconn {
	struct hconn *next, *prev;
	int fd;
	struct ip_key ip;
	uint64_t deadline;
	uint64_t since;
	bool reserved;
	bool trusted;
	bool cut;
};

/**
 * struct auth_addr - bcrypt spending of one client address
 * @ip: the address
 * @balance: CPU ms it may still spend (negative: in debt), as of @when
 * @when: monotonic ms of @balance
 */
struct auth_addr {
	struct ip_key ip;
	int64_t balance;
	uint64_t when;
};

/**
 * struct http_server - the HTTP side of the collector (collector.http)
 * @c: the collector
 * @l: the listeners
 * @nl: how many
 * @cfg: the command line's options
 * @wc: the --web.config.file, all zero without one
 * @cert: PEM of tls_server_config.cert_file, read before privileges drop
 * @key: PEM of tls_server_config.key_file
 * @ca: PEM of tls_server_config.client_ca_file, or NULL
 * @good_pw: per basic_auth_users entry, SHA-256 of the last password that
 *	matched (bcrypt is slow on purpose: a scraper sending the right
 *	password every few seconds must not cost a bcrypt each time)
 * @good_pw_set: @good_pw[i] holds a digest
 * @scrapers: the --http-scraper addresses
 * @nscrapers: how many
 * @conns: open connections, over every listener
 * @ngeneral: connections in general slots, not cut
 * @nreserved: connections in reserved slots, not cut
 * @pending: decision of accept_policy() for the connection being accepted
 * @pending_set: @pending is for that connection
 * @held: bytes of the bodies that responses still being sent hold
 * @auth: bcrypt spending per address
 * @nauth: entries of @auth in use
 * @auth_global: the ceiling's balance, as struct auth_addr (ip unused)
 * @log_sec: the second of the last libmicrohttpd log line
 * @log_count: lines logged in @log_sec
 * @log_dropped: lines not logged since
 */
struct http_server {
	struct collector *c;
	struct http_listener l[HTTP_MAX_LISTEN];
	unsigned int nl;
	struct http_config cfg;
	struct webconfig wc;
	char *cert, *key, *ca;
	unsigned char (*good_pw)[32];
	bool *good_pw_set;
	struct ip_key scrapers[HTTP_MAX_SCRAPERS];
	unsigned int nscrapers;
	struct hconn *conns;
	unsigned int ngeneral;
	unsigned int nreserved;
	struct {
		struct ip_key ip;
		bool reserved;
		bool trusted;
	} pending;
	bool pending_set;
	size_t held;
	struct auth_addr auth[AUTH_ADDRS];
	unsigned int nauth;
	struct auth_addr auth_global;
	uint64_t log_sec;
	unsigned int log_count;
	unsigned long log_dropped;
};

/* The connection's state, or NULL (not tracked: should not happen). */
static struct hconn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static bool ip_key_of(const struct sockaddr *sa, struct ip_key *k)
{
	memset(k, 0, sizeof(*k));
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		k->a[10] = 0xff;
		k->a[11] = 0xff;
		memcpy(k->a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(k->a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

static bool is_scraper(const struct http_server *h, const struct ip_key *k)
{
	unsigned int i;

	for (i = 0; i < h->nscrapers; i++)
		if (!memcmp(&h->scrapers[i], k, sizeof(*k)))
			return true;
	return false;
}

/* Can a client prove who it is: basic auth, or verified certificates? */
static bool auth_configured(const struct http_server *h)
{
	return h->wc.nusers || (h->wc.tls && h->wc.client_auth != WEBCONFIG_NO_CLIENT_CERT);
}

/* Shut @hc down: it no longer counts; libmicrohttpd closes it. */
static void conn_cut(struct http_server *h, struct hconn *hc)
{
	if (hc->cut)
		return;
	hc->cut = true;
	if (hc->reserved)
		h->nreserved--;
	else
		h->ngeneral--;
	shutdown(hc->fd, SHUT_RDWR);
}

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

/* A response being sent from @body is over: unpin it. */
static void body_release(void *cls)
{
	struct render_body *body = cls;
	struct http_server *h = body->http;

	if (!--body->pins && h)
		h->held -= body->len + body->gzlen;
	render_body_put(body);
}

/*
 * Seconds until the oldest response now being sent has to be over (its
 * deadline), for Retry-After: at least 1.
 */
static unsigned int retry_after_s(struct http_server *h)
{
	uint64_t now = now_ms(), first = 0;
	struct hconn *hc;

	for (hc = h->conns; hc; hc = hc->next)
		if (!hc->cut && hc->deadline && (!first || hc->deadline < first))
			first = hc->deadline;
	if (!first || first <= now + 1000)
		return 1;
	return (unsigned int)((first - now + 999) / 1000);
}

/*
 * A response for /metrics, sent from the current rendering without a
 * copy: plain, or its gzip encoding (made on the first request asking, in
 * the same body).  *@busy is set instead when it would take the bytes held
 * by responses still being sent past --http-max-held-bytes (a trusted
 * client is served regardless; so is the first response when nothing is
 * held, whatever the size of one rendering).
 */
static struct MHD_Response *metrics_response(struct collector *c,
					     const struct expo_ops *fmt, bool gz,
					     bool trusted, bool *busy)
{
	struct http_server *h = c->http;
	struct render_body *body = render_body_get(c, fmt);
	struct MHD_Response *r;
	size_t add = 0, zlen;
	char *z;

	*busy = false;
	if (!body)
		return NULL;
	/*
	 * Pinning one more rendering adds its bytes (and those of its gzip
	 * encoding, estimated until it is made); a rendering already pinned
	 * adds at most its one encoding, bounded by the renderings pinned.
	 */
	if (!body->pins) {
		add += body->len + body->gzlen;
		if (gz && !body->gz && !body->gz_failed)
			add += body->len / 4;
	}
	if (add && h->held && h->held + add > h->cfg.max_held_bytes && !trusted) {
		c->stats.http_busy++;
		*busy = true;
		render_body_put(body);
		return NULL;
	}
	if (gz && !body->gz && !body->gz_failed) {
		z = gzip_encode(body->text, body->len, &zlen);
		if (z) {
			body->gz = z;
			body->gzlen = zlen;
			if (body->pins)
				h->held += zlen;
		} else {
			body->gz_failed = true;
		}
	}
	gz = gz && body->gz;
	r = MHD_create_response_from_buffer_with_free_callback_cls(gz ? body->gzlen : body->len,
								   gz ? body->gz : body->text,
								   body_release, body);
	if (!r) {
		render_body_put(body);
		return NULL;
	}
	if (!body->pins++) {
		body->http = h;
		h->held += body->len + body->gzlen;
	}
	if (gz)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, fmt->content_type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY,
				MHD_HTTP_HEADER_ACCEPT_ENCODING ", " MHD_HTTP_HEADER_ACCEPT);
	return r;
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

/* Did the client present a certificate that verified? */
static bool cert_proved(struct http_server *h, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	unsigned int n = 0;

	if (!h->wc.tls || h->wc.client_auth == WEBCONFIG_NO_CLIENT_CERT)
		return false;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session ||
	    !gnutls_certificate_get_peers(ci->tls_session, &n) || !n)
		return false;
	return !client_cert_refused(h, conn);
}

/* CPU time of this thread, in microseconds. */
static uint64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* @a's balance now: refilled at @rate ms per second, saved up to a burst. */
static int64_t balance_now(struct auth_addr *a, unsigned int rate, uint64_t now)
{
	int64_t cap = (int64_t)rate * AUTH_BURST_S;

	if (now > a->when) {
		a->balance += (int64_t)((now - a->when) * rate / 1000);
		a->when = now;
	}
	if (a->balance > cap)
		a->balance = cap;
	return a->balance;
}

/* The bcrypt account of @ip: found, or the least recently used one reset. */
static struct auth_addr *auth_account(struct http_server *h,
				      const struct ip_key *ip, uint64_t now)
{
	struct auth_addr *a, *lru = NULL;
	unsigned int i;

	for (i = 0; i < h->nauth; i++) {
		a = &h->auth[i];
		if (!memcmp(&a->ip, ip, sizeof(*ip)))
			return a;
		if (!lru || a->when < lru->when)
			lru = a;
	}
	if (h->nauth < AUTH_ADDRS)
		lru = &h->auth[h->nauth++];
	lru->ip = *ip;
	lru->balance = (int64_t)h->cfg.auth_cpu_ms_per_ip * AUTH_BURST_S;
	lru->when = now;
	return lru;
}

/*
 * One bcrypt check of @pw against @hash, if the budgets allow it: the
 * address's (--http-auth-cpu-per-ip) and, but for a --http-scraper
 * address, the ceiling over every address (--http-auth-cpu).  A check
 * runs when the balances are not in debt and costs them its CPU time, so
 * a guesser's address pays for its guesses and nobody else's.
 *
 * Return: AUTH_OK on a match, AUTH_FAILED, or AUTH_BUSY (not checked).
 */
static enum auth bcrypt_check(struct http_server *h, struct hconn *hc,
			      const char *hash, const char *pw)
{
	uint64_t now = now_ms(), t0;
	struct auth_addr *a = NULL;
	bool global = !hc || !hc->trusted, ok;
	int64_t spent;

	if (hc) {
		a = auth_account(h, &hc->ip, now);
		if (balance_now(a, h->cfg.auth_cpu_ms_per_ip, now) < 0)
			return AUTH_BUSY;
	}
	if (global && balance_now(&h->auth_global, h->cfg.auth_cpu_ms, now) < 0)
		return AUTH_BUSY;
	t0 = cpu_us();
	ok = webconfig_check_password(hash, pw);
	spent = (int64_t)((cpu_us() - t0 + 999) / 1000);
	if (a)
		a->balance -= spent;
	if (global)
		h->auth_global.balance -= spent;
	h->c->stats.http_auth_cpu_ms += (uint64_t)spent;
	return ok ? AUTH_OK : AUTH_FAILED;
}

/*
 * basic_auth_users: may the request go on (AUTH_BUSY: its address, or
 * every address, spent its bcrypt budget)?  *@proved is set when the
 * client proved who it is (a password, or a verified certificate).
 */
static enum auth authorized(struct http_server *h, struct MHD_Connection *conn,
			    struct hconn *hc, bool *proved)
{
	unsigned char digest[32], diff = 0;
	char *user, *pw = NULL;
	enum auth ret = AUTH_FAILED;
	unsigned int i;
	size_t k;

	*proved = false;
	if (!h->wc.nusers) {
		*proved = cert_proved(h, conn);
		return AUTH_OK;
	}
	user = MHD_basic_auth_get_username_password(conn, &pw);
	if (!user || !pw)
		goto out;
	for (i = 0; i < h->wc.nusers; i++)
		if (!strcmp(h->wc.users[i].name, user))
			break;
	if (i == h->wc.nusers) {
		/* As slow as a known user: the time tells no user names. */
		ret = bcrypt_check(h, hc, h->wc.users[0].hash, pw);
		if (ret == AUTH_OK)
			ret = AUTH_FAILED;
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
	ret = bcrypt_check(h, hc, h->wc.users[i].hash, pw);
	if (ret != AUTH_OK)
		goto out;
	memcpy(h->good_pw[i], digest, sizeof(digest));
	h->good_pw_set[i] = true;
out:
	*proved = ret == AUTH_OK;
	if (pw)
		MHD_free(pw);
	if (user)
		MHD_free(user);
	return ret;
}

/* A short text answer with a Retry-After header. */
static enum MHD_Result reply_retry(struct MHD_Connection *conn,
				   unsigned int status, const char *text,
				   unsigned int secs)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char after[16];

	r = MHD_create_response_from_buffer(strlen(text), (void *)text,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	snprintf(after, sizeof(after), "%u", secs);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, after);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
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
	static const char busy[] = "too many password checks, retry later\n";
	static const char held[] = "too many responses still being sent, retry later\n";
	struct collector *c = cls;
	struct http_server *h = c->http;
	struct hconn *hc = conn_of(conn);
	struct MHD_Response *r;
	bool proved, full;
	const char *why;
	enum MHD_Result ret;
	enum auth auth;

	/*
	 * The headers are in: from now on the answer has --http-send-timeout
	 * to be sent, whatever the client reads.
	 */
	if (!*req_cls && hc)
		hc->deadline = now_ms() + h->cfg.send_timeout_s * 1000ull;
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
	auth = authorized(h, conn, hc, &proved);
	if (hc && proved)
		hc->trusted = true;
	if (auth == AUTH_BUSY) {
		c->stats.http_auth_busy++;
		return reply_retry(conn, MHD_HTTP_TOO_MANY_REQUESTS, busy, 1);
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
	r = metrics_response(c, expo_negotiate(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
									   MHD_HTTP_HEADER_ACCEPT)),
			     wants_gzip(conn), hc && hc->trusted, &full);
	if (full)
		return reply_retry(conn, MHD_HTTP_SERVICE_UNAVAILABLE, held,
				   retry_after_s(h));
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* A log line, at most LOG_BURST a second: a client cannot flood the journal. */
static void log_limited(struct http_server *h, const char *fmt, va_list ap)
{
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

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	log_limited(cls, fmt, ap);
}

__attribute__((format(printf, 2, 3)))
static void http_log(struct http_server *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_limited(h, fmt, ap);
	va_end(ap);
}

/* Connections in general slots from @ip (not cut). */
static unsigned int conns_from(struct http_server *h, const struct ip_key *ip)
{
	unsigned int n = 0;
	struct hconn *hc;

	for (hc = h->conns; hc; hc = hc->next)
		n += !hc->cut && !hc->reserved && !memcmp(&hc->ip, ip, sizeof(*ip));
	return n;
}

/*
 * A reserved slot for a newcomer: a free one, else the one of the
 * connection that has held it longest without proving who it is (cut).
 */
static bool take_reserved(struct http_server *h)
{
	struct hconn *hc, *oldest = NULL;

	if (h->nreserved < h->cfg.reserved)
		return true;
	for (hc = h->conns; hc; hc = hc->next)
		if (!hc->cut && hc->reserved && !hc->trusted &&
		    (!oldest || hc->since < oldest->since))
			oldest = hc;
	if (!oldest)
		return false;
	conn_cut(h, oldest);
	h->c->stats.http_evicted++;
	return true;
}

/*
 * Over every listener, which slot a new connection gets (recorded for
 * notify_connection()), or none: a --http-scraper address any slot, a
 * reserved one last; anyone else a general slot within
 * --http-max-connections and --http-max-per-ip, else a reserved one if
 * clients can authenticate, which it keeps only by doing so.
 */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr,
				     socklen_t addrlen)
{
	struct http_server *h = cls;
	struct ip_key ip;
	bool scraper, general;

	h->pending_set = false;
	ip_key_of(addr, &ip);
	scraper = is_scraper(h, &ip);
	general = h->ngeneral < h->cfg.max_connections &&
		  (scraper || conns_from(h, &ip) < h->cfg.max_per_ip);
	h->pending.ip = ip;
	h->pending.trusted = scraper;
	h->pending.reserved = false;
	if (!general) {
		if (!h->cfg.reserved || (!scraper && !auth_configured(h)) ||
		    !take_reserved(h)) {
			char a[INET6_ADDRSTRLEN];

			h->c->stats.http_refused++;
			inet_ntop(AF_INET6, ip.a, a, sizeof(a));
			http_log(h, "connection from %s refused: slots in use %u general, %u from it, %u reserved",
				 a, h->ngeneral, conns_from(h, &ip), h->nreserved);
			return MHD_NO;
		}
		h->pending.reserved = true;
	}
	h->pending_set = true;
	return MHD_YES;
}

static void notify_connection(void *cls, struct MHD_Connection *conn,
			      void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *ci;
	struct hconn *hc;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		hc = *socket_context;
		if (!hc)
			return;
		conn_cut(h, hc);	/* uncounted, if not yet */
		DLIST_UNLINK(h->conns, hc, next, prev);
		free(hc);
		*socket_context = NULL;
		return;
	}
	/*
	 * RequireAndVerifyClientCert: libmicrohttpd only asks for a client
	 * certificate; require and verify it in the handshake, as Go's
	 * crypto/tls does for exporter-toolkit, so a client without one
	 * gets no HTTP at all.  client_cert_refused() checks again.
	 */
	if (h->wc.client_auth == WEBCONFIG_REQUIRE_AND_VERIFY) {
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
		if (ci && ci->tls_session) {
			gnutls_certificate_server_set_request(ci->tls_session,
							      GNUTLS_CERT_REQUIRE);
			gnutls_session_set_verify_cert(ci->tls_session, NULL, 0);
		}
	}
	hc = calloc(1, sizeof(*hc));
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!hc || !ci) {
		/* Cannot be tracked, so not served: closed at once. */
		free(hc);
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		h->pending_set = false;
		return;
	}
	hc->fd = ci->connect_fd;
	/*
	 * A slow reader's bytes sit in the kernel's send buffer too, beyond
	 * --http-max-held-bytes but charged to our memory cgroup: autotuned,
	 * up to 4 MiB a connection (tcp_wmem), 1 GiB for 256 of them.
	 */
	if (setsockopt(hc->fd, SOL_SOCKET, SO_SNDBUF, &(int){ HTTP_SNDBUF },
		       sizeof(int)))
		logmsg("http: SO_SNDBUF: %s", strerror(errno));
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	ip_key_of(ci ? ci->client_addr : NULL, &hc->ip);
	if (h->pending_set && !memcmp(&h->pending.ip, &hc->ip, sizeof(hc->ip))) {
		hc->reserved = h->pending.reserved;
		hc->trusted = h->pending.trusted;
	}
	h->pending_set = false;
	hc->since = now_ms();
	hc->deadline = hc->since + h->cfg.header_timeout_s * 1000ull;
	if (hc->reserved)
		h->nreserved++;
	else
		h->ngeneral++;
	DLIST_PUSH(h->conns, hc, next, prev);
	*socket_context = hc;
}

/*
 * A request is over (its response sent, or the connection failed): the
 * next one's headers are due within --http-header-timeout (a trusted
 * client may idle for --http-idle-timeout).  A reserved slot is kept only
 * by a client that proved who it is on its first request.
 */
static void notify_completed(void *cls, struct MHD_Connection *conn,
			     void **req_cls, enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;
	struct hconn *hc = conn_of(conn);

	if (!hc || hc->cut)
		return;
	if (hc->reserved && !hc->trusted) {
		conn_cut(h, hc);
		return;
	}
	hc->since = now_ms();
	hc->deadline = hc->since + 1000ull * (hc->trusted ? h->cfg.idle_timeout_s :
					      h->cfg.header_timeout_s);
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
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED,
					  (intptr_t)notify_completed, h };
	/*
	 * The slots are counted in accept_policy(), over every listener;
	 * this only bounds the connections cut but not yet closed on top.
	 */
	o[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT,
		2 * (cfg->max_connections + cfg->reserved), NULL };
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
	h->c = c;
	h->cfg = *cfg;
	h->auth_global.balance = (int64_t)cfg->auth_cpu_ms * AUTH_BURST_S;
	h->auth_global.when = now_ms();
	for (i = 0; i < cfg->nscrapers; i++) {
		struct ip_key *k = &h->scrapers[h->nscrapers];

		memset(k, 0, sizeof(*k));
		k->a[10] = 0xff;
		k->a[11] = 0xff;
		if (inet_pton(AF_INET, cfg->scrapers[i], k->a + 12) == 1 ||
		    inet_pton(AF_INET6, cfg->scrapers[i], k->a) == 1) {
			h->nscrapers++;
		} else {
			logmsg("--http-scraper %s: expected a numeric IPv4 or IPv6 address",
			       cfg->scrapers[i]);
			return -1;
		}
	}
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
	struct http_server *h = c->http;
	struct hconn *hc;
	unsigned int i;
	uint64_t now;

	if (!h)
		return;
	for (i = 0; i < h->nl; i++)
		MHD_run(h->l[i].mhd);
	/* Deadlines: a shut down socket wakes libmicrohttpd, which closes it. */
	now = now_ms();
	for (hc = h->conns; hc; hc = hc->next) {
		if (hc->cut || hc->deadline > now)
			continue;
		conn_cut(h, hc);
		c->stats.http_deadlines++;
	}
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
	uint64_t now = now_ms();
	struct hconn *hc;
	unsigned int i;
	int best = -1;

	if (!c->http)
		return -1;
	for (hc = c->http->conns; hc; hc = hc->next) {
		if (hc->cut)
			continue;
		t = hc->deadline > now ? hc->deadline - now : 0;
		if (t > 1000)
			t = 1000;
		if (best < 0 || (int)t < best)
			best = (int)t;
	}
	for (i = 0; i < c->http->nl; i++) {
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
	webconfig_free(&h->wc);
	free(h->cert);
	free(h->key);
	free(h->ca);
	free(h->good_pw);
	free(h->good_pw_set);
	free(h);
	c->http = NULL;
}

/* ---- its flags ------------------------------------------------------------ */

#define DEFAULT_LISTEN		"127.0.0.1:9477"

/* What the command line says, from the defaults on. */
struct http_config http_config = {
	.listen = { DEFAULT_LISTEN }, .nlisten = 1,
	.max_connections = HTTP_DEFAULT_MAX_CONNECTIONS,
	.max_per_ip = HTTP_DEFAULT_MAX_PER_IP,
	.idle_timeout_s = HTTP_DEFAULT_IDLE_TIMEOUT_S,
	.header_timeout_s = HTTP_DEFAULT_HEADER_TIMEOUT_S,
	.send_timeout_s = HTTP_DEFAULT_SEND_TIMEOUT_S,
	.reserved = HTTP_DEFAULT_RESERVED,
	.max_held_bytes = HTTP_DEFAULT_MAX_HELD_BYTES,
	.auth_cpu_ms_per_ip = HTTP_DEFAULT_AUTH_CPU_MS_PER_IP,
	.auth_cpu_ms = HTTP_DEFAULT_AUTH_CPU_MS,
};

/* --listen: the first replaces the default; 'none' stands alone. */
static int opt_listen(struct collector *c, void *conf, const char *arg)
{
	struct http_config *o = conf;

	if (!o->listen_set)
		o->nlisten = 0;
	o->listen_set = true;
	if (!strcmp(arg, "none")) {
		if (o->nlisten)
			return -EINVAL;
		o->listen_none = true;
		return 0;
	}
	if (o->listen_none || o->nlisten >= HTTP_MAX_LISTEN)
		return -EINVAL;
	o->listen[o->nlisten++] = arg;
	return 0;
}

static int opt_scraper(struct collector *c, void *conf, const char *arg)
{
	struct http_config *o = conf;

	if (o->nscrapers >= HTTP_MAX_SCRAPERS)
		return -EINVAL;
	o->scrapers[o->nscrapers++] = arg;
	return 0;
}

#define CFG(n, f, lo, hi)	OPT_UINT_AT(n, struct http_config, f, lo, hi)

static const struct opt http_opts[] = {
	OPT_CALL("listen", OPT_FN, opt_listen),
	OPT_STR_AT("web.config.file", struct http_config, web_config_file),
	CFG("http-max-connections", max_connections, 1, 100000),
	CFG("http-max-per-ip", max_per_ip, 1, 100000),
	CFG("http-idle-timeout", idle_timeout_s, 1, 3600),
	CFG("http-header-timeout", header_timeout_s, 1, 3600),
	CFG("http-send-timeout", send_timeout_s, 1, 3600),
	CFG("http-reserved", reserved, 0, 1000),
	OPT_CALL("http-scraper", OPT_FN, opt_scraper),
	OPT_SIZE_AT("http-max-held-bytes", struct http_config, max_held_bytes,
		    4096, OPT_SIZE_MAX),
	CFG("http-auth-cpu-per-ip", auth_cpu_ms_per_ip, 1, 1000),
	CFG("http-auth-cpu", auth_cpu_ms, 1, 1000),
	OPT_END,
};

const struct opt_table http_opt_table = { http_opts, &http_config };
