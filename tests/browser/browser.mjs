// Shared by the browser tests and tests/browser/shots.mjs: Debian's headless chromium driven by
// playwright-core (installed with the interop tests' packages), and `once serve` started on a
// workspace with its page URL read from its stderr. Everything started here is stopped by `stop`.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'tests', 'interop', 'package.json'));

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Resolves when `cond()` is truthy (answering its value), or throws after `ms`. */
export async function until(what, cond, ms = 10000, every = 25) {
    const deadline = Date.now() + ms;
    for (;;) {
        const value = await cond();
        if (value) return value;
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, every));
    }
}

/** Headless chromium with a fresh profile; `close()` also removes the profile. */
export async function launchChromium() {
    const { chromium } = require('playwright-core');
    const profile = mkdtempSync(join(tmpdir(), 'once-browser-'));
    const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_ARGS,
        viewport: { width: 1400, height: 900 },
        timeout: 30000,
    });
    return {
        context,
        async close() {
            try {
                await context.close();
            } finally {
                rmSync(profile, { recursive: true, force: true });
            }
        },
    };
}

/**
 * Starts `once serve` on `workspace` with `flags`, and answers once it printed its page URL:
 * {child, url (with ?login=TOKEN), origin, port, stderr()}. Throws if it exits or says nothing
 * within `ms`.
 */
export async function startServe(binary, workspace, flags = [], { env = process.env, ms = 20000 } = {}) {
    const child = spawn(binary, ['-C', workspace, 'serve', ...flags], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...env, NO_COLOR: '1' },
    });
    let err = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => (err += chunk));
    let exited = null;
    child.on('exit', (code, signal) => (exited = { code, signal }));
    const url = await until('the page URL on once serve\'s stderr', () => {
        if (exited) throw new Error(`once serve exited (${JSON.stringify(exited)}): ${err}`);
        return err.match(/http:\/\/127\.0\.0\.1:\d+\/\?login=[0-9A-Za-z_-]+/)?.[0];
    }, ms);
    const origin = new URL(url).origin;
    return { child, url, origin, port: Number(new URL(url).port), stderr: () => err };
}

/** Stops a child with SIGTERM, then SIGKILL after `ms`; resolves when it is gone. */
export async function stopChild(child, ms = 5000) {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    await gone;
    clearTimeout(timer);
}
