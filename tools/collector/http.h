/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: the HTTP server's configuration, as the command line
 * gives it to http_start().
 */
#ifndef STATSFD_COLLECTOR_HTTP_H
#define STATSFD_COLLECTOR_HTTP_H

#include <stdbool.h>
#include <stdio.h>

/* How many --listen addresses one collector may serve. */
#define HTTP_MAX_LISTEN		16
/* How many --http-scraper addresses. */
#define HTTP_MAX_SCRAPERS	16

/**
 * struct http_config - what the command line says about HTTP
 * @listen: the --listen addresses: "HOST:PORT", "[V6ADDR]:PORT", ":PORT"
 * @nlisten: how many (0: no HTTP server)
 * @web_config_file: --web.config.file (TLS and basic auth), or NULL
 * @max_connections: --http-max-connections, over every address
 * @max_per_ip: --http-max-per-ip, connections from one client address
 * @idle_timeout_s: --http-idle-timeout, seconds a connection may idle
 * @header_timeout_s: --http-header-timeout, seconds from a connection (or
 *	the end of its previous request) to the end of its request headers
 * @send_timeout_s: --http-send-timeout, seconds from a request's headers
 *	to the last byte of its response
 * @reserved: --http-reserved, connection slots beyond @max_connections
 *	that only a --http-scraper address or an authenticated client keeps
 * @scrapers: the --http-scraper addresses (numeric)
 * @nscrapers: how many
 * @max_held_bytes: --http-max-held-bytes, bytes of renderings that
 *	responses still being sent may hold
 * @auth_cpu_ms_per_ip: --http-auth-cpu-per-ip, bcrypt CPU ms per second
 *	one client address may spend
 * @auth_cpu_ms: --http-auth-cpu, the same over every address
 * @listen_set: a --listen was given (the first replaces the default)
 * @listen_none: --listen none
 */
struct http_config {
	const char *listen[HTTP_MAX_LISTEN];
	unsigned int nlisten;
	const char *web_config_file;
	unsigned int max_connections;
	unsigned int max_per_ip;
	unsigned int idle_timeout_s;
	unsigned int header_timeout_s;
	unsigned int send_timeout_s;
	unsigned int reserved;
	const char *scrapers[HTTP_MAX_SCRAPERS];
	unsigned int nscrapers;
	size_t max_held_bytes;
	unsigned int auth_cpu_ms_per_ip;
	unsigned int auth_cpu_ms;
	bool listen_set;
	bool listen_none;
};

#define HTTP_DEFAULT_MAX_CONNECTIONS	256
#define HTTP_DEFAULT_MAX_PER_IP		16
#define HTTP_DEFAULT_IDLE_TIMEOUT_S	10
#define HTTP_DEFAULT_HEADER_TIMEOUT_S	5
#define HTTP_DEFAULT_SEND_TIMEOUT_S	30
#define HTTP_DEFAULT_RESERVED		4
#define HTTP_DEFAULT_MAX_HELD_BYTES	((size_t)64 << 20)
#define HTTP_DEFAULT_AUTH_CPU_MS_PER_IP	100
#define HTTP_DEFAULT_AUTH_CPU_MS	250
/*
 * SO_SNDBUF of every HTTP connection (the kernel doubles it): what a slow
 * reader holds in the kernel's send buffer, charged to the collector's
 * memory cgroup, is at most twice this, not tcp_wmem's 4 MiB.  256
 * connections then hold at most 64 MiB there.
 */
#define HTTP_SNDBUF			(128 << 10)

struct collector;
struct opt_table;

/* The HTTP flags, into @http_opt_table's struct http_config. */
extern const struct opt_table http_opt_table;
extern struct http_config http_config;

int http_start(struct collector *c, const struct http_config *cfg);
int http_write_ports(struct collector *c, FILE *f);
void http_run(struct collector *c);
int http_timeout(struct collector *c);
void http_stop(struct collector *c);

#endif /* STATSFD_COLLECTOR_HTTP_H */
