# SPDX-License-Identifier: GPL-2.0
# statsfd top-level Makefile: modules, the test kernel, tests and lint.
#
#   make                  build every module against KDIR
#   make check            the full test run (both kernel legs), see README.md
#   make check-harness    prove that make check can fail, every way it should
#   make check-kcsan      the data-race leg: KUnit + race selftests under KCSAN
#   make check-kvm        KVM served by statsfd vs upstream KVM, byte for byte
#   make deb              Debian packages (debian/) in build/deb/, lintian clean
#   make check-deb        those installed in a fresh chroot, DKMS, boot, purge
#   make check-systemd    the packaged units under systemd as PID 1 (a guest)
#   make lint             checkpatch --strict, sparse C=2, clang-format
#
# Variables: KDIR (kernel build tree; default the running kernel's when it
# exists, else the 6.12 test kernel), STOCK_KDIR (the 6.1 leg's headers),
# KUNIT (a KUnit filter glob: suite or suite.case), SELFTESTS (names of
# selftests), SELFTEST_ARGS, LEGS ("6.12 6.1"), STRESS (1: full stress
# counts), GUEST_TIMEOUT, JOBS, BUILD, KCACHE (where test kernels are cached).
# Other parts of the project hook in through tools/*.mk and tools/*/*.mk.

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
include $(ROOT)/modules.mk
BUILD ?= $(ROOT)/build
JOBS ?= 2
export JOBS

