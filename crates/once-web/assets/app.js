// The window of `once serve`: one page whose views are chosen by the URL's hash (#/graph,
// #/runs/ID, #/changes/ID, #/memory, #/evaluators, #/target/NAME). Every value it shows is one
// the session's JSON API returns, the same value `once query …` prints; the page reshapes
// nothing it sends back. It never builds markup from strings: server text goes into text nodes,
// so a target name or a log line cannot inject anything (the server's CSP forbids inline script
// and style as a second wall).
//
// Logging in: the login link's one-time token is posted to /api/login, which answers with the
// page key; the key lives in sessionStorage (this origin, this tab) and goes with every request
// as `X-Once-Key`. No cookie: a browser would send one to every port of 127.0.0.1.
//
// Live updates: the session's event stream (/api/events) says which part changed (`changed`) or
// asks the page to show something (`focus`); the page refetches what the current view shows.
// While a run is running, the shown action's log is polled every 300 ms from its last line.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
const LOG_POLL_MS = 300;
const LOG_PAGE_LINES = 500;
const LOG_MAX_LINES = 20000;
const STATUSES = ['succeeded', 'cached', 'running', 'queued', 'failed', 'skipped', 'cancelled', 'none'];
const TICK_MS = 1000;

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** Appends children (strings become text nodes; null, false and undefined are skipped). */
function append(el, children) {
    for (const child of children.flat(Infinity)) {
        if (child === null || child === undefined || child === false) continue;
        el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
}

/** Sets attributes: `on…` functions become listeners, `class` and `data-…` attributes as given. */
function setAttrs(el, attrs) {
    for (const [key, value] of Object.entries(attrs ?? {})) {
        if (value === null || value === undefined || value === false) continue;
        if (key.startsWith('on') && typeof value === 'function') {
            el.addEventListener(key.slice(2), value);
        } else {
            el.setAttribute(key, value === true ? '' : String(value));
        }
    }
    return el;
}

/** An HTML element: h('li', {class: 'x'}, 'text', child). */
function h(tag, attrs, ...children) {
    return append(setAttrs(document.createElement(tag), attrs), children);
}

/** An SVG element. */
function s(tag, attrs, ...children) {
    return append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children);
}

/** Makes a non-button element behave as one: focusable, Enter and Space activate it. */
function activatable(el, activate) {
    el.tabIndex = 0;
    el.addEventListener('click', activate);
    el.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
            event.preventDefault();
            activate(event);
        }
    });
    return el;
}

/** Replaces an element's children (skipping null, false and undefined, as `h` does). */
function fill(el, ...children) {
    el.replaceChildren();
    return append(el, children);
}

function byId(id) {
    return document.getElementById(id);
}

/** Escapes a value for an attribute selector. */
function sel(value) {
    return CSS.escape(String(value));
}

// ---------------------------------------------------------------------------------------------
// The JSON API

class ApiError extends Error {
    constructor(status, message, body) {
        super(message);
        this.status = status;
        this.body = body;
    }
}

const state = {
    key: null, // the page key, from sessionStorage: sent as X-Once-Key with every request
    session: null, // the value of /api/session
    graph: null, // the value of /api/graph
    layout: null, // the graph's layout, kept while its nodes and edges stay the same
    view: null, // {name, refreshOn: [...], refresh(), dispose(), route}
    renderSeq: 0, // bumped by every render, so a late answer never draws into a newer view
    focus: null, // {kind, id}: what the session last asked the page to show
    changeResults: new Map(), // change set id → {outcome, message}: kept across re-renders
    memorySelected: null,
    memoryQuery: '',
    firstSeenRunning: new Map(), // "run action" → ms when the page first saw it running
};

/** Sends a request; answers {status, body}, whatever the status. */
async function request(path, options = {}) {
    const init = { method: options.method ?? 'GET', credentials: 'omit', cache: 'no-store', headers: keyHeaders() };
    if (init.method !== 'GET') {
        init.headers['Content-Type'] = 'application/json';
        init.headers['X-Once-CSRF'] = state.session?.csrf ?? '';
        init.body = JSON.stringify(options.body ?? {});
    }
    const response = await fetch(path, init);
    let body = null;
    try {
        body = await response.json();
    } catch {
        body = { error: `${response.status} ${response.statusText}` };
    }
    return { status: response.status, body };
}

/** The header that proves a request comes from this page. */
function keyHeaders() {
    return { 'X-Once-Key': state.key ?? '' };
}

/** A request that must succeed: answers its body, or throws an ApiError with the server's words. */
async function api(path, options) {
    const { status, body } = await request(path, options);
    if (status < 200 || status >= 300) {
        throw new ApiError(status, body?.error ?? body?.message ?? `request failed: ${status}`, body);
    }
    return body;
}

/** Calls a read-only MCP tool through the session: answers its `result`. */
async function tool(name, args = {}) {
    const body = await api(`/api/tool/${encodeURIComponent(name)}`, { method: 'POST', body: args });
    return body.result;
}

/** A paragraph that says what went wrong, for a view that could not load. */
function errorNote(error) {
    return h('p', { class: 'error', role: 'alert' }, String(error?.message ?? error));
}

// ---------------------------------------------------------------------------------------------
// Routing: the hash names the view and, after a slash, the one thing it shows

