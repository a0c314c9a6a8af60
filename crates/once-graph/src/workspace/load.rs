//! Reading a workspace's files: manifests with a size bound and their stamps, and folder globs
//! expanded by one bounded walker that records what it saw.
//!
//! It must never parse what it reads (that is `manifest`'s and `discover`'s), never follow a
//! glob outside the root, and never let a cut-short walk go unreported.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use once_fs::Stamp;

use crate::MANIFEST_FILE;
use crate::diagnostic::{Diagnostic, Severity, SourceFile};

/// What one folder glob's expansion looked at: each folder it listed, and each file it looked
/// for with the answer. While every listed folder's stamp proves it holds the same names, the
/// expansion visits the same folders; while each file looked for is still there or still not,
/// it matches the same ones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Trace {
    pub(crate) listed: Vec<(String, Listed)>,
    pub(crate) probed: Vec<(String, bool)>,
}

/// A folder an expansion meant to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listed {
    /// Listed; its stamp taken before (by `stat`, as a listing follows a link).
    Folder(Stamp),
    /// Not there.
    Absent,
    /// Anything else (unreadable, or a stamp that could not be taken): never proven.
    Unknown,
}

impl Listed {
    /// What to record of a folder whose metadata before listing was `before`, given whether
    /// the listing worked.
    pub(crate) fn of(before: std::io::Result<std::fs::Metadata>, listed: bool) -> Listed {
        match before {
            Ok(metadata) if listed => Listed::Folder(Stamp::new(&metadata, SystemTime::now())),
            Err(error) if !listed && error.kind() == std::io::ErrorKind::NotFound => Listed::Absent,
            _ => Listed::Unknown,
        }
    }
}

/// Manifests larger than this are rejected unparsed.
pub const MAX_MANIFEST_BYTES: u64 = 16 * 1024 * 1024;

/// A manifest that was read, for staleness checks and reporting.
#[derive(Debug)]
pub(crate) struct ManifestRecord {
    pub rel: String,
    pub abs: PathBuf,
    pub hash: blake3::Hash,
    /// Its metadata when last proven to hold `hash`; `None` when it could not be taken. Behind a
    /// lock because a check that hashes a racily clean file may replace it with a newer stamp.
    pub stamp: Mutex<Option<Stamp>>,
}

impl ManifestRecord {
    /// Whether the file no longer holds the content that was loaded.
    pub(crate) fn changed(&self) -> bool {
        let mut stamp = self.stamp.lock().unwrap_or_else(PoisonError::into_inner);
        if stamp
            .as_ref()
            .is_some_and(|s| s.proves_unchanged(&self.abs))
        {
            return false;
        }
        match read_limited(&self.abs) {
            Err(_) => true,
            Ok((bytes, _)) if blake3::hash(&bytes) != self.hash => true,
            Ok((_, fresh)) => {
                // Same content. A file that was racily clean at load keeps being hashed until a
                // stamp taken now, after it has aged, can prove it unchanged by a stat alone.
                *stamp = fresh;
                false
            }
        }
    }
}

/// Reads at most `MAX_MANIFEST_BYTES + 1` bytes, so a huge file is detected
/// without reading all of it, with the file's stamp taken before the read.
pub(crate) fn read_limited(path: &Path) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata().ok();
    read_opened(file, metadata)
}

/// [`read_limited`] for a file that may be missing or no regular file (a folder, a pipe):
/// `None` then, found with the open itself and the metadata of what it opened rather than a
/// `stat` before it (discovery asks this of every package's manifest). Opened non-blocking, so a
/// pipe at the path cannot hang us.
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Option<(Vec<u8>, Option<Stamp>)>> {
    let file = match once_fs::open_nonblocking(path) {
        Ok(file) => file,
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Ok(None);
    }
    read_opened(file, Some(metadata)).map(Some)
}

fn read_opened(
    file: std::fs::File,
    metadata: Option<std::fs::Metadata>,
) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    let stamp = metadata.as_ref().map(|m| Stamp::new(m, SystemTime::now()));
    // Sized up front: growing a megabytes-long buffer by doubling costs copies and page faults.
    let len = metadata.map_or(0, |m| m.len()).min(MAX_MANIFEST_BYTES + 1);
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut out)?;
    Ok((out, stamp))
}

/// Checks size and UTF-8; `None` (with a diagnostic) when the file can't be parsed.
pub(crate) fn decode(rel: &str, bytes: Vec<u8>, diags: &mut Vec<Diagnostic>) -> Option<SourceFile> {
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        diags.push(
            SourceFile::new(rel.into(), String::new())
                .error(
                    0,
                    "file-too-large",
                    format!("`{rel}` is larger than 16 MiB; it was not parsed"),
                )
                .expected("a manifest of at most 16 MiB"),
        );
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Some(SourceFile::new(rel.into(), text)),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
            let len = prefix.len();
            diags.push(
                SourceFile::new(rel.into(), prefix)
                    .error(
                        len,
                        "not-utf8",
                        format!("`{rel}` is not valid UTF-8 (first bad byte at offset {valid})"),
                    )
                    .expected("UTF-8 text"),
            );
            None
        }
    }
}

/// How many folders deep a glob with `**` is followed below its literal prefix. A bound, so a
/// tree of links or a generated folder nobody meant to search cannot make a load endless; a walk
/// it cuts short is reported ([`Expanded::cut_at`]), never silently dropped.
pub(crate) const MAX_GLOB_DEPTH: usize = 32;

