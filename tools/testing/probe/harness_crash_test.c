// SPDX-License-Identifier: GPL-2.0
/*
 * harness_crash_test - a selftest that dies of SIGSEGV, to prove a crashed
 * test turns the verdict red: the harness must report
 * global.null_dereference as failed ("terminated unexpectedly by signal
 * 11").  Used only by the "crash" probe of `make check-harness`;
 * `make check` never runs it (tools/testing/probe is copied into the guest by the
 * harness probes alone).
 */
#include "kselftest_harness.h"

TEST(null_dereference)
{
	int *ptr = NULL;
	int val;

	TH_LOG("dereferencing NULL on purpose for make check-harness");
	/*
	 * Hide the NULL from the compiler: a known NULL dereference is
	 * undefined behaviour it may turn into a trap or drop altogether;
	 * an unknown pointer must really be loaded from.
	 */
	__asm__ volatile("" : "+r"(ptr));
	val = *ptr;
	TH_LOG("still alive after reading %d through NULL", val);
}

TEST_HARNESS_MAIN