function parseRoute(hash) {
    const parts = hash.replace(/^#\/?/, '').split('/');
    const name = parts[0] || 'graph';
    const id = parts.length > 1 ? decodeURIComponent(parts.slice(1).join('/')) : null;
    return { name, id };
}

const VIEWS = {
    graph: { nav: 'graph', render: renderGraphView, refreshOn: ['graph', 'runs'] },
    target: { nav: 'graph', render: renderGraphView, refreshOn: ['graph', 'runs'] },
    runs: { nav: 'runs', render: renderRunsView, refreshOn: ['runs'] },
    changes: { nav: 'changes', render: renderChangesView, refreshOn: ['changes'] },
    memory: { nav: 'memory', render: renderMemoryView, refreshOn: ['memory'] },
    evaluators: { nav: 'evaluators', render: renderEvaluatorsView, refreshOn: ['evaluators'] },
};

/** Draws the view the hash names, reusing the graph when only the selected target changes. */
async function route() {
    const { name, id } = parseRoute(location.hash);
    const spec = VIEWS[name] ?? VIEWS.graph;
    for (const link of document.querySelectorAll('nav a[data-view]')) {
        if (link.dataset.view === spec.nav) link.setAttribute('aria-current', 'page');
        else link.removeAttribute('aria-current');
    }
    if (state.focus && !focusMatchesRoute(state.focus, name, id)) clearFocus();
    const current = state.view;
    if (current && current.spec === spec && current.reroute) {
        current.reroute(id);
        return;
    }
    if (current && current.spec.nav === spec.nav && spec.nav === 'graph' && current.reroute) {
        current.reroute(id);
        return;
    }
    current?.dispose?.();
    const seq = ++state.renderSeq;
    const container = byId('view');
    container.replaceChildren();
    const view = { spec, seq, refresh: null, dispose: null, reroute: null };
    state.view = view;
    try {
        await spec.render(container, id, view);
    } catch (error) {
        if (seq === state.renderSeq) container.append(errorNote(error));
    }
}

/** True while `seq` is still the view on screen. */
function current(seq) {
    return state.renderSeq === seq;
}

// ---------------------------------------------------------------------------------------------
// Graph view: every target as a node in layers (dependents above their dependencies), coloured by
// its last run status, with pan, zoom, filters, a legend and the selected target's details.

/** Layers the graph: longest-path layers from the targets nobody depends on, then a few
 *  barycentre sweeps that order each layer by its neighbours' positions to cut crossings. */
function layoutGraph(targets, edges, aspect = 1.6) {
    const n = targets.length;
    const index = new Map(targets.map((t, i) => [t.name, i]));
    const deps = Array.from({ length: n }, () => []);
    const dependents = Array.from({ length: n }, () => []);
    for (const edge of edges) {
        const from = index.get(edge.from);
        const to = index.get(edge.to);
        if (from === undefined || to === undefined || from === to) continue;
        deps[from].push(to);
        dependents[to].push(from);
    }
    // Depth = the longest chain of dependencies below a target, computed in dependency order
    // (Kahn's algorithm); a cycle, which the graph forbids, would leave its members at depth 0.
    const depth = new Int32Array(n);
    const waiting = deps.map((d) => d.length);
    const queue = [];
    for (let i = 0; i < n; i++) if (waiting[i] === 0) queue.push(i);
    for (let head = 0; head < queue.length; head++) {
        const i = queue[head];
        for (const up of dependents[i]) {
            depth[up] = Math.max(depth[up], depth[i] + 1);
            if (--waiting[up] === 0) queue.push(up);
        }
    }
    let maxDepth = 0;
    for (let i = 0; i < n; i++) maxDepth = Math.max(maxDepth, depth[i]);
    const row = new Int32Array(n);
    for (let i = 0; i < n; i++) row[i] = maxDepth - depth[i];
    // A target that depends on nothing would sit in the bottom layer however high its users are;
    // it goes just below its lowest user instead, which keeps the bottom layer from holding
    // every leaf of the workspace.
    for (let i = 0; i < n; i++) {
        if (deps[i].length === 0 && dependents[i].length > 0) {
            let lowest = 0;
            for (const up of dependents[i]) lowest = Math.max(lowest, row[up]);
            row[i] = lowest + 1;
        }
    }
    const layers = Array.from({ length: maxDepth + 1 }, () => []);
    const byName = [...Array(n).keys()].sort((a, b) => (targets[a].name < targets[b].name ? -1 : 1));
    for (const i of byName) layers[row[i]].push(i);
    const pos = new Float64Array(n);
    const place = (layer) => {
        const span = Math.max(1, layer.length - 1);
        layer.forEach((i, k) => (pos[i] = k / span));
    };
    layers.forEach(place);
    const neighbours = (i) => deps[i].concat(dependents[i]);
    const sweep = (r, above) => {
        const layer = layers[r];
        const centre = new Map();
        for (const i of layer) {
            let sum = 0;
            let count = 0;
            for (const j of neighbours(i)) {
                if (above ? row[j] < r : row[j] > r) {
                    sum += pos[j];
                    count++;
                }
            }
            centre.set(i, count ? sum / count : pos[i]);
        }
        layer.sort((a, b) => centre.get(a) - centre.get(b));
        place(layer);
    };
    for (let pass = 0; pass < 4; pass++) {
        if (pass % 2 === 0) for (let r = 1; r < layers.length; r++) sweep(r, true);
        else for (let r = layers.length - 2; r >= 0; r--) sweep(r, false);
    }
    // A wide layer wraps onto several rows, so that a large graph fits a screen at a zoom where
    // its nodes are still tiles rather than dust; the rows of one layer stay between the layers
    // above and below, so every edge still points down. How many tiles a row holds follows the
    // canvas's shape, so the drawing fills it rather than a band of it.
    const widest = Math.max(1, ...layers.map((layer) => layer.length));
    const perRow = Math.max(4, Math.min(widest, Math.round(Math.sqrt(n * aspect * NODE.wrapDy / NODE.dx) * 1.1)));
    // Every tile sits on one grid of columns (whole multiples of dx), so the gaps between
    // columns are free in every row: edges run down those gaps and across the gaps between
    // rows, and so never pass through a tile they do not touch.
    const x = new Float64Array(n);
    const y = new Float64Array(n);
    const rowOf = new Int32Array(n);
    const rowY = [];
    let top = 0;
    for (const layer of layers) {
        if (!layer.length) continue;
        const rows = Math.ceil(layer.length / perRow);
        for (let part = 0; part < rows; part++) {
            const slice = layer.slice(part * perRow, (part + 1) * perRow);
            const shift = Math.floor((slice.length - 1) / 2);
            rowY.push(top + part * NODE.wrapDy);
            slice.forEach((i, k) => {
                x[i] = (k - shift) * NODE.dx;
                y[i] = top + part * NODE.wrapDy;
                rowOf[i] = rowY.length - 1;
            });
        }
        top += (rows - 1) * NODE.wrapDy + NODE.dy;
    }
    return { index, names: targets.map((t) => t.name), x, y, rowOf, rowY, deps, dependents, layers: layers.length, key: graphKey(targets, edges), aspect };
}

/** The orthogonal route of the edge from `a` (above) to `b` (below): down out of `a` into the
 *  gap under its row, along that gap to a gap between columns beside `b`, down that column gap
 *  to the gap over `b`'s row, along it to above `b`, and down into `b`. `spread` (-1..1) moves
 *  the edge within its gaps so that edges sharing a gap stay apart. */
function routeEdge(layout, a, b, spread) {
    const half = NODE.height / 2;
    const x1 = layout.x[a], y1 = layout.y[a] + half;
    const x2 = layout.x[b], y2 = layout.y[b] - half;
    const ra = layout.rowOf[a], rb = layout.rowOf[b];
    const rowGap = (r) => (layout.rowY[r + 1] - layout.rowY[r] - NODE.height);
    const below = layout.rowY[ra] + half + rowGap(ra) / 2 + spread * Math.min(6, rowGap(ra) / 4);
    if (rb === ra + 1) {
        return `M${x1},${y1} V${below} H${x2} V${y2}`;
    }
    const above = layout.rowY[rb] - half - rowGap(rb - 1) / 2 + spread * Math.min(6, rowGap(rb - 1) / 4);
    const side = x1 < x2 ? -1 : 1;
    const lane = x2 + side * (NODE.dx / 2) + spread * ((NODE.dx - NODE.width) / 2 - 3);
    return `M${x1},${y1} V${below} H${lane} V${above} H${x2} V${y2}`;
}

const NODE = { width: 150, height: 28, dx: 172, dy: 76, wrapDy: 48, labelScale: 0.45 };

/** What decides the layout: the names and the edges, not the statuses. */
function graphKey(targets, edges) {
    return JSON.stringify([targets.map((t) => t.name), edges.map((e) => [e.from, e.to])]);
}

function statusOf(target) {
    return target.status ?? 'none';
}

/** A label that fits a node: long names are cut, the whole name is in the node's title. */
function shortLabel(name) {
    return name.length > 20 ? `${name.slice(0, 19)}…` : name;
}

async function renderGraphView(container, selected, view) {
    const filter = h('input', { id: 'graph-filter', type: 'search', placeholder: 'name contains…', autocomplete: 'off' });
    const kind = h('select', { id: 'graph-kind' }, h('option', { value: '' }, 'all kinds'));
    const tag = h('select', { id: 'graph-tag' }, h('option', { value: '' }, 'all tags'));
    const svgEl = s('svg', { id: 'graph', role: 'group', 'aria-label': 'Dependency graph: dependents above their dependencies' });
    const viewport = s('g', { class: 'viewport' });
    svgEl.append(viewport);
    const details = h('aside', { id: 'details', 'aria-live': 'polite', 'aria-label': 'Target details' },
        h('p', { class: 'hint' }, 'Select a target (click it, or Tab to it and press Enter) to see its details.'));
    const counts = h('span', { class: 'graph-counts' });
    const focusMode = h('input', { type: 'checkbox', id: 'focus-mode' });
    const focusDepth = h('select', { id: 'focus-depth' }, [1, 2, 3, 5].map((n) => h('option', { value: n }, String(n))));
    const onFocusChange = () => {
        highlight(selectedName);
        fit();
    };
    focusMode.addEventListener('change', onFocusChange);
    focusDepth.addEventListener('change', onFocusChange);
    // Grouping: above GROUP_ABOVE targets the graph opens collapsed by folder (see groups.js);
    // a group tile opens on click, and Collapse closes every opened group again.
    const groupBy = h('select', { id: 'graph-group' },
        h('option', { value: 'folder' }, 'folder'), h('option', { value: 'kind' }, 'kind'), h('option', { value: 'none' }, 'nothing'));
    const collapse = h('button', { type: 'button', id: 'collapse-groups', hidden: true, onclick: () => { expanded.clear(); redraw(); } }, 'Collapse');
    groupBy.addEventListener('change', () => {
        expanded.clear();
        redraw();
    });
    // Affected mode: the targets `once query affected` names for the working tree (or since a
    // revision), marked, with the reason on hover.
    const affectedMode = h('input', { type: 'checkbox', id: 'affected-mode' });
    const affectedSince = h('input', { id: 'affected-since', type: 'text', placeholder: 'HEAD', size: 10, autocomplete: 'off', 'aria-label': 'Changes since this revision' });
    const affectedNote = h('span', { id: 'affected-note', class: 'muted', role: 'status' });
    affectedMode.addEventListener('change', () => showAffected());
    affectedSince.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') {
            affectedMode.checked = true;
            showAffected();
        }
    });
    const zoom = { x: 0, y: 0, k: 1 };
    const toolbar = h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Graph filters and zoom' },
        h('label', {}, 'Name ', filter),
        h('label', {}, 'Kind ', kind),
        h('label', {}, 'Tag ', tag),
        h('button', { type: 'button', id: 'zoom-in', 'aria-label': 'Zoom in', onclick: () => zoomBy(1.4) }, '+'),
        h('button', { type: 'button', id: 'zoom-out', 'aria-label': 'Zoom out', onclick: () => zoomBy(1 / 1.4) }, '−'),
        h('button', { type: 'button', id: 'zoom-fit', onclick: () => fit() }, 'Fit'),
        h('label', { title: 'Show only the selected target and the targets a few levels above and below it' }, focusMode, ' Focus'),
        h('label', {}, focusDepth, ' levels'),
        h('label', { title: 'Collapse the targets of one folder or kind into one tile' }, 'Group by ', groupBy), collapse,
        h('label', { title: 'Mark what `once query affected` names: the targets whose actions must run again after the changes since a revision (uncommitted ones included)' }, affectedMode, ' Affected since '),
        affectedSince, affectedNote,
        counts);
    container.append(h('div', { class: 'graph-view' }, toolbar, legend(), h('div', { class: 'graph-body' }, svgEl, details)));

    let nodes = new Map(); // unit name (a target's name, or a group's id) → g.node
    let edgePaths = new Map(); // name → the paths of the edges that touch it
    let matched = new Set(); // units the filters match, empty when no filter is set
    let units = null; // what is drawn: graphUnits(), with `groups`
    let affected = null; // target name → why `once query affected` names it, while the mode is on
    const expanded = new Set(); // ids of the groups opened by a click

    function applyZoom() {
        viewport.setAttribute('transform', `translate(${zoom.x},${zoom.y}) scale(${zoom.k})`);
        svgEl.classList.toggle('far', zoom.k < NODE.labelScale);
    }
    function zoomBy(factor, cx, cy) {
        const box = svgEl.getBoundingClientRect();
        const px = cx ?? box.width / 2;
        const py = cy ?? box.height / 2;
        const k = Math.min(4, Math.max(0.01, zoom.k * factor));
        zoom.x = px - ((px - zoom.x) * k) / zoom.k;
        zoom.y = py - ((py - zoom.y) * k) / zoom.k;
        zoom.k = k;
        applyZoom();
    }
    /** Fits the graph to the screen: the targets the filters match, or all of them. */
    function fit() {
        const layout = state.layout;
        const box = svgEl.getBoundingClientRect();
        if (!layout || !box.width || !layout.x.length) return;
        const hidden = new Set([...viewport.querySelectorAll('g.node.hidden')].map((g) => g.dataset.unit));
        const visible = hidden.size ? [...nodes.keys()].filter((name) => !hidden.has(name)) : null;
        const names = matched.size ? [...matched] : visible;
        const shown = names ? names.map((name) => layout.index.get(name)) : layout.x.keys();
        let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
        for (const i of shown) {
            minX = Math.min(minX, layout.x[i]);
            maxX = Math.max(maxX, layout.x[i]);
            minY = Math.min(minY, layout.y[i]);
            maxY = Math.max(maxY, layout.y[i]);
        }
        const w = maxX - minX + NODE.width + 40;
        const hgt = maxY - minY + NODE.height + 40;
        zoom.k = Math.min(1.5, box.width / w, box.height / hgt);
        zoom.x = box.width / 2 - ((minX + maxX) / 2) * zoom.k;
        zoom.y = box.height / 2 - ((minY + maxY) / 2) * zoom.k;
        applyZoom();
    }
    /** Pans so that a node is in the middle, at a zoom where labels show. */
    function centreOn(name) {
        const i = state.layout?.index.get(name);
        if (i === undefined) return;
        const box = svgEl.getBoundingClientRect();
        zoom.k = Math.max(zoom.k, 0.8);
        zoom.x = box.width / 2 - state.layout.x[i] * zoom.k;
        zoom.y = box.height / 2 - state.layout.y[i] * zoom.k;
        applyZoom();
    }

    // Pan by dragging the background or a node; a press that barely moves is a click.
    let drag = null;
    svgEl.addEventListener('pointerdown', (event) => {
        if (event.button !== 0) return;
        drag = { x: event.clientX, y: event.clientY, zx: zoom.x, zy: zoom.y, moved: false, id: event.pointerId };
    });
    svgEl.addEventListener('pointermove', (event) => {
        if (!drag || drag.id !== event.pointerId) return;
        const dx = event.clientX - drag.x;
        const dy = event.clientY - drag.y;
        if (!drag.moved && Math.hypot(dx, dy) < 4) return;
        if (!drag.moved) svgEl.setPointerCapture(event.pointerId);
        drag.moved = true;
        zoom.x = drag.zx + dx;
        zoom.y = drag.zy + dy;
        applyZoom();
    });
    const endDrag = (event) => {
        if (drag?.moved) {
            // The click that follows a drag must not select the node under the pointer.
            svgEl.addEventListener('click', (e) => e.stopPropagation(), { capture: true, once: true });
        }
        if (drag && svgEl.hasPointerCapture(event.pointerId)) svgEl.releasePointerCapture(event.pointerId);
        drag = null;
    };
    svgEl.addEventListener('pointerup', endDrag);
    svgEl.addEventListener('pointercancel', endDrag);
    svgEl.addEventListener('wheel', (event) => {
        event.preventDefault();
        const box = svgEl.getBoundingClientRect();
        zoomBy(Math.exp(-event.deltaY * 0.0015), event.clientX - box.left, event.clientY - box.top);
    }, { passive: false });
    svgEl.addEventListener('keydown', (event) => {
        if (event.target !== svgEl && !event.target.closest?.('g.node')) return;
        if (event.key === '+' || event.key === '=') zoomBy(1.4);
        else if (event.key === '-') zoomBy(1 / 1.4);
        else if (event.key === '0') fit();
    });

    /** Dims the nodes (and their edges) that the filters do not match. */
    function applyFilters() {
        const text = filter.value.trim().toLowerCase();
        const wantKind = kind.value;
        const wantTag = tag.value;
        let shown = 0;
        const dimmed = new Set();
        matched = new Set();
        const lit = new Set(); // units with at least one matching target
        for (const target of state.graph.targets) {
            const match = (!text || target.name.toLowerCase().includes(text))
                && (!wantKind || target.kind === wantKind)
                && (!wantTag || (target.tags ?? []).includes(wantTag));
            const unit = units.unitOf.get(target.name);
            if (match) {
                shown++;
                lit.add(unit);
            }
            if (match && (text || wantKind || wantTag)) matched.add(unit);
        }
        for (const [unit, g] of nodes) {
            g.classList.toggle('dim', !lit.has(unit));
            if (!lit.has(unit)) dimmed.add(unit);
        }
        for (const path of viewport.querySelectorAll('path.edge')) {
            path.classList.toggle('dim', dimmed.has(path.dataset.from) || dimmed.has(path.dataset.to));
        }
        counts.textContent = `${shown} of ${state.graph.targets.length} targets`;
    }
    filter.addEventListener('input', applyFilters);
    kind.addEventListener('change', applyFilters);
    tag.addEventListener('change', applyFilters);

    function fillSelect(select, values) {
        const keep = select.value;
        fill(select, select.firstChild ?? h('option', { value: '' }, 'all'));
        for (const value of values) select.append(h('option', { value }, value));
        select.value = values.includes(keep) ? keep : '';
    }

    /** Draws every unit (target or group tile) and edge; statuses alone change in place (see
     *  updateStatuses). */
    function draw() {
        const { targets } = state.graph;
        groupBy.value = groupMode;
        const groups = groupMode === 'none' ? [] : makeGroups(targets, state.graph.edges, groupMode);
        units = { ...graphUnits(state.graph, groups, expanded), groups };
        collapse.hidden = expanded.size === 0;
        const edges = units.edges;
        const key = graphKey(units.units, edges);
        if (state.layout?.key !== key) {
            const started = performance.now();
            const box = svgEl.getBoundingClientRect();
            state.layout = layoutGraph(units.units, edges, box.width && box.height ? box.width / box.height : 1.6);
            state.layout.ms = performance.now() - started;
        }
        state.graphShape = graphKey(targets, state.graph.edges);
        const layout = state.layout;
        const edgeLayer = s('g', { class: 'edges' });
        const nodeLayer = s('g', { class: 'nodes' });
        const half = NODE.height / 2;
        edgePaths = new Map();
        edges.forEach((edge, k) => {
            const a = layout.index.get(edge.from);
            const b = layout.index.get(edge.to);
            if (a === undefined || b === undefined) return;
            const spread = (((k * 7919) % 5) - 2) / 2;
            const path = s('path', {
                class: edge.count > 1 ? 'edge many' : 'edge', 'data-from': edge.from, 'data-to': edge.to,
                'data-count': edge.count > 1 ? edge.count : null,
                d: routeEdge(layout, a, b, spread),
            });
            if (edge.count > 1) path.append(s('title', {}, `${edge.count} dependencies`));
            for (const end of [edge.from, edge.to]) {
                if (!edgePaths.has(end)) edgePaths.set(end, []);
                edgePaths.get(end).push(path);
            }
            edgeLayer.append(path);
        });
        nodes = new Map();
        for (const unit of units.units) {
            const i = layout.index.get(unit.name);
            const at = `translate(${layout.x[i] - NODE.width / 2},${layout.y[i] - half})`;
            let g;
            if (unit.group) {
                const group = unit.group;
                g = s('g', {
                    class: 'node group', 'data-unit': unit.name, 'data-group': group.id, 'data-status': group.status,
                    'data-members': group.members.length, transform: at, role: 'button',
                    'aria-label': `group ${groupLabel(group)}, ${group.status}: expand`,
                },
                s('title', {}, groupTitle(group)),
                s('rect', { class: 'stack', x: 4, y: -4, width: NODE.width, height: NODE.height, rx: 6 }),
                s('rect', { width: NODE.width, height: NODE.height, rx: 6 }),
                s('text', { x: NODE.width / 2, y: half + 4.5, 'text-anchor': 'middle' }, shortLabel(groupLabel(group))));
                activatable(g, () => {
                    expanded.add(group.id);
                    redraw();
                });
            } else {
                const target = unit.target;
                g = s('g', {
                    class: 'node', 'data-unit': unit.name, 'data-target': target.name, 'data-status': statusOf(target),
                    transform: at, role: 'button', 'aria-label': nodeLabel(target),
                },
                s('title', {}, nodeTitle(target)),
                s('rect', { width: NODE.width, height: NODE.height, rx: 6 }),
                s('text', { x: NODE.width / 2, y: half + 4.5, 'text-anchor': 'middle' }, shortLabel(target.name)));
                activatable(g, () => {
                    location.hash = `#/target/${encodeURIComponent(target.name)}`;
                });
            }
            nodes.set(unit.name, g);
            nodeLayer.append(g);
        }
        fill(viewport, edgeLayer, nodeLayer);
        fillSelect(kind, [...new Set(targets.map((t) => t.kind))].sort());
        fillSelect(tag, [...new Set(targets.flatMap((t) => t.tags ?? []))].sort());
        svgEl.dataset.layoutMs = layout.ms.toFixed(1);
        applyFilters();
        markAffected();
    }

    /** Draws again after the grouping changed, keeping the selection's marks, and fits. */
    function redraw() {
        draw();
        highlight(selectedName);
        fit();
    }

    /** Opens the group that holds `name`, if one does; true when the drawing changed. */
    function reveal(name) {
        const unit = units?.unitOf.get(name);
        if (!unit || unit === name) return false;
        expanded.add(unit);
        draw();
        return true;
    }

    /** Asks `once_query_affected` (a page at a time) which targets the changes affect, and why. */
    async function showAffected() {
        if (!affectedMode.checked) {
            affected = null;
            affectedNote.textContent = '';
            markAffected();
            return;
        }
        affectedNote.textContent = 'asking…';
        const since = affectedSince.value.trim();
        const why = new Map();
        const add = (target, reason) => {
            if (!why.has(target)) why.set(target, []);
            if (!why.get(target).includes(reason)) why.get(target).push(reason);
        };
        let files = 0;
        try {
            let cursor = null;
            for (let page = 0; page < 50; page++) {
                // Every file with its owners (after the actions): the marks name the files that reach a target.
                const value = await tool('once_query_affected', { ...(since ? { since } : {}), ...(cursor ? { cursor } : {}), ownership: 'all', limit: 200 });
                files = value.files_total ?? files;
                for (const file of value.files ?? []) {
                    for (const owner of file.owners ?? []) add(owner.target, `${file.path}: ${owner.reasons.join('; ')}`);
                }
                for (const row of value.actions ?? []) add(row.action.split(':')[0], `${row.action}: ${row.reason}`);
                cursor = value.next_cursor;
                if (!cursor) break;
            }
        } catch (error) {
            affected = null;
            affectedNote.textContent = String(error.message ?? error);
            markAffected();
            return;
        }
        if (!affectedMode.checked) return;
        affected = why;
        affectedNote.textContent = `${plural(why.size, 'target', 'targets')} affected by ${plural(files, 'changed file', 'changed files')} since ${since || 'HEAD'}`;
        markAffected();
    }

    /** Marks the affected targets (and the groups that hold one), the reasons in their titles. */
    function markAffected() {
        svgEl.classList.toggle('has-affected', Boolean(affected));
        const reasons = new Map();
        for (const [name, why] of affected ?? []) {
            const unit = units.unitOf.get(name);
            if (!unit) continue;
            if (!reasons.has(unit)) reasons.set(unit, []);
            reasons.get(unit).push(unit === name ? why.join('\n') : `${name}: ${why[0]}`);
        }
        const drawn = new Map(units.units.map((u) => [u.name, u]));
        for (const [unit, g] of nodes) {
            const why = reasons.get(unit);
            g.classList.toggle('affected', Boolean(why));
            const title = g.querySelector('title');
            const shown = drawn.get(unit);
            const base = shown.group ? groupTitle(shown.group) : nodeTitle(shown.target);
            title.textContent = why ? `${base}\naffected: ${why.slice(0, 12).join('\n')}${why.length > 12 ? `\nand ${why.length - 12} more` : ''}` : base;
            if (why) g.dataset.affected = why[0];
            else delete g.dataset.affected;
        }
    }

    function updateStatuses() {
        const byName = new Map(state.graph.targets.map((t) => [t.name, t]));
        for (const unit of units.units) {
            const g = nodes.get(unit.name);
            if (!g) continue;
            if (unit.group) {
                unit.group.status = worstStatus(unit.group.members.map((name) => byName.get(name)?.status));
                g.dataset.status = unit.group.status;
                continue;
            }
            const target = byName.get(unit.name);
            unit.target = target;
            g.dataset.status = statusOf(target);
            g.setAttribute('aria-label', nodeLabel(target));
        }
        markAffected();
    }

    /** Marks the selected node and shows its details. */
    /** The targets within `levels` steps of `name` along `next` (every one when levels is
     *  Infinity), without `name` itself. */
    function reach(name, next, levels) {
        const layout = state.layout;
        const start = layout.index.get(name);
        const seen = new Set([start]);
        let frontier = [start];
        for (let level = 0; level < levels && frontier.length; level++) {
            const nextFrontier = [];
            for (const i of frontier) for (const j of next[i]) if (!seen.has(j)) { seen.add(j); nextFrontier.push(j); }
            frontier = nextFrontier;
        }
        seen.delete(start);
        return new Set([...seen].map((i) => layout.names[i]));
    }

    /** Marks the selected target's edges, everything it depends on (transitively) and
     *  everything that depends on it; in focus mode, hides what is more than N levels away. */
    function highlight(name) {
        for (const el of viewport.querySelectorAll('.upstream, .downstream, .touching, .hidden')) {
            el.classList.remove('upstream', 'downstream', 'touching', 'hidden');
        }
        svgEl.classList.toggle('has-selection', Boolean(name) && nodes.has(name));
        if (!name || !nodes.has(name) || !state.layout) return;
        // Highlighting walks the drawn graph: a group on the path lights up as one tile.
        const layout = state.layout;
        const deps = reach(name, layout.deps, Infinity);
        const users = reach(name, layout.dependents, Infinity);
        for (const dep of deps) nodes.get(dep)?.classList.add('upstream');
        for (const user of users) nodes.get(user)?.classList.add('downstream');
        for (const path of viewport.querySelectorAll('path.edge')) {
            const { from, to } = path.dataset;
            if (from === name || to === name) path.classList.add('touching');
            if ((from === name || deps.has(from)) && deps.has(to)) path.classList.add('upstream');
            if ((to === name || users.has(to)) && users.has(from)) path.classList.add('downstream');
        }
        if (focusMode.checked) {
            const levels = Number(focusDepth.value);
            const keep = new Set([name, ...reach(name, layout.deps, levels), ...reach(name, layout.dependents, levels)]);
            for (const [unit, g] of nodes) if (!keep.has(unit)) g.classList.add('hidden');
            for (const path of viewport.querySelectorAll('path.edge')) {
                if (!keep.has(path.dataset.from) || !keep.has(path.dataset.to)) path.classList.add('hidden');
            }
        }
    }

    async function select(name) {
        for (const g of viewport.querySelectorAll('g.node.selected')) g.classList.remove('selected');
        highlight(name);
        if (!name) {
            fill(details, h('p', { class: 'hint' }, 'Select a target (click it, or Tab to it and press Enter) to see its details.'));
            return;
        }
        const node = nodes.get(name);
        node?.classList.add('selected');
        if (state.focus?.kind === 'target' && state.focus.id === name) node?.classList.add('focused');
        fill(details, h('p', { class: 'hint' }, `Loading ${name}…`));
        const seq = view.seq;
        try {
            const value = await tool('once_query_target', { name });
            if (!current(seq)) return;
            const graphRow = state.graph.targets.find((t) => t.name === name);
            fill(details, targetDetails(value, graphRow));
        } catch (error) {
            if (current(seq)) fill(details, errorNote(error));
        }
    }

    async function load() {
        const graph = await api('/api/graph');
        if (!current(view.seq)) return;
        const sameShape = state.graph && graphKey(graph.targets, graph.edges) === state.graphShape && nodes.size;
        state.graph = graph;
        groupMode ??= graph.targets.length > GROUP_ABOVE ? 'folder' : 'none';
        if (sameShape) updateStatuses();
        else draw();
    }

    let selectedName = selected;
    let groupMode = null; // 'folder', 'kind' or 'none', chosen by the graph's size on first load
    view.refresh = async () => {
        await load();
        if (selectedName && current(view.seq)) await select(selectedName);
    };
    view.reroute = (name) => {
        selectedName = name;
        if (name) reveal(name);
        select(name);
        if (name) centreOn(name);
    };
    await load();
    if (!current(view.seq)) return;
    if (selected) reveal(selected);
    fit();
    markGraphDrawn();
    if (selected) {
        centreOn(selected);
        await select(selected);
    }
}

