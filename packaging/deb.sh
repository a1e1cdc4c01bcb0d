#!/usr/bin/env bash
# deb.sh - build the Debian package of aheadfs in one command:
# build/deb/aheadfs_VERSION_ARCH.deb (the path is printed last).
#
# A release build of the two binaries with Debian's build flags (hardening),
# installed by CMake's own install rules (cmake --install with DESTDIR, so
# wherever the targets live in the tree), stripped; man pages gzip -9n;
# /usr/share/doc/aheadfs/copyright and changelog.Debian.gz from
# packaging/debian/, which is copied into place as a debian/ directory for
# dpkg-shlibdeps (Depends from what the binaries link) and dpkg-gencontrol
# (the control file, version from packaging/debian/changelog).  Then lintian,
# when installed: errors fail the build, warnings are shown.
#
# Usage: packaging/deb.sh [--no-lintian]
# Needs: cmake, a C compiler, libfuse3-dev, liburcu-dev, dpkg-dev
# (packaging/deps.sh installs the build packages; dpkg-dev comes with
# build-essential).  Runs as any user; the package's files are owned by root.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

run_lintian=1
[ "${1:-}" != --no-lintian ] || run_lintian=0

out=build/deb
bld=$out/build
src=$out/src    # debian/ in place, for the dpkg-dev tools
stage=$out/root # the package's file tree
rm -rf "$src" "$stage"
mkdir -p "$bld" "$src/debian" "$stage"
umask 022
cp packaging/debian/control packaging/debian/copyright \
	packaging/debian/changelog "$src/debian/"

version=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
# Source date for reproducible gzip and file times: the changelog entry.
SOURCE_DATE_EPOCH=$(cd "$src" && dpkg-parsechangelog -S Timestamp)
export SOURCE_DATE_EPOCH

echo "== building aheadfs $version ($arch) in $bld"
# Debian's flags: -O2 -g, the hardening set (fortify, stack protector,
# relro, bindnow, PIE); CMake reads CFLAGS and LDFLAGS at its first configure.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)"
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
export CFLAGS LDFLAGS
rm -f "$bld/CMakeCache.txt"
cmake -S . -B "$bld" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	>/dev/null
# Only what the package holds: the install rules name these two targets.
cmake --build "$bld" -j "$(nproc)" --target aheadfs aheadfs-stat >/dev/null

echo "== installing into $stage"
DESTDIR=$top/$stage cmake --install "$bld" >/dev/null
for f in "$stage/usr/bin/aheadfs" "$stage/usr/bin/aheadfs-stat" \
	"$stage/usr/share/man/man1/aheadfs.1" \
	"$stage/usr/share/man/man1/aheadfs-stat.1"; do
	[ -f "$f" ] || {
		echo "deb.sh: cmake --install did not install ${f#"$stage"}" >&2
		exit 1
	}
done
# Every ELF file installed (CMake's manifest lists them with DESTDIR in
# front), stripped the way dh_strip does.
elves=()
while IFS= read -r f; do
	case "$f" in
	"$top/$stage"/*) ;;
	*) f=$top/$stage$f ;;
	esac
	if [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' ')" = \
		7f454c46 ]; then
		strip --remove-section=.comment --remove-section=.note \
			--strip-unneeded "$f"
		chmod 0755 "$f"
		elves+=("$f")
	fi
done <"$bld/install_manifest.txt"
[ "${#elves[@]}" -ge 2 ] || {
	echo "deb.sh: no binaries in the install manifest" >&2
	exit 1
}
find "$stage/usr/share/man" -type f -name '*.[1-9]' -exec gzip -9n {} +
doc=$stage/usr/share/doc/aheadfs
install -d "$doc"
install -m 0644 packaging/debian/copyright "$doc/copyright"
gzip -9nc packaging/debian/changelog >"$doc/changelog.Debian.gz"
chmod 0644 "$doc/changelog.Debian.gz"
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

echo "== control: dependencies of ${elves[*]##*/}"
mkdir -p "$stage/DEBIAN"
(cd "$src" && dpkg-shlibdeps -Tdebian/substvars "${elves[@]}" &&
	dpkg-gencontrol -paheadfs -P"$top/$stage" -Tdebian/substvars \
		-fdebian/files)
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum \
	>DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
grep -E '^(Package|Version|Architecture|Depends|Installed-Size):' \
	"$stage/DEBIAN/control"

deb=$out/aheadfs_${version}_$arch.deb
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
dpkg-deb --contents "$deb"

if [ "$run_lintian" -eq 1 ]; then
	if command -v lintian >/dev/null; then
		echo "== lintian $deb"
		lintian --fail-on error --display-info "$deb" || {
			echo "deb.sh: lintian reported errors" >&2
			exit 1
		}
	else
		echo "== lintian not installed: not checked"
	fi
fi
echo "$top/$deb"
