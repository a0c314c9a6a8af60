#!/usr/bin/env python3
"""Write a synthetic `once` workspace with N targets and a realistic random dependency DAG.

The shape imitates a monorepo: a few foundation libraries that many targets use, a long tail of
leaf packages, and services near the top. Target i may depend only on targets with a smaller
index, so the graph is acyclic by construction. The output is deterministic for a given seed.

    bench/gen_workspace.py OUT_DIR --targets 10000 [--seed 7] [--files 0] [--commands-only] [--peers]

With --files K every target also gets K small source files, for benchmarks that hash inputs.
With --commands-only every target is a `command` target whose capabilities are cheap shell
commands (the same dependency graph), so a benchmark can run them without any toolchain.
With --work MIB each `build` of --commands-only first spends CPU (SHA-256 of MIB MiB of zeros; 12
is about 30 ms), like a small compile, so a benchmark can weigh a remote hit against real work.
With --peers the workspace is also a turbo, moon and Nx workspace with the same packages, the
same dependency graph and the same `build` and `test` tasks (see `write_peers`), for
bench/compare.py; it implies --commands-only and at least 3 source files per package.
"""

import argparse
import json
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


def build_command(work_mib):
    """The `build` command of --commands-only: `cat` of the sources, and with --work, CPU spent
    first (SHA-256 of that many MiB of zeros: 12 MiB is about 30 ms of CPU on a 2026 x86 core)."""
    bundle = "mkdir -p out && cat src/* > out/bundle.txt"
    if not work_mib:
        return bundle
    return f"head -c {work_mib * 1024 * 1024} /dev/zero | sha256sum > /dev/null && {bundle}"


def write_target(out, rng, index, commands_only=False, peers=False, work_mib=0):
    """Write one target and return its dependencies' indexes."""
    kind = pick_kind(rng)
    if commands_only:
        kind = "command"
    deps = pick_deps(rng, index)
    tags = rng.sample(TAGS, rng.choice([0, 1, 1, 2]))
    if peers:
        write_peer_target(out, index, deps)
        return deps
    lines = [f"[targets.{name(index)}]", f'kind = "{kind}"', f'path = "packages/{name(index)}"']
    if tags:
        lines.append("tags = [" + ", ".join(f'"{t}"' for t in tags) + "]")
    if deps:
        lines.append("deps = [" + ", ".join(f'"{name(d)}"' for d in deps) + "]")
    if kind == "command":
        lines += [
            "",
            f"[targets.{name(index)}.capabilities.build]",
            f"command = {json.dumps(build_command(work_mib))}",
            'inputs = ["src/**"]',
            'outputs = ["out/bundle.txt"]',
            "",
            f"[targets.{name(index)}.capabilities.test]",
            'command = "test -s out/bundle.txt"',
            'deps = [":build"]',
        ]
    out.write("\n".join(lines) + "\n\n")
    return deps


# The two tasks every tool runs, character for character: `build` reads the package's sources and
# writes one output file, `test` reads that output. Each runs with `sh -c` in the package's folder.
PEER_BUILD = "mkdir -p out && cat src/*.txt > out/build.txt"
PEER_TEST = "mkdir -p out && wc -c out/build.txt > out/test.txt"


