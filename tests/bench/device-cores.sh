#!/usr/bin/env bash
# device-cores.sh - run.sh --cores on a many-core machine that has nothing
# installed (no package registry, no compiler): the daemon, read_patterns,
# the FUSE peers and the shared libraries they load travel in one directory,
# made on a build machine by --pack.
#
# Usage: tests/bench/device-cores.sh --pack DIR
#          copy build/release's aheadfs and read_patterns, bindfs, mergerfs
#          and fusermount3 into DIR/bin (bindfs and mergerfs are installed
#          with apt-get first where missing, unless AFS_BENCH_NO_APT=1; one
#          that is still missing is left out and its cells say "not
#          installed"), the shared libraries they load into DIR/lib (every
#          one ldd names but glibc's; libstdc++ and libgcc_s, which every
#          Ubuntu has, into DIR/lib-base), and print what DIR holds and its
#          size.  AHEADFS_BUILD: the build directory (default build/release).
#        tests/bench/device-cores.sh DIR OUT [run.sh options]
#          run tests/bench/run.sh --cores with DIR's programs and libraries
#          (AFS_BENCH_NO_APT=1; DIR/lib-base joins LD_LIBRARY_PATH only where
#          the machine lacks one of its libraries), the results in
#          OUT/results.md (and .csv, .tsv), everything printed in OUT/run.log.
#          Sized to end within about 8 minutes on 16 cores with 128 GiB:
#          readers 1, 2, 4 ... nproc, 2 × nproc, six targets, three
#          workloads (108 cells on 16 cores), each cell capped at 2 s; each
#          reader's file MemTotal / 8 / the most readers, at most 512 MiB
#          (run.sh's default).  Options after OUT (-n, -c, -s, -t, -w, -r)
#          override these.
# Needs root and /dev/fuse, as run.sh does; cgroup v1 or v2.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

pack() {
	local dir=$1 build=${AHEADFS_BUILD:-$top/build/release} b p lib base
	local bins=("$build/fs/aheadfs" "$build/tests/bench/read_patterns")
	for b in "${bins[@]}"; do
		[ -x "$b" ] || { echo "device-cores.sh: $b not built (cmake --build build/release)" >&2; exit 1; }
	done
	if [ -z "${AFS_BENCH_NO_APT:-}" ] &&
		{ ! command -v bindfs >/dev/null || ! command -v mergerfs >/dev/null; }; then
		echo "device-cores.sh: apt-get install bindfs mergerfs" >&2
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
			--no-install-recommends bindfs mergerfs >/dev/null 2>&1 || true
	fi
	for p in bindfs mergerfs fusermount3; do
		if command -v "$p" >/dev/null; then
			bins+=("$(command -v "$p")")
		else
			echo "device-cores.sh: no $p here: left out (its cells will say \"not installed\")" >&2
		fi
	done
	rm -rf "${dir:?}/bin" "${dir:?}/lib" "${dir:?}/lib-base"
	mkdir -p "$dir/bin" "$dir/lib" "$dir/lib-base"
	for b in "${bins[@]}"; do
		cp -L "$b" "$dir/bin/" # not set-uid: the run is root's
		# Every library ldd resolves, but glibc's own: those must be the
		# machine's (a binary built against an older glibc runs on a newer).
		for lib in $(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
			base=$(basename "$lib")
			case $base in
			libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.* | ld-linux*) ;;
			libstdc++.so.* | libgcc_s.so.*) cp -L "$lib" "$dir/lib-base/$base" ;;
			*) cp -L "$lib" "$dir/lib/$base" ;;
			esac
		done
	done
	{
		echo "packed $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | awk 'NR == 1 {print $NF}')"
		echo "aheadfs: $("$dir/bin/aheadfs" --version 2>&1 | head -1)"
		echo "source: $(git -C "$top" describe --always --dirty 2>/dev/null || echo -)"
		(cd "$dir" && sha256sum bin/* lib/* lib-base/*)
	} >"$dir/MANIFEST"
	cat "$dir/MANIFEST"
	echo "device-cores.sh: $dir holds $(du -sh "$dir" | cut -f1) ($(du -sb "$dir" | cut -f1) bytes)"
}

if [ "${1:-}" = --pack ]; then
	[ $# = 2 ] || { echo "usage: device-cores.sh --pack DIR" >&2; exit 2; }
	mkdir -p "$2"
	pack "$(cd "$2" && pwd)"
	exit 0
fi
[ $# -ge 2 ] || { echo "usage: device-cores.sh DIR OUT [run.sh options] | --pack DIR" >&2; exit 2; }
dir=$(cd "$1" && pwd) out=$2
shift 2
for b in aheadfs read_patterns; do
	[ -x "$dir/bin/$b" ] || { echo "device-cores.sh: $dir/bin/$b missing (device-cores.sh --pack $1)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

export PATH=$dir/bin:$PATH
export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export AHEADFS=$dir/bin/aheadfs READ_PATTERNS=$dir/bin/read_patterns AFS_BENCH_NO_APT=1
for b in "$dir"/bin/*; do
	if ldd "$b" 2>/dev/null | grep -q "not found"; then
		LD_LIBRARY_PATH+=:$dir/lib-base
		break
	fi
done
{
	echo "device-cores.sh: $(nproc) cores, $(awk '$1 == "MemTotal:" {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "device-cores.sh: cgroups: $(awk '$3 == "cgroup2" {printf "v2 at %s ", $2} $3 == "cgroup" {n++} END {if (n) printf "v1 (%d hierarchies)", n}' /proc/self/mounts)"
	echo "device-cores.sh: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
	for b in "$dir"/bin/*; do
		if ldd "$b" 2>/dev/null | grep "not found"; then
			echo "device-cores.sh: $(basename "$b") cannot load a library (above)"
		fi
	done
	"$AHEADFS" --version 2>&1 | head -1
	echo "device-cores.sh: run.sh --cores -c 2 $* -o $out/results.md"
} 2>&1 | tee "$out/run.log"
rc=0
"$top/tests/bench/run.sh" --cores -c 2 "$@" -o "$out/results.md" 2>&1 | tee -a "$out/run.log" || rc=$?
echo "device-cores.sh: run.sh exited $rc; results in $out" | tee -a "$out/run.log"
exit "$rc"
