#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves the build-time checks of the in-kernel API (include/linux/statsfd.h)
# by compiling small providers against the stock Debian 6.1 headers: the
# right stats struct builds, and each mistake the API promises to catch
# fails to build with the compiler's error (Documentation/
# statsfd-kernel-api.rst, sections 1 and 4).  Objects only: nothing is
# linked, loaded or installed.
# Usage: kapi_build_test.sh   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
# Called from make: O= in MAKEFLAGS would redirect the kernel build.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
root=$(cd "$(dirname "$0")/../.." && pwd)

kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)
if [ -z "$kdir" ]; then
	bail "stock 6.1 headers in /usr/src (tools/testing/deps.sh installs them)"
fi
tmp=$(mktemp -d /tmp/statsfd-kapi-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "ccflags-y += -I$root/include" >"$tmp/Kbuild"

# provider NAME STATS_ARG TABLE [INIT]: a provider whose source is
# initialized with STATS_ARG by INIT (statsfd_source_init_stats() unless
# given) and whose descriptor table is TABLE, in $tmp/NAME.c.
provider() {
	cat >"$tmp/$1.c" <<-EOT
	// SPDX-License-Identifier: GPL-2.0
	#include <linux/module.h>
	#include <linux/statsfd.h>

	struct a_stats { u64 x; u64 h[4]; };
	struct b_stats { u64 x; u64 h[4]; };
	struct c_stats { u32 x; u32 y; u64 h[4]; };

	$3

	static const struct statsfd_schema_def def = {
		.name = "t", .descs = descs, .num_descs = ARRAY_SIZE(descs),
		.stats_size = sizeof(struct a_stats),
	};
	static STATSFD_SCHEMA_DECLARE(schema, struct a_stats);
	static struct a_stats stats;
	static struct statsfd_source src;
	static const struct statsfd_source_ops ops = { .owner = THIS_MODULE };

	int t(void);
	int t(void)
	{
		int ret = statsfd_schema_init(&schema.schema, &def);

		return ret ?: ${4:-statsfd_source_init_stats}(&src, &schema, $2, &ops, "t");
	}
	MODULE_LICENSE("GPL");
	EOT
}

# build NAME: 0 if $tmp/NAME.o compiles; its log in $tmp/NAME.log.
build() {
	make -C "$kdir" M="$tmp" "$1.o" >"$tmp/$1.log" 2>&1
}

good_table='#define STATSFD_STATS_TYPE struct a_stats
	static const struct statsfd_desc_def descs[] = {
		STATSFD_COUNTER(x),
		STATSFD_LOGHIST(h),
	};

	#undef STATSFD_STATS_TYPE'

provider good '&stats' "$good_table"
check "a provider with the right stats struct builds" build good
[ -f "$tmp/good.o" ] || sed 's/^/#   /' "$tmp/good.log" | tail -n 20

# fails NAME WHAT PATTERN: NAME must not build, for the reason PATTERN.
fails() {
	if build "$1"; then
		check "$2: refused at build time" false
	else
		check "$2: refused at build time ($3)" grep -q "$3" "$tmp/$1.log"
		grep -q "$3" "$tmp/$1.log" || sed 's/^/#   /' "$tmp/$1.log" | grep -i error | head -n 5
	fi
}

provider wrong_stats '(struct b_stats *)&stats' "$good_table"
fails wrong_stats "statsfd_source_init_stats() given another stats struct" \
	"negative width in bit-field"
provider void_stats '(void *)&stats' "$good_table"
fails void_stats "statsfd_source_init_stats() given a void pointer" \
	"negative width in bit-field"
# The snapshot entry point takes the owner's stats too, type-checked alike.
provider good_snap '&stats' "$good_table" statsfd_source_init_snapshot_stats
check "statsfd_source_init_snapshot_stats() with the right stats struct builds" \
	build good_snap
[ -f "$tmp/good_snap.o" ] || sed 's/^/#   /' "$tmp/good_snap.log" | tail -n 20
provider wrong_snap '(struct b_stats *)&stats' "$good_table" \
	statsfd_source_init_snapshot_stats
fails wrong_snap "statsfd_source_init_snapshot_stats() given another stats struct" \
	"negative width in bit-field"
provider no_member '&stats' '#define STATSFD_STATS_TYPE struct a_stats
	static const struct statsfd_desc_def descs[] = {
		STATSFD_COUNTER(y),
	};

	#undef STATSFD_STATS_TYPE'
fails no_member "a stat naming a member the stats struct lacks" "has no member named"
provider not_u64 '&stats' '#define STATSFD_STATS_TYPE struct c_stats
	static const struct statsfd_desc_def descs[] = {
		STATSFD_COUNTER(x),
	};

	#undef STATSFD_STATS_TYPE'
fails not_u64 "a counter on a u32 member" "negative width in bit-field"
provider scalar_hist '&stats' '#define STATSFD_STATS_TYPE struct a_stats
	static const struct statsfd_desc_def descs[] = {
		STATSFD_LOGHIST(x),
	};

	#undef STATSFD_STATS_TYPE'
fails scalar_hist "a histogram on a scalar member" "subscripted value is neither array"
provider no_type '&stats' 'static const struct statsfd_desc_def descs[] = {
		STATSFD_COUNTER(x),
	};'
fails no_type "a table without STATSFD_STATS_TYPE" "STATSFD_STATS_TYPE"

# STATSFD_API_VERSION: a provider states the version it was written for
# and stops the build under any other (statsfd-kernel-api.rst, "API
# version"); the sample says 3.
provider api_current '&stats' "#if STATSFD_API_VERSION != 3
	#error \"written for statsfd kernel API version 3\"
	#endif
	$good_table"
check "a provider written for API version 3 builds" build api_current
provider api_old '&stats' "#if STATSFD_API_VERSION != 2
	#error \"written for statsfd kernel API version 2\"
	#endif
	$good_table"
fails api_old "a provider written for API version 2" \
	"written for statsfd kernel API version 2"
finish
