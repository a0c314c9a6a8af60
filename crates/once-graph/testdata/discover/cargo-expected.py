#!/usr/bin/env python3
"""Writes `expected.json` for a Cargo fixture from Cargo's own answer.

Run from the fixture folder: `python3 ../cargo-expected.py > expected.json`. It runs
`cargo metadata --no-deps --format-version 1 --offline` and lists every workspace member
(name, folder relative to the root) with its edges to other members: each dependency whose
`path` is a member's folder, and each registry dependency that the root `Cargo.toml`'s
`[patch.REGISTRY]` table redirects to a member's folder (`--no-deps` names the dependency and
its registry but does not apply patches). Kinds: `normal`, `dev`, `build`.
"""
import json, os, subprocess, sys, tomllib

meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
    check=True, capture_output=True, text=True).stdout)
root = os.path.realpath(meta["workspace_root"])
members = set(meta["workspace_members"])
folder_name = {}
for p in meta["packages"]:
    if p["id"] in members:
        folder_name[os.path.realpath(os.path.dirname(p["manifest_path"]))] = p["name"]
with open(os.path.join(root, "Cargo.toml"), "rb") as f:
    patch = tomllib.load(f).get("patch", {})
patched = {}
for registry, entries in patch.items():
    for key, value in entries.items():
        if isinstance(value, dict) and "path" in value:
            name = value.get("package", key)
            patched[(registry, name)] = os.path.realpath(os.path.join(root, value["path"]))
targets = []
for p in meta["packages"]:
    if p["id"] not in members:
        continue
    folder = os.path.relpath(os.path.realpath(os.path.dirname(p["manifest_path"])), root)
    edges = set()
    for d in p["dependencies"]:
        if d.get("path"):
            to = os.path.realpath(d["path"])
        elif (d.get("source") or "").startswith("registry+"):
            to = patched.get((d.get("registry") or "crates-io", d["name"]))
        else:
            to = None
        if to in folder_name and folder_name[to] != p["name"]:
            edges.add((folder_name[to], d["kind"] or "normal"))
    targets.append({
        "name": p["name"],
        "path": folder,
        "edges": [{"to": t, "kind": k} for t, k in sorted(edges)],
    })
targets.sort(key=lambda t: t["name"])
json.dump({"targets": targets}, sys.stdout, indent=1)
sys.stdout.write("\n")
