#!/usr/bin/env bash
# run.sh - install the build and test dependencies, then build and run the
# whole test suite three times: a release build (everything), an ASan+UBSan
# build (everything but what runs the same in any build -- the fuzz targets
# and the benchmark's smoke runs -- and the reruns with passthrough=off and
# with transport=uring) and a ThreadSanitizer build (the unit and stress
# tests: liburcu and libfuse are not TSan-instrumented, so the daemon is not
# run under TSan); then the package stage (tests/package.sh: the Debian
# package is built, installed, mounted through fstab and mount -t, and
# purged).
# Needs root (apt-get, FUSE mounts, loop devices).
#
# Usage: tests/run.sh [release|asan|tsan|package]...   (default: all four)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

packaging/deps.sh --test

jobs=$(nproc)
configs=("$@")
[ "${#configs[@]}" -gt 0 ] || configs=(release asan tsan package)

run_config() {
	local cfg=$1 dir=build/test-$1 label=()
	if [ "$cfg" = package ]; then
		echo "=== package: build, install, mount, purge (tests/package.sh)"
		local rc=0
		tests/package.sh || rc=$?
		[ "$rc" -ne 77 ] || { echo "=== package: skipped (no /dev/fuse)"; return 0; }
		return "$rc"
	fi
	local args=(-DAHEADFS_WERROR=ON -DAHEADFS_DEBUG=ON -DAHEADFS_TESTS=ON)
	case "$cfg" in
	release) args+=(-DCMAKE_BUILD_TYPE=Release -DAHEADFS_DEBUG=OFF) ;;
	asan)
		args+=(-DCMAKE_BUILD_TYPE=Debug -DAHEADFS_SANITIZE=address,undefined)
		# The fuzz targets are built by clang with their own sanitizers
		# whatever the configuration, and the benchmark's smoke runs
		# check its tables: both ran in the release stage already.  The
		# tests run again with passthrough=off take the path a daemon
		# without passthrough takes, which the write and cache tests
		# cover under the sanitizers already (release runs them); those
		# run again with transport=uring check that the rings serve as
		# /dev/fuse does, and integration/transport_uring puts the
		# rings' own code under the sanitizers here.
		label=(-LE fuzz -E '^bench/run_|passthrough=off|transport=uring')
		;;
	tsan)
		args+=(-DCMAKE_BUILD_TYPE=Debug -DAHEADFS_SANITIZE=thread)
		label=(-L unit)
		;;
	*)
		echo "run.sh: unknown configuration '$cfg'" >&2
		return 2
		;;
	esac
	echo "=== $cfg: configure and build ($dir)"
	cmake -S . -B "$dir" "${args[@]}" >/dev/null
	cmake --build "$dir" -j "$jobs"
	echo "=== $cfg: test"
	(cd "$dir" && ctest --output-on-failure -j "$jobs" "${label[@]}")
}

for cfg in "${configs[@]}"; do
	run_config "$cfg"
done
echo "=== all configurations passed: ${configs[*]}"
