#!/usr/bin/env python3
"""Measure once against turbo, moon and Nx on the same generated workspace, like with like.

    bench/compare.py                       # 1,000 packages, 5 repetitions, MCP at 5,000 packages
    bench/compare.py --packages 100 --repeat 3 --mcp-packages 0
    bench/compare.py --packages 5000 --repeat 3 --cold-repeat 1 --mcp-packages 0
    bench/compare.py --smoke               # 50 packages, 1 repetition: what scripts/test runs

What it does, in order:

1. installs the peers at the versions pinned in bench/peers/package-lock.json with `npm ci` into
   target/bench-peers/ (skipped while the lock file is unchanged), and builds the floor's
   `stat_floor` example of once-fs;
2. writes the workspace with `bench/gen_workspace.py --peers` and copies it, byte for byte, into
   one folder per row of the table under target/bench-work/ws-N/ (once, turbo, moon with each
   hashing strategy, Nx with and without its daemon), each its own git repository with
   background git work (`gc.auto`, `maintenance.auto`) off, so that no row's caches, outputs or
   daemons touch another's;
3. checks that each tool starts offline (no telemetry, no cloud; see TOOL_ENV); a tool that does
   not is reported as skipped, with the reason, and the others go on;
4. for each row in turn, in its own copy: stops its daemon and wipes every documented cache
   location of its tool and every `out/` folder (CACHES), then times the cold `build` of every
   package and checks, from the tool's own summary, that it ran every task and replayed none;
   the no-op `build` (the second of two builds with nothing changed between them; checked:
   every task replayed); the incremental `build` after one source
   file of a leaf package (one nothing depends on) changes; and listing the workspace's
   projects as JSON. For once also the floor (one process that stats every input file once)
   after its no-op, and the cold build of a copy with an empty local cache from a BuildGrid
   remote cache that another copy filled. The rows take turns in every repetition, so a slow
   moment of the machine hits all of them;
5. for the MCP servers that start offline (once, `moon mcp`, Nx's `nx-mcp`): the time from spawn
   to the answer of the tool that describes the workspace, and that answer's size in bytes, on a
   workspace of --mcp-packages packages;
6. stops every daemon, checks that no process it started is left, prints a Markdown table (median,
   min-max, ratio to the fastest peer row) and writes it to bench/results/<date>-<N>.md (--smoke
   writes nothing but prints the table).

Every task is the same shell command started the same way: once runs `/bin/sh -c CMD`; turbo
starts `npm run build`, and the `npm` first on its PATH is a `sh` script that runs CMD itself
(no Node.js, no npm); moon runs the task's `script` with `sh -c` (`unixShell: sh`); Nx runs
`nx:run-commands`, which spawns `/bin/sh -c CMD` from its own process.

The graph listing is each tool's own command for "every project, as JSON": `once query targets
--all`, `turbo ls --output json`, `moon query projects` and `nx show projects --json`. Each has to
load the whole workspace to answer.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gen_workspace  # noqa: E402  (the commands every tool runs)
import remote  # noqa: E402  (BuildGrid, as bench/remote.py starts it)

PEERS_SRC = os.path.join(ROOT, "bench", "peers")
PEERS = os.path.join(ROOT, "target", "bench-peers")
WORK = os.path.join(ROOT, "target", "bench-work")
MODULES = os.path.join(PEERS, "node_modules")

# Every tool runs with this environment: no telemetry, no cloud, no interactive UI, and no CI
# variable (moon and Nx change behaviour under CI; the smoke run must measure the same thing in CI
# as on a laptop). Nx's daemon is off unless a row turns it on (the MCP server never does).
TOOL_ENV = {
    "TURBO_TELEMETRY_DISABLED": "1",
    "TURBO_NO_UPDATE_NOTIFIER": "1",
    "DO_NOT_TRACK": "1",
    "NX_DAEMON": "false",
    "NX_NO_CLOUD": "true",
    "NX_TUI": "false",
    "NX_SKIP_NX_CACHE": "false",
    "MOON_TELEMETRY": "false",
    "NO_COLOR": "1",
    "FORCE_COLOR": "0",
}

# Where each tool keeps what makes a build "warm", relative to its copy; all of it goes for a cold
# build. Nx's would be `~/.nx/<repository id>/`, shared by every checkout and never wiped, if
# `nx_env` did not point NX_CACHE_DIRECTORY and NX_WORKSPACE_DATA_DIRECTORY into the copy.
CACHES = {
    "once": [os.path.join(".once", "cache"), os.path.join(".once", "runs")],
    "turbo": [".turbo", os.path.join("node_modules", ".cache", "turbo")],
    "moon": [os.path.join(".moon", "cache")],
    "nx": [os.path.join(".nx", "cache"), os.path.join(".nx", "workspace-data")],
}

TOOLS = ["once", "turbo", "moon", "nx"]


class Row:
    """One row of the table: a tool with its settings, in its own copy of the workspace."""

    def __init__(self, name, tool, slug, env=None, how=""):
        self.name = name
        self.tool = tool
        self.slug = slug
        self.env = env or {}
        self.how = how
        self.path = None


# The settings a large repository would use, per the tools' docs, and the variants that differ.
# Nx's daemon is on by default outside CI (this machine is a container, where Nx turns it off:
# NX_DAEMON says which explicitly); moon's `glob` walk is what a large repository sets, `vcs`
# (git ls-files per task) its default.
ROWS = [
    Row("once", "once", "once"),
    Row("turbo", "turbo", "turbo"),
    Row("moon (glob)", "moon", "moon-glob"),
    Row("moon (vcs)", "moon", "moon-vcs"),
    Row("nx (daemon)", "nx", "nx-daemon", {"NX_DAEMON": "true"}),
    Row("nx (no daemon)", "nx", "nx-no-daemon", {"NX_DAEMON": "false"}),
]
FLOOR = "floor: stat every input"
STEPS = [
    ("graph", "list projects as JSON"),
    ("cold", "cold `build`"),
    ("remote", "cold, warm remote cache"),
    ("noop", "no-op `build`"),
    ("incremental", "incremental `build`"),
]
# Why a peer has no "cold, warm remote cache" figure: what it would need that this machine lacks,
# or what went wrong when it was tried against the same BuildGrid.
NO_REMOTE = {
    "turbo": "turbo's remote cache is its own HTTP API (Vercel, or a self-hosted server of that "
    "API), not REAPI; no such server is installed here",
    "moon": "moon 2.5.5 speaks REAPI, but BuildGrid 0.4.4 cannot read what it uploads: moon's "
    "action digest names no REAPI `Action` in the CAS, BuildGrid fails to parse it on every "
    "lookup, and moon's clone runs every task",
    "nx": "Nx's remote cache is Nx Cloud or a server of Nx's self-hosted cache HTTP API; none is "
    "installed here",
}
# A step slower than this is a hang (a daemon, a network wait) or a tool that does not scale,
# not a measurement: the row says so and goes no further.
STEP_TIMEOUT = 900


class Skip(Exception):
    """A row that cannot be measured (further), with the reason and the step it stopped at."""

    def __init__(self, reason, timed_out=False):
        super().__init__(reason)
        self.timed_out = timed_out


def one_line(text):
    """A reason fit for a table cell."""
    return " ".join(text.split()).replace("|", "\\|")


STARTED = time.monotonic()


def log(message):
    print(f"compare: [{time.monotonic() - STARTED:.1f} s] {message}", file=sys.stderr, flush=True)


def tool_env(extra=None):
    env = {
        k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("ONCE_REMOTE", "NX_"))
    }
    env.update(TOOL_ENV)
    env.update(extra or {})
    return env


def run(argv, cwd, env, timeout=STEP_TIMEOUT, check=True):
    """Run argv and return (seconds, stdout + stderr); a failure or a timeout raises Skip."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise Skip(f"`{' '.join(argv)}` did not finish within the {timeout} s step limit", True) from None
    seconds = time.perf_counter() - start
    text = (done.stdout + done.stderr).decode(errors="replace")
    if check and done.returncode != 0:
        raise Skip(f"`{' '.join(argv)}` exited with {done.returncode}: {text.strip()[-600:]}")
    return seconds, done.stdout, text


