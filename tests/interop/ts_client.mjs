#!/usr/bin/env node
// Interop test of `once mcp` with the official TypeScript SDK clients: @modelcontextprotocol/sdk 1.x
// (the default), or with --sdk v2 the @modelcontextprotocol/client 2.x line.
//
//   node ts_client.mjs [--sdk v2] <absolute path to once> <workspace dir>
//   ONCE_INTEROP_BEARER=<token> node ts_client.mjs [--sdk v2] --http http://127.0.0.1:PORT/mcp
//
// Spawns the server the way a real host does (StdioClientTransport, which hands the child only a small
// whitelist of environment variables), with the table's server_flags, or, with --http, reaches a
// running `once serve` through the SDK's StreamableHTTPClientTransport with the session token as a
// bearer; then runs the checks of calls.json. The SDK's own Client does the protocol work, with its
// default validation: callTool() validates structuredContent against the tool's outputSchema (v1:
// Client.callTool -> getToolOutputValidator with Ajv, whenever structuredContent is present; v2:
// the same for results that are not isError), and throws when it does not match. v1's listTools()
// replaces that cache with each page it reads, so after following every nextCursor this script hands
// the whole list to cacheToolMetadata() and asserts that every tool has a validator: no call below
// goes unvalidated. For the answers v2 does not validate itself (isError), this script validates
// them with the client's own validator.
//
// Prints one line per check and ends with `N passed, N failed`; exits 1 on any failure.

import { Checks, coverageProblems, listAllTools, loadTable, runCallTable, serverArgs, withTimeout } from './lib.mjs';

const argv = process.argv.slice(2);
const v2 = argv[0] === '--sdk' && argv[1] === 'v2';
if (argv[0] === '--sdk') argv.splice(0, 2);
const [first, second] = argv;
const http = first === '--http';
if (!first || !second || (http && !process.env.ONCE_INTEROP_BEARER)) {
    console.error('usage: node ts_client.mjs [--sdk v2] <absolute path to once> <workspace dir>');
    console.error('       ONCE_INTEROP_BEARER=<token> node ts_client.mjs [--sdk v2] --http <url of /mcp>');
    process.exit(2);
}

// The two SDK lines name their modules differently, and v2's callTool has no result-schema argument.
const sdk = v2
    ? {
          ...(await import('@modelcontextprotocol/client')),
          StdioClientTransport: (await import('@modelcontextprotocol/client/stdio')).StdioClientTransport,
          callTool: (client, params, options) => client.callTool(params, options),
      }
    : {
          Client: (await import('@modelcontextprotocol/sdk/client/index.js')).Client,
          StdioClientTransport: (await import('@modelcontextprotocol/sdk/client/stdio.js')).StdioClientTransport,
          StreamableHTTPClientTransport: (await import('@modelcontextprotocol/sdk/client/streamableHttp.js')).StreamableHTTPClientTransport,
          LATEST_PROTOCOL_VERSION: (await import('@modelcontextprotocol/sdk/types.js')).LATEST_PROTOCOL_VERSION,
          callTool: (client, params, options) => client.callTool(params, undefined, options),
      };
const { Client, StdioClientTransport, StreamableHTTPClientTransport, LATEST_PROTOCOL_VERSION } = sdk;

const table = loadTable();
const checks = new Checks(`[${v2 ? 'ts2' : 'ts'}${http ? '-http' : ''}]`);
const REQUEST_MS = 30_000;

const transport = http
    ? new StreamableHTTPClientTransport(new URL(second), {
          requestInit: { headers: { Authorization: `Bearer ${process.env.ONCE_INTEROP_BEARER}` } },
      })
    : new StdioClientTransport({
          command: first,
          args: serverArgs(table, second),
          stderr: 'pipe',
      });
let serverStderr = '';
transport.stderr?.on('data', (chunk) => {
    serverStderr += chunk.toString();
});

// The SDK calls setProtocolVersion(version) on its transport, when the transport has one, with the
// version the server chose in its initialize answer: the one place the negotiated version shows. The
// HTTP transport sends it as the MCP-Protocol-Version header, so its own method still runs.
let negotiated;
const ownSetProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
    negotiated = version;
    ownSetProtocolVersion?.(version);
};

const client = new Client({ name: v2 ? 'once-interop-ts2' : 'once-interop-ts', version: '0.0.0' }, { capabilities: {} });

/** The validator of a tool's outputSchema that the client itself uses. */
function outputValidator(tool) {
    if (!v2) return client.getToolOutputValidator(tool.name);
    // v2 keeps its validator provider (Ajv by default) on the client and compiles per tool.
    return tool.outputSchema ? client._jsonSchemaValidator.getValidator(tool.outputSchema) : undefined;
}