function nodeLabel(target) {
    return `${target.name}, ${target.kind}, ${target.status ?? 'not run yet'}${target.reason ? ` (${target.reason})` : ''}`;
}

/** A node's hover text: name, kind, state and why it was skipped. */
function nodeTitle(target) {
    return `${target.name} (${target.kind}): ${statusOf(target)}${target.reason ? ` — ${target.reason}` : ''}`;
}

/** The page load's end for the measurements in tests/browser: the first graph on screen. */
function markGraphDrawn() {
    if (!document.documentElement.dataset.graphDrawnMs) {
        document.documentElement.dataset.graphDrawnMs = performance.now().toFixed(0);
    }
}

/** The legend: one swatch per status colour. */
function legend() {
    const names = { succeeded: 'succeeded', cached: 'cached', running: 'running', queued: 'queued', failed: 'failed', skipped: 'skipped', cancelled: 'cancelled', none: 'not run' };
    return h('ul', { class: 'legend', 'aria-label': 'Status colours' },
        STATUSES.map((status) => h('li', { 'data-status': status },
            s('svg', { width: 14, height: 14, 'aria-hidden': 'true' }, s('rect', { width: 14, height: 14, rx: 3 })),
            ` ${names[status]}`)));
}

/** ", and N more" when a list is a first page of a longer one. */
function more(shown, total) {
    const left = (total ?? 0) - (shown?.length ?? 0);
    return left > 0 ? h('span', { class: 'muted' }, `, and ${left} more`) : null;
}

