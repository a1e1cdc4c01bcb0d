#!/usr/bin/env bash
# lookups.sh - lookup counting over many lookups: with entry_timeout=0 every
# stat() is a LOOKUP that the daemon counts; 100,000 of them over 1000
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
base_fds=$(ls "/proc/$AFS_PID/fd" | wc -l)

python3 - "$AFS_MNT/d" <<'PY'
import os, sys
d = sys.argv[1]
names = [os.path.join(d, str(i)) for i in range(1000)]
inos = [os.stat(p).st_ino for p in names]
for r in range(100):
    for p, ino in zip(names, inos):
        if os.stat(p).st_ino != ino:
            sys.exit("inode number of %s changed between lookups" % p)
print("100000 lookups, inode numbers stable")
PY
held=$(ls "/proc/$AFS_PID/fd" | wc -l)
n=0
while :; do
	sync
	echo 2 >/proc/sys/vm/drop_caches
	fds=$(ls "/proc/$AFS_PID/fd" | wc -l)
	[ "$fds" -gt $((base_fds + 32)) ] || break
	[ "$n" -lt "$AFS_WAIT_S" ] ||
		afs_fail "daemon holds $fds fds (began with $base_fds) after the kernel forgot 100,000 lookups"
	sleep 1
	n=$((n + 1))
done
echo "daemon fds: $base_fds at mount, $held after the lookups, $fds after forget"
for i in 0 500 999; do
	[ "$(cat "$AFS_MNT/d/$i")" = "$i" ] || afs_fail "d/$i unreadable after the forgets"
done
afs_umount
