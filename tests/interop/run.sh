#!/usr/bin/env bash
# Runs `once mcp` against the official MCP clients and sums up their checks.
#
#   tests/interop/run.sh [path to once, default target/debug/once]
#
# Each client reads the same table of calls (calls.json) and prints one line per check, ending with
# `N passed, N failed`:
#   ts_client.mjs   the TypeScript SDK's Client over StdioClientTransport
#   py_client.py    the Python SDK's ClientSession over stdio_client, then mcp.Client in "auto" mode
#   inspector.mjs   the MCP Inspector v2's CLI, one invocation per call
# against the workspace examples/starter (with a once.toml), then with calls-discovered.json against
# examples/discovered, which has none: its graph is what its Cargo.toml and package.json files say.
# Needs scripts/install-test-deps first (scripts/test runs it).
# Exits non-zero if any check failed or any client did not finish.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/tests/interop"
binary="${1:-$root/target/debug/once}"
# Pairs of call table and workspace.
tables=("calls.json:$root/examples/starter" "calls-discovered.json:$root/examples/discovered")
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

passed=0
failed=0
summary=()
for pair in "${tables[@]}"; do
table="${pair%%:*}"
workspace="${pair#*:}"
echo "interop: $binary --workspace $workspace mcp, calls from $table"
for client in ts_client.mjs py_client.py inspector.mjs; do
    case "$client" in
        *.py) cmd=("$python" "$here/$client") ;;
        *) cmd=(node "$here/$client") ;;
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

echo "--- interop summary"
for line in "${summary[@]}"; do
    echo "  $line"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
