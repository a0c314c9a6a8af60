#!/usr/bin/env python3
"""Measure once's remote cache against BuildGrid: what uploading costs, and what a second clone gains.

    bench/remote.py                        # 1,000 packages, 5 repetitions
    bench/remote.py --packages 200 --repeat 3
    bench/remote.py --smoke                # 50 packages, 1 repetition, writes nothing

What it does, in order:

1. writes the workspace with `bench/gen_workspace.py --commands-only --files 3` (cheap `sh`
   commands: `cat` of three source files into `out/bundle.txt`) and copies it into three folders,
   clones A, B and C, at paths of different lengths (nothing in them is a git repository: once
   needs none);
2. in every repetition, side by side, with the same binary:
   - C: the cold local build, no remote cache (`.once/` and every `out/` removed first): the
     reference of every ratio;
   - A: the cold build of clone A against a BuildGrid started afresh (empty CAS and action
     cache), uploading every result: the cost of uploading;
   - B: the build of clone B with an empty local cache and the remote cache A filled: every
     action a remote hit; then the same with `--jobs 1` (one call in flight: the figure per call
     is the latency of a round trip plus once's own work) and with --wide-jobs (more lookups in
     flight than cores);
   - the no-op build of B (everything in its local cache) with the remote cache configured, and
     without it;
3. checks that every B build restored outputs byte for byte equal to A's (a SHA-256 over every
   `out/` file and its path) and that it ran nothing: a B that ran its commands measured nothing;
4. prints a Markdown table and writes it to bench/results/<date>-remote-<N>.md, or
   <date>-remote-<N>-work<MIB>.md with `--work MIB` (real CPU in every build; --smoke writes
   nothing): per row the median (min–max) wall time, its ratio to the cold local build, the CPU
   time of once (with the commands it ran) and of BuildGrid's processes, and from the last
   `once run --json`: `counts.ran`, `counts.remote`, `remote.hits`, `remote.round_trips`, and the
   wall time per round trip.

BuildGrid is a Python server on the same machine: its CPU time is in every figure with a remote
cache, which the table shows apart.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "target", "bench-work", "remote")
# Where scripts/install-test-deps puts BuildGrid; ONCE_BGD names another, as for the client's tests.
DEFAULT_BGD = os.environ.get("ONCE_BGD") or os.path.join(
    ROOT, "target", "interop", "buildgrid-venv", "bin", "bgd"
)
# A step slower than this is a hang (a server that stopped answering), not a measurement.
STEP_TIMEOUT = 900
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

BGD_CONFIG = """server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
authorization:
  method: none
storages:
  - !disk-storage &cas
    path: {cas}
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 1000000
    allow-updates: true
    cache-failed-actions: false
instances:
  - name: ""
    services:
      - !action-cache
        cache: *ac
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
"""


def log(message):
    print(f"remote: {message}", file=sys.stderr, flush=True)


def fail(message):
    sys.exit(f"remote: FAILED: {message}")


def once_env():
    """Our environment without anything that would configure a remote cache or CI behaviour."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONCE_REMOTE") and k != "CI"}
    env["NO_COLOR"] = "1"
    return env


# --- BuildGrid ---------------------------------------------------------------------------------


class BuildGrid:
    """`bgd server start` on a free loopback port with a fresh disk CAS, in its own process group."""

    def __init__(self, bgd, folder):
        self.folder = folder
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = os.path.join(folder, "bgd.yml")
        with open(config, "w") as f:
            f.write(BGD_CONFIG.format(port=self.port, cas=os.path.join(folder, "cas")))
        self.log_path = os.path.join(folder, "bgd.log")
        with open(self.log_path, "w") as out:
            self.proc = subprocess.Popen(
                [bgd, "server", "start", config],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.url = f"grpc://127.0.0.1:{self.port}"
        self.wait_for_port()

    def wait_for_port(self, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                pass
            if self.proc.poll() is not None:
                self.stop()
                fail(f"bgd exited with {self.proc.returncode} before listening:\n{self.tail()}")
            time.sleep(0.05)
        self.stop()
        fail(f"bgd did not listen on port {self.port} within {timeout} s:\n{self.tail()}")

    def tail(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def cpu_seconds(self):
        """User + system time of every process of the server's group, the reaped ones included."""
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # After the command: state is field 3, so field n is fields[n - 3].
            if int(fields[5 - 3]) == self.proc.pid:  # pgrp
                total += sum(int(fields[n - 3]) for n in (14, 15, 16, 17))
        return total / CLOCK_TICKS

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.folder, ignore_errors=True)


def buildgrid_version(bgd):
    python = os.path.join(os.path.dirname(bgd), "python")
    done = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('buildgrid'))"],
        capture_output=True,
        text=True,
    )
    return f"BuildGrid {done.stdout.strip()}" if done.returncode == 0 else "BuildGrid (version unknown)"