/** The details panel of one target: the once_query_target value, with links to its neighbours. */
function targetDetails(value, graphRow) {
    const link = (name) => h('a', { href: `#/target/${encodeURIComponent(name)}` }, name);
    const list = (names) => (names.length ? h('ul', { class: 'inline' }, names.map((n) => h('li', {}, link(n)))) : h('span', { class: 'muted' }, 'none'));
    const status = graphRow?.status ?? null;
    return h('div', { class: 'target' },
        h('h2', {}, value.name),
        h('p', { class: 'muted' }, `${value.kind} · ${value.path}`),
        value.description && h('p', {}, value.description),
        h('dl', {},
            h('dt', {}, 'Status'),
            h('dd', {}, h('span', { class: 'badge', id: 'target-status', 'data-status': status ?? 'none' }, status ?? 'not run yet'),
                graphRow?.run ? [' in ', h('a', { href: `#/runs/${encodeURIComponent(graphRow.run)}` }, 'its last run')] : null,
                graphRow?.reason ? h('span', { class: 'reason', id: 'target-reason' }, `: ${graphRow.reason}`) : null),
            h('dt', {}, 'Tags'), h('dd', {}, value.tags?.length ? value.tags.join(', ') : h('span', { class: 'muted' }, 'none')),
            h('dt', {}, 'Depends on'), h('dd', {}, list(value.deps ?? []), more(value.deps, value.deps_total)),
            h('dt', {}, 'Used by'), h('dd', {}, list(value.dependents ?? []), more(value.dependents, value.dependents_total)),
            value.manifest && [h('dt', {}, 'Declared in'), h('dd', {}, `${value.manifest.file}:${value.manifest.line}`)]),
        h('h3', {}, 'Capabilities'),
        h('ul', { class: 'capabilities' }, (value.capabilities ?? []).map((cap) => h('li', {},
            h('strong', {}, cap.name), cap.description ? ` — ${cap.description}` : '',
            cap.command ? h('pre', { class: 'command' }, cap.command) : null,
            cap.deps?.length ? h('p', { class: 'muted' }, `after ${cap.deps.join(', ')}`) : null))));
}

// ---------------------------------------------------------------------------------------------
// Runs view: the recent runs, newest first; a selected run's actions on a time axis, and the log
// of the action you pick, followed while it runs.

