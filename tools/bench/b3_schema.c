// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b3": what the schema costs a reader.  Bench-module
 * schemas of 10 to 1000 descriptors over the same 1000 values: data-only
 * reads across schema sizes (the judged figure), then each whole-file read
 * beside the data-only read of the same file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "bench.h"

void phase_b3(void)
{
	static const uint32_t descs[] = { 10, 20, 50, 100, 200, 500, 1000 };
	static char names[ARRAY_SIZE(descs)][2][32];
	const int nd = ARRAY_SIZE(descs);
	const uint32_t values = 1000;
	struct bench_set s[ARRAY_SIZE(descs)];
	static struct cont data[MAX_CONT], pair[2];
	double whole_ns[ARRAY_SIZE(descs)], beside_ns[ARRAY_SIZE(descs)];
	int bdev, n = 0, i;

	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	jbegin("b3");
	jnum("values", values);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jnum("instances_per_contender", NFD);
	for (i = 0; i < nd; i++) {
		bench_set_open(&s[i], bdev, descs[i], values);
		snprintf(names[i][0], 32, "data_%u", descs[i]);
		snprintf(names[i][1], 32, "whole_%u", descs[i]);
		cont_fds(cont_add(data, &n, names[i][0], op_pread, -1,
				  s[i].stats.data_size,
				  s[i].stats.h.data_offset, 10), s[i].fds, NFD);
	}

	/*
	 * The judged figure, data-only reads across schema sizes: only those
	 * contenders, in short rounds (well under a millisecond), so that
	 * host noise lands on all of them alike; three times the rounds.
	 */
	fprintf(stderr, "b3: data-only, %d schemas\n", n);
	measure(data, n, 3 * rounds);

	/* Then each whole-file read beside the data-only read of its file. */
	for (i = 0; i < nd; i++) {
		int m = 0;

		pair[0] = data[i];
		m = 1;
		cont_fds(cont_add(pair, &m, names[i][1], op_pread, -1,
				  s[i].stats.file_size, 0,
				  descs[i] > 200 ? 2 : 10), s[i].fds, NFD);
		fprintf(stderr, "b3: whole file, %u descriptors\n", descs[i]);
		measure(pair, 2, rounds);
		beside_ns[i] = pair[0].median;
		whole_ns[i] = pair[1].median;
	}

	jopen("schemas", '[');
	for (i = 0; i < nd; i++) {
		jopen(NULL, '{');
		jnum("num_desc", descs[i]);
		jlayout("layout", &s[i].stats);
		jnum("data_ns", data[i].median);
		jnum("data_p25_ns", data[i].p25);
		jnum("data_p75_ns", data[i].p75);
		jnum("whole_ns", whole_ns[i]);
		jnum("data_beside_whole_ns", beside_ns[i]);
		jclose('}');
		bench_set_close(&s[i]);
	}
	jclose(']');
	jend();
	close(bdev);
}
