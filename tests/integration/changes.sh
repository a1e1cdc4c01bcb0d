#!/usr/bin/env bash
# changes.sh - files changed behind aheadfs (on the backing directly) while
# aheadfs has their pages cached, in both read modes, on a real ext4 volume:
#   after a reopen through the mount (close-to-open; a name's change once
#   entry_timeout expired), whatever the change -- truncated, replaced by a
#   rename, deleted, grown -- the mount serves
#   exactly the backing's bytes and size, nothing stale, nothing past EOF;
#   with a handle held open across the change (docs/reliability.md): a
#   deleted file stays readable through it with its old bytes (the daemon
#   holds the backing file open, as a local open would); after a truncate
#   or a replacement every byte it returns is the file's old or new byte at
#   that offset (never anything else), and the daemon keeps serving.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
afs_loop_ext4 128
S=$AFS_SRC
R=$AFS_WORK/ref
mkdir "$R"
# A name changed behind the mount is seen once the kernel's entry for it
# expires (entry_timeout, 1 s by default: docs/passthrough.md).
NAMES_S=1.2

# held.py FILE OLD NEW: open FILE (through the mount), read it whole, then
# signal (print "ready", wait for a line on stdin) and read it whole again
# through the same fd; every byte of the second read must equal OLD's or
# NEW's byte at its offset (NEW "-": deleted, only OLD's).  Prints the sizes
# read.
held_py='
import os, sys
path, old, new = sys.argv[1:4]
old = open(old, "rb").read()
fd = os.open(path, os.O_RDONLY)
def whole():
    out, off = [], 0
    while True:
        b = os.pread(fd, 1 << 20, off)
        if not b:
            return b"".join(out)
        out.append(b)
        off += len(b)
first = whole()
assert first == old, "first read differs from the file"
print("ready", flush=True)
sys.stdin.readline()
new = open(new, "rb").read() if new != "-" else b""
second = whole()
n = len(second)
for i in range(n if second not in (old[:n], new[:n]) else 0):
    if not ((i < len(old) and second[i] == old[i]) or
            (i < len(new) and second[i] == new[i])):
        print("byte %d is neither old nor new" % i, file=sys.stderr)
        sys.exit(1)
print("held: first %d second %d" % (len(first), len(second)))
'

same()
{
	cmp "$1" "$2" || afs_fail "$3: the mount's bytes differ from the backing's"
	[ "$(stat -c %s "$1")" = "$(stat -c %s "$2")" ] ||
		afs_fail "$3: the mount's size differs from the backing's"
}

for mode in kernel direct; do
	AFS_MNT=$AFS_WORK/mnt.$mode
	mkdir -p "$AFS_MNT"
	afs_mount -o "read_mode=$mode"
	M=$AFS_MNT
	d=$mode
	mkdir "$S/$d"

	# Truncated (shrunk to a page's middle), replaced, deleted, grown:
	# cached first, changed on the backing, reopened.
	"$AC_IO" fill "$S/$d/t" 4M 11
	cat "$M/$d/t" >/dev/null
	truncate -s $(((1 << 20) + 100)) "$S/$d/t"
	same "$M/$d/t" "$S/$d/t" "[$mode] truncated"
	n=$(python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); print(len(os.pread(fd,4096,2<<20)))' "$M/$d/t")
	[ "$n" = 0 ] || afs_fail "[$mode] truncated: $n bytes past the new EOF"

	"$AC_IO" fill "$S/$d/r" 4M 12
	cat "$M/$d/r" >/dev/null
	"$AC_IO" fill "$S/$d/r.new" 3M 13
	mv "$S/$d/r.new" "$S/$d/r"
	sleep "$NAMES_S"
	same "$M/$d/r" "$S/$d/r" "[$mode] replaced by rename"

	"$AC_IO" fill "$S/$d/u" 2M 14
	cat "$M/$d/u" >/dev/null
	rm "$S/$d/u"
	sleep "$NAMES_S"
	afs_must_fail cat "$M/$d/u" 2>/dev/null
	"$AC_IO" fill "$S/$d/u" 1M 15
	same "$M/$d/u" "$S/$d/u" "[$mode] deleted and made again"

	"$AC_IO" fill "$S/$d/g" 1M 16
	cat "$M/$d/g" >/dev/null
	"$AC_IO" write "$S/$d/g" 16 1M 3M
	same "$M/$d/g" "$S/$d/g" "[$mode] grown"

	# Handles held across the change.
	for change in truncate replace delete grow; do
		f=$S/$d/h.$change
		"$AC_IO" fill "$f" 4M 21
		cp "$f" "$R/$d.$change.old"
		new=$R/$d.$change.new
		coproc HELD { python3 -c "$held_py" "$M/$d/h.$change" \
			"$R/$d.$change.old" "$new" 2>&1; }
		read -r line <&"${HELD[0]}" || afs_fail "[$mode] held $change: no start"
		[ "$line" = ready ] || afs_fail "[$mode] held $change: $line"
		case $change in
		truncate)
			truncate -s 1M "$f"
			cp "$f" "$new"
			;;
		replace)
			"$AC_IO" fill "$f.tmp" 2M 22
			cp "$f.tmp" "$new"
			mv "$f.tmp" "$f"
			;;
		delete)
			rm "$f"
			new=-
			: >"$R/$d.$change.new"
			;;
		grow)
			"$AC_IO" write "$f" 21 4M 2M
			cp "$f" "$new"
			;;
		esac
		echo go >&"${HELD[1]}"
		out=$(cat <&"${HELD[0]}") || true
		wait "$HELD_PID" || afs_fail "[$mode] held $change: $out"
		echo "[$mode] $change with a handle held: $out"
		kill -0 "$AFS_PID" || afs_fail "[$mode] held $change: the daemon died"
		if [ "$change" != delete ]; then
			[ "$change" != replace ] || sleep "$NAMES_S"
			same "$M/$d/h.$change" "$f" "[$mode] held $change, reopened"
		fi
	done
	afs_umount
done
