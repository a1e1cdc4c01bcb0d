#!/usr/bin/env bash
# cache_programs.sh - real programs on the mount with the cache on:
#   - sqlite3 in WAL mode (its -shm file is a shared writable mapping):
#     20000 rows in batches, a reopen, PRAGMA integrity_check = ok, the
#     right count and sum; the database's stats show aheadfs served it;
#   - a small build (make + cc, four objects and a binary written through
#     the mount) and the binary run from the mount (a private mapping of a
#     file the cache holds): its output is right.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
for p in sqlite3 make cc; do
	command -v "$p" >/dev/null || afs_fail "$p missing"
done

ac_mount_ext4 96
M=$AFS_MNT

# sqlite WAL.
db=$M/test.db
sqlite3 "$db" 'PRAGMA journal_mode=WAL;' | grep -qx wal ||
	afs_fail "[$AC_MODE] sqlite: WAL mode refused"
sqlite3 "$db" 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);'
for b in 0 1 2 3; do
	sqlite3 "$db" "BEGIN;
WITH RECURSIVE c(x) AS (SELECT $((b * 5000 + 1)) UNION ALL SELECT x + 1 FROM c WHERE x < $((b * 5000 + 5000)))
INSERT INTO t(id, v, n) SELECT x, hex(randomblob(40)), x * 3 FROM c;
COMMIT;" || afs_fail "[$AC_MODE] sqlite: insert batch $b"
done
sqlite3 "$db" 'CREATE INDEX t_n ON t(n); DELETE FROM t WHERE id % 7 = 0;'
out=$(sqlite3 "$db" 'PRAGMA integrity_check; SELECT count(*), sum(n) FROM t;') ||
	afs_fail "[$AC_MODE] sqlite: query failed"
want_n=$((20000 - 20000 / 7))
want_sum=$(python3 -c 'print(sum(3 * x for x in range(1, 20001) if x % 7))')
[ "$out" = "ok
$want_n|$want_sum" ] || afs_fail "[$AC_MODE] sqlite: got '$out'"
sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
# A fresh reader after the checkpoint reads the main file -- from the disk:
# in kernel mode the kernel's page cache still holds what sqlite wrote
# through the mount (aheadfs keeps it: no whole-file invalidation after
# writes), so drop it to make the reads reach aheadfs: this file's pages
# only (fadvise DONTNEED), not the machine's (drop_caches would make the
# kernel forget the inodes and drop the pages of every test beside this).
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$db" ||
	afs_fail "fadvise DONTNEED on $db"
out=$(sqlite3 -readonly "$db" 'PRAGMA integrity_check; SELECT count(*) FROM t;')
[ "$out" = "ok
$want_n" ] || afs_fail "[$AC_MODE] sqlite after checkpoint: got '$out'"
cmp "$db" "$AFS_SRC/test.db" || afs_fail "[$AC_MODE] sqlite: mount and backing differ"
js=$(ac_stats "$db")
ac_show sqlite "$js"
# The backing's page cache still holds what sqlite wrote: kernel mode serves
# those reads from there (resident_reads), direct mode reads them into its
# cache (backing.reads).
ac_assert "$js" "g('cache.hits') + g('cache.misses') > 0 and g('backing.reads') + g('resident_reads') > 0" \
	"sqlite's reads did not reach aheadfs"

# A build and a run.
mkdir "$M/proj"
for i in 1 2 3 4; do
	cat >"$M/proj/m$i.c" <<C
int f$i(int x) { return x * $i + $((i * 11)); }
C
done
cat >"$M/proj/main.c" <<'C'
#include <stdio.h>
int f1(int), f2(int), f3(int), f4(int);
int main(void)
{
	long s = 0;
	for (int i = 0; i < 1000; i++)
		s += f1(i) + f2(i) + f3(i) + f4(i);
	printf("sum %ld\n", s);
	return 0;
}
C
cat >"$M/proj/Makefile" <<'MK'
OBJS = main.o m1.o m2.o m3.o m4.o
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O1 -c -o $@ $<
MK
make -s -C "$M/proj" CC=cc >/dev/null || afs_fail "[$AC_MODE] build failed"
out=$("$M/proj/prog") || afs_fail "[$AC_MODE] the built binary did not run"
want=$(python3 -c 'print(sum(x * i + i * 11 for x in range(1000) for i in range(1, 5)))')
[ "$out" = "sum $want" ] || afs_fail "[$AC_MODE] the binary printed '$out'"
cmp "$M/proj/prog" "$AFS_SRC/proj/prog" || afs_fail "binary differs on the backing"
# Rebuild after a change: make sees the new mtime, the new binary runs.
sleep 0.05
sed -i 's/x \* 4 + 44/x * 4 + 45/' "$M/proj/m4.c"
make -s -C "$M/proj" CC=cc >/dev/null || afs_fail "[$AC_MODE] rebuild failed"
out=$("$M/proj/prog")
[ "$out" = "sum $((want + 1000))" ] ||
	afs_fail "[$AC_MODE] rebuilt binary printed '$out', want sum $((want + 1000))"
js=$(ac_stats "$M/proj/prog")
ac_show prog "$js"
# cache.errors is printed, not asserted: it also counts readahead pages
# completed with -EAGAIN when cancelled (ld reads back the output it is
# writing); the backing's own error count must be 0.
echo "prog [$AC_MODE]: cache.errors $(ac_get "$js" cache.errors)"
root=$(ac_stats "$M")
ac_assert "$root" "g('backing.errors') == 0 and g('readahead.errors') == 0" \
	"backing read errors on a healthy volume"
ac_umount
