//! Applying a change set, all or nothing, even across a crash.
//!
//! Theory of operation. The whole set is checked first: every destination must still be what the
//! agent saw (a create's path absent, each base hash equal to the file's hash now), or nothing
//! happens. Then, with the store's lock held:
//!
//! 1. `journal.json` (state `staging`) is written into the change set's folder. It lists every
//!    step (destination, staging name) and the folders that will be created.
//! 2. Each new content is written and flushed to a hidden staging file next to its destination
//!    (`.<name>.once-stage-<id>`), so the final rename never crosses a file system.
//! 3. The journal's state becomes `committed`, atomically. This is the commit point.
//! 4. Each staging file is renamed over its destination, and each deletion removes its file,
//!    flushing the folders.
//! 5. `proposal.json` records the decision (`applied`), then the journal is removed.
//!
//! Recovery, run by the next command that touches change sets, reads any journal left behind:
//! before the commit point it rolls back (removes the staging files and the folders it created,
//! so the tree is exactly as before); after it, it rolls forward (redoes step 4, where a staging
//! file that is already gone means its rename happened, then step 5). Every step of both is
//! idempotent, so a crash during recovery is recovered by the next one.
//!
//! Must never touch a destination before the commit point, and never leave the journal's state
//! ambiguous: it is only ever replaced whole.

use std::fs;
use std::io;
use std::path::Path;

use once_fs::{Mode, WorkspacePath, clock};
use serde::{Deserialize, Serialize};

use crate::model::{Action, Proposal, Status};
use crate::store::{ChangeStore, current_hash, write_proposal};
use crate::{Error, Fault};

pub(crate) const JOURNAL: &str = "journal.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Staging,
    Committed,
}

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    state: State,
    /// Folders this apply creates, outermost first, relative to the root.
    dirs: Vec<String>,
    steps: Vec<Step>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Step {
    /// The destination, relative to the root.
    path: String,
    /// The staging file, relative to the root; null for a deletion.
    staged: Option<String>,
}

pub(crate) fn apply(store: &ChangeStore, id: &str, fault: &Fault) -> Result<Proposal, Error> {
    let proposal = store.load(id)?;
    if proposal.status != Status::Pending {
        return Err(Error::Decided {
            id: id.to_string(),
            status: proposal.status.as_str(),
        });
    }
    verify(store.root(), &proposal)?;
    let mut contents = Vec::new();
    for change in &proposal.changes {
        contents.push(store.content(&proposal, change)?);
    }
    let journal = plan(store.root(), &proposal)?;
    let folder = store.folder(id)?;
    write_journal(&folder, &journal)?;

    if let Err(error) = stage(store.root(), &journal, &proposal, &contents, fault) {
        // Nothing has touched a destination yet: undo, so the tree is as it was. Should the undo
        // fail too, the journal stays and the next command that touches change sets retries
        // it; the staging error is the one worth reporting, since it is the cause.
        let _ = roll_back(store.root(), &folder, &journal);
        return Err(error);
    }
    let journal = Journal {
        state: State::Committed,
        ..journal
    };
    write_journal(&folder, &journal)?;
    fault
        .at("commit")
        .map_err(Error::io("commit", folder.display()))?;
    roll_forward(store, id, &folder, &journal, fault)
}

/// The recovery of an apply interrupted in the change set `id`.
pub(crate) fn recover(store: &ChangeStore, id: &str) -> Result<(), Error> {
    let folder = store.folder(id)?;
    let path = folder.join(JOURNAL);
    let bytes = fs::read(&path).map_err(Error::io("read", path.display()))?;
    let journal: Journal = serde_json::from_slice(&bytes).map_err(|e| Error::Damaged {
        id: id.to_string(),
        message: format!("{JOURNAL}: {e}"),
    })?;
    match journal.state {
        State::Staging => roll_back(store.root(), &folder, &journal),
        State::Committed => roll_forward(store, id, &folder, &journal, &Fault::none()).map(drop),
    }
}