def write_peer_target(out, index, deps):
    """The --peers form of a target: `command` kind, PEER_BUILD and PEER_TEST, same deps."""
    lines = [f"[targets.{name(index)}]", 'kind = "command"', f'path = "packages/{name(index)}"']
    if deps:
        lines.append("deps = [" + ", ".join(f'"{name(d)}"' for d in deps) + "]")
    lines += [
        "",
        f"[targets.{name(index)}.capabilities.build]",
        f"command = {json.dumps(PEER_BUILD)}",
        'inputs = ["src/**"]',
        'outputs = ["out/build.txt"]',
        "",
        f"[targets.{name(index)}.capabilities.test]",
        f"command = {json.dumps(PEER_TEST)}",
        'inputs = ["out/build.txt"]',
        'outputs = ["out/test.txt"]',
        'deps = [":build"]',
    ]
    out.write("\n".join(lines) + "\n\n")


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def write_peers(root, count, all_deps):
    """The same workspace for turbo, moon and Nx: one config per tool, nothing shared but sources.

    - turbo: npm workspaces (`package.json` per package, deps as `dependencies`), `turbo.json`;
      turbo starts `npm run <script>`, so the script is the command (bench/compare.py puts an
      `npm` on turbo's PATH that runs it with `sh`, as once does, without starting Node.js).
    - moon: `.moon/workspace.yml` (projects `packages/*`, no toolchain, `hasher.walkStrategy:
      glob`) and a `moon.yml` per project with `dependsOn` and the tasks as `script`s run by
      `sh` (`options.unixShell`; moon's default is bash).
    - Nx: `nx.json` (no cloud; the daemon is left to `NX_DAEMON`) and a `project.json` per
      project with `nx:run-commands` targets and `implicitDependencies`, which Nx starts as
      `/bin/sh -c`; the package.json scripts are hidden from Nx, so it runs the command itself
      rather than through npm.
    Every tool declares the same inputs (`src/**`) and outputs (`out/build.txt`), and `build`
    depends on the dependencies' `build`, so each one can cache and replay.
    """
    write_json(
        os.path.join(root, "package.json"),
        {
            "name": f"bench-{count}",
            "private": True,
            "packageManager": "npm@11.6.2",
            "workspaces": ["packages/*"],
        },
    )
    write_json(
        os.path.join(root, "turbo.json"),
        {
            "$schema": "https://turborepo.com/schema.json",
            "ui": "stream",
            "tasks": {
                "build": {
                    "dependsOn": ["^build"],
                    "inputs": ["src/**"],
                    "outputs": ["out/build.txt"],
                },
                "test": {
                    "dependsOn": ["build"],
                    "inputs": ["out/build.txt"],
                    "outputs": ["out/test.txt"],
                },
            },
        },
    )
    write_json(
        os.path.join(root, "nx.json"),
        {
            "$schema": "./node_modules/nx/schemas/nx-schema.json",
            "neverConnectToCloud": True,
            "namedInputs": {"default": ["{projectRoot}/src/**/*"]},
            "targetDefaults": {
                "build": {"cache": True, "dependsOn": ["^build"]},
                "test": {"cache": True, "dependsOn": ["build"]},
            },
        },
    )
    os.makedirs(os.path.join(root, ".moon"), exist_ok=True)
    with open(os.path.join(root, ".moon", "workspace.yml"), "w") as f:
        f.write(
            "projects:\n  - 'packages/*'\nvcs:\n  client: 'git'\n  defaultBranch: 'main'\n"
            # What a large repository sets: hash the inputs' globs rather than `git ls-files`.
            "hasher:\n  walkStrategy: 'glob'\n"
        )
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("node_modules\nout\n.once\n.turbo\n.nx\n.moon/cache\n.moon/docker\n")
    for index in range(count):
        folder = os.path.join(root, "packages", name(index))
        os.makedirs(folder, exist_ok=True)
        deps = [name(d) for d in all_deps[index]]
        write_json(
            os.path.join(folder, "package.json"),
            {
                "name": name(index),
                "version": "1.0.0",
                "private": True,
                "scripts": {"build": PEER_BUILD, "test": PEER_TEST},
                "dependencies": {d: "1.0.0" for d in deps},
                "nx": {"includedScripts": []},
            },
        )
        write_json(
            os.path.join(folder, "project.json"),
            {
                "name": name(index),
                "root": f"packages/{name(index)}",
                "implicitDependencies": deps,
                "targets": {
                    "build": {
                        "executor": "nx:run-commands",
                        "options": {"command": PEER_BUILD, "cwd": "{projectRoot}"},
                        "inputs": ["{projectRoot}/src/**/*"],
                        "outputs": ["{projectRoot}/out/build.txt"],
                    },
                    "test": {
                        "executor": "nx:run-commands",
                        "options": {"command": PEER_TEST, "cwd": "{projectRoot}"},
                        "inputs": ["{projectRoot}/out/build.txt"],
                        "outputs": ["{projectRoot}/out/test.txt"],
                    },
                },
            },
        )
        moon = ["language: 'unknown'"]
        if deps:
            moon.append("dependsOn:")
            moon += [f"  - '{d}'" for d in deps]
        moon += [
            "tasks:",
            "  build:",
            f"    script: {json.dumps(PEER_BUILD)}",
            "    deps: ['^:build']",
            "    inputs: ['src/**/*']",
            "    outputs: ['out/build.txt']",
            "    options:",
            "      unixShell: 'sh'",
            "  test:",
            f"    script: {json.dumps(PEER_TEST)}",
            "    deps: ['~:build']",
            "    inputs: ['out/build.txt']",
            "    outputs: ['out/test.txt']",
            "    options:",
            "      unixShell: 'sh'",
        ]
        with open(os.path.join(folder, "moon.yml"), "w") as f:
            f.write("\n".join(moon) + "\n")


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
    parser.add_argument(
        "--work",
        type=int,
        default=0,
        metavar="MIB",
        help="with --commands-only, each build first hashes MIB MiB of zeros (12: about 30 ms of CPU)",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also write turbo, moon and Nx configuration with the same tasks (bench/compare.py)",
    )
    args = parser.parse_args()
    if args.targets < 1:
        sys.exit("error: --targets must be at least 1")
    if args.peers:
        args.files = max(args.files, 3)

    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "once.toml"), "w") as out:
        out.write(f'[workspace]\nname = "generated-{args.targets}"\n\n')
        all_deps = [write_target(out, rng, index, args.commands_only, args.peers, args.work)
            for index in range(args.targets)]
    if args.peers:
        write_peers(args.out, args.targets, all_deps)
    if args.files:
        for index in range(args.targets):
            write_sources(args.out, index, args.files)


if __name__ == "__main__":
    main()
