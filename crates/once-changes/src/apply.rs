//! Applying a change set, all or nothing, even across a crash.
//!
//! Theory of operation. The whole set is checked first: every destination must still be what the
//! agent saw (a create's path absent, each base hash equal to the file's hash now), or nothing
//! happens. Then, with the store's lock held:
//!
//! 1. `journal.json` (state `staging`) is written into the change set's folder. It lists every
//!    step (destination, staging name) and the folders that will be created.
//! 2. Each new content is written and flushed to a staging file in its destination's folder,
//!    under a short name of its own (`.once-stage-<id>-<N>`), so the final rename never crosses a
//!    file system and staging never needs a longer name than the destination's.
//! 3. The journal's state becomes `committed`, atomically. This is the commit point.
//! 4. Each staging file is renamed over its destination, and each deletion removes its file,
//!    flushing the folders.
//! 5. `proposal.json` records the decision (`applied`), then the journal is removed.
//!
//! Every file operation goes through `once_fs::Root`: each folder is reached from the workspace
//! root's descriptor one component at a time without following a link, and the staging write, the
//! rename and the removal are made relative to that folder's descriptor, which this apply keeps
//! open from step 2 to step 4. A link swapped into the tree at any moment therefore either makes
//! the walk fail (the set is refused and rolled back) or is never looked at; nothing is written
//! through it.
//!
//! Recovery, run by the next command that touches change sets, reads any journal left behind:
//! before the commit point it rolls back (removes the staging files and the folders it created,
//! so the tree is exactly as before); after it, it rolls forward (redoes step 4, where a staging
//! file that is already gone means its rename happened, then step 5). Every step of both is
//! idempotent, so a crash during recovery is recovered by the next one. A set that recovery can
//! neither roll back nor forward (a folder became a link, a name the file system refuses, a
//! journal that cannot be read) is marked `failed` with the reason, and its journal is retired to
//! `journal.failed.json`, so one broken set never stops the store.
//!
//! Must never touch a destination before the commit point, never leave the journal's state
//! ambiguous (it is only ever replaced whole), and never mark a set `applied` before every one of
//! its files is in place.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use once_fs::{Folder, Kind, Mode, PathError, Root, WorkspacePath, clock};
use serde::{Deserialize, Serialize};

use crate::hashes::digest;
use crate::model::{Action, Decider, Proposal, Status};
use crate::store::{ChangeStore, write_proposal};
use crate::{Error, Fault};

pub(crate) const JOURNAL: &str = "journal.json";
/// Where a journal goes when its set is marked `failed`: kept for a person, never read again.
const RETIRED: &str = "journal.failed.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Staging,
    Committed,
}

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    state: State,
    /// The person who applied: written with the decision, even when a later command (from
    /// either door) is the one that rolls the apply forward. Absent in journals written before
    /// it was kept.
    #[serde(default)]
    decided_by: Option<Decider>,
    /// Folders this apply creates, outermost first, relative to the root.
    dirs: Vec<String>,
    steps: Vec<Step>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Step {
    /// The destination, relative to the root.
    path: String,
    /// The staging file, relative to the root (in the destination's folder); null for a deletion.
    staged: Option<String>,
}

/// The folders of one apply or recovery, each walked to once from the root and kept open, so
/// that staging, renaming and rolling back act in the very folders that were checked.
struct Folders {
    root: Root,
    open: BTreeMap<String, Folder>,
}

impl Folders {
    fn new(root: &Path) -> Result<Folders, Error> {
        let root = Root::open(root).map_err(Error::io("open", root.display()))?;
        Ok(Folders {
            root,
            open: BTreeMap::new(),
        })
    }

    /// The open folder holding `path`, walking to it (and making it when `make`) the first time;
    /// `None` when it does not exist and `make` is false.
    fn holding(&mut self, path: &WorkspacePath, make: bool) -> Result<Option<&Folder>, PathError> {
        let key = path.parent().map(|p| p.to_string()).unwrap_or_default();
        if !self.open.contains_key(&key) {
            let folder = if make {
                Some(self.root.make_parent_of(path)?.0)
            } else {
                self.root.parent_of(path)?
            };
            match folder {
                Some(folder) => self.open.insert(key.clone(), folder),
                None => return Ok(None),
            };
        }
        Ok(self.open.get(&key))
    }

