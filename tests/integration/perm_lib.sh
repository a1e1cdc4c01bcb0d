# perm_lib.sh - the twin trees of the permission matrices (xattr_perms.sh,
# nonroot.sh), sourced after lib.sh.  perm_matrix.py compares an actor's
# outcomes on one twin of the backing and on one through the mount.
#
#   perm_setup                  the outside files ($AFS_WORK/outside: one
#                               0600, one 0644, owned by root) and the
#                               files' common content
#   perm_make_tree DIR OWNER ACTOR GROUP
#                               under DIR (created): files owned by OWNER
#                               (a user name): pub 0644, secret 0600,
#                               wonly 0602, grp 0640 of GROUP (one of the
#                               actor's groups), mine 0600 owned by ACTOR;
#                               directories priv 0700, search 0711, list
#                               0744 each holding f 0644; symlinks out of
#                               SOURCE (out_private, out_public, out_rel);
#                               every file with user.test set
#   perm_matrix AS... -- NAME=BACKING=MOUNTED...
#                               run perm_matrix.py as the actor (AS: the
#                               command prefix that becomes the actor);
#                               fails the test on any difference
#   perm_twins_equal BACKING MOUNTED
#                               the files of both twins hold the same bytes
#                               and modes afterwards
PERM_OUT=$AFS_WORK/outside

perm_setup()
{
	command -v python3 >/dev/null || afs_fail "python3 missing"
	command -v setfattr >/dev/null || afs_fail "setfattr missing (package attr)"
	mkdir -m 0755 "$PERM_OUT"
	echo "outside, private" >"$PERM_OUT/private"
	chmod 0600 "$PERM_OUT/private"
	echo "outside, public" >"$PERM_OUT/public"
	chmod 0644 "$PERM_OUT/public"
	head -c 20000 /dev/urandom >"$AFS_WORK/perm_blob"
}

perm_make_tree()
{
	local d=$1 owner=$2 actor=$3 group=$4 f sub mode
	mkdir -m 0755 "$d"
	for f in pub secret wonly mine grp; do
		cp "$AFS_WORK/perm_blob" "$d/$f"
		setfattr -n user.test -v "value of $f" "$d/$f"
		chown "$owner" "$d/$f"
	done
	chmod 0644 "$d/pub"
	chmod 0600 "$d/secret"
	chmod 0602 "$d/wonly"
	chown "$actor:" "$d/mine"
	chmod 0600 "$d/mine"
	chgrp "$group" "$d/grp"
	chmod 0640 "$d/grp"
	for sub in priv:0700 search:0711 list:0744; do
		mode=${sub#*:}
		sub=${sub%:*}
		mkdir -m 0755 "$d/$sub"
		echo "in $sub" >"$d/$sub/f"
		chmod 0644 "$d/$sub/f"
		setfattr -n user.test -v "value of $sub/f" "$d/$sub/f"
		chown "$owner" "$d/$sub/f" "$d/$sub"
		chmod "$mode" "$d/$sub"
	done
	chown "$owner" "$d"
	ln -s "$PERM_OUT/private" "$d/out_private"
	ln -s "$PERM_OUT/public" "$d/out_public"
	ln -s ../../outside/public "$d/out_rel"
}

perm_matrix()
{
	local as=() rc=0
	while [ "$1" != -- ]; do
		as+=("$1")
		shift
	done
	shift
	"${as[@]}" python3 "$AFS_UBIN/perm_matrix.py" \
		"$AFS_WORK" "$@" >"$AFS_WORK/matrix.out" || rc=$?
	cat "$AFS_WORK/matrix.out"
	[ "$rc" -eq 0 ] ||
		afs_fail "the actor's outcomes through the mount differ from the backing's (lines above)"
}

perm_twins_equal()
{
	local f
	for f in pub secret wonly mine grp; do
		cmp -s "$1/$f" "$2/$f" || afs_fail "$2/$f differs from $1/$f"
		[ "$(stat -c %a "$1/$f")" = "$(stat -c %a "$2/$f")" ] ||
			afs_fail "$2/$f's mode differs from $1/$f's"
	done
}
