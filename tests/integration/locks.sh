#!/usr/bin/env bash
# locks.sh - flock, POSIX (fcntl) and OFD locks through the mount exclude
# other processes: while one holds the lock, another's try gets
# EWOULDBLOCK/EAGAIN and a blocking waiter waits (seen in /proc/locks as a
# blocked request, no timing involved) until the holder releases it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
L=$AFS_TESTBIN/afs_lock
echo data >"$AFS_SRC/lockfile"
afs_mount
F=$AFS_MNT/lockfile

# start_holder KIND [START LEN]: a holder process whose stdin is a fifo we
# keep open; closing it (exec {fd}>&-) releases the lock.
start_holder()
{
	local kind=$1 line
	shift
	rm -f "$AFS_WORK/hold.in" "$AFS_WORK/hold.out"
	mkfifo "$AFS_WORK/hold.in" "$AFS_WORK/hold.out"
	"$L" "$kind" hold "$F" "$@" <"$AFS_WORK/hold.in" >"$AFS_WORK/hold.out" &
	HOLDER=$!
	exec {HOLD_IN}>"$AFS_WORK/hold.in"
	exec {HOLD_OUT}<"$AFS_WORK/hold.out"
	read -r line <&"$HOLD_OUT" || line="(no output)"
	[ "$line" = locked ] || afs_fail "$kind holder could not lock: $line"
}

release_holder()
{
	exec {HOLD_IN}>&-
	wait "$HOLDER" || afs_fail "holder exited with an error"
	exec {HOLD_OUT}<&-
}

# wait_blocked PID KIND: poll until PID is seen blocked in its lock call:
# /proc/locks lists it as a waiter ("->"; the kernel's local locks, which
# aheadfs uses), or it sleeps inside flock()/fcntl() (/proc/PID/syscall;
# a daemon that forwarded the lock would block it there).  No timing.
case "$(uname -m)" in
x86_64) NR_FLOCK=73 NR_FCNTL=72 ;;
aarch64) NR_FLOCK=32 NR_FCNTL=25 ;;
*) NR_FLOCK=none NR_FCNTL=none ;;
esac
wait_blocked()
{
	local n=0 nr=$NR_FCNTL sc
	[ "$2" != flock ] || nr=$NR_FLOCK
	while :; do
		grep -q -- "-> .* $1 " /proc/locks && return 0
		sc=$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null || true)
		if [ "$sc" = "$nr" ] &&
			[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = S ]; then
			return 0
		fi
		kill -0 "$1" 2>/dev/null || afs_fail "waiter $1 exited instead of blocking"
		[ "$n" -lt $((AFS_WAIT_S * 10)) ] || afs_fail "waiter $1 never blocked"
		sleep 0.1
		n=$((n + 1))
	done
}

contend()
{
	local kind=$1 busy=$2 out waiter
	start_holder "$kind"
	out=$("$L" "$kind" try "$F" {HOLD_IN}>&- || true)
	[ "$out" = "$busy" ] || afs_fail "$kind: second process got '$out', expected $busy"
	"$L" "$kind" wait "$F" >"$AFS_WORK/waiter.out" {HOLD_IN}>&- &
	waiter=$!
	wait_blocked "$waiter" "$kind"
	[ "$(cat "$AFS_WORK/waiter.out")" = waiting ] ||
		afs_fail "$kind: waiter got the lock while it was held"
	release_holder
	wait "$waiter" || afs_fail "$kind: waiter failed: $(cat "$AFS_WORK/waiter.out")"
	[ "$(tail -n1 "$AFS_WORK/waiter.out")" = locked ] ||
		afs_fail "$kind: waiter did not get the lock after release"
	out=$("$L" "$kind" try "$F" {HOLD_IN}>&-)
	[ "$out" = locked ] || afs_fail "$kind: lock not free at the end: $out"
}

contend flock EAGAIN # EWOULDBLOCK is EAGAIN
contend posix EAGAIN
contend ofd EAGAIN

# POSIX byte ranges: disjoint ranges coexist, overlapping ones conflict,
# F_GETLK names the holder.
start_holder posix 0 100
out=$("$L" posix try "$F" 100 100 {HOLD_IN}>&-) || true
[ "$out" = locked ] || afs_fail "posix: disjoint range refused: $out"
out=$("$L" posix try "$F" 50 100 {HOLD_IN}>&-) || true
[ "$out" = EAGAIN ] || afs_fail "posix: overlapping range got '$out'"
out=$("$L" posix test "$F" 0 10 {HOLD_IN}>&-)
[ "$out" = "held pid=$HOLDER" ] || afs_fail "posix F_GETLK: '$out', expected held pid=$HOLDER"
release_holder
out=$("$L" posix test "$F" 0 10 {HOLD_IN}>&-)
[ "$out" = unlocked ] || afs_fail "posix F_GETLK after release: '$out'"

# flock and POSIX locks are independent on Linux (also through the mount).
start_holder flock
out=$("$L" posix try "$F" {HOLD_IN}>&-) || true
[ "$out" = locked ] || afs_fail "a POSIX lock conflicted with a flock: $out"
release_holder

afs_must_fail "$L" flock try "$AFS_MNT/missing"
afs_umount
