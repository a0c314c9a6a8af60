//! Fuzzing of the six parsers of `once` that take hostile input: the MCP line codec with the
//! serve loop, the manifest parser, the memory front matter, the change-set validator, the
//! window's HTTP request reader and the remote cache client's reading of a server's answers.
//!
//! This is a test-only crate (`publish = false`): no product crate may ever depend on it. Each
//! target is a `pub fn NAME(data: &[u8])` that feeds `data` to the product code and panics when a
//! property does not hold (a panic of the product code itself is a failure too). The `once-fuzz`
//! binary (`src/main.rs`) generates inputs from the seed corpus under `corpus/NAME/` and runs
//! them on stable Rust; the unit tests replay that corpus; a cargo-fuzz harness may call the same
//! functions. A target must never write outside its own scratch folder under the system's
//! temporary directory, and never depend on anything but its input (so a saved input replays).

pub mod changes;
pub mod http;
pub mod manifest;
pub mod mcp;
pub mod memory;
pub mod mutate;
pub mod remote;
mod scratch;

use std::path::{Path, PathBuf};

/// One fuzz target: its name (also its corpus folder), the function that checks one input, and
/// the tokens the mutator inserts into its inputs.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// `mcp`, `manifest`, `memory`, `changes`, `http` or `remote`.
    pub name: &'static str,
    /// Panics when a property is violated.
    pub run: fn(&[u8]),
    /// Tokens that mean something to this parser.
    pub dictionary: &'static [&'static str],
    /// The longest input worth generating.
    pub max_len: usize,
}

/// Every target, in the order `once-fuzz all` runs them.
pub const TARGETS: [Target; 6] = [
    Target {
        name: "mcp",
        run: mcp::mcp,
        dictionary: mcp::DICTIONARY,
        max_len: 16 * 1024,
    },
    Target {
        name: "manifest",
        run: manifest::manifest,
        dictionary: manifest::DICTIONARY,
        max_len: 16 * 1024,
    },
    Target {
        name: "memory",
        run: memory::memory,
        dictionary: memory::DICTIONARY,
        max_len: 16 * 1024,
    },
    Target {
        name: "changes",
        run: changes::changes,
        dictionary: changes::DICTIONARY,
        max_len: 8 * 1024,
    },
    Target {
        name: "http",
        run: http::http,
        dictionary: http::DICTIONARY,
        max_len: 32 * 1024,
    },
    Target {
        name: "remote",
        run: remote::remote,
        dictionary: remote::DICTIONARY,
        max_len: 64 * 1024,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.into_iter().find(|t| t.name == name)
}

/// The seed corpus of a target: `corpus/NAME/` in this crate's source folder.
pub fn corpus_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name)
}

/// Every file of a target's seed corpus, sorted by name so a seeded run is reproducible.
pub fn corpus(name: &str) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus_dir(name))? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            let file = entry.file_name().to_string_lossy().into_owned();
            out.push((file, std::fs::read(entry.path())?));
        }
    }
    out.sort();
    Ok(out)
}

/// Tokens shared by every target: path tricks, control bytes, numbers at the edges.
pub const COMMON_TOKENS: &[&str] = &[
    "..",
    ".git",
    ".once",
    "/",
    "\\",
    "\0",
    "\n",
    "\r\n",
    "\t",
    "\"",
    "'",
    "\u{feff}",
    "\u{202e}",
    "é",
    "😀",
    "-1",
    "0",
    "18446744073709551615",
    "9223372036854775808",
    "1e400",
    "null",
    "true",
    "[]",
    "{}",
];

#[cfg(test)]
pub(crate) fn replay_corpus(name: &str) {
    let target = target(name).expect("a known target");
    let seeds = corpus(name).expect("the corpus folder should be readable");
    assert!(
        seeds.len() >= 3,
        "corpus/{name} should hold a few seeds, found {}",
        seeds.len()
    );
    for (file, data) in seeds {
        let outcome = std::panic::catch_unwind(|| (target.run)(&data));
        assert!(outcome.is_ok(), "corpus/{name}/{file} fails its properties");
    }
}
