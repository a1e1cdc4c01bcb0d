#!/usr/bin/env bash
# cache_coherency.sh - with the cache on, readers through the mount see:
#   - writes made through the mount (same open and a fresh one), over pages
#     aheadfs has cached; a 4 KiB write drops what it covers, not the whole
#     file (the next read does not fetch the file again from the backing);
#   - writes made behind the mount (on the backing directly) once the file is
#     opened again (close-to-open), counted as a revalidation in the stats;
#   - truncates through the mount (shrink: nothing past the end; grow: zeros)
#     and a shrink behind the mount;
#   - the randomized integrity run (afs_integrity, mmap mixed in) and a
#     read-only reopen of every file it left, compared with the backing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

M=$AFS_MNT
size=$((8 << 20))
ac_mount_ext4 128
S=$AFS_SRC

# Write through the mount over cached pages.
"$AC_IO" fill "$S/w" "$size" 61
ac_hold "$M/w"
"$AC_IO" check "$M/w" 61 >/dev/null || afs_fail "[$AC_MODE] first read of w"
"$AC_IO" write "$M/w" 62 $((1 << 20 | 100)) $((300 << 10)) ||
	afs_fail "write through the mount"
"$AC_IO" write "$M/w" 62 $((5 << 20)) 4096 || afs_fail "write through the mount"
chk_w()
{
	"$AC_IO" check "$M/w" 61 64K 0 $((1 << 20 | 100)) >/dev/null &&
		"$AC_IO" check "$M/w" 62 64K $((1 << 20 | 100)) $((300 << 10)) \
			>/dev/null &&
		"$AC_IO" check "$M/w" 61 64K $(((1 << 20 | 100) + (300 << 10))) \
			$(((5 << 20) - (1 << 20 | 100) - (300 << 10))) >/dev/null &&
		"$AC_IO" check "$M/w" 62 64K $((5 << 20)) 4096 >/dev/null &&
		"$AC_IO" check "$M/w" 61 64K $((5 << 20 | 4096)) \
			$(((3 << 20) - 4096)) >/dev/null
}
chk_w || afs_fail "[$AC_MODE] stale bytes after a write through the mount"
cmp "$M/w" "$S/w" || afs_fail "[$AC_MODE] mount and backing differ after write"
js=$(ac_stats "$M/w")
ac_show "w after write" "$js"
ac_assert "$js" "g('file.size') == $size"

# Write behind the mount: seen on the next open.
"$AC_IO" fill "$S/b" "$size" 71
ac_hold "$M/b"
"$AC_IO" check "$M/b" 71 >/dev/null || afs_fail "[$AC_MODE] first read of b"
before=$(ac_get "$(ac_stats "$M/b")" revalidations)
sleep 0.05 # a later timestamp than the snapshot on coarse clocks
"$AC_IO" write "$S/b" 72 $((2 << 20)) $((192 << 10)) || afs_fail "behind write"
"$AC_IO" check "$M/b" 72 64K $((2 << 20)) $((192 << 10)) >/dev/null ||
	afs_fail "[$AC_MODE] a write behind the mount not seen on open"
"$AC_IO" check "$M/b" 71 64K 0 $((2 << 20)) >/dev/null ||
	afs_fail "[$AC_MODE] bytes before the behind write changed"
js=$(ac_stats "$M/b")
ac_assert "$js" "g('revalidations') > $before" \
	"the change behind the mount was not counted as a revalidation"
root=$(ac_stats "$M")
ac_assert "$root" "g('revalidations') > 0"

# Truncate through the mount: shrink, then grow (zeros), on cached pages.
"$AC_IO" fill "$S/t" "$size" 81
ac_hold "$M/t"
"$AC_IO" check "$M/t" 81 >/dev/null || afs_fail "[$AC_MODE] first read of t"
truncate -s $((3 << 20 | 123)) "$M/t"
[ "$(stat -c %s "$M/t")" -eq $((3 << 20 | 123)) ] || afs_fail "size after shrink"
out=$("$AC_IO" check "$M/t" 81) || afs_fail "[$AC_MODE] read after shrink"
[ "$out" = "bytes $((3 << 20 | 123)) requests 49" ] ||
	afs_fail "[$AC_MODE] after a shrink to $((3 << 20 | 123)): $out"
truncate -s $((6 << 20)) "$M/t"
"$AC_IO" check "$M/t" 81 64K 0 $((3 << 20 | 123)) >/dev/null ||
	afs_fail "[$AC_MODE] head changed by the grow"
cmp -n $(((6 << 20) - (3 << 20 | 123))) -i $((3 << 20 | 123)):0 \
	"$M/t" /dev/zero || afs_fail "[$AC_MODE] grown part is not zeros"
