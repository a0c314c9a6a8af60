#!/usr/bin/env node
// Interop test of `once mcp` and `once serve`'s /mcp in the 2026-07-28 revision, with the official
// TypeScript SDK's v2 client (@modelcontextprotocol/client 2.x), which serves both eras.
//
//   node ts_modern.mjs <absolute path to once> <workspace dir>
//   ONCE_INTEROP_BEARER=<token> node ts_modern.mjs --http http://127.0.0.1:PORT/mcp
//
// First a client in `versionNegotiation: { mode: 'auto' }`: over stdio the SDK probes with
// `server/discover` on a short-lived sibling process, then speaks the revision on the real one; over
// HTTP it probes on the endpoint itself. It must end up modern (no initialize, no session id), and
// then runs the checks of calls.json. The SDK validates every structuredContent against the tool's
// outputSchema (the default AJV validator, from the listing callTool keeps), so a call whose answer
// does not match its own schema fails here. Then a client in the default `legacy` mode, on the same
// binary or endpoint: the handshake era must still be served, with the newest handshake version.
//
// Prints one line per check and ends with `N passed, N failed`; exits 1 on any failure.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Checks, coverageProblems, listAllTools, describeCall, loadTable, resultShapeProblem, runCallTable, serverArgs, withTimeout } from './lib.mjs';

const [first, second] = process.argv.slice(2);
const http = first === '--http';
if (!first || !second || (http && !process.env.ONCE_INTEROP_BEARER)) {
    console.error('usage: node ts_modern.mjs <absolute path to once> <workspace dir>');
    console.error('       ONCE_INTEROP_BEARER=<token> node ts_modern.mjs --http <url of /mcp>');
    process.exit(2);
}

const MODERN = '2026-07-28';
const table = loadTable();
const checks = new Checks(http ? '[ts2-http]' : '[ts2]');
const REQUEST_MS = 30_000;
let serverStderr = '';

function transport() {
    const made = http
        ? new StreamableHTTPClientTransport(new URL(second), {
              requestInit: { headers: { Authorization: `Bearer ${process.env.ONCE_INTEROP_BEARER}` } },
          })
        : new StdioClientTransport({ command: first, args: serverArgs(table, second), stderr: 'pipe' });
    made.stderr?.on('data', (chunk) => {
        serverStderr += chunk.toString();
    });
    return made;
}

async function modern() {
    const carrier = transport();
    const client = new Client(
        { name: 'once-interop-ts2', version: '0.0.0' },
        { capabilities: {}, versionNegotiation: { mode: 'auto' } },
    );
    const connected = await checks.attempt('auto mode connects', async () => {
        await withTimeout(client.connect(carrier, { timeout: REQUEST_MS }), REQUEST_MS + 1000, 'connect');
        checks.ok('auto mode connects');
        return true;
    });
    if (!connected) return;
    checks.check('the era is modern', client.getProtocolEra() === 'modern', () => `era: ${client.getProtocolEra()}`);
    checks.check(`the negotiated version is ${MODERN}`, client.getNegotiatedProtocolVersion() === MODERN, () =>
        `got ${client.getNegotiatedProtocolVersion()}`);
    const discover = client.getDiscoverResult();
    checks.check('server/discover lists the revision', discover?.supportedVersions?.includes(MODERN), () => JSON.stringify(discover));
    checks.check('server/discover caches privately', discover?.cacheScope === 'private' && Number.isInteger(discover?.ttlMs), () =>
        JSON.stringify(discover));
    const info = client.getServerVersion();
    checks.check(`serverInfo.name is ${table.server_name}`, info?.name === table.server_name, () => `got ${JSON.stringify(info)}`);
    checks.check('server declares the tools capability', Boolean(client.getServerCapabilities()?.tools), () =>
        `capabilities: ${JSON.stringify(client.getServerCapabilities())}`);
    if (http) {
        checks.check('no Mcp-Session-Id in the revision', carrier.sessionId === undefined, () => `got ${carrier.sessionId}`);
    }

    const tools = await listAllTools(checks, client, REQUEST_MS);
    if (!tools) return client;
    const names = tools.map((t) => t.name);
    const queryTools = tools.filter((t) => t.name.startsWith(table.query_tool_prefix));
    checks.check('the server lists query tools', queryTools.length > 0, `no tool starts with ${table.query_tool_prefix}`);
    const gaps = coverageProblems(table, names);
    checks.check('the table calls every listed tool, and only those', gaps.length === 0, () => gaps.join('; '));
    for (const tool of queryTools) {
        checks.check(`${tool.name} has an outputSchema`, Boolean(tool.outputSchema), 'none');
    }

    await runCallTable(checks, table, names, (tool, args) => client.callTool({ name: tool, arguments: args }, { timeout: REQUEST_MS }));
    return client;
}

async function legacy() {
    const client = new Client({ name: 'once-interop-ts2-legacy', version: '0.0.0' }, { capabilities: {} });
    const connected = await checks.attempt('legacy mode connects with initialize', async () => {
        await withTimeout(client.connect(transport(), { timeout: REQUEST_MS }), REQUEST_MS + 1000, 'initialize');
        checks.ok('legacy mode connects with initialize');
        return true;
    });
    if (!connected) return client;
    checks.check('legacy mode negotiates 2025-11-25', client.getNegotiatedProtocolVersion() === '2025-11-25', () =>
        `got ${client.getNegotiatedProtocolVersion()}`);
    await checks.attempt('legacy ping', async () => {
        await client.ping({ timeout: REQUEST_MS });
        checks.ok('legacy ping');
    });
    const first = table.calls[0];
    const result = await checks.attempt('legacy tools/call', async () => {
        await client.listTools({}, { timeout: REQUEST_MS });
        return client.callTool({ name: first.tool, arguments: first.args }, { timeout: REQUEST_MS });
    });
    if (result !== undefined) {
        const problem = resultShapeProblem(result);
        checks.check(`legacy ${describeCall(first.tool, first.args)}`, problem === null, problem);
    }
    return client;
}

for (const run of [modern, legacy]) {
    let client;
    try {
        client = await withTimeout(run(), 240_000, `the ${run.name} run`);
    } catch (err) {
        checks.fail(run.name, err?.message ?? err);
    }
    await client?.close().catch((err) => checks.fail(`${run.name} close`, err?.message ?? err));
}
if (checks.failed > 0 && serverStderr.trim()) {
    console.log(`${checks.prefix} server stderr (last 2000 chars):`);
    console.log(serverStderr.slice(-2000).replace(/^/gm, `${checks.prefix} | `));
}
process.exit(checks.summary());
