//! The memory query: one function that computes the value both doors show, `once memory
//! list|search|show --json` and the MCP tool `once_query_memory`, with its JSON Schemas.
//!
//! Three modes share one shape, a page of entries: `id` gives that entry with its body; `query`
//! ranks entries by BM25; neither lists entries newest first. Filters (kind, tag, target, path)
//! apply to all three. Staleness is computed for the rows of the page only, so a page costs
//! the same whatever the size of the memory. Must never write anything but the index cache.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::index::{Corpus, Need};
use crate::model::{Entry, Kind, PathLink};
use crate::search;
use crate::stale::{Checker, Stale};
use crate::{Broken, Error, Store};

/// Default page size.
pub const DEFAULT_LIMIT: u32 = 20;
/// Largest page size.
pub const MAX_LIMIT: u32 = 100;
/// At most this many broken files are listed (all are counted).
const BROKEN_SHOWN: usize = 20;
/// Most bytes of JSON rows one page carries; a page of long rows (bodies) ends sooner and its
/// cursor goes on from there. An MCP answer holds its value twice and must stay under 40 KB.
const PAGE_BYTES: usize = 12 * 1024;

/// Arguments of [`query`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryQuery {
    /// Words to search for; results are ranked.
    #[serde(default)]
    pub query: Option<String>,
    /// One entry by id, with its body.
    #[serde(default)]
    pub id: Option<String>,
    /// Only entries of this kind.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Only entries with this tag.
    #[serde(default)]
    pub tag: Option<String>,
    /// Only entries linked to this target.
    #[serde(default)]
    pub target: Option<String>,
    /// Only entries linked to this file (relative to the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Include each entry's body (always true with `id`).
    #[serde(default)]
    pub body: Option<bool>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Rows per page.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One entry as a row of a page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryRow {
    /// Stable id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: Kind,
    /// Tags.
    pub tags: Vec<String>,
    /// Linked targets.
    pub targets: Vec<String>,
    /// Linked files with the hashes they had when the entry was written.
    pub paths: Vec<PathLink>,
    /// Created, RFC 3339.
    pub created: String,
    /// Last written, RFC 3339.
    pub updated: String,
    /// Pass it back when updating or forgetting the entry.
    pub revision: u64,
    /// The entry file, relative to the workspace root.
    pub file: String,
    /// BM25 score when searching; null when listing.
    pub score: Option<f64>,
    /// A line of the body (the first that matches the query).
    pub snippet: String,
    /// Why the entry may no longer be true; empty when fresh.
    pub stale: Vec<Stale>,
    /// The Markdown body, when asked for; else null.
    pub body: Option<String>,
}

/// A page of entries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryPage {
    /// The rows, best match (or newest) first.
    pub entries: Vec<EntryRow>,
    /// How many entries match, over all pages.
    pub total: u32,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
    /// Entry files that do not parse (the first few), each with file and line.
    pub broken: Vec<Broken>,
    /// How many entry files do not parse.
    pub broken_total: u32,
}

/// Sizes of the memory, for the workspace overview.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MemoryCounts {
    /// Entries that parse.
    pub entries: u32,
    /// Of those, entries that are stale.
    pub stale: u32,
    /// Entry files that do not parse.
    pub broken: u32,
}

