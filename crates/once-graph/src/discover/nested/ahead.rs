//! The survey run ahead: [`super::walk`]'s listings made on a thread of their own while the
//! root's ecosystems are still being read, so that a 1,000-package workspace lists its thousand
//! package folders on the second core, beside the thousand manifests the root's discovery reads,
//! rather than after them.
//!
//! The walk starts before the root's packages are known, and a package's folder is listed but
//! never entered. It decides without them what it can: a folder that holds no manifest of any
//! ecosystem ([`MARKERS`](crate::discover::MARKERS)) is no package (every package discovery
//! finds at the root is a folder holding its manifest), so it is entered at once; a folder that
//! holds one is listed and waits for the packages. When they come, each folder it entered on its
//! own is checked against them: one that is a package after all throws the walk away, and the
//! survey walks again, after the root's discovery, as [`super::walk`] does.
//!
//! It must never answer other than [`super::walk`] would for the same packages (the same folders
//! listed, the same manifests found), never list a folder that walk would not, and never run on
//! a machine with one core, where it could only take turns with the discovery it means to
//! overlap.

use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::thread::JoinHandle;

use super::{Held, MAX_DEPTH, list, markers};
use crate::discover::Ecosystem;
use crate::workspace::load::Trace;

/// What a survey found (each folder with the manifest's name, sorted) and listed.
pub(crate) type Walked<'a> = (Vec<(String, &'a str)>, Trace);

/// Where the walk stands with the root's packages, each time it asks.
pub(crate) enum Packages {
    /// Not known yet: list on.
    NotYet,
    /// The folders of the packages found at the root.
    Known(HashSet<String>),
    /// They will never come: no survey is needed (every ecosystem found packages at the root).
    Dropped,
}

/// [`super::walk`] from `root` for the manifests of `ecosystems` (each ecosystem's, as
/// [`markers`] gives them), begun before the root's packages are known. `packages(wait)` is asked
/// before each listing while they are not (`wait` false: answer at once), and with `wait` when
/// nothing is left to list without them. `None` when they never come, or when a folder it
/// entered before they came is a package's.
///
/// It lists ahead only when the root's own listing shows the survey will be needed: when the
/// root lacks every manifest of one of `ecosystems`, which then finds no package at the root.
/// Otherwise every ecosystem may find packages there and no survey follow, and listing ahead
/// would only slow the root's discovery down (the listings share the disk and, on a loaded
/// machine, the core): it waits for the packages first, as [`super::walk`] does.
pub(crate) fn walk_ahead<'a>(
    root: &Path,
    ecosystems: &[&'a [&'a str]],
    mut packages: impl FnMut(bool) -> Packages,
) -> Option<Walked<'a>> {
    let wanted: Vec<&'a str> = ecosystems.iter().flat_map(|m| m.iter().copied()).collect();
    // Whether to wait for the packages before any listing but the root's.
    let mut patient = false;
    let mut found: Vec<(String, &'a str)> = Vec::new();
    let mut trace = Trace::default();
    let mut stack = vec![(String::new(), 0usize)];
    let mut known: Option<HashSet<String>> = None;
    // Listed, holding a manifest: entered once the packages say it is no package's folder.
    let mut waiting: Vec<(String, usize, Held)> = Vec::new();
    // Entered before the packages came, on the word of its listing alone.
    let mut guessed: Vec<String> = Vec::new();
    loop {
        if known.is_none() {
            let wait = stack.is_empty() || patient;
            match packages(wait) {
                Packages::Known(folders) => {
                    for (rel, depth, held) in waiting.drain(..) {
                        if !folders.contains(&rel) {
                            held.enter(&rel, depth, &mut stack);
                        }
                    }
                    known = Some(folders);
                }
                Packages::NotYet if !wait => {}
                Packages::NotYet | Packages::Dropped => return None,
            }
        }
        let Some((rel, depth)) = stack.pop() else {
            break;
        };
        let held = list(root, &rel, &mut trace);
        held.found_in(&rel, &wanted, &mut found);
        if rel.is_empty() && known.is_none() {
            patient = ecosystems
                .iter()
                .all(|markers| markers.iter().any(|m| held.manifests.contains(m)));
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        match &known {
            Some(folders) if folders.contains(&rel) => {}
            Some(_) => held.enter(&rel, depth, &mut stack),
            // The root is no package's folder: the survey is of what lies below it.
            None if rel.is_empty() || !held.may_be_a_package() => {
                guessed.push(rel.clone());
                held.enter(&rel, depth, &mut stack);
            }
            None => waiting.push((rel, depth, held)),
        }
    }
    let known = known?;
    if guessed.iter().any(|rel| known.contains(rel)) {
        return None;
    }
    found.sort();
    found.dedup();
    Some((found, trace))
}

/// A survey running ahead on its own thread, for the manifests of every ecosystem that may turn
/// out missing at the root.
pub(crate) struct Ahead {
    packages: Sender<HashSet<String>>,
    walk: JoinHandle<Option<Walked<'static>>>,
}

impl Ahead {
    /// Starts the survey of `root` for `ecosystems`' manifests; `None` on one core, or when the
    /// thread cannot be started (the survey then walks after the root's discovery).
    pub(crate) fn start(root: &Path, ecosystems: &[Ecosystem]) -> Option<Ahead> {
        if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
            return None;
        }
        let groups: Vec<&'static [&'static str]> = ecosystems
            .iter()
            .map(|e| markers(*e))
            .filter(|m| !m.is_empty())
            .collect();
        if groups.is_empty() {
            return None;
        }
        let (packages, answers) = channel();
        let root = root.to_path_buf();
        let walk = std::thread::Builder::new()
            .name("survey".into())
            .spawn(move || walk_ahead(&root, &groups, |wait| next(&answers, wait)))
            .ok()?;
        Some(Ahead { packages, walk })
    }

    /// The survey's answer for the root's `packages`, of every ecosystem it was started for;
    /// `None` when it threw its walk away (or its thread failed): walk again.
    pub(crate) fn finish(self, packages: &HashSet<String>) -> Option<Walked<'static>> {
        self.packages.send(packages.clone()).ok()?;
        self.walk.join().ok().flatten()
    }

    /// Stops the survey (no ecosystem is missing at the root) and waits for its thread, which
    /// stops before its next listing.
    pub(crate) fn cancel(self) {
        drop(self.packages);
        let _ = self.walk.join();
    }
}

/// What the survey's thread hears of the root's packages.
fn next(answers: &Receiver<HashSet<String>>, wait: bool) -> Packages {
    let answer = if wait {
        answers.recv().map_err(|_| TryRecvError::Disconnected)
    } else {
        answers.try_recv()
    };
    match answer {
        Ok(folders) => Packages::Known(folders),
        Err(TryRecvError::Empty) => Packages::NotYet,
        Err(TryRecvError::Disconnected) => Packages::Dropped,
    }
}
