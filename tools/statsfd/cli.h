/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd CLI: the sources it reads and how it finds them.
 */
#ifndef STATSFD_CLI_H
#define STATSFD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "statsfd.h"
#include "statsfd_json.h"

/**
 * struct cli_source - one stats fd the CLI reads
 * @sf: parsed handle (owns the fd unless it came from --fd)
 * @labels: provider, target, vm, vcpu
 * @origin: where it came from, e.g. "pid 1234 fd 12 (anon_inode:kvm-vm)"
 * @cur: latest values
 * @prev: values of the previous sample (watch)
 */
struct cli_source {
	struct statsfd *sf;
	struct statsfd_labels labels;
	char origin[96];
	uint64_t *cur;
	uint64_t *prev;
};

/**
 * struct cli_sources - every source named on the command line
 * @v: the sources
 * @n: how many
 * @cap: allocated entries
 */
struct cli_sources {
	struct cli_source *v;
	unsigned int n;
	unsigned int cap;
};

int cli_add_device(struct cli_sources *s, const char *path);
int cli_add_pid(struct cli_sources *s, const char *pid);
int cli_add_fd(struct cli_sources *s, const char *fd);
int cli_add_file(struct cli_sources *s, const char *path);
int cli_add_socket(struct cli_sources *s, const char *path, int timeout_ms);
int cli_add_handle(struct cli_sources *s, struct statsfd *sf,
		   const struct statsfd_labels *l, const char *origin);
void cli_free_sources(struct cli_sources *s);

#endif /* STATSFD_CLI_H */
