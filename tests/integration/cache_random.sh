#!/usr/bin/env bash
# cache_random.sh - 600 seeded random 8 KiB reads (page-aligned) over a
# 128 MiB file: under 5 MiB of it is read.  Random reads must cost what they
# cost on the backing: no readahead window, the reads classified random, and
# backing bytes within 1.1 x the distinct pages the reads touched.
# read_mode=direct is the exact check (aheadfs sees each 8 KiB read as
# issued).  In kernel mode the kernel's page cache sits on top and its own
# readahead decides what reaches aheadfs; aheadfs must still open no window
# of its own, and the backing bytes are checked against what the kernel
# asked for (printed: the kernel's own readahead may ask a little more).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

size=$((128 << 20))
ac_mount_ext4 200
"$AC_IO" fill "$AFS_SRC/rand" "$size" 31
out=$("$AC_IO" random "$AFS_MNT/rand" 31 600 8K 4242) ||
	afs_fail "[$AC_MODE] random reads returned wrong bytes"
rounded=${out##* }
echo "random [$AC_MODE]: $out"
js=$(ac_stats "$AFS_MNT/rand")
ac_show rand "$js"
ac_assert "$js" "g('readahead.windows') == 0 and g('readahead.async') == 0 and g('readahead.async_pages') == 0" \
	"random reads opened readahead windows"
ac_assert "$js" "g('readahead.random') > 0" "no read was classified random"
ac_assert "$js" "g('cache.errors') == 0 and g('readahead.errors') == 0"
if [ "$AC_MODE" = direct ]; then
	ac_assert "$js" "0 < g('backing.bytes') <= $rounded * 11 // 10" \
		"backing bytes above 1.1 x the pages read"
	ac_assert "$js" "0 < g('backing.amplification') <= 1.1" \
		"read amplification above 1.1"
else
	# What the kernel asked for is what aheadfs served (hit_bytes):
	# aheadfs added nothing to it.
	ac_assert "$js" "0 < g('backing.amplification') <= 1.1" \
		"aheadfs read more than the kernel asked for"
	ac_assert "$js" "g('backing.bytes') <= $size // 4" \
		"kernel mode read a large part of the file"
fi
afs_umount
