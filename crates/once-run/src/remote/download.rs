//! Downloading a REAPI `ActionResult` for the local cache: shared by a remote cache hit and a
//! remote execution, so that both restore exactly the same way (all or nothing, checked).
//!
//! A result's output folders (`Tree` messages, which a worker sends for an output path that is
//! a folder) are first flattened into the files they hold, each named from the target's
//! folder; then every output must be a plain relative path its action's `outputs` globs match,
//! within the size limits, and every blob is checked against its SHA-256 before the result is
//! handed over. This module must never write outside the staging folder it is given, never
//! follow or restore a link, and never allocate from a size the server states.

use std::collections::HashMap;
use std::path::Path;

use globset::GlobSet;
use once_remote::{Blob, Bytes, Client, digest_of, reapi};
use prost::Message;

use crate::cache::LOG_CAP;
use crate::fetched::Fetched;

/// The bounds a result must keep to be downloaded.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The server's URL, for messages.
    pub url: String,
    pub max_blob: u64,
    pub max_result: u64,
}

/// Which of the command's streams make the log kept with the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Log {
    /// stdout only: what a remote cache hit replays (once uploads its log as stdout).
    Stdout,
    /// stdout, then stderr: what a worker's run printed.
    Both,
}

/// What a download found.
pub(crate) enum Downloaded {
    Fetched(Fetched),
    /// A result this client will not restore (a failure, outputs outside `outputs`, links).
    NotRestorable,
    /// Over the limits, with the sentence that says which and how to raise them.
    TooLarge(String),
    /// A blob the result names is gone from the server: a miss.
    Lost,
    /// The server sent bytes that do not match their digest.
    Corrupt(String),
}

/// Downloads `result`'s outputs and log, all of them or nothing; blobs over 1 MiB go to
/// staging files in `spill`.
pub(crate) fn download(
    client: &Client,
    result: &reapi::ActionResult,
    outputs: &GlobSet,
    spill: &Path,
    limits: &Limits,
    log: Log,
) -> Result<Downloaded, once_remote::Error> {
    let Some(files) = flattened(client, result, spill, limits)? else {
        return Ok(Downloaded::NotRestorable);
    };
    if !restorable(result.exit_code, &files, outputs) {
        return Ok(Downloaded::NotRestorable);
    }
    if let Err(reason) = within_limits(&files, limits) {
        return Ok(Downloaded::TooLarge(reason));
    }
    let mut wanted: Vec<reapi::Digest> = files
        .iter()
        .filter(|file| file.contents.is_empty())
        .filter_map(|file| file.digest.clone())
        .filter(|digest| digest.size_bytes > 0)
        .collect();
    let small_enough = |d: &reapi::Digest| {
        u64::try_from(d.size_bytes).is_ok_and(|size| size <= LOG_CAP.min(limits.max_blob))
    };
    let stdout = result.stdout_digest.clone().filter(small_enough);
    let stderr = match log {
        Log::Stdout => None,
        Log::Both => result.stderr_digest.clone().filter(small_enough),
    };
    wanted.extend(stdout.iter().cloned());
    wanted.extend(stderr.iter().cloned());
    wanted.sort_by(|a, b| a.hash.cmp(&b.hash).then(a.size_bytes.cmp(&b.size_bytes)));
    wanted.dedup();
    let read = if wanted.is_empty() {
        Vec::new()
    } else {
        client.read_blobs(&wanted, spill)?
    };
    let mut blobs: Vec<Blob> = Vec::with_capacity(read.len() + files.len());
    // Position in `wanted` -> index in `blobs`, for the blobs the server had.
    let mut found: Vec<Option<usize>> = Vec::with_capacity(read.len());
    for blob in read {
        found.push(blob.map(|blob| {
            blobs.push(blob);
            blobs.len() - 1
        }));
    }
    let index_of = |digest: &reapi::Digest| -> Option<usize> {
        let i = wanted.iter().position(|w| w == digest)?;
        found.get(i).copied().flatten()
    };
    let mut fetched = Vec::with_capacity(files.len());
    for file in &files {
        let digest = file.digest.clone().unwrap_or_default();
        let index = if file.contents.is_empty() {
            match index_of(&digest) {
                Some(index) => index,
                None if digest.size_bytes == 0 => {
                    blobs.push(Blob::Memory(Bytes::new()));
                    blobs.len() - 1
                }
                None => return Ok(Downloaded::Lost),
            }
        } else if digest_of(&file.contents) == digest {
            blobs.push(Blob::Memory(Bytes::from(file.contents.clone())));
            blobs.len() - 1
        } else {
            return Ok(Downloaded::Corrupt(format!(
                "the server at `{}` inlined bytes of `{}` that do not match its digest",
                limits.url, file.path
            )));
        };
        fetched.push((file.path.clone(), index, file.is_executable));
    }
    let log_index = match (stdout.as_ref().and_then(index_of), stderr.as_ref()) {
        (out, None) => out,
        (out, Some(err)) => {
            let mut both = out.map_or_else(Vec::new, |i| bytes(&blobs[i]));
            if let Some(i) = index_of(err) {
                both.extend(bytes(&blobs[i]));
            }
            both.truncate(usize::try_from(LOG_CAP).unwrap_or(usize::MAX));
            blobs.push(Blob::Memory(Bytes::from(both)));
            Some(blobs.len() - 1)
        }
    };
    Ok(Downloaded::Fetched(Fetched {
        blobs,
        outputs: fetched,
        log: log_index,
        duration_ms: duration_of(result),
    }))
}

