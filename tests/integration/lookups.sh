#!/usr/bin/env bash
# lookups.sh - lookup counting over many lookups: with entry_timeout=0 every
# stat() is a LOOKUP that the daemon counts; 20,000 of them over 1000
# files, then the kernel forgets the inodes (FORGET carries the summed
# counts) and the daemon must release every one of them (its fds return to
# where they started), and still serve the files afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
mkdir "$AFS_SRC/d"
for i in $(seq 0 999); do echo "$i" >"$AFS_SRC/d/$i"; done
afs_mount -o entry_timeout=0,attr_timeout=0
base_fds=$(afs_daemon_fds)

python3 - "$AFS_MNT/d" <<'PY'
import os, sys
d = sys.argv[1]
names = [os.path.join(d, str(i)) for i in range(1000)]
inos = [os.stat(p).st_ino for p in names]
for r in range(20):
    for p, ino in zip(names, inos):
        if os.stat(p).st_ino != ino:
            sys.exit("inode number of %s changed between lookups" % p)
print("20000 lookups, inode numbers stable")
PY
held=$(afs_daemon_fds)
afs_wait_fds_back "$base_fds" "the kernel forgot 20,000 lookups"
echo "daemon held $held fds after the lookups"
for i in 0 500 999; do
	[ "$(cat "$AFS_MNT/d/$i")" = "$i" ] || afs_fail "d/$i unreadable after the forgets"
done
afs_umount
