//! What loading a workspace read, kept as data that another process can check: each manifest
//! with its stamp and content hash, the manifests looked for and absent, the files whose presence
//! counted, and the folder globs expanded. [`Freshness::is_stale`] answers exactly what
//! [`Workspace::is_stale`](crate::Workspace::is_stale) answers for the workspace it was taken
//! from, without that workspace in memory: a run that proved it a no-op (`once-run`'s proof)
//! keeps one, so the next run can tell without loading whether loading would give the same.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use once_fs::codec::{Decoder, Encoder};
use once_fs::{FileKind, Lookup, STAMP_BYTES, Stamp};

use crate::discover::Listing;
use crate::workspace::load::{Listed, Trace, expand_members, read_limited};

/// A loaded workspace's record of what it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    pub(crate) root: PathBuf,
    /// Each manifest read: its path (relative to the root), the BLAKE3 of what was read, and its
    /// stamp then.
    pub(crate) manifests: Vec<(PathBuf, [u8; 32], Option<Stamp>)>,
    pub(crate) lists: Lists,
}

/// The parts of the record that are looked up again rather than stamped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Lists {
    pub(crate) member_globs: Vec<String>,
    pub(crate) member_dirs: Vec<String>,
    /// Manifests looked for and not found.
    pub(crate) absent: Vec<String>,
    /// Files whose presence alone counted.
    pub(crate) present: Vec<String>,
    /// Folder globs expanded.
    pub(crate) listings: Vec<Listing>,
}

impl Lists {
    /// Whether looking again at `root` finds a manifest that appeared, a file that vanished, or
    /// a glob matching other folders. A folder glob's expansion whose trace still holds (looked
    /// up from `lookup`, when it could be opened) is not expanded again; `read` are the manifests
    /// (relative to the root) whose own check covers their presence.
    pub(crate) fn changed_from<'a>(
        &self,
        root: &Path,
        lookup: Option<&Lookup>,
        read: impl IntoIterator<Item = &'a Path>,
    ) -> bool {
        let read: HashSet<&Path> = read.into_iter().collect();
        let expanded_again = |listing: &Listing| match lookup {
            Some(lookup) if listing.trace.holds(lookup, &read) => false,
            _ => listing.changed(root),
        };
        self.absent.iter().any(|rel| root.join(rel).is_file())
            || self.present.iter().any(|rel| !root.join(rel).is_file())
            || self.listings.iter().any(expanded_again)
            || expand_members(root, &self.member_globs).0 != self.member_dirs
    }
}

impl Trace {
    /// Whether the expansion would find the same: every listed folder proven unchanged, every
    /// file looked for found as before (a manifest in `read` needs no look: its own check fails
    /// when it is gone).
    fn holds(&self, lookup: &Lookup, read: &HashSet<&Path>) -> bool {
        let is_file = |rel: &str| {
            lookup
                .status(Path::new(rel), true)
                .is_ok_and(|now| now.kind() == FileKind::File)
        };
        self.listed.iter().all(|(rel, listed)| match listed {
            Listed::Folder(stamp) => lookup
                .status(Path::new(rel), true)
                .is_ok_and(|now| stamp.proves_unchanged_by_status(&now)),
            Listed::Absent => lookup
                .status(Path::new(rel), true)
                .is_err_and(|error| error.kind() == std::io::ErrorKind::NotFound),
            Listed::Unknown => false,
        }) && self.probed.iter().all(|(rel, found)| {
            if *found && read.contains(Path::new(rel)) {
                return true;
            }
            is_file(rel) == *found
        })
    }
}

impl Freshness {
    /// The workspace root it was taken at.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Drops the check of each folder a glob expansion or the survey of nested workspaces
    /// listed, with its stamp then, for which `checked(rel, stamp)` says another record will
    /// check as much: the no-op proof's own record of the same folder listed later, with the
    /// same stamp. What an expansion or the survey decided depends on the folder's names and
    /// their kinds alone, which that record covers. A no-op in a 1,000-package workspace then
    /// checks each package's folder once, where it checked it twice.
    pub fn leave_listed_folders_to(&mut self, checked: impl Fn(&Path, &Stamp) -> bool) {
        for listing in &mut self.lists.listings {
            listing.trace.listed.retain(|(rel, listed)| match listed {
                Listed::Folder(stamp) => !checked(Path::new(rel), stamp),
                Listed::Absent | Listed::Unknown => true,
            });
        }
    }

