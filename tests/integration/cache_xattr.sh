#!/usr/bin/env bash
# cache_xattr.sh - the xattr interface of issue 5 (docs: stats-schema):
#   - user.aheadfs.stats on a file and on the root: JSON with the documented
#     keys in the documented order, sums consistent (sync/async/stream);
#   - user.aheadfs.map, user.aheadfs.advice, the root tunables ra_max,
#     context_ra, stream_table: read, set, bad values EINVAL and unchanged;
#   - sizes stable between getfattr's size query and its read, also while a
#     reader changes the stats;
#   - the names are not listed (getfattr -d, listxattr), not copied by
#     cp -a, never passed to the backing; real user xattrs still are;
#   - a non-root user cannot set tunables (EPERM, or EACCES from the kernel
#     under default_permissions), can read them and the
#     stats of a file it can read;
#   - aheadfs-stat prints a table, --map and --json for a file on the mount.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
afs_test_user
command -v getfattr >/dev/null || afs_fail "getfattr missing (package attr)"
: "${AHEADFS_STAT:?AHEADFS_STAT must name aheadfs-stat (ctest sets it)}"

M=$AFS_MNT
size=$((4 << 20))
afs_loop_ext4 300
S=$AFS_SRC
"$AC_IO" fill "$S/f" "$size" 101
chmod 0644 "$S/f"
afs_mount -o "allow_other,read_mode=$AC_MODE"
ac_hold "$M/f"
"$AC_IO" check "$M/f" 101 >/dev/null || afs_fail "read of f"

# The file's stats: every documented key, in order.
js=$(ac_stats "$M/f")
ac_assert "$js" "list(j) == ['file', 'cache', 'backing', 'readahead', 'streams', 'uncached_reads', 'resident_reads', 'resident_spliced', 'random_around', 'revalidations']"
ac_assert "$js" "list(g('file')) == ['ino', 'size', 'pages', 'passthrough_opens'] and g('file.passthrough_opens') == 0 and g('file.size') == $size and g('file.pages') == $((size >> 12))"
ac_assert "$js" "g('file.ino') == $(stat -c %i "$M/f")" "file.ino is not the inode number the mount shows"
ac_assert "$js" "list(g('cache')) == ['cached_pages', 'history_pages', 'hits', 'hit_bytes', 'misses', 'inserted', 'prefetched', 'evicted', 'waste', 'thrash', 'errors', 'invalidated', 'to_history', 'enospc']"
ac_assert "$js" "list(g('backing')) == ['io', 'reads', 'bytes', 'cached_reads', 'cached_bytes', 'amplification'] and g('backing.io') in ('direct', 'buffered') and isinstance(g('backing.amplification'), (int, float))"
ra_keys="['sync', 'async', 'context', 'random', 'stream', 'decisions', 'windows', 'sync_pages', 'async_pages', 'queued', 'queue_refused', 'enospc', 'thrash', 'waste', 'errors', 'resident_skipped'"
ac_assert "$js" "list(g('readahead')) == $ra_keys, 'max_window_pages', 'stripe_pages', 'advice']"
dec_keys="['initial', 'oversize', 'seq_miss', 'context', 'random', 'async', 'async_recover', 'async_giveup', 'stream_seq', 'stream_ahead', 'stream_refill', 'stream_behind', 'stream_async']"
ac_assert "$js" "list(g('readahead.decisions')) == $dec_keys"
ac_assert "$js" "g('readahead.sync') == sum(g('readahead.decisions.' + k) for k in ['initial', 'oversize', 'seq_miss', 'context', 'random', 'stream_seq', 'stream_ahead', 'stream_refill', 'stream_behind'])" \
	"sync is not the sum of its decisions"
ac_assert "$js" "g('readahead.stream') == sum(g('readahead.decisions.' + k) for k in ['stream_seq', 'stream_ahead', 'stream_refill', 'stream_behind', 'stream_async'])"
ac_assert "$js" "g('readahead.context') == g('readahead.decisions.context') and g('readahead.random') == g('readahead.decisions.random')"
ac_assert "$js" "g('readahead.advice') == 'normal' and g('readahead.max_window_pages') > 0"
ac_assert "$js" "isinstance(g('streams'), list) and len(g('streams')) <= 8 and all(list(s) == ['state', 'start', 'size', 'async_size', 'cap', 'windows', 'thrash', 'waste'] and s['state'] in ('active', 'candidate') for s in g('streams'))"
ac_assert "$js" "g('backing.reads') > 0 and g('backing.bytes') >= $size"