cmp "$M/t" "$S/t" || afs_fail "[$AC_MODE] mount and backing differ"
js=$(ac_stats "$M/t")
ac_assert "$js" "g('file.size') == $((6 << 20)) and g('file.pages') == $((6 << 20 >> 12))"

# Truncate behind the mount, then open and read.
"$AC_IO" fill "$S/tb" "$size" 91
ac_hold "$M/tb"
"$AC_IO" check "$M/tb" 91 >/dev/null || afs_fail "[$AC_MODE] first read of tb"
sleep 0.05
truncate -s $((1 << 20)) "$S/tb"
stat "$M/tb" >/dev/null
out=$("$AC_IO" check "$M/tb" 91 1M) || afs_fail "[$AC_MODE] read after behind shrink"
[ "$out" = "bytes $((1 << 20)) requests 1" ] ||
	afs_fail "[$AC_MODE] after a shrink behind the mount to 1 MiB: $out"

# The randomized integrity run with the cache on, mmap mixed in.
mkdir "$S/integ"
seed=${AFS_SEED:-$((RANDOM * 32768 + RANDOM + 1))}
"$AFS_TESTBIN/afs_integrity" -s "$seed" -n 4000 -f 4 -z $((2 << 20)) -m \
	"$M/integ" "$S/integ" ||
	afs_fail "[$AC_MODE] integrity run failed (replay: AFS_SEED=$seed)"
for f in "$S"/integ/*; do
	n=${f##*/}
	cmp "$M/integ/$n" "$f" ||
		afs_fail "[$AC_MODE] integ/$n differs on a read-only reopen (seed $seed)"
done
root=$(ac_stats "$M")
ac_assert "$root" "g('backing.errors') == 0 and g('readahead.errors') == 0"
# Last: the checks above are about bytes, these about cost.
# A small write drops the pages it covers, not the file: aheadfs keeps
# every other page (cached or as history), and reading the whole file
# again after it fetches at most the written page and one readahead
# window after it (< 3 MiB: the write is 3 MiB before EOF), not 8 MiB.
# In kernel mode the re-read's cost also depends on what the kernel kept:
# a write-only open is direct_io (wronly_io=direct), and the kernel drops
# the whole folio around a direct write's pages; folios of a FUSE file
# can hold many pages, sized by its readahead, so now and then a few pages
# beside the written one go too (counted with fincore: 8 or 9 of 2048 in the runs
# that showed it), and each gap costs aheadfs a readahead window over
# pages the kernel still holds.  The cost is then asserted only as "the
# kernel kept most of the file", said so on stdout.
"$AC_IO" fill "$S/s" "$size" 65
ac_hold "$M/s"
drops=$(ac_drops)
"$AC_IO" check "$M/s" 65 >/dev/null || afs_fail "[$AC_MODE] first read of s"
before=$(ac_get "$(ac_stats "$M/s")" backing.bytes)
"$AC_IO" write "$M/s" 66 $((5 << 20)) 4096 || afs_fail "write through the mount"
ac_assert "$(ac_stats "$M/s")" \
	"g('cache.cached_pages') + g('cache.history_pages') >= $((size / 4096 - 1))" \
	"a 4 KiB write through the mount dropped more of aheadfs's pages than it covers"
kept=$(fincore -n -r -o PAGES "$M/s")
"$AC_IO" check "$M/s" 65 64K 0 $((5 << 20)) >/dev/null &&
	"$AC_IO" check "$M/s" 66 64K $((5 << 20)) 4096 >/dev/null &&
	"$AC_IO" check "$M/s" 65 64K $((5 << 20 | 4096)) >/dev/null ||
	afs_fail "[$AC_MODE] wrong bytes after a 4 KiB write"
js=$(ac_stats "$M/s")
if ac_undisturbed "$drops"; then
	if [ "$AC_MODE" = direct ] || [ "$kept" -ge $((size / 4096 - 1)) ]; then
		ac_assert "$js" "g('backing.bytes') - $before <= 3 << 20" \
			"a 4 KiB write through the mount made the next read fetch the whole file again"
	else
		echo "[$AC_MODE] the kernel kept $kept of $((size / 4096)) pages" \
			"after the write (a folio around it went): the re-read's" \
			"cost is not asserted, only that the kernel kept most"
		[ "$kept" -ge $((size / 4096 / 2)) ] ||
			afs_fail "[$AC_MODE] a 4 KiB write through the mount left the kernel $kept of $((size / 4096)) pages"
	fi
fi
ac_umount
