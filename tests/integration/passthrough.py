#!/usr/bin/env python3
"""passthrough.py - the open orders of passthrough.sh, on one mount.

usage: passthrough.py MNT SRC KIND [READ_MODE]

KIND says what the mount's passthrough is: "writes", "resident" or "all"
(on, with that -o passthrough=; every file here is one the backing's page
cache holds whole, just written, so "resident" gives readers passthrough as
"all" does), "off" (no passthrough; OPEN replies as before), "none"
(opens=none: no OPEN at all), "writeback" (write_mode=writeback: writers ask
for it and fall back), "refused" (negotiated, but the kernel refuses the
daemon's backing files: no CAP_SYS_ADMIN; writers fall back), "file" (on,
over a backing whose files aheadfs does not register: ramfs, without
O_DIRECT; writers fall back, counted by file).  READ_MODE is the mount's
read_mode= (kernel or direct).

Each scenario opens files of the mount in one order, and every open must
succeed (the kernel fails an open whose I/O mode conflicts with its inode's
with EIO: what aheadfs's per-inode decision must never cause), every read
must return the bytes last written (through the mount, read back through
the mount and on the backing), and the mount's passthrough counters must
move as KIND says: which opens got passthrough, which fell back and why.
"""
import errno
import json
import mmap
import os
import sys

MNT, SRC, KIND = sys.argv[1:4]
READ_MODE = sys.argv[4] if len(sys.argv) > 4 else "kernel"
ON = KIND in ("writes", "resident", "all")
# Readers ask for passthrough: every file here is resident.
READERS = KIND in ("resident", "all")
PAGE = 4096


def fail(msg):
    sys.exit("FAIL: passthrough [%s, read_mode=%s]: %s" % (KIND, READ_MODE, msg))


def stats():
    return json.loads(os.getxattr(MNT, "user.aheadfs.stats"))["passthrough"]


def delta(before):
    now = stats()
    return {k: now[k] - before[k] for k in now if isinstance(now[k], int)}


def expect(name, before, **want):
    """The counters moved by exactly @want (the others named in it by 0)."""
    d = delta(before)
    for k, v in want.items():
        if d[k] != v:
            fail("%s: passthrough.%s moved by %d, not %d (all: %s)" % (name, k, d[k], v, d))


def opn(path, flags, mode=0o644):
    try:
        return os.open(path, flags, mode)
    except OSError as e:
        fail("open(%s, %#o) failed: %s" % (path, flags, os.strerror(e.errno)))


def pread(fd, n, off, what):
    try:
        return os.pread(fd, n, off)
    except OSError as e:
        fail("%s: read failed: %s" % (what, os.strerror(e.errno)))


def same(path, want, what):
    """@path reads @want through the mount (a new open) and on the backing."""
    with open(os.path.join(MNT, path), "rb") as f:
        got = f.read()
    if got != want:
        fail("%s: %s reads %d bytes through the mount, not the %d written%s" % (
            what, path, len(got), len(want), " (stale bytes)" if len(got) == len(want) else ""))
    with open(os.path.join(SRC, path), "rb") as f:
        if f.read() != want:
            fail("%s: the backing's %s is not what was written" % (what, path))


def backing(path, content):
    """Write @path on the backing: no open of the mount before the
    scenario's own (a RELEASE comes after close(2) returns, so an earlier
    open through the mount may still count when the next one is decided)."""
    with open(os.path.join(SRC, path), "wb") as f:
        f.write(content)


