#!/usr/bin/env bash
# run.sh - build one libFuzzer target with clang and run it for a bounded
# time over its seed corpus (tests/fuzz/corpus/TARGET); a crash, a
# sanitizer report, a leak or a failed assertion fails the run.
#
# Usage: run.sh TARGET [SECONDS]
#   TARGET   opts (afs_opts_parse), json (json_parse, aheadfs-stat's
#            reader), xattr (afs_xattr_ahead_set: advice and tunables),
#            warm (afs_warm_parse: the warm restart's state file)
#   SECONDS  -max_total_time (default $AFS_FUZZ_SECONDS, else 20)
# Environment: CLANG (default clang-14), AFS_FUZZ_DIR (where the binary and
# the new inputs go; default a temporary directory, removed afterwards).
# Exit 77 (skipped) when clang or its fuzzer runtime (libclang-rt-14-dev)
# is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
target=${1:?usage: run.sh opts|json|xattr|warm [SECONDS]}
secs=${2:-${AFS_FUZZ_SECONDS:-20}}
CLANG=${CLANG:-clang-14}

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

cflags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
	-fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -DFUSE_USE_VERSION=314
	-DAHEADFS_VERSION=\"fuzz\" -I"$top")
case $target in
opts)
	src=("$here/fuzz_opts.c" "$top/fs/fuse/opts.c" "$top/fs/fuse/opts_table.c"
		"$top/ra/settings.c" "$top/ra/geometry.c" "$top/fs/data/modes.c"
		"$top/fs/watch/modes.c")
	read -ra pc <<<"$(pkg-config --cflags --libs fuse3)"
	libs=("${pc[@]}" -lm)
	;;
json)
	src=("$here/fuzz_json.c" "$top/fs/stats/json.c")
	libs=(-lm)
	;;
xattr)
	src=("$here/fuzz_xattr.c" "$top"/fs/stats/{xattr,stats,map,tune,jsonw,schema}.c
		"$top"/fs/data/*.c "$top"/ra/*.c "$top"/cache/*.c)
	read -ra pc <<<"$(pkg-config --cflags --libs liburcu)"
	libs=("${pc[@]}" -lpthread -lm)
	;;
warm)
	src=("$here/fuzz_warm.c" "$top/fs/warm/state.c")
	libs=()
	;;
*)
	echo "run.sh: unknown target $target" >&2
	exit 2
	;;
esac
"$CLANG" "${cflags[@]}" "${src[@]}" "${libs[@]}" -o "$work/fuzz_$target"
mkdir -p "$work/corpus"
# Leaks are reported at exit; the fuzzer's own -detect_leaks checks each
# input too.
# (libFuzzer's own failure status is 77, the suite's "skipped": 1 here.)
rc=0
"$work/fuzz_$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
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
