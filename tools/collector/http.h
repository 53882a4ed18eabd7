/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd-collector: the HTTP server's configuration, as the command line
 * gives it to http_start().
 */
#ifndef STATSFD_COLLECTOR_HTTP_H
#define STATSFD_COLLECTOR_HTTP_H

#include <stdio.h>

/* How many --listen addresses one collector may serve. */
#define HTTP_MAX_LISTEN		16

/**
 * struct http_config - what the command line says about HTTP
 * @listen: the --listen addresses: "HOST:PORT", "[V6ADDR]:PORT", ":PORT"
 * @nlisten: how many (0: no HTTP server)
 * @web_config_file: --web.config.file (TLS and basic auth), or NULL
 * @max_connections: --http-max-connections, over every address
 * @max_per_ip: --http-max-per-ip, connections from one client address
 * @idle_timeout_s: --http-idle-timeout, seconds a connection may idle
 */
struct http_config {
	const char *listen[HTTP_MAX_LISTEN];
	unsigned int nlisten;
	const char *web_config_file;
	unsigned int max_connections;
	unsigned int max_per_ip;
	unsigned int idle_timeout_s;
};

#define HTTP_DEFAULT_MAX_CONNECTIONS	256
#define HTTP_DEFAULT_MAX_PER_IP		16
#define HTTP_DEFAULT_IDLE_TIMEOUT_S	10

struct collector;

int http_start(struct collector *c, const struct http_config *cfg);
int http_write_ports(struct collector *c, FILE *f);
void http_run(struct collector *c);
int http_timeout(struct collector *c);
void http_stop(struct collector *c);

#endif /* STATSFD_COLLECTOR_HTTP_H */
