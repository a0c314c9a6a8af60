// Screenshots and figures of the window, run by hand (not in CI):
//
//   node tests/browser/shots.mjs [path to once] [--targets N] [--graph-only]
//
// Writes an N-target workspace (default 1,000) with bench/gen_workspace.py (cheap shell commands,
// one source file each) into target/screenshots/N/ws, runs its builds once (one package's source
// is removed, so that build fails and its dependents are skipped) and its tests once, adds two
// memory entries (one stale), proposes and applies a change set, proposes another, and evaluates
// twice in a Python evaluator. Then it starts `once serve` on it, opens the page in headless
// chromium (1440×900) and saves a PNG of every view, light and dark, into target/screenshots/N/,
// and prints the page load time (navigation start to the graph drawn, first load and three
// reloads without cache), the graph layout time, the page weight (bytes transferred, by kind)
// and the frame time while panning the graph (requestAnimationFrame intervals during a scripted
// 60-step drag at Fit). `--graph-only` skips the runs and everything but the graph (for 5,000).

import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

import { launchChromium, root, startServe, stopChild, until } from './browser.mjs';

const require = createRequire(join(root, 'tests', 'interop', 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const argv = process.argv.slice(2);
const flag = (name) => argv.indexOf(name);
const TARGETS = flag('--targets') >= 0 ? Number(argv[flag('--targets') + 1]) : 1000;
const graphOnly = flag('--graph-only') >= 0;
const positional = argv.filter((a, i) => !a.startsWith('--') && argv[i - 1] !== '--targets');
const binary = resolve(positional[0] ?? join(root, 'target', 'debug', 'once'));
const out = join(root, 'target', 'screenshots', String(TARGETS));
const ws = join(out, 'ws');
const state = join(out, 'state');
const env = { ...process.env, XDG_STATE_HOME: state, NO_COLOR: '1' };

function once(args, { json = true, check = true } = {}) {
    try {
        const text = execFileSync(binary, ['-C', ws, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });
        return json ? JSON.parse(text) : text;
    } catch (error) {
        if (check) throw error;
        return null;
    }
}

function log(text) {
    console.log(`shots: ${text}`);
}

// --- the workspace ------------------------------------------------------------------------------
rmSync(out, { recursive: true, force: true });
mkdirSync(state, { recursive: true });
execFileSync('python3', [join(root, 'bench', 'gen_workspace.py'), ws, '--targets', String(TARGETS), '--commands-only', '--files', '1'], { stdio: 'ignore' });
const broken = `pkg-${String(Math.floor(TARGETS * 0.7)).padStart(5, '0')}`;
rmSync(join(ws, 'packages', broken, 'src'), { recursive: true, force: true });
if (!graphOnly) {
log('running every build, then every test (a minute at most)');
once(['run', '--all', 'build'], { json: false, check: false });
once(['run', '--all', 'test'], { json: false, check: false });
once(['memory', 'add', '--title', 'Every package bundles its sources', '--kind', 'convention', '--tag', 'build',
    '--target', 'pkg-00000', '--body', 'The build concatenates src/ into out/bundle.txt; tests check that it is not empty.'], { json: false });
once(['memory', 'add', '--title', 'pkg-00010 reads a fixture', '--kind', 'gotcha', '--path', join(ws, 'packages', 'pkg-00010', 'src', 'file0.txt'),
    '--target', 'pkg-00010', '--body', 'Its test depends on the first source file; keep it non-empty.'], { json: false });
writeFileSync(join(ws, 'packages', 'pkg-00010', 'src', 'file0.txt'), 'changed after the note was written\n');
// One target with a Python evaluator, so the evaluators view has a transcript to show.
appendFileSync(join(ws, 'once.toml'), '\n[targets.analysis]\nkind = "command"\n\n[targets.analysis.evaluator]\nlanguage = "python"\n');
}

let server = null;
let browser = null;
let client = null;
try {
    server = await startServe(binary, ws, ['--allow-run', '--allow-edit'], { env });
    client = new Client({ name: 'once-shots', version: '0.0.0' }, { capabilities: {} });
    await client.connect(new StdioClientTransport({ command: binary, args: ['mcp', '--attach', ws], env, stderr: 'pipe' }), { timeout: 10000 });
    let changeId = null;
    let failedRun = null;
    if (!graphOnly) {
        const manifest = readFileSync(join(ws, 'once.toml'), 'utf8');
        const base = once(['query', 'workspace']).manifests.find((m) => m.path === 'once.toml').blake3;
        const propose = async (title, content) => (await client.callTool({
            name: 'once_change_set_propose',
            arguments: { title, rationale: 'The foundation package is used by most others; say what it holds.',
                changes: [{ action: 'replace', path: 'once.toml', base_blake3: base, content }] },
        })).structuredContent.result.id;
        const applied = await propose('Give pkg-00000 a description', manifest.replace('[targets.pkg-00000]\nkind = "command"', '[targets.pkg-00000]\nkind = "command"\ndescription = "Shared foundation"'));
        once(['changes', 'apply', applied], { json: false });
        changeId = applied;
        for (const code of ['sizes = [len(p) for p in ["pkg-00000", "pkg-00001"]]\nsum(sizes)', 'print("first", sizes[0])\nNone', 'max(sizes) / 0']) {
            await client.callTool({ name: 'once_eval', arguments: { target: 'analysis', code } });
        }
        const runs = once(['query', 'runs']).runs;
        failedRun = runs.find((r) => r.status === 'failed')?.run_id ?? runs[0].run_id;
    }

    browser = await launchChromium();
    browser.context.setDefaultTimeout(30000);
    const page = await browser.context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));

    // --- load time and weight -------------------------------------------------------------------
    await page.goto(server.url);
    const drawn = async () => {
        await until('the graph drawn', () => page.evaluate(() => document.documentElement.dataset.graphDrawnMs), 60000);
        return page.evaluate(() => {
            const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
            const bytes = {};
            for (const entry of entries) {
                const path = new URL(entry.name).pathname;
                const kind = path.startsWith('/api/') ? path : 'page (html, js, css)';
                bytes[kind] = (bytes[kind] ?? 0) + entry.transferSize;
            }
            return {
                ms: Number(document.documentElement.dataset.graphDrawnMs),
                layoutMs: Number(document.getElementById('graph').dataset.layoutMs),
                nodes: document.querySelectorAll('g.node').length,
                bytes,
            };
        });
    };
    const first = await drawn();
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const reloads = [];
    for (let i = 0; i < 3; i++) {
        await page.goto(`${server.origin}/#/graph`);
        await page.reload();
        reloads.push(await drawn());
    }
    const total = Object.values(first.bytes).reduce((a, b) => a + b, 0);
    log(`${first.nodes} nodes`);
    log(`load (navigation start → graph drawn): first ${first.ms} ms; reloads without cache ${reloads.map((r) => r.ms).join(', ')} ms`);
    log(`graph layout: ${first.layoutMs} ms (reloads ${reloads.map((r) => r.layoutMs).join(', ')} ms)`);
    log(`page weight (bytes transferred): ${total} in all; ${Object.entries(first.bytes).map(([k, v]) => `${k} ${v}`).join(', ')}`);

    // --- frame time while panning ---------------------------------------------------------------
    await page.goto(`${server.origin}/#/graph`);
    await until('the graph drawn', () => page.evaluate(() => document.documentElement.dataset.graphDrawnMs), 60000);
    await page.locator('#zoom-fit').click();
    const box = await page.locator('#graph').boundingBox();
    await page.evaluate(() => {
        window.__frames = [];
        let last = performance.now();
        const step = (now) => {
            window.__frames.push(now - last);
            last = now;
            if (window.__frames.length < 100000 && !window.__stop) requestAnimationFrame(step);
        };
        requestAnimationFrame(step);
    });
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    for (let i = 0; i < 60; i++) {
        await page.mouse.move(box.x + box.width / 2 + Math.sin(i / 6) * 200, box.y + box.height / 2 + Math.cos(i / 6) * 120);
    }
    await page.mouse.up();
    const frames = await page.evaluate(() => {
        window.__stop = true;
        const f = window.__frames.slice(2).sort((a, b) => a - b);
        const at = (q) => f[Math.min(f.length - 1, Math.floor(q * f.length))];
        return { n: f.length, median: at(0.5), p95: at(0.95), max: f[f.length - 1] };
    });
    log(`frame time while panning at ${TARGETS} targets: median ${frames.median.toFixed(1)} ms, p95 ${frames.p95.toFixed(1)} ms, max ${frames.max.toFixed(1)} ms over ${frames.n} frames`);

    // --- one picture per view, light and dark ---------------------------------------------------
    const go = (hash) => page.evaluate((h) => { location.hash = h; }, hash);
    for (const scheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme: scheme });
        const shot = async (name) => {
            await page.waitForTimeout(400); // the last frame painted; pictures only, nothing asserted
            await page.screenshot({ path: join(out, `${name}-${scheme}.png`) });
            log(`wrote target/screenshots/${TARGETS}/${name}-${scheme}.png`);
        };
        await go('#/graph');
        await page.locator('#zoom-fit').click();
        await shot('graph-fit');
        await go(`#/target/${broken}`);
        await page.locator('#details h2').filter({ hasText: broken }).waitFor();
        await shot('graph-target');
        if (graphOnly) continue;
        await page.locator('#focus-mode').check();
        await shot('graph-focus');
        await page.locator('#focus-mode').uncheck();
        await go('#/graph');
        await page.locator('#graph-filter').fill('pkg-000');
        await page.locator('#zoom-fit').click();
        await shot('graph-filtered');
        await page.locator('#graph-filter').fill('');
        await go(`#/runs/${failedRun}`);
        await page.locator(`#timeline .action[data-action="${broken}:build"]`).waitFor();
        await shot('runs');
        await go(`#/changes/${changeId}`);
        await page.locator('pre.diff').waitFor();
        await shot('changes');
        await go('#/memory');
        await page.locator('#memory li[data-stale="true"]').click();
        await page.locator('#memory-entry h2').waitFor();
        await shot('memory');
        await go('#/evaluators');
        await page.locator('#evaluators').waitFor();
        await shot('evaluators');
    }
    if (errors.length) log(`script errors on the page: ${errors.join(' | ')}`);
} finally {
    await client?.close().catch(() => {});
    await browser?.close().catch(() => {});
    if (server) await stopChild(server.child);
}
