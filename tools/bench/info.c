// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "info": no benchmark, the conditions of the run.  The
 * guest's kernel, command line, clocksource and CPUs, the rounds and warm-up
 * of every measurement, and what one clock_gettime() costs, so the timer can
 * be seen to be small beside what it times.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static void read_line(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, size, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

void phase_info(void)
{
	char line[512];

	jbegin("info");
	read_line("/proc/version", line, sizeof(line));
	jstr("kernel", line);
	read_line("/proc/cmdline", line, sizeof(line));
	jstr("cmdline", line);
	read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  line, sizeof(line));
	jstr("clocksource", line);
	jnum("cpus", sysconf(_SC_NPROCESSORS_ONLN));
	jnum("rounds", rounds);
	jnum("warmup", warmup);
	{
		/* Cost of the timer itself, so it can be seen to be small. */
		double t0 = now_ns(), t1;
		int i;

		for (i = 0; i < 10000; i++)
			now_ns();
		t1 = now_ns();
		jnum("clock_gettime_ns", (t1 - t0) / 10000);
	}
	jend();
}
