#!/usr/bin/env python3
"""Prints the expected.json of a JavaScript discovery fixture from a pnpm workspace's own
`pnpm-lock.yaml` (needs PyYAML).

Usage: pnpm-lock-edges.py WORKSPACE_ROOT > expected.json

Every importer of the lock but `.` is a workspace member (the lock's own list of what the
workspace holds); it is named as `once` names a package: its package.json `name` (or, without
one, its folder) with a leading `@` dropped, `/` made `-`, and `-2`, `-3`… on a later folder
whose name is taken. An edge is a `dependencies` (normal), `devDependencies` (dev) or
`optionalDependencies` (optional) entry whose locked version is `link:PATH` (relative to the
importer) or `file:PATH` (relative to the root, perhaps after `NAME@` and before a `(…)` of
peers) naming another member; a pair listed in more than one table counts once, at its
strongest kind (normal over dev over optional).

Checked against vite's full checkout at the commit in javascript-vite/SOURCE: 278 importers,
173 edges, and among the importers that fixture keeps, exactly its expected.json's 44 edges.
"""
import json
import os
import pathlib
import re
import sys

import yaml

root = pathlib.Path(sys.argv[1])
lock = yaml.safe_load((root / "pnpm-lock.yaml").read_text())
folders = sorted(f for f in lock["importers"] if f != ".")


def target_name(raw):
    out = re.sub(r"[^A-Za-z0-9._-]", "_", raw.removeprefix("@").replace("/", "-"))
    return out if out[:1].isalnum() else "x" + out


names, packages, taken = {}, {}, set()
for folder in folders:
    manifest = json.loads((root / folder / "package.json").read_text("utf-8-sig"))
    packages[folder] = manifest.get("name")
    base = target_name(manifest.get("name") or folder)
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    names[folder] = name

RANK = {"normal": 0, "dev": 1, "optional": 2}
TABLES = [("dependencies", "normal"), ("devDependencies", "dev"),
          ("optionalDependencies", "optional")]
edges = {}
for folder in folders:
    importer = lock["importers"][folder] or {}
    for table, kind in TABLES:
        for entry in (importer.get(table) or {}).values():
            version = str(entry.get("version", ""))
            # `file:` may follow an alias (`NAME@file:PATH`) and carry its peers' suffix
            # (`file:PATH(typescript@6.0.3)`), as vite's playgrounds show.
            local = re.fullmatch(r"(?:link:(?P<link>.+)|(?:\S+@)?file:(?P<file>[^(]+)(?:\(.*)?)",
                                 version)
            if local is None:
                continue
            if local["link"] is not None:
                to = os.path.normpath(os.path.join(folder, local["link"]))
            else:
                to = os.path.normpath(local["file"])
            if to in names and to != folder:
                pair = (names[folder], names[to])
                if pair not in edges or RANK[kind] < RANK[edges[pair]]:
                    edges[pair] = kind
how = ("targets: the importers of the repository's pnpm-lock.yaml (except `.`), named from "
       "their package.json; edges: each importer's dependencies, devDependencies and "
       "optionalDependencies whose locked version is `link:<path>` (relative to the importer) "
       "or `file:<path>` (relative to the root) naming another importer, one edge per pair of "
       "the strongest kind (normal over dev over optional)")
targets = [{"name": names[f], "path": f, "package": packages[f]} for f in folders]
targets.sort(key=lambda t: t["name"])
out = {"how": how, "targets": targets,
       "edges": [[a, b, k] for (a, b), k in sorted(edges.items())]}
print(json.dumps(out, indent=2))
