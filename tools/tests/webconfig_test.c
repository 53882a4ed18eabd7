// SPDX-License-Identifier: GPL-2.0
/*
 * --web.config.file's parser (tools/collector/webconfig.c): the files
 * node_exporter accepts, and every way a file is refused, each with its
 * exact message; bcrypt checks through crypt(3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "../collector/webconfig.h"

/* bcrypt of "secret", cost 5 (fast enough for a test). */
#define HASH "$2b$05$q0r3sZn/HC7UwIVwd25qtOvUaUsFB3/iQi14X3a36QkNQQL7w14B6"

static int parse(const char *text, struct webconfig *wc, char *err)
{
	return webconfig_parse(text, strlen(text), wc, err, 512);
}

/* @text must be refused with exactly @want. */
static void refused(const char *text, const char *want, const char *what)
{
	struct webconfig wc;
	char err[512] = "";
	int r = parse(text, &wc, err);

	if (!tap_ok(r == -1 && !strcmp(err, want), "refused: %s", what))
		tap_diag("got %d '%s', want '%s'", r, err, want);
	webconfig_free(&wc);
}

static void accepted(void)
{
	struct webconfig wc;
	char err[512] = "";

	tap_ok(!parse("", &wc, err) && !wc.tls && !wc.nusers,
	       "an empty file: plain HTTP, no authentication");
	webconfig_free(&wc);
	tap_ok(!parse("# nothing\n", &wc, err) && !wc.tls && !wc.nusers,
	       "a file of comments only");
	webconfig_free(&wc);
	tap_ok(!parse("tls_server_config:\nbasic_auth_users: ~\n", &wc, err) &&
	       !wc.tls && !wc.nusers, "null sections are absent");
	webconfig_free(&wc);

	tap_ok(!parse("tls_server_config:\n"
		      "  cert_file: /etc/c.pem\n"
		      "  key_file: \"/etc/k.pem\"\n"
		      "http_server_config:\n"
		      "  http2: false\n"
		      "basic_auth_users:\n"
		      "  alice: " HASH "\n"
		      "  bob: '" HASH "'\n", &wc, err) &&
	       wc.tls && !strcmp(wc.cert_file, "/etc/c.pem") &&
	       !strcmp(wc.key_file, "/etc/k.pem") && !wc.client_ca_file &&
	       wc.client_auth == WEBCONFIG_NO_CLIENT_CERT && !wc.min_version &&
	       wc.nusers == 2 && !strcmp(wc.users[0].name, "alice") &&
	       !strcmp(wc.users[1].name, "bob") && !strcmp(wc.users[1].hash, HASH),
	       "node_exporter's example: TLS files, http2, two users in order");
	webconfig_free(&wc);

	tap_ok(!parse("tls_server_config:\n"
		      "  cert_file: c\n  key_file: k\n"
		      "  client_auth_type: RequireAndVerifyClientCert\n"
		      "  client_ca_file: ca\n  min_version: TLS13\n", &wc, err) &&
	       wc.client_auth == WEBCONFIG_REQUIRE_AND_VERIFY &&
	       !strcmp(wc.client_ca_file, "ca") && wc.min_version == 13,
	       "RequireAndVerifyClientCert with a CA, min_version TLS13");
	webconfig_free(&wc);

	tap_ok(!parse("{tls_server_config: {cert_file: c, key_file: k, "
		      "client_auth_type: VerifyClientCertIfGiven, client_ca_file: ca, "
		      "min_version: TLS12}}", &wc, err) &&
	       wc.client_auth == WEBCONFIG_VERIFY_IF_GIVEN && wc.min_version == 12,
	       "flow style, VerifyClientCertIfGiven, TLS12");
	webconfig_free(&wc);
}

