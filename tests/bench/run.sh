#!/usr/bin/env bash
# run.sh - the benchmark: every seed workload side by side on one real ext4
# volume -- the backing directly, FUSE peers, aheadfs in both read modes -- on
# an unthrottled and on an IOPS-bound device, under memory limits and behind an
# NFS re-export; cold caches, fresh mounts, ratios to the backing; and what
# each costs in CPU time.  With --cores: the cost of the path itself, 1 ...
# nproc readers on a tmpfs backing.
#
# Usage: tests/bench/run.sh [--quick|--smoke|--cores] [-s SIZE] [-t TARGETS]
#                           [-r RUNS] [-p PROFILES] [-i IOPS] [-n READERS]
#                           [-c CAP] [-w REGEX] [-o RESULTS.md]
#   (no mode) the full run: 2 GiB file, 2 runs, 1 GiB (5 s cap) per read
#             cell, 20 s slow streams, 2 GiB of writes, 128 MiB NFS files
#   --quick   a check in minutes: 512 MiB file, 1 run, short cells
#   --smoke   tiny sizes, a few rows per workload group (on the iops profile
#             only the read, random and NFS cold rows): the ctest smoke test;
#             asserts only that every cell produced a number (and a CPU
#             figure) or a reason
#   --cores   the cost of the path itself: the backing is a tmpfs (no loop
#             device, no throttle, no device profiles), READERS readers, three
#             workloads: each reader its own file, 128 KiB reads (files); one
#             file opened per 64 KiB request by N threads (per-request);
#             random 8 KiB reads by N threads over a file read once through
#             the mount before the clock starts, so hits after that first
#             pass (random).  Per cell: GB/s summed over the readers,
#             CPU-seconds per GiB delivered (daemon + readers, the cell's
#             cgroup) and its ratio to the backing's, cores busy (that CPU
#             time / the wall time of the readers).  1 run, CAP 2 s.  Exits
#             1 when a cell holds neither figures nor a SKIP (a peer not
#             installed): a reader that failed, a daemon that died
#   SIZE      test file size (default by mode).  --cores: each reader's own
#             file; the one-file workloads read a file of SIZE × the most
#             READERS (per-request) or SIZE (random); default MemTotal / 8 /
#             the most READERS, at most 512 MiB, in 16 MiB steps
#   TARGETS   comma list (default backing,bindfs,mergerfs,aheadfs,aheadfs-direct;
#             --cores: backing,bindfs,mergerfs,aheadfs,
#             aheadfs-passthrough=writes,aheadfs-opens=none,
#             aheadfs-read_mode=direct+passthrough=writes: a tmpfs holds
#             every file whole, so the default gives every reader the
#             kernel's passthrough, and passthrough=writes is what measures
#             aheadfs's own path):
#             backing         the ext4 directory itself (--cores: the tmpfs)
#             bindfs          Debian's bindfs, a plain FUSE passthrough
#             mergerfs        Debian's mergerfs -o cache.files=off (and
#                             minfreespace=0: the volume is small)
#             aheadfs         aheadfs with its defaults (read_mode=kernel,
#                             passthrough=resident)
#             aheadfs-direct  aheadfs -o read_mode=direct
#             aheadfs-OPTS    aheadfs -o OPTS, options joined by '+'
#                             (e.g. aheadfs-context_ra=off+ra_max=4M; with
#                             transport=uring the run sets the fuse
#                             module's enable_uring to Y, and back after)
#             aheadfs-base    the daemon $AHEADFS_BASE with its defaults: an
#                             earlier build, for a before/after comparison
#                             in one run
#             aheadfs-base-OPTS  the same with -o OPTS ('+'-joined)
#   RUNS      repetitions per cell, targets in a rotated order each time; the
#             median is reported
#   PROFILES  device profiles, comma list (default fast,iops):
#             fast  the loop device as it is (--direct-io=on)
#             iops  the same device throttled to IOPS reads a second through
#                   the blkio cgroup (blkio.throttle.read_iops_device)
#   IOPS      the iops profile's limit (default 300)
#   READERS   --cores: reader counts, comma list (default 1, 2, 4, ... below
#             nproc, nproc, 2 × nproc)
#   CAP       the time cap of a read cell, seconds (default by mode)
#   REGEX     only the rows whose name matches (grep -E)
#   RESULTS   write the tables there (markdown), every run as RESULTS.csv, the
#             medians per profile as RESULTS.PROFILE.tsv (workload, target,
#             MB/s) and their plots as RESULTS.PROFILE.png (tests/bench/plot.sh);
#             the logs of daemons that died in RESULTS.logs/.  Default: a new
#             directory under /var/tmp, printed at the end.
#             Tables: per profile, MB/s with the ratio to the backing;
#             CPU-seconds per GiB delivered with the ratio to the backing's;
#             per cell the device's and the cgroup's I/O counts, memory, the
#             machine's busy CPU, the cell's CPU and CPU per GiB, the
#             daemon's share of it per GiB.  --cores: per
#             workload, readers × targets, each cell "GB/s · CPU s/GiB (×
#             the backing's) · cores busy".  RESULTS.csv columns: profile,
#             workload, target, run, status, MBps, bytes, dev_ios, dev_bytes,
#             cgroup_ios, daemon_hwm_kb, cgroup_peak_bytes, p50_us, p99_us,
#             extra, cpu_s (the machine's), cell_cpu_s, wall_s,
#             cpu_s_per_gib, daemon_cpu_s (the FUSE daemon's own
#             share of cell_cpu_s; - for the backing), cell_seconds.
# Environment: AHEADFS (the daemon), AHEADFS_BASE (the aheadfs-base target's
# daemon), READ_PATTERNS and NFS_READ (the workload
# programs); default to build/release, and the two programs are compiled from
# this directory when not built.  AFS_BENCH_NO_APT=1: install nothing (a
# target whose program is missing reports "not installed").
# AFS_BENCH_CGROUP=v1|v2: where the CPU time is counted (default: the cgroup
# v1 cpuacct hierarchy where there is one, else cgroup v2's cpu.stat).
# Needs root: loop devices, drop_caches, cgroups, mounts; the memory rows and
# the iops profile need cgroup v1's memory and blkio controllers.  Missing
# Debian packages (bindfs, mergerfs, nfs-ganesha, nfs-ganesha-vfs,
# libnfs-dev, gnuplot-nox) are installed with apt-get; a target or row that
# still cannot run reports why in its cell.
#
# Every cell: a fresh cgroup (blkio, memory, and the CPU accounting's)
# holding the daemon, the NFS server and the reader; a fresh mount; `sync;
# echo 3 > drop_caches`; the workload; the device's own counters
# (/sys/block/loopN/stat), the cgroup's throttled counters
# (blkio.throttle.io_serviced) and its CPU time (cpuacct.usage, or cpu.stat
# usage_usec on cgroup v2) just before and just after it; the daemon's VmHWM
# and the cgroup's memory.max_usage_in_bytes before it ends.  CPU time counts
# every task of the cgroup (the daemon's threads, the NFS server, the readers),
# not the kernel's own threads; where no cgroup can count it, the machine's
# busy CPU stands in and the header says so.  A daemon that dies is reported
# as DIED (OOM when the cgroup's oom_kill count rose) and its log kept.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/bench
t_start=$(date +%s)

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; }
mode=full
args=()
for a in "$@"; do
	case $a in
	--quick) mode=quick ;;
	--smoke) mode=smoke ;;
	--cores) mode=cores ;;
	--help) usage; exit 0 ;;
	*) args+=("$a") ;;
	esac
done
set -- ${args[@]+"${args[@]}"}

targets= profiles=fast,iops iops=300 only=. out= size= runs= readers= cap_opt=
while getopts s:t:r:p:i:n:c:w:o:h opt; do
	case $opt in
	s) size=$OPTARG ;;
	t) targets=$OPTARG ;;
	r) runs=$OPTARG ;;
	p) profiles=$OPTARG ;;
	i) iops=$OPTARG ;;
	n) readers=$OPTARG ;;
	c) cap_opt=$OPTARG ;;
	w) only=$OPTARG ;;
	o) out=$OPTARG ;;
	*) usage >&2; exit 2 ;;
	esac
done

# Sizes and durations per mode: file, runs, bytes per read cell and its time
# cap, slow-stream seconds, write totals, NFS file size, random reads, the
# time limit of one workload.
case $mode in
full) d_size=2G d_runs=2 limit=1G cap=5 slow_s=20 wtotal=2G ddtotal=1536M nfs_file=128M nrand=1000 tmo=600 ;;
quick) d_size=512M d_runs=1 limit=256M cap=1.5 slow_s=3 wtotal=256M ddtotal=192M nfs_file=32M nrand=300 tmo=120 ;;
smoke) d_size=24M d_runs=1 limit=8M cap=0.3 slow_s=0.3 wtotal=8M ddtotal=6M nfs_file=2M nrand=50 tmo=60 ;;
cores) d_size= d_runs=1 limit= cap=2 tmo=120 ;;
esac
if [ -n "$cap_opt" ]; then
	if ! [[ $cap_opt =~ ^[0-9]*\.?[0-9]+$ ]] || ! awk -v c="$cap_opt" 'BEGIN {exit !(c > 0)}'; then
		echo "run.sh: -c: a time cap in seconds, not '$cap_opt'" >&2
		exit 2
	fi
	cap=$cap_opt
