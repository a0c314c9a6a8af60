#!/usr/bin/env python3
"""Measure once against turbo, moon and Nx on the same generated workspace, side by side.

    bench/compare.py                       # 1,000 packages, 5 repetitions, MCP at 5,000 packages
    bench/compare.py --packages 100 --repeat 3 --mcp-packages 0
    bench/compare.py --smoke               # 50 packages, 1 repetition: what scripts/test runs

What it does, in order:

1. installs the peers at the versions pinned in bench/peers/package-lock.json with `npm ci` into
   target/bench-peers/ (skipped while the lock file is unchanged);
2. writes the workspace with `bench/gen_workspace.py --peers` into target/bench-work/ws-N, links
   its node_modules to the peers' and commits it to a fresh git repository (moon and turbo read
   git);
3. checks that each tool starts offline (no telemetry, no daemon, no cloud; see TOOL_ENV); a tool
   that does not is reported as skipped, with the reason, and the others go on;
4. for each tool in turn, on the same workspace: wipes its cache and every `out/` folder, then
   times the cold `build` of every package; the no-op `build` (everything cached); the
   incremental `build` after one source file of a leaf package (one nothing depends on) changes;
   and listing the workspace's projects as JSON. The tools take turns in every repetition, so
   a slow moment of the machine hits all of them;
5. for the MCP servers that start offline (once, `moon mcp`, Nx's `nx-mcp`): the time from spawn
   to the answer of the tool that describes the workspace, and that answer's size in bytes, on a
   workspace of --mcp-packages packages;
6. prints a Markdown table (median, min–max, ratio to the fastest peer) and writes it to
   bench/results/<date>-<N>.md (--smoke writes nothing but prints the table).

The graph listing is each tool's own command for "every project, as JSON": `once query targets`
(every page, 200 rows each: name, kind, path, capabilities, dependency count), `turbo ls --output
json` (name, path), `moon query projects` (every project's resolved configuration) and `nx show
projects --json` (names). Each has to load the whole workspace to answer.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_SRC = os.path.join(ROOT, "bench", "peers")
PEERS = os.path.join(ROOT, "target", "bench-peers")
WORK = os.path.join(ROOT, "target", "bench-work")
MODULES = os.path.join(PEERS, "node_modules")

# Every tool runs with this environment: no telemetry, no daemon, no cloud, no interactive UI,
# and no CI variable (moon and Nx change behaviour under CI; the smoke run must measure the same
# thing in CI as on a laptop).
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

TOOLS = ["once", "turbo", "moon", "nx"]
SCENARIOS = [
    ("graph", "list projects as JSON"),
    ("cold", "cold `build` (caches wiped)"),
    ("noop", "no-op `build` (all cached)"),
    ("incremental", "incremental `build` (one leaf changed)"),
]
# A step slower than this is a hang (a daemon, a network wait), not a measurement.
STEP_TIMEOUT = 900


class Skip(Exception):
    """A tool that cannot be measured here, with the reason."""


def one_line(text):
    """A reason fit for a table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def log(message):
    print(f"compare: {message}", file=sys.stderr, flush=True)


def tool_env():
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(TOOL_ENV)
    return env


