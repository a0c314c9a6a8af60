// Shared by the Node clients of the interop harness: the call table, a tiny check recorder that prints
// one line per check and the closing `N passed, N failed` line, and helpers for the result shape that
// `once mcp` promises (structuredContent: {"result": ...} plus a text block holding the same JSON, and
// for a tool that acts {"outcome", "message", "result"} with the word first in the text).

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));

/** The call table that all three clients share: `calls.json`, or the one ONCE_INTEROP_CALLS names
 *  (a file in this folder), for a workspace of another shape. */
export function loadTable() {
    const name = process.env.ONCE_INTEROP_CALLS || 'calls.json';
    return JSON.parse(readFileSync(join(here, name), 'utf8'));
}

/** Records checks; every check prints one line at once, so a hang shows how far it got. */
export class Checks {
    constructor(prefix) {
        this.prefix = prefix;
        this.passed = 0;
        this.failed = 0;
    }

    ok(name) {
        this.passed += 1;
        console.log(`${this.prefix} ok   ${name}`);
    }

    fail(name, detail) {
        this.failed += 1;
        const text = String(detail ?? '').replace(/\s+/g, ' ').slice(0, 600);
        console.log(`${this.prefix} FAIL ${name}: ${text}`);
    }

    /** Passes when `cond` is true, else fails with `detail` (a string or a function making one). */
    check(name, cond, detail) {
        if (cond) this.ok(name);
        else this.fail(name, typeof detail === 'function' ? detail() : detail);
        return Boolean(cond);
    }

    /** Runs `fn`; a throw is a failure of `name` (and returns undefined). */
    async attempt(name, fn) {
        try {
            return await fn();
        } catch (err) {
            this.fail(name, err?.stack?.split('\n').slice(0, 3).join(' | ') ?? err);
            return undefined;
        }
    }

    summary() {
        console.log(`${this.passed} passed, ${this.failed} failed`);
        return this.failed === 0 ? 0 : 1;
    }
}

/** `tool {"a":1}`: how a call is named in check lines. */
export function describeCall(tool, args) {
    return `${tool} ${JSON.stringify(args)}`;
}

/** The text of every text content block of a tool result, joined. */
export function textOf(result) {
    return (result?.content ?? [])
        .filter((block) => block?.type === 'text')
        .map((block) => block.text)
        .join('\n');
}

/**
 * Checks the shape every successful query answer has; returns a problem or null. The text block must
 * hold the same JSON as structuredContent (either the bare result or the whole {"result": ...}).
 */
export function resultShapeProblem(result) {
    if (result?.isError) return `isError: true: ${textOf(result).slice(0, 300)}`;
    const sc = result?.structuredContent;
    if (sc === null || typeof sc !== 'object') return `no structuredContent object (got ${JSON.stringify(sc)})`;
    if (!Object.hasOwn(sc, 'result')) return `structuredContent has no "result" key: ${JSON.stringify(sc).slice(0, 200)}`;
    const texts = (result.content ?? []).filter((block) => block?.type === 'text');
    if (texts.length === 0) return 'no text content block next to structuredContent';
    let parsed;
    try {
        parsed = JSON.parse(texts[0].text);
    } catch (err) {
        return `the text block is not JSON: ${err.message}`;
    }
    if (!isDeepStrictEqual(parsed, sc.result) && !isDeepStrictEqual(parsed, sc)) {
        return 'the text block does not hold the same JSON as structuredContent';
    }
    return null;
}

/** The server's command line for the stdio clients: the table's `server_flags` open the gates its
 *  acting calls need. */
export function serverArgs(table, workspace) {
    return ['--workspace', workspace, 'mcp', ...(table.server_flags ?? [])];
}

/** A call's arguments with each string `${name}` replaced by the value an earlier call saved as
 *  `name` (its type kept: a saved revision stays an integer). */
export function resolveArgs(args, saved) {
    const resolve = (value) => {
        if (typeof value === 'string') {
            const name = /^\$\{(\w+)\}$/.exec(value)?.[1];
            return name !== undefined && Object.hasOwn(saved, name) ? saved[name] : value;
        }
        if (Array.isArray(value)) return value.map(resolve);
        if (value !== null && typeof value === 'object') {
            return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
        }
        return value;
    };
    return resolve(args);
}