fi
if [ "$mode" = cores ]; then
	targets=${targets:-backing,bindfs,mergerfs,aheadfs,aheadfs-passthrough=writes,aheadfs-opens=none,aheadfs-read_mode=direct+passthrough=writes}
	profiles=tmpfs
	if [ -z "$readers" ]; then
		n=$(nproc) r=1
		while [ "$r" -lt "$n" ]; do readers+=$r, r=$((r * 2)); done
		readers+=$n,$((2 * n))
	fi
	IFS=, read -r -a nlist <<<"$readers"
	maxr=0
	for r in "${nlist[@]}"; do
		if ! [[ $r =~ ^[1-9][0-9]*$ ]] || [ "$r" -gt 256 ]; then
			echo "run.sh: -n: reader counts from 1 to 256, not '$r'" >&2
			exit 2
		fi
		[ "$r" -gt "$maxr" ] && maxr=$r
	done
	if [ -z "$size" ]; then
		# MemTotal / 8 / the most readers: the own files and the one file
		# on tmpfs, the mount's page cache and the daemon's cache fit in
		# half the memory.
		d_size=$(awk -v r="$maxr" '$1 == "MemTotal:" {m = int($2 / 1024 / 8 / r / 16) * 16
			if (m > 512) m = 512; if (m < 16) m = 16; print m "M"}' /proc/meminfo)
	fi
elif [ -n "$readers" ]; then
	echo "run.sh: -n READERS is for --cores" >&2
	exit 2
fi
targets=${targets:-backing,bindfs,mergerfs,aheadfs,aheadfs-direct}
size=${size:-$d_size} runs=${runs:-$d_runs}
bytes=$(numfmt --from=iec "$size")
if [ "$mode" = cores ]; then
	limit=$size
	# The own files and the one file, in bytes, and what memory has room for.
	cores_total=$((2 * bytes * maxr))
	avail=$(awk '$1 == "MemAvailable:" {printf "%.0f", $2 * 1024}' /proc/meminfo)
	if [ "$cores_total" -gt $((avail / 2)) ]; then
		echo "run.sh: --cores: $size × $maxr readers × 2 files on tmpfs is more than half the available memory ($((avail >> 20)) MiB): a smaller -s" >&2
		exit 2
	fi
fi
[ "$(numfmt --from=iec "$limit")" -gt "$bytes" ] && limit=$size

[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (loop devices, cgroups, drop_caches)" >&2; exit 77; }
[ -c /dev/fuse ] || { echo "run.sh: no /dev/fuse" >&2; exit 77; }

# need CHECK PACKAGE...: apt-get install the packages unless the shell
# command CHECK succeeds; waits for the dpkg lock of a concurrent apt, updates
# the lists once if a package is not found.  Succeeds if CHECK then does.
apt_updated=
need() {
	local check=$1
	shift
	eval "$check" >/dev/null 2>&1 && return 0
	[ -n "${AFS_BENCH_NO_APT:-}" ] && return 1
	local apt=(apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends)
	if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" "$@" >/dev/null 2>&1; then
		if [ -z "$apt_updated" ]; then
			apt_updated=1
			apt-get -o DPkg::Lock::Timeout=300 update -q >/dev/null 2>&1 || true
		fi
		DEBIAN_FRONTEND=noninteractive "${apt[@]}" "$@" >/dev/null 2>&1 || true
	fi
	eval "$check" >/dev/null 2>&1
}

work=$(mktemp -d /var/tmp/aheadfs-bench.XXXXXX)
if [ -z "$out" ]; then
	out=$(mktemp -d /var/tmp/aheadfs-bench-results.XXXXXX)/results.md
fi
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
logs=$out.logs
loopdev= loopname= majmin= mnt=$work/mnt vol=$work/vol daemon= server=
cg_blk= cg_mem= cg_cpu=
dirty_saved=()

# Cgroups: one parent per hierarchy under this shell's own cgroup, one child
# per cell.
# v1_dir CONTROLLER: this shell's cgroup in the v1 hierarchy that has the
# controller (alone or co-mounted, as cpu,cpuacct); nothing where none has.
v1_dir() {
	local mp cg
	mp=$(awk -v c="$1" '$3 == "cgroup" {n = split($4, o, ",")
		for (i = 1; i <= n; i++) if (o[i] == c) {print $2; exit}}' /proc/self/mounts)
	cg=$(awk -F: -v c="$1" '{n = split($2, o, ",")
		for (i = 1; i <= n; i++) if (o[i] == c) print $3}' /proc/self/cgroup)
	[ -n "$mp" ] && [ -n "$cg" ] && [ -f "$mp/cgroup.procs" ] || return 0
	mp=$mp$cg
	echo "${mp%/}"
}
# v2_dir: this shell's cgroup in the unified (cgroup2) hierarchy, or nothing.
v2_dir() {
	local mp cg
	mp=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
	cg=$(awk -F: '$1 == "0" && $2 == "" {print $3}' /proc/self/cgroup)
	[ -n "$mp" ] && [ -n "$cg" ] && [ -f "$mp/cgroup.procs" ] || return 0
	mp=$mp$cg
	echo "${mp%/}"
}
blk_root= mem_root= cpu_root= cpu_kind=
d=$(v1_dir blkio)
[ -n "$d" ] && blk_root=$d/aheadfs-bench.$$
d=$(v1_dir memory)
[ -n "$d" ] && mem_root=$d/aheadfs-bench.$$
case ${AFS_BENCH_CGROUP:-} in
"") d=$(v1_dir cpuacct) cpu_kind=v1
	[ -n "$d" ] || d=$(v2_dir) cpu_kind=v2 ;;
v1) d=$(v1_dir cpuacct) cpu_kind=v1 ;;
v2) d=$(v2_dir) cpu_kind=v2 ;;
*) echo "run.sh: AFS_BENCH_CGROUP is v1 or v2, not '$AFS_BENCH_CGROUP'" >&2; exit 2 ;;
esac
[ -n "$d" ] && cpu_root=$d/aheadfs-bench.$$

# In the mount table, even when stat fails (a dead daemon's ENOTCONN).
is_mounted() { awk -v m="$1" '$2 == m {f = 1} END {exit !f}' /proc/self/mounts; }