/// A blob's bytes (a log: bounded by [`LOG_CAP`] before it was downloaded).
fn bytes(blob: &Blob) -> Vec<u8> {
    match blob {
        Blob::Memory(bytes) => bytes.to_vec(),
        Blob::File(file) => std::fs::read(file.path()).unwrap_or_default(),
    }
}

/// The result's output files, with every file of its output folders added (named from the
/// target's folder); `None` when it holds a link, or a folder whose `Tree` is missing, broken
/// or over the limits.
// The two deprecated link lists are still filled by servers of API 2.0; a result with links
// in them is one this client cannot restore either.
#[allow(deprecated)]
fn flattened(
    client: &Client,
    result: &reapi::ActionResult,
    spill: &Path,
    limits: &Limits,
) -> Result<Option<Vec<reapi::OutputFile>>, once_remote::Error> {
    if !result.output_symlinks.is_empty()
        || !result.output_file_symlinks.is_empty()
        || !result.output_directory_symlinks.is_empty()
    {
        return Ok(None);
    }
    let mut files = result.output_files.clone();
    for folder in &result.output_directories {
        let Some(digest) = &folder.tree_digest else {
            return Ok(None);
        };
        if u64::try_from(digest.size_bytes).map_or(true, |size| size > limits.max_blob) {
            return Ok(None);
        }
        let Some(blob) = client.read_blob(digest, spill)? else {
            return Ok(None);
        };
        let Ok(tree) = reapi::Tree::decode(bytes(&blob).as_slice()) else {
            return Ok(None);
        };
        let Some(inside) = tree_files(&tree, &folder.path) else {
            return Ok(None);
        };
        files.extend(inside);
    }
    Ok(Some(files))
}

/// Every file of `tree`, named `prefix/...`; `None` for a link, a folder the tree lacks, or a
/// tree deeper than any real output (a loop of digests).
fn tree_files(tree: &reapi::Tree, prefix: &str) -> Option<Vec<reapi::OutputFile>> {
    const MAX_DEPTH: usize = 64;
    let root = tree.root.as_ref()?;
    let children: HashMap<String, &reapi::Directory> = tree
        .children
        .iter()
        .map(|child| (digest_of(&child.encode_to_vec()).hash, child))
        .collect();
    let mut files = Vec::new();
    let mut stack: Vec<(&reapi::Directory, String, usize)> = vec![(root, prefix.to_owned(), 0)];
    while let Some((folder, path, depth)) = stack.pop() {
        if depth > MAX_DEPTH || !folder.symlinks.is_empty() {
            return None;
        }
        for file in &folder.files {
            files.push(reapi::OutputFile {
                path: format!("{path}/{}", file.name),
                digest: file.digest.clone(),
                is_executable: file.is_executable,
                ..reapi::OutputFile::default()
            });
        }
        for inner in &folder.directories {
            let child = children.get(&inner.digest.as_ref()?.hash)?;
            stack.push((child, format!("{path}/{}", inner.name), depth + 1));
        }
    }
    Some(files)
}

