#!/usr/bin/env bash
# cache_badopts.sh - every cache and readahead option (-o cache_size=,
# ra_max=, ra_workers=, stripe=, chunk=, context_ra=, stream_table=,
# backing_io=, read_mode=, write_mode=, write_behind=, write_direct=) with a malformed or out-of-range value, and a
# cache_size too small for the threads and workers: one clear line on stderr
# that names the option, a plain non-zero exit, nothing mounted.  Then the
# good values of each are accepted and shown in force in the root's stats.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

bad=0
soft_fail()
{
	echo "FAIL: $*" >&2
	bad=1
}
mounts_under_work()
{
	awk -v w="$AFS_WORK/" 'index($5, w) == 1' /proc/self/mountinfo | wc -l
}

# refused OPTION=VALUE: the daemon (in the background mode, as a user runs
# it) must refuse it.
refused()
{
	local opt=$1 rc=0 before lines name=${1%%=*}
	before=$(mounts_under_work)
	timeout 60 "$AHEADFS" -o "$opt" "$AFS_SRC" "$AFS_MNT" \
		>"$AFS_WORK/out" 2>"$AFS_WORK/err" || rc=$?
	lines=$(wc -l <"$AFS_WORK/err")
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -gt 128 ]; then
		soft_fail "-o $opt: exit status $rc, expected a plain failure"
	fi
	if [ "$lines" -ne 1 ]; then
		soft_fail "-o $opt: $lines lines on stderr, expected one:"
		cat "$AFS_WORK/err" >&2
	elif ! grep -q "$name" "$AFS_WORK/err"; then
		soft_fail "-o $opt: the message does not name $name: $(cat "$AFS_WORK/err")"
	fi
	if [ "$(mounts_under_work)" -ne "$before" ]; then
		soft_fail "-o $opt: something was mounted"
		fusermount3 -u -z "$AFS_MNT" 2>/dev/null || true
	fi
	echo "-o $opt: exit $rc: $(head -n1 "$AFS_WORK/err")"
}

for v in abc "" -1 12x 1.5M 99999999999999999999999 4096 64K 4M; do
	refused "cache_size=$v"
done
for v in abc -4K 3K 4097 2G 1025M 18446744073709551616 1Q; do
	refused "ra_max=$v"
done
for v in abc "" -1 1000000 4x; do
	refused "ra_workers=$v"
done
for v in abc -1M 3K 1.5 1P; do
	refused "stripe=$v"
done
for v in abc -4K 3K 99999999999999999999; do
	refused "chunk=$v"
done
for v in maybe "" onn; do
	refused "context_ra=$v"
done
for v in maybe ""; do
	refused "stream_table=$v"
done
for v in o_direct ""; do
	refused "backing_io=$v"
done
for v in mmap "" passthrough; do
	refused "read_mode=$v"
done
for v in back writearound ""; do
	refused "write_mode=$v"
done
for v in abc "" -1 3K 4097 2G on; do
	refused "write_behind=$v"
done
for v in abc "" -1 3K 4097 2M 1025K on; do
	refused "write_direct=$v"
done
[ "$bad" -eq 0 ] || afs_fail "bad option values not refused cleanly"

# The good values are accepted and in force.
afs_mount -o cache_size=256M,ra_max=2M,ra_workers=2,stripe=512K,chunk=128K,context_ra=loose,stream_table=off,backing_io=buffered,read_mode=direct,write_mode=writeback,write_behind=4M,write_direct=512K
root=$(ac_stats "$AFS_MNT")
ac_assert "$root" "g('options') == {'read_mode': 'direct', 'write_mode': 'writeback', 'write_behind': 4194304, 'write_direct': 524288, 'cache_size': 268435456, 'ra_max': 2097152, 'ra_workers': 2, 'stripe': 524288, 'chunk': 131072, 'context_ra': 'loose', 'stream_table': 'off', 'backing_io': 'buffered'}" \
	"options not in force as given"
ac_assert "$root" "list(g('options').keys()) == ['read_mode', 'write_mode', 'write_behind', 'write_direct', 'cache_size', 'ra_max', 'ra_workers', 'stripe', 'chunk', 'context_ra', 'stream_table', 'backing_io']" \
	"options keys not in the documented order"
ac_assert "$root" "g('readahead.workers') == 2 and 0.9 * 268435456 <= g('cache.budget_bytes') <= 268435456"
afs_umount