async function renderRunsView(container, runId, view) {
    const list = h('ul', { id: 'runs', class: 'items', 'aria-label': 'Recent runs, newest first' });
    const detail = h('section', { id: 'run-detail', class: 'detail', 'aria-label': 'Run' });
    container.append(h('div', { class: 'split' },
        h('section', { class: 'list-pane' }, h('h2', {}, 'Runs'), list), detail));
    let shown = null; // the run whose detail is on screen: {id, dispose, refresh}

    async function loadList() {
        const value = await tool('once_query_runs', { limit: 50 });
        if (!current(view.seq)) return;
        const runs = value.runs ?? [];
        fill(list, ...runs.map((run) => activatable(h('li', {
            'data-run': run.run_id, 'data-status': run.status, 'aria-current': run.run_id === shown?.id ? 'true' : null,
            'aria-label': `run ${runName(run)}${run.asked_by ? ` asked by ${run.asked_by}` : ''}, ${run.status}`,
        },
        h('span', { class: 'badge', 'data-status': run.status }, run.status),
        h('span', { class: 'title mono' }, runName(run)),
        run.asked_by ? h('span', { class: 'asker' }, `by ${run.asked_by}`) : null,
        h('span', { class: 'muted' }, timeEl(run.started_at), ' · ', durationEl(run), ' · ', countsText(run.counts, run.status)),
        run.failed_actions?.length ? h('span', { class: 'failed-list' }, `failed: ${run.failed_actions.join(', ')}`) : null),
        () => { location.hash = `#/runs/${encodeURIComponent(run.run_id)}`; })));
        if (!runs.length) list.append(h('li', { class: 'empty' }, 'No runs yet: start one with ', h('code', {}, 'once run'), ' or the once_run tool.'));
        markFocused();
    }

    function show(id) {
        shown?.dispose();
        shown = null;
        for (const li of list.querySelectorAll('li[aria-current]')) li.removeAttribute('aria-current');
        if (!id) {
            fill(detail, h('p', { class: 'hint' }, 'Select a run to see its actions on a time axis.'));
            return;
        }
        list.querySelector(`li[data-run="${sel(id)}"]`)?.setAttribute('aria-current', 'true');
        shown = runDetail(detail, id, view);
        markFocused();
    }

    view.refresh = async () => {
        await loadList();
        await shown?.refresh();
    };
    view.reroute = (id) => show(id);
    view.dispose = () => shown?.dispose();
    await loadList();
    show(runId);
}

/** One run: a timeline of its actions, and the chosen action's log. Answers {id, refresh, dispose}. */
function runDetail(detail, runId, view) {
    const header = h('div', { class: 'run-header' });
    const timeline = h('div', { id: 'timeline', role: 'list', 'aria-label': 'Actions on a time axis' });
    const actionList = h('ul', { id: 'run-actions', 'aria-label': 'Actions by state: running, queued, failed, done, skipped' });
    const logTitle = h('h3', { id: 'log-title' }, 'Log');
    const log = h('pre', { id: 'log', tabindex: '0', 'aria-labelledby': 'log-title', 'aria-live': 'off' });
    const pick = h('p', { class: 'hint' }, 'Pick an action to read its log.');
    fill(detail, header,
        h('div', { class: 'run-body' }, actionList, h('div', { class: 'run-log' }, pick, logTitle, log)),
        h('h3', {}, 'Timeline'), timeline);
    let run = null; // {status, started_at, actions, request, asked_by}
    let logState = null; // {action, lines, committed, ended, chosen}
    let timer = null;
    let disposed = false;

    async function loadActions() {
        const actions = [];
        let offset = 0;
        let first = null;
        // Pages of 200 actions until the end; a run of 10,000 actions is 50 requests.
        for (let page = 0; page < 100; page++) {
            const value = await tool('once_query_runs', { run_id: runId, offset, limit: 200 });
            first ??= value;
            actions.push(...(value.actions ?? []));
            if (value.next_offset === undefined || value.next_offset === null) break;
            offset = value.next_offset;
        }
        if (disposed || !current(view.seq)) return;
        const row = await runRow(runId);
        run = {
            status: first.status, counts: first.counts, started_at: row?.started_at ?? null, duration_ms: row?.duration_ms ?? null,
            request: first.request ?? null, asked_by: first.asked_by ?? null, run_id: runId, actions,
        };
        const now = Date.now();
        for (const action of actions) {
            const key = `${runId} ${action.action}`;
            if (action.status === 'running' && !state.firstSeenRunning.has(key)) state.firstSeenRunning.set(key, now);
        }
        drawHeader();
        drawActionList();
        drawTimeline();
        // Opened with no action picked (a link, `once_window_show`): show the one that matters.
        const wanted = autoPick();
        if (wanted && (!logState || (!logState.chosen && logState.action !== wanted && logState.ended))) openLog(wanted, false);
        schedule();
    }

    /** The action to show when nobody picked one: the first running, else the first failed,
     *  else the last that ran. */
    function autoPick() {
        const actions = run.actions;
        return (actions.find((a) => a.status === 'running')
            ?? actions.find((a) => a.status === 'failed' || a.status === 'timed_out')
            ?? [...actions].reverse().find((a) => a.status !== 'skipped' && a.status !== 'pending')
            ?? actions[0])?.action ?? null;
    }

    function drawHeader() {
        fill(header,
            h('h2', {}, h('span', { class: 'mono', id: 'run-request' }, runName(run))),
            h('p', { class: 'muted' },
                run.asked_by ? [h('span', { class: 'asker', id: 'run-asker' }, `asked by ${run.asked_by}`), ' · '] : null,
                h('span', { class: 'mono' }, runId)),
            h('p', {}, h('span', { class: 'badge', 'data-status': run.status }, run.status), ' ',
                run.started_at ? ['started ', timeEl(run.started_at), ' · '] : '',
                durationEl(run, 'run-duration'), ' · ',
                h('span', { id: 'run-counts' }, countsText(run.counts, run.status, run.actions))));
    }

    /** Every action by name, grouped by where it is (like turbo's task list): running ones with
     *  their time so far, queued ones, then failed, done and skipped with the reason. */
    function drawActionList() {
        const groups = [
            ['running', 'Running', (a) => a.status === 'running'],
            ['queued', 'Queued', (a) => a.status === 'pending'],
            ['failed', 'Failed', (a) => a.status === 'failed' || a.status === 'timed_out'],
            ['stopped', 'Stopped', (a) => a.status === 'cancelled' || a.status === 'interrupted'],
            ['done', 'Done', (a) => a.status === 'succeeded'],
            ['skipped', 'Skipped', (a) => a.status === 'skipped'],
        ];
        const now = Date.now();
        const items = [];
        for (const [key, title, test] of groups) {
            const members = run.actions.filter(test);
            if (!members.length) continue;
            items.push(h('li', { class: 'group', 'data-group': key }, `${title} (${members.length})`));
            for (const action of members.slice(0, 500)) {
                const sp = span(action, now);
                const detailText = action.status === 'running' ? null
                    : action.status === 'skipped' ? (action.skipped_because ?? 'never started')
                    : action.status === 'pending' ? 'waiting for its dependencies'
                    : action.cached ? 'cached' : formatDuration(action.duration_ms);
                const since = action.status === 'running' && sp ? sp[0] : null;
                items.push(activatable(h('li', {
                    class: 'run-action', 'data-action': action.action, 'data-status': action.status,
                    'aria-current': logState?.action === action.action ? 'true' : null,
                    title: action.skipped_because ? `skipped: ${action.skipped_because}` : null,
                },
                h('span', { class: 'dot', 'aria-hidden': 'true' }),
                h('span', { class: 'name mono' }, action.action),
                since !== null
                    ? h('span', { class: 'when', 'data-live-since': since }, formatDuration(now - since))
                    : h('span', { class: action.status === 'skipped' ? 'reason' : 'when' }, detailText)),
                () => openLog(action.action, true)));
            }
            if (members.length > 500) items.push(h('li', { class: 'muted' }, `and ${members.length - 500} more, on the timeline`));
        }
        fill(actionList, ...items);
    }

    /** Each action's [start, end] in ms since the epoch, from its `started_ms` (after the run's
     *  start) and duration; null for one that never started. A record written before start
     *  times were kept has none: its bars start with the run, and a note says so. */
    function span(action, now) {
        const t0 = run.started_at ?? now;
        let started = null;
        if (action.started_ms !== undefined && action.started_ms !== null) started = t0 + action.started_ms;
        else if (action.status === 'running') started = state.firstSeenRunning.get(`${runId} ${action.action}`) ?? t0;
        if (action.status === 'running') return [started, Math.max(started, now)];
        if (action.status === 'pending' || action.status === 'skipped') return null;
        started ??= t0;
        return [started, started + action.duration_ms];
    }

    function drawTimeline() {
        const now = Date.now();
        const spans = run.actions.map((a) => span(a, now));
        const t0 = run.started_at ?? Math.min(now, ...spans.filter(Boolean).map((sp) => sp[0]));
        const t1 = Math.max(t0 + 1, ...spans.filter(Boolean).map((sp) => sp[1]));
        const total = t1 - t0;
        const rows = run.actions.map((action, i) => {
            const sp = spans[i];
            const bar = h('div', {
                class: 'action', 'data-action': action.action, 'data-status': action.status, 'data-cached': String(Boolean(action.cached)),
                role: 'button', 'aria-pressed': String(logState?.action === action.action),
                'aria-label': `${action.action}: ${action.cached ? 'cached' : action.status}, ${formatDuration(sp ? sp[1] - sp[0] : 0)}`,
                title: `${action.action}: ${action.status}${action.cached ? ' (cached)' : ''}${action.exit_code !== null && action.exit_code !== undefined ? `, exit ${action.exit_code}` : ''}`,
            });
            if (sp) {
                const left = Math.min(99.6, ((sp[0] - t0) / total) * 100);
                bar.style.left = `${left}%`;
                bar.style.width = `${Math.min(Math.max(0.4, ((sp[1] - sp[0]) / total) * 100), 100 - left)}%`;
            } else {
                // Pending or skipped: no time to show, a hollow mark at the start.
                bar.classList.add('untimed');
            }
            activatable(bar, () => openLog(action.action, true));
            return h('div', { class: 'lane', role: 'listitem' },
                h('span', { class: 'lane-label' }, action.action),
                h('div', { class: 'track' }, bar),
                h('span', { class: 'lane-time muted', title: action.skipped_because ?? null }, action.cached ? 'cached' : sp ? formatDuration(sp[1] - sp[0]) : action.status));
        });
        const axis = h('div', { class: 'axis', 'aria-hidden': 'true' },
            [0, 0.25, 0.5, 0.75, 1].map((f) => {
                const tick = h('span', {}, formatDuration(total * f));
                tick.style.left = `${f * 100}%`;
                return tick;
            }));
        const approximate = run.actions.some((a) => a.started_ms === undefined && a.status !== 'pending' && a.status !== 'skipped');
        fill(timeline, axis, ...rows,
            approximate ? h('p', { class: 'muted note' }, 'Start times are not recorded: bars show each action’s duration from the run’s start.') : null);
        if (!run.actions.length) timeline.append(h('p', { class: 'hint' }, 'No actions yet.'));
    }

    /** Shows an action's log from its first line, then follows it while the action runs. */
    async function openLog(action, chosen) {
        logState = { action, lines: [], committed: 0, ended: false, chosen: Boolean(chosen) };
        for (const li of actionList.querySelectorAll('li.run-action')) {
            if (li.dataset.action === action) li.setAttribute('aria-current', 'true');
            else li.removeAttribute('aria-current');
        }
        pick.hidden = true;
        log.dataset.action = action;
        log.replaceChildren();
        logTitle.textContent = `Log of ${action}`;
        for (const bar of timeline.querySelectorAll('.action')) bar.setAttribute('aria-pressed', String(bar.dataset.action === action));
        await pollLog();
        schedule();
    }

    /** Reads the log from the last whole line; a running action's last line may still grow,
     *  so it is shown but read again on the next poll. */
    async function pollLog() {
        const mine = logState;
        if (!mine) return;
        const status = run?.actions.find((a) => a.action === mine.action)?.status;
        const running = status === 'running' || status === 'pending';
        for (let page = 0; page < 40; page++) {
            let value;
            try {
                value = await tool('once_query_runs', { run_id: runId, action: mine.action, offset: mine.committed, limit: LOG_PAGE_LINES });
            } catch (error) {
                if (logState === mine) fill(log, errorNote(error));
                return;
            }
            if (logState !== mine || disposed) return;
            const lines = value.lines ?? [];
            mine.lines.length = mine.committed;
            mine.lines.push(...lines);
            const more = value.next_offset !== undefined && value.next_offset !== null;
            mine.committed += more || !running ? lines.length : Math.max(0, lines.length - 1);
            if (!more || mine.lines.length >= LOG_MAX_LINES) break;
        }
        mine.ended = !running;
        const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.textContent = mine.lines.length ? mine.lines.join('\n') : '(no output)';
        if (atEnd) log.scrollTop = log.scrollHeight;
    }

    /** While the run goes on: grow the running bars and poll the shown log every 300 ms. */
    function schedule() {
        if (timer || disposed) return;
        const live = () => run && (run.status === 'running' || run.actions.some((a) => a.status === 'running' || a.status === 'pending'));
        if (!live() && (!logState || logState.ended)) return;
        timer = setTimeout(async () => {
            timer = null;
            if (disposed) return;
            if (run) {
                drawTimeline();
                drawActionList();
            }
            if (logState) await pollLog();
            if (live() || (logState && !logState.ended)) schedule();
        }, LOG_POLL_MS);
    }

    loadActions().catch((error) => fill(detail, errorNote(error)));
    return {
        id: runId,
        refresh: async () => {
            await loadActions();
            // An action that ended since the last poll: read its log to the end once more.
            if (logState?.ended === false) await pollLog();
        },
        dispose: () => {
            disposed = true;
            clearTimeout(timer);
        },
    };
}