stop_pid() { # PID: TERM, then KILL after 10 s
	local pid=$1
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cg_remove() { # DIR: stop what is still in it (a hung reader), remove it
	local d=$1 p
	[ -n "$d" ] && [ -d "$d" ] || return 0
	for _ in $(seq 50); do
		[ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || break
		while read -r p; do
			kill -KILL "$p" 2>/dev/null || true
		done <"$d/cgroup.procs"
		sleep 0.1
	done
	rmdir "$d" 2>/dev/null || { sleep 0.5; rmdir "$d" 2>/dev/null || true; }
}

cleanup() {
	set +e
	[ -n "$server" ] && stop_pid "$server"
	is_mounted "$mnt" && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; }
	[ -n "$daemon" ] && stop_pid "$daemon"
	cg_remove "$cg_blk"
	cg_remove "$cg_mem"
	cg_remove "$cg_cpu"
	[ -n "$blk_root" ] && [ -d "$blk_root" ] && rmdir "$blk_root"
	[ -n "$mem_root" ] && [ -d "$mem_root" ] && rmdir "$mem_root"
	[ -n "$cpu_root" ] && [ -d "$cpu_root" ] && rmdir "$cpu_root"
	is_mounted "$vol" && umount "$vol"
	[ -n "$loopdev" ] && losetup -d "$loopdev"
	local kv
	for kv in "${dirty_saved[@]}"; do
		# A *_bytes of 0 means "the ratio rules", which writing the ratio did.
		[[ $kv == *_bytes=0 ]] || echo "${kv#*=}" >"/proc/sys/vm/${kv%%=*}"
	done
	[ -n "$uring_saved" ] && echo "$uring_saved" >"$uring_param"
	rm -rf "$work"
}
# A target with transport=uring needs the fuse module's enable_uring: set
# to Y for the run, put back after it.
uring_param=/sys/module/fuse/parameters/enable_uring uring_saved=
if [[ ,$targets, == *transport=uring* ]] && [ -w "$uring_param" ]; then
	uring_saved=$(cat "$uring_param")
	echo Y >"$uring_param"
fi
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$mnt" "$vol"

# --- programs -------------------------------------------------------------
AHEADFS=${AHEADFS:-$top/build/release/fs/aheadfs}
READ_PATTERNS=${READ_PATTERNS:-$top/build/release/tests/bench/read_patterns}
NFS_READ=${NFS_READ:-$top/build/release/tests/bench/nfs_read}
[ -x "$AHEADFS" ] || { echo "run.sh: $AHEADFS not built (cmake --build build/release)" >&2; exit 1; }
cflags=(-std=c11 -O2 -Wall -Wextra -D_GNU_SOURCE)
if [ ! -x "$READ_PATTERNS" ]; then
	command -v cc >/dev/null ||
		{ echo "run.sh: $READ_PATTERNS not built and no C compiler: set READ_PATTERNS" >&2; exit 1; }
	READ_PATTERNS=$work/read_patterns
	cc "${cflags[@]}" -o "$READ_PATTERNS" "$here/read_patterns.c" -pthread
fi
nfs_why=
if [ "$mode" = cores ]; then
	nfs_why="no NFS rows in --cores"
elif [ ! -x "$NFS_READ" ]; then
	NFS_READ=$work/nfs_read
	need 'pkg-config --exists libnfs' pkg-config libnfs-dev || true
	# shellcheck disable=SC2046 # pkg-config's flags are words
	if ! pkg-config --exists libnfs 2>/dev/null ||
		! cc "${cflags[@]}" -o "$NFS_READ" "$here/nfs_read.c" \
			$(pkg-config --cflags --libs libnfs) -pthread 2>"$work/nfs_read.cc"; then
		nfs_why="no libnfs-dev"
	fi
fi
[ -n "$nfs_why" ] || need 'command -v ganesha.nfsd && ls /usr/lib/*/ganesha/libfsalvfs.so' \
	nfs-ganesha nfs-ganesha-vfs || nfs_why=${nfs_why:-"no nfs-ganesha-vfs"}

IFS=, read -r -a tlist <<<"$targets"
IFS=, read -r -a plist <<<"$profiles"
declare -A target_why
for t in "${tlist[@]}"; do
	case $t in
	bindfs) need 'command -v bindfs' bindfs || target_why[$t]="bindfs not installed" ;;
	mergerfs) need 'command -v mergerfs' mergerfs || target_why[$t]="mergerfs not installed" ;;
	aheadfs-base | aheadfs-base-*) [ -x "${AHEADFS_BASE:-}" ] ||
		{ echo "run.sh: target aheadfs-base needs AHEADFS_BASE, an aheadfs binary" >&2; exit 2; } ;;
	backing | aheadfs*) ;;
	*) echo "run.sh: unknown target $t" >&2; exit 2 ;;
	esac
done
for p in "${plist[@]}"; do
	case $mode,$p in
	cores,tmpfs | [!c]*,fast | [!c]*,iops) ;;
	*) echo "run.sh: unknown profile $p" >&2; exit 2 ;;
	esac
done

# --- the volume -----------------------------------------------------------
if [ "$mode" = cores ]; then
	# The backing is a tmpfs: no device, so what a cell measures is the
	# cost of the path.  Reader i's own file own.i, the one file big
	# (SIZE × the most readers): copies of one random chunk, written in
	# parallel.
	mount -t tmpfs -o size=$((cores_total + (128 << 20))),mode=755 aheadfs-bench "$vol"
	mkdir "$vol/data"
	echo "run.sh: writing $maxr files of $size and one of $(numfmt --to=iec $((bytes * maxr))) on tmpfs" >&2
	chunk=$((bytes < (64 << 20) ? bytes : 64 << 20))
	head -c "$chunk" /dev/urandom >"$vol/chunk"
	fill() { # FILE BYTES
		{ while cat "$vol/chunk"; do :; done; } 2>/dev/null | head -c "$2" >"$1" || true
		[ "$(stat -c %s "$1")" = "$2" ] || { echo "run.sh: could not write $1" >&2; return 1; }
	}
	jobs_max=$(nproc) pids=()
	for i in big $(seq 0 $((maxr - 1))); do
		f=$vol/data/own.$i size_i=$bytes
		[ "$i" = big ] && f=$vol/data/big size_i=$((bytes * maxr))
		fill "$f" "$size_i" &
		pids+=($!)
		if [ "${#pids[@]}" -ge "$jobs_max" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
	done
	for p in "${pids[@]}"; do wait "$p"; done
	rm "$vol/chunk"
	blk_root=
else
	wbytes=$(numfmt --from=iec "$wtotal")
	nfs_bytes=$(numfmt --from=iec "$nfs_file")
	warm_bytes=$(numfmt --from=iec "$limit")
	truncate -s $((bytes + warm_bytes + wbytes + 4 * nfs_bytes + 512 * 1024 * 1024)) "$work/ext4.img"
	loopdev=$(losetup --direct-io=on -f --show "$work/ext4.img")
	loopname=${loopdev#/dev/}
	majmin=$(cat "/sys/block/$loopname/dev")
	mkfs.ext4 -q -F "$loopdev"
	mount "$loopdev" "$vol"
	mkdir "$vol/data" "$vol/data/nfs" "$vol/data/w"
	echo "run.sh: writing a $size test file on $loopdev (ext4, direct-io loop)" >&2
	head -c "$bytes" /dev/urandom >"$vol/data/file"
	head -c "$warm_bytes" /dev/urandom >"$vol/data/warm"
	for i in 0 1 2 3; do head -c "$nfs_bytes" /dev/urandom >"$vol/data/nfs/f$i"; done
	sync

	# Writes: pin the dirty-page thresholds to the kernel's defaults for the run
	# (restored on exit) and print them.
	for k in dirty_background_bytes dirty_bytes dirty_background_ratio dirty_ratio dirty_expire_centisecs dirty_writeback_centisecs; do
		dirty_saved+=("$k=$(cat /proc/sys/vm/$k)")
	done
	# Restore in an order that leaves the *_bytes settings as they were.
	dirty_saved=("${dirty_saved[@]:2}" "${dirty_saved[@]:0:2}")
	echo 10 >/proc/sys/vm/dirty_background_ratio
	echo 20 >/proc/sys/vm/dirty_ratio
	echo 3000 >/proc/sys/vm/dirty_expire_centisecs
	echo 500 >/proc/sys/vm/dirty_writeback_centisecs
	dirty_now=$(for k in dirty_background_bytes dirty_bytes dirty_background_ratio dirty_ratio dirty_expire_centisecs dirty_writeback_centisecs; do printf '%s=%s ' "$k" "$(cat /proc/sys/vm/$k)"; done)
fi

# A controller whose hierarchy cannot take a child counts as absent: its rows
# and profile report SKIP.
if [ -n "$blk_root" ] && ! mkdir -p "$blk_root" 2>/dev/null; then blk_root=; fi
if [ -n "$mem_root" ] && ! mkdir -p "$mem_root" 2>/dev/null; then mem_root=; fi

# CPU time: the cell cgroup's, where a child can be made, a process moved into
# it and its count read; else the machine's busy CPU.
cpu_file() { # CGROUP: the file that counts its CPU time
	if [ "$cpu_kind" = v1 ]; then echo "$1/cpuacct.usage"; else echo "$1/cpu.stat"; fi
}
cell_cpu_ns() { # [CGROUP]: its CPU time so far, ns (default the cell's); nothing without one
	local d=${1:-$cg_cpu}
	[ -n "$d" ] || return 0
	if [ "$cpu_kind" = v1 ]; then
		cat "$(cpu_file "$d")"
	else
		awk '$1 == "usage_usec" {print $2 "000"}' "$(cpu_file "$d")"
	fi
}
cpu_src="the machine's busy CPU (/proc/stat, every core): no cgroup here counts a cell's CPU time"
if [ -n "$cpu_root" ] && mkdir -p "$cpu_root" 2>/dev/null && mkdir "$cpu_root/probe" 2>/dev/null; then
	if (echo "$BASHPID" >"$cpu_root/probe/cgroup.procs") 2>/dev/null &&
		[[ $(cell_cpu_ns "$cpu_root/probe") =~ ^[0-9]+$ ]]; then
		if [ "$cpu_kind" = v1 ]; then
			cpu_src="the cell cgroup's cpuacct.usage (cgroup v1)"
		else
			cpu_src="the cell cgroup's cpu.stat usage_usec (cgroup v2)"
		fi
	else
		cpu_kind=
	fi
	cg_remove "$cpu_root/probe"
else
	cpu_kind=
fi
if [ -z "$cpu_kind" ]; then
	[ -n "$cpu_root" ] && [ -d "$cpu_root" ] && rmdir "$cpu_root"
	cpu_root=
fi

# --- rows -------------------------------------------------------------------
# kind|memory limit (none or MiB)|name|arguments
# --cores: one row per workload and reader count.
cores_w=(cfiles cper crand)
cores_label() {
	case $1 in
	cfiles) echo "own files, 128 KiB reads" ;;
	cper) echo "one file, open per 64 KiB request" ;;
	crand) echo "random 8 KiB, hits after the first pass" ;;
	esac
}
cores_name() { echo "$(cores_label "$1"), $2 reader$([ "$2" = 1 ] || echo s)"; }
if [ "$mode" = cores ]; then
	rows=()
	for w in "${cores_w[@]}"; do
		for r in "${nlist[@]}"; do
			case $w in
			cfiles) a="files --threads $r --bs 128K" ;;
			cper) a="per-request --threads $r --bs 64K --latency 0" ;;
			crand) a="random --threads $r --bs 8K --count 1G --latency 0" ;;
			esac
			rows+=("$w|none|$(cores_name "$w" "$r")|$a")
		done
	done
