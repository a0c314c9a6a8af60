#!/usr/bin/env python3
"""Prints the expected.json of a Python discovery fixture from a uv workspace's own `uv.lock`.

Usage: uv-lock-edges.py WORKSPACE_ROOT > expected.json

Every `[[package]]` whose source is `editable` or `virtual` is a workspace member (the lock's
own list of what the workspace holds); an edge is a `dependencies` (normal),
`optional-dependencies` (optional) or `dev-dependencies` (dev) entry naming another member.
A member's target name is its `[project] name` as written in its `pyproject.toml`.
"""
import json
import pathlib
import sys
import tomllib

root = pathlib.Path(sys.argv[1])
lock = tomllib.loads((root / "uv.lock").read_text())
members = {}
for p in lock["package"]:
    src = p.get("source", {})
    folder = src.get("editable", src.get("virtual"))
    if folder is not None:
        members[p["name"]] = (folder, p)
targets = []
for name, (folder, p) in members.items():
    project = tomllib.loads((root / folder / "pyproject.toml").read_text())["project"]
    edges = set()
    groups = [("normal", [p.get("dependencies", [])])]
    groups.append(("optional", p.get("optional-dependencies", {}).values()))
    groups.append(("dev", p.get("dev-dependencies", {}).values()))
    for kind, lists in groups:
        for deps in lists:
            for d in deps:
                if d["name"] in members and d["name"] != name:
                    edges.add((d["name"], kind))
    targets.append({"name": project["name"], "path": folder, "edges": sorted(edges)})
names = {n: tomllib.loads((root / f / "pyproject.toml").read_text())["project"]["name"]
         for n, (f, _) in members.items()}
for t in targets:
    t["edges"] = [{"to": names[to], "kind": kind} for to, kind in t["edges"]]
targets.sort(key=lambda t: t["name"])
# One target per line: a mismatch shows as a one-line diff.
lines = [json.dumps(t) for t in targets]
print('{"targets": [\n' + ",\n".join(lines) + "\n]}")