# --- the tools ---------------------------------------------------------------------------------
#
# Each tool is called through its native binary where it has one (turbo and moon ship Rust
# binaries behind a Node.js shim; calling the binary spares them Node's start-up), and Nx through
# its own `nx` script, which is how Nx runs.


def binaries(once):
    return {
        "once": [once],
        "turbo": [os.path.join(MODULES, "@turbo", "linux-64", "bin", "turbo")],
        "moon": [os.path.join(MODULES, "@moonrepo", "core-linux-x64-gnu", "moon")],
        "nx": [os.path.join(MODULES, ".bin", "nx")],
    }


def commands(tool, exe):
    """The argv of each step, per tool."""
    if tool == "once":
        return {
            "build": exe + ["run", "--all", "build", "--no-remote-cache"],
            "graph": exe + ["query", "targets", "--all"],
            "version": exe + ["--version"],
        }
    if tool == "turbo":
        return {
            "build": exe + ["run", "build", "--output-logs=errors-only", "--log-order=stream"],
            "graph": exe + ["ls", "--output", "json"],
            "version": exe + ["--version"],
        }
    if tool == "moon":
        return {
            "build": exe + ["run", ":build"],
            "graph": exe + ["query", "projects"],
            "version": exe + ["--version"],
        }
    if tool == "nx":
        return {
            "build": exe + ["run-many", "-t", "build", "--outputStyle=static"],
            "graph": exe + ["show", "projects", "--json"],
            "version": exe + ["--version"],
            "stop": exe + ["daemon", "--stop"],
        }
    raise ValueError(tool)


