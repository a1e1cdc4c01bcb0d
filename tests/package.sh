#!/usr/bin/env bash
# package.sh - the package stage of CI: build the Debian package
# (packaging/deb.sh, lintian errors fail), install it with apt-get, mount
# through the installed binary the ways admins do -- mount -t fuse.aheadfs,
# an fstab line (mount -T on a test fstab, through mount.fuse3), the example
# systemd unit's own Type= and Options= -- check the bytes and that the
# options reached the daemon, check the unit with systemd-analyze verify, and
# purge the package.  The machine is left as it was: the package and any
# dependency the install pulled in are purged, everything mounted under the
# work dir is unmounted, even on failure.  Refuses to run where aheadfs is
# already installed.  Needs root (apt-get, mount).
#
# Usage: tests/package.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

fail()
{
	echo "FAIL: package: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || fail "must run as root (apt-get, mount)"
if dpkg-query -W -f='${Status}' aheadfs 2>/dev/null | grep -qx "install ok installed"; then
	fail "aheadfs is already installed here; this test would replace it"
fi
[ -c /dev/fuse ] || { echo "SKIP: package: no /dev/fuse" >&2; exit 77; }

# What the stage itself needs: the build packages, dpkg-dev, lintian,
# systemd-analyze (package systemd).
packaging/deps.sh
need=()
for p in dpkg-dev lintian systemd; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${need[@]}"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/afs-package.XXXXXX")
before=$work/packages.before
dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' |
	awk '$1 ~ /^ii/ { print $2 }' | sort >"$before"
installed=0

cleanup()
{
	local rc=$? m added
	set +e
	trap - EXIT INT TERM
	for m in $(awk -v w="$work/" 'index($5, w) == 1 { print $5 }' \
		/proc/self/mountinfo | tac); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if [ "$installed" -eq 1 ] && dpkg-query -W aheadfs >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q aheadfs >/dev/null
	fi
	# Dependencies the install pulled in go too.
	added=$(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' |
		awk '$1 ~ /^ii/ { print $2 }' | sort | comm -13 "$before" -)
	if [ -n "$added" ]; then
		echo "purging what the install added: $added"
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $added >/dev/null
	fi
	if awk -v w="$work/" 'index($5, w) == 1 { f = 1 } END { exit !f }' \
		/proc/self/mountinfo; then
		echo "package: mounts left under $work, not removed" >&2
		[ "$rc" -ne 0 ] || rc=1
	else
		rm -rf --one-file-system "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== build: packaging/deb.sh"
deb=$(packaging/deb.sh | tee "$work/deb.log" | tail -n 1)
grep -E '^(Depends|W: |E: |I: )' "$work/deb.log" || true
[ -f "$deb" ] || fail "packaging/deb.sh made no package"
for f in usr/bin/aheadfs usr/bin/aheadfs-stat usr/share/man/man1/aheadfs.1.gz \
	usr/share/man/man1/aheadfs-stat.1.gz usr/share/doc/aheadfs/copyright \
	usr/share/doc/aheadfs/changelog.Debian.gz; do
	dpkg-deb --contents "$deb" | awk '{ print $6 }' | grep -qx "./$f" ||
		fail "$f is not in the package"
done
dpkg-deb -f "$deb" Depends | grep -Eq '(^|, )fuse3(,|$)' ||
	fail "the package does not depend on fuse3"
dpkg-deb -f "$deb" Depends | grep -q 'libfuse3-3' ||
	fail "Depends was not computed from what the binaries link"

echo "== install: apt-get install $deb"
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	"$deb" >"$work/install.log" 2>&1 || {
	cat "$work/install.log" >&2
	fail "apt-get install failed"
}
/usr/bin/aheadfs --version
[ "$(command -v aheadfs)" = /usr/bin/aheadfs ] || fail "aheadfs is not /usr/bin/aheadfs"
readelf -S /usr/bin/aheadfs | grep -q '\.symtab' &&
	fail "/usr/bin/aheadfs is not stripped"
man -w aheadfs >/dev/null 2>&1 || ! command -v man >/dev/null ||
	fail "man aheadfs: no man page"

src=$work/src
mnt=$work/mnt
mkdir -p "$src/sub" "$mnt"
head -c $((8 << 20)) /dev/urandom >"$src/big"
echo "hello from the backing" >"$src/sub/small"
want=$(sha256sum <"$src/big")

# mounted [OPTION=VALUE]: $mnt is an aheadfs mount run by /usr/bin/aheadfs,
# its bytes are the backing's, and the root's stats show the option.
mounted()
{
	local how=$1 opt=${2:-} fstype pid js
	fstype=$(findmnt -n -o FSTYPE --mountpoint "$mnt") ||
		fail "$how: nothing mounted on $mnt"
	[ "$fstype" = fuse.aheadfs ] || fail "$how: $mnt is $fstype, not fuse.aheadfs"
	[ "$(sha256sum <"$mnt/big")" = "$want" ] || fail "$how: bytes differ"
	[ "$(cat "$mnt/sub/small")" = "hello from the backing" ] ||
		fail "$how: small file differs"
	# The daemon serving it is the installed binary.
	pid=$(for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = /usr/bin/aheadfs ] &&
			tr '\0' ' ' <"$p/cmdline" | grep -q " $mnt" && echo "${p#/proc/}"
		true
	done | sed -n 1p) || true
	[ -n "$pid" ] || fail "$how: no /usr/bin/aheadfs daemon serves $mnt"
	js=$(getfattr --absolute-names -n user.aheadfs.stats --only-values "$mnt") ||
		fail "$how: no stats on the mount's root"
	if [ -n "$opt" ]; then
		python3 -c 'import json, sys
j = json.loads(sys.argv[1])
k, v = sys.argv[2].split("=")
sys.exit(str(j["options"][k]) != v)' "$js" "$opt" ||
			fail "$how: option $opt did not reach the daemon: $js"
	fi
	/usr/bin/aheadfs-stat "$mnt/big" >/dev/null || fail "$how: aheadfs-stat failed"
	echo "$how: fuse.aheadfs by /usr/bin/aheadfs (pid $pid), bytes match${opt:+, $opt}"
}
unmounted()
{
	umount "$mnt" || fail "$1: umount $mnt failed"
	findmnt -n --mountpoint "$mnt" >/dev/null && fail "$1: still mounted"
	return 0
}

