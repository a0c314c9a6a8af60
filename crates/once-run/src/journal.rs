//! The journal of keys' parts, `.once/cache/key-parts`: one JSON line per recorded key, appended;
//! the last line of an action is the manifest of its last recorded key (see `explain.rs`).
//!
//! Appending costs a run one write per recorded action and no new file: a cold build of 1,000
//! actions made 1,000 files when each action had a manifest file of its own. Invariants:
//! - a line is appended with one `write` on a file opened for appending, so lines of concurrent
//!   runs never interleave within a line;
//! - a line that is torn (a crash) or unreadable is skipped by every reader: it costs that
//!   action's explanation, never a run;
//! - the file stays within about twice its live size: when it grows past both [`COMPACT_AT`] and
//!   twice the size it had after the last compaction (its first line says how big that was), the
//!   appender that sees it rewrites it, under the lock `locks/key-parts`, with the last line of
//!   each action, and renames it into place. A run appending during that rename may lose its
//!   line; that costs an explanation, never a result.
//!
//! Must never hold a value of a variable (the parts never do) nor grow without bound.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs;
#[cfg(test)]
use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cache::Cache;
use crate::parts::KeyParts;

/// The size below which the journal is never compacted.
pub(crate) const COMPACT_AT: u64 = 8 * 1024 * 1024;

/// The first line of a compacted journal.
#[derive(Serialize, Deserialize)]
struct Header {
    compacted_bytes: u64,
}

/// Just the name of the action a line is about.
#[derive(Deserialize)]
struct Head {
    action: String,
}

/// Appends `parts` as the last manifest of its action.
pub(crate) fn append(cache: &Cache, parts: &KeyParts) -> io::Result<()> {
    let path = cache.journal_path().map_err(io::Error::other)?;
    let mut line = serde_json::to_vec(parts).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut file = once_fs::open_in_place(&path, true)?;
    file.write_all(&line)?;
    let size = file.metadata()?.len();
    if size > COMPACT_AT && size > 2 * compacted_bytes(&path) {
        let _lock = cache.exclusive("key-parts").map_err(io::Error::other)?;
        compact(&path)?;
    }
    Ok(())
}

/// The last manifest of `action`, if the journal has a readable one.
pub(crate) fn last(cache: &Cache, action: &str) -> Option<KeyParts> {
    Recalled::read(cache, &HashSet::from([action])).last(action)
}

/// The journal read once for a whole run, its lines found by action but not parsed: a run in
/// which one action of a thousand misses parses that action's line, not the thousand (a
/// megabyte of JSON at 1,000 packages).
pub(crate) struct Recalled {
    bytes: Vec<u8>,
    /// The lines of each wanted action, newest first, as ranges of `bytes`.
    lines: HashMap<String, Vec<Range<usize>>>,
}

impl Recalled {
    /// The journal's lines of each action of `wanted`; none when it cannot be read.
    pub(crate) fn read(cache: &Cache, wanted: &HashSet<&str>) -> Recalled {
        let bytes = fs::read(cache.journal_file()).unwrap_or_default();
        let mut lines: HashMap<String, Vec<Range<usize>>> = HashMap::new();
        let mut end = bytes.len();
        for line in bytes.split(|b| *b == b'\n').rev() {
            let start = end - line.len();
            let range = start..end;
            end = start.saturating_sub(1);
            if let Some(action) = action_of(line)
                && wanted.contains(action.as_ref())
            {
                lines.entry(action.into_owned()).or_default().push(range);
            }
        }
        Recalled { bytes, lines }
    }

    /// The last readable manifest of `action`: a torn or unreadable line is skipped, and an
    /// older one of the action may still be read.
    pub(crate) fn last(&self, action: &str) -> Option<KeyParts> {
        self.lines
            .get(action)?
            .iter()
            .filter_map(|range| serde_json::from_slice::<KeyParts>(&self.bytes[range.clone()]).ok())
            .find(|parts| parts.action == action)
    }
}

