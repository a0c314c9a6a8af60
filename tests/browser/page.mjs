// The window's browser tests: `once serve --allow-run --allow-edit` on a copy of examples/starter,
// its page in headless chromium, and an MCP client attached to the same session (the TypeScript
// SDK through `once mcp --attach`), so every check is what a person would see while an agent works.
//
//   node tests/browser/page.mjs [path to once, default target/debug/once]
//
// Prints one line per check and closes with `N passed, N failed`; also prints four figures, the
// time from an MCP call's answer to the page showing its effect (each must be under a second).
// Every wait has a deadline, and the server, the MCP bridge and chromium are stopped at the end,
// whatever happened.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Checks } from '../interop/lib.mjs';
import { CHROMIUM, launchChromium, root, startServe, stopChild, until } from './browser.mjs';

const require = createRequire(join(root, 'tests', 'interop', 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const binary = resolve(process.argv[2] ?? join(root, 'target', 'debug', 'once'));
const WAIT_MS = 10000;
const checks = new Checks('browser');

if (!existsSync(binary)) {
    console.log(`browser: no once binary at ${binary}: build it with cargo build -p once`);
    checks.fail('setup', 'no binary');
    process.exit(checks.summary());
}
if (!existsSync(CHROMIUM)) {
    console.log(`browser: ${CHROMIUM} is missing: run scripts/install-test-deps (as root) or apt-get install chromium`);
    checks.fail('setup', 'no chromium');
    process.exit(checks.summary());
}

// A private copy of the starter workspace, plus a target whose command prints a line, waits for
// a file (at most 30 s), then prints another: the log must show the first line while it waits.
const scratch = mkdtempSync(join(tmpdir(), 'once-page-'));
const ws = join(scratch, 'ws');
const state = join(scratch, 'state');
const release = join(scratch, 'release');
cpSync(join(root, 'examples', 'starter'), ws, { recursive: true, filter: (src) => !src.includes('/.once') });
appendFileSync(join(ws, 'once.toml'), `
[targets.slow]
kind = "command"
description = "Prints a line, waits for a file, prints another"

[targets.slow.capabilities.build]
command = "echo first line; n=0; while [ ! -e '${release}' ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done; echo second line"

[targets.broken]
kind = "command"
description = "Always fails"

[targets.broken.capabilities.build]
command = "echo about to fail; exit 3"

[targets.after-broken]
kind = "command"
description = "Never starts: it needs broken"
deps = ["broken"]

[targets.after-broken.capabilities.build]
command = "echo never"

[targets.gate]
kind = "command"
description = "Needs the web build and proto: an edge that spans layers"
deps = ["web", "proto"]

[targets.gate.capabilities.build]
command = "true"

[targets.py]
kind = "command"
description = "A Python evaluator"

[targets.py.evaluator]
language = "python"
`);
const env = { ...process.env, XDG_STATE_HOME: state, NO_COLOR: '1' };
// A git repository, so the affected mode has a HEAD to compare the working tree with.
const git = (...args) => execFileSync('git', ['-C', ws, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { stdio: 'ignore' });
git('init', '-q');
git('add', '-A');
git('commit', '-qm', 'start');

function once(...args) {
    return JSON.parse(execFileSync(binary, ['-C', ws, ...args], { env, encoding: 'utf8' }));
}

/** A plain HTTP request from Node, with exactly the headers given (Host included). */
function rawRequest(port, { method = 'GET', path = '/', headers = {}, body = null }) {
    return new Promise((resolvePromise, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method, path, headers, timeout: WAIT_MS }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => (text += chunk));
            res.on('end', () => resolvePromise({ status: res.statusCode, headers: res.headers, text }));
        });
        req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${WAIT_MS} ms`)));
        req.on('error', reject);
        if (body !== null) req.setHeader('Content-Length', Buffer.byteLength(body));
        if (body !== null) req.write(body);
        req.end();
    });
}

/** Only the status of a request from Node: resolves once the head arrives, then hangs up (an
 *  event stream that opened would otherwise never end). */
function statusOf(port, { method = 'GET', path = '/', headers = {}, body = null }) {
    return new Promise((resolvePromise, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method, path, headers, timeout: WAIT_MS }, (res) => {
            resolvePromise(res.statusCode);
            res.destroy();
        });
        req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${WAIT_MS} ms`)));
        req.on('error', reject);
        if (body !== null) req.setHeader('Content-Length', Buffer.byteLength(body));
        if (body !== null) req.write(body);
        req.end();
    });
}

/** The structured result of an MCP tool call, or a thrown error with its text. */
async function call(client, name, args) {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 30000 });
    if (result.isError) throw new Error(`${name}: ${result.content?.map((c) => c.text).join(' ')}`);
    return result.structuredContent?.result ?? JSON.parse(result.content[0].text);
}

