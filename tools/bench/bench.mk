# SPDX-License-Identifier: GPL-2.0
#
# make bench: the statsfd benchmarks against upstream KVM, /dev/zero and
# text files, in one QEMU TCG guest running the stock Debian 6.1 kernel.
# Writes Documentation/bench/{results.md,results.json,b3.png,b6.png} and
# prints the table.  make bench-report re-renders them from the last run's
# build/bench/results.txt without booting anything.
# See tools/bench/run-bench for the knobs (BENCH_ROUNDS, BENCH_VMS, ...).

bench: deps
	@BENCH_BUILD=$(BUILD) $(ROOT)/tools/bench/run-bench

bench-report:
	@BENCH_BUILD=$(BUILD) $(ROOT)/tools/bench/run-bench --report-only

.PHONY: bench bench-report
