// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b3": what the schema costs a reader.  Bench-module
 * schemas of 10 to 1000 descriptors over the same 1000 values, each with
 * snapshots off and on (STATSFD_BENCH_SNAPSHOT: update windows, and
 * sample_ns and generation after the values): data-only reads across
 * schema sizes (the judged figure, for each of the two kinds), then each
 * whole-file read beside the data-only read of the same file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "bench.h"
#include "statsfd_bench.h"

#define B3_KINDS	2	/* snapshots off, on */

void phase_b3(void)
{
	static const uint32_t descs[] = { 10, 20, 50, 100, 200, 500, 1000 };
	static const uint32_t flags[B3_KINDS] = { 0, STATSFD_BENCH_SNAPSHOT };
	static const char *const kind[B3_KINDS] = { "", "snap_" };
	static char names[B3_KINDS][ARRAY_SIZE(descs)][2][32];
	const int nd = ARRAY_SIZE(descs);
	const uint32_t values = 1000;
	static struct bench_set s[B3_KINDS][ARRAY_SIZE(descs)];
	static struct cont data[MAX_CONT], pair[2];
	double whole_ns[B3_KINDS][ARRAY_SIZE(descs)];
	double beside_ns[B3_KINDS][ARRAY_SIZE(descs)];
	int bdev, n = 0, i, f;

	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	jbegin("b3");
	jnum("values", values);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jnum("instances_per_contender", NFD);
	/* data[f * nd + i]: kind f, schema i. */
	for (f = 0; f < B3_KINDS; f++) {
		for (i = 0; i < nd; i++) {
			struct bench_set *b = &s[f][i];

			bench_set_open(b, bdev, descs[i], values, flags[f]);
			snprintf(names[f][i][0], 32, "%sdata_%u", kind[f],
				 descs[i]);
			snprintf(names[f][i][1], 32, "%swhole_%u", kind[f],
				 descs[i]);
			cont_fds(cont_add(data, &n, names[f][i][0], op_pread,
					  -1, b->stats.data_size,
					  b->stats.h.data_offset, 2),
				 b->fds, NFD);
		}
	}

	/*
	 * The judged figure, data-only reads across schema sizes: only those
	 * contenders (both kinds, so that each pair off/on is also measured
	 * side by side), in short rounds (about a millisecond: batches of 2
	 * reads, since an 8000 B read takes tens of microseconds under TCG
	 * now that it is copied out with copy_to_user()), so that host noise
	 * lands on all of them alike; three times the rounds.
	 */
	fprintf(stderr, "b3: data-only, %d schemas\n", n);
	measure(data, n, 3 * rounds);

	/* Then each whole-file read beside the data-only read of its file. */
	for (f = 0; f < B3_KINDS; f++) {
		for (i = 0; i < nd; i++) {
			int m;

			pair[0] = data[f * nd + i];
			m = 1;
			cont_fds(cont_add(pair, &m, names[f][i][1], op_pread,
					  -1, s[f][i].stats.file_size, 0, 2),
				 s[f][i].fds, NFD);
			fprintf(stderr, "b3: whole file, %u descriptors%s\n",
				descs[i], f ? ", snapshots" : "");
			measure(pair, 2, rounds);
			beside_ns[f][i] = pair[0].median;
			whole_ns[f][i] = pair[1].median;
		}
	}

	for (f = 0; f < B3_KINDS; f++) {
		jopen(f ? "snap_schemas" : "schemas", '[');
		for (i = 0; i < nd; i++) {
			const struct cont *d = &data[f * nd + i];

			jopen(NULL, '{');
			jnum("num_desc", descs[i]);
			jnum("flags", flags[f]);
			jlayout("layout", &s[f][i].stats);
			jnum("data_ns", d->median);
			jnum("data_p25_ns", d->p25);
			jnum("data_p75_ns", d->p75);
			jnum("whole_ns", whole_ns[f][i]);
			jnum("data_beside_whole_ns", beside_ns[f][i]);
			jclose('}');
			bench_set_close(&s[f][i]);
		}
		jclose(']');
	}
	jend();
	close(bdev);
}