def run(argv, cwd, timeout=STEP_TIMEOUT, check=True):
    """Run argv and return (seconds, stdout); a failure or a timeout raises Skip with its output."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=tool_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise Skip(f"`{' '.join(argv)}` did not finish within {timeout}s") from None
    seconds = time.perf_counter() - start
    if check and done.returncode != 0:
        tail = (done.stderr or done.stdout).decode(errors="replace").strip()[-600:]
        raise Skip(f"`{' '.join(argv)}` exited with {done.returncode}: {tail}")
    return seconds, done.stdout


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
    """The argv of each step, per tool (the graph listing is a function: once pages)."""
    if tool == "once":
        return {
            "build": exe + ["run", "--all", "build"],
            "version": exe + ["--version"],
            "caches": [".once"],
        }
    if tool == "turbo":
        return {
            "build": exe + ["run", "build", "--output-logs=errors-only", "--log-order=stream"],
            "graph": exe + ["ls", "--output", "json"],
            "version": exe + ["--version"],
            "caches": [".turbo", os.path.join("node_modules", ".cache", "turbo")],
        }
    if tool == "moon":
        return {
            "build": exe + ["run", ":build"],
            "graph": exe + ["query", "projects"],
            "version": exe + ["--version"],
            "caches": [os.path.join(".moon", "cache")],
        }
    if tool == "nx":
        return {
            "build": exe + ["run-many", "-t", "build", "--outputStyle=static"],
            "graph": exe + ["show", "projects", "--json"],
            "version": exe + ["--version"],
            "caches": [".nx"],
        }
    raise ValueError(tool)


def list_graph(tool, exe, ws):
    """List every project as JSON, in one process for every tool (once: `--all` joins the pages
    that an agent would read one at a time)."""
    if tool != "once":
        seconds, out = run(commands(tool, exe)["graph"], ws)
        json.loads(out[out.index(b"{") if tool != "nx" else out.index(b"[") :])
        return seconds
    seconds, out = run(exe + ["query", "targets", "--all"], ws)
    page = json.loads(out)
    if len(page["targets"]) != page["total"] or page.get("next_cursor"):
        raise RuntimeError("once query targets --all returned a partial list")
    return seconds


def wipe(tool, ws, packages):
    for cache in commands(tool, [""])["caches"]:
        path = os.path.join(ws, cache)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
    for index in range(packages):
        shutil.rmtree(os.path.join(ws, "packages", f"pkg-{index:05d}", "out"), ignore_errors=True)


def version(tool, exe, ws):
    _, out = run(commands(tool, exe)["version"], ws, timeout=120)
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


def generate(packages):
    """A fresh workspace of `packages` packages, committed to git; returns (path, leaf)."""
    ws = os.path.join(WORK, f"ws-{packages}")
    shutil.rmtree(ws, ignore_errors=True)
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gen_workspace.py"), ws]
        + ["--targets", str(packages), "--peers"],
        check=True,
    )
    os.symlink(MODULES, os.path.join(ws, "node_modules"))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for argv in (
        git + ["init", "-q", "-b", "main"],
        git + ["add", "-A"],
        git + ["commit", "-q", "-m", "generated workspace"],
    ):
        subprocess.run(argv, cwd=ws, check=True)
    return ws, leaf(ws, packages)


def leaf(ws, packages):
    """The last package that no other package depends on: changing it rebuilds it alone."""
    used = set()
    for index in range(packages):
        with open(os.path.join(ws, "packages", f"pkg-{index:05d}", "package.json")) as f:
            used.update(json.load(f)["dependencies"])
    return next(f"pkg-{i:05d}" for i in reversed(range(packages)) if f"pkg-{i:05d}" not in used)


# --- measuring builds --------------------------------------------------------------------------


def measure_builds(tools, ws, leaf_name, packages, repeat, cold_repeat, results, skipped, progress):
    source = os.path.join(ws, "packages", leaf_name, "src", "file0.txt")
    with open(source) as f:
        original = f.read()
    for rep in range(max(repeat, cold_repeat)):
        for tool, exe in tools.items():
            if tool in skipped:
                continue
            argv = commands(tool, exe)["build"]
            try:
                if rep < cold_repeat:
                    wipe(tool, ws, packages)
                    seconds, _ = run(argv, ws)
                    results[tool]["cold"].append(seconds)
                    check_outputs(ws, packages, tool)
                if rep < repeat:
                    results[tool]["noop"].append(run(argv, ws)[0])
                    with open(source, "a") as f:
                        f.write(f"changed by {tool} in repetition {rep}\n")
                    results[tool]["incremental"].append(run(argv, ws)[0])
                    results[tool]["graph"].append(list_graph(tool, exe, ws))
            except Skip as skip:
                skipped[tool] = one_line(str(skip))
                log(f"{tool} skipped: {skip}")
            finally:
                with open(source, "w") as f:
                    f.write(original)
            log(f"repetition {rep + 1}: {tool} done")
            progress()


def check_outputs(ws, packages, tool):
    """A cold build that wrote no outputs measured nothing: say so rather than report it."""
    for index in (0, packages - 1):
        out = os.path.join(ws, "packages", f"pkg-{index:05d}", "out", "build.txt")
        if not os.path.isfile(out):
            raise Skip(f"the cold build left no {out}")


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


def mcp_servers(tools):
    """(argv, name of the tool that describes the workspace, its arguments) per MCP server."""
    servers = {}
    if "once" in tools:
        servers["once"] = (tools["once"] + ["mcp"], "once_query_workspace", {})
    if "moon" in tools:
        servers["moon"] = (tools["moon"] + ["mcp"], "get_projects", {})
    if "nx" in tools:
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
        env=tool_env(),
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
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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


def measure_mcp(tools, ws, repeat, skipped):
    figures, reasons = {}, {}
    for tool, (argv, tool_name, arguments) in mcp_servers(tools).items():
        if tool in skipped:
            reasons[tool] = skipped[tool]
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


def table(results, tools):
    lines = ["| step | " + " | ".join(tools) + " | once ÷ fastest peer |"]
    lines.append("|---" * (len(tools) + 2) + "|")
    for key, label in SCENARIOS:
        cells = {t: cell(results[t][key]) for t in tools}
        peers = [c[0] for t, c in cells.items() if t != "once" and c]
        fastest = min(peers) if peers else None
        row = [label]
        for tool in tools:
            c = cells[tool]
            if not c:
                row.append("skipped")
            elif fastest:
                row.append(f"{c[1]} · {c[0] / fastest:.2f}×")
            else:
                row.append(c[1])
        once = cells.get("once")
        if once and fastest:
            ratio = once[0] / fastest
            row.append(f"**{ratio:.3f}×** ({1 / ratio:.1f}× faster)" if ratio < 1 else f"**{ratio:.2f}×**")
        else:
            row.append("n/a")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def report(args, versions, results, skipped, mcp, mcp_reasons, mcp_packages, leaf_name):
    tools = list(versions)
    date = datetime.date.today().isoformat()
    lines = [
        f"# once vs turbo, moon and Nx at {args.packages} packages ({date})",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}, "
        f"Node.js {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}, "
        f"Python {platform.python_version()}.",
        "Versions: " + ", ".join(versions[t] for t in tools) + ".",
        f"Workspace: `bench/gen_workspace.py --targets {args.packages} --peers` (seed 7), "
        f"3 source files per package; the incremental step changes `{leaf_name}`.",
        f"Repetitions: {args.repeat} (cold build: {args.cold_repeat}); each cell is the median "
        "(min–max) and its ratio to the fastest peer (turbo, moon, Nx).",
        "",
    ]
    lines += table(results, tools)
    for tool, reason in skipped.items():
        lines.append(f"\n- {tool} skipped: {reason}")
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
        "--once",
        default=os.path.join(ROOT, "target", "release", "once"),
        help="the once binary (default target/release/once)",
    )
    parser.add_argument("--smoke", action="store_true", help="50 packages, 1 repetition, no file")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.repeat, args.cold_repeat, args.mcp_packages = 50, 1, 1, 50
    if args.cold_repeat is None:
        args.cold_repeat = args.repeat
    if not os.access(args.once, os.X_OK):
        sys.exit(f"compare: no once binary at {args.once}: cargo build --release --locked -p once")

    install_peers()
    log(f"generating {args.packages} packages")
    ws, leaf_name = generate(args.packages)
    # The tools take their turns in the order given, so the slowest can go last.
    every = binaries(os.path.abspath(args.once))
    tools = {t: every[t] for t in args.tools.split(",")}
    versions, skipped = {}, {}
    for tool, exe in tools.items():
        try:
            versions[tool] = version(tool, exe, ws)
        except (Skip, OSError) as skip:
            versions[tool] = f"{tool} (did not start)"
            skipped[tool] = one_line(str(skip))
    results = {t: {key: [] for key, _ in SCENARIOS} for t in tools}
    path = os.path.join(ROOT, "bench", "results", f"{datetime.date.today().isoformat()}-{args.packages}.md")

    def write(text):
        if not args.smoke:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

    # The table so far is written after every step, so a long run that is stopped still shows
    # what it measured.
    def progress():
        write(report(args, versions, results, skipped, {}, {}, 0, leaf_name) + "\n(partial)\n")

    measure_builds(tools, ws, leaf_name, args.packages, args.repeat, args.cold_repeat, results, skipped, progress)

    mcp, mcp_reasons = {}, {}
    if args.mcp_packages:
        mcp_ws = ws
        if args.mcp_packages != args.packages:
            log(f"generating {args.mcp_packages} packages for the MCP servers")
            mcp_ws, _ = generate(args.mcp_packages)
        mcp, mcp_reasons = measure_mcp(tools, mcp_ws, args.repeat, skipped)

    text = report(args, versions, results, skipped, mcp, mcp_reasons, args.mcp_packages, leaf_name)
    print(text)
    write(text)
    if not args.smoke:
        log(f"wrote {path}")
    # The smoke run fails only on once: a peer that cannot run here is reported, not fatal.
    if "once" in skipped:
        sys.exit(f"compare: once failed: {skipped['once']}")
    if "once" in mcp and args.mcp_packages >= 5000 and mcp["once"][2] >= 40 * 1024:
        sys.exit(f"compare: once's workspace answer is {mcp['once'][2]} bytes, over 40 KB")


if __name__ == "__main__":
    main()