# Each tool's own summary of a build, as (tasks replayed from its cache, tasks in all).
SUMMARIES = {
    "once": (re.compile(r"(\d+) actions \((\d+) ran, (\d+) cached"), lambda m: (int(m[3]), int(m[1]))),
    "turbo": (re.compile(r"Cached:\s+(\d+) cached, (\d+) total"), lambda m: (int(m[1]), int(m[2]))),
    "moon": (
        re.compile(r"Tasks: (\d+) completed(?: \((\d+) cached\))?"),
        lambda m: (int(m[2] or 0), int(m[1])),
    ),
    "nx": (re.compile(r"Cache:\s+(\d+)/(\d+) hit"), lambda m: (int(m[1]), int(m[2]))),
}


def replayed(tool, text):
    """(replayed, total) from the tool's summary; a summary that is not there is a failure."""
    pattern, read = SUMMARIES[tool]
    match = pattern.search(text)
    if not match:
        raise Skip(f"no build summary of {tool} in its output: {text.strip()[-300:]}")
    return read(match)


def check_summary(tool, text, packages, cold):
    """A cold build must run every task and a no-op replay every one, or it measured something else."""
    cached, total = replayed(tool, text)
    want = 0 if cold else packages
    if total != packages or cached != want:
        step = "cold build" if cold else "no-op build"
        raise Skip(
            f"the {step} replayed {cached} of {total} tasks from the cache (expected {want} of {packages})"
        )


def list_graph(row, exe, env):
    """List every project as JSON, in one process for every tool."""
    seconds, out, _ = run(commands(row.tool, exe)["graph"], row.path, env)
    if row.tool == "once":
        page = json.loads(out)
        if len(page["targets"]) != page["total"] or page.get("next_cursor"):
            raise Skip("once query targets --all returned a partial list")
    else:
        json.loads(out[out.index(b"[") if row.tool == "nx" else out.index(b"{") :])
    return seconds


def row_env(row):
    """The row's environment: the tool's own cache folders inside its copy, its variant's setting."""
    extra = dict(row.env)
    if row.tool == "nx":
        extra.update(nx_env(row.path))
    if row.tool == "turbo":
        extra["PATH"] = os.path.join(WORK, "npm-shim") + os.pathsep + os.environ.get("PATH", "")
    return tool_env(extra)


def nx_env(ws):
    """Nx's cache and workspace data inside the copy (setting either also keeps Nx off ~/.nx)."""
    return {
        "NX_CACHE_DIRECTORY": os.path.join(ws, ".nx", "cache"),
        "NX_WORKSPACE_DATA_DIRECTORY": os.path.join(ws, ".nx", "workspace-data"),
    }


def stop_daemon(row, exe, env):
    """Nx's daemon is the only one: stop it (a no-op when none runs)."""
    if row.tool == "nx" and row.path and os.path.isdir(row.path):
        run(commands("nx", exe)["stop"], row.path, env, timeout=120, check=False)


# A wipe leaves the file system busy for seconds: the deleted files' metadata is still to be
# written back, and ext4 without a journal (this machine's) will not reuse an inode freed in the
# last 5 s, or while its inode table block is unwritten: each file created in a group of the disk
# scans past every such inode. A build timed right after its wipe paid for the wipe, by how the
# copy's files happen to lie on disk: the same once, on two copies of the same bytes, built cold
# in 15.4 s and 11.1 s. So every cold build starts after `sync` and this long, for every row.
SETTLE_SECONDS = 6


def settle_disk(smoke):
    """Write back what a wipe left to write, and wait out ext4's window for freed inodes (not in
    a smoke run, which times nothing)."""
    os.sync()
    if not smoke:
        time.sleep(SETTLE_SECONDS)


def wipe(tool, ws, packages):
    """Every cache location of `tool` in the copy `ws`, and every package's `out/`."""
    for cache in CACHES[tool]:
        path = os.path.join(ws, cache)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
    for index in range(packages):
        shutil.rmtree(os.path.join(ws, "packages", f"pkg-{index:05d}", "out"), ignore_errors=True)


def version(tool, exe, ws, env):
    _, out, _ = run(commands(tool, exe)["version"], ws, env, timeout=120)
    text = out.decode().strip()
    if tool == "nx":
        # "Nx Version:\n- Local: v24.0.6\n- Global: Not found"
        for line in text.splitlines():
            if "Local:" in line:
                return "nx " + line.split("Local:")[1].strip()
    if tool == "once":
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return f"{text} (`{os.path.relpath(exe[0], ROOT)}`, repository at {commit})"
    return text if text.startswith(tool) else f"{tool} {text}"


# --- setup -------------------------------------------------------------------------------------


def install_peers():
    """`npm ci` of bench/peers into target/bench-peers, skipped while the lock is unchanged."""
    lock = os.path.join(PEERS_SRC, "package-lock.json")
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        with open(os.path.join(PEERS_SRC, name), "rb") as f:
            digest.update(f.read())
    want = digest.hexdigest()
    stamp = os.path.join(MODULES, ".once-bench-installed")
    try:
        with open(stamp) as f:
            if f.read().strip() == want:
                return
    except OSError:
        pass
    os.makedirs(PEERS, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(os.path.join(PEERS_SRC, name), os.path.join(PEERS, name))
    log(f"npm ci of the pinned peers ({lock}) into {PEERS}")
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=PEERS,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"compare: npm ci in {PEERS} failed:\n{done.stdout}{done.stderr}")
    with open(stamp, "w") as f:
        f.write(want + "\n")


