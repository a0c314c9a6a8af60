#!/usr/bin/env python3
"""The owner's latency on `once serve` while unauthenticated connections are held open.

Starts `once serve` on a one-target workspace, opens N connections that never authenticate
(a third idle, a third that sent `POST /mcp` without a bearer and keep the connection, a third
trickling a request head a byte at a time), then times the owner's requests one after another:
MCP over HTTP with the bearer (`ping` in an initialized session) and the logged-in page
(`GET /api/session` with its key). Prints the median and max of each, and the same with no
flood for comparison. Stops the session and closes every socket at the end.

    cargo build --locked -p once
    python3 bench/window_flood.py [--once target/debug/once] [--connections 500] [--requests 20]
"""

import argparse
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def request(port, line, headers, body=b""):
    """One request on a fresh connection (Connection: close); (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = f"{line} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        for name, value in headers.items():
            head += f"{name}: {value}\r\n"
        head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        sock.sendall(head.encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return status, fields, body


def attack(port, kind):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if kind == "refused":
            body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
            sock.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            sock.recv(4096)
        elif kind == "trickle":
            sock.sendall(f"GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
    except OSError:
        pass  # the session may close it at once; the attacker keeps its end
    return sock


def trickle(socks, going):
    while going.is_set():
        for sock in list(socks):
            try:
                sock.send(b"a")
            except OSError:
                socks.remove(sock)
        time.sleep(0.05)  # the attack's pace


def timed(fn, n):
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", default="target/debug/once")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.connections * 2 + 256
    if soft < wanted:
        if hard < wanted:
            sys.exit(f"need {wanted} file descriptors, the hard limit is {hard}: raise `ulimit -Hn`")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    print(f"RLIMIT_NOFILE: soft {max(soft, wanted)}, hard {hard}")

    scratch = tempfile.TemporaryDirectory(prefix="once-flood-")
    ws = os.path.join(scratch.name, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "once.toml"), "w") as f:
        f.write('[targets.core]\nkind = "command"\n\n[targets.core.capabilities.build]\ncommand = "true"\n')
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(scratch.name, "state"), NO_COLOR="1")
    env.pop("ONCE_LOG", None)
    serve = subprocess.Popen(
        [args.once, "-C", ws, "serve"], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    socks = []
    going = threading.Event()
    try:
        port = None
        deadline = time.monotonic() + 20
        while port is None and time.monotonic() < deadline:
            line = serve.stderr.readline()
            if m := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
                port = int(m.group(1))
        if port is None:
            sys.exit("once serve did not say where it listens")
        state = os.path.join(scratch.name, "state", "once", "mcp", f"{serve.pid}.json")
        token = json.load(open(state))["token"]
        bearer = {"Authorization": f"Bearer {token}"}

        _, _, body = request(port, "POST /session/login", bearer)
        login = json.loads(body)["url"].rsplit("login=", 1)[1]
        _, _, body = request(port, "POST /api/login", {"Content-Type": "application/json"},
                             json.dumps({"login": login}).encode())
        key = json.loads(body)["key"]
        mcp = dict(bearer, **{"Content-Type": "application/json",
                              "Accept": "application/json, text/event-stream"})
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}}}
        status, fields, _ = request(port, "POST /mcp", mcp, json.dumps(init).encode())
        assert status == 200, status
        mcp["Mcp-Session-Id"] = fields["mcp-session-id"]
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()

        def mcp_ping():
            status, _, _ = request(port, "POST /mcp", mcp, ping)
            assert status == 200, f"MCP over HTTP answered {status}"

        def page():
            status, _, _ = request(port, "GET /api/session", {"X-Once-Key": key})
            assert status == 200, f"the page got {status}"

        rows = [("no flood", timed(mcp_ping, args.requests), timed(page, args.requests))]
        trickling = []
        for i in range(args.connections):
            kind = ("idle", "refused", "trickle")[i % 3]
            sock = attack(port, kind)
            socks.append(sock)
            if kind == "trickle":
                trickling.append(sock)
        going.set()
        threading.Thread(target=trickle, args=(trickling, going), daemon=True).start()
        time.sleep(0.5)  # let the trickle run a few rounds before the owner asks
        rows.append((f"{args.connections} held", timed(mcp_ping, args.requests), timed(page, args.requests)))

        print(f"\nthe owner's requests, {args.requests} each, one at a time (ms)\n")
        print("| flood | MCP over HTTP median | max | page median | max |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, (m_med, m_max), (p_med, p_max) in rows:
            print(f"| {name} | {m_med:.1f} | {m_max:.1f} | {p_med:.1f} | {p_max:.1f} |")
    finally:
        going.clear()
        for sock in socks:
            sock.close()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(10)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
        scratch.cleanup()


if __name__ == "__main__":
    main()
