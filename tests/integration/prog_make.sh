#!/usr/bin/env bash
# prog_make.sh - unpack a small C source tree onto the mount, build it with
# make there, run the binary from the mount; an up-to-date tree rebuilds
# nothing, and touching one source rebuilds just that object.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
command -v make >/dev/null && command -v cc >/dev/null ||
	afs_fail "make and cc are needed"

P=$AFS_WORK/proj
mkdir -p "$P/src"
cat >"$P/src/greet.h" <<'C'
int greet(const char *who, char *out, int len);
int sum_to(int n);
C
cat >"$P/src/greet.c" <<'C'
#include <stdio.h>
#include "greet.h"
int greet(const char *who, char *out, int len)
{
	return snprintf(out, len, "hello, %s", who);
}
C
cat >"$P/src/sum.c" <<'C'
#include "greet.h"
int sum_to(int n)
{
	int s = 0;
	for (int i = 1; i <= n; i++)
		s += i;
	return s;
}
C
cat >"$P/src/main.c" <<'C'
#include <stdio.h>
#include "greet.h"
int main(int argc, char **argv)
{
	char buf[64];
	greet(argc > 1 ? argv[1] : "world", buf, sizeof(buf));
	printf("%s %d\n", buf, sum_to(100));
	return 0;
}
C
cat >"$P/Makefile" <<'M'
CFLAGS = -O2 -Wall
OBJS = src/main.o src/greet.o src/sum.o
hello: $(OBJS)
	$(CC) -o $@ $(OBJS)
src/%.o: src/%.c src/greet.h
	$(CC) $(CFLAGS) -c -o $@ $<
clean:
	rm -f hello $(OBJS)
M
tar -C "$AFS_WORK" -czf "$AFS_WORK/proj.tar.gz" proj

afs_mount
tar -C "$AFS_MNT" -xzf "$AFS_WORK/proj.tar.gz"
make -C "$AFS_MNT/proj" -j2 >"$AFS_WORK/make1.log" 2>&1 || {
	cat "$AFS_WORK/make1.log" >&2
	afs_fail "make failed on the mount"
}
out=$("$AFS_MNT/proj/hello" aheadfs)
[ "$out" = "hello, aheadfs 5050" ] || afs_fail "binary from the mount printed '$out'"
cmp "$AFS_MNT/proj/hello" "$AFS_SRC/proj/hello" || afs_fail "binary differs on the backing"

# Up to date: nothing to do.  Then one source changes: one object rebuilt.
make -C "$AFS_MNT/proj" >"$AFS_WORK/make2.log" 2>&1
grep -q "is up to date" "$AFS_WORK/make2.log" ||
	{ cat "$AFS_WORK/make2.log" >&2; afs_fail "make rebuilt an up-to-date tree"; }
sleep 0.01
touch "$AFS_MNT/proj/src/sum.c"
make -C "$AFS_MNT/proj" >"$AFS_WORK/make3.log" 2>&1
compiled=$(grep -c -- ' -c ' "$AFS_WORK/make3.log" || true)
grep -q 'src/sum.c' "$AFS_WORK/make3.log" && [ "$compiled" -eq 1 ] ||
	{ cat "$AFS_WORK/make3.log" >&2; afs_fail "touching sum.c rebuilt $compiled objects"; }
sed -i 's/sum_to(100)/sum_to(10)/' "$AFS_MNT/proj/src/main.c"
make -C "$AFS_MNT/proj" >/dev/null 2>&1
out=$("$AFS_MNT/proj/hello")
[ "$out" = "hello, world 55" ] || afs_fail "rebuilt binary printed '$out'"
make -C "$AFS_MNT/proj" clean >/dev/null
[ ! -e "$AFS_SRC/proj/hello" ] || afs_fail "make clean left the binary"
afs_must_fail "$AFS_MNT/proj/src/main.c"
afs_umount
