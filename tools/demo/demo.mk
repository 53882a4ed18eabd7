# SPDX-License-Identifier: GPL-2.0
# `make demo` (included by the top-level Makefile): builds what is missing
# (the 6.12 test kernel, the modules, the tools), boots the guest under
# QEMU, and runs tools/demo/guest-demo.sh there: statsfd-collector as an
# unprivileged user, statsfd-vmm with 2 VMs x 4 vCPUs running different
# workloads, ~10 s of `statsfd watch`, a Prometheus scrape excerpt and a
# filtered query.  The guest's output is streamed to the terminal.

DEMO_TIMEOUT ?= 600

demo: modules-6.12 tools
	@$(ROOT)/tools/demo/run-demo.sh --kernel $(TEST_KERNEL) \
		--modules-dir $(BUILD)/modules-6.12 --tools $(BUILD)/tools/bin \
		--out $(BUILD)/demo --timeout $(DEMO_TIMEOUT)

.PHONY: demo