    /// The folder holding `path` if this apply already walked to it: where it staged files.
    fn walked(&self, path: &WorkspacePath) -> Option<&Folder> {
        let key = path.parent().map(|p| p.to_string()).unwrap_or_default();
        self.open.get(&key)
    }
}

pub(crate) fn apply(
    store: &ChangeStore,
    id: &str,
    by: Decider,
    fault: &Fault,
) -> Result<Proposal, Error> {
    let proposal = store.load(id)?;
    if proposal.status != Status::Pending {
        return Err(Error::Decided {
            id: id.to_string(),
            status: proposal.status.as_str(),
        });
    }
    let mut folders = Folders::new(store.root())?;
    verify(&folders.root, &proposal)?;
    let mut contents = Vec::new();
    for change in &proposal.changes {
        contents.push(store.content(&proposal, change)?);
    }
    let journal = plan(&folders.root, &proposal, by)?;
    let folder = store.folder(id)?;
    fault
        .at("journal")
        .map_err(Error::io("write", folder.join(JOURNAL).display()))?;
    write_journal(&folder, &journal)?;

    if let Err(error) = stage(&mut folders, &journal, &contents, fault) {
        // Nothing has touched a destination yet: undo, so the tree is as it was. Should the undo
        // fail too, the journal stays and the next command that touches change sets retries it
        // (and marks the set failed if it cannot); the staging error is the one worth reporting,
        // since it is the cause.
        let _ = roll_back(&mut folders, &folder, &journal, false, fault);
        return Err(error);
    }
    let journal = Journal {
        state: State::Committed,
        ..journal
    };
    if let Err(error) = write_journal(&folder, &journal) {
        // The journal is the old one or the new one, whole. Rolling back is right if it is the
        // old one; if the new one landed, the next recovery rolls forward from what is staged.
        if read_journal(&folder, id).is_ok_and(|j| j.state == State::Staging) {
            let _ = roll_back(&mut folders, &folder, &journal, false, fault);
        }
        return Err(error);
    }
    fault
        .at("commit")
        .map_err(Error::io("commit", folder.display()))?;
    roll_forward(store, id, &mut folders, &folder, &journal, fault)
}

/// The recovery of an apply interrupted in the change set `id`. Never fails because of the set
/// itself: one that can be neither rolled back nor forward is marked `failed`.
pub(crate) fn recover(store: &ChangeStore, id: &str, fault: &Fault) -> Result<(), Error> {
    let folder = store.folder(id)?;
    let outcome = read_journal(&folder, id).and_then(|journal| {
        let mut folders = Folders::new(store.root())?;
        match journal.state {
            State::Staging => roll_back(&mut folders, &folder, &journal, true, fault),
            State::Committed => {
                roll_forward(store, id, &mut folders, &folder, &journal, fault).map(drop)
            }
        }
    });
    match outcome {
        Ok(()) => Ok(()),
        Err(error) => mark_failed(store, id, &folder, &error),
    }
}

/// Records that `id` could not be applied nor undone, with why, and retires its journal.
fn mark_failed(store: &ChangeStore, id: &str, folder: &Path, cause: &Error) -> Result<(), Error> {
    if let Ok(mut proposal) = store.load(id) {
        proposal.status = Status::Failed;
        proposal.decided = Some(clock::rfc3339(clock::now_seconds()));
        proposal.reason = Some(format!(
            "the apply was interrupted and could be neither finished nor undone: {cause}; \
             staging files named `.once-stage-{id}-N` may remain beside the destinations"
        ));
        write_proposal(folder, &proposal)?;
    }
    let (from, to) = (folder.join(JOURNAL), folder.join(RETIRED));
    fs::rename(&from, &to).map_err(Error::io("retire", from.display()))?;
    once_fs::sync_dir(folder).map_err(Error::io("retire", from.display()))
}

