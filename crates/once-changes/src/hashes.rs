//! The hashes a change set names its bases by, and `once_query_hashes` / `once query hashes`,
//! which tells them.
//!
//! A replacement or deletion must name the content it was made from (its base), so that a file
//! that moved on since is never overwritten. An agent names it as `sha256:<hex>` (what
//! `sha256sum FILE` prints, which every shell has), `blake3:<hex>`, or 64 bare hex digits, taken
//! as BLAKE3 as they always were. Both digests and the size of a file come from one read, made
//! through `once_fs::Root` exactly as a change set reaches the file: never through a link, never
//! inside `.git` or `.once`, never a folder.
//!
//! This module only reads: it must never create, change or remove a file, and never follow a
//! link, even to answer a question.

use std::io::{self, Read};
use std::path::Path;

use once_fs::{Kind, Root, WorkspacePath};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::Error;

/// The most paths one question may ask about: the answer stays small whatever is asked.
pub const MAX_PATHS: usize = 100;
/// The longest path, in characters, one question may name.
pub const MAX_PATH_CHARS: usize = 1024;
/// Most bytes of rows in one answer: an MCP answer holds its value twice and must stay under
/// 40 KB, however long the paths asked about.
const ROWS_BYTES: usize = 16 * 1024;
/// Bytes of hex in either digest.
const HEX_DIGITS: usize = 64;

/// A base as an agent names it: which digest, and its lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    Blake3(String),
    Sha256(String),
}

impl Base {
    /// `sha256:<hex>`, `blake3:<hex>` (either prefix in any case), or 64 bare hex digits, which
    /// mean BLAKE3.
    pub(crate) fn parse(text: &str) -> Result<Base, String> {
        let text = text.trim();
        let (make, hex): (fn(String) -> Base, &str) = match text.split_once(':') {
            Some((algorithm, hex)) if algorithm.eq_ignore_ascii_case("sha256") => {
                (Base::Sha256, hex)
            }
            Some((algorithm, hex)) if algorithm.eq_ignore_ascii_case("blake3") => {
                (Base::Blake3, hex)
            }
            Some(_) => return Err(Base::expected(text)),
            None => (Base::Blake3, text),
        };
        if hex.len() != HEX_DIGITS || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Base::expected(text));
        }
        Ok(make(hex.to_ascii_lowercase()))
    }

    fn expected(text: &str) -> String {
        let shown: String = text.chars().take(80).collect();
        let cut = if shown.len() < text.len() { "…" } else { "" };
        format!(
            "`base` must be `sha256:<64 hex digits>` (what `sha256sum FILE` prints), \
             `blake3:<64 hex digits>` or 64 hex digits (BLAKE3), not `{shown}{cut}`; \
             once_query_hashes gives both"
        )
    }

    /// The digest's name, as a refusal shows it.
    pub(crate) fn algorithm(&self) -> &'static str {
        match self {
            Base::Blake3(_) => "BLAKE3",
            Base::Sha256(_) => "SHA-256",
        }
    }

    /// The hex digits.
    pub(crate) fn hex(&self) -> &str {
        match self {
            Base::Blake3(hex) | Base::Sha256(hex) => hex,
        }
    }

    /// The same digest of `digest`, to compare with this base.
    pub(crate) fn of<'a>(&self, digest: &'a Digest) -> &'a str {
        match self {
            Base::Blake3(_) => &digest.blake3,
            Base::Sha256(_) => &digest.sha256,
        }
    }
}

/// What one read of a file learns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digest {
    pub(crate) size: u64,
    pub(crate) blake3: String,
    pub(crate) sha256: String,
}

/// The digests of the file at `path`, or `None` when there is none, reached through `root` (so a
/// link anywhere on the way, or a `.git` or `.once` folder, is refused). A folder, a link or
/// anything but a regular file is an error: a change set changes files only. Each problem is a
/// sentence about the path.
pub(crate) fn digest(root: &Root, path: &WorkspacePath) -> Result<Option<Digest>, String> {
    let Some(folder) = root.parent_of(path).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let name = path.name();
    match folder.kind(name).map_err(|e| format!("`{path}`: {e}"))? {
        None => return Ok(None),
        Some(Kind::File(_)) => {}
        Some(Kind::Link) => {
            return Err(format!(
                "`{path}` is a symbolic link; once never reads, writes through or over a link"
            ));
        }
        Some(Kind::Folder) => {
            return Err(format!(
                "`{path}` is a folder; a change set changes files only"
            ));
        }
        Some(_) => return Err(format!("`{path}` is not a regular file")),
    }
    // `open` refuses a link or anything but a regular file again: what was a file a moment ago
    // may not be one now.
    let file = match folder.open(name) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot read `{path}`: {error}")),
    };
    read_digest(file)
        .map(Some)
        .map_err(|e| format!("cannot read `{path}`: {e}"))
}

/// Both digests and the size of everything `reader` gives, in one pass.
fn read_digest(mut reader: impl Read) -> io::Result<Digest> {
    let mut blake3 = blake3::Hasher::new();
    let mut sha256 = Sha256::new();
    let mut size: u64 = 0;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        blake3.update(&buffer[..n]);
        sha256.update(&buffer[..n]);
        size += n as u64;
    }
    Ok(Digest {
        size,
        blake3: blake3.finalize().to_hex().to_string(),
        sha256: sha256
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
    })
}