def build_floor(smoke):
    """The `stat_floor` example of once-fs, released (debug for --smoke, which times nothing)."""
    argv = ["cargo", "build", "--locked", "-p", "once-fs", "--example", "stat_floor"]
    profile = "debug" if smoke else "release"
    if not smoke:
        argv.append("--release")
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare: `{' '.join(argv)}` failed:\n{done.stderr[-2000:]}")
    return os.path.join(ROOT, "target", profile, "examples", "stat_floor")


def write_npm_shim():
    """The `npm` first on turbo's PATH: `npm run SCRIPT` runs the script's command in this `sh`.

    turbo has no way to run a task but through the package manager, and `npm run` starts Node.js
    and npm per task where every other tool starts one `sh`. The commands are gen_workspace's,
    the ones every package.json script holds; anything else turbo asks of npm fails loudly."""
    folder = os.path.join(WORK, "npm-shim")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "npm")
    with open(path, "w") as f:
        f.write(
            "#!/bin/sh\n"
            "# Written by bench/compare.py: turbo's `npm run SCRIPT`, run by this sh as once runs `sh -c`.\n"
            'case "$1 $2" in\n'
            f'"run build") {gen_workspace.PEER_BUILD} ;;\n'
            f'"run test") {gen_workspace.PEER_TEST} ;;\n'
            '*) echo "npm shim of bench/compare.py: unexpected \\`npm $*\\`" >&2; exit 2 ;;\n'
            "esac\n"
        )
    os.chmod(path, 0o755)
    return path