/** What a tool that acts answered, whatever the outcome: `{outcome, message, result}`. */
async function act(client, name, args) {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 30000 });
    return result.structuredContent;
}

function manifestHash(path) {
    return once('query', 'workspace').manifests.find((m) => m.path === path)?.blake3;
}

let server = null;
let browser = null;
let client = null;
const figures = [];
try {
    // The session's registry entry goes to the private state folder, where the bridge finds it.
    server = await startServe(binary, ws, ['--allow-run', '--allow-edit'], { env });
    browser = await launchChromium();
    browser.context.setDefaultTimeout(WAIT_MS);
    const page = await browser.context.newPage();
    const pageErrors = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    // 1. No way in without the login link; with it, one node per target.
    await checks.attempt('without the login token the page shows nothing and its API is refused', async () => {
        const response = await page.goto(`${server.origin}/`);
        const note = await page.locator('#view .error').textContent();
        const api = await rawRequest(server.port, { path: '/api/session', headers: { Host: `127.0.0.1:${server.port}` } });
        checks.check('without the login token the page shows nothing and its API is refused',
            response.ok() && note.includes('not logged in') && note.includes('once sessions --url') && api.status === 403,
            `page ${response.status()} saying ${JSON.stringify(note)}, /api/session ${api.status}`);
    });
    await checks.attempt('the login link opens the page with one node per target', async () => {
        const response = await page.goto(server.url);
        const total = once('query', 'targets').total;
        const count = await until('every target drawn', async () => {
            const n = await page.locator('svg#graph g.node').count();
            return n === total ? n : 0;
        }, WAIT_MS);
        const path = new URL(page.url()).pathname;
        checks.check('the login link opens the page with one node per target',
            response.ok() && path === '/' && count === total && total === 9,
            `status ${response.status()}, at ${page.url()}, ${count} nodes for ${total} targets`);
        const header = await page.locator('#workspace').textContent();
        checks.check('the header names the workspace', header === ws, `header: ${header}`);
    });

    // 4. Plain HTTP: the page key does not let another origin or host in, nor a POST without
    //    the CSRF token.
    await checks.attempt('foreign Origin, foreign Host and a POST without CSRF get 403', async () => {
        const key = await page.evaluate(() => sessionStorage.getItem('once-key'));
        const cookies = await browser.context.cookies();
        checks.check('the login sets no cookie and leaves the key in sessionStorage',
            cookies.length === 0 && /^[0-9a-f]{32}$/.test(key ?? '') && !page.url().includes('login='),
            `cookies ${JSON.stringify(cookies)}, key ${key}, at ${page.url()}`);
        const host = `127.0.0.1:${server.port}`;
        const own = await rawRequest(server.port, { path: '/api/session', headers: { Host: host, 'X-Once-Key': key } });
        const csrf = JSON.parse(own.text).csrf;
        checks.check('with the key and its own Host, /api/session answers', own.status === 200 && typeof csrf === 'string', `status ${own.status}`);
        const origin = await rawRequest(server.port, { path: '/api/session', headers: { Host: host, 'X-Once-Key': key, Origin: 'http://evil.example' } });
        checks.check('a foreign Origin gets 403', origin.status === 403, `status ${origin.status}`);
        const foreignHost = await rawRequest(server.port, { path: '/api/session', headers: { Host: `evil.example:${server.port}`, 'X-Once-Key': key } });
        checks.check('a foreign Host gets 403', foreignHost.status === 403, `status ${foreignHost.status}`);
        const post = (headers) => rawRequest(server.port, {
            method: 'POST', path: '/api/tool/once_query_targets', body: '{}',
            headers: { Host: host, 'X-Once-Key': key, Origin: server.origin, 'Content-Type': 'application/json', ...headers },
        });
        const noCsrf = await post({});
        checks.check('a POST without the CSRF token gets 403', noCsrf.status === 403, `status ${noCsrf.status}`);
        const withCsrf = await post({ 'X-Once-CSRF': csrf });
        checks.check('the same POST with the CSRF token answers', withCsrf.status === 200, `status ${withCsrf.status}: ${withCsrf.text.slice(0, 200)}`);
    });

    client = new Client({ name: 'once-browser-tests', version: '0.0.0' }, { capabilities: {} });
    await client.connect(new StdioClientTransport({
        command: binary, args: ['mcp', '--attach', ws], env, stderr: 'pipe',
    }), { timeout: WAIT_MS });

    // 5. The logged-in browser visits another loopback port (another user's server, a dev server
    //    with a hostile dependency). Whatever it sent there on its own, replayed against the
    //    window, opens nothing: not the session and its CSRF token, not the events, not a tool,
    //    not the Apply of a pending change set.
    await checks.attempt('what the browser sends another loopback port opens nothing', async () => {
        const planted = join(ws, 'PLANTED.md');
        const pending = await call(client, 'once_change_set_propose', {
            title: 'Plant a file', rationale: 'Nobody decided this',
            changes: [{ action: 'create', path: 'PLANTED.md', content: 'planted\n' }],
        });
        const received = [];
        const recorder = http.createServer((req, res) => {
            received.push({ method: req.method, url: req.url, headers: { ...req.headers } });
            res.writeHead(200, { 'Content-Type': 'text/html' });
            // The page also tries the window itself, with every credential the browser would add.
            res.end(`<!doctype html><img src="${server.origin}/api/session"><script>
                fetch('${server.origin}/api/session', { credentials: 'include', mode: 'no-cors' }).catch(() => {});
            </script>`);
        });
        await new Promise((done) => recorder.listen(0, '127.0.0.1', done));
        const other = `http://127.0.0.1:${recorder.address().port}`;
        const visitor = await browser.context.newPage();
        try {
            await visitor.goto(`${other}/`);
            await visitor.goto(`${other}/api/session`);
            await visitor.goto(`${other}/api/events`);
        } finally {
            await visitor.close();
            await new Promise((done) => recorder.close(done));
            recorder.closeAllConnections?.();
        }
        checks.check('the other port saw the browser\'s requests', received.length >= 3, `${received.length} requests`);
        const host = `127.0.0.1:${server.port}`;
        const replays = [
            ['GET', '/api/session'], ['GET', '/api/graph'], ['GET', '/api/changes'], ['GET', '/api/events'],
            ['GET', '/api/evaluators'], ['POST', `/api/changes/${pending.id}/apply`], ['POST', '/api/tool/once_query_targets'],
        ];
        const refused = [];
        const opened = [];
        for (const seen of received) {
            // Everything the browser sent, with the window's Host, as a replaying attacker would.
            const headers = Object.fromEntries(Object.entries(seen.headers)
                .filter(([name]) => !['host', 'content-length', 'connection'].includes(name)));
            headers.host = host;
            // Had /api/session answered, the attacker would know the CSRF token: use it.
            const session = await rawRequest(server.port, { path: '/api/session', headers });
            let csrf = '';
            try {
                csrf = JSON.parse(session.text).csrf ?? '';
            } catch {
                csrf = '';
            }
            for (const [method, path] of replays) {
                const extra = method === 'POST' ? { 'content-type': 'application/json', 'x-once-csrf': csrf } : {};
                const answer = await statusOf(server.port, { method, path, headers: { ...headers, ...extra }, body: method === 'POST' ? '{}' : null });
                (answer === 401 || answer === 403 ? refused : opened).push(`${method} ${path} → ${answer}`);
            }
        }
        checks.check('replayed against the window, every route is refused (401 or 403)',
            opened.length === 0 && refused.length === received.length * replays.length,
            `opened: ${opened.join(', ')}`);
        checks.check('the pending change set was not applied', !existsSync(planted), 'PLANTED.md was written');
    });

    // 2. A running action's output shows while it still runs.
    await checks.attempt('a running action\'s first line shows in pre#log while it runs', async () => {
        const started = await call(client, 'once_run', { target: 'slow:build', wait_seconds: 0, force: true });
        const runId = started.run_id;
        checks.check('once_run let the run go on', started.status === 'running' && runId, JSON.stringify(started));
        await page.evaluate((id) => { location.hash = `#/runs/${id}`; }, runId);
        const bar = page.locator('#timeline .action[data-action="slow:build"]');
        await bar.waitFor();
        // Named by what was asked and who asked, in the list and the header.
        const item = page.locator(`#runs li[data-run="${runId}"]`);
        await item.waitFor();
        const itemText = await item.textContent();
        const request = await page.locator('#run-request').textContent();
        const asker = await page.locator('#run-asker').textContent();
        checks.check('a run is named by its request and who asked',
            itemText.includes('slow:build') && itemText.includes('by once-browser-tests/0.0.0') && !itemText.includes(runId)
                && request === 'slow:build --force' && asker === 'asked by once-browser-tests/0.0.0',
            `list ${JSON.stringify(itemText)}, header ${JSON.stringify(request)} ${JSON.stringify(asker)}`);
        // Opened with no action picked, it shows the running one's log by itself.
        await until('the running action picked by itself', async () => (await page.locator('pre#log').getAttribute('data-action')) === 'slow:build', WAIT_MS);
        const listed = page.locator('#run-actions li.run-action[data-action="slow:build"]');
        await until('slow:build listed as running', async () => (await listed.getAttribute('data-status')) === 'running', WAIT_MS);
        checks.check('the run\'s actions are listed by name with their state, the running one picked',
            (await listed.getAttribute('aria-current')) === 'true'
                && (await page.locator('#run-actions li.group[data-group="running"]').count()) === 1,
            await page.locator('#run-actions').textContent());
        const durations = [await page.locator('#run-duration').textContent()];
        await until('the live duration to move on', async () => {
            const now = await page.locator('#run-duration').textContent();
            if (now !== durations[durations.length - 1]) durations.push(now);
            return durations.length >= 3;
        }, WAIT_MS, 100);
        checks.check('a running run\'s duration counts up live', !existsSync(release) && durations.length >= 3, durations.join(' → '));
        const liveCounts = await page.locator('#run-counts').textContent();
        checks.check('a running run\'s counts say how far it got', liveCounts.includes('0 of 1 done') && liveCounts.includes('1 running'), liveCounts);
        const startedAt = page.locator(`#runs li[data-run="${runId}"] time`);
        const [relative, absolute] = [await startedAt.textContent(), await startedAt.getAttribute('title')];
        checks.check('dates read relative, with the absolute one on hover',
            /^(just now|\d+ s ago)$/.test(relative) && /\d{4}/.test(absolute ?? ''), `${relative} / ${absolute}`);
        await bar.click();
        await until('the first line in pre#log', async () => (await page.locator('pre#log[data-action="slow:build"]').textContent())?.includes('first line'), WAIT_MS);
        const during = await call(client, 'once_query_runs', { run_id: runId });
        const logText = await page.locator('pre#log').textContent();
        checks.check('a running action\'s first line shows in pre#log while it runs',
            during.status === 'running' && !existsSync(release) && !logText.includes('second line'),
            `run ${during.status}, log ${JSON.stringify(logText)}`);
        await until('its bar to say running', async () => (await bar.getAttribute('data-status')) === 'running', WAIT_MS);
        checks.check('its bar says running while the command waits', !existsSync(release), 'released early');
        writeFileSync(release, '');
        await until('the second line in pre#log', async () => (await page.locator('pre#log').textContent())?.includes('second line'), WAIT_MS);
        await until('the bar to say succeeded', async () => (await bar.getAttribute('data-status')) === 'succeeded', WAIT_MS);
        checks.ok('the rest of the log and the end of the run show without a reload');
        const notes = await page.locator('#timeline .note').count();
        checks.check('the timeline places bars by their recorded start', notes === 0, 'it says start times are not recorded');
        const runItem = await until('the run listed as succeeded', async () =>
            (await page.locator(`#runs li[data-run="${runId}"]`).getAttribute('data-status')) === 'succeeded', WAIT_MS);
        checks.check('the runs list follows the run', runItem, 'not succeeded');
    });

    // 3. Change sets: Apply writes the file; Reject keeps the record with its reason; a set whose
    //    base moved is refused and writes nothing.
    await checks.attempt('change sets from MCP are applied and rejected from the page', async () => {
        await page.evaluate(() => { location.hash = '#/changes'; });
        await page.locator('#changes').waitFor();
        const packageJson = join(ws, 'web', 'package.json');
        const original = readFileSync(packageJson, 'utf8');
        const applied = original.replace('"private": true,', '"private": true,\n  "description": "applied from the page",');
        const proposed = await call(client, 'once_change_set_propose', {
            title: 'Describe the web package', rationale: 'So the registry says what it is',
            changes: [{ action: 'replace', path: 'web/package.json', content: applied, base_blake3: manifestHash('web/package.json') }],
        });
        const answered = Date.now();
        const item = page.locator(`#changes li[data-change-set="${proposed.id}"]`);
        await item.waitFor();
        figures.push(['change set proposed over MCP → listed on the page', Date.now() - answered]);
        await item.click();
        await page.locator('pre.diff').waitFor();
        const diffText = await page.locator('pre.diff').textContent();
        checks.check('the diff shows the added line', diffText.includes('+  "description": "applied from the page",'), diffText.slice(0, 400));
        const added = await page.locator('pre.diff span.add').count();
        checks.check('added lines are marked', added >= 1, `${added} added lines`);
        await page.locator('button#apply').click();
        await until('the outcome of Apply', async () => (await page.locator('#change-result').textContent()).startsWith('Done'), WAIT_MS);
        checks.check('Apply changes the file on disk', readFileSync(packageJson, 'utf8') === applied, readFileSync(packageJson, 'utf8'));
        await until('the set listed as applied', async () => (await item.getAttribute('data-status')) === 'applied', WAIT_MS);
        checks.check('an applied set has no buttons', (await page.locator('button#apply').count()) === 0, 'Apply still shown');
        await page.locator('#change-decision').waitFor();
        const decision = await page.locator('#change-decision').textContent();
        const appliedDiff = await page.locator('pre.diff').textContent();
        checks.check('an applied set says it was applied, when and by whom, and not that applying would be refused',
            decision.startsWith('Applied just now by a person in this window') && (await page.locator('#change-decision time[title]').count()) === 1
                && !appliedDiff.includes('would be refused') && appliedDiff.includes('applied; the file holds the proposed content'),
            `${decision} | ${appliedDiff.slice(0, 300)}`);
        const record = once('changes', 'show', proposed.id, '--json');
        checks.check('the change store records that the window applied it', record.decided_by === 'window', JSON.stringify({ decided_by: record.decided_by }));
        const author = await page.locator('#change-detail .asker').first().textContent();
        checks.check('the author reads as the client gave its name', author === 'once-browser-tests/0.0.0', author);

        const other = await call(client, 'once_change_set_propose', {
            title: 'Add notes', rationale: 'A place for notes',
            changes: [{ action: 'create', path: 'NOTES.md', content: 'notes\n' }],
        });
        await page.evaluate((id) => { location.hash = `#/changes/${id}`; }, other.id);
        await page.locator('input#reject-reason').fill('notes belong in memory');
        await page.locator('button#reject').click();
        await until('the outcome of Reject', async () => (await page.locator('#change-result').textContent()).startsWith('Done'), WAIT_MS);
        const rejected = once('changes', 'show', other.id, '--json');
        checks.check('a rejected set keeps its record with the reason',
            rejected.status === 'rejected' && rejected.reason === 'notes belong in memory' && rejected.decided_by === 'window' && !existsSync(join(ws, 'NOTES.md')),
            JSON.stringify({ status: rejected.status, reason: rejected.reason }));
        await until('the set listed as rejected', async () =>
            (await page.locator(`#changes li[data-change-set="${other.id}"]`).getAttribute('data-status')) === 'rejected', WAIT_MS);
        const shownReason = await page.locator('#change-detail').textContent();
        checks.check('the page shows the reason', shownReason.includes('notes belong in memory'), shownReason.slice(0, 300));

        const stale = await call(client, 'once_change_set_propose', {
            title: 'Rename the web package', rationale: 'A clearer name',
            changes: [{ action: 'replace', path: 'web/package.json', content: applied.replace('starter-web', 'shop-web'), base_blake3: manifestHash('web/package.json') }],
        });
        const edited = `${applied.trimEnd()}\n\n`;
        writeFileSync(packageJson, edited);
        await page.evaluate((id) => { location.hash = `#/changes/${id}`; }, stale.id);
        await page.locator('button#apply').click();
        await until('the refusal', async () => (await page.locator('#change-result').textContent()).startsWith('Refused'), WAIT_MS);
        const refusal = await page.locator('#change-result').textContent();
        checks.check('a set whose base changed is refused, with the reason shown, and writes nothing',
            refusal.length > 'Refused: '.length && readFileSync(packageJson, 'utf8') === edited
                && once('changes', 'show', stale.id, '--json').status === 'pending',
            `${refusal}; file ${readFileSync(packageJson, 'utf8') === edited ? 'unchanged' : 'changed'}`);
    });

    // 5. An agent points at something: the page goes there and marks it.
    await checks.attempt('once_window_show moves the page and marks the target', async () => {
        const shown = await call(client, 'once_window_show', { kind: 'target', id: 'core' });
        const answered = Date.now();
        await page.locator('g.node.focused[data-target="core"]').waitFor();
        const ms = Date.now() - answered;
        figures.push(['once_window_show answered → target marked on the page', ms]);
        const note = await page.locator('#focus-note').textContent();
        checks.check('once_window_show moves the page and marks the target',
            shown.pages >= 1 && page.url().includes('#/target/core') && note.includes('core'),
            `${JSON.stringify(shown)}, at ${page.url()}, note ${JSON.stringify(note)}, ${ms} ms`);
        await page.locator('#details h2').filter({ hasText: 'core' }).waitFor();
        checks.ok('the focused target\'s details are shown');
    });

    await checks.attempt('memory: a search finds entries and a stale one says why', async () => {
        const schema = join(ws, 'proto', 'schema', 'messages.txt');
        execFileSync(binary, ['-C', ws, 'memory', 'add', '--title', 'Schemas are concatenated', '--kind', 'gotcha',
            '--path', schema, '--body', 'The proto build joins every schema file.'], { env, stdio: 'ignore' });
        execFileSync(binary, ['-C', ws, 'memory', 'add', '--title', 'Reports are for people', '--kind', 'convention',
            '--body', 'Keep the report short.'], { env, stdio: 'ignore' });
        appendFileSync(schema, 'changed\n');
        await page.evaluate(() => { location.hash = '#/memory'; });
        await until('two entries listed', async () => (await page.locator('#memory li[data-entry]').count()) === 2, WAIT_MS);
        await page.locator('input#memory-search').fill('schema');
        await until('one entry found', async () => (await page.locator('#memory li[data-entry]').count()) === 1, WAIT_MS);
        const item = page.locator('#memory li[data-entry]');
        const stale = await item.getAttribute('data-stale');
        const reason = await item.locator('.stale-reason').textContent();
        checks.check('memory: a search finds entries and a stale one says why',
            stale === 'true' && reason.includes('proto/schema/messages.txt') && reason.includes('changed'),
            `data-stale ${stale}, reason ${JSON.stringify(reason)}`);
        await item.press('Enter');
        await until('the entry shown', async () => (await page.locator('#memory-entry').textContent()).includes('joins every schema file'), WAIT_MS);
        checks.ok('memory: Enter on an entry shows it in full');
    });

    await checks.attempt('a run from MCP recolours its node on the open graph', async () => {
        await page.evaluate(() => { location.hash = '#/graph'; });
        const node = page.locator('g.node[data-target="broken"]');
        await node.waitFor();
        const before = await node.getAttribute('data-status');
        const ended = await act(client, 'once_run', { target: 'after-broken:build', wait_seconds: 60 });
        const answered = Date.now();
        await until('the node to turn failed', async () => (await node.getAttribute('data-status')) === 'failed', WAIT_MS, 10);
        figures.push(['run ended over MCP → its node failed on the open graph', Date.now() - answered]);
        checks.check('a run from MCP recolours its node on the open graph',
            before === 'none' && ended.outcome === 'problem' && ended.result.status === 'failed',
            `before ${before}, run ${JSON.stringify(ended).slice(0, 200)}`);
        const skipped = page.locator('g.node[data-target="after-broken"]');
        await until('its dependent to show skipped', async () => (await skipped.getAttribute('data-status')) === 'skipped', WAIT_MS);
        await page.evaluate(() => { location.hash = '#/target/after-broken'; });
        await until('the skipped target\'s panel', async () => (await page.locator('#target-status').textContent().catch(() => '')) === 'skipped', WAIT_MS);
        const reason = await page.locator('#target-reason').textContent();
        checks.check('a target skipped in its last run shows as skipped with the reason, on the graph and in its panel',
            reason.includes('`broken:build` failed') && (await skipped.locator('title').textContent()).includes('broken:build'),
            reason);
    });

    await checks.attempt('an evaluation over MCP shows in the evaluators view', async () => {
        await page.evaluate(() => { location.hash = '#/evaluators'; });
        await page.locator('#evaluators').waitFor();
        const evaluated = await act(client, 'once_eval', { target: 'py', code: "print('from the agent')\n6 * 7" });
        const answered = Date.now();
        const entry = page.locator('#evaluators section[data-target="py"] .entry');
        await until('the entry to show', async () => (await entry.count()) === 1, WAIT_MS, 10);
        figures.push(['evaluation answered over MCP → its entry on the page', Date.now() - answered]);
        const text = await entry.textContent();
        checks.check('an evaluation over MCP shows in the evaluators view',
            evaluated.outcome === 'done' && text.includes('6 * 7') && text.includes('42') && text.includes('from the agent'),
            `${JSON.stringify(evaluated).slice(0, 200)}; shown ${JSON.stringify(text)}`);
    });

    await checks.attempt('keyboard: Tab reaches a node and Enter opens it', async () => {
        await page.evaluate(() => { location.hash = '#/graph'; });
        await page.locator('g.node').first().waitFor();
        // From the top of the page, Tab walks the nav, the filters, the zoom buttons and the nodes.
        await page.evaluate(() => document.activeElement?.blur());
        const reached = new Set();
        for (let i = 0; i < 45; i++) {
            await page.keyboard.press('Tab');
            reached.add(await page.evaluate(() => {
                const el = document.activeElement;
                return el?.id || el?.dataset?.view || (el?.classList?.contains('node') ? `node:${el.dataset.target}` : el?.tagName);
            }));
        }
        const wanted = ['graph', 'runs', 'changes', 'memory', 'evaluators', 'graph-filter', 'graph-kind', 'graph-tag', 'zoom-in', 'zoom-out', 'zoom-fit', 'node:proto'];
        const missed = wanted.filter((w) => !reached.has(w));
        checks.check('keyboard: Tab reaches the nav, the filters, the zoom and every node', missed.length === 0, `not reached: ${missed.join(', ')}; reached ${[...reached].join(', ')}`);
        await page.locator('g.node[data-target="proto"]').focus();
        await page.keyboard.press('Enter');
        await until('the details of proto', async () => (await page.locator('#details h2').textContent()) === 'proto', WAIT_MS);
        checks.ok('keyboard: a node opens with Enter');
    });

    await checks.attempt('no edge passes through a tile it does not touch', async () => {
        await page.evaluate(() => { location.hash = '#/graph'; });
        await page.locator('g.node[data-target="gate"]').waitFor();
        const found = await page.evaluate(() => {
            // Every tile's box in the drawing's own units, from its transform and its rect.
            const tiles = [...document.querySelectorAll('g.node')].map((g) => {
                const m = /translate\(([-\d.e]+),([-\d.e]+)\)/.exec(g.getAttribute('transform'));
                const rect = g.querySelector('rect');
                return { name: g.dataset.target, x: Number(m[1]), y: Number(m[2]), w: Number(rect.getAttribute('width')), h: Number(rect.getAttribute('height')) };
            });
            const through = [];
            let longest = 0;
            for (const path of document.querySelectorAll('path.edge')) {
                const { from, to } = path.dataset;
                const length = path.getTotalLength();
                const a = tiles.find((t) => t.name === from);
                const b = tiles.find((t) => t.name === to);
                longest = Math.max(longest, Math.abs(b.y - a.y));
                for (let at = 0; at <= length; at += 2) {
                    const p = path.getPointAtLength(at);
                    for (const t of tiles) {
                        if (t.name === from || t.name === to) continue;
                        if (p.x > t.x + 1 && p.x < t.x + t.w - 1 && p.y > t.y + 1 && p.y < t.y + t.h - 1) through.push(`${from}→${to} through ${t.name}`);
                    }
                }
            }
            return { through: [...new Set(through)], longest, rowStep: Math.min(...tiles.map((t) => t.h)) };
        });
        checks.check('no edge passes through a tile it does not touch',
            found.through.length === 0 && found.longest > 3 * found.rowStep, `${found.through.join('; ')} (longest edge spans ${found.longest})`);
    });

    await checks.attempt('selecting a target highlights its edges, its dependencies and its dependents', async () => {
        await page.evaluate(() => { location.hash = '#/target/web'; });
        await until('web selected', async () => (await page.locator('g.node.selected[data-target="web"]').count()) === 1, WAIT_MS);
        const marked = await page.evaluate(() => ({
            upstream: [...document.querySelectorAll('g.node.upstream')].map((g) => g.dataset.target).sort(),
            downstream: [...document.querySelectorAll('g.node.downstream')].map((g) => g.dataset.target).sort(),
            touching: [...document.querySelectorAll('path.edge.touching')].map((p) => `${p.dataset.from}→${p.dataset.to}`).sort(),
            pathUp: document.querySelectorAll('path.edge.upstream').length,
        }));
        checks.check('selecting a target highlights its edges, its dependencies and its dependents',
            JSON.stringify(marked.upstream) === '["core","proto"]' && JSON.stringify(marked.downstream) === '["gate"]'
                && JSON.stringify(marked.touching) === '["gate→web","web→core"]' && marked.pathUp === 2,
            JSON.stringify(marked));
        await page.locator('#focus-depth').selectOption('1');
        await page.locator('#focus-mode').check();
        const shown = await page.evaluate(() => [...document.querySelectorAll('g.node:not(.hidden)')].map((g) => g.dataset.target).sort());
        checks.check('focus mode shows the target and N levels either way', JSON.stringify(shown) === '["core","gate","web"]', JSON.stringify(shown));
        await page.locator('#focus-mode').uncheck();
        const all = await page.locator('g.node:not(.hidden)').count();
        checks.check('leaving focus mode shows every target again', all === 9, `${all} shown`);
    });

    await checks.attempt('labels read at 11 px or more at Fit', async () => {
        await page.evaluate(() => { location.hash = '#/graph'; });
        await page.locator('g.node').first().waitFor();
        await page.locator('#zoom-fit').click();
        const smallest = await page.evaluate(smallestLabelPx);
        checks.check('labels read at 11 px or more at Fit', smallest >= 11, `smallest label ${smallest.toFixed(1)} px`);
    });

    await checks.attempt('the affected mode marks what the changes since HEAD reach, with the reason on hover', async () => {
        // By now proto/schema/messages.txt (the memory check) and web/package.json (the change
        // sets) differ from the commit; the command targets at the root take every file as an
        // input, so only `py`, which has no capability, is untouched.
        await page.locator('#affected-mode').check();
        await until('the affected targets marked', async () => (await page.locator('g.node.affected').count()) > 0, WAIT_MS);
        const marked = await page.evaluate(() => [...document.querySelectorAll('g.node.affected')].map((g) => g.dataset.target).sort());
        const proto = await page.locator('g.node[data-target="proto"] title').textContent();
        const gate = await page.locator('g.node[data-target="gate"] title').textContent();
        const note = await page.locator('#affected-note').textContent();
        checks.check('the affected mode marks what the changes since HEAD reach, with the reason on hover',
            ['core', 'gate', 'proto', 'report', 'web'].every((n) => marked.includes(n)) && !marked.includes('py')
                && proto.includes('affected: proto/schema/messages.txt: inside folder `proto`') && gate.includes('web/package.json')
                && note.startsWith(`${marked.length} targets affected by 2 changed files since HEAD`),
            `${JSON.stringify(marked)}; proto ${JSON.stringify(proto)}; gate ${JSON.stringify(gate)}; ${note}`);
        await page.locator('#affected-mode').uncheck();
        checks.check('leaving the affected mode clears the marks', (await page.locator('g.node.affected').count()) === 0, 'marks left');
    });

    await checks.attempt('a large graph opens grouped by folder, readable and interactive, and a group expands on click', async () => {
        await largeGraph(browser, pageErrors);
    });

    checks.check('what MCP calls do shows on the page within a second',
        figures.length === 4 && figures.every(([, ms]) => ms < 1000),
        figures.map(([what, ms]) => `${what}: ${ms} ms`).join('; '));
    checks.check('no script error on the page', pageErrors.length === 0, pageErrors.join(' | '));
} catch (error) {
    checks.fail('the browser tests ran to the end', error?.stack ?? error);
} finally {
    await client?.close().catch(() => {});
    await browser?.close().catch(() => {});
    if (server) await stopChild(server.child);
    rmSync(scratch, { recursive: true, force: true });
}

