//! Which examples exist, what each is for, and the JSON values `once examples list|show` print
//! and the MCP server returns. Must never touch the file system: the files are embedded.

use serde::Serialize;

use crate::Error;

// `FILES`: every embedded file as `(example, path, bytes)`, sorted; written by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/files.rs"));

/// One example: its name, what it is, and its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Example {
    /// The name to materialize it by.
    pub name: &'static str,
    /// One sentence: what you get.
    pub description: &'static str,
    /// The toolchains its capabilities use.
    pub stacks: &'static [&'static str],
}

const EXAMPLES: [Example; 4] = [
    Example {
        name: "rust-workspace",
        description: "A Cargo workspace with two crates: a library and a program that uses it",
        stacks: &["rust"],
    },
    Example {
        name: "node-package",
        description: "A Node.js package without dependencies, tested with `node --test`",
        stacks: &["node"],
    },
    Example {
        name: "python-project",
        description: "A Python project tested with the standard library's unittest",
        stacks: &["python"],
    },
    Example {
        name: "polyglot",
        description: "One workspace mixing a Rust crate, a Node.js package and a Python project, \
                      with dependencies between them",
        stacks: &["rust", "node", "python"],
    },
];

/// A file of an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExampleFile {
    /// Relative to the example's root, `/`-separated.
    pub path: &'static str,
    /// The exact content.
    pub bytes: &'static [u8],
}

impl Example {
    /// Its files, sorted by path.
    pub fn files(&self) -> impl Iterator<Item = ExampleFile> + '_ {
        FILES
            .iter()
            .filter(move |(example, _, _)| *example == self.name)
            .map(|&(_, path, bytes)| ExampleFile { path, bytes })
    }
}

/// Every example.
pub fn all() -> &'static [Example] {
    &EXAMPLES
}

/// Every example's name, in catalog order.
pub fn names() -> Vec<&'static str> {
    EXAMPLES.iter().map(|e| e.name).collect()
}

/// The example called `name`.
pub fn find(name: &str) -> Result<&'static Example, Error> {
    EXAMPLES
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| Error::Unknown {
            name: name.to_string(),
            known: names(),
        })
}

/// `once examples list`: every example, without its files.
#[derive(Debug, Clone, Serialize)]
pub struct ExampleList {
    /// In catalog order.
    pub examples: Vec<ExampleRow>,
}

/// One row of [`ExampleList`].
#[derive(Debug, Clone, Serialize)]
pub struct ExampleRow {
    /// The name to materialize it by.
    pub name: &'static str,
    /// What you get.
    pub description: &'static str,
    /// The toolchains it uses.
    pub stacks: &'static [&'static str],
    /// How many files it writes.
    pub files: usize,
}

impl ExampleList {
    /// The list of every example.
    pub fn new() -> ExampleList {
        ExampleList {
            examples: EXAMPLES
                .iter()
                .map(|e| ExampleRow {
                    name: e.name,
                    description: e.description,
                    stacks: e.stacks,
                    files: e.files().count(),
                })
                .collect(),
        }
    }
}

impl Default for ExampleList {
    fn default() -> Self {
        ExampleList::new()
    }
}

/// `once examples show NAME`: one example with its file list (paths, sizes, hashes), but not
/// the files' contents, which would flood a model's context.
#[derive(Debug, Clone, Serialize)]
pub struct ExampleDetail {
    /// The name.
    pub name: &'static str,
    /// What you get.
    pub description: &'static str,
    /// The toolchains it uses.
    pub stacks: &'static [&'static str],
    /// Its files, sorted by path.
    pub files: Vec<FileRow>,
}

/// One file of [`ExampleDetail`].
#[derive(Debug, Clone, Serialize)]
pub struct FileRow {
    /// Relative to the example's root.
    pub path: &'static str,
    /// Size in bytes.
    pub bytes: usize,
    /// BLAKE3 of the content, hex.
    pub blake3: String,
}

impl ExampleDetail {
    /// The detail of `example`.
    pub fn new(example: &Example) -> ExampleDetail {
        ExampleDetail {
            name: example.name,
            description: example.description,
            stacks: example.stacks,
            files: example
                .files()
                .map(|f| FileRow {
                    path: f.path,
                    bytes: f.bytes.len(),
                    blake3: once_fs::hash_hex(f.bytes),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_file_belongs_to_a_described_example_and_back() {
        for (example, path, _) in FILES {
            assert!(
                find(example).is_ok(),
                "{example}/{path} has no catalog entry"
            );
        }
        for example in all() {
            let paths: Vec<_> = example.files().map(|f| f.path).collect();
            assert!(
                paths.contains(&"once.toml"),
                "{} has no manifest",
                example.name
            );
            assert!(
                paths.len() >= 4,
                "{} is not a complete starter",
                example.name
            );
            assert!(
                paths
                    .iter()
                    .all(|p| !p.contains("/target/") && !p.starts_with("target/")),
                "{}: build output embedded",
                example.name
            );
        }
        let error = find("rust").unwrap_err().to_string();
        assert!(error.contains("rust-workspace"), "{error}");
    }
}