# The root's stats.
root=$(ac_stats "$M")
ac_assert "$root" "list(j) == ['version', 'uptime_s', 'started', 'options', 'cache', 'memory', 'backing', 'readahead', 'files', 'warm', 'watch', 'writes', 'passthrough', 'transport', 'uncached_reads', 'resident_reads', 'resident_spliced', 'random_around', 'revalidations']"
ac_assert "$root" "list(g('passthrough')) == ['mode', 'state', 'opens', 'opens_cached', 'opens_direct', 'opens_resident', 'opens_random', 'fallback_mount', 'fallback_inode', 'fallback_file', 'fallback_setid', 'backing_files'] and g('passthrough.mode') == 'writes' and g('passthrough.state') in ('on', 'unsupported')"
ac_assert "$root" "list(g('transport')) == ['mode', 'state', 'requests', 'unanswered'] and g('transport.mode') == 'dev' and g('transport.state') == 'off' and g('transport.requests') == 0"
ac_assert "$root" "g('version') == '0.1.0' and g('uptime_s') >= 0 and len(g('started')) == 20 and g('started').endswith('Z')"
ac_assert "$root" "list(g('options')) == ['read_mode', 'write_mode', 'write_behind', 'write_direct', 'cache_size', 'ra_max', 'ra_workers', 'stripe', 'chunk', 'context_ra', 'stream_table', 'backing_io'] and g('options.read_mode') == '$AC_MODE'"
ac_assert "$root" "list(g('cache')) == ['budget_bytes', 'used_bytes', 'pending_free_bytes', 'high_bytes', 'low_bytes', 'cached_pages', 'history_pages', 'small_pages', 'main_pages', 'hits', 'misses', 'evictions', 'waste', 'thrash', 'promotions', 'enospc', 'alloc_waits', 'reclaim_runs', 'mappings', 'tree_bytes', 'page_overhead_bytes']"
ac_assert "$root" "list(g('backing')) == ['reads', 'bytes', 'cached_reads', 'cached_bytes', 'errors', 'opens_direct', 'opens_buffered']"
ac_assert "$root" "list(g('readahead')) == $ra_keys, 'files', 'workers', 'queue_depth', 'workers_busy', 'queue_dropped', 'queue_late'] and list(g('readahead.decisions')) == $dec_keys"
ac_assert "$root" "0 < g('cache.budget_bytes') <= g('options.cache_size') and g('readahead.workers') == g('options.ra_workers')"
ac_assert "$root" "g('backing.reads') >= $(ac_get "$js" backing.reads) and g('backing.bytes') >= $(ac_get "$js" backing.bytes)"

# The map.
map=$(ac_xattr "$M/f" user.aheadfs.map)
ac_assert "$map" "list(j)[:3] == ['file_pages', 'cached_pages', 'pages_per_cell'] and g('file_pages') == $((size >> 12))"
ac_assert "$map" "(g('pages_per_cell') == 1 and list(j)[3:] == ['runs'] and sum(c for s, c in g('runs')) == g('cached_pages')) or (g('pages_per_cell') > 1 and list(j)[3:] == ['cells'])"

# Sizes: the size answer is a multiple of 256 with room to spare, and the
# value fits it while a reader changes the stats underneath.
for n in stats map advice; do
	python3 - "$M/f" "user.aheadfs.$n" <<'PY' || afs_fail "size of $n not stable"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.getxattr.restype = ctypes.c_ssize_t
size = libc.getxattr(sys.argv[1].encode(), sys.argv[2].encode(), None, 0)
val = os.getxattr(sys.argv[1], sys.argv[2])
if size <= 0 or size % 256 or size > 65536 or len(val) > size:
    sys.exit("%s: size answer %d for a %d-byte value" % (sys.argv[2], size, len(val)))
PY
done
"$AC_IO" fill "$S/g" $((32 << 20)) 102
ac_hold "$M/g"
"$AC_IO" coop "$M/g" 102 2 11K one >/dev/null &
reader=$!
for ((i = 0; i < 100; i++)); do
	"$AC_IO" xattr "$M/g" user.aheadfs.stats >/dev/null ||
		afs_fail "stats of a file being read: getxattr size-then-value failed"
	"$AC_IO" xattr "$M" user.aheadfs.stats >/dev/null ||
		afs_fail "root stats during a read: getxattr size-then-value failed"
	getfattr --only-values -n user.aheadfs.map "$M/g" >/dev/null ||
		afs_fail "getfattr of the map during a read failed"
