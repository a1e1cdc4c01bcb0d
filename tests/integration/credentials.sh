#!/usr/bin/env bash
# credentials.sh - what a user creates through an allow_other mount belongs to
# that user and group exactly as when made on the backing directly: files,
# dirs, symlinks, fifos, sockets, hard links; in a setgid directory; with
# write access only through a supplementary group; with another primary
# group.  POSIX ACLs on the backing are honoured (an ACL that denies denies,
# one that grants grants, default ACLs are inherited), and
# default_permissions denies what the backing would deny.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user
command -v setfacl >/dev/null || afs_fail "setfacl missing (package acl)"

S=$AFS_SRC
mkdir -m 0777 "$S/pub"
mkdir "$S/sgid" && chgrp afs-test-g1 "$S/sgid" && chmod 2777 "$S/sgid"
mkdir "$S/g2only" && chgrp afs-test-g2 "$S/g2only" && chmod 0770 "$S/g2only"
mkdir -m 0755 "$S/rootdir"
echo secret >"$S/secret" && chmod 0600 "$S/secret"
echo private >"$S/rootdir/private" && chmod 0644 "$S/rootdir/private"
for d in pub sgid g2only; do mkdir -p "$S/$d/viafuse" "$S/$d/direct"; done
chmod 0777 "$S"/*/viafuse "$S"/*/direct
chgrp afs-test-g1 "$S/sgid/viafuse" "$S/sgid/direct"
chmod 2777 "$S/sgid/viafuse" "$S/sgid/direct"
chgrp afs-test-g2 "$S/g2only/viafuse" "$S/g2only/direct"
chmod 0770 "$S/g2only/viafuse" "$S/g2only/direct"

afs_mount -o allow_other
# Root with allow_other: default_permissions is on unless refused.
awk -v m="$AFS_MNT" '$5 == m' /proc/self/mountinfo | grep -q default_permissions ||
	afs_fail "allow_other as root without default_permissions"
bad=0
fail_soft()
{
	echo "FAIL: $*" >&2
	bad=1
}

# The same operations, run by the user in directory $1; one line per
# operation with its outcome.
user_ops='
cd "$1" || exit 1
umask 022
secret=$2
t() { if "$@" 2>/dev/null; then echo "ok: ${*//$secret/SECRET}"; else echo "failed: ${*//$secret/SECRET}"; fi; }
t touch file
t mkdir dir
t mkdir dir/sub
t ln -s file sym
t mkfifo fifo
t python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")"
t ln file hard
t sh -c "umask 077; echo x >masked"
t sh -c "umask 0; mkdir open"
t ln "$2" rootlink
t cp "$2" copy
t chmod 4755 file
t chown root file
t chgrp afs-test-g1 file
t chgrp root dir
'
objects="file dir dir/sub sym fifo sock hard masked open rootlink copy"

compare_dirs()
{
	local via=$1 direct=$2 o a b
	for o in $objects; do
		a=$({ stat -c '%F %u:%g %a %h' "$direct/$o" 2>&1 | sed 's/.*: //' || true; })
		b=$({ stat -c '%F %u:%g %a %h' "$via/$o" 2>&1 | sed 's/.*: //' || true; })
		[ "$a" = "$b" ] || fail_soft "$via/$o: backing gives '$a', through the mount '$b'"
	done
}

run_both()
{
	local d=$1 a b
	shift
	b=$("$@" bash -c "$user_ops" - "$S/$d/direct" "$S/secret")
	a=$("$@" bash -c "$user_ops" - "$AFS_MNT/$d/viafuse" "$AFS_MNT/secret")
	if [ "$a" != "$b" ]; then
		fail_soft "$d: outcomes differ (backing, then mount):"
		diff <(echo "$b") <(echo "$a") >&2 || true
	fi
	compare_dirs "$S/$d/viafuse" "$S/$d/direct"
}

# Plain directory, setgid directory, group-writable only through the
# supplementary group afs-test-g2.
run_both pub afs_as_user
run_both sgid afs_as_user
run_both g2only afs_as_user
# The result must be the user's, not root's (not only "same as backing").
[ "$(stat -c %U:%G "$S/pub/viafuse/fifo")" = "$AFS_USER:$AFS_USER" ] ||
	fail_soft "pub/viafuse/fifo owned by $(stat -c %U:%G "$S/pub/viafuse/fifo")"
[ "$(stat -c %G "$S/sgid/viafuse/dir")" = afs-test-g1 ] ||
	fail_soft "setgid dir: sgid/viafuse/dir group $(stat -c %G "$S/sgid/viafuse/dir")"
[ -f "$S/g2only/viafuse/file" ] ||
	fail_soft "no file created through the supplementary group afs-test-g2"

# Another primary group (as newgrp/sg would give): objects take it.
mkdir -m 0777 "$S/pub/viafuse2" "$S/pub/direct2"
objects="file dir sym fifo masked"
b=$(setpriv --reuid="$AFS_UID" --regid="$AFS_G2" --init-groups --reset-env -- \
	bash -c "$user_ops" - "$S/pub/direct2" "$S/secret")
a=$(setpriv --reuid="$AFS_UID" --regid="$AFS_G2" --init-groups --reset-env -- \
	bash -c "$user_ops" - "$AFS_MNT/pub/viafuse2" "$AFS_MNT/secret")