# Test kernels live in a per-user cache outside any work tree, so a fresh
# clone on a machine that built them once starts warm (make distclean says
# how to drop it).
KCACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/statsfd
TEST_KDIR := $(KCACHE)/linux-6.12-debug
TEST_KERNEL := $(TEST_KDIR)/arch/x86/boot/bzImage
KCSAN_KDIR := $(KCACHE)/linux-6.12-kcsan
RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
KDIR ?= $(if $(wildcard $(RUNNING_KDIR)/Makefile),$(RUNNING_KDIR),$(TEST_KDIR))
# Found again by every make: `make demo` installs them first and then looks
# in a sub-make, where an empty value inherited from its parent must not stick.
ifeq ($(strip $(STOCK_KDIR)),)
STOCK_KDIR := $(shell ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)
endif
# The stock kernel image, its modules and busybox are unpacked into the
# cache by tools/testing/stock.sh (make stock), never installed on the host.
STOCK_REL := $(if $(STOCK_KDIR),$(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"$$/\1/p' $(STOCK_KDIR)/include/generated/utsrelease.h 2>/dev/null))
STOCK_ROOT := $(KCACHE)/stock-$(STOCK_REL)
# Derived, never inherited: a parent make that ran before the headers were
# installed exports empty or wrong values (make STOCK_KERNEL=... overrides).
STOCK_KERNEL := $(STOCK_ROOT)/boot/vmlinuz-$(STOCK_REL)
KSFT_DIR := $(BUILD)/ksrc/tools/testing/selftests

KUNIT ?=
SELFTESTS ?=
SELFTEST_ARGS ?=
LEGS ?= 6.12 6.1
GUEST_TIMEOUT ?= $(if $(filter 1,$(STRESS)),1800,900)
STRESS ?= 0
export STRESS
export BUILD KCACHE TEST_KDIR KCSAN_KDIR STOCK_KDIR KUNIT SELFTESTS SELFTEST_ARGS LEGS GUEST_TIMEOUT

T := $(ROOT)/tools/testing

all: modules

deps:
	@$(T)/deps.sh

# Only what make demo needs (no kernel source, no test-only packages).
deps-demo:
	@$(T)/deps.sh --demo

# Debian's stock 6.1 kernel image, modules and busybox for the guests,
# unpacked into $(KCACHE) (tools/testing/stock.sh).
stock:
	@$(T)/stock.sh $(KCACHE) $(STOCK_KDIR) >/dev/null

# The 6.12 debug test kernel (cached: a no-op when the stamp matches).
kernel: deps
	@$(T)/kernel.sh debug $(TEST_KDIR) $(BUILD)/logs

# The KCSAN variant for make check-kcsan (cached the same way).
kernel-kcsan: deps
	@$(T)/kernel.sh kcsan $(KCSAN_KDIR) $(BUILD)/logs

$(BUILD)/ksrc/.stamp: deps
	@$(T)/ksrc.sh $(BUILD)

ksrc: $(BUILD)/ksrc/.stamp

# Modules for KDIR, built in build/modules-<major.minor>/.  The test kernel
# is built first when it is the target and not built yet.
modules: $(if $(filter $(TEST_KDIR),$(KDIR)),kernel)
	@d=$$($(T)/modules.sh $(KDIR) $(BUILD)) && echo "modules for $(KDIR) in $$d"

modules-6.12: kernel
	@d=$$($(T)/modules.sh $(TEST_KDIR) $(BUILD)) && echo "modules for 6.12 in $$d"

modules-6.1:
	@d=$$($(T)/modules.sh $(STOCK_KDIR) $(BUILD)) && echo "modules for 6.1 in $$d"

# Static selftests into build/selftests/, plus the harness proof's
# deliberately failing one into build/selftests-harness/.
selftests: ksrc
	@$(MAKE) -s -C $(ROOT)/tools/selftests O=$(BUILD)/selftests KSFT_DIR=$(KSFT_DIR)
	@$(MAKE) -s -C $(ROOT)/tools/selftests O=$(BUILD)/selftests-harness \
		KSFT_DIR=$(KSFT_DIR) SRCDIR=$(ROOT)/tools/testing/probe

# Userspace (tools/Makefile, when it exists) into build/tools/.
tools:
	@if [ -f $(ROOT)/tools/Makefile ]; then \
		$(MAKE) -s -C $(ROOT)/tools O=$(BUILD)/tools; \
	fi

# Debian packages from debian/ (tools/deb/build.sh): dpkg-buildpackage -us
# -uc -b on a copy of the tree's files; the .debs in build/deb/, lintian
# clean.  check-deb installs them in a fresh debootstrap chroot, lets DKMS
# build for the stock 6.1 headers there, boots the stock kernel with those
# modules, runs the demo with the installed tools, then purges them.
deb: deps
	@$(ROOT)/tools/deb/build.sh $(BUILD)/deb >/dev/null

check-deb: deb stock
	@$(ROOT)/tools/deb/check-deb.sh $(BUILD)/deb $(KCACHE) $(STOCK_KDIR)

# The packaged units under a real systemd (tools/deb/check-systemd.sh), with
# the modules of make modules-6.1; make check-deb runs the same guest with
# the modules DKMS built.
check-systemd: deb stock modules-6.1
	@$(ROOT)/tools/deb/check-systemd.sh $(BUILD)/deb $(KCACHE) $(STOCK_ROOT) \
		$(BUILD)/modules-6.1 $(BUILD)/deb/check-systemd

check:
	@$(T)/check.sh

check-harness:
	@$(T)/check-harness.sh

# KCSAN instead of KASAN: every KUnit suite and the race selftests; a data
# race reported in statsfd code fails it (tools/testing/summarize.py).
check-kcsan:
	@LEGS=kcsan HOST_TESTS=0 $(T)/check.sh

# KVM served by statsfd (kvm/patches/) against upstream KVM, byte for byte,
# in a 6.12 debug guest (Documentation/statsfd-kvm.rst).
check-kvm:
	@$(T)/check-kvm.sh

LINT_DIRS := src tests tools/selftests tools/testing/probe include samples
lint: ksrc
	@$(T)/lint.sh $(BUILD) $(LINT_DIRS)

# The uapi structs in Documentation/ rewritten from the headers (kernel-doc);
# make lint fails while they differ.
docs: ksrc
	@python3 $(T)/uapi-doc.py --kernel-doc $(BUILD)/ksrc/scripts/kernel-doc

# Apply the kernel's .clang-format in place: FILES=... (default: all of ours).
format: ksrc
	@$(T)/lint.sh --fix $(BUILD) $(or $(FILES),$(LINT_DIRS))

clean:
	rm -rf $(BUILD)/modules-* $(BUILD)/selftests $(BUILD)/selftests-harness \
		$(BUILD)/tools $(BUILD)/logs $(BUILD)/guest

# Removes build/; the test kernels stay in $(KCACHE) (shared by every clone
# of this user).  Drop them too with: make distclean KCACHE_CLEAN=1
# (a cold rebuild takes 10-20 minutes each).
distclean:
	rm -rf $(BUILD)
	@if [ "$(KCACHE_CLEAN)" = 1 ]; then \
		echo "rm -rf $(KCACHE)"; rm -rf $(KCACHE); \
	else \
		echo "distclean: test kernels kept in $(KCACHE); drop them with: make distclean KCACHE_CLEAN=1"; \
	fi

# Install the modules of modules.mk built for KDIR under updates/statsfd/ (depmod
# runs only for a real install, not into DESTDIR), plus the tools, the
# collector's systemd unit and its user (tools/install.mk).  The KUnit and
# harness modules are test-only and never installed, and statsfd_vm is
# built without the tests' knobs (src/vm/Kbuild).
install: modules tools-install
	@out=$$($(T)/modules.sh $(KDIR) $(BUILD) STATSFD_VM_TEST_KNOBS=) && \
	krel=$$(modinfo -F vermagic $$out/$(firstword $(STATSFD_MODULES)).ko | cut -d" " -f1) && \
	for ko in $(addsuffix .ko,$(STATSFD_MODULES)); do \
		install -D -m 0644 $$out/$$ko \
			$(DESTDIR)/lib/modules/$$krel/updates/statsfd/$$(basename $$ko) || exit 1; \
	done && \
	$(ROOT)/tools/install-sdk.sh $(ROOT) $$out $(DESTDIR)/usr/src/statsfd/$$krel && \
	if [ -z "$(DESTDIR)" ]; then depmod -a $$krel; fi

.PHONY: all deps deps-demo stock kernel kernel-kcsan ksrc modules modules-6.12 modules-6.1 selftests tools \
	check check-harness check-kcsan check-kvm lint docs format clean distclean install deb check-deb check-systemd

# Hooks for the rest of the project (make demo, make bench, ...).
-include $(wildcard $(ROOT)/tools/*.mk $(ROOT)/tools/*/*.mk)
