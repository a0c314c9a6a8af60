#!/usr/bin/env python3
"""Two builds of `once` side by side on one generated workspace: listing every target, the
no-op build and the incremental build, each binary on a copy of its own.

    python3 bench/two_onces.py NEW OLD                 # 1,000 packages, 40 rounds
    python3 bench/two_onces.py NEW OLD --swap          # the same, the copies swapped
    python3 bench/two_onces.py NEW OLD --smoke         # 20 packages, 2 rounds

Each round runs both binaries, taking turns at going first, and times each step as a whole
process (stdout and stderr read through pipes, as a tool that calls `once` reads them). The
no-op is the second of two builds with nothing changed, so a no-op proof answers it; the
incremental build follows one appended line in the source of a package nothing depends on.
It prints, per step, each binary's median wall time and CPU time (user + system of the process
and its threads) and the median of the per-round ratios NEW / OLD: pairing keeps the ratio
meaningful while the machine's speed drifts. The copies never trade places within a run; give
`--swap` for a second run with each binary on the other copy, since two copies of one workspace
lie differently on disk.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = ["run", "--all", "build", "--no-remote-cache"]
STEPS = ("listing", "no-op", "incremental")


def timed(argv, cwd):
    """Runs argv; returns (wall seconds, CPU seconds, stdout + stderr). A failure stops here."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = done.stdout + done.stderr
    if done.returncode != 0:
        sys.exit(f"`{' '.join(argv)}` exited with {done.returncode}: {text[-600:].decode(errors='replace')}")
    return wall, cpu, text


def workspace(packages, folder):
    """A generated workspace under `folder`, one git repository; its leaf package's name."""
    template = os.path.join(folder, "template")
    subprocess.run(
        [sys.executable, os.path.join(HERE, "gen_workspace.py"), template, "--targets", str(packages), "--peers"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    # No `git gc --auto` packing objects in the background while the copies are made.
    for argv in (
        git + ["init", "-q", "-b", "main"],
        git + ["config", "gc.auto", "0"],
        git + ["config", "maintenance.auto", "false"],
        git + ["add", "-A"],
        git + ["commit", "-q", "-m", "generated"],
    ):
        subprocess.run(argv, cwd=template, check=True)
    return template, f"pkg-{packages - 1:05d}"


def one_round(exe, copy, leaf, index, samples):
    """One round of the three steps for one binary on its copy."""
    timed([exe] + BUILD, copy)
    wall, cpu, text = timed([exe] + BUILD, copy)
    if b"(0 ran," not in text:
        sys.exit(f"{exe}: the no-op ran something: {text[-400:].decode(errors='replace')}")
    samples["no-op"].append((wall, cpu))
    with open(os.path.join(copy, "packages", leaf, "src", "file0.txt"), "a") as source:
        source.write(f"round {index}\n")
    wall, cpu, text = timed([exe] + BUILD, copy)
    if b"(1 ran," not in text:
        sys.exit(f"{exe}: the incremental build did not run exactly one action: {text[-400:].decode(errors='replace')}")
    samples["incremental"].append((wall, cpu))
    samples["listing"].append(timed([exe, "query", "targets", "--all"], copy)[:2])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("new", help="the `once` binary measured")
    parser.add_argument("old", help="the `once` binary it is measured against")
    parser.add_argument("--packages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--swap", action="store_true", help="each binary on the other copy")
    parser.add_argument("--smoke", action="store_true", help="20 packages, 2 rounds")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.rounds = 20, 2
    if args.packages < 2 or args.rounds < 1:
        parser.error("--packages must be at least 2 and --rounds at least 1")
    exes = {"new": os.path.abspath(args.new), "old": os.path.abspath(args.old)}
    folder = os.path.join(ROOT, "target", "bench-work", f"two-onces-{args.packages}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    template, leaf = workspace(args.packages, folder)
    copies = {}
    for name, slot in zip(("old", "new") if args.swap else ("new", "old"), ("a", "b")):
        copies[name] = os.path.join(folder, slot)
        subprocess.run(["cp", "-a", template, copies[name]], check=True)
    samples = {name: {step: [] for step in STEPS} for name in exes}
    for name in exes:
        timed([exes[name]] + BUILD, copies[name])  # the cold build, untimed
    for index in range(args.rounds):
        for name in ("new", "old") if index % 2 == 0 else ("old", "new"):
            one_round(exes[name], copies[name], leaf, index, samples[name])
    print(f"{args.packages} packages, {args.rounds} rounds; new on copy {'b' if args.swap else 'a'}")
    print("| step | new wall | old wall | new ÷ old (paired) | new CPU | old CPU | new ÷ old CPU (paired) |")
    print("|---|---|---|---|---|---|---|")
    for step in STEPS:
        new, old = samples["new"][step], samples["old"][step]
        cells = []
        for which in (0, 1):
            ratio = statistics.median(n[which] / o[which] for n, o in zip(new, old) if o[which] > 0)
            cells += [
                f"{statistics.median(n[which] for n in new) * 1000:.1f} ms",
                f"{statistics.median(o[which] for o in old) * 1000:.1f} ms",
                f"{ratio:.3f}×",
            ]
        print(f"| {step} | " + " | ".join(cells) + " |")
    if args.smoke:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
