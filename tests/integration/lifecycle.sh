#!/usr/bin/env bash
# lifecycle.sh - SIGTERM, SIGINT and fusermount3 -u each unmount cleanly and
# the daemon exits 0, also while a process holds a file open and with
# requests in flight.  The exit status carries LeakSanitizer's verdict in an
# ASan build (afs_wait_daemon also fails on any sanitizer report in the log).
# Background mode (no -f): the command returns 0 once mounted, and
# fusermount3 -u ends the daemon.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
head -c 4M /dev/urandom >"$AFS_SRC/blob"

for sig in TERM INT; do
	afs_mount
	cmp "$AFS_SRC/blob" "$AFS_MNT/blob"
	kill -"$sig" "$AFS_PID"
	afs_wait_daemon 0
	echo "SIG$sig: clean exit"
done

afs_mount
cmp "$AFS_SRC/blob" "$AFS_MNT/blob"
afs_umount
echo "fusermount3 -u: clean exit"

# Readers killed in the middle of requests (FUSE INTERRUPT, aborted
# replies) leave the daemon serving, then SIGTERM while a process keeps a
# file open and readers are busy.
afs_mount
for i in $(seq 1 20); do
	cat "$AFS_MNT/blob" "$AFS_MNT/blob" "$AFS_MNT/blob" >/dev/null &
	victim=$!
	ls -lR "$AFS_MNT" >/dev/null &
	lister=$!
	kill -KILL "$victim" "$lister" 2>/dev/null || true
	wait "$victim" "$lister" 2>/dev/null || true
done
kill -0 "$AFS_PID" || afs_fail "daemon died while readers were killed"
cmp "$AFS_SRC/blob" "$AFS_MNT/blob"
exec {held}<"$AFS_MNT/blob"
for i in 1 2 3 4; do
	(while cat "$AFS_MNT/blob" >/dev/null 2>&1; do :; done) &
	readers+=($!)
done
cmp "$AFS_SRC/blob" "$AFS_MNT/blob"
kill -TERM "$AFS_PID"
afs_wait_daemon 0
exec {held}<&-
for r in "${readers[@]}"; do
	wait "$r" || true
done
echo "SIGTERM with open files and readers: clean exit"

# Background mode: the daemon detaches; find it by its unique mount point.
rc=0
"$AHEADFS" "$AFS_SRC" "$AFS_MNT" || rc=$?
[ "$rc" -eq 0 ] || afs_fail "background mount exited $rc"
afs_is_mounted "$AFS_MNT" || afs_fail "background mode returned before mounting"
cmp "$AFS_SRC/blob" "$AFS_MNT/blob"
bgpid=
for p in /proc/[0-9]*; do
	if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF " $AFS_MNT"; then
		bgpid=${p#/proc/}
	fi
done
[ -n "$bgpid" ] || afs_fail "no background daemon process found"
fusermount3 -u "$AFS_MNT"
n=0
while kill -0 "$bgpid" 2>/dev/null; do
	[ "$n" -lt $((AFS_WAIT_S * 10)) ] || afs_fail "background daemon did not exit"
	sleep 0.1
	n=$((n + 1))
done
afs_is_mounted "$AFS_MNT" && afs_fail "still mounted"
echo "background mode: mounted, unmounted, exited"