/// Every destination must still be what the agent saw; all of them are checked, so a refusal
/// names every file that moved on.
fn verify(root: &Path, proposal: &Proposal) -> Result<(), Error> {
    let mut moved = Vec::new();
    for change in &proposal.changes {
        let dest = match WorkspacePath::parse(&change.path).and_then(|p| p.resolve(root)) {
            Ok(dest) => dest,
            Err(error) => {
                moved.push(error.to_string());
                continue;
            }
        };
        let now = match current_hash(&dest) {
            Ok(now) => now,
            Err(problem) => {
                moved.push(format!("`{}`: {problem}", change.path));
                continue;
            }
        };
        match (change.action, &change.base_blake3, now) {
            (Action::Create, _, Some(_)) => {
                moved.push(format!("`{}` was created since", change.path));
            }
            (Action::Replace | Action::Delete, _, None) => {
                moved.push(format!("`{}` was deleted since", change.path));
            }
            (Action::Replace | Action::Delete, Some(base), Some(now)) if *base != now => {
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

fn plan(root: &Path, proposal: &Proposal) -> Result<Journal, Error> {
    let mut dirs: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    for change in &proposal.changes {
        let path = WorkspacePath::parse(&change.path).map_err(|e| Error::Damaged {
            id: proposal.id.clone(),
            message: e.to_string(),
        })?;
        if change.action == Action::Delete {
            steps.push(Step {
                path: path.to_string(),
                staged: None,
            });
            continue;
        }
        let text = path.to_string();
        let (parent, name) = match text.rsplit_once('/') {
            Some((parent, name)) => (Some(parent), name),
            None => (None, text.as_str()),
        };
        let staged_name = format!(".{name}.once-stage-{}", proposal.id);
        let staged = match parent {
            Some(parent) => {
                // Missing ancestors, outermost first, each listed once.
                let mut missing = Vec::new();
                let mut current = Some(parent);
                while let Some(dir) = current {
                    if root.join(dir).is_dir() {
                        break;
                    }
                    missing.push(dir.to_string());
                    current = dir.rsplit_once('/').map(|(up, _)| up);
                }
                for dir in missing.into_iter().rev() {
                    if !dirs.contains(&dir) {
                        dirs.push(dir);
                    }
                }
                format!("{parent}/{staged_name}")
            }
            None => staged_name,
        };
        steps.push(Step {
            path: text.clone(),
            staged: Some(staged),
        });
    }
    Ok(Journal {
        state: State::Staging,
        dirs,
        steps,
    })
}

fn stage(
    root: &Path,
    journal: &Journal,
    proposal: &Proposal,
    contents: &[Vec<u8>],
    fault: &Fault,
) -> Result<(), Error> {
    for dir in &journal.dirs {
        let path = root.join(dir);
        match fs::create_dir(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(Error::io("create", dir)(error)),
        }
        once_fs::sync_dir(parent(&path)).map_err(Error::io("create", dir))?;
    }
    let mut number = 0;
    for ((step, change), bytes) in journal.steps.iter().zip(&proposal.changes).zip(contents) {
        let Some(staged) = &step.staged else { continue };
        debug_assert_eq!(step.path, change.path);
        number += 1;
        fault
            .at(&format!("stage:{number}"))
            .and_then(|()| once_fs::write_synced(&root.join(staged), bytes))
            .map_err(Error::io("stage", &step.path))?;
    }
    Ok(())
}

fn roll_back(root: &Path, folder: &Path, journal: &Journal) -> Result<(), Error> {
    for step in &journal.steps {
        if let Some(staged) = &step.staged {
            let path = root.join(staged);
            match fs::remove_file(&path) {
                Ok(()) => once_fs::sync_dir(parent(&path)).map_err(Error::io("remove", staged))?,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io("remove", staged)(error)),
            }
        }
    }
    for dir in journal.dirs.iter().rev() {
        let path = root.join(dir);
        // A folder someone else put files into since is theirs now: leave it.
        if fs::remove_dir(&path).is_ok() {
            once_fs::sync_dir(parent(&path)).map_err(Error::io("remove", dir))?;
        }
    }
    remove_journal(folder)
}

fn roll_forward(
    store: &ChangeStore,
    id: &str,
    folder: &Path,
    journal: &Journal,
    fault: &Fault,
) -> Result<Proposal, Error> {
    let root = store.root();
    for (index, step) in journal.steps.iter().enumerate() {
        let path = WorkspacePath::parse(&step.path).map_err(|e| Error::Damaged {
            id: id.to_string(),
            message: e.to_string(),
        })?;
        let dest = path
            .resolve(root)
            .map_err(|e| Error::io("apply", &step.path)(io::Error::other(e)))?;
        match &step.staged {
            Some(staged) => {
                let from = root.join(staged);
                // Gone means this rename already happened before an interruption.
                if from.exists() {
                    fs::rename(&from, &dest).map_err(Error::io("apply", &step.path))?;
                    once_fs::sync_dir(parent(&dest)).map_err(Error::io("apply", &step.path))?;
                }
            }
            None => match fs::symlink_metadata(&dest) {
                Ok(_) => once_fs::remove_durably(&dest).map_err(Error::io("delete", &step.path))?,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io("delete", &step.path)(error)),
            },
        }
        fault
            .at(&format!("rename:{}", index + 1))
            .map_err(Error::io("apply", &step.path))?;
    }
    let mut proposal = store.load(id)?;
    if proposal.status != Status::Applied {
        proposal.status = Status::Applied;
        proposal.decided = Some(clock::rfc3339(clock::now_seconds()));
        write_proposal(folder, &proposal)?;
    }
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

/// Every path here is under the root, so it always has a parent.
fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}
