#!/usr/bin/env bash
# inodes.sh - inode numbers through the mount are unique where SOURCE holds
# other file systems (two tmpfs mounts whose inode numbers collide, and a
# bind mount), hard links keep one inode number, and a tree with more inodes
# than the default open-file limit (1024) works while all are open, for find
# and tar (which detect hard links by st_dev+st_ino).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root

S=$AFS_SRC
mkdir "$S/t1" "$S/t2" "$S/bind" "$AFS_WORK/outside"
mount -t tmpfs -o size=8m afs-t1 "$S/t1"
mount -t tmpfs -o size=8m afs-t2 "$S/t2"
mount --bind "$AFS_WORK/outside" "$S/bind"
# The same creation order on both tmpfs gives the same inode numbers.
for t in t1 t2 bind; do
	mkdir "$S/$t/d"
	echo "$t one" >"$S/$t/d/one"
	echo "$t two" >"$S/$t/two"
	ln "$S/$t/two" "$S/$t/two.hardlink"
done
echo top >"$S/top"
ln "$S/top" "$S/top.hardlink"
[ "$(stat -c %i "$S/t1/two")" = "$(stat -c %i "$S/t2/two")" ] ||
	echo "note: tmpfs inode numbers do not collide here; uniqueness still checked"

afs_mount
base_fds=$(afs_daemon_fds)
# Map each backing object (dev:ino) and each mount object (dev:ino) by
# path; the relation must be one-to-one.
(cd "$S" && find . -printf '%D:%i %p\n' | sort -k2) >"$AFS_WORK/backing.ids"
(cd "$AFS_MNT" && find . -printf '%D:%i %p\n' | sort -k2) >"$AFS_WORK/mount.ids"
cut -d' ' -f2 "$AFS_WORK/backing.ids" >"$AFS_WORK/b.paths"
cut -d' ' -f2 "$AFS_WORK/mount.ids" >"$AFS_WORK/m.paths"
cmp -s "$AFS_WORK/b.paths" "$AFS_WORK/m.paths" || {
	diff "$AFS_WORK/b.paths" "$AFS_WORK/m.paths" >&2 || true
	afs_fail "find lists different paths through the mount"
}
# Pair ids per path; count distinct ids on each side and distinct pairs.
paste -d' ' <(cut -d' ' -f1 "$AFS_WORK/backing.ids") \
	<(cut -d' ' -f1 "$AFS_WORK/mount.ids") >"$AFS_WORK/pairs"
nb=$(cut -d' ' -f1 "$AFS_WORK/pairs" | sort -u | wc -l)
nm=$(cut -d' ' -f2 "$AFS_WORK/pairs" | sort -u | wc -l)
np=$(sort -u "$AFS_WORK/pairs" | wc -l)
if [ "$nb" -ne "$np" ] || [ "$nm" -ne "$np" ]; then
	paste "$AFS_WORK/pairs" "$AFS_WORK/b.paths" | sort >&2
	afs_fail "inode numbers not one-to-one: $nb backing objects, $nm mount ids, $np pairs"
fi
[ "$(stat -c %i "$AFS_MNT/t1/two")" = "$(stat -c %i "$AFS_MNT/t1/two.hardlink")" ] ||
	afs_fail "a hard link has another inode number through the mount"
[ "$(stat -c %i "$AFS_MNT/top")" = "$(stat -c %i "$AFS_MNT/top.hardlink")" ] ||
	afs_fail "top and top.hardlink differ through the mount"
[ "$(stat -c %h "$AFS_MNT/t2/two")" = 2 ] || afs_fail "link count of t2/two"

# More inodes than the default soft limit, all open at once.
mkdir "$S/many"
for d in $(seq 0 29); do
	mkdir "$S/many/$d"
	for f in $(seq 0 99); do echo "$d/$f" >"$S/many/$d/$f"; done
	ln "$S/many/$d/0" "$S/many/$d/link-to-0"
done
ulimit -n 8192
python3 - "$AFS_MNT/many" <<'PY'
import os, sys
root = sys.argv[1]
files = []
for d in range(30):
    for f in range(100):
        files.append((open(os.path.join(root, str(d), str(f)), "rb"), "%d/%d\n" % (d, f)))
bad = [exp for fh, exp in files if fh.read().decode() != exp]
seen = {}
for fh, exp in files:
    st = os.fstat(fh.fileno())
    if (st.st_dev, st.st_ino) in seen:
        bad.append("same inode: %s and %s" % (seen[(st.st_dev, st.st_ino)], exp))
    seen[(st.st_dev, st.st_ino)] = exp
for fh, _ in files:
    fh.close()
if bad:
    sys.exit("%d of %d files wrong while all open: %s" % (len(bad), len(files), bad[:5]))
print("%d files open at once, all read back" % len(files))
PY
n=$(find "$AFS_MNT/many" -type f | wc -l)
[ "$n" -eq 3030 ] || afs_fail "find lists $n files, expected 3030"
# tar records hard links by st_dev+st_ino: the archives must be identical.
(cd "$S" && tar --sort=name -cf - many) >"$AFS_WORK/backing.tar"
(cd "$AFS_MNT" && tar --sort=name -cf - many) >"$AFS_WORK/mount.tar"
cmp "$AFS_WORK/backing.tar" "$AFS_WORK/mount.tar" ||
	afs_fail "tar of the tree differs through the mount"
[ "$(tar -tvf "$AFS_WORK/mount.tar" | grep -c ' link to ')" -eq 30 ] ||
	afs_fail "tar through the mount did not see 30 hard links"

# The daemon holds an fd per inode the kernel knows; when the kernel forgets
# them (drop_caches sends FORGETs), the fds go: nothing leaks.
held=$(afs_daemon_fds)
[ "$held" -gt 3000 ] || echo "note: daemon holds $held fds after the walk"
afs_wait_fds_back "$base_fds" "the kernel forgot the walked tree"
echo "daemon held $held fds during the walk"
afs_umount
