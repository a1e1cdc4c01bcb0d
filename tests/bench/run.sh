#!/usr/bin/env bash
# run.sh - the read benchmark: every seed workload, side by side on one real
# ext4 volume, cold caches, as ratios to reading the backing directly.
#
# Usage: tests/bench/run.sh [-s SIZE] [-t TARGETS] [-r RUNS] [-w REGEX] [-o RESULTS.md]
#   SIZE     test file size (default 1G)
#   TARGETS  comma list (default backing,bindfs,aheadfs):
#            backing         the ext4 directory itself
#            bindfs          a plain FUSE passthrough peer (Debian's bindfs)
#            aheadfs         aheadfs with its defaults
#            aheadfs-direct  aheadfs -o read_mode=direct
#            aheadfs-OPTS    aheadfs -o OPTS, options joined by '+'
#                            (e.g. aheadfs-context_ra=off+ra_max=4M)
#   RUNS     runs per cell; the median is reported (default 3)
#   REGEX    only the workloads whose name matches (grep -E)
#   RESULTS  also write the table there (markdown), the medians as
#            RESULTS.tsv (workload, target, MB/s) for tests/bench/plot.sh
# Environment: AHEADFS (the daemon), READ_PATTERNS (the workload program);
# both default to build/release.  Needs root: loop devices, drop_caches.
#
# The volume is an ext4 image on a loop device with --direct-io=on, so that
# reads reach the disk instead of the page cache of the image file.  Every
# cell starts with `echo 3 > /proc/sys/vm/drop_caches` and a fresh mount.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
size=1G targets=backing,bindfs,aheadfs runs=3 out= only=.
while getopts s:t:r:w:o:h opt; do
	case $opt in
	s) size=$OPTARG ;;
	t) targets=$OPTARG ;;
	r) runs=$OPTARG ;;
	w) only=$OPTARG ;;
	o) out=$OPTARG ;;
	*) sed -n '2,20p' "$0"; exit 2 ;;
	esac
done
AHEADFS=${AHEADFS:-$top/build/release/fs/aheadfs}
READ_PATTERNS=${READ_PATTERNS:-$top/build/release/tests/bench/read_patterns}
for b in "$AHEADFS" "$READ_PATTERNS"; do
	[ -x "$b" ] || { echo "run.sh: $b not built (cmake --build build/release)" >&2; exit 1; }
done
if [[ $targets == *bindfs* ]] && ! command -v bindfs >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q bindfs >/dev/null
fi

work=$(mktemp -d /var/tmp/aheadfs-bench.XXXXXX)
loopdev= mnt=$work/mnt vol=$work/vol daemon=
cleanup() {
	set +e
	mountpoint -q "$mnt" && { fusermount3 -u "$mnt" 2>/dev/null || fusermount -u "$mnt" 2>/dev/null || umount -l "$mnt"; }
	[ -n "$daemon" ] && wait "$daemon" 2>/dev/null
	mountpoint -q "$vol" && umount "$vol"
	[ -n "$loopdev" ] && losetup -d "$loopdev"
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$mnt" "$vol"

bytes=$(numfmt --from=iec "$size")
truncate -s $((bytes + 512 * 1024 * 1024)) "$work/ext4.img"
loopdev=$(losetup --direct-io=on -f --show "$work/ext4.img")
mkfs.ext4 -q -F "$loopdev"
mount "$loopdev" "$vol"
mkdir "$vol/data"
echo "writing a $size test file on $loopdev (ext4, direct-io loop)" >&2
head -c "$bytes" /dev/urandom >"$vol/data/file"
sync

# pattern name | read_patterns arguments
workloads=(
	"seq 1MiB|seq --bs 1M"
	"seq 128KiB|seq --bs 128K"
	"2 threads, one fd, 11 KiB|shared-fd --threads 2 --bs 11K"
	"interleaved 2 streams, 4 KiB|interleave --streams 2 --bs 4K"
	"column scan, 64 columns|column --streams 64"
	"per-request open, 4 threads, 128 KiB|per-request --threads 4 --bs 128K"
	"random 8 KiB x2000|random --bs 8K --count 2000"
	"random 2 KiB x2000|random --bs 2K --count 2000"
	"random 8 KiB, 1+4 thrashers|random --bs 8K --count 1000 --threads 5"
)

mount_target() {
	local t=$1
	daemon=
	case $t in
	backing) ;;
	bindfs) bindfs "$vol/data" "$mnt" ;;
	aheadfs) "$AHEADFS" -f "$vol/data" "$mnt" 2>>"$work/daemon.log" & daemon=$! ;;
	aheadfs-direct) "$AHEADFS" -f -o read_mode=direct "$vol/data" "$mnt" 2>>"$work/daemon.log" & daemon=$! ;;
	aheadfs-*) "$AHEADFS" -f -o "$(tr + , <<<"${t#aheadfs-}")" "$vol/data" "$mnt" 2>>"$work/daemon.log" & daemon=$! ;;
	*) echo "run.sh: unknown target $t" >&2; exit 2 ;;
	esac
	if [ "$t" != backing ]; then
		for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
		echo "run.sh: $t did not mount" >&2; cat "$work/daemon.log" >&2; exit 1
	fi
}