/** The row of the runs list for one run (its start and duration), or null when it is not among
 *  the recent ones. */
async function runRow(runId) {
    const value = await tool('once_query_runs', { limit: 50 });
    return (value.runs ?? []).find((r) => r.run_id === runId) ?? null;
}

function plural(n, one, many) {
    return `${n} ${n === 1 ? one : many}`;
}

/** What a run's counts say; while it runs, how far it got too (from its actions when known). */
function countsText(counts, status, actions) {
    if (!counts) return '';
    const parts = [`${counts.ran} ran`, `${counts.cached} cached`, `${counts.failed} failed`, `${counts.skipped} skipped`];
    if (status === 'running') {
        const running = actions ? actions.filter((a) => a.status === 'running').length : null;
        const queued = actions ? actions.filter((a) => a.status === 'pending').length : null;
        const done = counts.ran + counts.cached + counts.skipped - (running ?? 0);
        parts.unshift(`${Math.max(0, done)} of ${counts.total} done`);
        if (running !== null) parts.push(`${running} running`, `${queued} queued`);
    }
    return parts.join(' · ');
}

/** What a run is called: what was asked (`report:build`, `--all test`), or its id in records
 *  written before the request was kept. */
function runName(run) {
    return run.request || run.run_id;
}

/** A run's duration: while it runs, counted live from its start (the record is rewritten only
 *  when an action starts or ends, so its own figure lags). */
function durationEl(run, id) {
    if (run.status === 'running' && run.started_at) {
        return h('span', { id, class: 'duration', 'data-live-since': run.started_at }, formatDuration(Date.now() - run.started_at));
    }
    return h('span', { id, class: 'duration' }, formatDuration(run.duration_ms));
}

/** A moment, as milliseconds since the epoch or an RFC 3339 string, shown one way everywhere:
 *  relative ("3 min ago"), the absolute date and time on hover. */
function timeEl(value) {
    const ms = typeof value === 'number' ? value : Date.parse(value ?? '');
    if (!Number.isFinite(ms) || ms <= 0) return h('span', { class: 'muted' }, 'unknown time');
    return h('time', { datetime: new Date(ms).toISOString(), title: formatTime(ms), 'data-at': ms }, relativeTime(ms));
}

function relativeTime(ms, now = Date.now()) {
    const seconds = Math.round((now - ms) / 1000);
    if (seconds < 5) return 'just now';
    if (seconds < 60) return `${seconds} s ago`;
    const minutes = Math.round(seconds / 60);
    if (minutes < 60) return `${minutes} min ago`;
    const hours = Math.round(minutes / 60);
    if (hours < 24) return `${hours} h ago`;
    const days = Math.round(hours / 24);
    if (days < 30) return days === 1 ? 'yesterday' : `${days} days ago`;
    return new Date(ms).toLocaleDateString(undefined, { dateStyle: 'medium' });
}

/** Once a second: every live duration and every relative time on the page moves on. */
function tick() {
    const now = Date.now();
    for (const el of document.querySelectorAll('[data-live-since]')) {
        el.textContent = formatDuration(now - Number(el.dataset.liveSince));
    }
    for (const el of document.querySelectorAll('time[data-at]')) {
        const text = relativeTime(Number(el.dataset.at), now);
        if (el.textContent !== text) el.textContent = text;
    }
}

