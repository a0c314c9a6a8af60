#!/usr/bin/env python3
"""Prints the expected.json of a Go discovery fixture from the `go.mod` files of a repository.

Usage: go-mod-edges.py REPOSITORY_ROOT > expected.json

Go itself is not available to compute `go mod graph`, so this reads what `go mod graph` would
print for each module's own requirements: every go.mod in the tree (outside `testdata`,
`vendor` and hidden folders) is a module; an edge goes from a module to the workspace module
each `require` resolves to: the folder of a local `replace` of that path when it has one (a
remote replace leaves the workspace), else the module with that path. `go.work` is not read
(the fixtures this serves have none).
"""
import json
import os
import re
import sys

root = sys.argv[1]
modules = {}  # folder -> (module path, requires, replaces)
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("testdata", "vendor"))
    if "go.mod" not in filenames:
        continue
    folder = os.path.relpath(dirpath, root).replace(os.sep, "/")
    text = re.sub(r"//.*", "", open(os.path.join(dirpath, "go.mod")).read())
    path = re.search(r"^module\s+(\S+)", text, re.M).group(1).strip('"')
    requires, replaces = [], {}
    for block in re.finditer(r"^(require|replace)\s*\((.*?)^\)", text, re.M | re.S):
        for line in block.group(2).splitlines():
            if line.strip():
                (requires.append(line.split()[0]) if block.group(1) == "require"
                 else replaces.__setitem__(line.split()[0], line.split("=>")[1].split()[0]))
    for m in re.finditer(r"^require\s+([^\s(]+)", text, re.M):
        requires.append(m.group(1))
    for m in re.finditer(r"^replace\s+([^\s(]+).*?=>\s*(\S+)", text, re.M):
        replaces[m.group(1)] = m.group(2)
    modules[folder] = (path, requires, replaces)

by_path = {p: f for f, (p, _, _) in modules.items()}
targets = []
for folder, (path, requires, replaces) in sorted(modules.items()):
    edges = set()
    for req in requires:
        to = replaces.get(req)
        if to is None:
            dep = by_path.get(req)
        elif to.startswith(("./", "../")) or to in (".", ".."):
            dep = os.path.normpath(os.path.join(folder, to)).replace(os.sep, "/")
        else:
            dep = None
        if dep in modules and dep != folder:
            edges.add(modules[dep][0])
    targets.append({"module": path, "path": folder,
                    "edges": [{"to": e, "kind": "normal"} for e in sorted(edges)]})
# Edges name modules by path here: target names are the Go discovery's own choice.
lines = [json.dumps(t) for t in targets]
print('{"targets": [\n' + ",\n".join(lines) + "\n]}")