done
wait "$reader" || afs_fail "reader of g failed"

# Tunables on the root: read, set, refuse.
tun()
{
	ac_get "$(ac_stats "$M")" "options.$1"
}
for t in ra_max context_ra stream_table; do
	getfattr --only-values -n "user.aheadfs.$t" "$M" >/dev/null ||
		afs_fail "tunable $t not readable"
done
setfattr -n user.aheadfs.ra_max -v 2M "$M" || afs_fail "set ra_max=2M"
[ "$(tun ra_max)" -eq $((2 << 20)) ] || afs_fail "ra_max=2M not in force"
setfattr -n user.aheadfs.context_ra -v loose "$M" || afs_fail "set context_ra"
[ "$(tun context_ra)" = loose ] || afs_fail "context_ra=loose not in force"
setfattr -n user.aheadfs.stream_table -v off "$M" || afs_fail "set stream_table"
[ "$(tun stream_table)" = off ] || afs_fail "stream_table=off not in force"
expect_einval()
{
	local err
	err=$(setfattr -n "$1" -v "$2" "$3" 2>&1) && afs_fail "$1='$2' accepted"
	[[ $err == *"Invalid argument"* ]] ||
		afs_fail "$1='$2': expected EINVAL, got: $err"
}
for v in abc 3K 4097 2G 1025M -4K "" 1Q; do
	expect_einval user.aheadfs.ra_max "$v" "$M"
done
for v in maybe "" ONN; do
	expect_einval user.aheadfs.context_ra "$v" "$M"
	expect_einval user.aheadfs.stream_table "$v" "$M"
done
[ "$(tun ra_max)" -eq $((2 << 20)) ] && [ "$(tun context_ra)" = loose ] &&
	[ "$(tun stream_table)" = off ] || afs_fail "a refused value changed a tunable"
# A tunable takes effect: with ra_max=256K a new sequential reader's async
# windows are at most 64 pages (the kernel's own 1 MiB requests are still
# read whole: "oversize" decisions).
setfattr -n user.aheadfs.ra_max -v 256K "$M" || afs_fail "set ra_max=256K"
"$AC_IO" fill "$S/small_ra" $((8 << 20)) 103
ac_hold "$M/small_ra"
"$AC_IO" check "$M/small_ra" 103 >/dev/null || afs_fail "read of small_ra"
js=$(ac_stats "$M/small_ra")
ac_assert "$js" "g('readahead.max_window_pages') == 64 and g('readahead.async') > 0 and g('readahead.async_pages') <= 64 * g('readahead.async')" \
	"ra_max=256K set at run time did not bound the windows"
ac_assert "$js" "all(s['size'] <= 64 and s['cap'] <= 64 for s in g('streams'))"
setfattr -n user.aheadfs.ra_max -v 0 "$M" || afs_fail "set ra_max=0 (automatic)"
setfattr -n user.aheadfs.context_ra -v on "$M"
setfattr -n user.aheadfs.stream_table -v on "$M"
js=$(ac_stats "$M/f")
ac_assert "$js" "g('readahead.max_window_pages') >= 256" "automatic ra_max below 1 MiB"

# Not listed, not copied, not on the backing; a real user xattr is.
setfattr -n user.real -v kept "$M/f"
listed=$(getfattr -d -m - "$M/f" "$M" 2>&1)
if grep -q aheadfs <<<"$listed"; then
	afs_fail "getfattr -d lists aheadfs names: $listed"
fi
grep -q 'user.real="kept"' <<<"$listed" || afs_fail "user.real not listed: $listed"
python3 -c 'import os, sys
for p in sys.argv[1:]:
    names = os.listxattr(p)
    if any("aheadfs" in n for n in names):
        sys.exit("listxattr(%s) = %s" % (p, names))' "$M/f" "$M" ||
	afs_fail "listxattr lists aheadfs names"
cp -a "$M/f" "$M/f.copy" || afs_fail "cp -a on the mount"
getfattr -d -m - "$S/f.copy" "$S/f" "$S" >"$AFS_WORK/backing.x" 2>&1 || true
grep -q aheadfs "$AFS_WORK/backing.x" &&
	afs_fail "aheadfs names reached the backing: $(cat "$AFS_WORK/backing.x")"
[ "$(getfattr --only-values -n user.real "$S/f.copy")" = kept ] ||
	afs_fail "cp -a did not copy user.real"

