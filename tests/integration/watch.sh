#!/usr/bin/env bash
# watch.sh - live coherency (-o watch=, fs/watch/watch.h): changes made
# behind the mount are seen through a handle held open, beyond
# close-to-open, on a real ext4 volume, while a writer does 1000+ small
# writes a second elsewhere on the same filesystem (outside SOURCE: events
# the watcher must filter):
#   in both read modes (watch=auto, which is fanotify as root on ext4):
#     a reader holding the file open through the mount sees a stamp written
#     into the backing file within 100 ms at the 99th percentile (200
#     trials: the page is read through the held fd first, so it is cached,
#     then stamped on the backing, then polled);
#     a truncate behind the mount is seen by the held fd (size and bytes),
#     and a rename over a name and a rename away by new lookups, each
#     within 1 s (one sample each, on a machine shared with other work;
#     they take a few ms; without the watcher never: the mount has
#     entry_timeout=30, and the held fd keeps its pages);
#     the daemon's own writes through the mount count as ignored_own, never
#     as invalidated, and leave the file's revalidations at 0; the writer's
#     events outside SOURCE count as ignored_unknown;
#   a queue overflow (the daemon stopped while more events than the queue
#     holds happen, then a stamp whose own event is lost) drops everything:
#     the held fd sees the stamp, watch.overflows counts it (fanotify, with
#     events outside SOURCE; inotify, with events inside it);
#   watch=inotify: the same stamp trials (fewer) and the truncate;
#   watch=fanotify where it cannot work (tmpfs) stops the start with one
#     line, nothing mounted;
#   watch=off keeps the documented close-to-open behaviour: the held fd
#     still returns the old bytes after the change (both modes: the kernel's
#     page cache, or aheadfs's pages in direct mode), a reopen the new ones.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
afs_loop_ext4 128
S=$AFS_SRC
NOISE_DIR=$AFS_EXT4/elsewhere
mkdir "$NOISE_DIR"
TRIALS=${AFS_WATCH_TRIALS:-200}

# probe.py stamp MNTFILE BACKFILE N: N trials; each reads a page through
# the held fd (cached now), writes a new 8-byte stamp into that page of the
# backing file, and polls the held fd until it returns the stamp.  Prints
# "p50 p99 max" in ms; a trial not seen in 2 s counts 2000 ms.
# probe.py truncate MNTFILE BACKFILE: truncates the backing to 100 bytes
# with the fd held; prints ms until the held fd reports (fstat) and reads
# 100 bytes.
# probe.py stale MNTFILE BACKFILE MODE CONTROL: reads a page through the
# held fd (and one of CONTROL), writes a stamp behind the mount, waits
# 300 ms, prints what the held fd returns then ("old" or "new") and what a
# new open returns; "evicted" (kernel MODE) when CONTROL's page left the
# kernel's cache meanwhile.
probe_py='
import os, sys, time, random
cmd, mnt, back = sys.argv[1:4]
held = os.open(mnt, os.O_RDONLY)
bfd = os.open(back, os.O_RDWR)
size = os.fstat(bfd).st_size
def resident(fd, page):
    # Is the page in the kernel page cache of the mount file (mincore on a
    # mapping: no request reaches the daemon)?
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    n = (page + 1) * 4096
    addr = libc.mmap(None, n, 1, 1, fd, 0) # PROT_READ, MAP_SHARED
    vec = (ctypes.c_ubyte * (page + 1))()
    rc = libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(n), vec)
    libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(n))
    assert rc == 0, "mincore failed"
    return vec[page] & 1
def poll(cond, limit=2.0):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > limit:
            return limit
        time.sleep(0.0002)
    return time.monotonic() - t0
