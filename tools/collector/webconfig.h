/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: --web.config.file, the exporter-toolkit web
 * configuration (TLS and basic auth) that node_exporter reads.
 */
#ifndef STATSFD_COLLECTOR_WEBCONFIG_H
#define STATSFD_COLLECTOR_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* tls_server_config.client_auth_type: the values that are supported. */
enum webconfig_client_auth {
	WEBCONFIG_NO_CLIENT_CERT,		/* NoClientCert (default) */
	WEBCONFIG_VERIFY_IF_GIVEN,		/* VerifyClientCertIfGiven */
	WEBCONFIG_REQUIRE_AND_VERIFY,		/* RequireAndVerifyClientCert */
};

/**
 * struct webconfig_user - one entry of basic_auth_users
 * @name: the user name
 * @hash: its bcrypt hash ($2a$, $2b$ or $2y$), checked with crypt(3)
 */
struct webconfig_user {
	char *name;
	char *hash;
};

/**
 * struct webconfig - a parsed web configuration file
 * @tls: tls_server_config is present: serve HTTPS only
 * @cert_file: tls_server_config.cert_file
 * @key_file: tls_server_config.key_file
 * @client_ca_file: tls_server_config.client_ca_file, or NULL
 * @client_auth: tls_server_config.client_auth_type
 * @min_version: tls_server_config.min_version: 12 or 13 (TLS 1.x), 0 unset
 * @users: basic_auth_users, in file order
 * @nusers: how many (0: no authentication)
 */
struct webconfig {
	bool tls;
	char *cert_file;
	char *key_file;
	char *client_ca_file;
	enum webconfig_client_auth client_auth;
	unsigned int min_version;
	struct webconfig_user *users;
	unsigned int nusers;
};

int webconfig_parse(const char *text, size_t len, struct webconfig *wc,
		    char *err, size_t errlen);
int webconfig_load(const char *path, struct webconfig *wc, char *err,
		   size_t errlen);
void webconfig_free(struct webconfig *wc);
bool webconfig_check_password(const char *hash, const char *password);

#endif /* STATSFD_COLLECTOR_WEBCONFIG_H */
