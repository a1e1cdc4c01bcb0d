#!/usr/bin/env bash
# request_timeout.sh - what the kernel's fs.fuse.default_request_timeout does
# with a backing that stalls for good (docs/reliability.md): a mount made
# while it is set (to 10 s here) has its connection aborted once a request
# goes unanswered that long -- the stalled reader gets an error instead of
# waiting forever, and so does every later request on that mount (the
# whole mount ends, not the one request) -- and fusermount3 -u recovers the
# mount point; the daemon exits once its stalled thread returns.
#
# The setting is machine-wide and read when a mount starts: it is set for
# this test's mount only and put back to its old value right after (a
# mount another test makes in that second gets it too; ctest's
# RESOURCE_LOCK fuse_sysctl keeps this suite's own tests apart).  Skipped
# when the kernel has no such setting or it is already in use.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
knob=/proc/sys/fs/fuse/default_request_timeout
if [ ! -w "$knob" ]; then
	echo "SKIP: $AFS_TEST_NAME: no $knob" >&2
	exit 77
fi
old=$(cat "$knob")
if [ "$old" != 0 ]; then
	echo "SKIP: $AFS_TEST_NAME: $knob is already $old" >&2
	exit 77
fi
SHIM=$(realpath "$AFS_TESTBIN/libafs_fault.so" 2>/dev/null) ||
	afs_fail "$AFS_TESTBIN/libafs_fault.so missing (build the tests)"
afs_loop_ext4 64
"$AC_IO" fill "$AFS_SRC/f" 4M 3
"$AC_IO" fill "$AFS_SRC/g" 1M 4
CTL=$AFS_WORK/faults
: >"$CTL"

restore() { echo "$old" >"$knob"; }
echo 10 >"$knob"
LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 \
	afs_mount -o read_mode=direct || { restore; exit 1; }
restore
"$AC_IO" check "$AFS_MNT/g" 4 >/dev/null || afs_fail "a read before the stall"

printf 'read /f 1048576 -1 stall\n' >"$CTL"
start=$(date +%s)
# In the background: a reader waiting for the daemon's answer cannot be
# killed (the kernel waits the request out), so it is watched, not timed.
"$AC_IO" check "$AFS_MNT/f" 3 1M 1M 1M >"$AFS_WORK/reader.out" 2>&1 &
reader=$!
while kill -0 "$reader" 2>/dev/null; do
	if [ $(($(date +%s) - start)) -ge 60 ]; then
		: >"$CTL" # end the stall, so that everything can exit
		afs_fail "the stalled read still waited after 60 s"
	fi
	sleep 0.5
done
rc=0
wait "$reader" || rc=$?
out=$(cat "$AFS_WORK/reader.out")
took=$(($(date +%s) - start))
echo "stalled read: exit $rc after ${took}s: $out"
[ "$rc" -ne 0 ] || afs_fail "the stalled read succeeded"
[ "$took" -ge 9 ] || afs_fail "aborted after ${took}s, before the 10 s timeout"
case $out in
*"onnection abort"* | *"not connected"*) ;;
*) afs_fail "the stalled read failed with '$out'" ;;
esac
out=$(ls "$AFS_MNT" 2>&1) && afs_fail "the aborted mount still answers"
echo "after the abort: $out"
: >"$CTL"
fusermount3 -u "$AFS_MNT" || afs_fail "fusermount3 -u of the aborted mount"
afs_is_mounted "$AFS_MNT" && afs_fail "still mounted after fusermount3 -u"
n=0
while kill -0 "$AFS_PID" 2>/dev/null; do
	[ "$n" -lt 300 ] || afs_fail "the daemon did not exit after the abort"
	sleep 0.1
	n=$((n + 1))
done
rc=0
wait "$AFS_PID" || rc=$?
_afs_forget_daemon "$AFS_PID"
echo "daemon exit status after the abort: $rc"
_afs_check_log_clean "$AFS_LOG"
afs_mount -o read_mode=direct
"$AC_IO" check "$AFS_MNT/f" 3 >/dev/null || afs_fail "a new mount after the abort"
afs_umount
