#!/usr/bin/env bash
# deps.sh - install what aheadfs needs to build, run and test on Debian 12.
# Idempotent; needs root.  Used by packaging/quickstart.sh and tests/run.sh.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: must run as root (apt-get)" >&2
	exit 1
fi

# Build: compiler, cmake, libfuse 3, liburcu, cmocka.
build_pkgs=(build-essential cmake pkg-config libfuse3-dev fuse3 liburcu-dev)
# Tests: cmocka, the tools the integration tests drive on a real mount.
test_pkgs=(libcmocka-dev attr acl e2fsprogs util-linux sqlite3 nginx-light curl
	python3 make gcc tar xz-utils diffutils procps strace libcap2-bin
	clang-14 libclang-rt-14-dev clang-format-14)

want=("${build_pkgs[@]}")
if [ "${1:-}" = "--test" ]; then
	want+=("${test_pkgs[@]}")
fi

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
