#!/usr/bin/env python3
"""Interop test of `once mcp` and `once serve`'s /mcp in the 2026-07-28 revision, with the Python
SDK's `mcp.Client` (PyPI `mcp`, 2.x), which serves both eras.

    python py_modern.py <absolute path to once> <workspace dir>
    ONCE_INTEROP_BEARER=<token> python py_modern.py --http <url of a once serve's /mcp>

`mcp.Client` in its default mode="auto" probes `server/discover` (mcp/client/_probe.py): against a
server of the revision it must stay modern (a DiscoverResult, no `initialize`), and then answer the
call table of calls.json. `ClientSession.call_tool` validates structuredContent against the tool's
outputSchema with jsonschema for every result that is not isError; `list_tools` caches the schemas.
The helpers (checks, result shapes) are py_client.py's.

Prints one line per check and ends with `N passed, N failed`; exits 1 on any failure.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import py_client
from py_client import (
    TABLE,
    describe,
    expected_outcomes,
    explain,
    mismatch,
    outcome_problem,
    resolve_args,
    save_from,
    server_params,
    shape_problem,
    text_of,
)

MODERN = "2026-07-28"
REQUEST_S = py_client.REQUEST_S
checks = py_client.checks


async def call(client: Client, name: str, tool: str, args: dict[str, Any]) -> Any:
    try:
        with anyio.fail_after(REQUEST_S):
            return await client.call_tool(tool, args)
    except Exception as err:  # noqa: BLE001 - every failure is a failed check, reported with its type
        checks.fail(name, explain(err))
        return None


async def modern_table(client: Client) -> None:
    """The era, then every call of the table."""
    session = client.session
    checks.check(
        "auto mode stays in the 2026-07-28 revision",
        session.discover_result is not None and session.initialize_result is None,
        lambda: f"discover: {session.discover_result!r:.200}, initialize: {session.initialize_result!r:.200}",
    )
    checks.check(f"auto mode negotiates {MODERN}", client.protocol_version == MODERN, lambda: f"got {client.protocol_version}")
    info = client.server_info
    checks.check(
        f"serverInfo.name is {TABLE['server_name']}",
        info is not None and info.name == TABLE["server_name"],
        lambda: f"got {info!r}",
    )
    with anyio.fail_after(REQUEST_S):
        listing = await client.list_tools()
    names = [tool.name for tool in listing.tools]
    checks.check("tools/list", names and listing.next_cursor is None, lambda: f"{len(names)} tools, cursor {listing.next_cursor}")
    listed = set(names)
    expected = {entry["tool"] for entry in TABLE["calls"]} | {entry["tool"] for entry in TABLE["errors"]}
    missing = sorted(t for t in expected if t not in listed)
    checks.check("every tool of calls.json is listed", not missing, lambda: f"missing: {missing}")

    for entry in TABLE["calls"]:
        args = entry["args"]
        pages = 0
        seen: set[str] = set()
        while True:
            name = describe(entry["tool"], args)
            result = await call(client, name, entry["tool"], args)
            if result is None:
                break
            problem = shape_problem(result)
            if not checks.check(name, problem is None, problem):
                break
            if entry.get("expect") and pages == 0:
                wrong = mismatch(entry["expect"], result.structured_content["result"])
                checks.check(f"{name} answers as calls.json expects", wrong is None, wrong)
            pages += 1
            follow = entry.get("follow_cursor")
            if not follow:
                break
            nxt = (result.structured_content["result"] or {}).get(follow)
            if nxt is None:
                checks.check(f"{entry['tool']} paging gives at least {entry.get('min_pages', 1)} pages",
                             pages >= entry.get("min_pages", 1), f"only {pages}")
                break
            if not checks.check(f"{entry['tool']} {follow} is a new string", isinstance(nxt, str) and nxt not in seen, repr(nxt)):
                break
            seen.add(nxt)
            args = {**entry["args"], "cursor": nxt}
            if pages > 50:
                checks.fail(f"{entry['tool']} paging ends", "more than 50 pages")
                break
    for entry in TABLE["errors"]:
        name = f"{describe(entry['tool'], entry['args'])} is a tool error"
        result = await call(client, name, entry["tool"], entry["args"])
        if result is not None:
            text = text_of(result)
            checks.check(name, result.is_error and entry["expect_text"] in text, lambda: f"isError {result.is_error}: {text[:300]}")
    saved: dict[str, Any] = {}
    for entry in TABLE.get("outcomes", []):
        # A tool only some servers have (the window tool of `once serve`) is called where listed.
        if entry.get("when_listed") and entry["tool"] not in listed:
            continue
        args = resolve_args(entry["args"], saved)
        name = f"{describe(entry['tool'], args)} answers {' or '.join(expected_outcomes(entry))}"
        result = await call(client, name, entry["tool"], args)
        if result is not None:
            save_from(entry, result, saved)
            problem = outcome_problem(result, entry)
            checks.check(name, problem is None, problem)


async def main(binary: str, workspace: str) -> int:
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            with anyio.fail_after(240):
                async with Client(server_params(binary, workspace), mode="auto", read_timeout_seconds=REQUEST_S) as client:
                    await modern_table(client)
        except Exception as err:  # noqa: BLE001
            checks.fail("run", explain(err))
        if checks.failed:
            errlog.seek(0)
            print(f"{checks.prefix} server stderr: {errlog.read()[-2000:]}", flush=True)
    return checks.summary()


async def main_http(url: str) -> int:
    token = os.environ.get("ONCE_INTEROP_BEARER", "")
    try:
        with anyio.fail_after(240):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode="auto", read_timeout_seconds=REQUEST_S) as client:
                    await modern_table(client)
    except Exception as err:  # noqa: BLE001
        checks.fail("run over HTTP", explain(err))
    return checks.summary()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        checks.prefix = "[py2-http]"
        sys.exit(anyio.run(main_http, sys.argv[2]))
    if len(sys.argv) != 3:
        print(
            "usage: py_modern.py <absolute path to once> <workspace dir>\n"
            "       ONCE_INTEROP_BEARER=<token> py_modern.py --http <url of /mcp>",
            file=sys.stderr,
        )
        sys.exit(2)
    checks.prefix = "[py2]"
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2]))