async function main() {
    const connected = await checks.attempt('connect and initialize', async () => {
        await withTimeout(client.connect(transport, { timeout: REQUEST_MS }), REQUEST_MS + 1000, 'initialize');
        checks.ok('connect and initialize');
        return true;
    });
    if (!connected) return;

    checks.check(
        `negotiated protocol version is ${LATEST_PROTOCOL_VERSION}`,
        negotiated === LATEST_PROTOCOL_VERSION && table.protocol_versions[0] === LATEST_PROTOCOL_VERSION,
        () => `server chose ${negotiated}; the SDK offered ${LATEST_PROTOCOL_VERSION}; calls.json prefers ${table.protocol_versions[0]}`,
    );
    const info = client.getServerVersion();
    checks.check(`serverInfo.name is ${table.server_name}`, info?.name === table.server_name, () => `got ${JSON.stringify(info)}`);
    checks.check('server declares the tools capability', Boolean(client.getServerCapabilities()?.tools), () =>
        `capabilities: ${JSON.stringify(client.getServerCapabilities())}`);

    // A server that declares the logging capability must accept logging/setLevel.
    if (client.getServerCapabilities()?.logging) {
        await checks.attempt('logging/setLevel (the server declares logging)', async () => {
            await client.setLoggingLevel('warning', { timeout: REQUEST_MS });
            checks.ok('logging/setLevel (the server declares logging)');
        });
    }

    await checks.attempt('ping', async () => {
        const pong = await client.ping({ timeout: REQUEST_MS });
        checks.check('ping', pong && typeof pong === 'object', () => `got ${JSON.stringify(pong)}`);
    });

    // tools/list, following nextCursor.
    const tools = await listAllTools(checks, client, REQUEST_MS);
    if (!tools) return;
    const names = tools.map((t) => t.name);
    console.log(`${checks.prefix} info tools: ${names.join(', ')}`);
    const queryTools = tools.filter((t) => t.name.startsWith(table.query_tool_prefix));
    checks.check('the server lists query tools', queryTools.length > 0, `no tool starts with ${table.query_tool_prefix}`);
    const gaps = coverageProblems(table, names);
    checks.check('the table calls every listed tool, and only those', gaps.length === 0, () => gaps.join('; '));

    if (!v2) client.cacheToolMetadata(tools);
    const validators = new Map(tools.map((tool) => [tool.name, outputValidator(tool)]));
    for (const tool of tools) {
        const validator = validators.get(tool.name);
        checks.check(`${tool.name} has an outputSchema the SDK validates with`, Boolean(tool.outputSchema && validator), () =>
            `outputSchema: ${JSON.stringify(tool.outputSchema)}`);
        if (validator) {
            const bare = validator({});
            checks.check(`${tool.name} outputSchema rejects {}`, !bare.valid, 'the validator accepts {}');
        }
    }

    // Every call of the table. v1 validates structuredContent against the outputSchema whenever it
    // is present, isError or not (callTool in client/index.js), so even a refusal must match the
    // schema; callTool would throw otherwise, and the acting calls are checked again with the
    // client's own validator (which is the only check of an isError answer under v2).
    await runCallTable(
        checks,
        table,
        names,
        (tool, args) => sdk.callTool(client, { name: tool, arguments: args }, { timeout: REQUEST_MS }),
        (call, name, result) => {
            const validator = validators.get(call.tool);
            if (!validator) return;
            const verdict = validator(result.structuredContent);
            checks.check(`${name}: structuredContent matches the outputSchema`, verdict.valid, () => verdict.errorMessage);
        },
    );

    // The session still works after the errors.
    await checks.attempt('ping after errors', async () => {
        await client.ping({ timeout: REQUEST_MS });
        checks.ok('ping after errors');
    });
}

try {
    await withTimeout(main(), 240_000, 'the whole ts client run');
} catch (err) {
    checks.fail('run', err?.message ?? err);
}

// Over HTTP: the session has an id, and DELETE ends it, after which the id is unknown (404).
if (http) {
    const id = transport.sessionId;
    checks.check('the server gave an Mcp-Session-Id', typeof id === 'string' && id.length > 0, () => `got ${id}`);
    await checks.attempt('DELETE ends the session', async () => {
        await transport.terminateSession();
        const after = await fetch(second, {
            method: 'POST',
            headers: {
                Authorization: `Bearer ${process.env.ONCE_INTEROP_BEARER}`,
                'Content-Type': 'application/json',
                Accept: 'application/json, text/event-stream',
                'Mcp-Session-Id': id,
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'ping' }),
        });
        checks.check('DELETE ends the session', after.status === 404, () => `a ping after DELETE got HTTP ${after.status}`);
    });
}

// Closing the client ends the server's stdin: the server must exit on its own, promptly and with 0
// (the SDK sends SIGTERM only after waiting 2 s).
const proc = transport._process;
const started = Date.now();
await client.close().catch((err) => checks.fail('close', err?.message ?? err));
if (proc) {
    const ms = Date.now() - started;
    checks.check('server exits 0 soon after stdin closes', proc.exitCode === 0 && proc.signalCode === null && ms < 2000, () =>
        `exit code ${proc.exitCode}, signal ${proc.signalCode}, after ${ms} ms`);
}
// On failure the server's stderr helps; it comes before the summary, which must be the last line.
if (checks.failed > 0 && serverStderr.trim()) {
    console.log('[ts] server stderr (last 2000 chars):');
    console.log(serverStderr.slice(-2000).replace(/^/gm, '[ts] | '));
}
process.exit(checks.summary());
