#!/usr/bin/env bash
# xattr_perms.sh - the permission matrix of an allow_other mount run by
# root, as an unprivileged user sees it (differential: every case runs on a
# tree of the backing and on its twin through the mount, and the outcomes
# must be equal):
#   - the user reads, writes, truncates, chmods, lists, stats, creates,
#     renames, hard-links and unlinks exactly what the backing lets them
#     (files 0644, 0600, 0602, the user's own, group-readable through a
#     supplementary group; directories 0700, 0711, 0744), and gets, sets,
#     lists and removes user.* attributes exactly as there;
#   - user.aheadfs.* on each file answers what a user.* name on the backing
#     answers for the permission: a file the user may not read gives EACCES
#     for stats and map (no figure leaks, though root read it through the
#     mount first so it has cache state), a file the user may not write
#     gives EACCES for advice; where the backing allows, stats is a JSON
#     object and advice is taken; listxattr never shows user.aheadfs.*;
#   - the mount-wide tunables on the root are refused (EPERM) to a user who
#     is neither root nor the mount's owner, and left unchanged;
#   - SOURCE cannot be left: a symlink out of SOURCE is resolved by the
#     kernel as on the backing (the outside file's own rights, never the
#     daemon's; user.aheadfs.* through it is the outside filesystem's
#     answer), and the root's ".." is the mount point's parent.
# Two mounts: the default (the kernel checks: default_permissions) and
# no_default_permissions (the daemon and the backing check as the caller).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user

. "$(dirname "$0")/perm_lib.sh"
S=$AFS_SRC
perm_setup
# The mount root writable: the kernel lets a user's setxattr of a tunable
# through to the daemon, which must refuse it itself.
chmod 0777 "$S"
for t in bk bn k n; do
	perm_make_tree "$S/$t" root "$AFS_USER" afs-test-g1
done
MK=$AFS_WORK/mnt-k MN=$AFS_WORK/mnt-n
mkdir -p "$MK" "$MN"
AFS_MNT=$MK afs_mount -o allow_other
AFS_MNT=$MN afs_mount -o allow_other,no_default_permissions
# Root reads everything through the mounts first: the daemon then holds
# cache state and stats for every file, secret ones included.
for m in "$MK/k" "$MN/n"; do
	for f in pub secret wonly mine grp priv/f search/f list/f; do
		cat "$m/$f" >/dev/null
		getfattr -n user.aheadfs.stats "$m/$f" >/dev/null 2>&1
	done
done
ra_before=$(getfattr -n user.aheadfs.ra_max --only-values "$MK" 2>/dev/null)

perm_matrix afs_as_user -- "default=$S/bk=$MK/k" "nodp=$S/bn=$MN/n"
# The refused tunables did not change.
[ "$(getfattr -n user.aheadfs.ra_max --only-values "$MK" 2>/dev/null)" = "$ra_before" ] ||
	afs_fail "a refused ra_max changed the tunable"
[ "$(getfattr -n user.aheadfs.context_ra --only-values "$MN" 2>/dev/null)" = on ] ||
	afs_fail "a refused context_ra changed the tunable"
# The backing twins agree (the mount changed what the backing changed).
perm_twins_equal "$S/bk" "$S/k"
perm_twins_equal "$S/bn" "$S/n"
for i in 1 0; do
	AFS_MNT=${_afs_fuse_mnts[$i]} AFS_PID=${_afs_pids[$i]} \
		AFS_LOG=$AFS_WORK/daemon.$((i + 1)).log afs_umount
done
