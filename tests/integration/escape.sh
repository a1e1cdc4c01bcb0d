#!/usr/bin/env bash
# escape.sh - nothing done through the mount reaches outside SOURCE: the
# daemon never follows a symlink itself.  Operations on symlinks whose
# targets lie outside SOURCE (chown -h, touch -h, xattrs, getattr, rename,
# unlink, link) change the link, never the target; ".." at the root and in
# symlinks resolve as the kernel resolves them on the client side.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root

V=$AFS_WORK/victim
echo "do not touch" >"$V"
touch -d '2000-01-01 00:00:00' "$V"
before=$(stat -c '%u:%g %a %Y %s %i' "$V")
ln -s "$V" "$AFS_SRC/abs"
ln -s ../victim "$AFS_SRC/rel"
mkdir "$AFS_SRC/d"
ln -s ../../victim "$AFS_SRC/d/rel2"
afs_mount

victim_intact()
{
	local now
	now=$(stat -c '%u:%g %a %Y %s %i' "$V")
	[ "$now" = "$before" ] || afs_fail "$1 changed the target outside SOURCE: $before -> $now"
	[ "$(cat "$V")" = "do not touch" ] || afs_fail "$1 changed the target's data"
	[ -z "$(getfattr -d -m - "$V" 2>/dev/null)" ] || afs_fail "$1 set an xattr on the target"
}

for l in abs rel d/rel2; do
	[ "$(stat -c %F "$AFS_MNT/$l")" = "symbolic link" ] || afs_fail "$l is not a symlink through the mount"
	[ "$(readlink "$AFS_MNT/$l")" = "$(readlink "$AFS_SRC/$l")" ] || afs_fail "readlink $l"
	chown -h 4321:4321 "$AFS_MNT/$l"
	[ "$(stat -c %u:%g "$AFS_SRC/$l")" = 4321:4321 ] || afs_fail "chown -h $l did not change the link"
	victim_intact "chown -h $l"
	touch -h -d '2011-11-11 11:11:11' "$AFS_MNT/$l"
	[ "$(stat -c %Y "$AFS_SRC/$l")" = "$(date -d '2011-11-11 11:11:11' +%s)" ] ||
		afs_fail "touch -h $l did not change the link"
	victim_intact "touch -h $l"
	afs_must_fail setfattr -h -n user.x -v 1 "$AFS_MNT/$l"
	victim_intact "setfattr -h $l"
	getfattr -h -d "$AFS_MNT/$l" >/dev/null 2>&1 || true
	ln "$AFS_MNT/$l" "$AFS_MNT/$l.hard" # links the symlink itself
	[ "$(stat -c %h "$AFS_SRC/$l")" = 2 ] || afs_fail "link of $l"
	victim_intact "link $l"
	mv "$AFS_MNT/$l.hard" "$AFS_MNT/$l.moved"
	rm "$AFS_MNT/$l.moved"
	victim_intact "rename/unlink $l"
done
# The daemon serves the root's ".." as the root: nothing above SOURCE.
[ "$(stat -c %i "$AFS_MNT/..")" = "$(stat -c %i "$AFS_WORK")" ] ||
	afs_fail "'..' of the mount is not the mount point's parent"
[ "$(cd "$AFS_MNT/d/.." && stat -c %i .)" = "$(stat -c %i "$AFS_MNT")" ] ||
	afs_fail "d/.. is not the root"
[ "$(ls "$AFS_MNT")" = "$(ls "$AFS_SRC")" ] || afs_fail "root listing differs"
afs_umount
victim_intact "the whole test"