/** The absolute form of a moment, in the one format the page uses (shown on hover). */
function formatTime(ms) {
    if (!ms) return '';
    return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

function formatDuration(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    const minutes = Math.floor(ms / 60000);
    return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
}

// ---------------------------------------------------------------------------------------------
// Change sets view: the proposals, newest first; a selected one's diff, and Apply or Reject while
// it is pending. The answer (done, or why it was refused) stays in #change-result.

async function renderChangesView(container, setId, view) {
    const list = h('ul', { id: 'changes', class: 'items', 'aria-label': 'Change sets, newest first' });
    const detail = h('section', { id: 'change-detail', class: 'detail', 'aria-label': 'Change set' });
    container.append(h('div', { class: 'split' },
        h('section', { class: 'list-pane' }, h('h2', {}, 'Change sets'), list), detail));
    let shownId = null;
    let shownKey = null; // what the detail pane was drawn from

    async function loadList() {
        const value = await api('/api/changes');
        if (!current(view.seq)) return;
        const sets = value.change_sets ?? [];
        fill(list, ...sets.map((set) => activatable(h('li', {
            'data-change-set': set.id, 'data-status': set.status, 'aria-current': set.id === shownId ? 'true' : null,
            'aria-label': `${set.title}, ${set.status}`,
        },
        h('span', { class: 'badge', 'data-status': set.status }, set.status),
        h('span', { class: 'title' }, set.title),
        h('span', { class: 'muted' }, timeEl(set.created), ` · ${fileCounts(set)}`, set.author ? [' · ', h('span', { class: 'asker' }, set.author)] : null)),
        () => { location.hash = `#/changes/${encodeURIComponent(set.id)}`; })));
        if (!sets.length) list.append(h('li', { class: 'empty' }, 'No change sets: they appear here when proposed.'));
        for (const broken of value.broken ?? []) list.append(h('li', { class: 'error' }, `unreadable: ${JSON.stringify(broken)}`));
        markFocused();
    }

    async function show(id) {
        if (shownId !== id) shownKey = null;
        shownId = id;
        for (const li of list.querySelectorAll('li[aria-current]')) li.removeAttribute('aria-current');
        if (!id) {
            shownKey = null;
            fill(detail, h('p', { class: 'hint' }, 'Select a change set to read its diff.'));
            return;
        }
        list.querySelector(`li[data-change-set="${sel(id)}"]`)?.setAttribute('aria-current', 'true');
        try {
            const value = await api(`/api/changes/${encodeURIComponent(id)}`);
            if (!current(view.seq) || shownId !== id) return;
            // Redraw only what changed, and keep a reason being typed: a refresh must never
            // take the person's words away.
            const key = JSON.stringify([value, state.changeResults.get(id) ?? null]);
            if (key === shownKey) return;
            shownKey = key;
            const typed = detail.querySelector('#reject-reason');
            const hadFocus = typed !== null && document.activeElement === typed;
            fill(detail, ...changeDetail(value.set, value.diff));
            const reason = detail.querySelector('#reject-reason');
            if (typed && reason) {
                reason.value = typed.value;
                if (hadFocus) reason.focus();
            }
        } catch (error) {
            if (current(view.seq) && shownId === id) fill(detail, errorNote(error));
        }
        markFocused();
    }

    /** Sends Apply or Reject, shows the answer, then redraws the set (and the list) from the record. */
    async function decide(id, verb, body) {
        for (const button of detail.querySelectorAll('button')) button.disabled = true;
        let answer;
        try {
            const { status, body: reply } = await request(`/api/changes/${encodeURIComponent(id)}/${verb}`, { method: 'POST', body });
            const refused = status !== 200 || reply?.outcome !== 'done';
            answer = { outcome: refused ? 'refused' : 'done', message: reply?.message ?? reply?.error ?? `${verb} answered ${status}` };
        } catch (error) {
            answer = { outcome: 'refused', message: String(error.message ?? error) };
        }
        state.changeResults.set(id, answer);
        if (!current(view.seq)) return;
        await loadList();
        await show(id);
    }

    function changeDetail(set, diff) {
        const result = state.changeResults.get(set.id);
        const out = h('p', { id: 'change-result', role: 'status', 'aria-live': 'polite', 'data-outcome': result?.outcome ?? null },
            result ? `${result.outcome === 'done' ? 'Done' : 'Refused'}: ${result.message}` : '');
        const pending = set.status === 'pending';
        const reason = h('input', { id: 'reject-reason', type: 'text', placeholder: 'why not (kept with the record)', autocomplete: 'off' });
        const controls = pending ? h('div', { class: 'decide' },
            h('button', { type: 'button', id: 'apply', class: 'primary', onclick: () => decide(set.id, 'apply', {}) }, 'Apply'),
            h('label', { for: 'reject-reason' }, 'Reason'), reason,
            h('button', { type: 'button', id: 'reject', onclick: () => decide(set.id, 'reject', { reason: reason.value }) }, 'Reject')) : null;
        reason.addEventListener('keydown', (event) => {
            if (event.key === 'Enter') decide(set.id, 'reject', { reason: reason.value });
        });
        return [
            h('h2', {}, set.title),
            h('p', {}, h('span', { class: 'badge', 'data-status': set.status }, set.status), ' ',
                h('span', { class: 'muted' }, `${set.id} · proposed `, timeEl(set.created), set.author ? [' by ', h('span', { class: 'asker' }, set.author)] : null)),
            set.decided ? h('p', { class: 'decision', id: 'change-decision', 'data-status': set.status },
                `${DECIDED_WORDS[set.status] ?? 'Decided'} `, timeEl(set.decided),
                set.decided_by ? ` ${DECIDER_WORDS[set.decided_by] ?? `by ${set.decided_by}`}` : '',
                set.reason ? `: ${set.reason}` : '') : null,
            !set.decided && set.reason ? h('p', { class: 'decision' }, `Reason: ${set.reason}`) : null,
            set.rationale ? h('p', { class: 'rationale' }, set.rationale) : null,
            h('ul', { class: 'files' }, (set.changes ?? []).map((c) => h('li', {}, h('span', { class: 'file-action' }, c.action), ' ', h('span', { class: 'mono' }, c.path)))),
            controls,
            out,
            diffBlock(diff ?? ''),
        ];
    }

    view.refresh = async () => {
        await loadList();
        if (shownId) await show(shownId);
    };
    view.reroute = (id) => show(id);
    await loadList();
    await show(setId);
}

const DECIDED_WORDS = { applied: 'Applied', rejected: 'Rejected', failed: 'Failed' };
/** Who decided, as the change store records it: always a person, through one of two doors. */
const DECIDER_WORDS = { terminal: 'by a person in the terminal', window: 'by a person in this window' };

function fileCounts(set) {
    const parts = [];
    if (set.create) parts.push(`${set.create} new`);
    if (set.replace) parts.push(`${set.replace} changed`);
    if (set.delete) parts.push(`${set.delete} deleted`);
    return parts.join(', ') || 'no files';
}

/** A unified diff, one span per line, coloured by what the line does. */
function diffBlock(diff) {
    const pre = h('pre', { class: 'diff', tabindex: '0', 'aria-label': 'Unified diff' });
    const lines = diff.split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    for (const line of lines) {
        let kind = 'context';
        if (line.startsWith('+++') || line.startsWith('---')) kind = 'file';
        else if (line.startsWith('@@')) kind = 'hunk';
        else if (line.startsWith('+')) kind = 'add';
        else if (line.startsWith('-')) kind = 'del';
        pre.append(h('span', { class: kind }, line), '\n');
    }
    if (!lines.length) pre.textContent = '(no differences)';
    return pre;
}

// ---------------------------------------------------------------------------------------------
// Memory view: ranked search over the project's notes, a list that says which notes may be stale
// and why, and the chosen note in full.

async function renderMemoryView(container, _id, view) {
    const search = h('input', { id: 'memory-search', type: 'search', placeholder: 'search titles, tags and bodies…', autocomplete: 'off', value: state.memoryQuery });
    const list = h('ul', { id: 'memory', class: 'items', 'aria-label': 'Memory entries' });
    const detail = h('section', { id: 'memory-entry', class: 'detail', 'aria-label': 'Memory entry', 'aria-live': 'polite' });
    const total = h('p', { class: 'muted', role: 'status' });
    container.append(h('div', { class: 'split' },
        h('section', { class: 'list-pane' }, h('h2', {}, 'Memory'),
            h('label', { for: 'memory-search' }, 'Search'), search, total, list),
        detail));

    let timer = null;
    search.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(() => { state.memoryQuery = search.value; loadList(); }, 150);
    });

    let asked = 0;
    async function loadList() {
        const mine = ++asked;
        const query = state.memoryQuery.trim();
        let value;
        try {
            value = await tool('once_query_memory', query ? { query } : {});
        } catch (error) {
            if (mine === asked && current(view.seq)) fill(list, h('li', {}, errorNote(error)));
            return;
        }
        if (mine !== asked || !current(view.seq)) return;
        const entries = value.entries ?? [];
        total.textContent = query ? `${entries.length} of ${value.total} matching “${query}”` : `${plural(value.total, 'entry', 'entries')}, newest first`;
        fill(list, ...entries.map((entry) => memoryRow(entry, () => showEntry(entry.id))));
        if (!entries.length) list.append(h('li', { class: 'empty' }, query ? 'Nothing matches.' : ['No entries yet: ', h('code', {}, 'once memory add'), ' writes one.']));
        markFocused();
    }

    async function showEntry(id) {
        state.memorySelected = id;
        for (const li of list.querySelectorAll('li[data-entry]')) {
            if (li.dataset.entry === id) li.setAttribute('aria-current', 'true');
            else li.removeAttribute('aria-current');
        }
        if (!id) {
            fill(detail, h('p', { class: 'hint' }, 'Select an entry to read it.'));
            return;
        }
        try {
            const value = await tool('once_query_memory', { id });
            if (!current(view.seq) || state.memorySelected !== id) return;
            const entry = value.entries?.[0] ?? value.entry ?? value;
            fill(detail, memoryEntry(entry));
        } catch (error) {
            if (current(view.seq)) fill(detail, errorNote(error));
        }
    }

    view.refresh = async () => {
        await loadList();
        if (state.memorySelected) await showEntry(state.memorySelected);
    };
    view.reroute = () => {
        if (state.focus?.kind === 'memory') showEntry(state.focus.id);
    };
    await loadList();
    await showEntry(state.memorySelected);
}

/** Why a note may no longer be true, in words: "proto/x.txt changed", "target web is gone". */
function staleText(stale) {
    return stale.map((item) => {
        const what = item.path ?? (item.target ? `target ${item.target}` : '');
        return [what, item.reason].filter(Boolean).join(' ');
    }).join('; ');
}

function memoryRow(entry, open) {
    const stale = entry.stale ?? [];
    return activatable(h('li', {
        'data-entry': entry.id, 'data-stale': String(stale.length > 0), 'aria-current': entry.id === state.memorySelected ? 'true' : null,
        'aria-label': `${entry.title}${stale.length ? ', stale' : ''}`,
    },
    h('span', { class: 'badge', 'data-kind': entry.kind }, entry.kind),
    h('span', { class: 'title' }, entry.title),
    entry.snippet ? h('span', { class: 'snippet' }, entry.snippet) : null,
    stale.length ? h('span', { class: 'stale-reason' }, `stale: ${staleText(stale)}`) : null), open);
}

function memoryEntry(entry) {
    const stale = entry.stale ?? [];
    return h('article', { class: 'entry-full' },
        h('h2', {}, entry.title),
        h('p', { class: 'muted' }, `${entry.kind} · revision ${entry.revision} · updated `, timeEl(entry.updated), ` · ${entry.file}`),
        stale.length ? h('p', { class: 'stale-reason' }, `May be stale: ${staleText(stale)}`) : null,
        h('dl', {},
            h('dt', {}, 'Tags'), h('dd', {}, entry.tags?.length ? entry.tags.join(', ') : h('span', { class: 'muted' }, 'none')),
            h('dt', {}, 'Targets'), h('dd', {}, entry.targets?.length ? entry.targets.map((t, i) => [i ? ', ' : '', h('a', { href: `#/target/${encodeURIComponent(t)}` }, t)]) : h('span', { class: 'muted' }, 'none')),
            h('dt', {}, 'Paths'), h('dd', {}, entry.paths?.length ? entry.paths.map((p) => p.path ?? p).join(', ') : h('span', { class: 'muted' }, 'none'))),
        h('pre', { class: 'body' }, entry.body ?? entry.snippet ?? ''));
}

// ---------------------------------------------------------------------------------------------
// Evaluators view: each target's live evaluator, whether it runs, and what it evaluated (code,
// outcome, value or error, and what it printed), newest last.