/// The action a journal line is about, read where [`KeyParts`] puts it, at the line's start
/// (`{"action":"a:build",`), without parsing the rest; a line that does not start so, or whose
/// name holds an escape, is parsed as far as its `action`.
fn action_of(line: &[u8]) -> Option<Cow<'_, str>> {
    if let Some(rest) = line.strip_prefix(br#"{"action":""#)
        && let Some(close) = rest.iter().position(|b| matches!(b, b'"' | b'\\'))
        && rest[close] == b'"'
    {
        return std::str::from_utf8(&rest[..close]).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<Head>(line)
        .ok()
        .map(|head| Cow::Owned(head.action))
}

/// The size the journal had after its last compaction (its header), or 0.
fn compacted_bytes(path: &Path) -> u64 {
    let mut head = [0u8; 64];
    let read = fs::File::open(path).and_then(|mut f| f.read(&mut head));
    let Ok(n) = read else { return 0 };
    head[..n]
        .split(|b| *b == b'\n')
        .next()
        .and_then(|line| serde_json::from_slice::<Header>(line).ok())
        .map_or(0, |header| header.compacted_bytes)
}

/// Rewrites the journal with the last readable line of each action, in the order of those
/// lines, unless another appender has just done so.
fn compact(path: &Path) -> io::Result<()> {
    let bytes = fs::read(path)?;
    let size = bytes.len() as u64;
    if size <= COMPACT_AT || size <= 2 * compacted_bytes(path) {
        return Ok(());
    }
    let mut seen = HashSet::new();
    let mut kept: Vec<&[u8]> = Vec::new();
    for line in bytes.split(|b| *b == b'\n').rev() {
        if let Some(action) = action_of(line)
            && seen.insert(action)
        {
            kept.push(line);
        }
    }
    let body_len: usize = kept.iter().map(|line| line.len() + 1).sum();
    let mut out = Vec::with_capacity(body_len + 64);
    let header = Header {
        compacted_bytes: body_len as u64,
    };
    serde_json::to_writer(&mut out, &header).map_err(io::Error::other)?;
    out.push(b'\n');
    for line in kept.iter().rev() {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    once_fs::write_replacing(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(action: &str, key: &str) -> KeyParts {
        KeyParts {
            action: action.to_owned(),
            key: key.to_owned(),
            version: "v".to_owned(),
            command: "true".to_owned(),
            folder: "lib".to_owned(),
            params: "{}".to_owned(),
            env: Vec::new(),
            program: "sh".to_owned(),
            program_digest: "0".repeat(64),
            outputs: Vec::new(),
            files: Vec::new(),
            files_rest: None,
            upstream: Vec::new(),
            deps: Vec::new(),
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("once-journal-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_last_readable_line_of_an_action_is_its_manifest() {
        let dir = scratch("last");
        let cache = Cache::new(&dir);
        assert_eq!(last(&cache, "a:build"), None);
        append(&cache, &parts("a:build", "1")).unwrap();
        append(&cache, &parts("a:build-more", "9")).unwrap();
        append(&cache, &parts("a:build", "2")).unwrap();
        assert_eq!(last(&cache, "a:build").unwrap().key, "2");
        assert_eq!(last(&cache, "a:build-more").unwrap().key, "9");
        // A torn line (a crash mid-append) is skipped, and the next append still reads.
        let path = cache.journal_file();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"action":"a:build","key":"3","vers"#)
            .unwrap();
        assert_eq!(last(&cache, "a:build").unwrap().key, "2");
        file.write_all(b"\n").unwrap();
        append(&cache, &parts("a:build", "4")).unwrap();
        assert_eq!(last(&cache, "a:build").unwrap().key, "4");
        // An action whose name another's starts with is not confused with it.
        assert_eq!(last(&cache, "a:buil"), None);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_run_recalls_the_last_readable_line_of_each_action_it_wants() {
        let dir = scratch("recalled");
        let cache = Cache::new(&dir);
        append(&cache, &parts("a:build", "1")).unwrap();
        append(&cache, &parts("b:build", "1")).unwrap();
        // A name with an escape in its JSON is found by parsing, not by its prefix.
        append(&cache, &parts("q\"uote:build", "1")).unwrap();
        append(&cache, &parts("a:build", "2")).unwrap();
        let path = cache.journal_file();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        // Torn: its action is read from its start, and the line before it answers.
        file.write_all(br#"{"action":"b:build","key":"3","vers"#)
            .unwrap();
        file.write_all(b"\n").unwrap();
        let wanted = HashSet::from(["a:build", "b:build", "q\"uote:build", "c:build"]);
        let recalled = Recalled::read(&cache, &wanted);
        assert_eq!(recalled.last("a:build").unwrap().key, "2");
        assert_eq!(recalled.last("b:build").unwrap().key, "1");
        assert_eq!(recalled.last("q\"uote:build").unwrap().key, "1");
        assert_eq!(recalled.last("c:build"), None);
        // Only what was wanted is kept.
        let only_a = Recalled::read(&cache, &HashSet::from(["a:build"]));
        assert_eq!(only_a.last("b:build"), None);
        assert_eq!(only_a.last("a:buil"), None);
        // No journal: nothing recalled, nothing raised.
        fs::remove_file(&path).unwrap();
        assert_eq!(Recalled::read(&cache, &wanted).last("a:build"), None);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_journal_past_twice_its_live_size_is_compacted_to_the_last_line_of_each_action() {
        let dir = scratch("compact");
        let cache = Cache::new(&dir);
        let mut big = parts("a:build", "0");
        // Lines of about 100 KB: the journal passes `COMPACT_AT` after some 80 appends.
        big.command = "x".repeat(100 * 1024);
        let mut appended = 0;
        let mut compacted = false;
        while appended < 400 {
            big.key = appended.to_string();
            append(&cache, &big).unwrap();
            append(&cache, &parts("b:build", &appended.to_string())).unwrap();
            appended += 1;
            let size = fs::metadata(cache.journal_file()).unwrap().len();
            assert!(
                size <= COMPACT_AT + 2 * 110 * 1024,
                "never far past the bound: {size}"
            );
            if compacted_bytes(&cache.journal_file()) > 0 {
                compacted = true;
            }
        }
        assert!(compacted);
        assert_eq!(last(&cache, "a:build").unwrap().key, "399");
        assert_eq!(last(&cache, "b:build").unwrap().key, "399");
        fs::remove_dir_all(dir).unwrap();
    }
}