fn n(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Computes the answer to `q`. `target_exists` tells whether the build graph has a target.
pub fn query(
    store: &Store,
    q: &MemoryQuery,
    target_exists: &dyn Fn(&str) -> bool,
) -> Result<MemoryPage, Error> {
    let limit = match q.limit {
        None => DEFAULT_LIMIT,
        Some(l) if (1..=MAX_LIMIT).contains(&l) => l,
        Some(_) => {
            return Err(Error::Invalid {
                message: format!("`limit` must be from 1 to {MAX_LIMIT}; page with `next_cursor`"),
            });
        }
    } as usize;
    let mut checker = Checker::new(store.root(), target_exists);
    let row = |checker: &mut Checker<'_>, entry: &Entry, score, body: bool| EntryRow {
        id: entry.id.clone(),
        title: entry.title.clone(),
        kind: entry.kind,
        tags: entry.tags.clone(),
        targets: entry.targets.clone(),
        paths: entry.paths.clone(),
        created: entry.created.clone(),
        updated: entry.updated.clone(),
        revision: entry.revision,
        file: format!(".once/memory/{}.md", entry.id),
        score,
        snippet: search::snippet(&entry.body, q.query.as_deref()),
        stale: checker.check(entry),
        body: body.then(|| entry.body.clone()),
    };

    if let Some(id) = &q.id {
        // One entry: read straight from its file, so a broken one reports its own line.
        let entry = store.get(id)?;
        let rows = if matches(&entry, q) {
            vec![row(&mut checker, &entry, None, true)]
        } else {
            Vec::new()
        };
        return Ok(MemoryPage {
            total: n(rows.len()),
            entries: rows,
            next_cursor: None,
            broken: Vec::new(),
            broken_total: 0,
        });
    }

    // Without filters on tags, targets or paths, a search reads only the index's head and the
    // postings of its words.
    let need = if q.tag.is_none() && q.target.is_none() && q.path.is_none() {
        Need::Postings
    } else {
        Need::Metadata
    };
    let corpus = store.corpus(need)?;
    let broken = corpus.broken(store.dir());
    let candidates: Vec<usize> = (0..corpus.len())
        .filter(|&doc| matches_cached(&corpus, doc, q))
        .collect();
    let ranked: Vec<(usize, Option<f64>)> = match q.query.as_deref().map(str::trim) {
        Some(words) if !words.is_empty() => search::rank(&corpus, &candidates, words)
            .into_iter()
            .map(|(i, score)| (i, Some(round(score))))
            .collect(),
        _ => candidates.into_iter().map(|i| (i, None)).collect(),
    };
    let fingerprint = fingerprint(q);
    let start = decode_cursor(q.cursor.as_deref(), &fingerprint, ranked.len())?;
    let end = start.saturating_add(limit).min(ranked.len());
    let body = q.body.unwrap_or(false);
    let mut entries = Vec::new();
    let mut bytes = 0;
    let mut end_of_page = start;
    for &(i, score) in &ranked[start..end] {
        // Bodies are not in the index: each row of the page reads its own file, and shows the
        // cached fields (without a snippet) if that file broke since the scan.
        let Some(entry) = store.get(corpus.id(i)).ok().or_else(|| corpus.entry(i)) else {
            end_of_page += 1;
            continue;
        };
        let row = row(&mut checker, &entry, score, body);
        bytes += serde_json::to_string(&row).map_or(0, |json| json.len()) + 1;
        if !entries.is_empty() && bytes > PAGE_BYTES {
            break;
        }
        entries.push(row);
        end_of_page += 1;
    }
    Ok(MemoryPage {
        entries,
        total: n(ranked.len()),
        next_cursor: (end_of_page < ranked.len()).then(|| format!("{fingerprint}-{end_of_page}")),
        broken_total: n(broken.len()),
        broken: broken.into_iter().take(BROKEN_SHOWN).collect(),
    })
}

/// A stale entry and why, as `once memory check` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StaleEntry {
    /// Stable id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Current revision.
    pub revision: u64,
    /// Every reason, never empty.
    pub stale: Vec<Stale>,
}

/// Every stale entry and every broken file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// Entries whose linked files or targets changed, newest first.
    pub stale: Vec<StaleEntry>,
    /// Entry files that do not parse.
    pub broken: Vec<Broken>,
}

/// What `once memory check` reports.
pub fn check(store: &Store, target_exists: &dyn Fn(&str) -> bool) -> Result<CheckReport, Error> {
    let (entries, broken) = cached_entries(store)?;
    let mut checker = Checker::new(store.root(), target_exists);
    let stale = entries
        .into_iter()
        .filter_map(|entry| {
            let reasons = checker.check(&entry);
            (!reasons.is_empty()).then_some(StaleEntry {
                id: entry.id,
                title: entry.title,
                revision: entry.revision,
                stale: reasons,
            })
        })
        .collect();
    Ok(CheckReport { stale, broken })
}

/// How many entries there are, how many are stale, how many files are broken.
pub fn counts(store: &Store, target_exists: &dyn Fn(&str) -> bool) -> Result<MemoryCounts, Error> {
    let (entries, broken) = cached_entries(store)?;
    let mut checker = Checker::new(store.root(), target_exists);
    let stale = entries
        .iter()
        .filter(|e| !checker.check(e).is_empty())
        .count();
    Ok(MemoryCounts {
        entries: n(entries.len()),
        stale: n(stale),
        broken: n(broken.len()),
    })
}

/// Every entry as the index has it (without bodies, which staleness does not need), and every
/// broken file.
fn cached_entries(store: &Store) -> Result<(Vec<Entry>, Vec<Broken>), Error> {
    let corpus = store.corpus(Need::Metadata)?;
    let entries = (0..corpus.len())
        .filter_map(|doc| corpus.entry(doc))
        .collect();
    Ok((entries, corpus.broken(store.dir())))
}

/// Whether cached file `doc` is an entry that passes the filters of `q`; decodes its fields only
/// when a filter needs more than its kind.
fn matches_cached(corpus: &Corpus, doc: usize, q: &MemoryQuery) -> bool {
    let Some(kind) = corpus.kind(doc) else {
        return false;
    };
    if q.kind.is_some_and(|k| k != kind) {
        return false;
    }
    if q.tag.is_none() && q.target.is_none() && q.path.is_none() {
        return true;
    }
    corpus.entry(doc).is_some_and(|entry| matches(&entry, q))
}

fn matches(entry: &Entry, q: &MemoryQuery) -> bool {
    q.kind.is_none_or(|kind| entry.kind == kind)
        && q.tag.as_ref().is_none_or(|tag| entry.tags.contains(tag))
        && q.target.as_ref().is_none_or(|t| entry.targets.contains(t))
        && q.path.as_ref().is_none_or(|p| {
            let p = p.trim_start_matches("./");
            entry.paths.iter().any(|link| link.path == p)
        })
}

