#!/usr/bin/env python3
"""drop_locks.py - every test that drops the kernel's caches holds the lock.

A test that writes /proc/sys/vm/drop_caches empties the page cache of the
whole machine under every test that runs beside it (ctest -j): a test that
counts what the backing's page cache holds (passthrough=resident, cachestat,
the read path's stats) then fails by chance.  Those tests and every dropper
hold ctest's RESOURCE_LOCK drop_caches, so the two never overlap.  A dropper
is a test whose script, or a script it sources other than lib.sh (which
only defines the helpers), calls afs_drop_caches or afs_wait_fds_back or
names vm/drop_caches in code (not in a comment).  This check reads the
tests' commands and properties from ctest and fails on a dropper without
the lock.  It reads the integration tests' scripts (tests/integration/):
the benchmark's run.sh drops caches in some modes only, and its tests
(tests/bench/CMakeLists.txt) say which need the lock.

usage: drop_locks.py BUILD_DIR
       drop_locks.py --self-test   (a dropper without the lock in a
                                    made-up test list is reported)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

DROPPER = re.compile(r"\b(?:afs_drop_caches|afs_wait_fds_back)\b|vm/drop_caches")
SOURCED = re.compile(r'^\s*(?:\.|source)\s+"?\$\(dirname "\$0"\)/([A-Za-z0-9_.-]+)"?',
                     re.M)


def code_lines(text):
    """The script's lines with comments cut (a '#' at a word's start)."""
    for line in text.splitlines():
        yield re.sub(r"(^|\s)#.*", "", line)


def drops(script, seen=None):
    """True when the script, or a file it sources but lib.sh, drops caches."""
    seen = set() if seen is None else seen
    if script in seen or not os.path.isfile(script):
        return False
    seen.add(script)
    with open(script, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if any(DROPPER.search(line) for line in code_lines(text)):
        return True
    here = os.path.dirname(script)
    return any(drops(os.path.join(here, name), seen)
               for name in SOURCED.findall(text) if name != "lib.sh")


def locks(test):
    for p in test.get("properties", []):
        if p.get("name") == "RESOURCE_LOCK":
            v = p.get("value")
            return set(v if isinstance(v, list) else [v])
    return set()


def check(tests):
    """The names of the droppers without the lock; the number of droppers."""
    bad, n = [], 0
    for t in tests:
        scripts = [a for a in t.get("command", []) if a.endswith(".sh")
                   and os.path.basename(os.path.dirname(a)) == "integration"]
        if not any(drops(s) for s in scripts):
            continue
        n += 1
        if "drop_caches" not in locks(t):
            bad.append(t["name"])
    return bad, n


def self_test():
    with tempfile.TemporaryDirectory() as top:
        d = os.path.join(top, "integration")
        os.mkdir(d)
        for name, body in (("lib.sh", "afs_drop_caches() { :; }\n"),
                           ("x_lib.sh", "x() { afs_wait_fds_back 1 2; }\n"),
                           ("a.sh", '. "$(dirname "$0")/x_lib.sh"\n'),
                           ("b.sh", "# afs_drop_caches in a comment\n"
                                    '. "$(dirname "$0")/lib.sh"\n'),
                           ("c.sh", "echo 3 >/proc/sys/vm/drop_caches\n")):
            with open(os.path.join(d, name), "w") as f:
                f.write(body)
        lock = [{"name": "RESOURCE_LOCK", "value": ["drop_caches"]}]
        tests = [{"name": "a", "command": ["bash", f"{d}/a.sh"]},
                 {"name": "b", "command": ["bash", f"{d}/b.sh"]},
                 {"name": "c", "command": ["bash", f"{d}/c.sh"],
                  "properties": lock}]
        bad, n = check(tests)
    if bad != ["a"] or n != 2:
        print(f"self-test: reported {bad} of {n} droppers, expected ['a'] of 2")
        return 1
    print("self-test: the dropper without the lock was found")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=sys.argv[1],
                         check=True, capture_output=True, text=True).stdout
    bad, n = check(json.loads(out)["tests"])
    for name in bad:
        print(f"{name}: drops the kernel's caches without RESOURCE_LOCK drop_caches")
    if n == 0:
        print("no test drops the kernel's caches: the check finds nothing to check")
        return 1
    print(f"{n} tests drop the kernel's caches, {n - len(bad)} under the lock")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
