//! The one door through which discovery reads the workspace.
//!
//! Every manifest read, every manifest looked for and not found, and every
//! folder glob expanded is recorded, so the workspace knows when to infer
//! again: a manifest that changes, appears or disappears, or a glob that
//! matches a new folder. An ecosystem module must never read a file any other
//! way, or the graph would go stale without noticing.
//!
//! A reader can be turned, for a while, to a folder below the root ([`Reader::within`]): an
//! ecosystem then reads a nested workspace (`sdk/python/`) with the same code as the root's,
//! while every record still names the file from the root, so staleness and warnings stay true.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use crate::workspace::load::Trace;
use crate::workspace::load::{
    Expanded, ManifestRecord, decode, expand_folders_traced, glob_too_deep, read_regular,
};

/// The first "glob" of a listing that records a survey of folders rather than an expansion
/// (no glob holds a NUL byte).
const SURVEY: &str = "\0survey";

/// A folder glob expansion that was used, to expand again when checking staleness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// Globs relative to the workspace root; a leading `!` excludes.
    pub globs: Vec<String>,
    /// The file a folder must hold to count.
    pub holding: String,
    /// What they matched.
    pub folders: Vec<String>,
    /// What the expansion listed and looked for, to prove it unchanged by `stat`s alone.
    pub trace: Trace,
}

/// What reading one manifest gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Read and decoded: its index in [`Reader::files`].
    File(usize),
    /// A regular file that could not be used (unreadable, too large, not UTF-8): warned about.
    Unusable,
    /// Absent, or no regular file.
    Absent,
}

impl Read {
    fn file(self) -> Option<usize> {
        match self {
            Read::File(index) => Some(index),
            Read::Unusable | Read::Absent => None,
        }
    }
}

/// Reads manifests below a workspace root and remembers what it read.
#[derive(Debug)]
pub(crate) struct Reader {
    /// The workspace root: every recorded path is relative to it.
    top: PathBuf,
    /// The folder below the root that paths are read from, `/`-separated, empty for the root.
    base: String,
    /// `top` joined with `base`: the folder an ecosystem takes for its workspace's.
    here: PathBuf,
    /// Every manifest read, in order; [`super::Inferred::file`] indexes this.
    pub files: Vec<SourceFile>,
    /// The same files' staleness records.
    pub records: Vec<ManifestRecord>,
    /// Manifests looked for and absent, relative to the root.
    pub absent: Vec<String>,
    /// Folder globs expanded.
    pub listings: Vec<Listing>,
    /// Warnings about manifests discovery could not use.
    pub diagnostics: Vec<Diagnostic>,
    /// Files whose presence alone was asked for (lockfiles, markers): vanishing makes the
    /// workspace stale; their content is never read.
    pub present: Vec<String>,
    /// Each path asked for, with what reading it gave, so a thousand projects' lookups stay
    /// linear.
    seen: HashMap<String, Read>,
    /// Each path whose presence was asked for, and the answer.
    stated: HashMap<String, bool>,
}

impl Reader {
    /// A reader of the workspace at `root` (canonical).
    pub fn new(root: &Path) -> Reader {
        Reader {
            top: root.to_path_buf(),
            base: String::new(),
            here: root.to_path_buf(),
            files: Vec::new(),
            records: Vec::new(),
            absent: Vec::new(),
            listings: Vec::new(),
            diagnostics: Vec::new(),
            present: Vec::new(),
            seen: HashMap::new(),
            stated: HashMap::new(),
        }
    }

    /// The folder read as the workspace root: the root, or the nested workspace's folder while
    /// [`Reader::within`] runs.
    pub fn root(&self) -> &Path {
        &self.here
    }

    /// Runs `read` with every path taken relative to `base` (a folder below the root,
    /// `/`-separated), as if `base` were the root: `read("Cargo.toml")` reads
    /// `base/Cargo.toml`, and [`Reader::folders`] answers folders relative to `base`. What it
    /// records (files, absences, listings, warnings) still names paths from the root.
    pub fn within<T>(&mut self, base: &str, read: impl FnOnce(&mut Reader) -> T) -> T {
        let outer = std::mem::replace(&mut self.base, base.trim_matches('/').to_string());
        self.here = self.top.join(&self.base);
        let answer = read(self);
        self.base = outer;
        self.here = self.top.join(&self.base);
        answer
    }