/// What one folder glob matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// How many matching folders hold the file looked for.
    pub found: usize,
    /// The first folder (in sorted order) at [`MAX_GLOB_DEPTH`] that has folders of its own the
    /// walk did not enter: what lies below it was never searched.
    pub cut_at: Option<String>,
}

/// Folders (relative, `/`-separated, sorted, unique) matching the member
/// globs that hold a once.toml; plus per glob what it matched or its error.
pub(crate) fn expand_members(
    root: &Path,
    globs: &[String],
) -> (Vec<String>, Vec<Result<Expanded, String>>) {
    expand_folders(root, globs, MANIFEST_FILE)
}

/// Folders (relative, `/`-separated, sorted, unique) matching `globs` that hold a file named
/// `holding`; plus per glob what it matched or its error. Hidden folders, `node_modules` and
/// `target` are never entered.
pub(crate) fn expand_folders(
    root: &Path,
    globs: &[String],
    holding: &str,
) -> (Vec<String>, Vec<Result<Expanded, String>>) {
    let mut holds = |_: &str, file: String| root.join(file).is_file();
    expand_folders_traced(root, globs, holding, None, &mut holds)
}

/// The folders of `abs` a folder glob may enter, by name.
fn enterable(entries: std::fs::ReadDir) -> impl Iterator<Item = String> {
    entries.flatten().filter_map(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        let skipped = name.starts_with('.') || name == "node_modules" || name == "target";
        (!skipped && entry.file_type().is_ok_and(|t| t.is_dir())).then_some(name)
    })
}

/// [`expand_folders`], recording in `trace` each folder it listed (stamped before the listing)
/// and each file it looked for, so a later check can prove the same expansion by `stat`s.
/// `holds(folder, file)` says whether a matching folder holds the regular file looked for (both
/// relative to `root`, the file `folder/holding`).
pub(crate) fn expand_folders_traced(
    root: &Path,
    globs: &[String],
    holding: &str,
    mut trace: Option<&mut Trace>,
    holds: &mut dyn FnMut(&str, String) -> bool,
) -> (Vec<String>, Vec<Result<Expanded, String>>) {
    let mut all = Vec::new();
    let mut per = Vec::with_capacity(globs.len());
    for g in globs {
        let clean = g.trim_end_matches('/');
        let matcher = match globset::GlobBuilder::new(clean)
            .literal_separator(true)
            .build()
        {
            Ok(m) => m.compile_matcher(),
            Err(e) => {
                per.push(Err(e.kind().to_string()));
                continue;
            }
        };
        // Walk only below the glob's literal prefix, and only as deep as it can match.
        let comps: Vec<&str> = clean
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let literal = comps
            .iter()
            .take_while(|c| !c.contains(['*', '?', '[', '{']))
            .count();
        if comps[..literal].contains(&"..") {
            per.push(Err("member globs must stay inside the workspace".into()));
            continue;
        }
        let unbounded = comps.contains(&"**");
        let max_depth = if unbounded {
            MAX_GLOB_DEPTH
        } else {
            comps.len() - literal
        };
        let prefix = comps[..literal].join("/");
        let mut found = 0;
        let mut cut_at: Option<String> = None;
        let mut stack = vec![(prefix, 0usize)];
        while let Some((rel, depth)) = stack.pop() {
            let abs = if rel.is_empty() {
                root.to_path_buf()
            } else {
                root.join(&rel)
            };
            if !rel.is_empty() && matcher.is_match(&rel) {
                let file = format!("{rel}/{holding}");
                let held = holds(&rel, file.clone());
                if let Some(trace) = trace.as_deref_mut() {
                    trace.probed.push((file, held));
                }
                if held {
                    found += 1;
                    all.push(rel.clone());
                }
            }
            // A glob without `**` cannot match deeper, so stopping there loses nothing; only a
            // `**` walk is listed once more at the bound, to tell whether it was cut short.
            if depth >= max_depth && !unbounded {
                continue;
            }
            let before = trace.is_some().then(|| std::fs::metadata(&abs));
            let entries = std::fs::read_dir(&abs);
            if let (Some(trace), Some(before)) = (trace.as_deref_mut(), before) {
                trace
                    .listed
                    .push((rel.clone(), Listed::of(before, entries.is_ok())));
            }
            let Ok(entries) = entries else {
                continue;
            };
            let mut children = enterable(entries);
            if depth >= max_depth {
                if children.next().is_some() && cut_at.as_ref().is_none_or(|c| rel < *c) {
                    cut_at = Some(rel);
                }
                continue;
            }
            // Taken off the stack in name order: a folder's matches are probed, and so read,
            // in the order the ecosystems then use them.
            let mut names: Vec<String> = children.collect();
            names.sort_unstable_by(|a, b| b.cmp(a));
            for name in names {
                let child = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                stack.push((child, depth + 1));
            }
        }
        per.push(Ok(Expanded { found, cut_at }));
    }
    all.sort();
    all.dedup();
    (all, per)
}

/// The warning for a `**` walk that [`MAX_GLOB_DEPTH`] cut short at `folder`, at `offset` of
/// `src` (the glob, or the list it is in). `fix` says where to name the deeper folder instead.
pub(crate) fn glob_too_deep(
    src: &SourceFile,
    offset: usize,
    glob: &str,
    folder: &str,
    fix: &str,
) -> Diagnostic {
    src.diag(
        offset,
        Severity::Warning,
        "glob-too-deep",
        format!(
            "folder glob `{glob}` is searched only {MAX_GLOB_DEPTH} folders deep and stopped at \
             `{folder}`: nothing below it was found"
        ),
    )
    .help(fix.to_string())
}
