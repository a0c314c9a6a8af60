#!/usr/bin/env python3
"""Interop test of `once mcp` with the official Python SDK (PyPI `mcp`, 2.x).

    python py_client.py <absolute path to once> <workspace dir>
    ONCE_INTEROP_BEARER=<token> python py_client.py --http <url of a once serve's /mcp>

Several connections, each spawning the server over stdio the way a real host does (stdio_client hands the
child only a whitelist of environment variables, mcp/client/stdio.py DEFAULT_INHERITED_ENV_VARS):

1. `ClientSession` over `stdio_client` with the classic `initialize` handshake, running every check of
   calls.json, with the server started with the table's server_flags. `ClientSession.call_tool`
   validates structuredContent against the tool's outputSchema (mcp/client/session.py,
   `validate_tool_result`, with jsonschema) for every result that is not isError, from the schemas that
   `list_tools` cached; cursor pages only ever add to that cache. The answers of tools that act are
   checked again with the same jsonschema package, isError or not.
2. The same, offering each older protocol version of calls.json in turn.
3. The high-level `mcp.Client`, whose default `mode="auto"` first probes `server/discover` (the
   2026-07-28 era; mcp/client/_probe.py `negotiate_auto`) and falls back to `initialize` on any
   JSON-RPC error. The server serves that revision, so the probe gets a DiscoverResult and the client
   stays modern; a prompt connection is asserted (the probe waits 10 s for a silent server).
   py_modern.py runs the whole call table in that revision.

With `--http`, the call table of 1 runs once more, through the SDK's Streamable HTTP transport
against a running `once serve`, with the session token as a bearer.

Prints one line per check and ends with `N passed, N failed`; exits 1 on any failure.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import Client, ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.client import session as session_module
from mcp.shared.exceptions import MCPError

HERE = Path(__file__).resolve().parent
# calls.json, or the table ONCE_INTEROP_CALLS names (a file in this folder) for another workspace.
TABLE: dict[str, Any] = json.loads((HERE / os.environ.get("ONCE_INTEROP_CALLS", "calls.json")).read_text())
REQUEST_S = 30
PROMPT_CONNECT_S = 5.0


class Checks:
    """Prints one line per check, at once, and the closing `N passed, N failed` line."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.passed = 0
        self.failed = 0

    def ok(self, name: str) -> None:
        self.passed += 1
        print(f"{self.prefix} ok   {name}", flush=True)

    def fail(self, name: str, detail: object) -> None:
        self.failed += 1
        text = " ".join(str(detail).split())[:600]
        print(f"{self.prefix} FAIL {name}: {text}", flush=True)

    def check(self, name: str, cond: object, detail: object = "") -> bool:
        if cond:
            self.ok(name)
        else:
            self.fail(name, detail() if callable(detail) else detail)
        return bool(cond)

    def summary(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1


checks = Checks("[py]")


def explain(err: BaseException) -> str:
    """`Type: message`, with the errors inside an ExceptionGroup (anyio task groups raise those) spelled out."""
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(explain(inner) for inner in err.exceptions)
    return f"{type(err).__name__}: {err}"


def describe(tool: str, args: dict[str, Any]) -> str:
    return f"{tool} {json.dumps(args, separators=(',', ':'))}"


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def shape_problem(result: types.CallToolResult) -> str | None:
    """The shape of every successful answer: structuredContent {"result": ...} and the same JSON as text."""
    if result.is_error:
        return f"isError: true: {text_of(result)[:300]}"
    sc = result.structured_content
    if not isinstance(sc, dict):
        return f"no structuredContent object (got {sc!r:.200})"
    if "result" not in sc:
        return f"structuredContent has no 'result' key: {json.dumps(sc)[:200]}"
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if not texts:
        return "no text content block next to structuredContent"
    try:
        parsed = json.loads(texts[0])
    except ValueError as err:
        return f"the text block is not JSON: {err}"
    if parsed != sc["result"] and parsed != sc:
        return "the text block does not hold the same JSON as structuredContent"
    return None


OUTCOMES = ("done", "refused", "busy", "problem", "none")


def expected_outcomes(entry: dict[str, Any]) -> list[str]:
    """`expect_outcome` is one word or a list of the words a race allows."""
    want = entry["expect_outcome"]
    return want if isinstance(want, list) else [want]


def resolve_args(args: Any, saved: dict[str, Any]) -> Any:
    """The arguments with each string `${name}` replaced by the value an earlier call saved (its type kept)."""
    if isinstance(args, str):
        name = args[2:-1] if args.startswith("${") and args.endswith("}") else None
        return saved[name] if name in saved else args
    if isinstance(args, list):
        return [resolve_args(v, saved) for v in args]
    if isinstance(args, dict):
        return {k: resolve_args(v, saved) for k, v in args.items()}
    return args


def save_from(entry: dict[str, Any], result: types.CallToolResult, saved: dict[str, Any]) -> None:
    """Keeps structuredContent.result[key] under each name of the entry's `save`."""
    value = (result.structured_content or {}).get("result")
    for name, key in entry.get("save", {}).items():
        if isinstance(value, dict) and key in value:
            saved[name] = value[key]
ERROR_OUTCOMES = ("refused", "busy", "problem")


def outcome_problem(result: types.CallToolResult, entry: dict[str, Any]) -> str | None:
    """The answer of a tool that acts: structuredContent {outcome, message[, result]} even with isError,
    the word first in the text, isError exactly for refused, busy and problem."""
    sc = result.structured_content
    if not isinstance(sc, dict):
        return f"no structuredContent object (got {sc!r:.200})"
    extra = sorted(set(sc) - {"outcome", "message", "result"})
    if extra:
        return f"structuredContent has keys beyond outcome, message and result: {extra}"
    word, message = sc.get("outcome"), sc.get("message")
    if word not in OUTCOMES:
        return f"outcome {word!r} is not one of the five words"
    if word not in expected_outcomes(entry):
        return f"outcome {word}, expected {' or '.join(expected_outcomes(entry))}: {message}"
    if not isinstance(message, str) or not message:
        return "no message"
    if bool(result.is_error) != (word in ERROR_OUTCOMES):
        return f"isError {result.is_error} with outcome {word}"
    if not text_of(result).startswith(f"{word}: {message}"):
        return f'the text does not start with "{word}: <message>": {text_of(result)[:200]}'
    expect = entry.get("expect_text")
    if expect and expect not in message:
        return f"the message does not mention {expect}: {message}"
    return None


def mismatch(expected: Any, actual: Any, path: str = "result") -> str | None:
    """Where `actual` differs from the part `expected` (objects: the keys given; arrays: in full)."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)[:200]}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            if (problem := mismatch(e, a, f"{path}[{i}]")) is not None:
                return problem
        return None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {json.dumps(actual)[:200]}"
        for key, value in expected.items():
            if (problem := mismatch(value, actual.get(key), f"{path}.{key}")) is not None:
                return problem
        return None
    if expected == actual and type(expected) is type(actual):
        return None
    return f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)[:200]}"


def server_params(binary: str, workspace: str) -> StdioServerParameters:
    return StdioServerParameters(command=binary, args=["--workspace", workspace, "mcp", *TABLE.get("server_flags", [])])


async def call(session: ClientSession, name: str, tool: str, args: dict[str, Any]) -> types.CallToolResult | None:
    """One tools/call; a raised error (JSON-RPC error, schema validation failure, timeout) fails `name`."""
    try:
        with anyio.fail_after(REQUEST_S):
            result = await session.call_tool(tool, args)
    except Exception as err:  # noqa: BLE001 - every failure is a failed check, reported with its type
        checks.fail(name, explain(err))
        return None
    assert isinstance(result, types.CallToolResult)
    return result


async def classic_session(binary: str, workspace: str, errlog: Any) -> None:
    """ClientSession over stdio_client: the whole call table."""
    async with stdio_client(server_params(binary, workspace), errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await call_table(session)


async def http_session(url: str, token: str) -> None:
    """ClientSession over the SDK's Streamable HTTP transport, with the session token as a bearer:
    the same call table as over stdio, then the session ended with DELETE when the client closes."""
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await call_table(session)


async def call_table(session: ClientSession) -> None:
    """Every check of calls.json through one session, from its `initialize` on."""
    try:
        with anyio.fail_after(REQUEST_S):
            init = await session.initialize()
    except Exception as err:  # noqa: BLE001
        checks.fail("connect and initialize", explain(err))
        return
    checks.ok("connect and initialize")
    preferred = TABLE["protocol_versions"][0]
    checks.check(
        f"negotiated protocol version is {preferred}",
        init.protocol_version == preferred == session.protocol_version,
        lambda: f"server chose {init.protocol_version}",
    )
    checks.check(
        f"serverInfo.name is {TABLE['server_name']}",
        init.server_info.name == TABLE["server_name"],
        lambda: f"got {init.server_info!r}",
    )
    checks.check(
        "server declares the tools capability",
        init.capabilities.tools is not None,
        lambda: f"capabilities: {init.capabilities!r}",
    )
    # A server that declares the logging capability must accept logging/setLevel.
    if init.capabilities.logging is not None:
        try:
            with anyio.fail_after(REQUEST_S), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated only from 2026-07-28 on
                await session.set_logging_level("warning")
            checks.ok("logging/setLevel (the server declares logging)")
        except Exception as err:  # noqa: BLE001
            checks.fail("logging/setLevel (the server declares logging)", explain(err))
    try:
        with anyio.fail_after(REQUEST_S):
            await session.send_ping()
        checks.ok("ping")
    except Exception as err:  # noqa: BLE001
        checks.fail("ping", explain(err))

    # tools/list, following nextCursor.
    tools: list[types.Tool] = []
    cursor: str | None = None
    try:
        for _ in range(50):
            with anyio.fail_after(REQUEST_S):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
    except Exception as err:  # noqa: BLE001
        checks.fail("tools/list", explain(err))
        return
    checks.check("tools/list", tools and not cursor, lambda: f"tools: {len(tools)}, cursor left: {cursor}")
    names = [t.name for t in tools]
    print(f"[py] info tools: {', '.join(names)}", flush=True)
    prefix = TABLE["query_tool_prefix"]
    query_tools = [t for t in tools if t.name.startswith(prefix)]
    checks.check("the server lists query tools", query_tools, f"no tool starts with {prefix}")
    entries = TABLE["calls"] + TABLE["errors"] + TABLE.get("outcomes", [])
    called = {c["tool"] for c in entries}
    gaps = [f"listed tool {n} has no call in the table" for n in names if n not in called]
    gaps += sorted(
        {
            f"the table names {e['tool']}, which the server does not list"
            for e in entries
            if not e.get("unlisted") and not e.get("when_listed") and e["tool"] not in names
        }
    )
    checks.check("the table calls every listed tool, and only those", not gaps, lambda: "; ".join(gaps))
    schemas = {t.name: t.output_schema for t in tools}
    for tool in tools:
        checks.check(
            f"{tool.name} has an outputSchema the SDK validates with",
            isinstance(tool.output_schema, dict),
            lambda: f"outputSchema: {tool.output_schema!r}",
        )

    for entry in TABLE["calls"]:
        tool, args = entry["tool"], dict(entry["args"])
        pages = 0
        seen: set[str] = set()
        while True:
            name = describe(tool, args)
            result = await call(session, name, tool, args)
            if result is None:
                break
            problem = shape_problem(result)
            if not checks.check(name, problem is None, problem):
                break
            if "expect" in entry and pages == 0:
                wrong = mismatch(entry["expect"], result.structured_content["result"])
                checks.check(f"{name} answers as calls.json expects", wrong is None, wrong)
            pages += 1
            key = entry.get("follow_cursor")
            if not key:
                break
            value = result.structured_content["result"]
            nxt = value.get(key) if isinstance(value, dict) else None
            if nxt is None:
                need = entry.get("min_pages", 1)
                checks.check(f"{tool} paging gives at least {need} pages", pages >= need, f"only {pages}")
                break
            if not checks.check(
                f"{tool} {key} is a new string", isinstance(nxt, str) and nxt not in seen, f"got {nxt!r}"
            ):
                break
            seen.add(nxt)
            args = {**entry["args"], "cursor": nxt}
            if pages > 50:
                checks.fail(f"{tool} paging ends", "more than 50 pages")
                break

    for entry in TABLE["errors"]:
        name = f"{describe(entry['tool'], entry['args'])} is a tool error"
        result = await call(session, name, entry["tool"], entry["args"])
        if result is not None:
            text = text_of(result)
            checks.check(
                name,
                result.is_error and entry["expect_text"] in text,
                lambda: f"isError: {result.is_error}, text: {text[:300]}",
            )

    saved: dict[str, Any] = {}
    for entry in TABLE.get("outcomes", []):
        if entry.get("when_listed") and entry["tool"] not in names:
            continue
        args = resolve_args(entry["args"], saved)
        name = f"{describe(entry['tool'], args)} answers {' or '.join(expected_outcomes(entry))}"
        result = await call(session, name, entry["tool"], args)
        if result is not None:
            save_from(entry, result, saved)
            problem = outcome_problem(result, entry)
            checks.check(name, problem is None, problem)
            # The SDK validates only answers that are not isError; a refusal must match as well.
            schema = schemas.get(entry["tool"])
            if isinstance(schema, dict):
                try:
                    jsonschema.validate(result.structured_content, schema)
                    checks.ok(f"{name}: structuredContent matches the outputSchema")
                except jsonschema.ValidationError as err:
                    checks.fail(f"{name}: structuredContent matches the outputSchema", err.message)

    unknown = TABLE["unknown_tool"]
    name = f"unknown tool {unknown} is a tool error"
    result = await call(session, name, unknown, {})
    if result is not None:
        checks.check(
            name,
            result.is_error and text_of(result),
            lambda: f"got {result.model_dump_json()[:300]}",
        )

    try:
        with anyio.fail_after(REQUEST_S):
            await session.send_ping()
        checks.ok("ping after errors")
    except Exception as err:  # noqa: BLE001
        checks.fail("ping after errors", explain(err))


async def auto_client(binary: str, workspace: str, errlog: Any) -> None:
    """mcp.Client in its default mode="auto": server/discover first, then the fallback to initialize."""
    probes: list[str] = []
    original = session_module.ClientSession.send_discover

    async def recording_send_discover(self: ClientSession, version: str) -> dict[str, Any]:
        try:
            answer = await original(self, version)
        except MCPError as err:
            probes.append(f"error {err.code}")
            raise
        except BaseException as err:
            probes.append(f"{type(err).__name__}")
            raise
        probes.append("result")
        return answer

    session_module.ClientSession.send_discover = recording_send_discover  # type: ignore[method-assign]
    try:
        client = Client(server_params(binary, workspace), mode="auto", read_timeout_seconds=REQUEST_S)
        started = time.monotonic()
        try:
            with anyio.fail_after(REQUEST_S):
                async with client:
                    elapsed = time.monotonic() - started
                    checks.check(
                        f"auto mode connects within {PROMPT_CONNECT_S:.0f} s",
                        elapsed < PROMPT_CONNECT_S,
                        f"took {elapsed:.1f} s (the probe of server/discover went unanswered?)",
                    )
                    checks.check(
                        "auto mode: server/discover is answered with a DiscoverResult",
                        probes == ["result"],
                        lambda: f"probe outcomes: {probes}",
                    )
                    checks.check(
                        "auto mode stays in the 2026-07-28 revision, without initialize",
                        client.session.initialize_result is None and client.session.discover_result is not None,
                        "an initialize result",
                    )
                    checks.check(
                        "auto mode negotiates 2026-07-28",
                        client.protocol_version == "2026-07-28",
                        lambda: f"got {client.protocol_version}",
                    )
                    info = client.server_info
                    checks.check(
                        f"auto mode serverInfo.name is {TABLE['server_name']}",
                        info is not None and info.name == TABLE["server_name"],
                        lambda: f"got {info!r}",
                    )
                    listing = await client.list_tools()
                    checks.check("auto mode tools/list", listing.tools, "no tools")
                    first = TABLE["calls"][0]
                    result = await client.call_tool(first["tool"], first["args"])
                    problem = shape_problem(result)
                    checks.check(f"auto mode {describe(first['tool'], first['args'])}", problem is None, problem)
        except Exception as err:  # noqa: BLE001
            checks.fail("auto mode connect and call", f"{explain(err)} (probe outcomes: {probes})")
    finally:
        session_module.ClientSession.send_discover = original  # type: ignore[method-assign]


async def older_versions(binary: str, workspace: str, errlog: Any) -> None:
    """The same ClientSession offering each older protocol version the server supports.

    The SDK always offers its newest handshake version (mcp/client/session.py `initialize` reads the
    module constant LATEST_HANDSHAKE_VERSION), so the constant is swapped for the duration of one
    handshake. The server must agree to a version it supports, counter-offer its newest for one it
    does not know, and still list and answer tools.
    """
    newest = session_module.LATEST_HANDSHAKE_VERSION
    first = TABLE["calls"][0]
    # An unknown version must get the server's preferred one as its counter-offer (the spec's rule).
    offers = [(v, v) for v in TABLE["protocol_versions"][1:]] + [("2099-01-01", TABLE["protocol_versions"][0])]
    for version, expected in offers:
        name = f"protocol {version}"
        session_module.LATEST_HANDSHAKE_VERSION = version  # type: ignore[misc]
        try:
            with anyio.fail_after(REQUEST_S):
                async with stdio_client(server_params(binary, workspace), errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await session.initialize()
                        session_module.LATEST_HANDSHAKE_VERSION = newest  # type: ignore[misc]
                        checks.check(
                            f"{name}: the server answers {expected}",
                            init.protocol_version == expected,
                            lambda: f"server chose {init.protocol_version}",
                        )
                        listing = await session.list_tools()
                        checks.check(f"{name}: tools/list", listing.tools, "no tools")
                        result = await session.call_tool(first["tool"], first["args"])
                        text = text_of(result)
                        try:
                            json.loads(text)
                            is_json = True
                        except ValueError:
                            is_json = False
                        checks.check(
                            f"{name}: {describe(first['tool'], first['args'])} answers JSON text",
                            not result.is_error and is_json,
                            lambda: f"isError: {result.is_error}, text: {text[:200]}",
                        )
        except Exception as err:  # noqa: BLE001
            checks.fail(name, explain(err))
        finally:
            session_module.LATEST_HANDSHAKE_VERSION = newest  # type: ignore[misc]


async def main(binary: str, workspace: str) -> int:
    import mcp

    print(f"[py] info mcp {getattr(mcp, '__version__', None) or _dist_version()}", flush=True)
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            with anyio.fail_after(240):
                await classic_session(binary, workspace, errlog)
                await older_versions(binary, workspace, errlog)
                await auto_client(binary, workspace, errlog)
        except Exception as err:  # noqa: BLE001
            checks.fail("run", explain(err))
        # On failure the server's stderr helps; it comes before the summary, which must be the last line.
        if checks.failed:
            errlog.seek(0)
            stderr = errlog.read()
            if stderr.strip():
                print("[py] server stderr (last 2000 chars):")
                print("\n".join(f"[py] | {line}" for line in stderr[-2000:].splitlines()))
        return checks.summary()


def _dist_version() -> str:
    from importlib.metadata import version

    return version("mcp")


async def main_http(url: str) -> int:
    token = os.environ.get("ONCE_INTEROP_BEARER", "")
    try:
        with anyio.fail_after(120):
            await http_session(url, token)
    except Exception as err:  # noqa: BLE001
        checks.fail("run over HTTP", explain(err))
    return checks.summary()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        sys.exit(anyio.run(main_http, sys.argv[2]))
    if len(sys.argv) != 3:
        print(
            "usage: py_client.py <absolute path to once> <workspace dir>\n"
            "       ONCE_INTEROP_BEARER=<token> py_client.py --http <url of /mcp>",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2]))