# A non-root user: reads, no tunables.
for tv in ra_max=1M context_ra=off stream_table=off; do
	t=${tv%%=*}
	err=$(afs_as_user setfattr -n "user.aheadfs.$t" -v "${tv#*=}" "$M" 2>&1) &&
		afs_fail "user $AFS_USER set tunable $t"
	# EPERM from aheadfs; with default_permissions (root + allow_other)
	# the kernel refuses first: EACCES, no write access to the root.
	[[ $err == *"Operation not permitted"* || $err == *"Permission denied"* ]] ||
		afs_fail "user set $t: expected EPERM or EACCES, got: $err"
	afs_as_user getfattr --only-values -n "user.aheadfs.$t" "$M" >/dev/null ||
		afs_fail "user $AFS_USER cannot read tunable $t"
done
[ "$(tun ra_max)" -eq 0 ] && [ "$(tun context_ra)" = on ] &&
	[ "$(tun stream_table)" = on ] || afs_fail "a refused user changed a tunable"
ujs=$(afs_as_user getfattr --only-values -n user.aheadfs.stats "$M/f") ||
	afs_fail "user $AFS_USER cannot read the stats of a file it can read"
ac_assert "$ujs" "g('file.size') == $size"
afs_as_user getfattr --only-values -n user.aheadfs.map "$M/f" >/dev/null ||
	afs_fail "user $AFS_USER cannot read the map of a file it can read"

# The map as scaled cells: 6000 separate cached runs (8 KiB reads on a
# 16 KiB grid, read_mode=direct keeps them) do not fit 64 KiB as runs.
pid1=$AFS_PID log1=$AFS_LOG
M2=$AFS_WORK/mnt2
mkdir "$M2"
AFS_MNT=$M2 afs_mount -o read_mode=direct
big=$((192 << 20))
"$AC_IO" fill "$S/cells" "$big" 104
ac_hold "$M2/cells"
"$AC_IO" random "$M2/cells" 104 6000 8K 7 "$big" 16K >/dev/null ||
	afs_fail "grid reads of cells"
map=$(ac_xattr "$M2/cells" user.aheadfs.map)
ac_assert "$map" "list(j) == ['file_pages', 'cached_pages', 'pages_per_cell', 'cells'] and g('file_pages') == $((big >> 12))" \
	"6000 runs did not turn the map into cells"
ac_assert "$map" "g('cached_pages') == 12000 and g('pages_per_cell') >= 1 and len(g('cells')) == -(-g('file_pages') // g('pages_per_cell')) and set(g('cells')) <= set('012345678') and len(g('cells')) <= 65536" \
	"cells do not describe the file"
ac_assert "$map" "abs(sum(int(c) for c in g('cells')) * g('pages_per_cell') / 8 - 12000) <= len(g('cells')) * g('pages_per_cell') / 8" \
	"cells do not add up to the cached pages"
out=$("$AHEADFS_STAT" --map "$M2/cells") || afs_fail "aheadfs-stat --map (cells)"
grep -q "cached 12000 of $((big >> 12)) pages" <<<"$out" ||
	afs_fail "aheadfs-stat --map on cells: $out"
ac_unhold
AFS_MNT=$M2 afs_umount
AFS_PID=$pid1 AFS_LOG=$log1

# aheadfs-stat: table, map, JSON.
table=$("$AHEADFS_STAT" "$M/f") || afs_fail "aheadfs-stat failed"
grep -q 'cache.hits' <<<"$table" && grep -q 'readahead' <<<"$table" ||
	afs_fail "aheadfs-stat table lacks the fields: $table"
out=$("$AHEADFS_STAT" --map "$M/f") || afs_fail "aheadfs-stat --map failed"
grep -q "of $((size >> 12)) pages" <<<"$out" ||
	afs_fail "aheadfs-stat --map: $out"
out=$("$AHEADFS_STAT" --json "$M/f") || afs_fail "aheadfs-stat --json failed"
python3 -c 'import json, sys
d = json.JSONDecoder()
s = sys.argv[1]
i = s.index("{")
v, _ = d.raw_decode(s[i:])
assert v["file"]["size"] == int(sys.argv[2]), v' "$out" "$size" ||
	afs_fail "aheadfs-stat --json: $out"
"$AHEADFS_STAT" "$M" >/dev/null || afs_fail "aheadfs-stat on the root failed"
ac_umount
