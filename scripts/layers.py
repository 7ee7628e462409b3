#!/usr/bin/env python3
"""layers.py - reads every #include of the library and the CLI and prints
each one that climbs the documented order of folders (docs/ARCHITECTURE.md,
"Folders and their direction"). Exit status 1 when any include climbs, is
between two siblings, or reaches from tools/ into src/.

A folder of src/ may include its own headers, include/ and the folders of
lower rank. Folders of one rank are siblings that never include each other
(the snapshot-file writers and readers, for instance)."""
import os
import re
import sys

# Lowest first. One rank per line; folders on one line are siblings.
ORDER = [
    ["base"],
    ["elf"],
    ["dwarf"],
    ["table"],
    ["symbolize"],
    ["mem"],
    ["addrspace"],
    ["unwind"],
    ["runtime"],
    ["snapfile"],
    ["ktable"],
    ["bpf"],
    ["capture"],
    ["save", "saved", "perfdata", "ctf"],
    ["profile"],
    ["trace"],
    ["inproc", "walker"],
    ["waits"],
]
RANK = {f: i for i, line in enumerate(ORDER) for f in line}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """src/FOLDER/... -> FOLDER; tools/... -> 'tools'; else None."""
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] == "tools":
        return "tools"
    return None


def resolve(src, inc, root):
    """The tree path an include names: beside the file, else under src/
    or include/ (the build's -I order: -Iinclude -Isrc)."""
    for cand in (os.path.join(os.path.dirname(src), inc),
                 os.path.join("include", inc), os.path.join("src", inc)):
        if os.path.exists(os.path.join(root, cand)):
            return os.path.normpath(cand)
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = []
    unknown = set()
    for top in ("src", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(d, f), root)
                me = folder_of(path)
                text = open(os.path.join(root, path), errors="replace").read()
                for m in INCLUDE.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    target = resolve(path, m.group(1), root)
                    if target is None or not target.startswith("src/"):
                        continue  # include/, generated or system headers
                    them = folder_of(target)
                    where = f"{path}:{line}: includes {target}"
                    if me == "tools":
                        bad.append(f"{where} (tools/ sees only include/)")
                        continue
                    if me == them:
                        continue
                    for x in (me, them):
                        if x not in RANK:
                            unknown.add(x)
                    if me not in RANK or them not in RANK:
                        continue
                    if RANK[them] > RANK[me]:
                        bad.append(f"{where} ({me} is below {them})")
                    elif RANK[them] == RANK[me]:
                        bad.append(f"{where} ({me} and {them} are siblings)")
    for u in sorted(unknown):
        bad.append(f"src/{u}/: folder not in the order (scripts/layers.py)")
    for b in bad:
        print(b)
    print(f"layers: {len(bad)} include(s) against the order" if bad
          else "layers: every include follows the order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