static void every_refusal(void)
{
	refused("a: [b\n", "line 2: YAML: did not find expected ',' or ']'",
		"a YAML syntax error, with its line");
	refused("basic_auth_users:\n---\nbasic_auth_users:\n",
		"more than one YAML document", "two documents");
	refused("- a\n", "line 1: expected a mapping at the top level",
		"a list at the top level");
	refused("hello\n", "line 1: expected a mapping at the top level",
		"a string at the top level");
	refused("tls_server_config:\ntls_config:\n",
		"line 2: unknown key 'tls_config' (expected tls_server_config, http_server_config or basic_auth_users)",
		"an unknown key at the top level");
	refused("basic_auth_users:\nbasic_auth_users:\n",
		"line 2: web configuration: duplicate key 'basic_auth_users'",
		"a duplicate key");
	refused("? [a]\n: b\n", "line 1: web configuration: a key must be a string",
		"a key that is not a string");
	refused("tls_server_config: yes\n",
		"line 1: tls_server_config: expected a mapping",
		"a section that is not a mapping");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  certfile: c\n",
		"line 4: tls_server_config: unknown key 'certfile'",
		"an unknown TLS key");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  cipher_suites: [a]\n",
		"line 4: tls_server_config.cipher_suites is not supported by statsfd-collector",
		"a TLS key exporter-toolkit has and the collector does not");
	refused("tls_server_config:\n  cert_file: [c]\n  key_file: k\n",
		"line 2: tls_server_config.cert_file: expected a non-empty string",
		"cert_file not a string");
	refused("tls_server_config:\n  cert_file: c\n  key_file: ''\n",
		"line 3: tls_server_config.key_file: expected a non-empty string",
		"an empty key_file");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: Always\n",
		"line 4: tls_server_config.client_auth_type: expected NoClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert",
		"an unknown client_auth_type");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAnyClientCert\n",
		"line 4: tls_server_config.client_auth_type: RequireAnyClientCert is not supported (a certificate is only accepted verified)",
		"an unverified client_auth_type");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS11\n",
		"line 4: tls_server_config.min_version: expected TLS12 or TLS13 (older versions are never served)",
		"min_version below TLS 1.2");
	refused("tls_server_config:\n  key_file: k\n",
		"tls_server_config: cert_file is required", "no cert_file");
	refused("tls_server_config:\n  cert_file: c\n",
		"tls_server_config: key_file is required", "no key_file");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n",
		"tls_server_config: client_ca_file needs a client_auth_type that verifies (VerifyClientCertIfGiven or RequireAndVerifyClientCert)",
		"client_ca_file with NoClientCert");
	refused("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: VerifyClientCertIfGiven\n",
		"tls_server_config: client_auth_type needs client_ca_file to verify against",
		"a verifying client_auth_type without client_ca_file");
	refused("http_server_config:\n  http2: maybe\n",
		"line 2: http_server_config.http2: expected true or false", "http2 not a boolean");
	refused("http_server_config:\n  headers:\n    X: y\n",
		"line 2: http_server_config.headers is not supported by statsfd-collector",
		"http_server_config.headers");
	refused("http_server_config:\n  http3: true\n",
		"line 2: http_server_config: unknown key 'http3'", "an unknown HTTP key");
	refused("basic_auth_users:\n  alice: secret\n",
		"line 2: basic_auth_users.alice: expected a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)",
		"a clear-text password instead of a hash");
	refused("basic_auth_users:\n  alice: '$1$abcdefgh$0123456789012345678901'\n",
		"line 2: basic_auth_users.alice: expected a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)",
		"an MD5-crypt hash");
	refused("basic_auth_users:\n  alice: '" HASH "!'\n",
		"line 2: basic_auth_users.alice: expected a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)",
		"a bcrypt hash one character too long");
	refused("basic_auth_users:\n  'a:b': " HASH "\n",
		"line 2: basic_auth_users: a user name must be non-empty and without ':'",
		"a user name with ':'");
	refused("basic_auth_users:\n  '': " HASH "\n",
		"line 2: basic_auth_users: a user name must be non-empty and without ':'",
		"an empty user name");
	refused("basic_auth_users: [alice]\n",
		"line 1: basic_auth_users: expected a mapping", "users as a list");
}

static void files(void)
{
	char path[] = "/tmp/webconfig_test.XXXXXX", err[512] = "";
	struct webconfig wc;
	size_t i;
	FILE *f;
	int fd;

	tap_ok(webconfig_load("/nonexistent/web.yml", &wc, err, sizeof(err)) == -1 &&
	       !strcmp(err, "cannot open: No such file or directory"),
	       "refused: a file that does not exist ('%s')", err);
	webconfig_free(&wc);
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		tap_ok(0, "temporary file");
		return;
	}
	fputs("basic_auth_users:\n  alice: " HASH "\n", f);
	fflush(f);
	tap_ok(!webconfig_load(path, &wc, err, sizeof(err)) && wc.nusers == 1,
	       "a file is read and parsed");
	webconfig_free(&wc);
	for (i = 0; i <= (1u << 20); i += 16)
		fputs("# padding line.\n", f);
	fclose(f);
	tap_ok(webconfig_load(path, &wc, err, sizeof(err)) == -1 &&
	       !strcmp(err, "larger than 1048576 bytes"),
	       "refused: a file over 1 MiB ('%s')", err);
	webconfig_free(&wc);
	unlink(path);
}

int main(void)
{
	accepted();
	every_refusal();
	files();
	tap_ok(webconfig_check_password(HASH, "secret"), "the right password matches");
	tap_ok(!webconfig_check_password(HASH, "Secret"), "a wrong password does not");
	tap_ok(!webconfig_check_password(HASH, ""), "an empty password does not");
	return tap_done();
}
