#!/usr/bin/env python3
"""Prints the expected.json of a JavaScript discovery fixture from a yarn 2+ workspace's own
`yarn.lock` (needs PyYAML: the lockfile of yarn 2 and later is YAML).

Usage: yarn-lock-edges.py WORKSPACE_ROOT > expected.json

Every lock entry whose `resolution` is `NAME@workspace:PATH` is a workspace member (the lock's
own list of what the workspace holds), except the root (`PATH` is `.`); it is named as `once`
names a package: its package.json `name` (or, without one, its folder) with a leading `@`
dropped, `/` made `-`, and `-2`, `-3`… on a later folder whose name is taken. An edge is a
`dependencies` entry of a member's lock entry (yarn lists dev dependencies there too) whose
descriptor `D@RANGE` is a key of a lock entry resolved to another member; its kind is the
strongest table of the member's package.json naming D (normal over dev over optional), since
the lock does not keep dev apart.

Checked against jest's full checkout at the commit in javascript-jest/SOURCE: it prints that
fixture's expected.json targets and edges exactly (only `how` is worded anew).
"""
import json
import pathlib
import re
import sys

import yaml

root = pathlib.Path(sys.argv[1])
lock = yaml.safe_load((root / "yarn.lock").read_text())
folder_of = {}  # descriptor -> workspace folder it resolves to
entries = {}  # workspace folder -> its lock entry
for key, entry in lock.items():
    if key == "__metadata":
        continue
    _, sep, folder = entry.get("resolution", "").rpartition("@workspace:")
    if not sep:
        continue
    for descriptor in key.split(", "):
        folder_of[descriptor] = folder
    entries[folder] = entry
folders = sorted(f for f in entries if f != ".")


def target_name(raw):
    out = re.sub(r"[^A-Za-z0-9._-]", "_", raw.removeprefix("@").replace("/", "-"))
    return out if out[:1].isalnum() else "x" + out


names, manifests, taken = {}, {}, set()
for folder in folders:
    manifests[folder] = json.loads((root / folder / "package.json").read_text("utf-8-sig"))
    base = target_name(manifests[folder].get("name") or folder)
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    names[folder] = name

TABLES = [("dependencies", "normal"), ("devDependencies", "dev"),
          ("optionalDependencies", "optional")]
edges = {}
for folder in folders:
    for dep, range_ in (entries[folder].get("dependencies") or {}).items():
        to = folder_of.get(f"{dep}@{range_}")
        if to not in names or to == folder:
            continue
        kind = next((k for table, k in TABLES if dep in (manifests[folder].get(table) or {})),
                    "normal")
        edges[(names[folder], names[to])] = kind
how = ("targets: the workspaces with a `@workspace:` resolution in the repository's yarn.lock "
       "(yarn 2+, except the root), named from their package.json; edges: each workspace "
       "entry's `dependencies` descriptors (`D@range`) whose yarn.lock entry has a "
       "`@workspace:` resolution of another workspace; the kind is the strongest table of the "
       "workspace's package.json naming D (yarn.lock does not keep dev apart)")
targets = [{"name": names[f], "path": f, "package": manifests[f].get("name")} for f in folders]
targets.sort(key=lambda t: t["name"])
out = {"how": how, "targets": targets,
       "edges": [[a, b, k] for (a, b), k in sorted(edges.items())]}
print(json.dumps(out, indent=2))
