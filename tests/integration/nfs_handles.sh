#!/usr/bin/env bash
# nfs_handles.sh - file handles from name_to_handle_at on the mount stay
# valid after the kernel forgets the inodes (drop_caches): open_by_handle_at
# opens the same file (and directory), also after a rename; a deleted file's
# handle gives ESTALE.  SOURCE is on ext4 (afs_loop_ext4), which has handles.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
H=$AFS_TESTBIN/afs_handles

afs_loop_ext4 64
mkdir -p "$AFS_SRC/dir/deeper"
head -c 300000 /dev/urandom >"$AFS_SRC/dir/deeper/file"
echo other >"$AFS_SRC/dir/other"
echo doomed >"$AFS_SRC/doomed"
afs_mount

"$H" save "$AFS_MNT/dir/deeper/file" "$AFS_WORK/file.h"
"$H" save "$AFS_MNT/dir" "$AFS_WORK/dir.h"
"$H" save "$AFS_MNT/dir/deeper" "$AFS_WORK/deeper.h"
"$H" save "$AFS_MNT/doomed" "$AFS_WORK/doomed.h"
afs_drop_caches
"$H" open "$AFS_MNT" "$AFS_WORK/file.h" "$AFS_SRC/dir/deeper/file" ||
	afs_fail "file handle not valid after drop_caches"
"$H" open "$AFS_MNT" "$AFS_WORK/dir.h" "$AFS_SRC/dir" "$AFS_SRC" ||
	afs_fail "directory handle (or its '..') not valid after drop_caches"
afs_drop_caches
"$H" open "$AFS_MNT" "$AFS_WORK/deeper.h" "$AFS_SRC/dir/deeper" "$AFS_SRC/dir" ||
	afs_fail "dir/deeper handle (or its '..') not valid after drop_caches"

# Renamed (through the mount) and forgotten again: still the same file.
mv "$AFS_MNT/dir/deeper/file" "$AFS_MNT/dir/renamed"
afs_drop_caches
"$H" open "$AFS_MNT" "$AFS_WORK/file.h" "$AFS_SRC/dir/renamed" ||
	afs_fail "file handle not valid after a rename and drop_caches"
# The handle is stable: saving it again gives the same bytes.
"$H" save "$AFS_MNT/dir/renamed" "$AFS_WORK/file2.h"
cmp -s "$AFS_WORK/file.h" "$AFS_WORK/file2.h" ||
	afs_fail "the handle of a file changed after a rename"

rm "$AFS_MNT/doomed"
afs_drop_caches
"$H" stale "$AFS_MNT" "$AFS_WORK/doomed.h" ||
	afs_fail "a deleted file's handle did not give ESTALE"
afs_umount
