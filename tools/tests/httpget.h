/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One HTTP/1.0 GET to the collector on loopback, for the host tests.
 */
#ifndef STATSFD_TEST_HTTPGET_H
#define STATSFD_TEST_HTTPGET_H

char *test_http_get(unsigned int port, const char *path, double *secs);
char *test_http_get_wait(unsigned int port, const char *path, double *secs,
			 int silence_ms);

#endif /* STATSFD_TEST_HTTPGET_H */
