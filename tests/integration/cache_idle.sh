#!/usr/bin/env bash
# cache_idle.sh - aheadfs's cache of a file outlives the kernel forgetting
# its inode (fs/data/data.h, "Idle files"):
#   - a file read and closed, then forgotten by the kernel (drop_caches: the
#     stats say the file went idle), is read again from aheadfs's cache: the
#     file's misses and the mount's backing reads stay put, the loop
#     device's read counter does not move by a data read, the bytes are
#     right (direct mode: the data; kernel mode: at least the history);
#   - a file changed behind the mount while idle brings nothing stale back:
#     the new bytes are read, counted as revived_changed;
#   - idle_files=N bounds the idle files, the oldest freed first.
# The mount runs without the backing watcher (watch=off): with it, the
# change is seen as it happens, before the revival this test is about
# (that path is tests/integration/watch.sh's).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

M=$AFS_MNT
size=$((4 << 20))
ac_mount_ext4 128 idle_files=3,watch=off
S=$AFS_SRC
dev=$(basename "$AFS_LOOPDEV")

# Reads completed and sectors read by the loop device under the backing.
dev_reads() { awk '{ print $1 " " $3 }' "/sys/block/$dev/stat"; }

# Make the kernel forget every closed inode until the mount's stats show
# at least N idle files (the FORGETs arrive asynchronously).
forget_until_idle()
{
	local want=$1 i js
	for i in $(seq 1 50); do
		afs_drop_caches
		js=$(ac_stats "$M")
		[ "$(ac_get "$js" files.idle)" -ge "$want" ] && return 0
		sleep 0.1
	done
	ac_assert "$js" "g('files.idle') >= $want" \
		"the kernel did not forget the closed files"
}

"$AC_IO" fill "$S/a" "$size" 11
"$AC_IO" fill "$S/b" "$size" 21
sync
"$AC_IO" check "$M/a" 11 >/dev/null || afs_fail "[$AC_MODE] first read of a"
"$AC_IO" check "$M/b" 21 >/dev/null || afs_fail "[$AC_MODE] first read of b"
before=$(ac_stats "$M/a")
forget_until_idle 2

# a: again, from aheadfs's cache.
root0=$(ac_stats "$M")
d0=$(dev_reads)
"$AC_IO" check "$M/a" 11 >/dev/null || afs_fail "[$AC_MODE] second read of a"
d1=$(dev_reads)
after=$(ac_stats "$M/a")
root1=$(ac_stats "$M")
ac_show "a before" "$before"
ac_show "a after" "$after"
echo "loop device (reads sectors): before $d0, after $d1"
ac_assert "$root1" "g('files.revived') >= 1" "the idle file was not revived"
ac_assert "$root1" "g('files.revived_changed') == $(ac_get "$root0" files.revived_changed)"
if [ "$AC_MODE" = direct ]; then
	ac_assert "$after" "g('cache.misses') == $(ac_get "$before" cache.misses)" \
		"the second read of a missed: its pages did not outlive the inode"
	ac_assert "$after" "g('cache.hits') >= $(ac_get "$before" cache.hits) + $((size >> 12))"
	ac_assert "$root1" "g('backing.reads') == $(ac_get "$root0" backing.reads)" \
		"the second read of a reached the backing"
	# Metadata may be read (an inode block); the file's 4 MiB are not.
	sectors=$((${d1#* } - ${d0#* }))
	[ "$sectors" -lt $((size / 512 / 8)) ] ||
		afs_fail "[$AC_MODE] the loop device read $sectors sectors for a cached file"
	echo "second read of a: $(ac_get "$root1" backing.reads) backing reads before and after, $sectors loop sectors"
else
	# The kernel had the data; aheadfs kept what its context readahead
	# reads: the history.
	ac_assert "$after" "g('cache.history_pages') + g('cache.cached_pages') >= $((size >> 12)) // 2" \
		"the history did not outlive the inode"
fi

# b: changed behind the mount while idle, same size: the new bytes.
forget_until_idle 1
sleep 0.05 # a later mtime on coarse clocks
"$AC_IO" fill "$S/b" "$size" 22
sync
forget_until_idle 1
"$AC_IO" check "$M/b" 22 >/dev/null ||
	afs_fail "[$AC_MODE] stale bytes of b after a change behind the mount while idle"
cmp "$M/b" "$S/b" || afs_fail "[$AC_MODE] mount and backing differ for b"
root=$(ac_stats "$M")
ac_assert "$root" "g('files.revived_changed') >= 1" \
	"the change of an idle file was not seen when it was revived"

# The bound: 5 more files read and forgotten, at most 3 idle kept.
for i in 1 2 3 4 5; do
	"$AC_IO" fill "$S/n$i" $((256 << 10)) $((30 + i))
done
sync
for i in 1 2 3 4 5; do
	"$AC_IO" check "$M/n$i" $((30 + i)) >/dev/null || afs_fail "read n$i"
done
forget_until_idle 3
root=$(ac_stats "$M")
ac_assert "$root" "g('files.idle') <= 3 and g('files.idle_max') == 3 and g('files.idle_dropped') >= 2" \
	"idle_files=3 was not honoured"

ac_umount
echo "PASS: $AFS_TEST_NAME [$AC_MODE]"
