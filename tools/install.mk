# SPDX-License-Identifier: GPL-2.0
# Install fragment for the userspace tools, for the top-level Makefile:
#   include tools/install.mk   (then `make install` depends on tools-install)
# Installs statsfd, statsfd-vmm (PREFIX/bin), statsfd-collector
# (PREFIX/sbin), the libraries libstatsfd, libstatsfd-expo and
# libstatsfd-client with their headers and pkg-config files, the man
# pages (libstatsfd(3) among them), the systemd
# service and .socket units, /etc/default/statsfd-collector (kept if it
# exists), the docs and the sysusers.d entry for the "statsfd" user.
# DESTDIR and PREFIX are honoured.

PREFIX ?= /usr/local
tools-install:
	$(MAKE) -C $(ROOT)/tools O=$(BUILD)/tools install DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)

.PHONY: tools-install
