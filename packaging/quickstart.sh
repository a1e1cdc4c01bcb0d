#!/usr/bin/env bash
# quickstart.sh - install what aheadfs needs, build it, mount a directory with
# it and show the mount working.  Safe to run again: a previous demo mount is
# unmounted first and the demo data is reused.
#
# Usage: packaging/quickstart.sh [SOURCE [MOUNTPOINT]]
#   SOURCE      directory to serve (default: a demo data directory created
#               under /var/tmp/aheadfs-demo/data)
#   MOUNTPOINT  where to mount it (default: /var/tmp/aheadfs-demo/mnt)
# Needs root (apt-get, FUSE).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

demo=/var/tmp/aheadfs-demo
src=${1:-$demo/data}
mnt=${2:-$demo/mnt}

echo "== installing build dependencies"
packaging/deps.sh

echo "== building (build/release)"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
aheadfs=$top/build/release/fs/aheadfs
"$aheadfs" --version

if [ $# -eq 0 ] && [ ! -f "$src/big.bin" ]; then
	echo "== creating demo data in $src"
	mkdir -p "$src/docs" "$src/logs"
	head -c 256M /dev/urandom >"$src/big.bin.tmp"
	mv "$src/big.bin.tmp" "$src/big.bin"
	for i in $(seq 1 20); do
		echo "log line $i of the aheadfs demo" >"$src/logs/app-$i.log"
	done
	cp "$top/README.md" "$src/docs/"
	ln -sf docs/README.md "$src/readme-link"
fi
if [ ! -d "$src" ]; then
	echo "quickstart.sh: SOURCE '$src' is not a directory" >&2
	exit 1
fi

mkdir -p "$mnt"
if mountpoint -q "$mnt"; then
	echo "== unmounting the previous mount on $mnt"
	fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt"
	for _ in $(seq 50); do mountpoint -q "$mnt" || break; sleep 0.1; done
fi

echo "== mounting $src on $mnt"
"$aheadfs" -o allow_other "$src" "$mnt"
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.05; done
mountpoint -q "$mnt" || { echo "quickstart.sh: mount failed" >&2; exit 1; }
grep " $mnt " /proc/mounts

echo "== the mount at work"
ls -la "$mnt" | head -n 12
if [ -f "$mnt/big.bin" ]; then
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo "-- cold sequential read of big.bin through the mount:"
	dd if="$mnt/big.bin" of=/dev/null bs=1M 2>&1 | tail -n 1
	echo "-- same bytes as the backing file:"
	a=$(sha256sum <"$src/big.bin" | cut -c1-16)
	b=$(sha256sum <"$mnt/big.bin" | cut -c1-16)
	echo "   backing $a  mount $b"
	[ "$a" = "$b" ]
fi
if [ -f "$mnt/big.bin" ]; then
	echo "-- what aheadfs did for that read (aheadfs-stat $mnt/big.bin):"
	"$top/build/release/fs/stats/aheadfs-stat" "$mnt/big.bin" |
		grep -E '^  (cache\.(hits|misses|hit_bytes)|backing\.|readahead\.(sync|async|windows|context|random) )' || true
fi
echo "-- the whole mount: getfattr -n user.aheadfs.stats $mnt, or aheadfs-stat $mnt"

echo "== done: $src is mounted on $mnt"
echo "   unmount with: fusermount3 -u $mnt"