[ "$a" = "$b" ] || fail_soft "primary group g2: outcomes differ: $(diff <(echo "$b") <(echo "$a"))"
compare_dirs "$S/pub/viafuse2" "$S/pub/direct2"
[ "$(stat -c %G "$S/pub/viafuse2/fifo")" = afs-test-g2 ] ||
	fail_soft "primary group g2: fifo group $(stat -c %G "$S/pub/viafuse2/fifo")"

# default_permissions: what the backing denies, the mount denies.
afs_must_fail afs_as_user cat "$AFS_MNT/secret"
afs_must_fail afs_as_user touch "$AFS_MNT/rootdir/new"
afs_must_fail afs_as_user chmod 0666 "$AFS_MNT/rootdir/private"
afs_must_fail afs_as_user rm "$AFS_MNT/rootdir/private"
afs_as_user cat "$AFS_MNT/rootdir/private" >/dev/null ||
	fail_soft "user cannot read a 0644 file through the mount"
[ ! -e "$S/rootdir/new" ] || fail_soft "rootdir/new was created as root"

# POSIX ACLs set on the backing.
echo denied >"$S/acl-deny" && chmod 0644 "$S/acl-deny"
setfacl -m "u:$AFS_USER:---" "$S/acl-deny"
afs_as_user cat "$S/acl-deny" >/dev/null 2>&1 &&
	afs_fail "setup: the ACL does not deny on the backing"
afs_must_fail afs_as_user cat "$AFS_MNT/acl-deny"
echo granted >"$S/acl-grant" && chmod 0600 "$S/acl-grant"
setfacl -m "u:$AFS_USER:r" "$S/acl-grant"
[ "$(afs_as_user cat "$AFS_MNT/acl-grant" 2>&1)" = granted ] ||
	fail_soft "an ACL entry granting read is not honoured through the mount"
mkdir -m 0755 "$S/acl-dir"
setfacl -m "g:afs-test-g1:rwx" "$S/acl-dir"
afs_as_user touch "$AFS_MNT/acl-dir/by-group-acl" ||
	fail_soft "a group ACL entry (supplementary group) granting write is not honoured"
# Default ACLs are inherited the same way through the mount.
mkdir -m 0777 "$S/acl-default"
setfacl -d -m "u:$AFS_USER:rwx,g:afs-test-g2:r-x,m::rwx" "$S/acl-default"
afs_as_user bash -c "umask 022; touch '$S/acl-default/direct'; mkdir '$S/acl-default/direct.d'"
afs_as_user bash -c "umask 022; touch '$AFS_MNT/acl-default/viafuse'; mkdir '$AFS_MNT/acl-default/viafuse.d'"
for p in "" .d; do
	a=$(cd "$S/acl-default" && getfacl -c "direct$p" 2>&1; stat -c %a "direct$p")
	b=$(cd "$S/acl-default" && getfacl -c "viafuse$p" 2>&1; stat -c %a "viafuse$p")
	[ "$a" = "$b" ] || fail_soft "default ACL inheritance differs for 'direct$p':
$a
--- through the mount:
$b"
done
# The owner sets an ACL through the mount: it lands on the backing and
# takes effect.
afs_as_user bash -c "echo mine >'$AFS_MNT/pub/viafuse/acl-own'; chmod 0644 '$AFS_MNT/pub/viafuse/acl-own'"
afs_as_user setfacl -m u:nobody:--- "$AFS_MNT/pub/viafuse/acl-own" ||
	fail_soft "owner cannot setfacl through the mount"
getfacl -c "$S/pub/viafuse/acl-own" 2>/dev/null | grep -qx 'user:nobody:---' ||
	fail_soft "setfacl through the mount did not reach the backing"
afs_must_fail setpriv --reuid=nobody --regid=nogroup --clear-groups \
	cat "$AFS_MNT/pub/viafuse/acl-own"

afs_umount

# no_default_permissions: the kernel checks nothing, the backing decides
# under the caller's credentials, so it must deny exactly what it denies
# directly: a file inside a directory the user cannot search, a file an ACL
# denies, a root-only file; and allow writing through a supplementary group.
mkdir -m 0700 "$S/rootonly"
echo hidden >"$S/rootonly/f" && chmod 0644 "$S/rootonly/f"
afs_as_user cat "$S/rootonly/f" >/dev/null 2>&1 &&
	afs_fail "setup: rootonly/f is readable on the backing"
afs_mount -o allow_other,no_default_permissions
! awk -v m="$AFS_MNT" '$5 == m' /proc/self/mountinfo | grep -q default_permissions ||
	afs_fail "no_default_permissions: default_permissions still in force"
for f in rootonly/f acl-deny secret; do
	if out=$(afs_as_user cat "$AFS_MNT/$f" 2>/dev/null); then
		fail_soft "no_default_permissions: the user reads $f ('$out'), the backing denies it"
	fi
done
afs_must_fail afs_as_user touch "$AFS_MNT/rootonly/new"
afs_must_fail afs_as_user touch "$AFS_MNT/rootdir/new"
afs_as_user touch "$AFS_MNT/g2only/viafuse/nodp" ||
	fail_soft "no_default_permissions: no write through the supplementary group"
[ "$(stat -c %U "$S/g2only/viafuse/nodp" 2>/dev/null)" = "$AFS_USER" ] ||
	fail_soft "no_default_permissions: g2only/viafuse/nodp not owned by the user"
afs_umount
[ "$bad" -eq 0 ] || afs_fail "credential mismatches (lines above)"