fn read_journal(folder: &Path, id: &str) -> Result<Journal, Error> {
    let path = folder.join(JOURNAL);
    let bytes = fs::read(&path).map_err(Error::io("read", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Damaged {
        id: id.to_string(),
        message: format!("{JOURNAL}: {e}"),
    })
}

fn parse(id: &str, text: &str) -> Result<WorkspacePath, Error> {
    WorkspacePath::parse(text).map_err(|e| Error::Damaged {
        id: id.to_string(),
        message: e.to_string(),
    })
}

fn refused(action: &'static str, path: &str) -> impl FnOnce(PathError) -> Error {
    let path = path.to_string();
    move |error| Error::io(action, path)(io::Error::other(error))
}

/// Every destination must still be what the agent saw; all of them are checked, so a refusal
/// names every file that moved on.
fn verify(root: &Root, proposal: &Proposal) -> Result<(), Error> {
    let mut moved = Vec::new();
    for change in &proposal.changes {
        let now = match WorkspacePath::parse(&change.path)
            .map_err(|e| e.to_string())
            .and_then(|path| digest(root, &path))
        {
            Ok(now) => now,
            Err(problem) => {
                moved.push(problem);
                continue;
            }
        };
        match (change.action, now) {
            (Action::Create, Some(_)) => {
                moved.push(format!("`{}` was created since", change.path));
            }
            (Action::Replace | Action::Delete, None) => {
                moved.push(format!("`{}` was deleted since", change.path));
            }
            // Every base named is checked: BLAKE3 always, SHA-256 when the agent named it so.
            (Action::Replace | Action::Delete, Some(now))
                if change
                    .base_blake3
                    .as_ref()
                    .is_some_and(|b| *b != now.blake3)
                    || change
                        .base_sha256
                        .as_ref()
                        .is_some_and(|b| *b != now.sha256) =>
            {
                moved.push(format!("`{}` was changed since", change.path));
            }
            _ => {}
        }
    }
    if moved.is_empty() {
        Ok(())
    } else {
        Err(Error::Moved { moved })
    }
}

fn plan(root: &Root, proposal: &Proposal, by: Decider) -> Result<Journal, Error> {
    let mut dirs: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    for (index, change) in proposal.changes.iter().enumerate() {
        let path = parse(&proposal.id, &change.path)?;
        if change.action == Action::Delete {
            steps.push(Step {
                path: path.to_string(),
                staged: None,
            });
            continue;
        }
        let staged_name = format!(".once-stage-{}-{}", proposal.id, index + 1);
        let staged = match path.parent() {
            Some(parent) => {
                // Missing folders, outermost first, each listed once: below the first missing
                // one, everything is missing.
                let mut ancestors = Vec::new();
                let mut current = Some(parent.clone());
                while let Some(dir) = current {
                    current = dir.parent();
                    ancestors.push(dir);
                }
                for dir in ancestors.into_iter().rev() {
                    let exists = root
                        .folder(&dir)
                        .map_err(refused("apply", &change.path))?
                        .is_some();
                    let text = dir.to_string();
                    if !exists && !dirs.contains(&text) {
                        dirs.push(text);
                    }
                }
                format!("{parent}/{staged_name}")
            }
            None => staged_name,
        };
        steps.push(Step {
            path: path.to_string(),
            staged: Some(staged),
        });
    }
    Ok(Journal {
        state: State::Staging,
        decided_by: Some(by),
        dirs,
        steps,
    })
}

fn stage(
    folders: &mut Folders,
    journal: &Journal,
    contents: &[Vec<u8>],
    fault: &Fault,
) -> Result<(), Error> {
    let mut number = 0;
    for (step, bytes) in journal.steps.iter().zip(contents) {
        let Some(staged) = &step.staged else { continue };
        number += 1;
        fault
            .at(&format!("stage:{number}"))
            .map_err(Error::io("stage", &step.path))?;
        let staged = parse(&step.path, staged)?;
        let folder = folders
            .holding(&staged, true)
            .map_err(refused("stage", &step.path))?
            .ok_or_else(|| Error::io("stage", &step.path)(io::ErrorKind::NotFound.into()))?;
        folder
            .write_synced(staged.name(), bytes)
            .map_err(Error::io("stage", &step.path))?;
    }
    Ok(())
}

/// Removes the staging files and the folders made for them. `walk` is true in a recovery, which
/// must walk to every staging folder; the apply that staged them passes false and looks only in
/// the folders it walked to (and kept open), since nothing of it can be anywhere else: a folder
/// that turned into a link meanwhile then costs nothing.
fn roll_back(
    folders: &mut Folders,
    folder: &Path,
    journal: &Journal,
    walk: bool,
    fault: &Fault,
) -> Result<(), Error> {
    let mut number = 0;
    for step in &journal.steps {
        let Some(staged) = &step.staged else { continue };
        number += 1;
        fault
            .at(&format!("unstage:{number}"))
            .map_err(Error::io("remove", staged))?;
        let staged = parse(&step.path, staged)?;
        let dir = if walk {
            folders
                .holding(&staged, false)
                .map_err(refused("remove", &staged.to_string()))?
        } else {
            folders.walked(&staged)
        };
        let Some(dir) = dir else {
            continue;
        };
        match dir.remove_file(staged.name()) {
            Ok(()) => dir.sync().map_err(Error::io("remove", &staged))?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(Error::io("remove", &staged)(error)),
        }
    }
    // Folders are removed deepest first, each walked to afresh: the open ones may be the very
    // folders being removed.
    folders.open.clear();
    for dir in journal.dirs.iter().rev() {
        let Ok(path) = WorkspacePath::parse(dir) else {
            continue;
        };
        // A folder someone else put files into since, or that is no longer a plain folder of
        // ours, is theirs now: leave it.
        if let Ok(Some(parent)) = folders.root.parent_of(&path)
            && parent.remove_dir(path.name()).is_ok()
        {
            parent.sync().map_err(Error::io("remove", dir))?;
        }
    }
    remove_journal(folder)
}

fn roll_forward(
    store: &ChangeStore,
    id: &str,
    folders: &mut Folders,
    folder: &Path,
    journal: &Journal,
    fault: &Fault,
) -> Result<Proposal, Error> {
    for (index, step) in journal.steps.iter().enumerate() {
        let path = parse(id, &step.path)?;
        match &step.staged {
            Some(staged) => {
                let staged = parse(id, staged)?;
                let dir = folders
                    .holding(&path, false)
                    .map_err(refused("apply", &step.path))?;
                // A staging file that is gone means its rename already happened before an
                // interruption; so does a missing folder, which only a finished rename and a
                // person's removal since could explain.
                if let Some(dir) = dir
                    && dir
                        .kind(staged.name())
                        .map_err(Error::io("apply", &step.path))?
                        .is_some()
                {
                    dir.rename(staged.name(), path.name())
                        .and_then(|()| dir.sync())
                        .map_err(Error::io("apply", &step.path))?;
                }
            }
            None => {
                let dir = folders
                    .holding(&path, false)
                    .map_err(refused("delete", &step.path))?;
                if let Some(dir) = dir {
                    match dir.kind(path.name()) {
                        Ok(Some(Kind::Folder)) => {
                            return Err(Error::io("delete", &step.path)(io::Error::other(
                                "it is a folder now",
                            )));
                        }
                        Ok(Some(_)) => dir
                            .remove_file(path.name())
                            .and_then(|()| dir.sync())
                            .map_err(Error::io("delete", &step.path))?,
                        Ok(None) => {}
                        Err(error) => return Err(Error::io("delete", &step.path)(error)),
                    }
                }
            }
        }
        fault
            .at(&format!("rename:{}", index + 1))
            .map_err(Error::io("apply", &step.path))?;
    }
    let mut proposal = store.load(id)?;
    if proposal.status != Status::Applied {
        proposal.status = Status::Applied;
        proposal.decided = Some(clock::rfc3339(clock::now_seconds()));
        proposal.decided_by = journal.decided_by;
        write_proposal(folder, &proposal)?;
    }
    fault
        .at("decided")
        .map_err(Error::io("remove", folder.join(JOURNAL).display()))?;
    remove_journal(folder)?;
    Ok(proposal)
}

fn write_journal(folder: &Path, journal: &Journal) -> Result<(), Error> {
    let path = folder.join(JOURNAL);
    let bytes = serde_json::to_vec_pretty(journal).map_err(|e| Error::Damaged {
        id: folder.display().to_string(),
        message: format!("cannot encode {JOURNAL}: {e}"),
    })?;
    once_fs::write_atomic(&path, &bytes, Mode::Replace).map_err(Error::io("write", path.display()))
}

fn remove_journal(folder: &Path) -> Result<(), Error> {
    let path = folder.join(JOURNAL);
    match once_fs::remove_durably(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Error::io("remove", path.display())(error)),
    }
}