    /// Whether loading the workspace again could give another workspace: a manifest whose
    /// content changed (its stamp cannot prove it unchanged and its content hashes otherwise),
    /// or any of the looked-up lists answering differently.
    pub fn is_stale(&self) -> bool {
        Lookup::new(&self.root).map_or(true, |lookup| self.is_stale_from(&lookup))
    }

    /// [`Freshness::is_stale`], each manifest looked up from `lookup` (opened at the root).
    pub fn is_stale_from(&self, lookup: &Lookup) -> bool {
        let changed = |(path, hash, stamp): &(PathBuf, [u8; 32], Option<Stamp>)| {
            // From the root's descriptor: the kernel walks only the path inside the workspace.
            if let Some(stamp) = stamp
                && lookup
                    .status(path, true)
                    .is_ok_and(|now| stamp.proves_unchanged_by_status(&now))
            {
                return false;
            }
            !read_limited(&self.root.join(path))
                .is_ok_and(|(bytes, _)| blake3::hash(&bytes).as_bytes() == hash)
        };
        let read = self.manifests.iter().map(|(path, ..)| path.as_path());
        lookup.root() != self.root
            || self.manifests.iter().any(changed)
            || self.lists.changed_from(&self.root, Some(lookup), read)
    }

    /// Appends the record to `out`; [`Freshness::decode`] reads it back.
    pub fn encode(&self, out: &mut Encoder) {
        out.path(&self.root);
        out.u64(self.manifests.len() as u64);
        for (path, hash, stamp) in &self.manifests {
            out.path(path);
            out.fixed(hash);
            match stamp {
                Some(stamp) => {
                    out.u8(1);
                    out.fixed(&stamp.to_bytes());
                }
                None => out.u8(0),
            }
        }
        let lists = &self.lists;
        for list in [
            &lists.member_globs,
            &lists.member_dirs,
            &lists.absent,
            &lists.present,
        ] {
            strings(out, list);
        }
        out.u64(lists.listings.len() as u64);
        for listing in &lists.listings {
            strings(out, &listing.globs);
            out.bytes(listing.holding.as_bytes());
            strings(out, &listing.folders);
            out.u64(listing.trace.listed.len() as u64);
            for (rel, listed) in &listing.trace.listed {
                out.bytes(rel.as_bytes());
                match listed {
                    Listed::Folder(stamp) => {
                        out.u8(0);
                        out.fixed(&stamp.to_bytes());
                    }
                    Listed::Absent => out.u8(1),
                    Listed::Unknown => out.u8(2),
                }
            }
            out.u64(listing.trace.probed.len() as u64);
            for (rel, found) in &listing.trace.probed {
                out.bytes(rel.as_bytes());
                out.u8(u8::from(*found));
            }
        }
    }

    /// The record [`Freshness::encode`] wrote; `None` when the bytes are not one.
    pub fn decode(input: &mut Decoder<'_>) -> Option<Freshness> {
        let root = input.path()?;
        let count = input.u64()?;
        let mut manifests = Vec::new();
        for _ in 0..count {
            let path = input.path()?;
            let hash = *input.fixed::<32>()?;
            let stamp = match input.u8()? {
                0 => None,
                1 => Some(Stamp::from_bytes(input.fixed::<STAMP_BYTES>()?)),
                _ => return None,
            };
            manifests.push((path, hash, stamp));
        }
        let member_globs = read_strings(input)?;
        let member_dirs = read_strings(input)?;
        let absent = read_strings(input)?;
        let present = read_strings(input)?;
        let count = input.u64()?;
        let mut listings = Vec::new();
        for _ in 0..count {
            let globs = read_strings(input)?;
            let holding = string(input)?;
            let folders = read_strings(input)?;
            let mut trace = Trace::default();
            for _ in 0..input.u64()? {
                let rel = string(input)?;
                let listed = match input.u8()? {
                    0 => Listed::Folder(Stamp::from_bytes(input.fixed::<STAMP_BYTES>()?)),
                    1 => Listed::Absent,
                    2 => Listed::Unknown,
                    _ => return None,
                };
                trace.listed.push((rel, listed));
            }
            for _ in 0..input.u64()? {
                let rel = string(input)?;
                let found = match input.u8()? {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                trace.probed.push((rel, found));
            }
            listings.push(Listing {
                globs,
                holding,
                folders,
                trace,
            });
        }
        Some(Freshness {
            root,
            manifests,
            lists: Lists {
                member_globs,
                member_dirs,
                absent,
                present,
                listings,
            },
        })
    }
}

fn strings(out: &mut Encoder, list: &[String]) {
    out.u64(list.len() as u64);
    for text in list {
        out.bytes(text.as_bytes());
    }
}

fn string(input: &mut Decoder<'_>) -> Option<String> {
    String::from_utf8(input.bytes()?.to_vec()).ok()
}

fn read_strings(input: &mut Decoder<'_>) -> Option<Vec<String>> {
    let count = input.u64()?;
    let mut list = Vec::new();
    for _ in 0..count {
        list.push(string(input)?);
    }
    Some(list)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::discover::Reader;

    fn temp_root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "once-graph-freshness-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("packages/a")).expect("mkdir");
        std::fs::create_dir_all(root.join("packages/b")).expect("mkdir");
        std::fs::write(root.join("packages/a/package.json"), "{}").expect("writes");
        root.canonicalize().expect("canonical")
    }

