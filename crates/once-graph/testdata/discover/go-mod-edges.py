#!/usr/bin/env python3
"""Prints the expected.json of a Go discovery fixture from Go's own reading of a repository.

Usage: GO=path/to/go go-mod-edges.py REPOSITORY_ROOT > expected.json

`go` parses every manifest (`go mod edit -json` for each `go.mod`, `go work edit -json` for a
root `go.work`), offline: it never resolves a version, so no network and no module cache are
needed (scripts/install-test-deps installs a Go into target/interop/go). The modules are the
`use`s of `go.work`, else every `go.mod` in the tree (outside `testdata`, `vendor`, and folders
starting with `.` or `_`, which `go` ignores). An edge goes from a module to the workspace module
Go builds a `require` from: the folder a local `replace` names (`go.work`'s replaces first), else,
only with a `go.work`, the `use`d module of that path. Without `go.work` a `require` without a
local `replace` is fetched from the module proxy, so it is no edge.
"""
import json
import os
import subprocess
import sys

root = os.path.abspath(sys.argv[1])
go = os.environ.get("GO", "go")
env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", GOPROXY="off", GOWORK="off")


def go_json(args, cwd):
    out = subprocess.run([go, *args, "-json"], cwd=cwd, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def local(path):
    return path.startswith(("./", "../")) or path in (".", "..")


def replaces_of(parsed, folder):
    out = {}
    for r in parsed.get("Replace") or []:
        to = r["New"]["Path"]
        out[r["Old"]["Path"]] = (os.path.normpath(os.path.join(folder, to)).replace(os.sep, "/")
                                 if local(to) else None)
    return out


work = None
if os.path.exists(os.path.join(root, "go.work")):
    work = go_json(["work", "edit"], root)
    folders = sorted({os.path.normpath(u["DiskPath"]).replace(os.sep, "/") for u in work.get("Use") or []})
else:
    folders = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith((".", "_")) and d not in ("testdata", "vendor"))
        if "go.mod" in filenames:
            folders.append(os.path.relpath(dirpath, root).replace(os.sep, "/"))

modules = {}  # folder -> (module path, requires, replaces)
for folder in folders:
    if not os.path.exists(os.path.join(root, folder, "go.mod")):
        continue
    parsed = go_json(["mod", "edit"], os.path.join(root, folder))
    requires = [r["Path"] for r in parsed.get("Require") or []]
    modules[folder] = (parsed["Module"]["Path"], requires, replaces_of(parsed, folder))

work_replaces = replaces_of(work, ".") if work else {}
by_path = {p: f for f, (p, _, _) in sorted(modules.items(), reverse=True)}
targets = []
for folder, (path, requires, replaces) in sorted(modules.items()):
    edges = set()
    for req in requires:
        if req in work_replaces:
            dep = work_replaces[req]
        elif req in replaces:
            dep = replaces[req]
        else:
            dep = by_path.get(req) if work else None
        if dep in modules and dep != folder:
            edges.add(modules[dep][0])
    targets.append({"module": path, "path": folder,
                    "edges": [{"to": e, "kind": "normal"} for e in sorted(edges)]})
# Edges name modules by path here: target names are the Go discovery's own choice.
lines = [json.dumps(t) for t in targets]
print('{"targets": [\n' + ",\n".join(lines) + "\n]}")
