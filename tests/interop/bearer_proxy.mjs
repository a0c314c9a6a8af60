#!/usr/bin/env node
// Test-only loopback proxy: forwards every request to a `once serve` session with the session token
// added as `Authorization: Bearer`, for clients that cannot send a header of their own (the official
// conformance suite's server scenarios). It never weakens a check of the product: a Host or Origin
// that names the proxy is rewritten to name the session, any other one passes unchanged, so the
// session still refuses a foreign Host or Origin.
//
// The suite starts a new client for each scenario and none of them ends its session, while a `once
// serve` session serves one MCP client at a time. So before it forwards an `initialize`, the proxy
// ends the last session it saw with `DELETE`, as a client that closes properly does.
//
//   ONCE_INTEROP_BEARER=<token> node bearer_proxy.mjs <session port>
//
// Prints `listening on http://127.0.0.1:PORT` once it accepts, and runs until killed or until the
// process that started it is gone.

import http from 'node:http';

const target = Number(process.argv[2]);
const token = process.env.ONCE_INTEROP_BEARER;
if (!target || !token) {
    console.error('usage: ONCE_INTEROP_BEARER=<token> node bearer_proxy.mjs <session port>');
    process.exit(2);
}

let lastSession;

/** Ends the last session the proxy saw, if any (its answer does not matter). */
function endLastSession() {
    const session = lastSession;
    lastSession = undefined;
    if (!session) return Promise.resolve();
    return new Promise((resolve) => {
        const ending = http.request(
            {
                host: '127.0.0.1',
                port: target,
                method: 'DELETE',
                path: '/mcp',
                agent: false,
                headers: { host: `127.0.0.1:${target}`, authorization: `Bearer ${token}`, 'mcp-session-id': session },
            },
            (answer) => answer.resume().on('end', resolve),
        );
        ending.on('error', resolve);
        ending.end();
    });
}

const server = http.createServer((incoming, outgoing) => {
    const chunks = [];
    incoming.on('data', (chunk) => chunks.push(chunk));
    incoming.on('end', async () => {
        const body = Buffer.concat(chunks);
        let initialize = false;
        try {
            initialize = incoming.method === 'POST' && JSON.parse(body.toString('utf8'))?.method === 'initialize';
        } catch {
            // Not JSON: forwarded as it is, for the session to refuse.
        }
        if (initialize) await endLastSession();
        forward(incoming, body, outgoing);
    });
});

function forward(incoming, body, outgoing) {
    const own = server.address().port;
    const headers = { ...incoming.headers };
    for (const [name, from, to] of [
        ['host', `127.0.0.1:${own}`, `127.0.0.1:${target}`],
        ['host', `localhost:${own}`, `127.0.0.1:${target}`],
        ['origin', `http://127.0.0.1:${own}`, `http://127.0.0.1:${target}`],
        ['origin', `http://localhost:${own}`, `http://127.0.0.1:${target}`],
    ]) {
        if (headers[name]?.toLowerCase() === from) headers[name] = to;
    }
    headers.authorization = `Bearer ${token}`;
    const forwarded = http.request(
        { host: '127.0.0.1', port: target, method: incoming.method, path: incoming.url, headers, agent: false },
        (answer) => {
            const session = answer.headers['mcp-session-id'];
            if (session) lastSession = session;
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(outgoing);
        },
    );
    forwarded.on('error', (err) => {
        if (!outgoing.headersSent) outgoing.writeHead(502, { 'Content-Type': 'text/plain' });
        outgoing.end(`proxy: ${err.message}\n`);
    });
    // A client that leaves closes the forwarded connection too, so the session sees it leave.
    outgoing.on('close', () => forwarded.destroy());
    forwarded.end(body);
}

server.listen(0, '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
const parent = process.ppid;
setInterval(() => {
    if (process.ppid !== parent) process.exit(0);
}, 1000).unref();