fn round(score: f64) -> f64 {
    (score * 1000.0).round() / 1000.0
}

/// 8 hex characters of BLAKE3 over the filters, so a cursor reused with other filters fails
/// loudly instead of skipping rows.
fn fingerprint(q: &MemoryQuery) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in [
        q.query.as_deref().unwrap_or_default(),
        q.kind.map(Kind::as_str).unwrap_or_default(),
        q.tag.as_deref().unwrap_or_default(),
        q.target.as_deref().unwrap_or_default(),
        q.path.as_deref().unwrap_or_default(),
    ] {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().to_hex()[..8].to_string()
}

fn decode_cursor(cursor: Option<&str>, fingerprint: &str, total: usize) -> Result<usize, Error> {
    let Some(cursor) = cursor else { return Ok(0) };
    let invalid = || Error::Invalid {
        message: "invalid `cursor`: pass back the `next_cursor` of the previous answer, with the \
                  same filters, or omit it to start again"
            .into(),
    };
    let (fp, offset) = cursor.split_once('-').ok_or_else(invalid)?;
    if fp != fingerprint || offset.is_empty() || !offset.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let offset: usize = offset.parse().map_err(|_| invalid())?;
    if offset > total {
        return Err(invalid());
    }
    Ok(offset)
}

// ------------------------------------------------------------------ schemas

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn nullable(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn kind_schema(description: &str) -> Value {
    let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    json!({"type": "string", "enum": names, "description": description})
}

/// JSON Schema of one page row.
fn row_schema() -> Value {
    json!({
        "type": "object",
        "description": "An entry",
        "properties": {
            "id": string("Stable id"),
            "title": string("Title"),
            "kind": kind_schema("What sort of note"),
            "tags": strings("Tags"),
            "targets": strings("Linked targets"),
            "paths": {
                "type": "array",
                "description": "Linked files, each with the hash it had when the entry was written",
                "items": {
                    "type": "object",
                    "properties": {"path": string("Relative to the root"), "blake3": string("BLAKE3, hex")},
                    "required": ["path", "blake3"],
                    "additionalProperties": false,
                },
            },
            "created": string("RFC 3339"),
            "updated": string("RFC 3339"),
            "revision": {"type": "integer", "description": "Pass it back to update or forget the entry"},
            "file": string("The entry file, relative to the root"),
            "score": nullable(json!({"type": "number", "description": "BM25 score when searching"})),
            "snippet": string("A line of the body"),
            "stale": {
                "type": "array",
                "description": "Why the entry may no longer be true; empty when fresh",
                "items": {
                    "type": "object",
                    "properties": {
                        "reason": {"type": "string", "enum": ["changed", "missing", "no-target"], "description": "What changed"},
                        "path": string("The linked file (changed, missing)"),
                        "target": string("The linked target (no-target)"),
                    },
                    "required": ["reason"],
                    "additionalProperties": false,
                },
            },
            "body": nullable(string("Markdown body, when asked for")),
        },
        "required": ["id", "title", "kind", "tags", "targets", "paths", "created", "updated",
                     "revision", "file", "score", "snippet", "stale", "body"],
        "additionalProperties": false,
    })
}

/// JSON Schema of a broken entry file.
pub fn broken_schema() -> Value {
    json!({
        "type": "object",
        "description": "An entry file that does not parse",
        "properties": {
            "file": string("The file"),
            "line": {"type": "integer", "description": "1-based line"},
            "message": string("What is wrong"),
        },
        "required": ["file", "line", "message"],
        "additionalProperties": false,
    })
}

/// JSON Schema of [`MemoryPage`].
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "description": "A page of memory entries",
        "properties": {
            "entries": {"type": "array", "items": row_schema(), "description": "Best match or newest first"},
            "total": {"type": "integer", "description": "Matching entries over all pages"},
            "next_cursor": nullable(string("Pass as `cursor` for the next page")),
            "broken": {"type": "array", "items": broken_schema(), "description": "Entry files that do not parse (the first few)"},
            "broken_total": {"type": "integer", "description": "How many entry files do not parse"},
        },
        "required": ["entries", "total", "next_cursor", "broken", "broken_total"],
        "additionalProperties": false,
    })
}

/// JSON Schema of [`MemoryQuery`].
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "description": "Search, list or read project memory",
        "properties": {
            "query": string("Words to search for in titles, tags and bodies; results are ranked"),
            "id": string("Read one entry by id, with its body"),
            "kind": kind_schema("Only entries of this kind"),
            "tag": string("Only entries with this tag"),
            "target": string("Only entries linked to this target"),
            "path": string("Only entries linked to this file (relative to the workspace root)"),
            "body": {"type": "boolean", "description": "Include bodies (default false; always with `id`)"},
            "cursor": string("The `next_cursor` of the previous page, with the same filters"),
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most rows per page (default 20); a page of long rows (bodies) ends sooner"},
        },
        "required": [],
        "additionalProperties": false,
    })
}
