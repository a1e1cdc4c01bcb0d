#!/usr/bin/env python3
"""cited_names.py - every function a comment or a document names exists.

A name written as `name()` in a comment of the C sources (cache/,
ra/, fs/, tests/) or in the documentation (README.md, docs/*.md, docs/*.1)
must be an identifier of the tree's code (a function, a macro, a shell
function of the tests) or one of the outside names below (libc, libfuse,
liburcu, the kernel).  A path written as cache/..., ra/...,
fs/..., tests/..., docs/... must exist.  A function that is renamed or removed fails this test until
every comment and document that cites it is fixed.

usage: cited_names.py SOURCE_DIR
       cited_names.py --self-test   (a stale name, struct and path in a
                                     scratch tree are each reported)
"""
import os
import re
import sys
import tempfile

# Names outside the tree that comments and documents cite but the code does
# not call: system calls, libc, libfuse, liburcu and the kernel's own
# functions (cited as the model a rule comes from).
OUTSIDE = set("""
    longjmp rand setgroups syncfs utimes io_uring_enter
    fuse_buf_copy
    cds_list_for_each_entry rcu_dereference
    filemap_get_pages fuse_dev_do_read fuse_request_end lockdep_assert_held
    fuse_read_update_size generic_file_read_iter
    radix_tree_prev_hole membarrier filemap_add_folio page_cache_ra_unbounded
""".split())

C_DIRS = ("cache", "ra", "fs", "tests")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# name() -- or _tail() after one in the same file, short for that name
# with its tail replaced: "fanotify_init()/_mark()", "afs_itable_get()/
# _insert()".
CITED = re.compile(r"(?<![\w.>-])([A-Za-z_][A-Za-z0-9_]*)\(\)")
PATH = re.compile(r"(?<![\w./-])((?:cache|ra|fs|tests|docs)/[A-Za-z0-9_./-]*"
                  r"(?:\{[a-z,]+\}|[A-Za-z0-9_]))")
# struct afs_..., struct cache_..., struct ra_...: the project's own types.
STRUCT = re.compile(r"\bstruct\s+((?:afs|cache|ra)_[A-Za-z0-9_]+)")
SH_FUNC = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{",
                     re.M)


def split_c(text):
    """(code, comments) of a C file: strings and characters go with neither."""
    code, comments = [], []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            comments.append((text.count("\n", 0, i) + 1, text[i:j]))
            code.append(" ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((text.count("\n", 0, i) + 1, text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            code.append(" ")
            i = j + 1
        else:
            code.append(c)
            i += 1
    return "".join(code), comments


def tracked(root):
    """README.md, docs/*.{md,1} and every file under the C directories."""
    for f in os.listdir(root):
        if f == "README.md":
            yield f
    for f in sorted(os.listdir(os.path.join(root, "docs"))):
        yield os.path.join("docs", f)
    for top in C_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                yield os.path.relpath(os.path.join(dirpath, f), root)


def expand_tail(prev, tail):
    """"_inval_entry" after "fuse_lowlevel_notify_inval_inode": the name
    from the last place prev has tail's first word, else prev with its
    last word replaced."""
    first = "_" + tail[1:].split("_")[0]
    cut = prev.rfind(first)
    if cut <= 0:
        cut = prev.rfind("_")
    return prev[:cut] + tail if cut > 0 else tail


def expand_braces(path):
    """"fs/fuse/opts.{c,h}" -> ["fs/fuse/opts.c", "fs/fuse/opts.h"]."""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [path[:m.start()] + alt + path[m.end():]
            for alt in m.group(1).split(",")]


class Citations:
    def __init__(self):
        self.names = []  # (file, line, name)
        self.structs = []
        self.paths = []
        self.prev = ("", "")

    def scan(self, rel, line, text):
        for m in CITED.finditer(text):
            name = m.group(1)
            if name.startswith("_") and self.prev[0] == rel:
                name = expand_tail(self.prev[1], name)
            self.prev = (rel, name)
            self.names.append((rel, line, name))
        for m in STRUCT.finditer(text):
            self.structs.append((rel, line, m.group(1)))
        for m in PATH.finditer(text):
            for p in expand_braces(m.group(1).rstrip(".")):
                self.paths.append((rel, line, p))


def check(root):
    known, structs = set(), set()
    cited = Citations()
    for rel in tracked(root):
        top = rel.split(os.sep)[0]
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # a picture, a binary
        if rel.endswith((".c", ".h")) and top in C_DIRS:
            code, comments = split_c(text)
            known.update(IDENT.findall(code))
            structs.update(STRUCT.findall(code))
            for line, body in comments:
                for k, part in enumerate(body.split("\n")):
                    cited.scan(rel, line + k, part)
        elif rel.endswith((".sh", ".py")) and top == "tests":
            known.update(SH_FUNC.findall(text))
            known.update(re.findall(r"^def ([A-Za-z_]\w*)", text, re.M))
        elif top == "docs" and rel.endswith((".md", ".1")) or \
                rel == "README.md":
            text = re.sub(r"\\f[BIRP]", "", text)  # man page fonts
            for k, part in enumerate(text.split("\n")):
                cited.scan(rel, k + 1, part)
    bad = 0
    for rel, line, name in cited.names:
        if name not in known and name not in OUTSIDE:
            print(f"{rel}:{line}: {name}() is not defined in the tree")
            bad += 1
    for rel, line, name in cited.structs:
        if name not in structs:
            print(f"{rel}:{line}: struct {name} is not defined in the tree")
            bad += 1
    for rel, line, p in cited.paths:
        if not os.path.exists(os.path.join(root, p)):
            print(f"{rel}:{line}: {p} does not exist")
            bad += 1
    print(f"{len(cited.names)} cited functions, {len(cited.structs)} structs "
          f"and {len(cited.paths)} paths checked")
    return bad


def self_test():
    """The checker itself fails on what it is for: a scratch tree citing
    a function, a struct and a file that do not exist, next to ones that
    do, must give exactly those three complaints."""
    files = {
        "README.md": "Call `cache_real()`, not `cache_gone()`; see "
                     "cache/real.c, not cache/gone.c.\n",
        "docs/x.md": "`struct cache_real_s` is real.\n",
        "cache/real.c": "/* cache_real() and fanotify_init()/_mark() are "
                        "fine; struct cache_gone_s is not. */\n"
                        "struct cache_real_s { int x; };\n"
                        "int cache_real(void) { return 0; }\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)),
                        exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        OUTSIDE.update(("fanotify_init", "fanotify_mark"))
        bad = check(root)
    if bad != 3:
        print(f"self-test: {bad} complaints, expected 3")
        return 1
    print("self-test: the three stale citations were found")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bad = check(sys.argv[1])
    if bad:
        print(f"{bad} stale citation(s): fix the comment or document (or "
              "name an outside function in OUTSIDE, "
              "tests/style/cited_names.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