# --- the workspace -----------------------------------------------------------------------------


def generate(packages, work_mib=0):
    """The generated workspace, copied into clones A, B and C; returns their paths."""
    base = os.path.join(WORK, f"ws-{packages}")
    shutil.rmtree(base, ignore_errors=True)
    template = os.path.join(base, "template")
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gen_workspace.py"), template]
        + ["--targets", str(packages), "--commands-only", "--files", "3", "--work", str(work_mib)],
        check=True,
    )
    clones = {
        "a": os.path.join(base, "a"),
        # Another depth and name than A's: nothing of the path may reach the remote key.
        "b": os.path.join(base, "elsewhere", "clone-b"),
        "c": os.path.join(base, "c"),
    }
    for path in clones.values():
        shutil.copytree(template, path)
    shutil.rmtree(template)
    return clones


def wipe(ws):
    shutil.rmtree(os.path.join(ws, ".once"), ignore_errors=True)
    packages = os.path.join(ws, "packages")
    for name in os.listdir(packages):
        shutil.rmtree(os.path.join(packages, name, "out"), ignore_errors=True)


def outputs_digest(ws):
    """A SHA-256 over every `out/` file of the workspace, path and bytes; and how many files."""
    digest = hashlib.sha256()
    count = 0
    packages = os.path.join(ws, "packages")
    for name in sorted(os.listdir(packages)):
        out = os.path.join(packages, name, "out")
        for folder, dirs, files in os.walk(out):
            dirs.sort()
            for file in sorted(files):
                path = os.path.join(folder, file)
                digest.update(os.path.relpath(path, ws).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read())
                digest.update(b"\0")
                count += 1
    return digest.hexdigest(), count


# --- running once ------------------------------------------------------------------------------


class Sample:
    def __init__(self, seconds, client_cpu, server_cpu, report):
        self.seconds = seconds
        self.client_cpu = client_cpu
        self.server_cpu = server_cpu
        self.report = report


def build(once, ws, remote=None, jobs=None, server=None):
    """`once run --all build --json` in `ws`: wall time, CPU of once and its commands, CPU of the
    server meanwhile, and the report."""
    argv = [once, "run", "--all", "build", "--json"]
    if remote:
        argv += ["--remote-cache", remote, "--remote-upload"]
    else:
        argv += ["--no-remote-cache"]
    if jobs:
        argv += ["--jobs", str(jobs)]
    server_before = server.cpu_seconds() if server else 0.0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run(
            argv,
            cwd=ws,
            env=once_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STEP_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        fail(f"`{' '.join(argv)}` in {ws} did not finish within {STEP_TIMEOUT} s")
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = server.cpu_seconds() - server_before if server else 0.0
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).decode(errors="replace").strip()[-1500:]
        fail(f"`{' '.join(argv)}` in {ws} exited with {done.returncode}:\n{tail}")
    report = json.loads(done.stdout)
    if report["counts"]["failed"]:
        fail(f"`{' '.join(argv)}` in {ws}: {report['counts']['failed']} actions failed")
    warning = (report.get("remote") or {}).get("warning")
    if warning:
        fail(f"`{' '.join(argv)}` in {ws}: the remote cache went off: {warning}")
    return Sample(seconds, client_cpu, server_cpu, report)


