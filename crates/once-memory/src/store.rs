//! The store: entry files under `<workspace root>/.once/memory/`, read and written safely.
//!
//! Creating never needs the lock: each new entry gets a fresh id and its file is linked into
//! place with a no-clobber link, so concurrent creators cannot collide (on the rare id clash the
//! loser picks another id). Updating and forgetting are read-modify-write, so they hold the
//! store's lock from the read to the rename, and compare the revision the caller read with the
//! current one: an update applies to the revision it was made from, or is refused.
//!
//! Must never print, and never leave a partly written entry file.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use crate::index::{self, Corpus, Need};
use crate::model::{Change, Draft, Entry, PathLink};
use crate::{Error, front_matter, stale};
use once_fs::clock;
use once_fs::{self as fsio, Mode};

/// The memory of one workspace.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    dir: PathBuf,
}

/// An entry file that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Broken {
    /// The file.
    pub file: PathBuf,
    /// 1-based line of the problem.
    pub line: u32,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

impl Store {
    /// The store of the workspace whose root folder is `root`. Nothing is created until the
    /// first write.
    pub fn new(root: &Path) -> Store {
        Store {
            root: root.to_path_buf(),
            dir: root.join(".once").join("memory"),
        }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder that holds the entry files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the entry `id`.
    pub fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.md"))
    }

    /// Every entry file, parsed (through the index cache).
    pub(crate) fn corpus(&self, need: Need) -> Result<Corpus, Error> {
        Corpus::scan(&self.dir, &index::cache_path(&self.root), need)
    }

    /// Every entry that parses, newest first, with its body, and every file that does not.
    /// Reads every entry file; searches and counts use the index instead.
    pub fn scan(&self) -> Result<(Vec<Entry>, Vec<Broken>), Error> {
        let corpus = self.corpus(Need::Postings)?;
        let mut broken = corpus.broken(&self.dir);
        let mut entries = Vec::new();
        for doc in (0..corpus.len()).filter(|&doc| corpus.kind(doc).is_some()) {
            match self.get(corpus.id(doc)) {
                Ok(entry) => entries.push(entry),
                // Removed since the listing: it is simply not there.
                Err(Error::NotFound { .. }) => {}
                Err(Error::Broken {
                    file,
                    line,
                    message,
                }) => broken.push(Broken {
                    file,
                    line,
                    message,
                }),
                Err(error) => return Err(error),
            }
        }
        broken.sort_by(|a, b| a.file.cmp(&b.file));
        Ok((entries, broken))
    }