echo "== mount -t fuse.aheadfs"
mount -t fuse.aheadfs "$src" "$mnt" -o allow_other,ra_max=8M ||
	fail "mount -t fuse.aheadfs failed"
mounted "mount -t" ra_max=8388608
unmounted "mount -t"

echo "== fstab line through mount.fuse3: mount -T"
cat >"$work/fstab" <<EOF
# a test fstab
$src	$mnt	fuse.aheadfs	allow_other,noatime,context_ra=loose,nofail	0	0
EOF
mount -T "$work/fstab" "$mnt" || fail "mount -T $work/fstab $mnt failed"
mounted "fstab" context_ra=loose
unmounted "fstab"

echo "== the example systemd unit"
unit=packaging/systemd/srv-data.mount
cp "$unit" "$work/"
man_opt=--man=no
command -v man >/dev/null && man_opt=--man=yes
systemd-analyze verify "$man_opt" "$work/srv-data.mount" >"$work/verify.log" 2>&1 ||
	{ cat "$work/verify.log" >&2; fail "systemd-analyze verify $unit"; }
# Anything it printed is a finding too.
if [ -s "$work/verify.log" ]; then
	cat "$work/verify.log" >&2
	fail "systemd-analyze verify $unit printed warnings"
fi
echo "systemd-analyze verify $man_opt: clean"
# No systemd runs the unit here: mount what it says, with its own
# Type= and Options=, on the test directories.
utype=$(sed -n 's/^Type=//p' "$unit")
uopts=$(sed -n 's/^Options=//p' "$unit")
mount -t "$utype" -o "$uopts" "$src" "$mnt" ||
	fail "mount -t $utype -o $uopts (the unit's) failed"
mounted "unit options ($uopts)" cache_size=$((2 << 30))
unmounted "unit options"

echo "== purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q aheadfs >"$work/purge.log" 2>&1 || {
	cat "$work/purge.log" >&2
	fail "apt-get purge aheadfs failed"
}
installed=0
dpkg-query -W -f='${Status}' aheadfs 2>/dev/null | grep -q " installed$" &&
	fail "aheadfs still installed after purge"
[ ! -e /usr/bin/aheadfs ] || fail "/usr/bin/aheadfs left after purge"
[ ! -e /usr/share/doc/aheadfs ] || fail "/usr/share/doc/aheadfs left after purge"
echo "== package stage passed"
