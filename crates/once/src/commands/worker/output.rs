//! Collecting what an action left: the outputs its `Command` declares (files, and folders as
//! `Tree` messages), its stdout and its stderr, uploaded to the CAS (only the blobs the server
//! lacks) and described in the `ActionResult` the lease reports. A declared output that is not
//! there is simply absent from the result, as the API says; nothing outside the input root is
//! ever read, so an output path must stay inside it and a symlink is never followed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use once_remote::{Bytes, Client, digest_of, reapi};
use prost::Message;

/// Blobs to upload, keyed by hash so that each travels once.
#[derive(Default)]
pub struct Uploads {
    blobs: BTreeMap<String, (reapi::Digest, Bytes)>,
}

impl Uploads {
    /// Adds `data` and returns its digest.
    pub fn add(&mut self, data: Vec<u8>) -> reapi::Digest {
        let digest = digest_of(&data);
        self.blobs
            .entry(digest.hash.clone())
            .or_insert_with(|| (digest.clone(), Bytes::from(data)));
        digest
    }

    /// Sends the blobs the server does not have yet.
    pub fn send(self, client: &Client) -> Result<()> {
        let digests: Vec<reapi::Digest> = self.blobs.values().map(|(d, _)| d.clone()).collect();
        let missing = client
            .find_missing_blobs(&digests)
            .context("cannot ask the CAS which outputs it lacks")?;
        let wanted: std::collections::HashSet<&str> =
            missing.iter().map(|d| d.hash.as_str()).collect();
        let blobs: Vec<(reapi::Digest, Bytes)> = self
            .blobs
            .into_values()
            .filter(|(d, _)| wanted.contains(d.hash.as_str()))
            .collect();
        client
            .batch_update_blobs(&blobs)
            .context("cannot upload the outputs to the CAS")
    }
}

/// The output paths of `command`, relative to the input root: `output_paths` (REAPI 2.1), else
/// the older `output_files` and `output_directories`, each relative to the working directory.
pub fn declared(command: &reapi::Command) -> Result<Vec<String>> {
    // Clients older than REAPI 2.1 (and some current ones) still send the two older lists.
    #[allow(deprecated)]
    let listed: Vec<&String> = if command.output_paths.is_empty() {
        command
            .output_files
            .iter()
            .chain(&command.output_directories)
            .collect()
    } else {
        command.output_paths.iter().collect()
    };
    listed
        .into_iter()
        .map(|path| inside(&join(&command.working_directory, path)))
        .collect()
}

/// Creates the parent folder of each declared output, as a worker must before the command runs.
pub fn prepare(root: &Path, outputs: &[String]) -> Result<()> {
    for output in outputs {
        if let Some(parent) = root.join(output).parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
    }
    Ok(())
}

/// Fills `result` with what each declared output is now, adding the blobs to `uploads`.
pub fn collect(
    root: &Path,
    working_directory: &str,
    outputs: &[String],
    result: &mut reapi::ActionResult,
    uploads: &mut Uploads,
) -> Result<()> {
    for output in outputs {
        let path = root.join(output);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // Paths in a result are relative to the working directory, as in the Command.
        let named = relative_to(output, working_directory);
        if meta.is_dir() {
            let tree = tree_of(&path, uploads)?;
            let tree_digest = uploads.add(tree.encode_to_vec());
            result.output_directories.push(reapi::OutputDirectory {
                path: named,
                tree_digest: Some(tree_digest),
                ..Default::default()
            });
        } else if meta.is_file() {
            let data = std::fs::read(&path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            result.output_files.push(reapi::OutputFile {
                path: named,
                digest: Some(uploads.add(data)),
                is_executable: executable(&meta),
                ..Default::default()
            });
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .with_context(|| format!("cannot read the symlink `{}`", path.display()))?;
            result.output_symlinks.push(reapi::OutputSymlink {
                path: named,
                target: target.to_string_lossy().into_owned(),
                ..Default::default()
            });
        }
    }
    Ok(())
}

/// The `Tree` of the folder `dir`: its `Directory` and every one below it.
fn tree_of(dir: &Path, uploads: &mut Uploads) -> Result<reapi::Tree> {
    let mut children = Vec::new();
    let root = directory_of(dir, uploads, &mut children)?;
    Ok(reapi::Tree {
        root: Some(root),
        children,
    })
}

fn directory_of(
    dir: &Path,
    uploads: &mut Uploads,
    children: &mut Vec<reapi::Directory>,
) -> Result<reapi::Directory> {
    let mut entries: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list `{}`", dir.display()))?
        .map(|entry| {
            let entry = entry?;
            Ok((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            ))
        })
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot list `{}`", dir.display()))?;
    // The API wants each list sorted by name, so that equal trees have equal digests.
    entries.sort();
    let mut directory = reapi::Directory::default();
    for (name, path) in entries {
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        if meta.is_dir() {
            let child = directory_of(&path, uploads, children)?;
            let digest = digest_of(&child.encode_to_vec());
            children.push(child);
            directory.directories.push(reapi::DirectoryNode {
                name,
                digest: Some(digest),
            });
        } else if meta.is_file() {
            let data = std::fs::read(&path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            directory.files.push(reapi::FileNode {
                name,
                digest: Some(uploads.add(data)),
                is_executable: executable(&meta),
                ..Default::default()
            });
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .with_context(|| format!("cannot read the symlink `{}`", path.display()))?;
            directory.symlinks.push(reapi::SymlinkNode {
                name,
                target: target.to_string_lossy().into_owned(),
                ..Default::default()
            });
        }
    }
    Ok(directory)
}

/// `path` under `working_directory`, both relative to the input root.
fn join(working_directory: &str, path: &str) -> String {
    if working_directory.is_empty() {
        path.to_owned()
    } else {
        format!("{}/{path}", working_directory.trim_end_matches('/'))
    }
}

/// `path` (relative to the input root) as the Command named it, relative to its working folder.
fn relative_to(path: &str, working_directory: &str) -> String {
    let prefix = format!("{}/", working_directory.trim_end_matches('/'));
    if working_directory.is_empty() {
        path.to_owned()
    } else {
        path.strip_prefix(&prefix).unwrap_or(path).to_owned()
    }
}

/// `path` when it is relative and stays inside the input root (no `..`, no leading `/`).
pub fn inside(path: &str) -> Result<String> {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if path.starts_with('/') || parts.is_empty() || parts.contains(&"..") {
        bail!("the path `{path}` is not inside the input root");
    }
    Ok(parts.join("/"))
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_named_inside_the_root_and_relative_to_the_working_folder() {
        let command = reapi::Command {
            working_directory: "pkg".into(),
            output_paths: vec!["out/a.txt".into(), "dist".into()],
            ..Default::default()
        };
        assert_eq!(declared(&command).unwrap(), ["pkg/out/a.txt", "pkg/dist"]);
        assert_eq!(relative_to("pkg/out/a.txt", "pkg"), "out/a.txt");
        for bad in ["/etc/passwd", "../up", "a/../../b", ""] {
            assert!(inside(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
