# SPDX-License-Identifier: GPL-2.0
# `make demo` (included by the top-level Makefile): installs what the demo
# needs (tools/testing/deps.sh --demo), builds the modules against Debian's
# packaged 6.1 headers (seconds) and the tools, boots Debian's stock kernel
# under QEMU, and runs tools/demo/guest-demo.sh there: statsfd-collector as an
# unprivileged user, statsfd-vmm with 2 VMs x 4 vCPUs running different
# workloads, ~10 s of `statsfd watch`, a Prometheus scrape excerpt and a
# filtered query.  The guest's output is streamed to the terminal.

DEMO_TIMEOUT ?= 600

# The stock kernel, not the debug test kernel: a newcomer's first command
# must not wait for a kernel build (make check has the debug kernel).
# Sub-makes: the stock kernel's paths are only known once deps-demo ran.
demo: deps-demo
	@$(MAKE) -s stock modules-6.1 tools
	@$(MAKE) -s demo-run

demo-run:
	@$(ROOT)/tools/demo/run-demo.sh --kernel $(STOCK_KERNEL) --busybox $(STOCK_ROOT)/bin/busybox \
		--modules-dir $(BUILD)/modules-6.1 --tools $(BUILD)/tools/bin \
		--out $(BUILD)/demo --timeout $(DEMO_TIMEOUT)

.PHONY: demo demo-run
