#!/usr/bin/env python3
"""Write a synthetic `once` workspace with N targets and a realistic random dependency DAG.

The shape imitates a monorepo: a few foundation libraries that many targets use, a long tail of
leaf packages, and services near the top. Target i may depend only on targets with a smaller
index, so the graph is acyclic by construction. The output is deterministic for a given seed.

    bench/gen_workspace.py OUT_DIR --targets 10000 [--seed 7] [--files 0] [--commands-only]

With --files K every target also gets K small source files, for benchmarks that hash inputs.
With --commands-only every target is a `command` target whose capabilities are cheap shell
commands (the same dependency graph), so a benchmark can run them without any toolchain.
"""

import argparse
import os
import random
import sys

KINDS = [
    ("cargo-package", 0.35),
    ("npm-package", 0.25),
    ("command", 0.2),
    ("python-project", 0.1),
    ("go-module", 0.1),
]
TAGS = ["backend", "frontend", "shared", "tooling", "data", "infra"]


def pick_kind(rng):
    roll = rng.random()
    for kind, weight in KINDS:
        if roll < weight:
            return kind
        roll -= weight
    return KINDS[-1][0]


def pick_deps(rng, index):
    """Up to 5 earlier targets: half from the foundation (low indexes), half from nearby."""
    if index == 0:
        return []
    count = min(index, rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5]))
    deps = set()
    while len(deps) < count:
        if rng.random() < 0.5:
            # Foundation libraries: a power law over the first indexes.
            dep = int(index * rng.random() ** 3)
        else:
            dep = rng.randrange(max(0, index - 50), index)
        deps.add(dep)
    return sorted(deps)


def name(index):
    return f"pkg-{index:05d}"


def write_target(out, rng, index, commands_only=False):
    kind = pick_kind(rng)
    if commands_only:
        kind = "command"
    deps = pick_deps(rng, index)
    tags = rng.sample(TAGS, rng.choice([0, 1, 1, 2]))
    lines = [f"[targets.{name(index)}]", f'kind = "{kind}"', f'path = "packages/{name(index)}"']
    if tags:
        lines.append("tags = [" + ", ".join(f'"{t}"' for t in tags) + "]")
    if deps:
        lines.append("deps = [" + ", ".join(f'"{name(d)}"' for d in deps) + "]")
    if kind == "command":
        lines += [
            "",
            f"[targets.{name(index)}.capabilities.build]",
            'command = "mkdir -p out && cat src/* > out/bundle.txt"',
            'inputs = ["src/**"]',
            'outputs = ["out/bundle.txt"]',
            "",
            f"[targets.{name(index)}.capabilities.test]",
            'command = "test -s out/bundle.txt"',
            'deps = [":build"]',
        ]
    out.write("\n".join(lines) + "\n\n")


def write_sources(root, index, files):
    folder = os.path.join(root, "packages", name(index), "src")
    os.makedirs(folder, exist_ok=True)
    for k in range(files):
        with open(os.path.join(folder, f"file{k}.txt"), "w") as f:
            f.write(f"{name(index)} file {k}\n" * 20)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write the workspace into (created if missing)")
    parser.add_argument("--targets", type=int, default=1000, help="how many targets (default 1000)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--files", type=int, default=0, help="source files per target (default 0)")
    parser.add_argument(
        "--commands-only",
        action="store_true",
        help="make every target a `command` target with cheap shell commands",
    )
    args = parser.parse_args()
    if args.targets < 1:
        sys.exit("error: --targets must be at least 1")

    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "once.toml"), "w") as out:
        out.write(f'[workspace]\nname = "generated-{args.targets}"\n\n')
        for index in range(args.targets):
            write_target(out, rng, index, args.commands_only)
    if args.files:
        for index in range(args.targets):
            write_sources(args.out, index, args.files)


if __name__ == "__main__":
    main()