/// Whether this client may restore a result with `files`: a success, each file with a digest
/// and a plain relative path that `outputs` matches, each path once.
pub(crate) fn restorable(exit_code: i32, files: &[reapi::OutputFile], outputs: &GlobSet) -> bool {
    if exit_code != 0 {
        return false;
    }
    let mut seen: Vec<&str> = Vec::with_capacity(files.len());
    for file in files {
        let plain = !file.path.is_empty()
            && file.path.split('/').all(|part| {
                !part.is_empty() && part != "." && part != ".." && !part.contains('\\')
            });
        if !plain
            || file.digest.is_none()
            || !outputs.is_match(&file.path)
            || seen.contains(&file.path.as_str())
        {
            return false;
        }
        seen.push(&file.path);
    }
    true
}

/// `Err(why)` when `files` hold a blob over `max_blob` or more than `max_result` in all, by
/// the sizes the server states (which are all the client has before it downloads).
fn within_limits(files: &[reapi::OutputFile], limits: &Limits) -> Result<(), String> {
    let url = &limits.url;
    let mut total = 0u64;
    for file in files {
        let size = file.digest.as_ref().map_or(0, |d| d.size_bytes);
        let Ok(size) = u64::try_from(size) else {
            return Err(format!(
                "the remote cache at `{url}` states a negative size for `{}`",
                file.path
            ));
        };
        if size > limits.max_blob {
            return Err(format!(
                "the remote cache at `{url}` has a result with `{}` of {size} bytes, over the limit of {} bytes per blob: such results run locally; to fetch them, raise `[cache] max_blob` in `once.toml`, `ONCE_REMOTE_MAX_BLOB` or `--remote-max-blob`",
                file.path, limits.max_blob
            ));
        }
        total = total.saturating_add(size);
    }
    if total > limits.max_result {
        return Err(format!(
            "the remote cache at `{url}` has a result of {total} bytes, over the limit of {} bytes per result: such results run locally; to fetch them, raise `[cache] max_result` in `once.toml`, `ONCE_REMOTE_MAX_RESULT` or `--remote-max-result`",
            limits.max_result
        ));
    }
    Ok(())
}

/// How long the run that produced `result` took, from its metadata (0 when it says nothing).
pub(crate) fn duration_of(result: &reapi::ActionResult) -> u64 {
    let Some(meta) = &result.execution_metadata else {
        return 0;
    };
    span_ms(
        meta.worker_start_timestamp.as_ref(),
        meta.worker_completed_timestamp.as_ref(),
    )
    .unwrap_or(0)
}

