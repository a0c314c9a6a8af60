//! Staleness: whether what an entry is about changed since it was written. A linked file is
//! stale when its content hash differs from the one recorded, or it is gone; a linked target is
//! stale when the build graph no longer has it. The graph is asked through a closure, so this
//! crate never depends on `once-graph`.
//!
//! Must never write anything, and never fail: an unreadable file is reported as gone.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::model::Entry;

/// Why an entry is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Stale {
    /// A linked file's content changed.
    Changed {
        /// The file, relative to the workspace root.
        path: String,
    },
    /// A linked file is gone.
    Missing {
        /// The file, relative to the workspace root.
        path: String,
    },
    /// A linked target is no longer in the build graph.
    NoTarget {
        /// The target's name.
        target: String,
    },
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stale::Changed { path } => write!(f, "`{path}` changed"),
            Stale::Missing { path } => write!(f, "`{path}` is gone"),
            Stale::NoTarget { target } => write!(f, "target `{target}` no longer exists"),
        }
    }
}

/// The content hash of the file at `relative` under `root`, hex. Opened only through
/// `once_fs::open_inside`, the one check both doors (CLI and MCP) share: a file whose real
/// location is outside the workspace, or inside `.git` or `.once`, is refused, so memory is never
/// a way to learn the hash of a file elsewhere.
pub(crate) fn hash_file(root: &Path, relative: &str) -> Result<String, String> {
    let mut file = once_fs::open_inside(root, relative).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| e.to_string())?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

/// Checks entries against the workspace, hashing each linked file at most once.
pub struct Checker<'a> {
    root: &'a Path,
    target_exists: &'a dyn Fn(&str) -> bool,
    hashes: HashMap<String, Option<String>>,
}

impl std::fmt::Debug for Checker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl<'a> Checker<'a> {
    /// A checker for the workspace at `root`.
    pub fn new(root: &'a Path, target_exists: &'a dyn Fn(&str) -> bool) -> Checker<'a> {
        Checker {
            root,
            target_exists,
            hashes: HashMap::new(),
        }
    }

    /// Every reason `entry` is stale; empty when it is fresh.
    pub fn check(&mut self, entry: &Entry) -> Vec<Stale> {
        let mut reasons = Vec::new();
        for link in &entry.paths {
            let root = self.root;
            let now = self
                .hashes
                .entry(link.path.clone())
                .or_insert_with(|| hash_file(root, &link.path).ok());
            match now {
                None => reasons.push(Stale::Missing {
                    path: link.path.clone(),
                }),
                Some(hash) if *hash != link.blake3 => reasons.push(Stale::Changed {
                    path: link.path.clone(),
                }),
                Some(_) => {}
            }
        }
        for target in &entry.targets {
            if !(self.target_exists)(target) {
                reasons.push(Stale::NoTarget {
                    target: target.clone(),
                });
            }
        }
        reasons
    }
}