else
	rows=(
		"read|none|seq 4 KiB|seq --bs 4K"
		"read|none|seq 128 KiB|seq --bs 128K"
		"read|none|seq 1 MiB|seq --bs 1M"
		"read|none|2 threads, one fd, 11 KiB|shared-fd --threads 2 --bs 11K"
		"read|none|open per request, 2 threads × 11 KiB|per-request --threads 2 --bs 11K"
		"read|none|open per request, 4 threads × 64 KiB|per-request --threads 4 --bs 64K"
		"read|none|interleaved 4 streams, 8 KiB|interleave --streams 4 --bs 8K"
		"read|none|column scan, 512 rows × 4 KiB|column --streams 512"
		"warm|none|column scan, 512 rows × 4 KiB, a daemon that ran before|column --streams 512"
		"read|512|column scan, 512 rows × 4 KiB, 512 MiB cgroup|column --streams 512"
		"read|1024|column scan, 2048 rows × 4 KiB, 1 GiB cgroup|column --streams 2048"
		"read|2048|column scan, 2048 rows × 4 KiB, 2 GiB cgroup|column --streams 2048"
		"rand|none|random 8 KiB ×$nrand|random --bs 8K --count $nrand"
		"rand|none|random 2 KiB ×$nrand|random --bs 2K --count $nrand"
		"rand|none|random 8 KiB ×$nrand, 1 + 4 thrashers|random --bs 8K --count $nrand --threads 5"
		"hot|none|hot 4 KiB (file already cached)|seq --bs 4K"
		"floor|none|floor: random 8 KiB, the file in the backing's page cache|random --bs 8K --count 20000"
		"floor|none|floor: open per request, 2 threads × 11 KiB, the file in the backing's page cache|per-request --threads 2 --bs 11K"
		"floor|none|floor: seq 128 KiB, the file in the backing's page cache|seq --bs 128K"
		"floor|none|floor: 2 threads, one fd, 11 KiB, the file in the backing's page cache|shared-fd --threads 2 --bs 11K"
		"floor|none|floor: interleaved 4 streams, 8 KiB, the file in the backing's page cache|interleave --streams 4 --bs 8K"
		"big|none|big file stream, no memory limit|seq --bs 128K --tenths 1"
		"big|256|big file stream, 256 MiB cgroup|seq --bs 128K --tenths 1"
		"warm|256|big file stream, 256 MiB cgroup, a daemon that ran before|seq --bs 128K --tenths 1"
		"big|64|big file stream, 64 MiB cgroup|seq --bs 128K --tenths 1"
		"slow|none|64 slow streams, no memory limit|slow --streams 64 --bs 4K --rate 512K --seconds $slow_s"
		"slow|256|64 slow streams, 256 MiB cgroup|slow --streams 64 --bs 4K --rate 512K --seconds $slow_s"
		"slow|64|64 slow streams, 64 MiB cgroup|slow --streams 64 --bs 4K --rate 512K --seconds $slow_s"
		"slow|none|64 slow streams + 1 unpaced reader|slow --streams 64 --bs 4K --rate 512K --seconds $slow_s --fast 1"
		"write|none|write 8 threads × 64 KiB, through fsync|write --threads 8 --bs 64K --total $wtotal"
		"write|none|write 16 threads × 64 KiB, through fsync|write --threads 16 --bs 64K --total $wtotal"
		"write|none|write 3 streams × 1 MiB, through fsync|write --threads 3 --bs 1M --total $ddtotal"
		"nfs-cold|none|NFS, cold: 4 readers, a file each, 1 READ in flight|own --readers 4 --depth 1"
		"nfs-cold|none|NFS, cold: 4 readers of one file, 32 READs in flight each|shared --readers 4 --depth 32"
		"nfs-cold|none|NFS, cold: 8 interleaved streams over one file|interleave --streams 8"
		"nfs-hot|none|NFS, hot: 4 readers, a file each, 1 READ in flight|own --readers 4 --depth 1"
		"nfs-hot|none|NFS, hot: 4 readers of one file, 32 READs in flight each|shared --readers 4 --depth 32"
		"nfs-hot|none|NFS, hot: 8 interleaved streams over one file|interleave --streams 8"
	)
fi
if [ "$mode" = smoke ]; then
	# One or two rows of every workload group.
	smoke_re='^(seq 128 KiB|open per request, 2|column scan, 512 rows × 4 KiB(, a daemon.*)?$|random 8 KiB ×[0-9]+$|hot|big file stream, 64|64 slow streams, (no|64)|write 3|NFS, (cold: 4 readers of|hot: 8))'
	sel=()
	for r in "${rows[@]}"; do
		IFS='|' read -r _ _ n _ <<<"$r"
		grep -qE -- "$smoke_re" <<<"$n" && sel+=("$r")
	done
	rows=("${sel[@]}")
fi
sel=()
for r in "${rows[@]}"; do
	IFS='|' read -r _ _ n _ <<<"$r"
	grep -qE -- "$only" <<<"$n" && sel+=("$r")
done
rows=("${sel[@]}")

# --- one cell ---------------------------------------------------------------
cell_no=0
# The caller's shell (a subshell) joins the cell's cgroups, then runs "$@".
cg_exec() {
	[ -n "$cg_blk" ] && echo "$BASHPID" >"$cg_blk/cgroup.procs"
	[ -n "$cg_mem" ] && echo "$BASHPID" >"$cg_mem/cgroup.procs"
	[ -n "$cg_cpu" ] && echo "$BASHPID" >"$cg_cpu/cgroup.procs"
	exec "$@"
}

dev_stat() { # rd_ios rd_sect wr_ios wr_sect; zeros without a loop device (tmpfs)
	if [ -n "$loopname" ]; then
		awk '{print $1, $3, $5, $7}' "/sys/block/$loopname/stat"
	else
		echo 0 0 0 0
	fi
}
# The machine's busy CPU time so far, in clock ticks: user, nice, system,
# irq and softirq of every CPU (not idle, iowait or steal).
cpu_ticks() { awk '$1 == "cpu" {printf "%.0f\n", $2 + $3 + $4 + $7 + $8}' /proc/stat; }
clk_tck=$(getconf CLK_TCK)
# The daemon's own CPU time so far, clock ticks (utime + stime: every thread,
# the ended ones too); nothing without a daemon.
daemon_ticks() {
	[ -n "$daemon" ] && [ -r "/proc/$daemon/stat" ] || return 0
	sed 's/.*) //' "/proc/$daemon/stat" | awk '{print $12 + $13}'
}
cg_ios() { # reads and writes the cell's cgroup counted for the loop device
	[ -n "$cg_blk" ] || { echo "- -"; return; }
	awk -v d="$majmin" '$1 == d && $2 == "Read" {r = $3} $1 == d && $2 == "Write" {w = $3}
		END {print r + 0, w + 0}' "$cg_blk/blkio.throttle.io_serviced"
}
oom_kills() { [ -n "$cg_mem" ] && awk '$1 == "oom_kill" {print $2}' "$cg_mem/memory.oom_control" || echo 0; }