/** Records what an entry's `save` asks for: `{name: key}` saves `structuredContent.result[key]`. */
export function saveFrom(call, result, saved) {
    for (const [name, key] of Object.entries(call.save ?? {})) {
        const value = result?.structuredContent?.result?.[key];
        if (value !== undefined) saved[name] = value;
    }
}

/** The outcomes an entry accepts: `expect_outcome` is one word or a list of them. */
export function expectedOutcomes(call) {
    return Array.isArray(call.expect_outcome) ? call.expect_outcome : [call.expect_outcome];
}

/** Whether an `outcomes` entry is made: a call of a tool the server does not list is skipped when
 *  the entry says `when_listed` (a tool only some servers have, as the window tool of `once serve`). */
export function isMade(call, toolNames) {
    return !call.when_listed || toolNames.includes(call.tool);
}

/** The words of a tool that acts, and the ones that come with isError. */
const OUTCOMES = ['done', 'refused', 'busy', 'problem', 'none'];
const ERROR_OUTCOMES = ['refused', 'busy', 'problem'];

/**
 * Checks the answer of a tool that acts against an `outcomes` entry of the table; returns a problem
 * or null. structuredContent is {outcome, message[, result]} whether or not isError is set, and the
 * text starts with the word.
 */
export function outcomeProblem(result, call) {
    const sc = result?.structuredContent;
    if (sc === null || typeof sc !== 'object') return `no structuredContent object (got ${JSON.stringify(sc)})`;
    const extra = Object.keys(sc).filter((key) => !['outcome', 'message', 'result'].includes(key));
    if (extra.length > 0) return `structuredContent has keys beyond outcome, message and result: ${extra.join(', ')}`;
    if (!OUTCOMES.includes(sc.outcome)) return `outcome ${JSON.stringify(sc.outcome)} is not one of the five words`;
    if (!expectedOutcomes(call).includes(sc.outcome)) return `outcome ${sc.outcome}, expected ${expectedOutcomes(call).join(' or ')}: ${sc.message}`;
    if (typeof sc.message !== 'string' || sc.message.length === 0) return 'no message';
    if (Boolean(result.isError) !== ERROR_OUTCOMES.includes(sc.outcome)) return `isError ${result.isError} with outcome ${sc.outcome}`;
    if (!textOf(result).startsWith(`${sc.outcome}: ${sc.message}`)) return `the text does not start with "${sc.outcome}: <message>": ${textOf(result).slice(0, 200)}`;
    if (call.expect_text && !sc.message.includes(call.expect_text)) return `the message does not mention ${call.expect_text}: ${sc.message}`;
    return null;
}

/** Every listed tool has at least one call in the table (acting tools in `outcomes`), and every tool
 *  the table names is listed, except where an entry says it is not (`unlisted`) or may not be
 *  (`when_listed`). */
export function coverageProblems(table, toolNames) {
    const problems = [];
    const entries = [...table.calls, ...table.errors, ...(table.outcomes ?? [])];
    const called = new Set(entries.map((c) => c.tool));
    for (const name of toolNames) {
        if (!called.has(name)) problems.push(`listed tool ${name} has no call in the table`);
    }
    for (const entry of entries) {
        if (!entry.unlisted && !entry.when_listed && !toolNames.includes(entry.tool)) {
            problems.push(`the table names ${entry.tool}, which the server does not list`);
        }
    }
    return [...new Set(problems)];
}