    /// The trace of expanding `packages/*`, its stamps taken as if long after the folders were
    /// written (so they prove something; a fresh stamp proves nothing and falls back to a full
    /// expansion, which other tests cover).
    fn aged_trace(root: &Path) -> Trace {
        let mut reader = Reader::new(root);
        let folders = reader.folders(&["packages/*".to_owned()], "package.json", 0, 0);
        assert_eq!(folders, ["packages/a"]);
        let mut trace = reader.listings.remove(0).trace;
        for (rel, listed) in &mut trace.listed {
            let metadata = std::fs::metadata(root.join(rel.as_str())).expect("stat");
            *listed = Listed::Folder(Stamp::new(&metadata, SystemTime::now() + 2 * RACY_WINDOW));
        }
        trace
    }

    const RACY_WINDOW: Duration = once_fs::RACY_WINDOW;

    #[test]
    fn a_trace_holds_until_a_folder_it_listed_or_a_file_it_looked_for_changes() {
        let root = temp_root("trace");
        // The folder's times put well back, so an entry added now moves them visibly.
        let packages = std::fs::File::open(root.join("packages")).expect("opens");
        packages
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .expect("sets the time");
        let trace = aged_trace(&root);
        let lookup = Lookup::new(&root).expect("opens");
        let none = HashSet::new();
        assert!(trace.holds(&lookup, &none), "nothing changed");
        // A folder that did not hold the file now does: a new match.
        std::fs::write(root.join("packages/b/package.json"), "{}").expect("writes");
        assert!(
            !trace.holds(&lookup, &none),
            "a new package.json went unseen"
        );
        std::fs::remove_file(root.join("packages/b/package.json")).expect("removes");
        assert!(trace.holds(&lookup, &none));
        // A match's file gone: unseen only where the manifest's own check covers it.
        std::fs::remove_file(root.join("packages/a/package.json")).expect("removes");
        assert!(
            !trace.holds(&lookup, &none),
            "a vanished package.json went unseen"
        );
        let read = HashSet::from([Path::new("packages/a/package.json")]);
        assert!(trace.holds(&lookup, &read));
        std::fs::write(root.join("packages/a/package.json"), "{}").expect("writes");
        // A new folder under the glob: the listed folder's stamp no longer proves its names.
        std::fs::create_dir(root.join("packages/c")).expect("mkdir");
        assert!(!trace.holds(&lookup, &none), "a new folder went unseen");
        std::fs::remove_dir_all(root).expect("cleans up");
    }

    #[test]
    fn a_record_survives_encoding_and_a_cut_one_is_refused() {
        let root = temp_root("encode");
        let mut reader = Reader::new(&root);
        reader.folders(&["packages/*".to_owned()], "package.json", 0, 0);
        let freshness = Freshness {
            root: root.clone(),
            manifests: vec![("packages/a/package.json".into(), [7; 32], None)],
            lists: Lists {
                member_globs: vec!["tools/*".into()],
                member_dirs: Vec::new(),
                absent: vec!["once.toml".into()],
                present: vec!["pnpm-lock.yaml".into()],
                listings: reader.listings,
            },
        };
        let mut out = Encoder::new();
        freshness.encode(&mut out);
        let bytes = out.finish();
        let mut input = Decoder::new(&bytes);
        assert_eq!(Freshness::decode(&mut input), Some(freshness));
        assert!(input.is_done());
        for end in 0..bytes.len() {
            let mut input = Decoder::new(&bytes[..end]);
            assert_eq!(Freshness::decode(&mut input), None, "cut at {end}");
        }
        std::fs::remove_dir_all(root).expect("cleans up");
    }
}