/// One path's row of [`Hashes`]: its digests, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileHashes {
    /// The path as asked, or normalized (`./a//b` is `a/b`) when it is one a change set can name.
    pub path: String,
    /// Whether a regular file is there; absent with `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// Its size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// BLAKE3, lowercase hex: pass `blake3:<it>` as a change's `base`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
    /// SHA-256, lowercase hex, as `sha256sum` prints it: pass `sha256:<it>` as a change's `base`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Why a change set cannot name this path (outside the workspace, through a link, inside
    /// `.git` or `.once`, a folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `once query hashes` and `once_query_hashes`: one row per path asked, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hashes {
    /// One row per path, in the order asked, as many as fit in the answer.
    pub files: Vec<FileHashes>,
    /// The paths at the end of the question that did not fit: ask about them again.
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Hashes {
    /// Whether every path is a file with its digests.
    pub fn all_found(&self) -> bool {
        self.omitted == 0 && self.files.iter().all(|f| f.exists == Some(true))
    }
}

/// The size, BLAKE3 and SHA-256 of each of `paths` (relative to the workspace at `root`), read
/// as a change set would reach them. A path a change set could not name gets an `error` of its
/// own; only a question out of bounds (no path, more than [`MAX_PATHS`], one longer than
/// [`MAX_PATH_CHARS`]) or a root that cannot be opened fails the whole answer.
pub fn hashes(root: &Path, paths: &[String]) -> Result<Hashes, Error> {
    let mut problems = Vec::new();
    if paths.is_empty() {
        problems.push("no path given: name at least one file".to_string());
    }
    if paths.len() > MAX_PATHS {
        problems.push(format!(
            "{} paths given; ask about at most {MAX_PATHS} at a time",
            paths.len()
        ));
    }
    if paths.iter().any(|p| p.chars().count() > MAX_PATH_CHARS) {
        problems.push(format!("a path is longer than {MAX_PATH_CHARS} characters"));
    }
    if !problems.is_empty() {
        return Err(Error::Invalid { problems });
    }
    let opened = Root::open(root).map_err(Error::io("open", root.display()))?;
    let mut files = Vec::with_capacity(paths.len());
    let mut bytes = 0;
    for text in paths {
        let row = row(&opened, text);
        bytes += serde_json::to_string(&row).map_or(0, |json| json.len()) + 1;
        if !files.is_empty() && bytes > ROWS_BYTES {
            break;
        }
        files.push(row);
    }
    let omitted = paths.len() - files.len();
    Ok(Hashes { files, omitted })
}

fn row(root: &Root, text: &str) -> FileHashes {
    let refused = |error: String| FileHashes {
        path: text.to_string(),
        exists: None,
        size: None,
        blake3: None,
        sha256: None,
        error: Some(error),
    };
    let path = match WorkspacePath::parse(text) {
        Ok(path) => path,
        Err(error) => return refused(error.to_string()),
    };
    if let Some(part) = path.reserved() {
        return refused(format!(
            "`{path}` is inside `{part}/`, which a change set never touches"
        ));
    }
    match digest(root, &path) {
        Ok(found) => FileHashes {
            path: path.to_string(),
            exists: Some(found.is_some()),
            size: found.as_ref().map(|d| d.size),
            blake3: found.as_ref().map(|d| d.blake3.clone()),
            sha256: found.map(|d| d.sha256),
            error: None,
        },
        Err(error) => refused(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_in_every_form() {
        let hex = "ab".repeat(32);
        assert_eq!(Base::parse(&hex), Ok(Base::Blake3(hex.clone())));
        assert_eq!(
            Base::parse(&format!("blake3:{}", hex.to_uppercase())),
            Ok(Base::Blake3(hex.clone()))
        );
        assert_eq!(
            Base::parse(&format!(" SHA256:{hex}\n")),
            Ok(Base::Sha256(hex.clone()))
        );
        for bad in [
            String::new(),
            "abc".into(),
            format!("md5:{hex}"),
            format!("sha256:{}", &hex[1..]),
            format!("sha256:{hex}0"),
            format!("sha256:{}", "g".repeat(64)),
            format!("sha256 {hex}"),
            format!("{hex}  src/lib.rs"),
        ] {
            let refusal = Base::parse(&bad).expect_err(&bad);
            assert!(refusal.contains("sha256:<64 hex digits>"), "{refusal}");
            assert!(refusal.contains("once_query_hashes"), "{refusal}");
        }
        let huge = "x".repeat(10_000);
        assert!(Base::parse(&huge).expect_err("huge").len() < 400);
    }

    #[test]
    fn digests_are_those_of_the_tools_everyone_has() {
        let digest = read_digest(&b"hello\n"[..]).expect("a digest");
        assert_eq!(digest.size, 6);
        // `printf 'hello\n' | sha256sum`
        assert_eq!(
            digest.sha256,
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(digest.blake3, once_fs::hash_hex(b"hello\n"));
    }
}