# --- the rows ----------------------------------------------------------------------------------


def rows(wide_jobs):
    return [
        ("cold", "cold local build, no remote cache (C)"),
        ("upload", "cold build of A, uploading to an empty BuildGrid"),
        ("b", "**clone B: empty local cache, warm remote**"),
        ("b1", "clone B, `--jobs 1` (one call in flight)"),
        ("bwide", f"clone B, `--jobs {wide_jobs}` (more lookups in flight than cores)"),
        ("noop_remote", "no-op build of B, remote cache configured"),
        ("noop_local", "no-op build of B, no remote cache"),
    ]


def check_clone_b(key, sample, clones, expected, total):
    counts = sample.report["counts"]
    if counts["ran"] or counts["remote"] != total:
        fail(
            f"{key}: clone B ran {counts['ran']} actions and replayed {counts['remote']} of "
            f"{total} from the remote cache: every one should have been a remote hit"
        )
    got = outputs_digest(clones["b"])
    if got != expected:
        fail(
            f"{key}: clone B's outputs differ from clone A's: {got[1]} files with digest {got[0]}, "
            f"A has {expected[1]} files with digest {expected[0]}"
        )


def measure(args, clones, results):
    total = None
    for rep in range(args.repeat):
        wipe(clones["c"])
        sample = build(args.once, clones["c"])
        results["cold"].append(sample)
        total = sample.report["counts"]["total"]
        if sample.report["counts"]["ran"] != total:
            fail(f"the cold build ran {sample.report['counts']['ran']} of {total} actions")

        # A fresh server each repetition: an empty CAS and action cache.
        server = BuildGrid(args.bgd, os.path.join(WORK, "buildgrid"))
        try:
            wipe(clones["a"])
            sample = build(args.once, clones["a"], server.url, server=server)
            if sample.report["remote"]["uploaded"] != total:
                fail(f"clone A uploaded {sample.report['remote']['uploaded']} of {total} results")
            results["upload"].append(sample)
            expected = outputs_digest(clones["a"])
            if expected[1] != total:
                fail(f"clone A has {expected[1]} output files for {total} actions")

            variants = [] if args.main_rows else [("b1", 1), ("bwide", args.wide_jobs)]
            for key, jobs in variants + [("b", None)]:
                wipe(clones["b"])
                sample = build(args.once, clones["b"], server.url, jobs=jobs, server=server)
                check_clone_b(key, sample, clones, expected, total)
                results[key].append(sample)

            # B's local cache is full now: nothing to ask the server but its capabilities.
            if not args.main_rows:
                results["noop_remote"].append(
                    build(args.once, clones["b"], server.url, server=server)
                )
                results["noop_local"].append(build(args.once, clones["b"]))
        finally:
            server.stop()
        log(f"repetition {rep + 1} of {args.repeat} done")


# --- the report --------------------------------------------------------------------------------