umount_target() {
	local t=$1
	[ "$t" = backing ] && return 0
	fusermount3 -u "$mnt" 2>/dev/null || fusermount -u "$mnt"
	if [ -n "$daemon" ]; then wait "$daemon"; daemon=; fi
}

path_of() { if [ "$1" = backing ]; then echo "$vol/data/file"; else echo "$mnt/file"; fi; }

IFS=, read -r -a tlist <<<"$targets"
selected=()
for w in "${workloads[@]}"; do
	grep -qE -- "$only" <<<"${w%%|*}" && selected+=("$w")
done
workloads=("${selected[@]}")
declare -A result
for w in "${workloads[@]}"; do
	name=${w%%|*} args=${w#*|}
	for t in "${tlist[@]}"; do
		vals=()
		for _ in $(seq "$runs"); do
			mount_target "$t"
			sync
			echo 3 >/proc/sys/vm/drop_caches
			# shellcheck disable=SC2086
			line=$("$READ_PATTERNS" ${args%% *} "$(path_of "$t")" ${args#* })
			umount_target "$t"
			vals+=("$(awk '{print $4}' <<<"$line")")
		done
		med=$(printf '%s\n' "${vals[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		result[$name,$t]=$med
		printf '%-40s %-16s %10s MB/s  (runs: %s)\n' "$name" "$t" "$med" "${vals[*]}" >&2
	done
done

{
	echo "Cold cache, $size file on ext4 over a direct-io loop device, median of $runs runs; MB/s (ratio to backing)."
	echo
	printf '| workload |'
	for t in "${tlist[@]}"; do printf ' %s |' "$t"; done
	echo
	printf '|---|'
	for _ in "${tlist[@]}"; do printf -- '---:|'; done
	echo
	for w in "${workloads[@]}"; do
		name=${w%%|*}
		printf '| %s |' "$name"
		base=${result[$name,backing]:-}
		for t in "${tlist[@]}"; do
			v=${result[$name,$t]}
			if [ -n "$base" ] && [ "$t" != backing ]; then
				printf ' %s (%s) |' "$v" "$(awk -v a="$v" -v b="$base" 'BEGIN {printf "%.2f", a / b}')"
			else
				printf ' %s |' "$v"
			fi
		done
		echo
	done
} | tee ${out:+"$out"}
if [ -n "$out" ]; then
	for w in "${workloads[@]}"; do
		for t in "${tlist[@]}"; do
			printf '%s\t%s\t%s\n' "${w%%|*}" "$t" "${result[${w%%|*},$t]}"
		done
	done >"$out.tsv"
fi
