#!/usr/bin/env bash
# harness.sh - lib.sh itself: afs_mount_ext4 gives a direct-I/O loop device
# with ext4 and aheadfs over a directory in it; the cleanup trap leaves
# nothing behind (no mount, no loop device, no work dir) after a passing
# test, a failing one, and one whose daemon was SIGKILLed (a dead FUSE
# mount); afs_must_fail and afs_umount fail when the daemon is dead.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root

# child SCRIPT: run a test body in its own bash with lib.sh; it prints
# "work=DIR loop=DEV" first.
child()
{
	local rc=0
	AFS_WAIT_S=10 bash -c '
		set -euo pipefail
		. "$1/lib.sh"
		'"$1"'
	' "$0" "$(dirname "$0")" >"$AFS_WORK/child.out" 2>"$AFS_WORK/child.err" || rc=$?
	return "$rc"
}

left_behind()
{
	local work loop
	work=$(sed -n 's/^work=\([^ ]*\) .*/\1/p' "$AFS_WORK/child.out")
	loop=$(sed -n 's/.* loop=\(.*\)$/\1/p' "$AFS_WORK/child.out")
	[ -n "$work" ] || afs_fail "$1: child printed no work dir: $(cat "$AFS_WORK/child.err")"
	[ ! -e "$work" ] || afs_fail "$1: work dir $work left behind"
	! grep -qF " $work/" /proc/self/mountinfo || afs_fail "$1: mounts left under $work"
	if [ -n "$loop" ] && losetup -n -O BACK-FILE "$loop" 2>/dev/null | grep -qF "$work/"; then
		afs_fail "$1: loop device $loop still attached to $work"
	fi
}

body_ok='
afs_mount_ext4 64
echo "work=$AFS_WORK loop=$AFS_LOOPDEV"
[ "$(losetup -n -O DIO "$AFS_LOOPDEV" | tr -d " ")" = 1 ] || afs_fail "DIO off"
[ "$(findmnt -n -o FSTYPE --source "$AFS_LOOPDEV" | head -n1)" = ext4 ] || afs_fail "no ext4"
[ "$AFS_SRC" = "$AFS_EXT4/src" ] || afs_fail "AFS_SRC not on the volume"
echo hello >"$AFS_MNT/f"
[ "$(cat "$AFS_EXT4/src/f")" = hello ] || afs_fail "write did not reach ext4"
[ "$(stat -f -c %T "$AFS_EXT4")" = ext2/ext3 ] || afs_fail "statfs type"
afs_umount
'
child "$body_ok" || afs_fail "passing child failed: $(cat "$AFS_WORK/child.err")"
left_behind "passing test"

body_fail='
afs_mount_ext4 64
echo "work=$AFS_WORK loop=$AFS_LOOPDEV"
exec 7<"$AFS_MNT" # a process inside the mount at exit
afs_fail "deliberate"
'
if child "$body_fail"; then afs_fail "failing child passed"; fi
grep -q "FAIL: .*deliberate" "$AFS_WORK/child.err" || afs_fail "afs_fail message missing"
left_behind "failing test"

body_dead='
afs_mount_ext4 64
echo "work=$AFS_WORK loop=$AFS_LOOPDEV"
kill -KILL "$AFS_PID"
wait "$AFS_PID" || true
if (afs_must_fail false) 2>/dev/null; then echo "must_fail passed on a dead daemon"; exit 3; fi
if (afs_umount) 2>/dev/null; then echo "umount passed on a dead daemon"; exit 3; fi
exit 0
'
child "$body_dead" || afs_fail "dead-daemon child: $(cat "$AFS_WORK/child.out" "$AFS_WORK/child.err")"
left_behind "killed daemon"

# afs_umount counts the daemon's exit status (how ASan/LSan verdicts reach
# the test): a daemon that unmounts cleanly but exits 23, as LeakSanitizer
# makes it, fails the test.
cat >"$AFS_WORK/leaky" <<SH
#!/bin/sh
"$AHEADFS" "\$@" || exit
echo "==1==ERROR: LeakSanitizer: detected memory leaks (simulated)" >&2
exit 23
SH
chmod +x "$AFS_WORK/leaky"
body_leak='
afs_mount
echo "work=$AFS_WORK loop="
if (afs_umount) 2>/dev/null; then echo "afs_umount passed a daemon that exited 23"; exit 3; fi
exit 0
'
AHEADFS=$AFS_WORK/leaky child "$body_leak" ||
	afs_fail "exit status not counted: $(cat "$AFS_WORK/child.out" "$AFS_WORK/child.err")"
left_behind "leaking daemon"

# afs_must_fail: a command that succeeds, or dies of a signal, fails it.
afs_mount
if (afs_must_fail true) 2>/dev/null; then afs_fail "afs_must_fail passed a success"; fi
if (afs_must_fail sh -c 'kill -SEGV $$') 2>/dev/null; then
	afs_fail "afs_must_fail passed a crash"
fi
afs_must_fail false
afs_umount
