#!/usr/bin/env bash
# prog_cp_a.sh - cp -a of a tree with xattrs, hard links, symlinks, a fifo,
# odd modes and old timestamps into the mount and back out: the copies
# compare equal to the original (diff -r, getfattr -d, link counts, modes,
# owners, mtimes, hard links still shared).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
command -v setfattr >/dev/null || afs_fail "setfattr missing (package attr)"

O=$AFS_WORK/orig
mkdir -p "$O/dir/sub" "$O/empty"
head -c 200000 /dev/urandom >"$O/big"
echo hello >"$O/dir/a"
ln "$O/dir/a" "$O/dir/a.hardlink"
ln "$O/dir/a" "$O/dir/sub/a.hardlink2"
echo exec >"$O/dir/run.sh" && chmod 0750 "$O/dir/run.sh"
echo ro >"$O/ro" && chmod 0444 "$O/ro"
ln -s a "$O/dir/rel-link"
ln -s /etc/hostname "$O/abs-link"
ln -s nowhere "$O/dangling"
mkfifo "$O/fifo"
: >"$O/empty-file"
chown 1234:5678 "$O/dir/sub"
setfattr -n user.x -v "value x" "$O/big"
setfattr -n user.y -v 0xdeadbeef "$O/dir/a"
setfattr -n user.dir -v d "$O/dir"
touch -h -d '2001-02-03 04:05:06.123456789' "$O/dir/rel-link" "$O/big" "$O/dir"
chmod 1777 "$O/empty"

afs_mount
cp -a "$O" "$AFS_MNT/copy"
cp -a "$AFS_MNT/copy" "$AFS_WORK/back"

bad=0
# Everything that cp -a preserves, one line per object.
describe()
{
	(cd "$1" && find . -printf '%P %y %m %U:%G %n %s %l\n' | sort)
}
mtimes()
{
	(cd "$1" && find . -mindepth 1 -printf '%P %T@\n' | sort)
}
xattrs()
{
	(cd "$1" && getfattr -R -h -d -m '^user\.' . 2>/dev/null)
}
for d in "$AFS_MNT/copy" "$AFS_SRC/copy" "$AFS_WORK/back"; do
	for what in describe mtimes xattrs; do
		if ! diff <($what "$O") <($what "$d") >"$AFS_WORK/diff"; then
			echo "FAIL: $what differs for $d:" >&2
			cat "$AFS_WORK/diff" >&2
			bad=1
		fi
	done
	diff -r --no-dereference "$O" "$d" >"$AFS_WORK/diff" 2>&1 || {
		# diff -r reports fifos as special files it does not compare.
		if grep -v 'fifo' "$AFS_WORK/diff" | grep -q .; then
			echo "FAIL: diff -r $O $d:" >&2
			cat "$AFS_WORK/diff" >&2
			bad=1
		fi
	}
	[ "$(stat -c %i "$d/dir/a")" = "$(stat -c %i "$d/dir/sub/a.hardlink2")" ] ||
		{ echo "FAIL: hard links not shared in $d" >&2; bad=1; }
done
afs_umount
[ "$bad" -eq 0 ] || afs_fail "copies differ (lines above)"
