#!/usr/bin/env bash
# options.sh - options reach the mount: ro (EROFS, reads still work),
# noexec, nosuid/nodev shown in mountinfo, noatime, fsname= and subtype=,
# -s (one thread) and -d (requests traced on stderr) serve correctly; and an
# fstab-style mount through mount.fuse3 (-t fuse.aheadfs with generic
# options) mounts, serves and unmounts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
printf '#!/bin/sh\necho ran\n' >"$AFS_SRC/script.sh"
chmod 0755 "$AFS_SRC/script.sh"
echo data >"$AFS_SRC/file"

opts_of()
{
	awk -v m="$AFS_MNT" '$5 == m { print $6 }' /proc/self/mountinfo
}
has_opt()
{
	opts_of | tr ',' '\n' | grep -qx "$1"
}

afs_mount -o ro
has_opt ro || afs_fail "-o ro: mount options are '$(opts_of)'"
[ "$(cat "$AFS_MNT/file")" = data ] || afs_fail "-o ro: read failed"
err=$(touch "$AFS_MNT/new" 2>&1) && afs_fail "-o ro: touch succeeded"
[[ $err == *"Read-only file system"* ]] || afs_fail "-o ro: touch failed with '$err', expected EROFS"
afs_must_fail sh -c "echo x >>'$AFS_MNT/file'"
afs_umount

afs_mount -o noexec,nosuid,nodev,noatime,fsname=afs-test-src,subtype=afstest
for o in noexec nosuid nodev noatime; do
	has_opt "$o" || afs_fail "-o $o missing from '$(opts_of)'"
done
afs_must_fail "$AFS_MNT/script.sh"
line=$(awk -v m="$AFS_MNT" '$5 == m' /proc/self/mountinfo)
[[ $line == *" - fuse.afstest afs-test-src "* ]] ||
	afs_fail "fsname/subtype not in mountinfo: $line"
afs_umount

afs_mount -o exec
[ "$("$AFS_MNT/script.sh")" = ran ] || afs_fail "-o exec: script did not run"
afs_umount

afs_mount -s
cmp "$AFS_SRC/file" "$AFS_MNT/file" || afs_fail "-s: read differs"
echo more >>"$AFS_MNT/file"
afs_umount
[ "$(tail -n1 "$AFS_SRC/file")" = more ] || afs_fail "-s: write lost"

afs_mount -d
ls "$AFS_MNT" >/dev/null
cat "$AFS_MNT/file" >/dev/null
afs_umount
[ "$(wc -l <"$AFS_LOG")" -gt 3 ] || afs_fail "-d traced nothing on stderr"

# fstab: "SOURCE MOUNTPOINT fuse.aheadfs rw,nosuid,nodev,noatime,allow_other"
# is mounted by mount.fuse3, which runs "aheadfs" from PATH and detaches.
command -v mount.fuse3 >/dev/null || afs_fail "mount.fuse3 missing (package fuse3)"
PATH=$(dirname "$AHEADFS"):$PATH mount.fuse3 "$AFS_SRC" "$AFS_MNT" \
	-t fuse.aheadfs -o rw,nosuid,nodev,noatime,allow_other ||
	afs_fail "mount.fuse3 failed"
afs_is_mounted "$AFS_MNT" || afs_fail "mount.fuse3 returned but nothing is mounted"
for o in nosuid nodev noatime; do
	has_opt "$o" || afs_fail "mount.fuse3 -o $o missing from '$(opts_of)'"
done
cmp "$AFS_SRC/file" "$AFS_MNT/file" || afs_fail "mount.fuse3 mount: read differs"
bgpid=
for p in /proc/[0-9]*; do
	if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF " $AFS_MNT"; then
		bgpid=${p#/proc/}
	fi
done
fusermount3 -u "$AFS_MNT"
n=0
while [ -n "$bgpid" ] && kill -0 "$bgpid" 2>/dev/null; do
	[ "$n" -lt $((AFS_WAIT_S * 10)) ] || afs_fail "mount.fuse3's daemon did not exit"
	sleep 0.1
	n=$((n + 1))
done
