# SPDX-License-Identifier: GPL-2.0
#
# The modules statsfd ships, in load order (the core first: the providers
# link against its symbols; unload in the reverse order).  Each entry is
# DIR/NAME: NAME.ko is built in DIR.  The one list that the Kbuild, `make
# install`, dkms.conf, the test manifest (tools/testing/manifest.py), the
# test and demo guests (tools/testing/qemu/run-guest writes it into their
# /lib/statsfd/modules.list) read; the KUnit and harness modules are
# test-only and not in it.
STATSFD_MODULES := src/core/statsfd src/vm/statsfd_vm src/host/statsfd_host
