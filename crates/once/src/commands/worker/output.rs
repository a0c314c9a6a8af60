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

/// Creates the parent folder of each declared output, as a worker must before the command runs:
/// one folder at a time from the input root, refusing a link on the way (the client's input root
/// may hold one named like the output's folder, and following it would write outside).
pub fn prepare(root: &Path, outputs: &[String]) -> Result<()> {
    for output in outputs {
        let parts: Vec<&str> = output.split('/').collect();
        let mut folder = root.to_path_buf();
        for part in &parts[..parts.len().saturating_sub(1)] {
            folder.push(part);
            match std::fs::symlink_metadata(&folder) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    bail!(
                        "the output folder `{}` is a link in the input root",
                        folder.display()
                    )
                }
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => bail!("the output folder `{}` is a file", folder.display()),
                Err(_) => std::fs::create_dir(&folder)
                    .with_context(|| format!("cannot create `{}`", folder.display()))?,
            }
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
        // Never read through a link on the way: what lies behind it is not the action's.
        if through_link(root, output) {
            continue;
        }
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

/// Whether a folder on the way from `root` to `output` (not `output` itself) is a link.
fn through_link(root: &Path, output: &str) -> bool {
    let parts: Vec<&str> = output.split('/').collect();
    let mut folder = root.to_path_buf();
    parts[..parts.len().saturating_sub(1)].iter().any(|part| {
        folder.push(part);
        std::fs::symlink_metadata(&folder).is_ok_and(|m| m.file_type().is_symlink())
    })
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

    /// A client's input root may hold a link named like an output's folder: making the
    /// output's parents must not follow it out of the input root.
    #[cfg(unix)]
    #[test]
    fn an_output_folder_is_never_made_through_a_link_of_the_input_root() {
        let base = std::env::temp_dir().join(format!("once-worker-prepare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        let error = prepare(&root, &["out/deep/x.txt".to_owned()]).unwrap_err();
        assert!(format!("{error:#}").contains("is a link"), "{error:#}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // Plain folders are made as before, existing ones kept.
        std::fs::create_dir_all(root.join("dist")).unwrap();
        prepare(&root, &["dist/a/b.txt".to_owned(), "gen/c.txt".to_owned()]).unwrap();
        assert!(root.join("dist/a").is_dir() && root.join("gen").is_dir());
        // Nor is an output collected through one.
        std::fs::write(outside.join("secret.txt"), "not the action's").unwrap();
        let mut result = reapi::ActionResult::default();
        let mut uploads = Uploads::default();
        collect(
            &root,
            "",
            &["out/secret.txt".to_owned()],
            &mut result,
            &mut uploads,
        )
        .unwrap();
        assert!(result.output_files.is_empty(), "{result:?}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
