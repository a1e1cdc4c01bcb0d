#!/usr/bin/env bash
# fresh-root.sh - run one of the README's commands on a pristine Debian 12
# root, as a new user on a fresh machine would: a minbase debootstrap of
# bookworm from this machine's configured apt mirror, /dev, /dev/pts, /proc,
# /run bound in and /sys bound recursively (cgroup and bdi files), a clean
# clone of this repository's HEAD in /root/aheadfs, and the command run there
# with chroot.  Everything mounted is unmounted on exit and the root removed;
# the exit status is the command's.
#
# Usage: packaging/fresh-root.sh quickstart|test [ARG...]
#   quickstart  runs ./packaging/quickstart.sh ARG...
#   test        runs ./tests/run.sh ARG...  (e.g. "test release")
# Knobs (environment):
#   FRESH_ROOT_CACHE  where the base root tarball is kept between runs
#                     (default /var/tmp/aheadfs-fresh-root); each run unpacks
#                     a new root from it, so every run starts pristine.
#                     Delete the tarball to debootstrap again.
#   FRESH_ROOT_MIRROR the Debian mirror (default: the first bookworm mirror
#                     in /etc/apt/sources.list or /etc/apt/sources.list.d)
#   FRESH_ROOT_KEEP=1 keep the root after the run (it is still unmounted)
# Only committed work is in the clone.  Needs root and debootstrap.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
t0=$(date +%s)

usage()
{
	echo "usage: $0 quickstart|test [ARG...]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
what=$1
shift
case "$what" in
quickstart) cmd=(./packaging/quickstart.sh "$@") ;;
test) cmd=(./tests/run.sh "$@") ;;
*) usage ;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "fresh-root.sh: must run as root (debootstrap, mounts, chroot)" >&2
	exit 1
fi
command -v debootstrap >/dev/null || {
	echo "fresh-root.sh: debootstrap missing (apt-get install debootstrap)" >&2
	exit 1
}

# The first mirror that serves bookworm, from either apt source format.
find_mirror()
{
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# deb [OPTIONS] URI SUITE COMPONENT...
		awk '{ l = $0; sub(/\[[^]]*\]/, "", l); n = split(l, w, " ")
			if (w[1] == "deb" && w[3] == "bookworm") { print w[2]; exit } }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822 stanzas, separated by blank lines.
		awk 'BEGIN { RS = ""; FS = "\n" } {
			uri = ""; suite = 0; deb = 0
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^URIs:/) { split($i, a, " "); uri = a[2] }
				if ($i ~ /^Suites:/ && $i ~ /[ \t]bookworm([ \t]|$)/) suite = 1
				if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb = 1
			}
			if (uri != "" && suite && deb) { print uri; exit }
		}' "$f"
	done
}
mirror=${FRESH_ROOT_MIRROR:-$(find_mirror | sed -n 1p)}
[ -n "$mirror" ] || {
	echo "fresh-root.sh: no bookworm mirror in /etc/apt; set FRESH_ROOT_MIRROR" >&2
	exit 1
}

cache=${FRESH_ROOT_CACHE:-/var/tmp/aheadfs-fresh-root}
mkdir -p "$cache"
# One base per mirror: the tarball name carries a digest of its address.
base=$cache/bookworm-minbase-$(printf '%s' "$mirror" | sha256sum | cut -c1-12).tar
root=$(mktemp -d "$cache/root.XXXXXX")

cleanup()
{
	local rc=$? m
	set +e
	trap - EXIT INT TERM
	# FUSE mounts the command left (the quickstart's demo mount) first,
	# then the bound trees, innermost first.  Lazy as a last resort: a
	# daemon started inside may still hold a file open.
	for m in $(awk -v r="$root/" 'index($5, r) == 1 { print $5 }' \
		/proc/self/mountinfo | tac); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if awk -v r="$root/" 'index($5, r) == 1 { f = 1 } END { exit !f }' \
		/proc/self/mountinfo; then
		echo "fresh-root.sh: mounts left under $root, not removed" >&2
		[ "$rc" -ne 0 ] || rc=1
	elif [ -n "${FRESH_ROOT_KEEP:-}" ]; then
		echo "fresh-root.sh: root kept: $root" >&2
	else
		rm -rf --one-file-system "$root"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ ! -f "$base" ]; then
	echo "== debootstrap --variant=minbase bookworm from $mirror (cached in $base)"
	stage=$(mktemp -d "$cache/stage.XXXXXX")
	chmod 0755 "$stage"
	if ! debootstrap --variant=minbase bookworm "$stage" "$mirror" \
		>"$stage.log" 2>&1; then
		tail -n 30 "$stage.log" >&2
		rm -rf --one-file-system "$stage"
		echo "fresh-root.sh: debootstrap failed (log: $stage.log)" >&2
		exit 1
	fi
	rm -f "$stage.log"
	tar -C "$stage" --numeric-owner -cf "$base.tmp" .
	mv "$base.tmp" "$base"
	rm -rf --one-file-system "$stage"
fi

echo "== a pristine root in $root"
tar -C "$root" --numeric-owner -xf "$base"
# The root's / as on any machine (mktemp makes directories 0700, and a base
# made by an older version of this script has that mode: users other than
# root could reach nothing).
chmod 0755 "$root"
# What a booted Debian 12 has and a debootstrapped root lacks: systemd's
# tmpfiles make /etc/mtab a link to the kernel's mount table at boot.
# (nfs-ganesha's VFS backend finds file systems through it.)
[ -e "$root/etc/mtab" ] || ln -s ../proc/self/mounts "$root/etc/mtab"
# A fresh machine resolves names: give the root this machine's resolver.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

echo "== a clean clone of $(git -C "$top" rev-parse --short HEAD) in /root/aheadfs"
git clone -q --no-hardlinks "$top" "$root/root/aheadfs"
git -C "$root/root/aheadfs" checkout -q --detach "$(git -C "$top" rev-parse HEAD)"

mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount --bind /proc "$root/proc"
mount --bind /run "$root/run"
mount --rbind /sys "$root/sys"
# Unmounting the copies must not unmount the machine's own submounts.
mount --make-rslave "$root/sys"

echo "== chroot: cd /root/aheadfs && ${cmd[*]}"
start=$(date +%s)
rc=0
chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/bash -c 'cd /root/aheadfs && exec "$@"' fresh-root "${cmd[@]}" || rc=$?
echo "== ${cmd[*]}: exit status $rc after $(($(date +%s) - start)) s" \
	"($(($(date +%s) - t0)) s with the root's setup)"
exit "$rc"
