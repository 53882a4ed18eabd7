// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench: measures statsfd against upstream KVM stats, /dev/zero and
 * text files, inside one QEMU guest (see tools/bench/README.md).
 *
 * Every phase prints one line "BENCH-JSON {...}" on stdout with all of its
 * figures; the host turns those lines into Documentation/bench/.  Progress
 * and diagnostics go to stderr.  Nothing here asserts a timing: targets are
 * judged on the host and reported, never enforced.
 *
 * This file only parses the command line and dispatches the phase.  Each
 * benchmark family is a file of its own (info.c, check.c, b1_read.c, ...,
 * b14_stall.c), on top of the shared part in bench_common.c; bench.h
 * says how to add one.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: statsfd-bench [-r rounds] PHASE [args]\n"
		"  info | check | b1 | b2 | b3 | b4 LABEL [EXITS] | b4kvm [EXITS] |\n"
		"  b5 [VMS VCPUS COLLECTOR_SECONDS] | b6 [MAX_VCPUS] |\n"
		"  b7 [BUSY_SECONDS] | b8 [EXITS] | b9 | b10 [EVENTS] |\n"
		"  b11 | b12 [SCRAPES] | b13 [VMS VCPUS SECONDS SCRAPES] |\n"
		"  b14 [SAMPLES] | b15 [VMS VCPUS SCRAPES INTERVAL_MS] |\n"
		"  b16 [VMS VCPUS SCRAPES]\n");
	exit(2);
}

/* The phase's argument @i (after its name) as a number, @def if absent. */
static unsigned long long u64_arg(int argc, char **argv, int i, unsigned long long def)
{
	return optind + i < argc ? strtoull(argv[optind + i], NULL, 0) : def;
}

/* The same for an int argument, read as atoi() reads it. */
static int num_arg(int argc, char **argv, int i, int def)
{
	return optind + i < argc ? atoi(argv[optind + i]) : def;
}

int main(int argc, char **argv)
{
	const char *phase;
	int opt;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			usage();
		rounds = atoi(optarg);
		if (rounds < 1 || rounds > MAX_ROUNDS)
			usage();
	}
	if (optind >= argc)
		usage();
	phase = argv[optind++];
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!buf)
		die("aligned_alloc");
	memset(buf, 0, BUF_SIZE);
	slots = aligned_alloc(4096, NSLOT * SLOT_SIZE);
	if (!slots)
		die("aligned_alloc");
	memset(slots, 0, NSLOT * SLOT_SIZE);

	/*
	 * One branch per phase, its arguments parsed here with their
	 * defaults.  A new family (B7, B8, ...) adds its branch at the end,
	 * before the final usage(), and its line to usage().
	 */
	if (!strcmp(phase, "info"))
		phase_info();
	else if (!strcmp(phase, "check"))
		phase_check();
	else if (!strcmp(phase, "b1"))
		phase_b1();
	else if (!strcmp(phase, "b2"))
		phase_b2();
	else if (!strcmp(phase, "b3"))
		phase_b3();
	else if (!strcmp(phase, "b4") && optind < argc)
		phase_b4(argv[optind], u64_arg(argc, argv, 1, 30000));
	else if (!strcmp(phase, "b4kvm"))
		phase_b4kvm(u64_arg(argc, argv, 0, 2000));
	else if (!strcmp(phase, "b5"))
		phase_b5(num_arg(argc, argv, 0, 1024),
			 num_arg(argc, argv, 1, 8),
			 num_arg(argc, argv, 2, 10));
	else if (!strcmp(phase, "b6"))
		phase_b6(num_arg(argc, argv, 0, 256));
	else if (!strcmp(phase, "b7"))
		phase_b7(num_arg(argc, argv, 0, 4));
	else if (!strcmp(phase, "b8"))
		phase_b8(u64_arg(argc, argv, 0, 50000));
	else if (!strcmp(phase, "b9"))
		phase_b9();
	else if (!strcmp(phase, "b10"))
		phase_b10(num_arg(argc, argv, 0, 1000));
	else if (!strcmp(phase, "b11"))
		phase_b11();
	else if (!strcmp(phase, "b12"))
		phase_b12(num_arg(argc, argv, 0, 30));
	else if (!strcmp(phase, "b13"))
		phase_b13(num_arg(argc, argv, 0, 1024),
			  num_arg(argc, argv, 1, 8),
			  num_arg(argc, argv, 2, 10),
			  num_arg(argc, argv, 3, 7));
	else if (!strcmp(phase, "b16"))
		phase_b16(num_arg(argc, argv, 0, 1024),
			  num_arg(argc, argv, 1, 8),
			  num_arg(argc, argv, 2, 7));
	else if (!strcmp(phase, "b15"))
		phase_b15(num_arg(argc, argv, 0, 32),
			  num_arg(argc, argv, 1, 8),
			  num_arg(argc, argv, 2, 30),
			  num_arg(argc, argv, 3, 2000));
	else if (!strcmp(phase, "b14"))
		phase_b14(num_arg(argc, argv, 0, 5000));
	else
		usage();
	return 0;
}
