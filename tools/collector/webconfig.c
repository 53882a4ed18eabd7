// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: the --web.config.file parser.
 *
 * The file has node_exporter's format (Prometheus exporter-toolkit's
 * web configuration): YAML with tls_server_config, http_server_config and
 * basic_auth_users.  libyaml builds the document; this file walks it and
 * is strict the way exporter-toolkit is: an unknown key is an error at
 * startup, never ignored, so a typo cannot silently leave the collector
 * without TLS or authentication.  Keys exporter-toolkit knows but this
 * collector does not implement are errors too, named as such.
 */
#include <crypt.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "webconfig.h"

/* Far larger than any sensible web configuration. */
#define WEBCONFIG_MAX_SIZE	(1u << 20)

struct ctx {
	yaml_document_t *doc;
	struct webconfig *wc;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	size_t off = 0;
	va_list ap;

	if (n)
		off = (size_t)snprintf(x->err, x->errlen, "line %zu: ",
				       (size_t)n->start_mark.line + 1);
	if (off >= x->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(x->err + off, x->errlen - off, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* YAML's plain null (an empty value, "~" or "null"): the key is absent. */
static bool is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);

	return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
		!strcmp(s, "NULL"));
}

typedef int (*pair_fn)(struct ctx *x, const char *section, const char *key,
		       yaml_node_t *k, yaml_node_t *v);

/*
 * Calls @fn for every key of the mapping @m (named @section in errors);
 * keys must be scalars and appear once.
 */
static int each_pair(struct ctx *x, yaml_node_t *m, const char *section,
		     pair_fn fn)
{
	yaml_node_pair_t *p, *q;

	if (m->type != YAML_MAPPING_NODE)
		return fail(x, m, "%s: expected a mapping", section);
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
		const char *key = scalar(k);

		if (!key)
			return fail(x, k, "%s: a key must be a string", section);
		for (q = m->data.mapping.pairs.start; q < p; q++)
			if (!strcmp(scalar(yaml_document_get_node(x->doc, q->key)) ?: "", key))
				return fail(x, k, "%s: duplicate key '%s'", section, key);
		if (fn(x, section, key, k, v))
			return -1;
	}
	return 0;
}

/* A string value: a scalar, not null, copied into *@out. */
static int string_value(struct ctx *x, const char *section, const char *key,
			yaml_node_t *v, char **out)
{
	const char *s = scalar(v);

	if (!s || is_null(v) || !*s)
		return fail(x, v, "%s.%s: expected a non-empty string", section, key);
	*out = strdup(s);
	if (!*out)
		return fail(x, v, "out of memory");
	return 0;
}

static const char *const unsupported_tls[] = {
	"cert", "key", "cipher_suites", "curve_preferences", "max_version",
	"prefer_server_cipher_suites", "client_allowed_sans",
};

static int tls_pair(struct ctx *x, const char *section, const char *key,
		    yaml_node_t *k, yaml_node_t *v)
{
	struct webconfig *wc = x->wc;
	const char *s;
	size_t i;

	if (!strcmp(key, "cert_file"))
		return string_value(x, section, key, v, &wc->cert_file);
	if (!strcmp(key, "key_file"))
		return string_value(x, section, key, v, &wc->key_file);
	if (!strcmp(key, "client_ca_file"))
		return string_value(x, section, key, v, &wc->client_ca_file);
	if (!strcmp(key, "client_auth_type")) {
		s = scalar(v);
		if (s && !strcmp(s, "NoClientCert"))
			wc->client_auth = WEBCONFIG_NO_CLIENT_CERT;
		else if (s && !strcmp(s, "VerifyClientCertIfGiven"))
			wc->client_auth = WEBCONFIG_VERIFY_IF_GIVEN;
		else if (s && !strcmp(s, "RequireAndVerifyClientCert"))
			wc->client_auth = WEBCONFIG_REQUIRE_AND_VERIFY;
		else if (s && (!strcmp(s, "RequestClientCert") ||
			       !strcmp(s, "RequireAnyClientCert")))
			return fail(x, v, "%s.%s: %s is not supported (a certificate is only accepted verified)",
				    section, key, s);
		else
			return fail(x, v, "%s.%s: expected NoClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert",
				    section, key);
		return 0;
	}
	if (!strcmp(key, "min_version")) {
		s = scalar(v);
		if (s && !strcmp(s, "TLS12"))
			wc->min_version = 12;
		else if (s && !strcmp(s, "TLS13"))
			wc->min_version = 13;
		else
			return fail(x, v, "%s.%s: expected TLS12 or TLS13 (older versions are never served)",
				    section, key);
		return 0;
	}
	for (i = 0; i < sizeof(unsupported_tls) / sizeof(unsupported_tls[0]); i++)
		if (!strcmp(key, unsupported_tls[i]))
			return fail(x, k, "%s.%s is not supported by statsfd-collector",
				    section, key);
	return fail(x, k, "%s: unknown key '%s'", section, key);
}