    /// One entry, read from its file.
    pub fn get(&self, id: &str) -> Result<Entry, Error> {
        if !clock::is_valid_id(id) {
            return Err(Error::BadId { id: id.into() });
        }
        let file = self.file(id);
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(Error::NotFound { id: id.into() });
            }
            Err(error) => return Err(Error::io("read", file)(error)),
        };
        front_matter::parse(&text, id).map_err(|problem| Error::Broken {
            file,
            line: problem.line,
            message: problem.message,
        })
    }

    /// Creates an entry: a new id, both times now, revision 1, and the current hash of every
    /// linked file.
    pub fn create(&self, draft: Draft) -> Result<Entry, Error> {
        check_title(&draft.title)?;
        let paths = self.link_paths(&draft.paths)?;
        fsio::state_dir(&self.dir)
            .map_err(|e| Error::io("create", &self.dir)(std::io::Error::other(e)))?;
        let now = clock::now_seconds();
        let mut entry = Entry {
            id: String::new(),
            title: draft.title,
            kind: draft.kind,
            tags: clean(draft.tags),
            targets: clean(draft.targets),
            paths,
            created: clock::rfc3339(now),
            updated: clock::rfc3339(now),
            revision: 1,
            body: with_final_newline(draft.body),
        };
        // 32 random bits per second make a clash rare; the no-clobber link makes it harmless.
        for _ in 0..16 {
            entry.id = clock::new_id(now);
            let file = self.file(&entry.id);
            match fsio::write_atomic(
                &file,
                front_matter::render(&entry).as_bytes(),
                Mode::CreateNew,
            ) {
                Ok(()) => return Ok(entry),
                Err(error) if error.kind() == ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(Error::io("write", file)(error)),
            }
        }
        Err(Error::Invalid {
            message: "could not find a free entry id after 16 tries".into(),
        })
    }

    /// Applies `change` to the entry `id`. With `expected_revision`, the change is refused with
    /// [`Error::StaleRevision`] (carrying the current entry) unless the entry is still at that
    /// revision. Every write takes the linked files' hashes again: writing an entry says it is
    /// true of the files as they are now.
    pub fn update(
        &self,
        id: &str,
        expected_revision: Option<u64>,
        change: Change,
    ) -> Result<Entry, Error> {
        if let Some(title) = &change.title {
            check_title(title)?;
        }
        let new_paths = match &change.paths {
            Some(paths) => Some(self.link_paths(paths)?),
            None => None,
        };
        let _lock = self.lock()?;
        let mut entry = self.get(id)?;
        if let Some(expected) = expected_revision
            && expected != entry.revision
        {
            return Err(Error::StaleRevision {
                expected,
                current: Box::new(entry),
            });
        }
        let Change {
            title,
            kind,
            tags,
            targets,
            paths: _,
            body,
        } = change;
        if let Some(title) = title {
            entry.title = title;
        }
        if let Some(kind) = kind {
            entry.kind = kind;
        }
        if let Some(tags) = tags {
            entry.tags = clean(tags);
        }
        if let Some(targets) = targets {
            entry.targets = clean(targets);
        }
        if let Some(body) = body {
            entry.body = with_final_newline(body);
        }
        entry.paths = match new_paths {
            Some(links) => links,
            None => {
                let kept: Vec<String> = entry.paths.iter().map(|l| l.path.clone()).collect();
                self.rehash(&kept)
            }
        };
        entry.updated = clock::rfc3339(clock::now_seconds());
        entry.revision += 1;
        let file = self.file(id);
        fsio::write_atomic(
            &file,
            front_matter::render(&entry).as_bytes(),
            Mode::Replace,
        )
        .map_err(Error::io("write", file))?;
        Ok(entry)
    }

    /// Removes the entry `id`, refusing like [`Store::update`] when `expected_revision` is stale.
    /// A broken entry file can be forgotten too (without a revision), so it can be cleaned up.
    pub fn forget(&self, id: &str, expected_revision: Option<u64>) -> Result<Option<Entry>, Error> {
        let _lock = self.lock()?;
        let entry = match self.get(id) {
            Ok(entry) => Some(entry),
            Err(Error::Broken { .. }) if expected_revision.is_none() => None,
            Err(error) => return Err(error),
        };
        if let (Some(expected), Some(current)) = (expected_revision, &entry)
            && expected != current.revision
        {
            return Err(Error::StaleRevision {
                expected,
                current: Box::new(current.clone()),
            });
        }
        let file = self.file(id);
        fsio::remove_durably(&file).map_err(Error::io("remove", file))?;
        Ok(entry)
    }

    fn lock(&self) -> Result<fsio::Lock, Error> {
        fsio::state_dir(&self.dir)
            .map_err(|e| Error::io("create", &self.dir)(std::io::Error::other(e)))?;
        let path = self.dir.join(".lock");
        fsio::lock(&path).map_err(Error::io("lock", path))
    }

    /// Links to files that must exist now, so their hashes can be recorded.
    fn link_paths(&self, paths: &[String]) -> Result<Vec<PathLink>, Error> {
        let mut links: Vec<PathLink> = Vec::new();
        for path in paths {
            let path = normalize(path)?;
            if links.iter().any(|l| l.path == path) {
                continue;
            }
            let blake3 = stale::hash_file(&self.root, &path).map_err(|problem| Error::Invalid {
                message: format!(
                    "cannot link `{path}`: {problem} (paths are relative to the workspace root)"
                ),
            })?;
            links.push(PathLink { path, blake3 });
        }
        Ok(links)
    }

    /// The current hashes of files already linked; a file that vanished keeps an empty hash, so
    /// the entry stays visibly stale instead of failing the write.
    fn rehash(&self, paths: &[String]) -> Vec<PathLink> {
        paths
            .iter()
            .map(|path| PathLink {
                path: path.clone(),
                blake3: stale::hash_file(&self.root, path).unwrap_or_default(),
            })
            .collect()
    }
}

fn check_title(title: &str) -> Result<(), Error> {
    if title.trim().is_empty() {
        return Err(Error::Invalid {
            message: "an entry needs a title: one line that says what it is about".into(),
        });
    }
    Ok(())
}

/// Trimmed, without empties or repeats, in the order given.
fn clean(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let item = item.trim().to_string();
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A relative path inside the workspace, with `/` separators and no `.` or `..` parts.
fn normalize(path: &str) -> Result<String, Error> {
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => {
                return Err(Error::Invalid {
                    message: format!(
                        "cannot link `{path}`: give a path relative to the workspace root, without `..`"
                    ),
                });
            }
        }
    }
    if parts.is_empty() {
        return Err(Error::Invalid {
            message: "cannot link an empty path".into(),
        });
    }
    Ok(parts.join("/"))
}
/// `body` ending with a newline, as every text file should (editors and `git diff` flag the
/// last line otherwise); an empty body stays empty, since the front matter already ends with one.
fn with_final_newline(mut body: String) -> String {
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    body
}
