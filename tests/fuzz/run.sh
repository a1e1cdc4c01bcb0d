#!/usr/bin/env bash
# run.sh - build one libFuzzer target with clang and run it for a bounded
# time over its seed corpus (tests/fuzz/corpus/TARGET); a crash, a
# sanitizer report, a leak or a failed assertion fails the run.
#
# The target is built by CMake in a fuzzing build of the tree
# (-DAHEADFS_FUZZ=ON, CC=clang: tests/fuzz/CMakeLists.txt), from the same
# libraries the daemon and aheadfs-stat link; the build is configured once
# and brought up to date on each run.
#
# Usage: run.sh TARGET [SECONDS]
#   TARGET   opts (afs_opts_parse), json (json_parse, aheadfs-stat's
#            reader), xattr (afs_xattr_ahead_set: advice and tunables),
#            warm (afs_warm_parse: the warm restart's state file)
#   SECONDS  -max_total_time (default $AFS_FUZZ_SECONDS, else 20)
# Environment: CLANG (default clang-14), AFS_FUZZ_BUILD (the fuzzing build's
# directory; default build/fuzz in the source tree), AFS_FUZZ_DIR (where the
# new inputs, the log and a crash input go; default a temporary directory,
# removed afterwards).
# Exit 77 (skipped) when clang or its fuzzer runtime (libclang-rt-14-dev)
# is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
target=${1:?usage: run.sh opts|json|xattr|warm [SECONDS]}
secs=${2:-${AFS_FUZZ_SECONDS:-20}}
CLANG=${CLANG:-clang-14}
build=${AFS_FUZZ_BUILD:-$top/build/fuzz}

case $target in
opts | json | xattr | warm) ;;
*)
	echo "run.sh: unknown target $target" >&2
	exit 2
	;;
esac
if ! command -v "$CLANG" >/dev/null; then
	echo "SKIP: fuzz/$target: $CLANG missing" >&2
	exit 77
fi
if [ -n "${AFS_FUZZ_DIR:-}" ]; then
	work=$AFS_FUZZ_DIR/$target
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/afs-fuzz-$target.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' \
	>"$work/probe.c"
if ! "$CLANG" -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" 2>/dev/null; then
	echo "SKIP: fuzz/$target: no libFuzzer runtime (libclang-rt-14-dev)" >&2
	exit 77
fi

# Configured once (no cmocka needed: AHEADFS_TESTS=OFF); the build brings
# itself up to date with the CMakeLists.
if [ ! -f "$build/CMakeCache.txt" ]; then
	if ! CC=$CLANG cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
		-DAHEADFS_FUZZ=ON -DAHEADFS_TESTS=OFF >"$work/cmake.log" 2>&1; then
		cat "$work/cmake.log" >&2
		echo "FAIL: fuzz/$target: configuring $build" >&2
		trap - EXIT
		exit 1
	fi
fi
if ! cmake --build "$build" --target "fuzz_$target" -j "$(nproc)" \
	>"$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	echo "FAIL: fuzz/$target: building fuzz_$target in $build" >&2
	trap - EXIT
	exit 1
fi
fuzzer=$build/tests/fuzz/fuzz_$target
mkdir -p "$work/corpus"
# Leaks are reported at exit; the fuzzer's own -detect_leaks checks each
# input too.
# (libFuzzer's own failure status is 77, the suite's "skipped": 1 here.)
rc=0
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$work/" \
	-print_final_stats=1 "$work/corpus" "$here/corpus/$target" \
	>"$work/log" 2>&1 || rc=$?
grep -v '^"' "$work/log" | tail -n 30
if [ "$rc" -ne 0 ]; then
	echo "FAIL: fuzz/$target: the fuzzer stopped with $rc (crash input" \
		"in $work)" >&2
	trap - EXIT
	exit 1
fi
echo "fuzz/$target: $secs s, no crash"
