#!/usr/bin/env bash
# syscalls.sh - every operation through the mount gives the same result and
# errno as on the backing (afs_syscalls), as root and as an unprivileged user
# through an allow_other mount (EACCES/EPERM cases).  With AFS_SYSCALLS_EXT4=1
# (syscalls_ext4.sh) SOURCE is a directory on a fresh ext4 loop volume.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user
if [ -n "${AFS_SYSCALLS_EXT4:-}" ]; then
	afs_loop_ext4 256
fi
mkdir "$AFS_SRC/root" "$AFS_SRC/user"
chown "$AFS_UID:$AFS_GID" "$AFS_SRC/user"
afs_mount -o allow_other

rc=0
"$AFS_TESTBIN/afs_syscalls" "$AFS_SRC/root" "$AFS_MNT/root" || rc=1
afs_as_user "$AFS_UBIN/afs_syscalls" "$AFS_SRC/user" "$AFS_MNT/user" || rc=1
afs_must_fail cat "$AFS_MNT/missing"
afs_umount
[ "$rc" -eq 0 ] || afs_fail "syscall outcomes differ (lines above)"
