//! Laying out an action's input root: the `Directory` tree named by the `Action`, read from the
//! server's CAS, written under a fresh scratch folder (folders, files with their executable bit,
//! symlinks). Every name in the tree is one plain path component, checked before anything is
//! written: a server's tree must never write outside the scratch folder, through `..`, a `/`,
//! or a symlink laid out earlier.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use once_remote::{Blob, Client, reapi};
use prost::Message;

/// The most directories one input root may have: a bound on what a server can make us fetch.
const MAX_DIRECTORIES: usize = 100_000;

/// Writes the tree whose root `Directory` has digest `root` into `dest` (which exists, empty).
/// `spill` is where blobs over 1 MiB are staged while they download.
pub fn lay_out(client: &Client, root: &reapi::Digest, dest: &Path, spill: &Path) -> Result<()> {
    // Breadth first: each level's directories are fetched in one set of batches.
    let mut level: Vec<(PathBuf, reapi::Digest)> = vec![(dest.to_path_buf(), root.clone())];
    let mut files: Vec<(PathBuf, reapi::Digest, bool)> = Vec::new();
    let mut seen = 0usize;
    while !level.is_empty() {
        seen += level.len();
        if seen > MAX_DIRECTORIES {
            bail!("the input root has over {MAX_DIRECTORIES} folders");
        }
        let digests: Vec<reapi::Digest> = level.iter().map(|(_, d)| d.clone()).collect();
        let blobs = client
            .read_blobs(&digests, spill)
            .context("cannot read the input root's folders from the CAS")?;
        let mut next = Vec::new();
        for ((folder, digest), blob) in level.into_iter().zip(blobs) {
            let Some(blob) = blob else {
                bail!(
                    "the CAS has no folder `{}` of the input root",
                    show(&digest)
                );
            };
            let directory = reapi::Directory::decode(bytes_of(blob)?.as_slice())
                .with_context(|| format!("folder `{}` of the input root", show(&digest)))?;
            // One name, one node: a file written later must not land on a symlink of the
            // same name.
            let mut names = std::collections::HashSet::new();
            let all = (directory.directories.iter().map(|n| &n.name))
                .chain(directory.files.iter().map(|n| &n.name))
                .chain(directory.symlinks.iter().map(|n| &n.name));
            for name in all {
                if !names.insert(name.as_str()) {
                    bail!("the input root names `{name}` twice in one folder");
                }
            }
            for dir in directory.directories {
                let path = folder.join(component(&dir.name)?);
                std::fs::create_dir(&path)
                    .with_context(|| format!("cannot create `{}`", path.display()))?;
                let digest = dir.digest.context("a folder node without a digest")?;
                next.push((path, digest));
            }
            for file in directory.files {
                let path = folder.join(component(&file.name)?);
                let digest = file.digest.context("a file node without a digest")?;
                files.push((path, digest, file.is_executable));
            }
            for link in directory.symlinks {
                let path = folder.join(component(&link.name)?);
                symlink(&link.target, &path)?;
            }
        }
        level = next;
    }
    write_files(client, files, spill)
}

/// Downloads and writes `files`, each blob fetched once however many files share it.
fn write_files(
    client: &Client,
    files: Vec<(PathBuf, reapi::Digest, bool)>,
    spill: &Path,
) -> Result<()> {
    let mut unique: Vec<reapi::Digest> = Vec::new();
    let mut index: HashMap<(String, i64), usize> = HashMap::new();
    for (_, digest, _) in &files {
        index
            .entry((digest.hash.clone(), digest.size_bytes))
            .or_insert_with(|| {
                unique.push(digest.clone());
                unique.len() - 1
            });
    }
    let blobs = client
        .read_blobs(&unique, spill)
        .context("cannot read the input files from the CAS")?;
    // The first file of each blob gets it (a staged blob is moved there, not read into
    // memory); the others are copies of that file.
    let mut first: Vec<Option<PathBuf>> = vec![None; unique.len()];
    let mut blobs: Vec<Option<Blob>> = blobs.into_iter().collect();
    for (path, digest, executable) in files {
        let i = index[&(digest.hash.clone(), digest.size_bytes)];
        let written = match (&first[i], blobs[i].take()) {
            (Some(earlier), _) => std::fs::copy(earlier, &path).map(|_| ()),
            (None, Some(Blob::Memory(bytes))) => std::fs::write(&path, &bytes),
            (None, Some(Blob::File(file))) => file.keep(&path),
            (None, None) => bail!("the CAS has no input file `{}`", show(&digest)),
        };
        written.with_context(|| format!("cannot write `{}`", path.display()))?;
        // Always: a copy takes the mode of the file it copies.
        set_mode(&path, executable)?;
        first[i].get_or_insert(path);
    }
    Ok(())
}

/// `name` when it is one plain path component.
pub fn component(name: &str) -> Result<&str> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\\')
        && !name.contains('\0');
    if !plain {
        bail!("the input root names `{name}`, which is not a plain file name");
    }
    Ok(name)
}

/// A symlink of the input root: relative and without `..`, so that it points inside the root
/// (the check is lexical; the target is never followed).
fn symlink(target: &str, path: &Path) -> Result<()> {
    if target.starts_with('/') || target.split('/').any(|part| part == "..") {
        bail!(
            "the input root has a symlink `{}` to `{target}`, outside the input root",
            path.display()
        );
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, path)
            .with_context(|| format!("cannot create the symlink `{}`", path.display()))
    }
    #[cfg(not(unix))]
    {
        bail!("symlinks in an input root need a Unix worker")
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, executable: bool) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of `{}`", path.display()))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _executable: bool) -> Result<()> {
    Ok(())
}

/// A downloaded blob's bytes, wherever the client put them.
pub fn bytes_of(blob: Blob) -> Result<Vec<u8>> {
    match blob {
        Blob::Memory(bytes) => Ok(bytes.to_vec()),
        Blob::File(file) => std::fs::read(file.path())
            .with_context(|| format!("cannot read `{}`", file.path().display())),
    }
}

/// `hash/size`, as REAPI names a blob.
pub fn show(digest: &reapi::Digest) -> String {
    format!("{}/{}", digest.hash, digest.size_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_laid_out() {
        for bad in ["", ".", "..", "a/b", "../x", "a\\b", "nul\0"] {
            assert!(component(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(component("main.rs").unwrap(), "main.rs");
    }
}