def data(tag, n):
    return bytes((tag * 7 + k) % 251 for k in range(251)) * (n // 251) + b"x" * (n % 251)


def pt(n, on=ON):
    """n opens that get passthrough on this mount, else 0."""
    return n if on else 0


# What a writer that asks for passthrough counts where it does not get it.
FALLBACK_MOUNT = 1 if KIND in ("refused", "writeback") else 0
FALLBACK_FILE = 1 if KIND == "file" else 0


def created_writer():
    """A new file written by a write-only open (O_CREAT|O_TRUNC)."""
    b = stats()
    want = data(1, 300000)
    fd = opn(os.path.join(MNT, "new"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, want)
    os.close(fd)
    if KIND != "none":
        expect("created writer", b, opens=pt(1), fallback_mount=FALLBACK_MOUNT, fallback_file=FALLBACK_FILE)
    same("new", want, "a created file")


def reader_then_writer():
    """A cached reader holds its open: the writer keeps aheadfs's path."""
    p = os.path.join(MNT, "rw1")
    backing("rw1", data(2, 100000))
    b = stats()
    r = opn(p, os.O_RDONLY)
    pread(r, 100000, 0, "reader first")
    w = opn(p, os.O_WRONLY)
    new = data(3, 5000)
    os.pwrite(w, new, 8192)
    got = pread(r, 5000, 8192, "reader then writer")
    if got != new:
        fail("reader then writer: the held reader reads stale bytes")
    os.close(w)
    os.close(r)
    if KIND == "writes":  # cached or direct_io, the reader is aheadfs's
        expect("reader then writer", b, opens=0, fallback_inode=1)
    elif READERS:
        expect("reader then writer", b, opens=2, fallback_inode=0)
    want = bytearray(data(2, 100000))
    want[8192:13192] = new
    same("rw1", bytes(want), "reader then writer")


def writer_then_reader():
    """A passthrough writer holds its open: the reader joins it."""
    p = os.path.join(MNT, "rw2")
    backing("rw2", data(4, 50000))
    b = stats()
    w = opn(p, os.O_RDWR)
    os.pwrite(w, b"A" * 1000, 100)
    r = opn(p, os.O_RDONLY)
    for k in range(20):
        chunk = bytes([65 + k]) * 777
        os.pwrite(w, chunk, 3000 + k * 501)
        if pread(r, 777, 3000 + k * 501, "writer then reader") != chunk:
            fail("writer then reader: a read after a write returned stale bytes (round %d)" % k)
    os.close(r)
    os.close(w)
    want = bytearray(data(4, 50000))
    want[100:1100] = b"A" * 1000
    for k in range(20):
        want[3000 + k * 501:3000 + k * 501 + 777] = bytes([65 + k]) * 777
    if KIND != "none":
        expect("writer then reader", b, opens=pt(2), fallback_mount=FALLBACK_MOUNT, fallback_file=FALLBACK_FILE,
               backing_files=0)
    same("rw2", bytes(want), "writer then reader")


def rewrite_after_cached_reader():
    """A cached reader fills both caches and closes; a writer rewrites the
    bytes; a new reader must see the new ones."""
    p = os.path.join(MNT, "stale")
    with open(p, "wb") as f:
        f.write(data(5, 1 << 20))
    b = stats()
    for v in range(6, 10):
        with open(p, "rb") as f:
            f.read()
        w = opn(p, os.O_WRONLY)
        os.pwrite(w, data(v, 1 << 20), 0)
        os.close(w)
        with open(p, "rb") as f:
            if f.read() != data(v, 1 << 20):
                fail("a reader after a rewrite reads stale bytes (version %d)" % v)
    # The writer is passthrough unless the reader's RELEASE, which comes
    # after close(2) returns, is still on its way: most rounds test what
    # they are for.
    if ON and delta(b)["opens"] < 1:
        fail("rewrite after a cached reader: no writer got passthrough in 4 rounds")
    same("stale", data(9, 1 << 20), "rewrite after a cached reader")


def held_reader_sees_writer():
    """A reader opened first holds its open while a writer rewrites: every
    read after a write returns it."""
    p = os.path.join(MNT, "held")
    backing("held", data(10, 1 << 20))
    r = opn(p, os.O_RDONLY)
    pread(r, 1 << 20, 0, "held reader")  # fills aheadfs's cache
    w = opn(p, os.O_WRONLY)
    for v in range(11, 31):
        new = data(v, 64 << 10)
        os.pwrite(w, new, (v % 8) * (64 << 10))
        if pread(r, 64 << 10, (v % 8) * (64 << 10), "held reader") != new:
            fail("a held reader reads stale bytes after write %d" % v)
    os.close(w)
    got = pread(r, 64 << 10, (30 % 8) * (64 << 10), "held reader")
    if got != data(30, 64 << 10):
        fail("a held reader reads stale bytes after the writer closed")
    os.close(r)


def o_direct_reader_beside_writer():
    """An O_DIRECT reader joins a passthrough writer, its reads still
    aheadfs's: every read after a write returns it (they go around
    aheadfs's cache, which the writer's bytes never pass)."""
    p = os.path.join(MNT, "dread")
    backing("dread", data(70, 1 << 20))
    b = stats()
    w = opn(p, os.O_WRONLY)
    d = opn(p, os.O_RDONLY | os.O_DIRECT)
    pread(d, 1 << 20, 0, "O_DIRECT reader")
    for v in range(71, 91):
        new = data(v, 64 << 10)
        os.pwrite(w, new, (v % 8) * (64 << 10))
        if pread(d, 64 << 10, (v % 8) * (64 << 10), "O_DIRECT reader") != new:
            fail("an O_DIRECT reader beside a writer reads stale bytes after write %d" % v)
        pread(d, 1 << 20, 0, "O_DIRECT reader")
    os.close(d)
    os.close(w)
    if KIND != "none":
        expect("O_DIRECT reader beside a writer", b, opens=pt(2),
               fallback_mount=FALLBACK_MOUNT, fallback_file=FALLBACK_FILE)
    d = opn(p, os.O_RDONLY | os.O_DIRECT)
    if pread(d, 64 << 10, (90 % 8) * (64 << 10), "O_DIRECT reader") != data(90, 64 << 10):
        fail("an O_DIRECT reader reads stale bytes after the writer closed")
    os.close(d)


def mmap_orders():
    """A shared mapping of a passthrough writer, read by a joining reader;
    a shared mapping of a cached reader while a writer writes."""
    p = os.path.join(MNT, "map")
    with open(p, "wb") as f:
        f.write(b"\0" * (4 * PAGE))
    w = opn(p, os.O_RDWR)
    m = mmap.mmap(w, 4 * PAGE)
    m[PAGE:PAGE + 5] = b"hello"
    m.flush()
    r = opn(p, os.O_RDONLY)
    if pread(r, 5, PAGE, "mmap writer") != b"hello":
        fail("a reader does not see a shared mapping's writes")
    m.close()
    os.close(r)
    os.close(w)
    same("map", b"\0" * PAGE + b"hello" + b"\0" * (3 * PAGE - 5), "mmap writer")

    r = opn(p, os.O_RDONLY)
    # read_mode=direct's readers are direct_io: no shared mapping (ENODEV,
    # with or without passthrough)
    m = mmap.mmap(r, 4 * PAGE, prot=mmap.PROT_READ,
                  flags=mmap.MAP_SHARED if READ_MODE == "kernel" else mmap.MAP_PRIVATE)
    if m[PAGE:PAGE + 5] != b"hello":
        fail("a reader's mapping reads stale bytes")
    w = opn(p, os.O_WRONLY)
    os.pwrite(w, b"world", PAGE)
    os.close(w)
    if pread(r, 5, PAGE, "mapped reader") != b"world":
        fail("a mapped reader's read() is stale after a write")
    m.close()
    os.close(r)
    same("map", b"\0" * PAGE + b"world" + b"\0" * (3 * PAGE - 5), "mmap reader")


def appends():
    """O_APPEND writers in four processes keep every line."""
    p = os.path.join(MNT, "log")
    kids = []
    for k in range(4):
        pid = os.fork()
        if pid == 0:
            try:
                fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                for i in range(300):
                    os.write(fd, b"%d %03d\n" % (k, i))
                os.close(fd)
            except OSError:
                os._exit(1)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        if os.waitpid(pid, 0)[1]:
            fail("an O_APPEND writer failed to open or write")
    lines = open(p, "rb").read().split(b"\n")[:-1]
    if sorted(lines) != sorted(b"%d %03d" % (k, i) for k in range(4) for i in range(300)):
        fail("O_APPEND writers lost or mangled lines (%d of 1200)" % len(lines))


def truncates():
    """O_TRUNC opens, alone and beside a passthrough reader."""
    p = os.path.join(MNT, "trunc")
    with open(p, "wb") as f:
        f.write(data(40, 200000))
    w = opn(p, os.O_WRONLY | os.O_TRUNC)
    if os.fstat(w).st_size != 0:
        fail("an O_TRUNC open left %d bytes" % os.fstat(w).st_size)
    os.write(w, b"short")
    os.close(w)
    same("trunc", b"short", "O_TRUNC")
    r = opn(p, os.O_RDONLY)
    w = opn(p, os.O_RDWR | os.O_TRUNC)
    os.write(w, b"again")
    if pread(r, 100, 0, "O_TRUNC beside a reader") != b"again":
        fail("a reader beside an O_TRUNC writer reads the old bytes")
    os.close(w)
    os.close(r)
    same("trunc", b"again", "O_TRUNC beside a reader")


def o_direct():
    """O_DIRECT opens with unaligned buffers: alone (aheadfs's path) and
    joining a passthrough writer (direct_io beside passthrough)."""
    p = os.path.join(MNT, "direct")
    backing("direct", data(50, 100000))
    backing("direct2", data(51, 100000))
    b = stats()
    d = opn(p, os.O_RDWR | os.O_DIRECT)
    os.pwrite(d, b"odd", 12345)
    if pread(d, 3, 12345, "O_DIRECT alone") != b"odd":
        fail("O_DIRECT alone: an unaligned write does not read back")
    os.close(d)
    p = os.path.join(MNT, "direct2")
    w = opn(p, os.O_WRONLY)
    d = opn(p, os.O_RDWR | os.O_DIRECT)
    os.pwrite(w, b"pass", 20000)
    if pread(d, 4, 20000, "O_DIRECT joining") != b"pass":
        fail("O_DIRECT beside a passthrough writer: stale read")
    os.pwrite(d, b"dio", 30001)
    os.close(d)
    os.close(w)
    if KIND != "none":
        # O_DIRECT never asks; the writer does, and the second O_DIRECT
        # open joins its passthrough (with direct_io)
        expect("O_DIRECT", b, opens=pt(2), fallback_mount=FALLBACK_MOUNT, fallback_file=FALLBACK_FILE)
    want = bytearray(data(50, 100000))
    want[12345:12348] = b"odd"
    same("direct", bytes(want), "O_DIRECT alone")
    want = bytearray(data(51, 100000))
    want[20000:20004] = b"pass"
    want[30001:30004] = b"dio"
    same("direct2", bytes(want), "O_DIRECT joining")


def readers_only():
    """Plain readers: passthrough=all serves them through the backing."""
    p = os.path.join(MNT, "ro")
    backing("ro", data(60, 3 << 20))
    b = stats()
    fds = [opn(p, os.O_RDONLY) for _ in range(3)]
    for fd in fds:
        if pread(fd, 3 << 20, 0, "readers") != data(60, 3 << 20):
            fail("a reader reads wrong bytes")
    for fd in fds:
        os.close(fd)
    if KIND != "none":
        expect("readers", b, opens=pt(3, READERS))


def no_conflict_left():
    """At rest, no backing file is left registered."""
    if KIND != "none" and stats()["backing_files"] != 0:
        fail("%d backing files left registered with nothing open" % stats()["backing_files"])


for t in (created_writer, reader_then_writer, writer_then_reader,
          rewrite_after_cached_reader, held_reader_sees_writer,
          o_direct_reader_beside_writer, mmap_orders,
          appends, truncates, o_direct, readers_only, no_conflict_left):
    t()
s = stats()
print("passthrough [%s, read_mode=%s]: ok: state %s, opens %d passthrough, %d cached, "
      "%d direct; fallbacks mount %d inode %d file %d setid %d" % (
          KIND, READ_MODE, s["state"], s["opens"], s["opens_cached"], s["opens_direct"],
          s["fallback_mount"], s["fallback_inode"], s["fallback_file"], s["fallback_setid"]))