mount_target() { # TARGET LOG: mounts it at $mnt, the daemon in the cell's cgroups
	local t=$1 log=$2
	daemon=
	case $t in
	backing) return 0 ;;
	bindfs) (cg_exec bindfs -f "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	mergerfs) (cg_exec mergerfs -f -o cache.files=off,minfreespace=0 "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	aheadfs) (cg_exec "$AHEADFS" -f "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	aheadfs-direct) (cg_exec "$AHEADFS" -f -o read_mode=direct "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	aheadfs-base) (cg_exec "$AHEADFS_BASE" -f "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	aheadfs-base-*) (cg_exec "$AHEADFS_BASE" -f -o "$(tr + , <<<"${t#aheadfs-base-}")" "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	aheadfs-*) (cg_exec "$AHEADFS" -f -o "$(tr + , <<<"${t#aheadfs-}")" "$vol/data" "$mnt") 2>>"$log" & daemon=$! ;;
	esac
	for _ in $(seq 200); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$daemon" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

umount_target() {
	if is_mounted "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fi
	[ -n "$daemon" ] && stop_pid "$daemon"
	daemon=
	# A dead daemon's mount can need the lazy unmount after all.
	if is_mounted "$mnt"; then
		umount -l "$mnt" 2>/dev/null || true
	fi
}

nfs_port=$((20000 + $$ % 20000))
start_ganesha() { # EXPORT_DIR LOG
	local dir=$1 log=$2 i
	mkdir -p "$work/ganesha"
	cat >"$work/ganesha/ganesha.conf" <<-EOF
		NFS_CORE_PARAM {
			Bind_addr = 127.0.0.1;
			NFS_Port = $nfs_port;
			Protocols = 4;
			Enable_NLM = false;
			Enable_RQUOTA = false;
			Enable_UDP = false;
		}
		NFS_KRB5 { Active_krb5 = false; }
		NFSv4 { Graceless = true; RecoveryRoot = $work/ganesha/recovery; }
		EXPORT {
			Export_Id = 1;
			Path = $dir;
			Pseudo = /bench;
			Access_Type = RO;
			Squash = No_Root_Squash;
			SecType = sys;
			Protocols = 4;
			CLIENT { Clients = 127.0.0.1; Access_Type = RO; }
			FSAL { Name = VFS; }
		}
	EOF
	(cg_exec ganesha.nfsd -F -L "$log" -f "$work/ganesha/ganesha.conf" \
		-p "$work/ganesha/pid" -N NIV_EVENT) >>"$log" 2>&1 &
	server=$!
	for i in $(seq 100); do
		kill -0 "$server" 2>/dev/null || return 1
		if grep -q "NFS SERVER INITIALIZED" "$log" &&
			(exec 3<>"/dev/tcp/127.0.0.1/$nfs_port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# run_cell PROFILE TARGET ROW: sets cell_result to "status|MB/s|bytes|dev_ios|
# dev_bytes|cg_ios|hwm_kb|cg_peak|p50|p99|extra|machine_cpu_s|cell_cpu_s|
# wall_s|cpu_s_per_gib|daemon_cpu_s" and keeps what a dead daemon logged.
cell_fail() { cell_result="$1||||||${2:-}|${3:-}||||||||"; } # STATUS [HWM PEAK]
run_cell() {
	local profile=$1 t=$2 row=$3 kind memlim name wargs
	IFS='|' read -r kind memlim name wargs <<<"$row"
	cell_no=$((cell_no + 1))
	local log=$work/cell$cell_no.log status=ok line= reason=
	local path=$vol/data
	[ "$t" != backing ] && path=$mnt
	: >"$log"
	if [ -n "${target_why[$t]:-}" ]; then
		cell_fail "SKIP (${target_why[$t]})"
		return
	fi
	if [[ $kind == nfs-* ]] && [ -n "$nfs_why" ]; then
		cell_fail "SKIP ($nfs_why)"
		return
	fi
	if [ "$memlim" != none ] && [ -z "$mem_root" ]; then
		cell_fail "SKIP (no cgroup v1 memory controller)"
		return
	fi
	if [ "$profile" = iops ] && [ -z "$blk_root" ]; then
		cell_fail "SKIP (no cgroup v1 blkio controller)"
		return
	fi
	cg_blk= cg_mem= cg_cpu=
	if [ -n "$cpu_root" ]; then
		cg_cpu=$cpu_root/cell$cell_no
		mkdir "$cg_cpu"
	fi
	if [ -n "$blk_root" ]; then
		cg_blk=$blk_root/cell$cell_no
		mkdir "$cg_blk"
		# blk-throttle counts a cgroup's I/Os only on a queue with a limit
		# set: the fast profile sets one no workload reaches.
		if [ "$profile" = iops ]; then
			echo "$majmin $iops" >"$cg_blk/blkio.throttle.read_iops_device"
		else
			echo "$majmin 100000000" >"$cg_blk/blkio.throttle.read_iops_device"
		fi
		echo "$majmin 100000000" >"$cg_blk/blkio.throttle.write_iops_device"
	fi
	if [ -n "$mem_root" ]; then
		cg_mem=$mem_root/cell$cell_no
		mkdir "$cg_mem"
		[ "$memlim" != none ] && echo $((memlim * 1024 * 1024)) >"$cg_mem/memory.limit_in_bytes"
	fi
	if ! mount_target "$t" "$log"; then
		status="DIED (did not mount)"
	fi
	# The warm rows: a daemon that has run before, as on a server whose
	# mount is old.  The same workload first reads another file through
	# the mount, so the daemon's own memory is in place (a fresh daemon's
	# first touch of it is what these rows take away: docs/benchmarks.md);
	# the caches are dropped below, and the measured file was never read.
	# shellcheck disable=SC2206
	local a=($wargs)
	local pattern=${a[0]} rest=("${a[@]:1}")
	if [ "$status" = ok ] && [ "$kind" = warm ]; then
		(cg_exec "$READ_PATTERNS" "$pattern" "$path/warm" "${rest[@]}" --limit "$limit") >/dev/null 2>>"$log" || true
	fi
	# --cores: a fresh mount's page cache starts empty and a tmpfs cannot
	# be dropped; walking its pages each cell would cost seconds.
	if [ "$mode" != cores ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
	fi
	local prog=("$READ_PATTERNS") file=$path/file
	case $kind in
	read | warm) rest+=(--limit "$limit" --seconds "$cap") ;;
	rand) rest+=(--seconds "$cap") ;;
	hot) rest+=(--limit "$limit" --seconds "$cap") ;;
	# --cores: reader i reads own.i; the pool the one big file; random
	# reads own.0, read once before (below).
	cfiles) file=$path/own; rest+=(--limit "$limit" --seconds "$cap") ;;
	cper) file=$path/big; rest+=(--seconds "$cap") ;;
	crand) file=$path/own.0; rest+=(--limit "$limit" --seconds "$cap") ;;
	floor)
		# random: the whole file, as the cold row (a read that hits the
		# mount's page cache would cost no round trip)
		[ "$pattern" = random ] || rest+=(--limit "$limit")
		rest+=(--seconds "$cap")
		;;
	big) rest+=(--limit "$limit") ;;
	write) file=$path/w ;;
	nfs-*)
		prog=("$NFS_READ")
		local u="nfs://127.0.0.1/bench/nfs/f%d?version=4&nfsport=$nfs_port" i urls=()
		for i in 0 1 2 3; do
			# shellcheck disable=SC2059
			urls+=("$(printf "$u" "$i")")
		done
		[ "$pattern" != own ] && urls=("${urls[0]}")
		file=${urls[0]}
		rest=("${urls[@]:1}" "${rest[@]}")
		if [ "$kind" = nfs-hot ]; then
			# Just written by another process: in the backing's page cache.
			for i in 0 1 2 3; do head -c "$nfs_bytes" "$vol/data/file" >"$vol/data/nfs/f$i"; done
			sync
		fi
		if [ "$status" = ok ] && ! start_ganesha "$path" "$log"; then
			status="ERR (nfs-ganesha did not start)"
		fi
		;;
	esac
	# read_patterns reads the cell's CPU count itself as its clock starts
	# and stops: what the timed reads cost, its own start and exit left out.
	[ -n "$cg_cpu" ] && [ "${prog[0]}" = "$READ_PATTERNS" ] && rest+=(--cpu "$(cpu_file "$cg_cpu")")
	# The floor rows: the backing's page cache holds the file (read on the
	# backing, not through the mount), so no request reaches the device and
	# each costs what the path to it costs -- for a FUSE target, its round
	# trips.  The cold rows above cost that plus the device's time.
	if [ "$status" = ok ] && [ "$kind" = floor ]; then
		cat "$vol/data/file" >/dev/null
	fi
	if [ "$status" = ok ] && { [ "$kind" = hot ] || [ "$kind" = crand ]; }; then
		(cg_exec "$READ_PATTERNS" seq "$file" --bs 1M --limit "$limit") >/dev/null 2>>"$log" || true
	fi
	local d0 d1 c0 c1 k0 u0 u1 cpu p0 p1 t0 t1 q0 q1
	d0=$(dev_stat) c0=$(cg_ios) k0=$(oom_kills) u0=$(cpu_ticks) p0=$(cell_cpu_ns) q0=$(daemon_ticks)
	t0=${EPOCHREALTIME/,/.}
	local rc=0 retried=
	if [ "$status" = ok ]; then
		line=$( (cg_exec timeout -k 5 "$tmo" "${prog[@]}" "$pattern" "$file" "${rest[@]}") 2>>"$log") || rc=$?
		# A fresh server now and then answers the first OPEN with NOENT:
		# one more try, said in the notes, when nothing was read.
		if [[ $kind == nfs-* ]] && [ "$rc" != 0 ] && kill -0 "$server" 2>/dev/null &&
			{ [ -z "$daemon" ] || kill -0 "$daemon" 2>/dev/null; } &&
			tail -5 "$log" | grep -q "open call failed"; then
			sleep 1
			retried="retried once (the first OPEN failed) "
			rc=0
			d0=$(dev_stat) c0=$(cg_ios) u0=$(cpu_ticks) p0=$(cell_cpu_ns) q0=$(daemon_ticks)
			t0=${EPOCHREALTIME/,/.}
			line=$( (cg_exec timeout -k 5 "$tmo" "${prog[@]}" "$pattern" "$file" "${rest[@]}") 2>>"$log") || rc=$?
		fi
	fi
	t1=${EPOCHREALTIME/,/.}
	p1=$(cell_cpu_ns) d1=$(dev_stat) c1=$(cg_ios) u1=$(cpu_ticks) q1=$(daemon_ticks)
	local hwm=- peak=-
	if [ -n "$daemon" ] && [ -r "/proc/$daemon/status" ]; then
		hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$daemon/status")
	fi
	[ -n "$cg_mem" ] && peak=$(cat "$cg_mem/memory.max_usage_in_bytes")
	if [ "$status" = ok ]; then
		if [ -n "$daemon" ] && ! kill -0 "$daemon" 2>/dev/null; then
			wait "$daemon" 2>/dev/null || true
			status=DIED
			[ "$(oom_kills)" != "$k0" ] && status="DIED (OOM)"
			daemon=
		elif [ -n "$server" ] && ! kill -0 "$server" 2>/dev/null; then
			status="ERR (nfs-ganesha died)"
		elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			status="ERR (timed out after $tmo s)"
		elif [ "$rc" != 0 ] || [ -z "$line" ]; then
			reason=$(grep -v '^$' "$log" | tail -1 | tr '|' '/' | cut -c1-80) || true
			[ "$(oom_kills)" != "$k0" ] && reason="reader OOM-killed"
			status="ERR (${reason:-exit $rc})"
		fi
	fi
	[ -n "$server" ] && stop_pid "$server"
	server=
	umount_target
	rm -f "$vol/data/w"/write.*
	cg_remove "$cg_blk"
	cg_remove "$cg_mem"
	cg_remove "$cg_cpu"
	cg_blk= cg_mem= cg_cpu=
	if [ "$status" != ok ]; then
		mkdir -p "$logs"
		cp "$log" "$logs/$profile-$t-cell$cell_no.log"
		cell_fail "$status" "$hwm" "$peak"
		return
	fi
	local dios dbytes cgio=- r0 rs0 w0 ws0 r1 rs1 w1 ws1 cr0 cw0 cr1 cw1
	read -r r0 rs0 w0 ws0 <<<"$d0"
	read -r r1 rs1 w1 ws1 <<<"$d1"
	read -r cr0 cw0 <<<"$c0"
	read -r cr1 cw1 <<<"$c1"
	if [ "$kind" = write ]; then
		dios=$((w1 - w0)) dbytes=$(((ws1 - ws0) * 512))
		[ -n "$blk_root" ] && cgio=$((cw1 - cw0))
	else
		dios=$((r1 - r0)) dbytes=$(((rs1 - rs0) * 512))
		[ -n "$blk_root" ] && cgio=$((cr1 - cr0))
	fi
	local f mbs got secs p50=- p99=- extra= cpu_ns=
	read -r _ got secs mbs _ <<<"$line"
	for f in $line; do
		case $f in
		cpu_ns=*) cpu_ns=${f#*=} ;;
		p50_us=*) p50=${f#*=} ;;
		p99_us=*) p99=${f#*=} ;;
		flat=*) extra+="flat ${f#*=} " ;;
		tenths=*) extra+="tenths ${f#*=} " ;;
		streams_ok=*) extra+="≥98 %: ${f#*=} " ;;
		min_pct=*) extra+="worst ${f#*=} % " ;;
		fast_mbs=*) extra+="unpaced ${f#*=} MB/s " ;;
		esac
	done
	extra+=$retried
	cpu=$(awk -v a="$u0" -v b="$u1" -v hz="$clk_tck" 'BEGIN {printf "%.1f", (b - a) / hz}')
	# The cell's CPU: its cgroup's over the reader's clock, or over the
	# reader process (nfs_read), else the machine's (cpu_src says which).
	local pcpu wall cpg=-
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
	if [ -n "$cpu_ns" ]; then
		pcpu=$(awk -v c="$cpu_ns" 'BEGIN {printf "%.6f", c / 1e9}') wall=$secs
	elif [ -n "$p0" ] && [ -n "$p1" ]; then
		pcpu=$(awk -v a="$p0" -v b="$p1" 'BEGIN {printf "%.6f", (b - a) / 1e9}')
	else
		pcpu=$(awk -v a="$u0" -v b="$u1" -v hz="$clk_tck" 'BEGIN {printf "%.6f", (b - a) / hz}')
	fi
	[ "$got" -gt 0 ] && cpg=$(awk -v c="$pcpu" -v g="$got" 'BEGIN {printf "%.4f", c / (g / 1073741824)}')
	pcpu=$(awk -v c="$pcpu" 'BEGIN {printf "%.4f", c}')
	# The daemon's share, from its own clock ticks just before and after
	# the workload (idle outside the reader's clock): - for the backing.
	local dcpu=-
	[ -n "$q0" ] && [ -n "$q1" ] && dcpu=$(awk -v a="$q0" -v b="$q1" -v hz="$clk_tck" 'BEGIN {printf "%.2f", (b - a) / hz}')
	cell_result="ok|$mbs|$got|$dios|$dbytes|$cgio|$hwm|$peak|$p50|$p99|${extra% }|$cpu|$pcpu|$wall|$cpg|$dcpu"
}