static int http_server_pair(struct ctx *x, const char *section, const char *key,
			    yaml_node_t *k, yaml_node_t *v)
{
	const char *s = scalar(v);

	/* HTTP/1.1 is served either way; the key is accepted for node_exporter's files. */
	if (!strcmp(key, "http2")) {
		if (!s || (strcmp(s, "true") && strcmp(s, "false")))
			return fail(x, v, "%s.%s: expected true or false", section, key);
		return 0;
	}
	if (!strcmp(key, "headers"))
		return fail(x, k, "%s.%s is not supported by statsfd-collector",
			    section, key);
	return fail(x, k, "%s: unknown key '%s'", section, key);
}

/* A bcrypt hash crypt(3) accepts: $2a$, $2b$ or $2y$, cost, 53 characters. */
static bool is_bcrypt(const char *h)
{
	static const char b64[] =
		"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	size_t i;

	if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) ||
	    h[3] != '$' || h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9' ||
	    h[6] != '$')
		return false;
	for (i = 7; i < 60; i++)
		if (!strchr(b64, h[i]))
			return false;
	return true;
}

static int user_pair(struct ctx *x, const char *section, const char *key,
		     yaml_node_t *k, yaml_node_t *v)
{
	struct webconfig *wc = x->wc;
	struct webconfig_user *u;
	const char *h = scalar(v);

	if (!*key || strchr(key, ':'))
		return fail(x, k, "%s: a user name must be non-empty and without ':'",
			    section);
	if (!h || !is_bcrypt(h))
		return fail(x, v, "%s.%s: expected a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)",
			    section, key);
	u = realloc(wc->users, (wc->nusers + 1) * sizeof(*u));
	if (!u)
		return fail(x, v, "out of memory");
	wc->users = u;
	u += wc->nusers;
	u->name = strdup(key);
	u->hash = strdup(h);
	wc->nusers++;
	if (!u->name || !u->hash)
		return fail(x, v, "out of memory");
	return 0;
}

static int section_pair(struct ctx *x, const char *section, const char *key,
			yaml_node_t *k, yaml_node_t *v)
{
	if (strcmp(key, "tls_server_config") && strcmp(key, "http_server_config") &&
	    strcmp(key, "basic_auth_users"))
		return fail(x, k, "unknown key '%s' (expected tls_server_config, http_server_config or basic_auth_users)",
			    key);
	if (is_null(v))
		return 0;
	if (!strcmp(key, "tls_server_config")) {
		x->wc->tls = true;
		return each_pair(x, v, key, tls_pair);
	}
	if (!strcmp(key, "http_server_config"))
		return each_pair(x, v, key, http_server_pair);
	return each_pair(x, v, key, user_pair);
}

/* What tls_server_config's keys must say together (as exporter-toolkit). */
static int check_tls(struct ctx *x)
{
	struct webconfig *wc = x->wc;

	if (!wc->tls)
		return 0;
	if (!wc->cert_file)
		return fail(x, NULL, "tls_server_config: cert_file is required");
	if (!wc->key_file)
		return fail(x, NULL, "tls_server_config: key_file is required");
	if (wc->client_ca_file && wc->client_auth == WEBCONFIG_NO_CLIENT_CERT)
		return fail(x, NULL, "tls_server_config: client_ca_file needs a client_auth_type that verifies (VerifyClientCertIfGiven or RequireAndVerifyClientCert)");
	if (!wc->client_ca_file && wc->client_auth != WEBCONFIG_NO_CLIENT_CERT)
		return fail(x, NULL, "tls_server_config: client_auth_type needs client_ca_file to verify against");
	return 0;
}