    /// `rel` (relative to the current base) made relative to the root.
    fn rooted(&self, rel: &str) -> String {
        if self.base.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.base)
        }
    }

    /// Reads the manifest at `rel` (relative to the root, `/`-separated) and returns its index
    /// in [`Reader::files`]. `None` when it does not exist, is not a regular file, or cannot be
    /// used (too large, not UTF-8: then with a warning). A file already read is not read again.
    pub fn read(&mut self, rel: &str) -> Option<usize> {
        let rel = self.rooted(rel);
        self.read_from_top(rel).file()
    }

    /// [`Reader::read`] for `rel` relative to the root, whatever the base.
    fn read_from_top(&mut self, rel: String) -> Read {
        if let Some(&known) = self.seen.get(&rel) {
            return known;
        }
        let found = self.read_new(&rel);
        self.seen.insert(rel, found);
        found
    }

    fn read_new(&mut self, rel: &str) -> Read {
        let abs = self.top.join(rel);
        let (bytes, stamp) = match read_regular(&abs) {
            Ok(Some(read)) => read,
            Ok(None) => {
                self.absent.push(rel.to_string());
                return Read::Absent;
            }
            Err(e) => {
                self.diagnostics
                    .push(SourceFile::new(rel.to_string(), String::new()).diag(
                        0,
                        Severity::Warning,
                        "unreadable-manifest",
                        format!("cannot read `{rel}`: {e}; its targets were not inferred"),
                    ));
                return Read::Unusable;
            }
        };
        self.records.push(ManifestRecord {
            rel: rel.to_string(),
            abs,
            hash: blake3::hash(&bytes),
            stamp: Mutex::new(stamp),
        });
        let mut problems = Vec::new();
        let file = decode(rel, bytes, &mut problems);
        for mut d in problems {
            d.severity = Severity::Warning;
            self.diagnostics.push(d);
        }
        let Some(file) = file else {
            return Read::Unusable;
        };
        self.files.push(file);
        Read::File(self.files.len() - 1)
    }

    /// The text of a file [`Reader::read`] returned.
    pub fn text(&self, file: usize) -> &str {
        self.files.get(file).map_or("", |f| f.text.as_str())
    }

    /// The path (relative to the root) of a file [`Reader::read`] returned.
    pub fn rel(&self, file: usize) -> &str {
        self.files.get(file).map_or("", |f| f.rel.as_str())
    }

    /// Whether a regular file exists at `rel`, recorded so that its appearing or vanishing makes
    /// the workspace stale. Its content is not read: a lockfile may be megabytes, or binary
    /// (`bun.lockb`), and only its presence matters to discovery.
    pub fn exists(&mut self, rel: &str) -> bool {
        let rel = self.rooted(rel);
        if let Some(&known) = self.seen.get(&rel) {
            return matches!(known, Read::File(_));
        }
        if let Some(&known) = self.stated.get(&rel) {
            return known;
        }
        let found = self.top.join(&rel).is_file();
        if found {
            self.present.push(rel.clone());
        } else {
            self.absent.push(rel.clone());
        }
        self.stated.insert(rel, found);
        found
    }

    /// Folders (relative to the root, sorted) matching any of `globs` and none of the
    /// `!`-prefixed ones, that hold a file named `holding`. Globs are relative to the root,
    /// `*` stays within one folder, `**` crosses folders. Hidden folders, `node_modules` and
    /// `target` are never entered. A bad glob is a warning at `file`/`offset`.
    pub fn folders(
        &mut self,
        globs: &[String],
        holding: &str,
        file: usize,
        offset: usize,
    ) -> Vec<String> {
        if self.base.is_empty() {
            return self.folders_from_top(globs, holding, file, offset);
        }
        let globs: Vec<String> = globs
            .iter()
            .map(|g| match g.strip_prefix('!') {
                Some(rest) => format!("!{}", self.rooted(rest)),
                None => self.rooted(g),
            })
            .collect();
        let prefix = format!("{}/", self.base);
        // The base itself is never a match, as the root never is one of its own globs.
        self.folders_from_top(&globs, holding, file, offset)
            .into_iter()
            .filter_map(|f| f.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }

    fn folders_from_top(
        &mut self,
        globs: &[String],
        holding: &str,
        file: usize,
        offset: usize,
    ) -> Vec<String> {
        let (include, exclude): (Vec<String>, Vec<String>) =
            globs.iter().cloned().partition(|g| !g.starts_with('!'));
        let exclude: Vec<String> = exclude
            .iter()
            .map(|g| g.trim_start_matches('!').to_string())
            .collect();
        let excluded = globset_of(&exclude);
        let mut trace = Trace::default();
        let top = self.top.clone();
        // Whether a matching folder holds `holding` is answered by reading it, as the
        // ecosystem is about to: one `open` where a `stat` and then an `open` were. An excluded
        // folder's manifest is only looked for: nothing will read it.
        let mut holds = |folder: &str, manifest: String| {
            if excluded.as_ref().is_some_and(|set| set.is_match(folder)) {
                top.join(&manifest).is_file()
            } else {
                self.read_from_top(manifest) != Read::Absent
            }
        };
        let (found, per_glob) =
            expand_folders_traced(&top, &include, holding, Some(&mut trace), &mut holds);
        for (glob, result) in include.iter().zip(&per_glob) {
            match result {
                Err(e) => self.warn(
                    file,
                    offset,
                    "bad-glob",
                    format!("invalid folder glob `{glob}`: {e}"),
                ),
                Ok(Expanded {
                    cut_at: Some(folder),
                    ..
                }) => self.warn_too_deep(file, offset, glob, folder, holding),
                Ok(_) => {}
            }
        }
        let folders: Vec<String> = found
            .into_iter()
            .filter(|f| !excluded.as_ref().is_some_and(|set| set.is_match(f)))
            .collect();
        self.listings.push(Listing {
            globs: globs.to_vec(),
            holding: holding.to_string(),
            folders: folders.clone(),
            trace,
        });
        folders
    }

    /// The warning for a `**` walk cut short at `folder`, at the glob's own line when its text
    /// can be found after `offset` (the list's key) in `file`, else at `offset`.
    fn warn_too_deep(
        &mut self,
        file: usize,
        offset: usize,
        glob: &str,
        folder: &str,
        holding: &str,
    ) {
        // Go modules are walked for with a glob no file spells (`**` below the root `go.mod`):
        // `go.work` is where to name the deeper ones.
        let (at, fix) = if holding == "go.mod" {
            (
                offset,
                format!(
                    "list the modules below it in a `go.work` `use` block (`use ./{folder}/…`)"
                ),
            )
        } else {
            let at = self
                .text(file)
                .get(offset..)
                .and_then(|after| after.find(glob))
                .map_or(offset, |found| offset + found);
            let fix = format!("name the deeper folder in a glob of its own, like `{folder}/**`");
            (at, fix)
        };
        let empty = SourceFile::new(String::new(), String::new());
        let src = self.files.get(file).unwrap_or(&empty);
        let diagnostic = glob_too_deep(src, at, glob, folder, &fix);
        self.diagnostics.push(diagnostic);
    }

    /// The workspace root when reading from it (not from a folder below, as in [`Reader::within`]).
    pub(crate) fn at_root(&self) -> Option<&Path> {
        self.base.is_empty().then_some(self.top.as_path())
    }

    /// Records a survey of folders (`nested::survey`) as a listing: [`SURVEY`] then the package
    /// folders it did not enter stand for its globs, `holding` is the `|`-separated names it
    /// looked for, and `trace` the folders it listed.
    pub(crate) fn record_survey(
        &mut self,
        holding: String,
        packages: Vec<String>,
        folders: Vec<String>,
        trace: Trace,
    ) {
        let mut globs = vec![SURVEY.to_string()];
        globs.extend(packages);
        self.listings.push(Listing {
            globs,
            holding,
            folders,
            trace,
        });
    }

    /// A warning about `file` at byte `offset` (a manifest discovery could not fully use).
    pub fn warn(&mut self, file: usize, offset: usize, code: &'static str, message: String) {
        let d = match self.files.get(file) {
            Some(f) => f.diag(offset, Severity::Warning, code, message),
            None => SourceFile::new(String::new(), String::new()).diag(
                0,
                Severity::Warning,
                code,
                message,
            ),
        };
        self.diagnostics.push(d);
    }
}