async function renderEvaluatorsView(container, _id, view) {
    const root = h('div', { id: 'evaluators', 'aria-label': 'Evaluators' });
    container.append(h('h2', {}, 'Evaluators'), root);
    async function load() {
        const value = await api('/api/evaluators');
        if (!current(view.seq)) return;
        const evaluators = value.evaluators ?? [];
        fill(root, ...evaluators.map(evaluatorSection));
        if (!evaluators.length) root.append(h('p', { class: 'hint wide' }, 'No evaluator has started: ', h('code', {}, 'once eval'), ' or the once_eval tool starts one per target.'));
    }
    view.refresh = load;
    await load();
}

function evaluatorSection(evaluator) {
    const entries = evaluator.entries ?? [];
    return h('section', { 'data-target': evaluator.target, class: 'evaluator', 'aria-label': `Evaluator of ${evaluator.target}` },
        h('h3', {}, evaluator.target, ' ', h('span', { class: 'muted' }, evaluator.language ?? '')),
        h('p', {}, h('span', { class: 'badge', 'data-status': evaluator.running ? 'running' : 'none' }, evaluator.running ? 'running' : 'stopped'),
            evaluator.evaluating ? ' · evaluating now' : '',
            evaluator.pid ? ` · pid ${evaluator.pid}` : ''),
        entries.length ? h('ol', { class: 'entries' }, entries.map((entry) => h('li', { class: 'entry', 'data-outcome': entry.outcome },
            h('p', { class: 'entry-head muted' }, timeEl(entry.at), ` · ${entry.outcome}`, entry.truncated ? ' · output truncated' : ''),
            h('div', { class: 'entry-body' },
                h('div', {}, h('h4', {}, 'Code'), h('pre', { class: 'code' }, entry.code ?? '')),
                h('div', {},
                    entry.output ? [h('h4', {}, 'Printed'), h('pre', { class: 'output' }, entry.output)] : null,
                    entry.error !== undefined && entry.error !== null
                        ? [h('h4', {}, 'Error'), h('pre', { class: 'error-value' }, String(entry.error))]
                        : evaluatedValue(entry.value))))))
            : h('p', { class: 'hint' }, 'Nothing evaluated yet.'));
}

/** What an evaluation answered: its value, or a plain note when it had none (Python's `None`,
 *  a statement), never an empty box. */
function evaluatedValue(value) {
    if (value === undefined || value === null || value === '' || value === 'None') {
        return h('p', { class: 'muted no-value' }, 'no value');
    }
    return [h('h4', {}, 'Value'), h('pre', { class: 'value' }, typeof value === 'string' ? value : JSON.stringify(value))];
}

// ---------------------------------------------------------------------------------------------
// Live events and focus requests

/** Where a focus request leads. */
function focusHash(focus) {
    const id = encodeURIComponent(focus.id);
    switch (focus.kind) {
        case 'target': return `#/target/${id}`;
        case 'run': return `#/runs/${id}`;
        case 'change_set': return `#/changes/${id}`;
        case 'memory': return '#/memory';
        default: return null;
    }
}

function focusMatchesRoute(focus, name, id) {
    if (focus.kind === 'memory') return name === 'memory';
    const names = { target: 'target', run: 'runs', change_set: 'changes' };
    return names[focus.kind] === name && id === focus.id;
}

const FOCUS_WORDS = { target: 'target', run: 'run', change_set: 'change set', memory: 'memory entry' };

/** Shows what the session asked for, and says so in #focus-note. */
function onFocus(focus) {
    const hash = focusHash(focus);
    if (!hash) return;
    state.focus = focus;
    if (focus.kind === 'memory') state.memorySelected = focus.id;
    const note = byId('focus-note');
    note.textContent = `Shown on request from the session: ${FOCUS_WORDS[focus.kind]} ${focus.id}`;
    note.hidden = false;
    if (location.hash === hash) {
        state.view?.reroute?.(focus.kind === 'memory' ? null : focus.id);
        markFocused();
    } else {
        location.hash = hash;
    }
}

function clearFocus() {
    state.focus = null;
    const note = byId('focus-note');
    note.hidden = true;
    note.textContent = '';
    for (const el of document.querySelectorAll('.focused')) el.classList.remove('focused');
}

/** Marks the element the focus request named, once it is on screen. */
function markFocused() {
    const focus = state.focus;
    if (!focus) return;
    const selectors = {
        target: `g.node[data-target="${sel(focus.id)}"]`,
        run: `#runs li[data-run="${sel(focus.id)}"]`,
        change_set: `#changes li[data-change-set="${sel(focus.id)}"]`,
        memory: `#memory li[data-entry="${sel(focus.id)}"]`,
    };
    const el = document.querySelector(selectors[focus.kind]);
    if (el && !el.classList.contains('focused')) {
        el.classList.add('focused');
        el.scrollIntoView?.({ block: 'nearest' });
    }
}

/** Refetches what the current view shows when that part changed. Bursts become one refetch, and
 *  refetches never overlap: an event during one asks for one more after it. */
const refresher = { timer: null, running: false, again: false };
function onChanged(what) {
    const view = state.view;
    if (!view?.refresh || (what !== 'all' && !view.spec.refreshOn.includes(what))) return;
    if (refresher.running) {
        refresher.again = true;
        return;
    }
    if (refresher.timer) return;
    refresher.timer = setTimeout(() => runRefresh(view), 50);
}

async function runRefresh(view) {
    refresher.timer = null;
    if (state.view !== view || !view?.refresh) return;
    refresher.running = true;
    try {
        await view.refresh();
        markFocused();
    } catch (error) {
        setLive(`could not refresh: ${error.message}`);
    } finally {
        refresher.running = false;
    }
    if (refresher.again) {
        refresher.again = false;
        refresher.timer = setTimeout(() => runRefresh(state.view), 50);
    }
}

function setLive(text) {
    byId('live').textContent = text;
}

/** Listens to the session's events. An EventSource cannot send the page key, so the stream is
 *  one `fetch` whose body is read as Server-Sent Events, opened again after a pause whenever it
 *  ends. The session takes its baseline when a stream opens, so what the page fetches once the
 *  stream's head came is what later events are measured against: `connected` runs on the first
 *  open, and every later open (a reconnection, which may have missed events) refetches the view. */
async function listen(connected) {
    let opened = false;
    for (;;) {
        let response = null;
        try {
            response = await fetch('/api/events', { headers: keyHeaders(), credentials: 'omit', cache: 'no-store' });
        } catch {
            response = null;
        }
        if (!response?.ok || !response.body) {
            // Refused (the session ended or the key is wrong): try again later, not in a loop.
            setLive('disconnected: retrying');
            await pause(3000);
            continue;
        }
        setLive('live');
        if (!opened && connected) connected();
        else onChanged('all');
        opened = true;
        try {
            await readEvents(response.body);
        } catch {
            // A dropped connection: open a new stream.
        }
        setLive('reconnecting…');
        await pause(1000);
    }
}

function pause(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads an event stream's body until it ends, handing each event to `onEvent`. The session
 *  writes `\n` line ends and small events; a stream that sends 1 MiB without ending an event is
 *  not the session's, and is dropped. */
async function readEvents(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
            onEvent(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
        }
        if (buffer.length > 1 << 20) {
            await reader.cancel();
            return;
        }
    }
}

/** One event's lines: `event:` names it, `data:` lines carry its JSON, `:` lines are comments. */
function onEvent(block) {
    let name = 'message';
    const data = [];
    for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
    }
    if (data.length === 0) return;
    const parsed = parseData(data.join('\n'));
    if (name === 'changed' && parsed?.what) onChanged(parsed.what);
    if (name === 'focus' && parsed?.kind && parsed.id !== undefined) onFocus(parsed);
}

function parseData(text) {
    try {
        return JSON.parse(text);
    } catch {
        return null;
    }
}

// ---------------------------------------------------------------------------------------------
// Start

const KEY_STORE = 'once-key';
const NOT_LOGGED_IN = 'this page is not logged in: open the link `once serve` printed, or run `once sessions --url` for a new one';

/** Turns the login link's one-time token, if the address carries one, into the page key, and
 *  drops the token from the address bar and history at once (it is used up either way). */
async function logIn() {
    const login = new URLSearchParams(location.search).get('login');
    if (login) {
        history.replaceState(null, '', `/${location.hash}`);
        const response = await fetch('/api/login', {
            method: 'POST', credentials: 'omit', cache: 'no-store',
            headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ login }),
        });
        const body = await response.json().catch(() => null);
        if (!response.ok || typeof body?.key !== 'string') {
            throw new Error(body?.error ?? `the login failed: ${response.status}`);
        }
        sessionStorage.setItem(KEY_STORE, body.key);
    }
    state.key = sessionStorage.getItem(KEY_STORE);
    if (!state.key) throw new Error(NOT_LOGGED_IN);
}

async function start() {
    try {
        await logIn();
        state.session = await api('/api/session');
        byId('workspace').textContent = state.session.workspace;
        document.title = `once · ${state.session.workspace.split('/').pop() || state.session.workspace}`;
    } catch (error) {
        // A key the session does not know (it restarted, say) is of no further use.
        if (error instanceof ApiError && error.status === 403) sessionStorage.removeItem(KEY_STORE);
        const message = error instanceof ApiError && error.status === 403 ? NOT_LOGGED_IN : error.message;
        byId('live').textContent = 'not connected';
        byId('view').replaceChildren(errorNote(`cannot reach the session: ${message}`));
        return;
    }
    window.addEventListener('hashchange', route);
    if (!location.hash) history.replaceState(null, '', '#/graph');
    // The first view is drawn once the event stream is open (a few milliseconds on loopback), or
    // after two seconds without it, so the page shows something even with no live updates.
    let drawn = false;
    const draw = () => {
        if (drawn) return;
        drawn = true;
        route();
    };
    listen(draw);
    setTimeout(draw, 2000);
    setInterval(tick, TICK_MS);
}

document.addEventListener('DOMContentLoaded', start);
