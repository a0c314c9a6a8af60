// Collapsing a large graph into group tiles, so that a workspace of thousands of targets draws
// as a few dozen tiles a person can read and pan at the screen's frame rate. Pure functions over
// the /api/graph value: they never touch the page, never fetch, and never change a target or an
// edge; a group only stands for its members, and its edges are the members' edges added up.
//
// A group is the targets of one folder (the folder that holds their own folders: `packages` for
// `packages/web`) or of one kind. A group larger than GROUP_SPLIT is cut by depth, deepest
// dependencies first, into at most GROUP_BANDS bands: cut by name instead, a chain of
// dependencies would become a chain of groups as tall as the graph is deep.
'use strict';

/** Above this many targets the graph opens grouped; at or below it, every target is a tile. */
const GROUP_ABOVE = 100;
const GROUP_SPLIT = 60;
const GROUP_BANDS = 8;
const SEVERITY = ['none', 'cancelled', 'cached', 'succeeded', 'skipped', 'queued', 'running', 'failed'];

/** The key a target is grouped by. */
function groupKey(target, mode) {
    if (mode === 'kind') return target.kind || 'no kind';
    const folder = target.folder ?? '';
    const cut = folder.lastIndexOf('/');
    return cut < 0 ? (folder ? '(top level)' : '(root)') : folder.slice(0, cut);
}

/** Each target's depth: the longest chain of dependencies below it (a cycle, which the graph
 *  forbids, leaves its members where Kahn's algorithm stops). */
function targetDepths(targets, edges) {
    const index = new Map(targets.map((t, i) => [t.name, i]));
    const dependents = targets.map(() => []);
    const waiting = new Int32Array(targets.length);
    for (const edge of edges) {
        const from = index.get(edge.from);
        const to = index.get(edge.to);
        if (from === undefined || to === undefined || from === to) continue;
        dependents[to].push(from);
        waiting[from]++;
    }
    const depth = new Int32Array(targets.length);
    const queue = [];
    for (let i = 0; i < targets.length; i++) if (waiting[i] === 0) queue.push(i);
    for (let head = 0; head < queue.length; head++) {
        const i = queue[head];
        for (const up of dependents[i]) {
            depth[up] = Math.max(depth[up], depth[i] + 1);
            if (--waiting[up] === 0) queue.push(up);
        }
    }
    return depth;
}

/** The worst status among `statuses`, by SEVERITY: a group with one failed member is failed. */
function worstStatus(statuses) {
    let worst = 'none';
    for (const status of statuses) if (SEVERITY.indexOf(status ?? 'none') > SEVERITY.indexOf(worst)) worst = status;
    return worst;
}

/**
 * The groups of `targets` by `mode` ('folder' or 'kind'): [{id, key, band, bands, members}],
 * members being target names in name order, ids stable while the graph keeps its shape.
 */
function makeGroups(targets, edges, mode) {
    const depth = targetDepths(targets, edges);
    const byKey = new Map();
    targets.forEach((target, i) => {
        const key = groupKey(target, mode);
        if (!byKey.has(key)) byKey.set(key, []);
        byKey.get(key).push(i);
    });
    const groups = [];
    for (const [key, members] of [...byKey].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
        const bands = members.length > GROUP_SPLIT ? Math.min(GROUP_BANDS, Math.ceil(members.length / GROUP_SPLIT)) : 1;
        members.sort((a, b) => depth[a] - depth[b] || (targets[a].name < targets[b].name ? -1 : 1));
        for (let band = 0; band < bands; band++) {
            const slice = members.slice(Math.floor((band * members.length) / bands), Math.floor(((band + 1) * members.length) / bands));
            if (!slice.length) continue;
            groups.push({
                id: `group:${mode}:${key}:${band}`,
                key,
                band,
                bands,
                depths: [depth[slice[0]], depth[slice[slice.length - 1]]],
                members: slice.map((i) => targets[i].name).sort(),
            });
        }
    }
    return groups;
}

/**
 * What the graph draws: every target of an expanded group (or of no group) as itself, every
 * other group as one unit, and the edges between units, each with how many target edges it
 * stands for. Answers {units: [{name, group?, target?}], edges: [{from, to, count}], unitOf}.
 */
function graphUnits(graph, groups, expanded) {
    const byName = new Map(graph.targets.map((t) => [t.name, t]));
    const unitOf = new Map();
    const units = [];
    const grouped = new Set();
    for (const group of groups) {
        if (expanded.has(group.id)) continue;
        const members = group.members.map((name) => byName.get(name));
        units.push({ name: group.id, kind: group.key, group: { ...group, status: worstStatus(members.map((t) => t.status)) } });
        for (const name of group.members) {
            unitOf.set(name, group.id);
            grouped.add(name);
        }
    }
    for (const target of graph.targets) {
        if (grouped.has(target.name)) continue;
        unitOf.set(target.name, target.name);
        units.push({ name: target.name, kind: target.kind, target });
    }
    const counted = new Map();
    for (const edge of graph.edges) {
        const from = unitOf.get(edge.from);
        const to = unitOf.get(edge.to);
        if (from === undefined || to === undefined || from === to) continue;
        const key = `${from}\u0000${to}`;
        const seen = counted.get(key);
        if (seen) seen.count++;
        else counted.set(key, { from, to, count: 1 });
    }
    return { units, edges: [...counted.values()], unitOf };
}

/** A group tile's label: short enough for a tile, the rest is in its title. */
function groupLabel(group) {
    const base = group.key.split('/').pop() || group.key;
    const part = group.bands > 1 ? ` ${group.band + 1}/${group.bands}` : '';
    return `${base}${part} ×${group.members.length}`;
}

/** A group tile's hover text: what it holds, which depths, and that a click opens it. */
function groupTitle(group) {
    const depths = group.bands > 1 ? `, depth ${group.depths[0]}–${group.depths[1]} (part ${group.band + 1} of ${group.bands})` : '';
    return `${group.key}${depths}: ${group.members.length} targets, ${group.status}. Click to expand`;
}
