#!/usr/bin/env bash
# lifecycle_kill.sh - the daemon's end under load and by force, on a real
# ext4 volume in read_mode=direct:
#   SIGTERM while four streams read and their readahead is in flight (the
#   fault shim delays every backing read by 200 ms, so windows are under
#   I/O when the signal comes): the daemon exits 0 and the mount is gone;
#   SIGKILL: the mount point is left dead (ENOTCONN), fusermount3 -u
#   recovers it, and a new daemon mounted over it serves correct bytes;
#   -o auto_unmount: after SIGKILL the mount point is unmounted by itself
#   (fusermount3's watcher), and a new mount works.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
SHIM=$(realpath "$AFS_TESTBIN/libafs_fault.so" 2>/dev/null) ||
	afs_fail "$AFS_TESTBIN/libafs_fault.so missing (build the tests)"
afs_loop_ext4 128
"$AC_IO" fill "$AFS_SRC/big" 64M 9
sync
CTL=$AFS_WORK/faults
printf 'read /big 0 -1 delay 200\n' >"$CTL"

# --- SIGTERM with reads and readahead in flight.
LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 \
	afs_mount -o read_mode=direct
readers=()
for off in 0 16M 32M 48M; do
	"$AC_IO" check "$AFS_MNT/big" 9 128K "$off" 16M >/dev/null 2>&1 &
	readers+=($!)
done
n=0
until [ -f "$CTL.hits" ] && [ "$(wc -l <"$CTL.hits")" -ge 8 ]; do
	[ "$n" -lt 200 ] || afs_fail "SIGTERM: the readers never reached the backing"
	sleep 0.1
	n=$((n + 1))
done
kill -TERM "$AFS_PID"
afs_wait_daemon 0
for r in "${readers[@]}"; do
	wait "$r" 2>/dev/null || true
done
echo "SIGTERM with $(wc -l <"$CTL.hits") backing reads begun: exit 0, unmounted"
: >"$CTL"

# --- SIGKILL: the mount point is dead until fusermount3 -u.
afs_mount -o read_mode=direct
"$AC_IO" check "$AFS_MNT/big" 9 1M 0 8M >/dev/null || afs_fail "SIGKILL: first read"
kill -KILL "$AFS_PID"
rc=0
wait "$AFS_PID" 2>/dev/null || rc=$?
[ "$rc" -eq 137 ] || afs_fail "SIGKILL: daemon exit status $rc"
_afs_forget_daemon "$AFS_PID"
afs_is_mounted "$AFS_MNT" || afs_fail "SIGKILL: the mount vanished by itself"
out=$(ls "$AFS_MNT" 2>&1) && afs_fail "SIGKILL: the dead mount answered"
case $out in
*"not connected"*) ;;
*) afs_fail "SIGKILL: ls of the dead mount: $out" ;;
esac
fusermount3 -u "$AFS_MNT" || afs_fail "SIGKILL: fusermount3 -u failed"
afs_is_mounted "$AFS_MNT" && afs_fail "SIGKILL: still mounted after fusermount3 -u"
afs_mount -o read_mode=direct
"$AC_IO" check "$AFS_MNT/big" 9 1M >/dev/null || afs_fail "SIGKILL: the new mount"
afs_umount
echo "SIGKILL: ENOTCONN, fusermount3 -u recovered it, a new mount served"

# --- auto_unmount: SIGKILL, and the mount point comes back by itself.
# Inside a chroot (packaging/fresh-root.sh) fusermount3's watcher did not
# unmount after the daemon's end in 60 s (seen there; the cause is not
# known yet): that step needs a real root, and says so when skipped.
if [ "$(stat -c %d:%i /)" != "$(stat -c %d:%i /proc/1/root/. 2>/dev/null)" ]; then
	echo "auto_unmount: NOT CHECKED: inside a chroot"
	exit 0
fi
afs_mount -o auto_unmount
cmp "$AFS_SRC/big" "$AFS_MNT/big" || afs_fail "auto_unmount: first read"
kill -KILL "$AFS_PID"
wait "$AFS_PID" 2>/dev/null || true
_afs_forget_daemon "$AFS_PID"
n=0
while afs_is_mounted "$AFS_MNT"; do
	# fusermount3's watcher unmounts once it sees the daemon's end; on a
	# loaded machine that took more than 10 s once: the bound is the
	# suite's liveness bound.
	[ "$n" -lt $((${AFS_WAIT_S:-60} * 10)) ] ||
		afs_fail "auto_unmount: still mounted ${AFS_WAIT_S:-60} s after SIGKILL"
	sleep 0.1
	n=$((n + 1))
done
echo "auto_unmount: unmounted $((n * 100)) ms after SIGKILL"
afs_mount -o auto_unmount
cmp "$AFS_SRC/big" "$AFS_MNT/big" || afs_fail "auto_unmount: the new mount"
afs_umount