/// Milliseconds from `start` to `end`, when both are given and in that order.
pub(crate) fn span_ms(
    start: Option<&prost_types::Timestamp>,
    end: Option<&prost_types::Timestamp>,
) -> Option<u64> {
    let millis = |t: &prost_types::Timestamp| {
        t.seconds.saturating_mul(1000) + i64::from(t.nanos / 1_000_000)
    };
    let (start, end) = (start?, end?);
    if start.seconds == 0 && start.nanos == 0 {
        return None;
    }
    u64::try_from(millis(end).checked_sub(millis(start))?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::output_globs;
    use std::time::{Duration, SystemTime};

    fn files(paths: &[&str]) -> Vec<reapi::OutputFile> {
        paths
            .iter()
            .map(|path| reapi::OutputFile {
                path: (*path).to_owned(),
                digest: Some(digest_of(path.as_bytes())),
                ..reapi::OutputFile::default()
            })
            .collect()
    }

    fn outputs() -> GlobSet {
        output_globs("t:build", &["out/**".to_owned(), "dist/app".to_owned()]).unwrap()
    }

    #[test]
    fn a_result_restores_only_plain_paths_its_outputs_name() {
        assert!(restorable(
            0,
            &files(&["out/a.js", "out/deep/b.map", "dist/app"]),
            &outputs()
        ));
        // What a hostile or confused server could name: outside the folder, absolute, through
        // dot folders, a source file, or twice the same path.
        for hostile in [
            "../out/x",
            "/etc/passwd",
            "out/../src/main.rs",
            "out/./a",
            "out//a",
            "src/main.rs",
            "out\\..\\x",
            "",
        ] {
            assert!(
                !restorable(0, &files(&[hostile]), &outputs()),
                "{hostile:?} was accepted"
            );
        }
        assert!(!restorable(0, &files(&["out/a", "out/a"]), &outputs()));
        assert!(!restorable(1, &files(&["out/a"]), &outputs()));
        let mut no_digest = files(&["out/a"]);
        no_digest[0].digest = None;
        assert!(!restorable(0, &no_digest, &outputs()));
    }

    /// A worker's folder output: the files of its `Tree`, named from the target's folder, and a
    /// tree with a link, a missing child or a name that climbs refused or left to `restorable`.
    #[test]
    fn a_tree_gives_its_files_named_from_the_output_folder() {
        let leaf = reapi::Directory {
            files: vec![reapi::FileNode {
                name: "b.js".into(),
                digest: Some(digest_of(b"b")),
                is_executable: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let root = reapi::Directory {
            files: vec![reapi::FileNode {
                name: "a.js".into(),
                digest: Some(digest_of(b"a")),
                ..Default::default()
            }],
            directories: vec![reapi::DirectoryNode {
                name: "deep".into(),
                digest: Some(digest_of(&leaf.encode_to_vec())),
            }],
            ..Default::default()
        };
        let tree = reapi::Tree {
            root: Some(root.clone()),
            children: vec![leaf],
        };
        let found = tree_files(&tree, "out").unwrap();
        let mut paths: Vec<(&str, bool)> = found
            .iter()
            .map(|f| (f.path.as_str(), f.is_executable))
            .collect();
        paths.sort_unstable();
        assert_eq!(paths, [("out/a.js", false), ("out/deep/b.js", true)]);
        assert!(restorable(0, &found, &outputs()));
        // A child the tree does not hold.
        let orphan = reapi::Tree {
            root: Some(root.clone()),
            children: Vec::new(),
        };
        assert!(tree_files(&orphan, "out").is_none());
        // A link inside.
        let mut linked = root.clone();
        linked.symlinks.push(reapi::SymlinkNode {
            name: "up".into(),
            target: "../../etc".into(),
            ..Default::default()
        });
        let linked = reapi::Tree {
            root: Some(linked),
            children: tree.children.clone(),
        };
        assert!(tree_files(&linked, "out").is_none());
        // A name that climbs comes out as a path `restorable` refuses.
        let mut climbing = root;
        climbing.files[0].name = "..".into();
        let climbing = reapi::Tree {
            root: Some(climbing),
            children: tree.children,
        };
        assert!(!restorable(
            0,
            &tree_files(&climbing, "out").unwrap(),
            &outputs()
        ));
    }

    #[test]
    fn the_duration_comes_from_the_metadata_and_is_zero_without_it() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let end = start + Duration::from_millis(1_250);
        let timed = reapi::ActionResult {
            execution_metadata: Some(reapi::ExecutedActionMetadata {
                worker_start_timestamp: Some(start.into()),
                worker_completed_timestamp: Some(end.into()),
                ..reapi::ExecutedActionMetadata::default()
            }),
            ..reapi::ActionResult::default()
        };
        assert_eq!(duration_of(&timed), 1_250);
        assert_eq!(duration_of(&reapi::ActionResult::default()), 0);
        // An end before the start says nothing.
        assert_eq!(span_ms(Some(&end.into()), Some(&start.into())), None);
    }
}
