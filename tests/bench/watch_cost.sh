#!/usr/bin/env bash
# watch_cost.sh - what the backing watcher (-o watch=) costs on a
# write-heavy backing: a reader streams a file through the mount while a
# writer does small writes elsewhere on the same ext4 volume (outside
# SOURCE: every one of its events is an event the watcher reads and
# filters), with watch=off, fanotify and inotify.  Prints, per setting and
# writer rate, the reader's MB/s (median of RUNS) and the CPU seconds the
# watcher's thread (afs-watch) used per second of the run.
#
# Usage (root, from the build dir, like the integration tests):
#   AHEADFS=fs/aheadfs AFS_TESTBIN=tests/integration \
#       bash ../tests/bench/watch_cost.sh [SIZE_MIB [RUNS [RATES]]]
#   SIZE_MIB  the streamed file (default 256), read 8 times a run;
#   RUNS      runs per cell, the median reported (default 5);
#   RATES     writer rates, writes a second, comma list (default
#             1000,10000; 0: no writer)
# The reader uses read_mode=direct with the backing's pages warm, so every
# read is a FUSE round trip served by aheadfs: the CPU-bound case, where a
# watcher competing for the CPU shows most.
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
afs_require_fuse
afs_require_root
SIZE=${1:-256}
RUNS=${2:-5}
PASSES=8
RATES=${3:-1000,10000}
afs_loop_ext4 $((SIZE * 2 + 128))
S=$AFS_SRC
mkdir "$AFS_EXT4/elsewhere"
head -c "${SIZE}M" /dev/urandom >"$S/big"
cat "$S/big" >/dev/null

writer_py='
import os, sys, time, signal, random
rate = int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 20)
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
n, t0, rnd = 0, time.monotonic(), random.Random(1)
per = max(1, rate // 100)
nxt = t0
while not stop:
    for _ in range(per):
        os.pwrite(fd, b"w" * 64, rnd.randrange(0, (1 << 20) - 64))
        n += 1
    nxt += 0.01
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
print("%d" % (n / (time.monotonic() - t0)), flush=True)
'

# The CPU ticks of the daemon's thread named afs-watch (0 without one).
watch_ticks()
{
	local t
	for t in /proc/"$AFS_PID"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = afs-watch ] || continue
		awk '{ print $14 + $15 }' "$t/stat"
		return
	done
	echo 0
}

printf '%-9s %8s %10s %12s %10s\n' watch "writes/s" "MB/s" "watcher %CPU" "events/s"
for rate in ${RATES//,/ }; do
	for watch in off fanotify inotify; do
		wpid=
		if [ "$rate" -gt 0 ]; then
			python3 -c "$writer_py" "$AFS_EXT4/elsewhere/w" "$rate" \
				>"$AFS_WORK/writer.out" &
			wpid=$!
		fi
		afs_mount -o "read_mode=direct,watch=$watch"
		sleep 0.5
		mbs=()
		t0=$(date +%s.%N)
		k0=$(watch_ticks)
		e0=$(getfattr -n user.aheadfs.stats --only-values "$AFS_MNT" 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["watch"]["events"])')
		for ((r = 0; r < RUNS; r++)); do
			s=$(date +%s.%N)
			for ((p = 0; p < PASSES; p++)); do
				dd if="$AFS_MNT/big" of=/dev/null bs=1M status=none
			done
			e=$(date +%s.%N)
			mbs+=("$(python3 -c "print('%.0f' % ($PASSES * $SIZE * 1.048576 / ($e - $s)))")")
		done
		k1=$(watch_ticks)
		t1=$(date +%s.%N)
		e1=$(getfattr -n user.aheadfs.stats --only-values "$AFS_MNT" 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["watch"]["events"])')
		afs_umount
		actual=0
		if [ -n "$wpid" ]; then
			kill "$wpid"
			wait "$wpid" || true
			actual=$(cat "$AFS_WORK/writer.out")
		fi
		med=$(printf '%s\n' "${mbs[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
		hz=$(getconf CLK_TCK)
		python3 -c "
d = $t1 - $t0
print('%-9s %8s %10s %12.1f %10.0f' % ('$watch', '$actual', '$med',
      100.0 * ($k1 - $k0) / $hz / d, ($e1 - $e0) / d))"
	done
done
