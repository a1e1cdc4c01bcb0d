#!/usr/bin/env bash
# cache_advice.sh - user.aheadfs.advice (FUSE does not forward fadvise):
# willneed fills the file's pages into aheadfs's cache (map and stats show
# them), dontneed drops them all (map and stats show 0) and the next read
# is still right; sequential and random are the advice in force when read
# back, normal restores it; a bad value is EINVAL and changes nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
command -v setfattr >/dev/null || afs_fail "setfattr missing (package attr)"

size=$((8 << 20))
pages=$((size / 4096))
ac_mount_ext4 64
f=$AFS_MNT/adv
"$AC_IO" fill "$AFS_SRC/adv" "$size" 41
ac_hold "$AFS_MNT/adv"
[ "$(ac_xattr "$f" user.aheadfs.advice)" = normal ] ||
	afs_fail "advice of a fresh file is not normal"

# willneed: readahead of the whole file, queued to the workers.  Wait for
# it to land (a liveness bound, not a timing assertion).
setfattr -n user.aheadfs.advice -v willneed "$f" ||
	afs_fail "[$AC_MODE] setfattr advice=willneed failed"
for ((i = 0; i < AFS_WAIT_S * 10; i++)); do
	map=$(ac_xattr "$f" user.aheadfs.map)
	[ "$(ac_get "$map" cached_pages)" -lt "$pages" ] || break
	sleep 0.1
done
ac_assert "$map" "g('file_pages') == $pages and g('cached_pages') == $pages" \
	"willneed did not fill the file's pages"
ac_assert "$map" "g('pages_per_cell') != 1 or g('runs') == [[0, $pages]]" \
	"the map's runs are not the whole file"
js=$(ac_stats "$f")
ac_show "adv willneed" "$js"
ac_assert "$js" "g('cache.cached_pages') == $pages" \
	"stats disagree with the map after willneed"
[ "$(ac_xattr "$f" user.aheadfs.advice)" = normal ] ||
	afs_fail "willneed changed the advice in force"

# dontneed: every page of the file leaves the cache.
setfattr -n user.aheadfs.advice -v dontneed "$f" ||
	afs_fail "[$AC_MODE] setfattr advice=dontneed failed"
map=$(ac_xattr "$f" user.aheadfs.map)
ac_assert "$map" "g('cached_pages') == 0 and (g('pages_per_cell') != 1 or g('runs') == [])" \
	"dontneed left pages in the map"
js=$(ac_stats "$f")
ac_assert "$js" "g('cache.cached_pages') == 0" "dontneed left pages in the stats"
"$AC_IO" check "$f" 41 >/dev/null || afs_fail "[$AC_MODE] read after dontneed"

# A read fills pages again (direct mode: they stay in aheadfs's cache;
# kernel mode: they go to the kernel and stay as history), dontneed drops.
if [ "$AC_MODE" = direct ]; then
	map=$(ac_xattr "$f" user.aheadfs.map)
	ac_assert "$map" "g('cached_pages') > 0" "a direct-mode read cached nothing"
	setfattr -n user.aheadfs.advice -v dontneed "$f"
	map=$(ac_xattr "$f" user.aheadfs.map)
	ac_assert "$map" "g('cached_pages') == 0" "second dontneed left pages"
fi

# The advice in force, and bad values.
for a in sequential random normal; do
	setfattr -n user.aheadfs.advice -v "$a" "$f" ||
		afs_fail "setfattr advice=$a failed"
	got=$(ac_xattr "$f" user.aheadfs.advice)
	[ "$got" = "$a" ] || afs_fail "advice $a read back as '$got'"
done
setfattr -n user.aheadfs.advice -v random "$f"
for bad in bogus "" NORMAL "random " willneedx dontneed2 'normal
x'; do
	err=$(setfattr -n user.aheadfs.advice -v "$bad" "$f" 2>&1) &&
		afs_fail "advice '$bad' accepted"
	[[ $err == *"Invalid argument"* ]] ||
		afs_fail "advice '$bad': expected EINVAL, got: $err"
	got=$(ac_xattr "$f" user.aheadfs.advice)
	[ "$got" = random ] || afs_fail "bad advice '$bad' changed it to '$got'"
done
# A trailing newline is allowed.
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.aheadfs.advice", b"sequential\n")' "$f" ||
	afs_fail "advice 'sequential\\n' refused"
[ "$(ac_xattr "$f" user.aheadfs.advice)" = sequential ] ||
	afs_fail "advice with a trailing newline not in force"
js=$(ac_stats "$f")
ac_assert "$js" "g('readahead.advice') == 'sequential'"
ac_umount
