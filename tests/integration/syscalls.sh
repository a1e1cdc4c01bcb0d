#!/usr/bin/env bash
# syscalls.sh - every operation through the mount gives the same result and
# errno as on the backing (afs_syscalls), as root and as an unprivileged user
# through an allow_other mount (EACCES/EPERM cases), and again as the user
# with no_default_permissions (then the backing decides, under the user's
# credentials), and with -o opens=none.  Also a fifo and a unix socket used through the mount.  With AFS_SYSCALLS_EXT4=1
# (syscalls_ext4.sh) SOURCE is a directory on a fresh ext4 loop volume.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user
if [ -n "${AFS_SYSCALLS_EXT4:-}" ]; then
	afs_loop_ext4 256
fi
mkdir "$AFS_SRC/root" "$AFS_SRC/user" "$AFS_SRC/user-nodp"
chown "$AFS_UID:$AFS_GID" "$AFS_SRC/user" "$AFS_SRC/user-nodp"
afs_mount -o allow_other

rc=0
"$AFS_TESTBIN/afs_syscalls" "$AFS_SRC/root" "$AFS_MNT/root" || rc=1
afs_as_user "$AFS_UBIN/afs_syscalls" "$AFS_SRC/user" "$AFS_MNT/user" || rc=1
afs_must_fail cat "$AFS_MNT/missing"

# A fifo and a unix socket made through the mount carry data (the kernel
# serves them; the daemon only creates the nodes).
mkfifo "$AFS_MNT/pipe"
(echo "through the fifo" >"$AFS_MNT/pipe") &
writer=$!
[ "$(cat "$AFS_MNT/pipe")" = "through the fifo" ] || afs_fail "fifo on the mount"
wait "$writer"
python3 - "$AFS_MNT/sock" <<'PY' || afs_fail "unix socket on the mount"
import os, socket, sys
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1])
srv.listen(1)
cli = socket.socket(socket.AF_UNIX)
cli.connect(sys.argv[1])
conn, _ = srv.accept()
cli.sendall(b"ping")
assert conn.recv(4) == b"ping"
PY
afs_umount

# Zero-message opens: the same outcomes, as root and as the user (opens=
# none implies default_permissions: the kernel checks every open).
mkdir -p "$AFS_SRC/root-noopen" "$AFS_SRC/user-noopen"
chown "$AFS_UID:$AFS_GID" "$AFS_SRC/user-noopen"
afs_mount -o allow_other,opens=none
"$AFS_TESTBIN/afs_syscalls" "$AFS_SRC/root-noopen" "$AFS_MNT/root-noopen" || rc=1
afs_as_user "$AFS_UBIN/afs_syscalls" "$AFS_SRC/user-noopen" "$AFS_MNT/user-noopen" || rc=1
afs_umount

afs_mount -o allow_other,no_default_permissions,entry_timeout=0,attr_timeout=0
afs_as_user "$AFS_UBIN/afs_syscalls" "$AFS_SRC/user-nodp" "$AFS_MNT/user-nodp" || rc=1
afs_umount
[ "$rc" -eq 0 ] || afs_fail "syscall outcomes differ (lines above)"
