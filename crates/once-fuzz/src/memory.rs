//! The `memory` target: an entry file and the id its name gives, through
//! `once_memory::front_matter::parse`, and every entry that parses back through `render`.
//!
//! An input is the expected id, a newline, then the file's text (lossily decoded: the store
//! reads files as UTF-8 before parsing). Properties: `parse` never panics; a parsed entry has the
//! expected id; and `parse(render(entry))` is that same entry, so an entry the store rewrites is
//! never changed or broken by the rewrite. Pure text: must never touch the file system.

use once_memory::front_matter;

/// Keys and values of the front matter.
pub const DICTIONARY: &[&str] = &[
    "+++\n",
    "+++",
    "id = ",
    "title = ",
    "kind = ",
    "\"gotcha\"",
    "\"decision\"",
    "\"howto\"",
    "\"convention\"",
    "\"note\"",
    "tags = [",
    "targets = [",
    "created = ",
    "updated = ",
    "revision = ",
    "[[paths]]\n",
    "path = ",
    "blake3 = ",
    "2025-01-31T09:30:00Z",
    "2025-01-31T09:30:00.123456789+01:00",
    "2025-01-31",
    "09:30:00",
    "1979-05-27 07:32:00",
    "20250131-093000-4f2a9c1e",
    "\\u0000",
    "\\u001F",
    "\\u007F",
    "\\u0085",
    "\\u2028",
    "\\U0010FFFF",
    "\\b",
    "\\f",
    "\\e",
    "\\x7f",
    "\\\"",
    "\"\"\"",
    "'''",
    "\r",
    "\u{b}",
    "\u{7f}",
];

/// Parses, and re-parses what rendering a parsed entry writes.
pub fn memory(data: &[u8]) {
    let data = String::from_utf8_lossy(data);
    let (id, text) = data.split_once('\n').unwrap_or((&data, ""));
    let Ok(entry) = front_matter::parse(text, id) else {
        return;
    };
    assert_eq!(entry.id, id, "an entry parsed under another id");
    let rendered = front_matter::render(&entry);
    match front_matter::parse(&rendered, &entry.id) {
        Ok(again) => assert_eq!(
            again, entry,
            "render then parse changed the entry:\n{rendered}"
        ),
        Err(problem) => panic!("a rendered entry does not parse ({problem:?}):\n{rendered}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seed_corpus_keeps_every_property() {
        crate::replay_corpus("memory");
    }
}