# --- the run ----------------------------------------------------------------
hdr() {
	echo "aheadfs benchmark, $mode mode, $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo
	echo "- machine: $(nproc) cores, $(uname -sr), $(free -g | awk '/^Mem:/ {print $2}') GiB memory ($(awk '/MemTotal/ {print $2}' /proc/meminfo) kB), load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$mode" = cores ]; then
		echo "- backing: a tmpfs, so no device: what a cell measures is the cost of the path.  $maxr files of $size of random bytes, one per reader (own.0, own.1, ...), and one of $(numfmt --to=iec $((bytes * maxr))) for the thread pool"
		echo "- workloads, for ${nlist[*]} readers, each cell capped at $cap s: own files: reader i reads own.i with 128 KiB read(2)s, all of it or until the cap; one file, open per 64 KiB request: N threads share one sequential stream of the one file, each request an open, a 64 KiB pread and a close; random 8 KiB: N threads pread 8 KiB at random page-aligned offsets of own.0 until the cap, own.0 read once through the mount before the clock starts (so hits after that first pass). Every cell: a fresh mount, whose page cache starts empty (no drop_caches: a tmpfs keeps its pages)"
	else
		echo "- volume: ext4 on $loopdev (losetup --direct-io=on), a $size file of random bytes; read cells read at most $limit of it (time cap ${cap} s), random rows over the whole file, the big-file rows $limit with no cap; slow streams ${slow_s} s; writes $wtotal in all (3 streams: $ddtotal); NFS files $nfs_file × 4"
	fi
	echo "- repetitions: $runs per cell (median reported), targets in a rotated order each repetition: ${tlist[*]}"
	if [ "$mode" != cores ]; then
		echo "- device profiles: ${plist[*]}; fast = the loop device as it is; iops = blkio.throttle.read_iops_device $iops on $majmin. Every daemon, server and reader of a cell runs in the cell's blkio cgroup (on the fast profile with a limit of 10^8 I/Os a second, never reached, so that blk-throttle counts the cgroup's I/Os); the tables print that count (blkio.throttle.io_serviced) beside the device's own (/sys/block/$loopname/stat)"
		echo "- warm rows (fast profile only): the cell's mount first runs the same workload on another file ($limit), then the caches are dropped; the measured file is cold, the daemon's own memory is in place"
		echo "- memory profiles: none, 256 MiB and 64 MiB cgroups (memory.limit_in_bytes) for the big-file and slow-stream rows, 512 MiB for a column scan of 512 rows (rows of the read size ÷ 512: shorter than a window), 1 and 2 GiB for one of 2048 rows; daemon, server and reader in the cgroup"
		echo "- vm: $dirty_now(pinned for the run). Writes the kernel's flusher submits are not charged to a cgroup v1 blkio cgroup, so the write rows run on the fast profile only and their device counts are the device's own"
	fi
	if [ -n "$cpu_kind" ]; then
		echo "- CPU: $cpu_src: every thread of the daemon, the NFS server and the readers (not the kernel's own threads), counted by read_patterns itself as its clock starts and stops (its own start and exit left out; nfs_read's rows: from just before it starts to just after it ends); per GiB delivered (2^30 bytes the readers got); cores busy = that CPU time ÷ the readers' wall time"
	else
		echo "- CPU: $cpu_src, from just before the workload to just after it; per GiB delivered (2^30 bytes the readers got); cores busy = that CPU time ÷ the readers' wall time"
	fi
	echo "- versions: $(bindfs --version 2>/dev/null | head -1 || echo 'bindfs -'), mergerfs $(mergerfs --version 2>/dev/null | awk 'NR == 1 {print $3}' || echo -), nfs-ganesha $(dpkg-query -W -f '${Version}' nfs-ganesha 2>/dev/null || echo -) (NFSv4 over 127.0.0.1 only), libnfs $(pkg-config --modversion libnfs 2>/dev/null || echo -)"
	[ "$mode" = cores ] ||
		echo "- NFS phases: 4 readers a file each, one READ in flight; 4 readers sharing one sequential stream of one file, 32 READs in flight each; one reader with 8 interleaved streams; 128 KiB READs; cold: backing caches dropped; hot: the files just written into the backing directory"
}
hdr >&2