/**
 * webconfig_parse() - parse a web configuration from memory
 * @text: the YAML text
 * @len: its length
 * @wc: filled in; zeroed first, webconfig_free() it even on failure
 * @err: on failure, why ("line N: ..." when a line is to blame)
 * @errlen: size of @err
 *
 * An empty file is a valid configuration: plain HTTP, no authentication.
 *
 * Return: 0, or -1 with @err set.
 */
int webconfig_parse(const char *text, size_t len, struct webconfig *wc,
		    char *err, size_t errlen)
{
	struct ctx x = { .wc = wc, .err = err, .errlen = errlen };
	yaml_document_t doc, extra;
	yaml_parser_t parser;
	yaml_node_t *root;
	int ret = -1;

	memset(wc, 0, sizeof(*wc));
	if (!yaml_parser_initialize(&parser))
		return fail(&x, NULL, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		fail(&x, NULL, "line %zu: YAML: %s", (size_t)parser.problem_mark.line + 1,
		     parser.problem ?: "syntax error");
		yaml_parser_delete(&parser);
		return -1;
	}
	x.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (root) {
		if (!yaml_parser_load(&parser, &extra)) {
			fail(&x, NULL, "line %zu: YAML: %s",
			     (size_t)parser.problem_mark.line + 1,
			     parser.problem ?: "syntax error");
			goto out;
		}
		if (yaml_document_get_root_node(&extra)) {
			yaml_document_delete(&extra);
			fail(&x, NULL, "more than one YAML document");
			goto out;
		}
		yaml_document_delete(&extra);
	}
	if (!root || is_null(root))
		ret = 0;
	else if (root->type != YAML_MAPPING_NODE)
		fail(&x, root, "expected a mapping at the top level");
	else if (!each_pair(&x, root, "web configuration", section_pair))
		ret = check_tls(&x);
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return ret;
}

/**
 * webconfig_load() - read and parse a web configuration file
 * @path: the file (read now: the collector calls this before it drops
 *	privileges, so the file may be readable by root only)
 * @wc: as for webconfig_parse()
 * @err: as for webconfig_parse(), without the path
 * @errlen: size of @err
 *
 * Return: 0, or -1 with @err set.
 */
int webconfig_load(const char *path, struct webconfig *wc, char *err,
		   size_t errlen)
{
	struct ctx x = { .err = err, .errlen = errlen };
	char *text;
	size_t len;
	FILE *f;
	int ret;

	memset(wc, 0, sizeof(*wc));
	f = fopen(path, "re");
	if (!f)
		return fail(&x, NULL, "cannot open: %s", strerror(errno));
	text = malloc(WEBCONFIG_MAX_SIZE + 1);
	if (!text) {
		fclose(f);
		return fail(&x, NULL, "out of memory");
	}
	len = fread(text, 1, WEBCONFIG_MAX_SIZE + 1, f);
	ret = ferror(f);
	fclose(f);
	if (ret) {
		free(text);
		return fail(&x, NULL, "cannot read");
	}
	if (len > WEBCONFIG_MAX_SIZE) {
		free(text);
		return fail(&x, NULL, "larger than %u bytes", WEBCONFIG_MAX_SIZE);
	}
	ret = webconfig_parse(text, len, wc, err, errlen);
	free(text);
	return ret;
}

/**
 * webconfig_free() - free what a parse allocated
 * @wc: a configuration from webconfig_parse() or webconfig_load()
 */
void webconfig_free(struct webconfig *wc)
{
	unsigned int i;

	for (i = 0; i < wc->nusers; i++) {
		free(wc->users[i].name);
		free(wc->users[i].hash);
	}
	free(wc->users);
	free(wc->cert_file);
	free(wc->key_file);
	free(wc->client_ca_file);
	memset(wc, 0, sizeof(*wc));
}

/**
 * webconfig_check_password() - does @password match the bcrypt @hash?
 * @hash: a hash from basic_auth_users
 * @password: what the client sent
 *
 * crypt(3) (libxcrypt) computes the hash; the comparison takes the same
 * time wherever the strings differ.  This costs what the hash's cost
 * factor says (tens of milliseconds at cost 10).
 *
 * Return: true on a match.
 */
bool webconfig_check_password(const char *hash, const char *password)
{
	static struct crypt_data cd;
	const char *h = crypt_r(password, hash, &cd);
	unsigned char diff = 0;
	size_t i, n = strlen(hash);

	if (!h || strlen(h) != n)
		return false;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)(h[i] ^ hash[i]);
	return !diff;
}
