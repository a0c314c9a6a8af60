//! What loading a workspace read, kept as data that another process can check: each manifest
//! with its stamp and content hash, the manifests looked for and absent, the files whose presence
//! counted, and the folder globs expanded. [`Freshness::is_stale`] answers exactly what
//! [`Workspace::is_stale`](crate::Workspace::is_stale) answers for the workspace it was taken
//! from, without that workspace in memory: a run that proved it a no-op (`once-run`'s proof)
//! keeps one, so the next run can tell without loading whether loading would give the same.

use std::path::{Path, PathBuf};

use once_fs::codec::{Decoder, Encoder};
use once_fs::{STAMP_BYTES, Stamp};

use crate::discover::Listing;
use crate::workspace::{expand_members, read_limited};

/// A loaded workspace's record of what it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    pub(crate) root: PathBuf,
    /// Each manifest read: its path, the BLAKE3 of what was read, and its stamp then.
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
    /// a glob matching other folders.
    pub(crate) fn changed(&self, root: &Path) -> bool {
        self.absent.iter().any(|rel| root.join(rel).is_file())
            || self.present.iter().any(|rel| !root.join(rel).is_file())
            || self.listings.iter().any(|l| l.changed(root))
            || expand_members(root, &self.member_globs).0 != self.member_dirs
    }
}

impl Freshness {
    /// The workspace root it was taken at.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether loading the workspace again could give another workspace: a manifest whose
    /// content changed (its stamp cannot prove it unchanged and its content hashes otherwise),
    /// or any of the looked-up lists answering differently.
    pub fn is_stale(&self) -> bool {
        let changed = |(path, hash, stamp): &(PathBuf, [u8; 32], Option<Stamp>)| {
            if stamp.as_ref().is_some_and(|s| s.proves_unchanged(path)) {
                return false;
            }
            !read_limited(path).is_ok_and(|(bytes, _)| blake3::hash(&bytes).as_bytes() == hash)
        };
        self.manifests.iter().any(changed) || self.lists.changed(&self.root)
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
            listings.push(Listing {
                globs: read_strings(input)?,
                holding: String::from_utf8(input.bytes()?.to_vec()).ok()?,
                folders: read_strings(input)?,
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

fn read_strings(input: &mut Decoder<'_>) -> Option<Vec<String>> {
    let count = input.u64()?;
    let mut list = Vec::new();
    for _ in 0..count {
        list.push(String::from_utf8(input.bytes()?.to_vec()).ok()?);
    }
    Some(list)
}