def generate(packages, slugs):
    """The workspace, one identical git repository per slug; returns ({slug: path}, leaf)."""
    base = os.path.join(WORK, f"ws-{packages}")
    shutil.rmtree(base, ignore_errors=True)
    template = os.path.join(base, "template")
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gen_workspace.py"), template]
        + ["--targets", str(packages), "--peers"],
        check=True,
    )
    # node_modules of links, one per installed package: the copy's own `node_modules/.cache`.
    modules = os.path.join(template, "node_modules")
    os.makedirs(modules)
    for name in os.listdir(MODULES):
        os.symlink(os.path.join(MODULES, name), os.path.join(modules, name))
    # Fixed dates and settings: every copy's commit is the same object, and nothing runs
    # `git gc --auto` or background maintenance while a step is timed.
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    env = dict(os.environ, GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    for argv in (
        git + ["init", "-q", "-b", "main"],
        git + ["config", "gc.auto", "0"],
        git + ["config", "maintenance.auto", "false"],
        git + ["add", "-A"],
        git + ["commit", "-q", "-m", "generated workspace"],
    ):
        subprocess.run(argv, cwd=template, env=env, check=True)
    paths = {}
    for slug in slugs:
        paths[slug] = os.path.join(base, slug)
        # `cp -a` keeps the links and the times, and is several times faster than copytree.
        subprocess.run(["cp", "-a", template, paths[slug]], check=True)
        if slug == "moon-vcs":
            # The one byte that differs: moon's hashing strategy, in its own configuration.
            config = os.path.join(paths[slug], ".moon", "workspace.yml")
            with open(config) as f:
                text = f.read().replace("walkStrategy: 'glob'", "walkStrategy: 'vcs'")
            with open(config, "w") as f:
                f.write(text)
            subprocess.run(
                git + ["commit", "-q", "-a", "-m", "vcs walk"], cwd=paths[slug], env=env, check=True
            )
    name = leaf(template, packages)
    shutil.rmtree(template)
    return paths, name


def leaf(ws, packages):
    """The last package that no other package depends on: changing it rebuilds it alone."""
    used = set()
    for index in range(packages):
        with open(os.path.join(ws, "packages", f"pkg-{index:05d}", "package.json")) as f:
            used.update(json.load(f)["dependencies"])
    return next(f"pkg-{i:05d}" for i in reversed(range(packages)) if f"pkg-{i:05d}" not in used)


# --- measuring builds --------------------------------------------------------------------------


class Bench:
    """The rows, their binaries and environments, and what has been measured so far."""

    def __init__(self, args, rows, exes, floor, bgd):
        self.args = args
        self.rows = rows
        self.exes = exes
        self.floor = floor
        self.bgd = bgd
        self.results = {r.name: {key: [] for key, _ in STEPS} for r in rows}
        self.results[FLOOR] = {key: [] for key, _ in STEPS}
        self.skipped = {}
        self.notes = {}  # (row, step) -> what the cell says instead of a figure
        self.remote_clones = None


def measure_builds(bench, leaf_name, progress):
    args = bench.args
    for rep in range(max(args.repeat, args.cold_repeat)):
        for row in bench.rows:
            if row.name in bench.skipped:
                continue
            step = None
            exe = bench.exes[row.tool]
            env = row_env(row)
            argv = commands(row.tool, exe)["build"]
            source = os.path.join(row.path, "packages", leaf_name, "src", "file0.txt")
            with open(source) as f:
                original = f.read()
            try:
                if rep < args.cold_repeat:
                    step = "cold"
                    stop_daemon(row, exe, env)
                    wipe(row.tool, row.path, args.packages)
                    settle_disk(args.smoke)
                    seconds, _, text = run(argv, row.path, env, args.step_timeout)
                    check_summary(row.tool, text, args.packages, cold=True)
                    check_outputs(row.path, args.packages)
                    bench.results[row.name]["cold"].append(seconds)
                    if row.tool == "once":
                        step = "remote"
                        measure_remote(bench, exe)
                if rep < args.repeat:
                    # The build right after the last repetition's source file was put back
                    # (or after the cold build) replays and restores that package's outputs:
                    # not a no-op for any tool. It runs untimed, so the timed build is the one
                    # after a build with nothing changed in between, for every row alike.
                    step = "settle"
                    run(argv, row.path, env, args.step_timeout)
                    step = "noop"
                    seconds, _, text = run(argv, row.path, env, args.step_timeout)
                    check_summary(row.tool, text, args.packages, cold=False)
                    if row.env.get("NX_DAEMON") == "true" and not leftovers(row.path):
                        raise Skip("Nx's daemon was not running after the no-op build")
                    bench.results[row.name]["noop"].append(seconds)
                    if row.tool == "once":
                        measure_floor(bench, row)
                    step = "incremental"
                    with open(source, "a") as f:
                        f.write(f"changed by {row.name} in repetition {rep}\n")
                    seconds, _, _ = run(argv, row.path, env, args.step_timeout)
                    bench.results[row.name]["incremental"].append(seconds)
                    step = "graph"
                    bench.results[row.name]["graph"].append(list_graph(row, exe, env))
            except Skip as skip:
                bench.skipped[row.name] = one_line(str(skip))
                if skip.timed_out:
                    bench.notes[(row.name, step)] = f"over the {args.step_timeout} s step limit"
                log(f"{row.name} skipped: {skip}")
            finally:
                with open(source, "w") as f:
                    f.write(original)
            log(f"repetition {rep + 1}: {row.name} done")
            progress()


def check_outputs(ws, packages):
    """A cold build that wrote no outputs measured nothing: say so rather than report it."""
    for index in range(packages):
        out = os.path.join(ws, "packages", f"pkg-{index:05d}", "out", "build.txt")
        if not os.path.isfile(out):
            raise Skip(f"the cold build left no {out}")


def measure_floor(bench, row):
    """Stat every input file once (`packages/*/src/**`), in one process, right after once's no-op."""
    folders = [
        os.path.join(row.path, "packages", f"pkg-{index:05d}", "src") for index in range(bench.args.packages)
    ]
    seconds, out, _ = run([bench.floor] + folders, row.path, tool_env(), bench.args.step_timeout)
    files = int(out.decode().strip())
    if files != 3 * bench.args.packages:
        raise Skip(f"the floor saw {files} input files, not {3 * bench.args.packages}")
    bench.results[FLOOR]["noop"].append(seconds)


def measure_remote(bench, exe):
    """once's cold build from a warm remote cache: a copy with an empty local cache builds from a
    BuildGrid (fresh, on loopback) that another copy's cold build filled; it must run nothing."""
    if not bench.bgd:
        bench.notes[("once", "remote")] = "no BuildGrid `bgd`: scripts/install-test-deps installs it"
        return
    fill, clone = bench.remote_clones
    server = remote.BuildGrid(bench.bgd, os.path.join(WORK, "buildgrid"))
    try:
        env = tool_env()
        for ws in (fill, clone):
            wipe("once", ws, bench.args.packages)
        build = exe + ["run", "--all", "build", "--remote-cache", server.url]
        run(build + ["--remote-upload"], fill, env, bench.args.step_timeout)
        settle_disk(bench.args.smoke)
        argv = build + ["--no-remote-upload", "--json"]
        seconds, out, _ = run(argv, clone, env, bench.args.step_timeout)
        counts = json.loads(out)["counts"]
        if counts["ran"] or counts["remote"] != bench.args.packages:
            raise Skip(
                f"the clone ran {counts['ran']} actions and replayed {counts['remote']} of "
                f"{bench.args.packages} from the remote cache: every one should have been a remote hit"
            )
        check_outputs(clone, bench.args.packages)
        bench.results["once"]["remote"].append(seconds)
    finally:
        server.stop()


# --- processes ---------------------------------------------------------------------------------


def leftovers(folder):
    """Processes whose working directory is under `folder` (a daemon left behind), as (pid, argv)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cwd == folder or cwd.startswith(folder + os.sep):
            found.append((int(pid), argv))
    return found


def stop_everything(bench):
    """Stop every row's daemon, then wait (bounded) until no process is left in the work folder;
    one that is still there after 10 s is killed by its id and reported."""
    for row in bench.rows:
        stop_daemon(row, bench.exes[row.tool], row_env(row))
    folder = os.path.join(WORK, f"ws-{bench.args.packages}")
    deadline = time.monotonic() + 10
    while leftovers(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = leftovers(folder)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


# --- MCP ---------------------------------------------------------------------------------------

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "once-bench", "version": "1"},
    },
}


def mcp_servers(exes):
    """(argv, name of the tool that describes the workspace, its arguments) per MCP server."""
    servers = {}
    if "once" in exes:
        servers["once"] = (exes["once"] + ["mcp"], "once_query_workspace", {})
    if "moon" in exes:
        servers["moon"] = (exes["moon"] + ["mcp"], "get_projects", {})
    if "nx" in exes:
        nx_mcp = os.path.join(MODULES, ".bin", "nx-mcp")
        servers["nx"] = (
            [nx_mcp, "--disableTelemetry", "--no-minimal", "--transport", "stdio", "."],
            "nx_workspace",
            {},
        )
    return servers


def mcp_answer(argv, tool_name, arguments, ws, timeout=300):
    """Spawn, initialize, call the tool; return (seconds to the answer, bytes of the answer)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=ws,
        env=tool_env(nx_env(ws)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        send(proc, MCP_INIT)
        read_reply(proc, 0, start, timeout)
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": tool_name, "arguments": arguments}
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        line = read_reply(proc, 1, start, timeout)
        seconds = time.perf_counter() - start
        reply = json.loads(line)
        if "error" in reply or reply["result"].get("isError"):
            raise Skip(f"`{tool_name}` answered with an error: {line[:300]!r}")
        return seconds, len(line)
    finally:
        # The end of input is the end of the session; a server that does not take it so (moon's
        # waits) is asked to stop, then stopped, so the next spawn is not timed against it.
        proc.stdin.close()
        for stop, grace in ((None, 1), (proc.terminate, 5), (proc.kill, 10)):
            if stop:
                stop()
            try:
                proc.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue


def send(proc, message):
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def read_reply(proc, id_, start, timeout):
    """The reply line with this id (notifications and logs in between are skipped)."""
    while True:
        if time.perf_counter() - start > timeout:
            raise Skip(f"no answer to request {id_} within {timeout}s")
        line = proc.stdout.readline()
        if not line:
            raise Skip(f"the server closed its output before answering request {id_}")
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("id") == id_:
            return line.rstrip(b"\n")


def measure_mcp(exes, ws, repeat, failed_tools):
    figures, reasons = {}, {}
    for tool, (argv, tool_name, arguments) in mcp_servers(exes).items():
        if tool in failed_tools:
            reasons[tool] = failed_tools[tool]
            continue
        times, size = [], None
        try:
            mcp_answer(argv, tool_name, arguments, ws)  # warm the file cache and any graph cache
            for _ in range(repeat):
                seconds, size = mcp_answer(argv, tool_name, arguments, ws)
                times.append(seconds)
            figures[tool] = (tool_name, times, size)
        except (Skip, OSError) as skip:
            reasons[tool] = one_line(str(skip))
            log(f"MCP of {tool} skipped: {skip}")
    return figures, reasons


# --- the report --------------------------------------------------------------------------------


def fmt(seconds):
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def cell(samples):
    if not samples:
        return None
    median = statistics.median(samples)
    spread = f" ({fmt(min(samples))}–{fmt(max(samples))})" if len(samples) > 1 else ""
    return median, f"{fmt(median)}{spread}"


def table(bench):
    """Rows are the tools with their settings, columns the steps; each cell carries its ratio to the
    fastest peer row of that step, and the last row is once's."""
    names = [r.name for r in bench.rows]
    tools = {r.name: r.tool for r in bench.rows}
    lines = ["| row | " + " | ".join(label for _, label in STEPS) + " |"]
    lines.append("|---" * (len(STEPS) + 1) + "|")
    fastest = {}
    for key, _ in STEPS:
        peers = [
            (cell(bench.results[n][key])[0], n) for n in names if tools[n] != "once" and bench.results[n][key]
        ]
        fastest[key] = min(peers) if peers else None
    for name in names + [FLOOR]:
        row = [f"**{name}**" if name == "once" else name]
        for key, _ in STEPS:
            c = cell(bench.results[name][key])
            note = bench.notes.get((name, key))
            if c and fastest[key]:
                row.append(f"{c[1]} · {c[0] / fastest[key][0]:.2f}×")
            elif c and key == "remote" and bench.results[name]["cold"]:
                # No peer has this figure: it is read against the row's own cold build.
                own = c[0] / statistics.median(bench.results[name]["cold"])
                row.append(f"{c[1]} · {own:.2f}× its cold build")
            elif c:
                row.append(c[1])
            elif note:
                row.append(note)
            elif key == "remote" and tools.get(name) in NO_REMOTE:
                row.append("not measured (below)")
            elif name in bench.skipped:
                row.append("skipped")
            else:
                row.append("–")
        lines.append("| " + " | ".join(row) + " |")
    summary = ["once ÷ fastest peer"]
    for key, _ in STEPS:
        once = cell(bench.results.get("once", {}).get(key, []))
        if once and fastest[key]:
            ratio = once[0] / fastest[key][0]
            faster = f", {1 / ratio:.1f}× faster" if ratio < 1 else ""
            summary.append(f"**{ratio:.2f}×** ({fastest[key][1]}{faster})")
        else:
            summary.append("no peer figure")
    lines.append("| " + " | ".join(summary) + " |")
    return lines


def fairness(args):
    shell = gen_workspace.PEER_BUILD
    return [
        "Fairness rules:",
        f"- every task is the same command, `{shell}`, in one `sh` per task: once `/bin/sh -c`; "
        "turbo `npm run build` where `npm` is a `sh` script first on its PATH that runs the command "
        "(no Node.js, no npm); moon `script` with `unixShell: sh`; Nx `nx:run-commands` "
        "(`/bin/sh -c` spawned by Nx);",
        "- every row works in its own copy of the workspace, byte for byte the same but for moon's "
        "`hasher.walkStrategy`, a git repository with `gc.auto 0` and `maintenance.auto false`;",
        "- cold: the daemon stopped and every cache location removed (once `.once/cache` and "
        "`.once/runs`; turbo `.turbo/` and `node_modules/.cache/turbo`; moon `.moon/cache`; Nx "
        "`NX_CACHE_DIRECTORY` and `NX_WORKSPACE_DATA_DIRECTORY`, set inside the copy instead of "
        "the shared `~/.nx/<repository id>/`), with every `out/`; each tool's own summary must "
        "say it ran every task and replayed none, and for the no-op that it replayed every one; "
        f"after the wipe, `sync` and {SETTLE_SECONDS} s pass before the timed build (ext4 without a "
        "journal scans past recently freed inodes when it creates a file, at a cost that depends on "
        "where a copy lies on disk);",
        "- no-op: the second of two builds with nothing changed between them (the first, untimed, "
        "replays what the last repetition's incremental step changed back), for every row;",
        "- settings a large repository would use: Nx with its daemon (its default outside CI) "
        "and without; moon with `hasher.walkStrategy: glob` and with `vcs` (its default); "
        "\"fastest peer\" is the fastest of every peer row;",
        "- no telemetry, no cloud, no CI variable; the floor is `stat_floor` (crates/once-fs/"
        "examples), one process that calls `symlink_metadata` on every file under every "
        "package's `src/` (the inputs once hashes) on two threads, timed right after once's "
        "no-op;",
        f"- a step over {args.step_timeout} s stops its row, which says so.",
    ]


def report(bench, versions, loads, leaf_name, mcp, mcp_reasons, mcp_packages):
    args = bench.args
    date = datetime.date.today().isoformat()
    before, after = loads
    busy = max(before[0], (after or before)[0]) > (os.cpu_count() or 1)
    load = f"Load average (1, 5, 15 min) before: {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}"
    if after:
        load += f", after: {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}"
    load += " — the machine was busy with other work: absolute times are inflated." if busy else "."
    lines = [
        f"# once vs turbo, moon and Nx at {args.packages} packages ({date})",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}, "
        f"Node.js {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}, "
        f"Python {platform.python_version()}. {load}",
        "Versions: " + ", ".join(versions.values()) + ".",
        f"Workspace: `bench/gen_workspace.py --targets {args.packages} --peers` (seed 7), "
        f"3 source files per package; the incremental step changes `{leaf_name}`.",
        f"Repetitions: {args.repeat} (cold builds: {args.cold_repeat}); each cell is the median "
        "(min–max) and its ratio to the fastest peer row of that step.",
        "",
    ]
    lines += fairness(args) + [""]
    lines += table(bench)
    noop, floor = bench.results.get("once", {}).get("noop"), bench.results[FLOOR]["noop"]
    if noop and floor:
        ratio = statistics.median(noop) / statistics.median(floor)
        lines.append(f"\nonce's no-op is {ratio:.1f}× the floor (the time to stat every input file once).")
    tools = sorted({r.tool for r in bench.rows if r.tool in NO_REMOTE}, key=TOOLS.index)
    if tools:
        lines.append("\nCold, warm remote cache: a copy with an empty local cache builds from a BuildGrid "
                     "remote cache (fresh, on loopback) that another copy's cold build filled, and must "
                     "run nothing. Not measured for:")
        lines += [f"- {tool}: {NO_REMOTE[tool]}." for tool in tools]
    for name, reason in bench.skipped.items():
        lines.append(f"\n- {name} stopped: {reason}")
    if mcp or mcp_reasons:
        lines += [
            "",
            f"MCP at {mcp_packages} packages: spawn → initialize → the tool that describes the "
            "workspace, answered (median of "
            f"{args.repeat}, after one warm-up); size is the whole JSON-RPC reply line.",
            "",
            "| server | tool | spawn → answer | answer size |",
            "|---|---|---|---|",
        ]
        for tool, (name, times, size) in mcp.items():
            lines.append(f"| {tool} | `{name}` | {cell(times)[1]} | {size:,} bytes |")
        for tool, reason in mcp_reasons.items():
            lines.append(f"| {tool} | skipped | {reason} | |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=1000, help="packages (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--cold-repeat", type=int, help="cold-build repetitions (default: --repeat)")
    parser.add_argument(
        "--mcp-packages", type=int, default=5000, help="workspace size for MCP (default 5000; 0: no MCP)"
    )
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of tools")
    parser.add_argument(
        "--step-timeout",
        type=int,
        default=STEP_TIMEOUT,
        help=f"seconds a step may take before its row stops (default {STEP_TIMEOUT})",
    )
    parser.add_argument(
        "--once",
        default=os.path.join(ROOT, "target", "release", "once"),
        help="the once binary (default target/release/once)",
    )
    parser.add_argument(
        "--bgd",
        default=remote.DEFAULT_BGD,
        help="BuildGrid's `bgd` (default: $ONCE_BGD, else target/interop/buildgrid-venv/bin/bgd)",
    )
    parser.add_argument("--smoke", action="store_true", help="50 packages, 1 repetition, no file")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.repeat, args.cold_repeat, args.mcp_packages = 50, 1, 1, 50
    if args.cold_repeat is None:
        args.cold_repeat = args.repeat
    args.once = os.path.abspath(args.once)
    if not os.access(args.once, os.X_OK):
        sys.exit(f"compare: no once binary at {args.once}: cargo build --release --locked -p once")
    wanted = args.tools.split(",")
    unknown = [t for t in wanted if t not in TOOLS]
    if unknown:
        sys.exit(f"compare: unknown tools {', '.join(unknown)}: choose from {', '.join(TOOLS)}")

    loads = (os.getloadavg(), None)
    install_peers()
    log("building the floor's `stat_floor`")
    floor = build_floor(args.smoke)
    bgd = args.bgd if "once" in wanted and os.access(args.bgd, os.X_OK) else None
    shim = write_npm_shim()
    rows = [r for r in ROWS if r.tool in wanted]
    slugs = [r.slug for r in rows] + (["once-remote-fill", "once-remote-clone"] if bgd else [])
    if args.mcp_packages == args.packages:
        slugs.append("mcp")
    log(f"generating {args.packages} packages in {len(slugs)} copies")
    paths, leaf_name = generate(args.packages, slugs)
    for row in rows:
        row.path = paths[row.slug]
        if row.tool == "turbo" and shutil.which("npm", path=row_env(row)["PATH"]) != shim:
            sys.exit(f"compare: the `npm` first on turbo's PATH is not {shim}")
    every = binaries(args.once)
    exes = {t: every[t] for t in TOOLS if t in wanted}
    bench = Bench(args, rows, exes, floor, bgd)
    if bgd:
        bench.remote_clones = (paths["once-remote-fill"], paths["once-remote-clone"])
    versions, failed_tools = {}, {}
    for tool, exe in exes.items():
        first = next(r for r in rows if r.tool == tool)
        try:
            versions[tool] = version(tool, exe, first.path, row_env(first))
        except (Skip, OSError) as skip:
            versions[tool] = f"{tool} (did not start)"
            failed_tools[tool] = one_line(str(skip))
            for row in rows:
                if row.tool == tool:
                    bench.skipped[row.name] = failed_tools[tool]
    if bgd:
        versions["buildgrid"] = remote.buildgrid_version(bgd)
    path = os.path.join(ROOT, "bench", "results", f"{datetime.date.today().isoformat()}-{args.packages}.md")

    def write(text):
        if not args.smoke:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

    # The table so far is written after every step, so a long run that is stopped still shows
    # what it measured.
    def progress():
        write(report(bench, versions, loads, leaf_name, {}, {}, 0) + "\n(partial)\n")

    try:
        measure_builds(bench, leaf_name, progress)
    finally:
        left = stop_everything(bench)
    loads = (loads[0], os.getloadavg())

    mcp, mcp_reasons = {}, {}
    if args.mcp_packages:
        if "mcp" not in paths:
            log(f"generating {args.mcp_packages} packages for the MCP servers")
            paths, _ = generate(args.mcp_packages, ["mcp"])
        mcp, mcp_reasons = measure_mcp(exes, paths["mcp"], args.repeat, failed_tools)
        log("MCP done")
        left += leftovers(os.path.join(WORK, f"ws-{args.mcp_packages}"))

    text = report(bench, versions, loads, leaf_name, mcp, mcp_reasons, args.mcp_packages)
    print(text)
    write(text)
    if not args.smoke:
        log(f"wrote {path}")
    if left:
        sys.exit("compare: processes were left running (killed): " + "; ".join(f"{p} `{a}`" for p, a in left))
    # The smoke run fails only on once: a peer that cannot run here is reported, not fatal.
    if "once" in bench.skipped:
        sys.exit(f"compare: once failed: {bench.skipped['once']}")
    if "once" in mcp and args.mcp_packages >= 5000 and mcp["once"][2] >= 40 * 1024:
        sys.exit(f"compare: once's workspace answer is {mcp['once'][2]} bytes, over 40 KB")


if __name__ == "__main__":
    main()