csv=$out.csv
echo "profile,workload,target,run,status,MBps,bytes,dev_ios,dev_bytes,cgroup_ios,daemon_hwm_kb,cgroup_peak_bytes,p50_us,p99_us,extra,cpu_s,cell_cpu_s,wall_s,cpu_s_per_gib,daemon_cpu_s,cell_seconds" >"$csv"
declare -A res
nt=${#tlist[@]}
# Rows run on the fast profile only: the writes (see the vm line of the
# header) and the warm rows (a device-bound profile leaves the daemon's
# memory nothing to change).  --smoke: on the throttled profile only the
# kinds whose path differs there (a read, a random read, NFS cold; the
# smoke checks tables, not timings, and each cell costs seconds).
fast_only() {
	[ "$1" = write ] || [ "$1" = warm ] && return 0
	[ "$mode" = smoke ] && [[ ! $1 =~ ^(read|rand|nfs-cold)$ ]]
}
ncells=0
for profile in "${plist[@]}"; do
	for row in "${rows[@]}"; do
		fast_only "${row%%|*}" && [ "$profile" != fast ] && continue
		ncells=$((ncells + runs * nt))
	done
done
for profile in "${plist[@]}"; do
	for row in "${rows[@]}"; do
		IFS='|' read -r kind _ name _ <<<"$row"
		fast_only "$kind" && [ "$profile" != fast ] && continue
		for run in $(seq "$runs"); do
			for j in $(seq 0 $((nt - 1))); do
				t=${tlist[$(((j + run - 1) % nt))]}
				c_start=$(date +%s.%N)
				run_cell "$profile" "$t" "$row"
				r=$cell_result
				res[$profile,$name,$t,$run]=$r
				printf '%s,"%s",%s,%s,"%s",%.1f\n' "$profile" "$name" "$t" "$run" "$(sed 's/|/","/g' <<<"$r")" \
					"$(awk -v a="$c_start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')" >>"$csv"
				printf '%s/%s %-5s %-58s %-15s run %s: %s\n' "$cell_no" "$ncells" "$profile" "$name" "$t" "$run" "$r" >&2
			done
		done
	done
done

# The median run of a cell by MB/s (every field from that run); a cell where
# any run failed reports that failure.
median_of() { # PROFILE NAME TARGET
	local vals=() r bad=
	for run in $(seq "$runs"); do
		r=${res[$1,$2,$3,$run]:-}
		[ -z "$r" ] && continue
		if [ "${r%%|*}" != ok ]; then bad=$r; continue; fi
		vals+=("$r")
	done
	if [ -n "$bad" ]; then
		local n=$((runs - ${#vals[@]}))
		echo "${bad%%|*} [$n/$runs runs]|${bad#*|}"
		return
	fi
	printf '%s\n' "${vals[@]}" | sort -t'|' -k2,2g | awk -v n="${#vals[@]}" 'NR == int((n + 1) / 2)'
}
# Every cell's median, once: the tables and checks below read each many times.
declare -A med
for profile in "${plist[@]}"; do
	for row in "${rows[@]}"; do
		IFS='|' read -r kind _ name _ <<<"$row"
		fast_only "$kind" && [ "$profile" != fast ] && continue
		for t in "${tlist[@]}"; do
			med[$profile,$name,$t]=$(median_of "$profile" "$name" "$t")
		done
	done
done
mib() { if [[ $1 =~ ^[0-9]+$ ]]; then awk -v v="$1" -v d="$2" 'BEGIN {printf "%.1f", v / d}'; else echo -; fi; }
fmt_mb() { awk -v v="$1" 'BEGIN {printf (v >= 100 ? "%.0f" : "%.1f"), v}'; }
fmt_cpg() { # CPU s per GiB
	if [[ $1 =~ ^[0-9.]+$ ]]; then
		awk -v v="$1" 'BEGIN {printf (v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f"), v}'
	else
		echo -
	fi
}
# SECONDS GOT [MINUS]: (SECONDS - MINUS) CPU-seconds per GiB of GOT bytes,
# formatted (at least 0); - where SECONDS is not a number (no daemon).
per_gib() {
	if [[ $1 =~ ^[0-9.]+$ ]] && [[ ${3:-0} =~ ^[0-9.]+$ ]] && [ "$2" -gt 0 ]; then
		fmt_cpg "$(awk -v c="$1" -v d="${3:-0}" -v g="$2" 'BEGIN {r = c - d; if (r < 0) r = 0; printf "%.4f", r / (g / 1073741824)}')"
	else
		echo -
	fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else printf "-"}'; }

table_head() { # FIRST ALIGN: a markdown table's head, FIRST then the targets
	local t
	printf '| %s |' "$1"
	for t in "${tlist[@]}"; do printf ' %s |' "$t"; done
	printf '\n|%s|' "$2"
	for _ in "${tlist[@]}"; do printf -- '---:|'; done
	echo
}

# ratio_table PROFILE FIELD FORMAT: workloads × targets, FIELD of each cell's
# median run (2: MB/s, 15: CPU s per GiB) printed by FORMAT, with its ratio to
# the backing's.
ratio_table() {
	local profile=$1 f=$2 fmt=$3 row kind name t b bv m v
	table_head workload ---
	for row in "${rows[@]}"; do
		IFS='|' read -r kind _ name _ <<<"$row"
		fast_only "$kind" && [ "$profile" != fast ] && continue
		printf '| %s |' "$name"
		b=${med[$profile,$name,backing]}
		bv=
		[ "${b%%|*}" = ok ] && bv=$(cut -d'|' -f"$f" <<<"$b")
		for t in "${tlist[@]}"; do
			m=${med[$profile,$name,$t]}
			v=$(cut -d'|' -f"$f" <<<"$m")
			if [ "${m%%|*}" != ok ]; then
				printf ' %s |' "${m%%|*}"
			elif [ "$t" = backing ] || ! [[ $bv =~ ^[0-9.]+$ ]] || ! [[ $v =~ ^[0-9.]+$ ]]; then
				printf ' %s |' "$("$fmt" "$v")"
			else
				printf ' %s (%s) |' "$("$fmt" "$v")" "$(ratio "$v" "$bv")"
			fi
		done
		echo
	done
}

# The --cores report: per workload, readers × targets.
report_cores() {
	local w r t kind name m b bc st mbs got cpu pcpu wall cpg busy cell
	local -A row_on w_on
	for row in "${rows[@]}"; do
		IFS='|' read -r kind _ name _ <<<"$row"
		row_on[$name]=1 w_on[$kind]=1
	done
	echo
	echo "### The cost of the path: a tmpfs backing; readers: ${nlist[*]}"
	echo
	echo "Each cell: GB/s summed over the readers · CPU-seconds per GiB delivered, daemon + readers (÷ the backing's) · cores busy (that CPU time ÷ wall time); the median run of $runs by GB/s."
	for w in "${cores_w[@]}"; do
		[ -n "${w_on[$w]:-}" ] || continue
		echo
		echo "#### $(cores_label "$w")"
		echo
		table_head readers ---:
		for r in "${nlist[@]}"; do
			name=$(cores_name "$w" "$r")
			[ -n "${row_on[$name]:-}" ] || continue
			printf '| %s |' "$r"
			b=${med[tmpfs,$name,backing]}
			bc=
			[ "${b%%|*}" = ok ] && bc=$(cut -d'|' -f15 <<<"$b")
			for t in "${tlist[@]}"; do
				m=${med[tmpfs,$name,$t]}
				IFS='|' read -r st mbs got _ _ _ _ _ _ _ _ cpu pcpu wall cpg _ <<<"$m"
				if [ "$st" != ok ]; then
					printf ' %s |' "$st"
					continue
				fi
				busy=$(awk -v c="$pcpu" -v w="$wall" 'BEGIN {if (w > 0) printf "%.1f", c / w; else printf "-"}')
				cell="$(awk -v v="$mbs" 'BEGIN {v /= 1000; printf (v >= 10 ? "%.1f" : "%.2f"), v}') · $(fmt_cpg "$cpg")"
				if [ "$t" != backing ] && [[ $bc =~ ^[0-9.]+$ ]] && [[ $cpg =~ ^[0-9.]+$ ]]; then
					cell+=" ($(awk -v a="$cpg" -v b="$bc" 'BEGIN {if (b > 0) printf "%.1f×", a / b; else printf "-"}'))"
				fi
				printf ' %s · %s |' "$cell" "$busy"
			done
			echo
		done
	done
	echo
	echo "Per cell (the median run): bytes delivered, the cell's CPU-seconds, the readers' wall time, CPU-seconds per GiB and that split between the daemon (its own clock ticks, 1/$clk_tck s each: coarse in a cell of under a second) and the readers (the rest: their system calls, the kernel's page cache and FUSE work on their side), the daemon's VmHWM, the machine's busy CPU-seconds (every core, for comparison)."
	echo
	echo "| workload | target | GB/s | GiB delivered | cell CPU s | wall s | cores busy | CPU s/GiB | daemon s/GiB | readers s/GiB | daemon RSS MiB | machine CPU s |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	local dcpu dg rg
	for row in "${rows[@]}"; do
		IFS='|' read -r _ _ name _ <<<"$row"
		for t in "${tlist[@]}"; do
			m=${med[tmpfs,$name,$t]}
			IFS='|' read -r st mbs got _ _ _ hwm _ _ _ _ cpu pcpu wall cpg dcpu <<<"$m"
			if [ "$st" != ok ]; then
				echo "| $name | $t | $st | | | | | | | | $(mib "$hwm" 1024) | |"
				continue
			fi
			busy=$(awk -v c="$pcpu" -v w="$wall" 'BEGIN {if (w > 0) printf "%.1f", c / w; else printf "-"}')
			dg=$(per_gib "$dcpu" "$got") rg=$(fmt_cpg "$cpg")
			[ "$dg" != - ] && rg=$(per_gib "$pcpu" "$got" "$dcpu")
			echo "| $name | $t | $(awk -v v="$mbs" 'BEGIN {printf "%.2f", v / 1000}') | $(awk -v g="$got" 'BEGIN {printf "%.2f", g / 1073741824}') | $pcpu | $wall | $busy | $(fmt_cpg "$cpg") | $dg | $rg | $(mib "$hwm" 1024) | $cpu |"
		done
	done
}

{
	hdr
	[ "$mode" = cores ] && report_cores
	for profile in "${plist[@]}"; do
		[ "$mode" = cores ] && break
		echo
		if [ "$profile" = fast ]; then
			echo "### Device profile fast: the loop device unthrottled"
		else
			echo "### Device profile iops: the loop device at $iops read I/Os a second (blkio cgroup)"
		fi
		echo
		echo "MB/s (ratio to the backing), median of $runs."
		echo
		ratio_table "$profile" 2 fmt_mb
		echo
		echo "CPU-seconds per GiB delivered: daemon, NFS server and readers (the cell's CPU time: see the CPU line above), ratio to the backing's; the median run by MB/s."
		echo
		ratio_table "$profile" 15 fmt_cpg
		echo
		echo "Per cell (the median run): device I/Os and bytes (reads; writes for the write rows) from /sys/block/$loopname/stat, the cell cgroup's blkio.throttle.io_serviced count for the device, average device I/O, read amplification (device bytes ÷ bytes delivered), latency per request, the daemon's VmHWM, the cgroup's memory.max_usage_in_bytes, the machine's busy CPU-seconds during the workload (all cores: user, system, interrupts; not idle or iowait), the cell's own CPU-seconds and those per GiB delivered, and of those the FUSE daemon's own (its clock ticks, 1/$clk_tck s each, from just before the workload to just after it: coarse in a cell of under a second, where it can even exceed the cell's own count)."
		echo
		n_cmp=0 n_eq=0 cmp_diff=()
		echo "| workload | target | MB/s | device I/Os | cgroup I/Os | device MiB | avg I/O KiB | dev ÷ delivered | p50 / p99 µs | daemon RSS MiB | cgroup peak MiB | machine CPU s | cell CPU s | CPU s/GiB | daemon s/GiB | notes |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
		for row in "${rows[@]}"; do
			IFS='|' read -r kind _ name _ <<<"$row"
			fast_only "$kind" && [ "$profile" != fast ] && continue
			for t in "${tlist[@]}"; do
				m=${med[$profile,$name,$t]}
				IFS='|' read -r st mbs got dios dbytes cgio hwm peak p50 p99 extra cpu pcpu _ cpg dcpu <<<"$m"
				if [ "$st" != ok ]; then
					echo "| $name | $t | $st | | | | | | | $(mib "$hwm" 1024) | $(mib "$peak" 1048576) | | | | | |"
					continue
				fi
				avg=- amp=-
				[ "$dios" -gt 0 ] && avg=$(awk -v b="$dbytes" -v n="$dios" 'BEGIN {printf "%.0f", b / n / 1024}')
				[ "$got" -gt 0 ] && amp=$(awk -v b="$dbytes" -v g="$got" 'BEGIN {printf "%.2f", b / g}')
				lat=-
				[ "$p50" != - ] && lat="$p50 / $p99"
				echo "| $name | $t | $(fmt_mb "$mbs") | $dios | $cgio | $(mib "$dbytes" 1048576) | $avg | $amp | $lat | $(mib "$hwm" 1024) | $(mib "$peak" 1048576) | ${cpu:--} | ${pcpu:--} | $(fmt_cpg "$cpg") | $(per_gib "$dcpu" "$got") | $extra |"
				if [ "$kind" != write ] && [[ $cgio =~ ^[0-9]+$ ]]; then
					n_cmp=$((n_cmp + 1))
					if [ "$cgio" = "$dios" ]; then
						n_eq=$((n_eq + 1))
					elif [ "${#cmp_diff[@]}" -lt 6 ]; then
						cmp_diff+=("$name / $t: $cgio vs $dios")
					fi
				fi
			done
		done
		echo
		echo "Read I/Os counted by the cell's blkio cgroup equal the device's own count in $n_eq of $n_cmp cells$([ "${#cmp_diff[@]}" -gt 0 ] && printf '; differing (cgroup vs device), first %d: %s' "${#cmp_diff[@]}" "$(IFS=';'; echo "${cmp_diff[*]}")")."
		if [ "$profile" = fast ] && printf '%s\n' "${rows[@]}" | grep -q '^write|'; then
			echo "Write rows: device writes include the journal and what the flusher wrote back (not charged to the cgroup, hence the smaller cgroup count)."
		fi
	done
	echo
	echo "Took $(( ($(date +%s) - t_start) / 60 )) min $(( ($(date +%s) - t_start) % 60 )) s. Every run: $(basename "$csv")."
	if [ -d "$logs" ]; then
		echo "Logs of the cells that failed: $(basename "$logs")/."
	fi
} | tee "$out"

# Plots: one per device profile, failed cells drawn as 0.
for profile in "${plist[@]}"; do
	for row in "${rows[@]}"; do
		IFS='|' read -r kind _ name _ <<<"$row"
		fast_only "$kind" && [ "$profile" != fast ] && continue
		for t in "${tlist[@]}"; do
			m=${med[$profile,$name,$t]}
			v=0
			[ "${m%%|*}" = ok ] && v=$(cut -d'|' -f2 <<<"$m")
			printf '%s\t%s\t%s\n' "$name" "$t" "$v"
		done
	done >"$out.$profile.tsv"
	# RESULTS.tsv: the fast profile, as earlier versions of this script wrote
	# (--cores: its one profile).
	[ "$profile" = "${plist[0]}" ] && cp "$out.$profile.tsv" "$out.tsv"
	if [ "$mode" != smoke ] && need 'command -v gnuplot' gnuplot-nox; then
		"$here/plot.sh" "$out.$profile.tsv" "$out.$profile.png" \
			"Throughput relative to the backing, device profile $profile (no bar: the cell failed, see the table)" >&2 || true
	fi
done

# Every cell must hold a number or a reason; under --cores, where nothing
# but a peer's absence excuses a cell (no device, no memory limit), a reason
# other than SKIP fails the run.
bad=0
for profile in "${plist[@]}"; do
	for row in "${rows[@]}"; do
		IFS='|' read -r kind _ name _ <<<"$row"
		fast_only "$kind" && [ "$profile" != fast ] && continue
		for t in "${tlist[@]}"; do
			m=${med[$profile,$name,$t]}
			st=${m%%|*}
			if [ "$st" = ok ]; then
				[[ $(cut -d'|' -f2 <<<"$m") =~ ^[0-9.]+$ ]] || { echo "run.sh: $profile/$name/$t: no number" >&2; bad=1; }
				[[ $(cut -d'|' -f13 <<<"$m") =~ ^[0-9.]+$ ]] || { echo "run.sh: $profile/$name/$t: no CPU time" >&2; bad=1; }
			elif [ -z "$st" ]; then
				echo "run.sh: $profile/$name/$t: empty cell" >&2
				bad=1
			elif [ "$mode" = cores ] && [[ $st != SKIP* ]]; then
				echo "run.sh: $profile/$name/$t: $st" >&2
				bad=1
			fi
		done
	done
done
echo "run.sh: results in $out (and .csv, .PROFILE.tsv, .PROFILE.png)" >&2
exit $bad