for (const [what, ms] of figures) console.log(`browser: figure: ${what}: ${ms} ms`);
process.exit(checks.summary());

/** In the page: the smallest label of a tile on screen, in CSS pixels (font size × zoom). */
function smallestLabelPx() {
    let smallest = Infinity;
    for (const text of document.querySelectorAll('#graph g.node:not(.hidden) text')) {
        const size = parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a;
        smallest = Math.min(smallest, size);
    }
    return smallest;
}

/** A 300-target workspace (bench/gen_workspace.py), its own session and page: grouped at Fit
 *  with labels of 11 px or more, a group tile's edges stand for its members' edges, a click
 *  expands it into its members, and Collapse folds it again. */
async function largeGraph(browser, pageErrors) {
    const big = mkdtempSync(join(tmpdir(), 'once-page-big-'));
    let bigServer = null;
    const bigPage = await browser.context.newPage();
    bigPage.on('pageerror', (error) => pageErrors.push(error.message));
    try {
        execFileSync('python3', [join(root, 'bench', 'gen_workspace.py'), join(big, 'ws'), '--targets', '300', '--commands-only'], { stdio: 'ignore' });
        bigServer = await startServe(binary, join(big, 'ws'), [], { env: { ...env, XDG_STATE_HOME: join(big, 'state') } });
        await bigPage.goto(bigServer.url);
        await bigPage.locator('g.node.group').first().waitFor();
        await bigPage.locator('#zoom-fit').click();
        const before = await bigPage.evaluate(() => ({
            groups: [...document.querySelectorAll('g.node.group')].map((g) => ({ id: g.dataset.group, members: Number(g.dataset.members) })),
            tiles: document.querySelectorAll('g.node').length,
            many: document.querySelectorAll('path.edge.many').length,
            mode: document.getElementById('graph-group').value,
        }));
        const members = before.groups.reduce((sum, g) => sum + g.members, 0);
        checks.check('a large graph opens grouped by folder, every target in one group tile',
            before.mode === 'folder' && before.groups.length >= 2 && before.tiles === before.groups.length && members === 300 && before.many > 0,
            JSON.stringify(before));
        const smallest = await bigPage.evaluate(smallestLabelPx);
        checks.check('grouped, a graph of 300 targets has labels of 11 px or more at Fit', smallest >= 11, `smallest label ${smallest.toFixed(1)} px`);
        const first = before.groups[0];
        await bigPage.locator(`g.node.group[data-group="${first.id}"]`).click();
        await until('the group expanded', async () => (await bigPage.locator('g.node[data-target]').count()) === first.members, WAIT_MS);
        const after = await bigPage.evaluate((id) => ({
            gone: document.querySelector(`g.node.group[data-group="${CSS.escape(id)}"]`) === null,
            groups: document.querySelectorAll('g.node.group').length,
            collapse: !document.getElementById('collapse-groups').hidden,
        }), first.id);
        checks.check('a click expands a group tile into its members',
            after.gone && after.groups === before.groups.length - 1 && after.collapse, JSON.stringify(after));
        await bigPage.locator('#collapse-groups').click();
        const folded = await bigPage.locator('g.node').count();
        checks.check('Collapse folds the opened groups again', folded === before.tiles, `${folded} tiles`);
        // A target inside a collapsed group, opened by its address, opens its group.
        await bigPage.evaluate(() => { location.hash = '#/target/pkg-00150'; });
        await until('pkg-00150 shown in its group', async () => (await bigPage.locator('g.node.selected[data-target="pkg-00150"]').count()) === 1, WAIT_MS);
        checks.ok('a target inside a collapsed group, opened by its address, opens its group');
    } finally {
        await bigPage.close().catch(() => {});
        if (bigServer) await stopChild(bigServer.child);
        rmSync(big, { recursive: true, force: true });
    }
}
