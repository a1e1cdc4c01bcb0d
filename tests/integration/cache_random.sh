#!/usr/bin/env bash
# cache_random.sh - seeded random 8 KiB reads over 128 MiB files, of which
# under 5 MiB is read.  Random reads must cost what they cost on the
# backing.  Three files, each read once:
#   grid     600 reads at distinct 16 KiB-aligned offsets (never 0): no read
#            is next to another, so nothing looks like a stream.  No
#            readahead window may open (read_mode=direct: every read is
#            classified random), and the backing bytes are the pages read.
#   header   the same after one 8 KiB read of the file's head through
#            another open (a program that checks a header first): that read
#            may open the initial window at page 0 (a sequential start, by
#            rule), and nothing else: the random reads after it stay random.
#   header1  the same with the head read on the random reader's own fd.
#   uniform  600 reads at any page-aligned offset but 0: a few land right
#            after earlier ones and may legitimately look like a stream to
#            the context rule (its windows are printed); the backing bytes
#            stay within 1.1 x the distinct pages touched.
# read_mode=direct is the exact check: aheadfs sees each 8 KiB read as
# issued.  In kernel mode the kernel's page cache sits on top and its own
# readahead decides what reaches aheadfs (printed: it may ask a little
# more); aheadfs must add nothing to what it was asked (amplification), and
# reads its random misses around its cache (random_around).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

size=$((128 << 20))
head_win=$((128 << 10)) # the most an initial window for 8 KiB may read
AC_SOFT=1 # every file's figures, then the verdict
ac_mount_ext4 600
for f in grid header header1 uniform; do
	"$AC_IO" fill "$AFS_SRC/$f" "$size" 31
	ac_hold "$AFS_MNT/$f"
	grid=(16K)
	slack=0
	[ "$f" != uniform ] || grid=()
	[ "$f" != header1 ] || grid=(16K 1) slack=$head_win
	if [ "$f" = header ]; then
		"$AC_IO" check "$AFS_MNT/$f" 31 8K 0 8K >/dev/null ||
			afs_fail "[$AC_MODE] header read returned wrong bytes"
		slack=$head_win
	fi
	out=$("$AC_IO" random "$AFS_MNT/$f" 31 600 8K 4242 "$size" "${grid[@]}") ||
		afs_fail "[$AC_MODE] $f: random reads returned wrong bytes"
	rounded=${out##* }
	js=$(ac_stats "$AFS_MNT/$f")
	ac_show "$f" "$js"
	echo "random $f [$AC_MODE]: $out; backing bytes" \
		"$(ac_get "$js" backing.bytes), decisions" \
		"$(ac_get "$js" readahead.decisions)"
	ac_assert "$js" "g('cache.errors') == 0 and g('readahead.errors') == 0"
	ac_assert "$js" "0 < g('backing.bytes') <= g('cache.hit_bytes') * 11 // 10 + $slack" \
		"$f: aheadfs read more than 1.1 x what it served"
	if [ "$AC_MODE" = direct ]; then
		ac_assert "$js" "$rounded <= g('backing.bytes') <= $rounded * 11 // 10 + $slack" \
			"$f: backing bytes not within 1.1 x the pages read"
		ac_assert "$js" "g('random_around') == 0" \
			"$f: direct mode read random misses around its cache"
	else
		# Random misses are read straight into the reply (nothing
		# inserted for them); each is a random decision.
		ac_assert "$js" "0 < g('random_around') <= g('readahead.random')" \
			"$f: random misses not read around the cache"
	fi
	case "$f.$AC_MODE" in
	grid.direct)
		ac_assert "$js" "g('readahead.windows') == 0 and g('readahead.async') == 0 and g('readahead.async_pages') == 0" \
			"random reads opened readahead windows"
		ac_assert "$js" "g('readahead.random') == 600" \
			"not every read was classified random"
		;;
	header.direct | header1.direct)
		ac_assert "$js" "g('readahead.windows') <= 1 and g('readahead.async') == 0 and g('readahead.stream') == 0 and g('readahead.random') >= 599" \
			"random reads after a head read got readahead windows"
		;;
	grid.kernel | header.kernel | header1.kernel)
		ac_assert "$js" "g('readahead.async') == 0 and g('readahead.stream') == 0 and g('readahead.random') > 0" \
			"random reads through the kernel got stream or async readahead"
		;;
	esac
done
ac_umount
ac_soft_end