impl Listing {
    /// Whether expanding the globs again would match other folders; for a survey
    /// (`nested::survey`), whether walking again finds other folders.
    pub(crate) fn changed(&self, root: &Path) -> bool {
        if let Some((SURVEY, packages)) = self.globs.split_first().map(|(f, r)| (f.as_str(), r)) {
            let wanted: Vec<&str> = self.holding.split('|').collect();
            let packages = packages.iter().cloned().collect();
            let (found, _) = super::nested::walk(root, &wanted, &packages);
            let mut folders: Vec<String> = found.into_iter().map(|(f, _)| f).collect();
            folders.dedup();
            return folders != self.folders;
        }
        let mut again = Reader::new(root);
        again.folders(&self.globs, &self.holding, 0, 0) != self.folders
    }
}

/// One matcher for `globs`; `None` when there are none or none compile.
pub(crate) fn globset_of(globs: &[String]) -> Option<globset::GlobSet> {
    if globs.is_empty() {
        return None;
    }
    let mut set = globset::GlobSetBuilder::new();
    for g in globs {
        if let Ok(glob) = globset::GlobBuilder::new(g.trim_end_matches('/'))
            .literal_separator(true)
            .build()
        {
            set.add(glob);
        }
    }
    set.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("once-graph-reader-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("mkdir");
        root.canonicalize().expect("canonical")
    }

    #[test]
    fn a_folder_glob_reads_each_match_once_and_never_an_excluded_one() {
        let root = temp_root("probe");
        for (folder, manifest) in [
            ("packages/a", Some(&b"{}"[..])),
            ("packages/bad", Some(&b"\xff\xfe"[..])),
            ("packages/skipped", Some(&b"\xff"[..])),
            ("packages/empty", None),
        ] {
            std::fs::create_dir_all(root.join(folder)).expect("mkdir");
            if let Some(bytes) = manifest {
                std::fs::write(root.join(folder).join("package.json"), bytes).expect("writes");
            }
        }
        let mut reader = Reader::new(&root);
        let globs = ["packages/*".to_owned(), "!packages/skipped".to_owned()];
        let folders = reader.folders(&globs, "package.json", 0, 0);
        // A manifest that cannot be used still makes its folder a match, as a `stat` did.
        assert_eq!(folders, ["packages/a", "packages/bad"]);
        let read: Vec<&str> = reader.records.iter().map(|r| r.rel.as_str()).collect();
        assert_eq!(
            read,
            ["packages/a/package.json", "packages/bad/package.json"]
        );
        let warned: Vec<&str> = reader.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(warned, ["not-utf8"], "the excluded manifest is never read");
        // What the ecosystem reads next was read by the glob: no second open, no second record.
        assert_eq!(reader.read("packages/a/package.json"), Some(0));
        assert_eq!(reader.read("packages/bad/package.json"), None);
        assert_eq!(reader.records.len(), 2);
        assert!(!reader.exists("packages/bad/package.json"));
        let probed = &reader.listings[0].trace.probed;
        assert!(probed.contains(&("packages/empty/package.json".into(), false)));
        assert!(probed.contains(&("packages/skipped/package.json".into(), true)));
        std::fs::remove_dir_all(root).expect("cleans up");
    }

    /// A match's manifest is read to learn that it holds one: a pipe planted there is opened
    /// without blocking and is no manifest, as a `stat` said before; nothing waits on it.
    #[cfg(unix)]
    #[test]
    fn a_pipe_as_a_matchs_manifest_is_no_manifest_and_never_waited_on() {
        let root = temp_root("pipe");
        for folder in ["packages/a", "packages/piped"] {
            std::fs::create_dir_all(root.join(folder)).expect("mkdir");
        }
        std::fs::write(root.join("packages/a/package.json"), "{}").expect("writes");
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("packages/piped/package.json"))
            .status()
            .expect("runs mkfifo");
        assert!(made.success());
        let (done, finished) = std::sync::mpsc::channel();
        let at = root.clone();
        std::thread::spawn(move || {
            let mut reader = Reader::new(&at);
            let folders = reader.folders(&["packages/*".to_owned()], "package.json", 0, 0);
            let _ = done.send((folders, reader.records.len()));
        });
        let (folders, read) = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the glob never waits on a pipe");
        assert_eq!(folders, ["packages/a"]);
        assert_eq!(read, 1);
        std::fs::remove_dir_all(root).expect("cleans up");
    }
}