if cmd == "stamp":
    rnd = random.Random(14)
    lat = []
    for i in range(int(sys.argv[4])):
        off = rnd.randrange(0, size - 8) & ~7
        os.pread(held, 4096, off & ~4095)
        stamp = b"%08d" % (i + 1)
        t0 = time.monotonic()
        os.pwrite(bfd, stamp, off)
        def seen():
            return os.pread(held, 8, off) == stamp
        while not seen():
            if time.monotonic() - t0 > 2.0:
                break
            time.sleep(0.0002)
        lat.append(min(time.monotonic() - t0, 2.0))
    lat.sort()
    n = len(lat)
    print("%.2f %.2f %.2f" % (lat[n // 2] * 1e3, lat[min(n - 1, (n * 99) // 100)] * 1e3, lat[-1] * 1e3))
elif cmd == "truncate":
    os.pread(held, 65536, 0)
    os.ftruncate(bfd, 100)
    t = poll(lambda: os.fstat(held).st_size == 100 and len(os.pread(held, 65536, 0)) == 100)
    print("%.2f" % (t * 1e3))
elif cmd == "stale":
    ctl = os.open(sys.argv[5], os.O_RDONLY) # a file nobody changes
    os.pread(ctl, 8, 4096)
    old = os.pread(held, 8, 4096)
    os.pwrite(bfd, b"NEWBYTES", 4096)
    time.sleep(0.3)
    if sys.argv[4] == "kernel" and not resident(ctl, 1):
        print("evicted") # the unchanged page too: by others
        sys.exit(0)
    now = os.pread(held, 8, 4096)
    fresh = os.open(mnt, os.O_RDONLY)
    again = os.pread(fresh, 8, 4096)
    print("old" if now == old else "new" if now == b"NEWBYTES" else "other",
          "new" if again == b"NEWBYTES" else "old")
'
# noise.py FILE: 1200 small writes a second (twelve every 10 ms, 64 bytes
# at random offsets of a 1 MiB file) until SIGTERM; prints "writes
# seconds".
noise_py='
import os, sys, time, signal, random
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 20)
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
n, t0, buf, rnd = 0, time.monotonic(), b"n" * 64, random.Random(1)
nxt = t0
while not stop:
    for _ in range(12):
        os.pwrite(fd, buf, rnd.randrange(0, (1 << 20) - 64))
        n += 1
    nxt += 0.01
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
print(n, "%.3f" % (time.monotonic() - t0), flush=True)
'
python3 -c "$noise_py" "$NOISE_DIR/noise" >"$AFS_WORK/noise.out" &
NOISE_PID=$!
exit_with_noise()
{
	local rc=$?
	set +e
	kill "$NOISE_PID" 2>/dev/null
	wait "$NOISE_PID" 2>/dev/null
	_afs_rc() { return "$rc"; }
	_afs_rc
	_afs_cleanup
}
trap exit_with_noise EXIT

probe() { python3 -c "$probe_py" "$@"; }

# under LIMIT_MS VALUE_MS: VALUE <= LIMIT
under() { python3 -c 'import sys; sys.exit(not float(sys.argv[2]) <= float(sys.argv[1]))' "$@"; }

root_stats() { ac_stats "$AFS_MNT"; }

check_live()
{ # MODE WATCH TRIALS
	local mode=$1 watch=$2 trials=$3 d f lat p99 js before t
	d=$mode.$watch
	mkdir "$S/$d"
	f=$d/stamp
	"$AC_IO" fill "$S/$f" 256K 31
	AFS_MNT=$AFS_WORK/mnt.$d
	mkdir -p "$AFS_MNT"
	afs_mount -o "read_mode=$mode,watch=$watch,entry_timeout=30"
	local M=$AFS_MNT
	js=$(root_stats)
	local want=$watch
	[ "$watch" != auto ] || want=fanotify
	ac_assert "$js" "g('watch.mode') == '$want'" "[$d] the watcher in force"

	lat=$(probe stamp "$M/$f" "$S/$f" "$trials")
	echo "[$d] stamp seen through a held fd, $trials trials: p50 p99 max ms: $lat"
	p99=$(echo "$lat" | cut -d' ' -f2)
	under 100 "$p99" || afs_fail "[$d] p99 $p99 ms > 100 ms"
	js=$(root_stats)
	# The watcher did it: an invalidation per stamp (fewer when a
	# drop_caches elsewhere showed a stamp before its event was read and
	# the next write's event merged with it in the queue).
	echo "[$d] watcher: $(ac_get "$js" watch.invalidated) invalidated," \
		"$(ac_get "$js" watch.ignored_unknown) unknown"
	ac_assert "$js" "g('watch.invalidated') >= $trials // 2" "[$d] the stamps invalidated the file"

	"$AC_IO" fill "$S/$d/t" 1M 32
	t=$(probe truncate "$M/$d/t" "$S/$d/t")
	echo "[$d] truncate seen by the held fd in $t ms"
	under 1000 "$t" || afs_fail "[$d] truncate behind the mount not seen by the held fd ($t ms)"

	[ "$watch" != inotify ] || { afs_umount; return 0; }

	# Names: a rename over a name the kernel knows, and one away from it.
	"$AC_IO" fill "$S/$d/a" 64K 33
	"$AC_IO" fill "$S/$d/b" 64K 34
	"$AC_IO" fill "$S/$d/x" 64K 35
	cat "$M/$d/a" "$M/$d/b" "$M/$d/x" >/dev/null
	mv "$S/$d/a" "$S/$d/b"
	mv "$S/$d/x" "$S/$d/y"
	t=$(python3 - "$M/$d" "$S/$d" <<'EOF'
import os, sys, time
m, s = sys.argv[1:3]
want = open(s + "/b", "rb").read()
t0 = time.monotonic()
def ok():
    try:
        got = open(m + "/b", "rb").read()
    except OSError:
        return False
    return got == want and not os.path.exists(m + "/x") and os.path.exists(m + "/y")
while not ok() and time.monotonic() - t0 < 2:
    time.sleep(0.001)
print("%.2f" % ((time.monotonic() - t0) * 1e3))
EOF
)
	echo "[$d] renames seen by new lookups in $t ms"
	under 1000 "$t" || afs_fail "[$d] renames behind the mount not seen by a new lookup ($t ms)"

	# The daemon's own writes are not outside events.
	"$AC_IO" fill "$S/$d/own" 64K 36
	cat "$M/$d/own" >/dev/null
	sleep 0.2
	before=$(root_stats)
	# The fill's own events (written behind the mount) may still be on
	# their way and count one change: the count must not move from here.
	own_before=$(ac_get "$(ac_stats "$M/$d/own")" revalidations)
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for i in range(100):
    os.pwrite(fd, b"own write %03d" % i, i * 512)
os.close(fd)
os.truncate(sys.argv[1], 32768)
os.chmod(sys.argv[1], 0o600)
' "$M/$d/own"
	sleep 0.3
	js=$(root_stats)
	# (fanotify merges a file's queued events: fewer than 100 arrive)
	ac_assert "$js" "g('watch.ignored_own') > $(ac_get "$before" watch.ignored_own)" \
		"[$d] the daemon's own writes count as its own"
	ac_assert "$js" "g('watch.invalidated') == $(ac_get "$before" watch.invalidated)" \
		"[$d] the daemon's own writes invalidated nothing"
	ac_assert "$(ac_stats "$M/$d/own")" "g('revalidations') == $own_before" \
		"[$d] the daemon's own writes are no change behind the mount"
	ac_assert "$js" "g('watch.ignored_unknown') > $(ac_get "$before" watch.ignored_unknown)" \
		"[$d] the writer outside SOURCE is filtered as unknown"
	ac_assert "$js" "g('watch.overflows') == 0"
	afs_umount
}

# overflow.py MNTFILE BACKFILE DIR PID: with the daemon PID stopped, make
# and remove more files in DIR than a queue holds, then stamp BACKFILE
# (its event is lost: the queue is full) and resume the daemon; prints ms
# until the held fd shows the stamp.
overflow_py='
import os, sys, time, signal
mnt, back, d, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
held = os.open(mnt, os.O_RDONLY)
os.pread(held, 4096, 0)
os.kill(pid, signal.SIGSTOP)
try:
    for i in range(10000):
        p = "%s/o%d" % (d, i)
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
        os.unlink(p)
    fd = os.open(back, os.O_WRONLY)
    os.pwrite(fd, b"OVERFLOW", 0)
    os.close(fd)
finally:
    os.kill(pid, signal.SIGCONT)
t0 = time.monotonic()
while os.pread(held, 8, 0) != b"OVERFLOW" and time.monotonic() - t0 < 5:
    time.sleep(0.001)
print("%.2f" % ((time.monotonic() - t0) * 1e3))
'

check_overflow()
{ # WATCH DIR: the events' directory
	local watch=$1 dir=$2 d t js
	d=overflow.$watch
	mkdir -p "$S/$d" "$dir"
	"$AC_IO" fill "$S/$d/f" 64K 51
	AFS_MNT=$AFS_WORK/mnt.$d
	mkdir -p "$AFS_MNT"
	afs_mount -o "watch=$watch"
	# A drop_caches elsewhere would show the stamp without the overflow's
	# drop: inconclusive, tried again.
	local try drops
	for try in 1 2 3; do
		drops=$(ac_drops)
		t=$(python3 -c "$overflow_py" "$AFS_MNT/$d/f" "$S/$d/f" "$dir" "$AFS_PID")
		sleep 0.5 # a drop is counted when it has finished
		[ "$(ac_drops)" = "$drops" ] && break
		echo "[$d] a drop_caches ran meanwhile: inconclusive, again"
		"$AC_IO" fill "$S/$d/f" 64K $((51 + try))
		cat "$AFS_MNT/$d/f" >/dev/null
	done
	echo "[$d] after an overflow the held fd saw the stamp in $t ms"
	under 1000 "$t" || afs_fail "[$d] the stamp behind an overflow not seen ($t ms)"
	# The queue before the overflow event is worked through first.
	for ((try = 0; try < 50; try++)); do
		js=$(root_stats)
		[ "$(ac_get "$js" watch.overflows)" = 0 ] || break
		sleep 0.1
	done
	ac_assert "$js" "g('watch.overflows') >= 1" "[$d] the overflow counted"
	afs_umount
}

check_off()
{ # MODE
	local mode=$1 d out
	d=$mode.off
	mkdir "$S/$d"
	AFS_MNT=$AFS_WORK/mnt.$d
	mkdir -p "$AFS_MNT"
	afs_mount -o "read_mode=$mode,watch=off"
	ac_assert "$(root_stats)" "g('watch.mode') == 'off' and g('watch.events') == 0" "[$d]"
	# A drop_caches meanwhile (any test on the machine: ctest's lock
	# reaches only this run's) empties the kernel's copy: inconclusive,
	# tried again on a fresh file.
	# In kernel mode the probe also asks mincore whether an unchanged
	# file's page, cached as the changed one was, is still in the kernel's
	# cache: evicted too, by something else, it is inconclusive.
	local try drops
	for try in 1 2 3 4 5; do
		"$AC_IO" fill "$S/$d/f$try" 64K 41
		"$AC_IO" fill "$S/$d/c$try" 64K 42
		drops=$(ac_drops)
		out=$(probe stale "$AFS_MNT/$d/f$try" "$S/$d/f$try" "$mode" \
			"$AFS_MNT/$d/c$try")
		sleep 0.5 # a drop is counted when it has finished
		[ "$(ac_drops)" = "$drops" ] && [ "$out" != evicted ] && break
		echo "[$d] the kernel's copy was dropped meanwhile ($out): inconclusive, again"
		out=
	done
	if [ -z "$out" ]; then
		echo "[$d] NOT CHECKED: the kernel's copy was dropped by others in every try"
		afs_umount
		return 0
	fi
	echo "[$d] held fd after a change behind the mount: $out (held, reopened)"
	[ "$out" = "old new" ] ||
		afs_fail "[$d] watch=off: expected the old bytes through the held fd and the new after a reopen, got '$out'"
	afs_umount
}

for mode in kernel direct; do
	check_live "$mode" auto "$TRIALS"
	check_off "$mode"
done
check_live kernel inotify 50
check_overflow auto "$NOISE_DIR/overflow"
check_overflow inotify "$S/overflow.inotify/many"

# An explicit backend that cannot work is a start-up error, nothing
# mounted: fanotify on a filesystem whose handles it cannot decode (tmpfs).
BAD=$AFS_WORK/tmpfs
mkdir -p "$BAD" "$AFS_WORK/mnt.bad"
mount -t tmpfs -o size=1M afs-watch-test "$BAD"
rc=0
out=$("$AHEADFS" -f -o watch=fanotify "$BAD" "$AFS_WORK/mnt.bad" 2>&1) || rc=$?
umount "$BAD"
echo "watch=fanotify on tmpfs: exit $rc: $out"
[ "$rc" = 1 ] || afs_fail "watch=fanotify on tmpfs: exit $rc, not 1"
case $out in
*"-o watch=fanotify: fanotify: "*) ;;
*) afs_fail "watch=fanotify on tmpfs: no clear error: $out" ;;
esac
! afs_is_mounted "$AFS_WORK/mnt.bad" || afs_fail "watch=fanotify on tmpfs: mounted"

kill "$NOISE_PID"
wait "$NOISE_PID" || true
read -r writes secs <"$AFS_WORK/noise.out" || afs_fail "the writer reported nothing"
rate=$(python3 -c "print(int($writes / $secs))")
echo "writer elsewhere on the backing: $writes writes in $secs s ($rate/s)"
[ "$rate" -ge 1000 ] || afs_fail "the background writer managed only $rate writes/s"