def fmt(seconds):
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def table(results, wide_jobs):
    cold = statistics.median(s.seconds for s in results["cold"])
    lines = [
        "| step | wall: median (min–max) | ÷ cold local | once CPU | BuildGrid CPU "
        "| ran | remote | hits | round trips | wall per round trip |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label in rows(wide_jobs):
        samples = results[key]
        if not samples:
            continue
        walls = [s.seconds for s in samples]
        median = statistics.median(walls)
        spread = f" ({fmt(min(walls))}–{fmt(max(walls))})" if len(walls) > 1 else ""
        last = samples[-1].report
        remote = last.get("remote") or {}
        trips = remote.get("round_trips")
        per_trip = f"{median * 1000 / trips:.2f} ms" if trips else "–"
        server = f"{fmt(statistics.median(s.server_cpu for s in samples))}" if remote else "–"
        lines.append(
            f"| {label} | {fmt(median)}{spread} | {median / cold:.2f}× "
            f"| {fmt(statistics.median(s.client_cpu for s in samples))} | {server} "
            f"| {last['counts']['ran']} | {last['counts'].get('remote', 0)} "
            f"| {remote.get('hits', '–')} | {trips if trips is not None else '–'} | {per_trip} |"
        )
    return lines


def report(args, versions, load_before, load_after, results):
    date = datetime.date.today().isoformat()
    busy = max(load_before[0], load_after[0]) > (os.cpu_count() or 1)
    lines = [
        f"# once's remote cache against BuildGrid at {args.packages} packages ({date})",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}, "
        f"Python {platform.python_version()}.",
        "Versions: " + ", ".join(versions) + ".",
        "BuildGrid is a Python server on the same machine, sharing its cores with once: its CPU "
        "time is part of every wall time with a remote cache (column BuildGrid CPU; disk CAS, "
        "LRU action cache, plaintext gRPC on loopback).",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}"
        + (" — the machine was busy with other work: absolute times are inflated." if busy else "."),
        f"Workspace: `bench/gen_workspace.py --targets {args.packages} --commands-only --files 3"
        + (f" --work {args.work}" if args.work else "")
        + "` (seed 7): one `build` per package (`cat` of 3 source files into `out/bundle.txt`"
        + (
            f", after the SHA-256 of {args.work} MiB of zeros: CPU work like a small compile"
            if args.work
            else ""
        )
        + "), copied into clones A, B and C in different folders.",
        f"Repetitions: {args.repeat}, each with a fresh BuildGrid (empty CAS and action cache); "
        "each cell is the median (min–max). CPU columns: user + system seconds of `once` with "
        "the commands it ran, and of BuildGrid's processes, during the step. ran, remote, hits "
        "and round trips are `counts.ran`, `counts.remote`, `remote.hits` and "
        "`remote.round_trips` of the last repetition; wall per round trip is the median wall "
        "time divided by the round trips (with several jobs, several calls are in flight). "
        "Every clone B build restored outputs byte for byte equal to clone A's, and ran nothing.",
        "",
    ]
    lines += table(results, args.wide_jobs)
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=1000, help="packages (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument(
        "--wide-jobs", type=int, default=8, help="--jobs of the wide clone B row (default 8)"
    )
    parser.add_argument(
        "--once",
        default=os.path.join(ROOT, "target", "release", "once"),
        help="the once binary (default target/release/once)",
    )
    parser.add_argument(
        "--bgd",
        default=DEFAULT_BGD,
        help="BuildGrid's `bgd` (default: $ONCE_BGD, else target/interop/buildgrid-venv/bin/bgd)",
    )
    parser.add_argument(
        "--work",
        type=int,
        default=0,
        metavar="MIB",
        help="each build first hashes MIB MiB of zeros (12: about 30 ms of CPU; default 0)",
    )
    parser.add_argument(
        "--main-rows",
        action="store_true",
        help="only the cold local build, the upload and clone B (no --jobs variants, no no-ops)",
    )
    parser.add_argument("--smoke", action="store_true", help="50 packages, 1 repetition, no file")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.repeat = 50, 1
    args.once = os.path.abspath(args.once)
    if not os.access(args.once, os.X_OK):
        sys.exit(f"remote: no once binary at {args.once}: cargo build --release --locked -p once")
    if not os.access(args.bgd, os.X_OK):
        sys.exit(f"remote: no `bgd` at {args.bgd}: scripts/install-test-deps installs it")

    load_before = os.getloadavg()
    log(f"generating {args.packages} packages")
    clones = generate(args.packages, args.work)
    once_version = subprocess.run([args.once, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    versions = [
        f"{once_version} (`{os.path.relpath(args.once, ROOT)}`, repository at {commit})",
        buildgrid_version(args.bgd),
    ]
    results = {key: [] for key, _ in rows(args.wide_jobs)}
    measure(args, clones, results)
    load_after = os.getloadavg()

    text = report(args, versions, load_before, load_after, results)
    print(text)
    if not args.smoke:
        work = f"-work{args.work}" if args.work else ""
        name = f"{datetime.date.today().isoformat()}-remote-{args.packages}{work}.md"
        path = os.path.join(ROOT, "bench", "results", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        log(f"wrote {path}")


if __name__ == "__main__":
    main()