/** Rejects after `ms` so that a hung server fails the check instead of hanging the run. */
export function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Where `actual` differs from the part `expected` (objects: the keys given; arrays: in full), or null. */
export function mismatch(expected, actual, path = 'result') {
    if (Array.isArray(expected)) {
        if (!Array.isArray(actual) || actual.length !== expected.length) {
            return `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)?.slice(0, 200)}`;
        }
        for (let i = 0; i < expected.length; i += 1) {
            const problem = mismatch(expected[i], actual[i], `${path}[${i}]`);
            if (problem) return problem;
        }
        return null;
    }
    if (expected !== null && typeof expected === 'object') {
        if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) {
            return `${path}: expected an object, got ${JSON.stringify(actual)?.slice(0, 200)}`;
        }
        for (const [key, value] of Object.entries(expected)) {
            const problem = mismatch(value, actual[key], `${path}.${key}`);
            if (problem) return problem;
        }
        return null;
    }
    return isDeepStrictEqual(expected, actual) ? null : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)?.slice(0, 200)}`;
}

/** Runs the call table through `callTool(tool, args)`, a client's own call (which validates each
 *  answer as that client does): every valid call (following cursors where the entry says so), the
 *  calls that must be tool errors, the acting calls with their outcome words (saving ids for later
 *  entries), and an unknown tool. `onOutcome(call, name, result)`, when given, checks an acting
 *  call's answer further (the TypeScript v1 client validates isError answers again with its own
 *  validator). `names` are the listed tools, for `when_listed` entries. */
export async function runCallTable(checks, table, names, callTool, onOutcome) {
    for (const call of table.calls) {
        let args = call.args;
        let pages = 0;
        const seenCursors = new Set();
        for (;;) {
            const name = describeCall(call.tool, args);
            const result = await checks.attempt(name, () => callTool(call.tool, args));
            if (result === undefined) break;
            const problem = resultShapeProblem(result);
            if (!checks.check(name, problem === null, problem)) break;
            if (call.expect && pages === 0) {
                const wrong = mismatch(call.expect, result.structuredContent.result);
                checks.check(`${name} answers as calls.json expects`, wrong === null, wrong);
            }
            pages += 1;
            if (!call.follow_cursor) break;
            const next = result.structuredContent.result?.[call.follow_cursor];
            if (next === undefined || next === null) {
                checks.check(`${call.tool} paging gives at least ${call.min_pages} pages`, pages >= (call.min_pages ?? 1), `only ${pages}`);
                break;
            }
            if (!checks.check(`${call.tool} ${call.follow_cursor} is a new string`, typeof next === 'string' && !seenCursors.has(next), () =>
                `got ${JSON.stringify(next)}`)) break;
            seenCursors.add(next);
            args = { ...call.args, cursor: next };
            if (pages > 50) {
                checks.fail(`${call.tool} paging ends`, 'more than 50 pages');
                break;
            }
        }
    }

    // Calls that must fail as a tool error, with a message for the model.
    for (const call of table.errors) {
        const name = `${describeCall(call.tool, call.args)} is a tool error`;
        const result = await checks.attempt(name, () => callTool(call.tool, call.args));
        if (result === undefined) continue;
        const text = textOf(result);
        checks.check(name, result.isError === true && text.includes(call.expect_text), () =>
            `isError: ${result.isError}, text: ${text.slice(0, 300)}`);
    }

    // Tools that act: the outcome word, also on an error.
    const saved = {};
    for (const call of (table.outcomes ?? []).filter((c) => isMade(c, names))) {
        const args = resolveArgs(call.args, saved);
        const name = `${describeCall(call.tool, args)} answers ${expectedOutcomes(call).join(' or ')}`;
        const result = await checks.attempt(name, () => callTool(call.tool, args));
        if (result === undefined) continue;
        saveFrom(call, result, saved);
        const problem = outcomeProblem(result, call);
        checks.check(name, problem === null, problem);
        onOutcome?.(call, name, result);
    }

    // An unknown tool: a tool error (isError) the model can read, not a crash of the session.
    {
        const name = `unknown tool ${table.unknown_tool} is a tool error`;
        const result = await checks.attempt(name, () => callTool(table.unknown_tool, {}));
        if (result !== undefined) {
            checks.check(name, result.isError === true && textOf(result).length > 0, () => `got ${JSON.stringify(result).slice(0, 300)}`);
        }
    }
}

/** Every tool `client.listTools` lists, following `nextCursor` (at most 50 pages), checked as
 *  `tools/list`; `undefined` when the listing failed. */
export async function listAllTools(checks, client, ms) {
    const tools = [];
    const listed = await checks.attempt('tools/list', async () => {
        let cursor;
        let pages = 0;
        do {
            const page = await client.listTools(cursor ? { cursor } : {}, { timeout: ms });
            tools.push(...page.tools);
            cursor = page.nextCursor;
            pages += 1;
        } while (cursor && pages < 50);
        checks.check('tools/list', !cursor && tools.length > 0, () => `pages: ${pages}, tools: ${tools.length}, cursor left: ${cursor}`);
        return true;
    });
    return listed ? tools : undefined;
}
