//! The change sets of one workspace: `.once/changes/<id>/`, each a `proposal.json`, the new
//! contents under `files/`, and, only while an apply is under way, `journal.json`.
//!
//! A proposal appears whole or not at all: it is written into a hidden folder, flushed, then
//! renamed to its id. Decisions (apply, reject) and recovery hold the store's lock
//! (`.once/changes/.lock`), so two people deciding at once cannot both apply a set.
//!
//! Must never change a file of the workspace outside `apply`.

use std::fs;
use std::path::{Path, PathBuf};

use once_fs::{Mode, Root, WorkspacePath, clock};

use crate::apply::{self, JOURNAL};
use crate::hashes::{Base, digest};
use crate::model::{
    Action, Change, ChangeSetCounts, ChangeSetList, ChangeSetRow, Decider, Draft, Proposal,
};
use crate::{Error, Fault, Status};

const PROPOSAL: &str = "proposal.json";
const MAX_CHANGES: usize = 1000;

/// The change sets of the workspace at `root`.
#[derive(Debug, Clone)]
pub struct ChangeStore {
    root: PathBuf,
    dir: PathBuf,
}

impl ChangeStore {
    /// The store of the workspace at `root` (which must exist).
    pub fn new(root: &Path) -> ChangeStore {
        ChangeStore {
            root: root.to_path_buf(),
            dir: root.join(".once").join("changes"),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn folder(&self, id: &str) -> Result<PathBuf, Error> {
        if !clock::is_valid_id(id) {
            return Err(Error::NotFound { id: id.to_string() });
        }
        Ok(self.dir.join(id))
    }

    /// Checks `draft` against the workspace as it is now and saves it. Applies nothing.
    pub fn propose(&self, draft: Draft) -> Result<Proposal, Error> {
        let changes = self.validate(&draft)?;
        let now = clock::now_seconds();
        let id = clock::new_id(now);
        let mut proposal = Proposal {
            format: 1,
            id: id.clone(),
            title: draft.title.trim().to_string(),
            rationale: draft.rationale.trim().to_string(),
            author: draft.author,
            created: clock::rfc3339(now),
            status: Status::Pending,
            decided: None,
            decided_by: None,
            reason: None,
            changes: Vec::new(),
        };
        self.make_dir()?;
        let staging = self.dir.join(format!(".new-{id}"));
        let result = self.write_new(&staging, &mut proposal, changes);
        if result.is_err() {
            let _ = fs::remove_dir_all(&staging);
        }
        result?;
        let folder = self.dir.join(&id);
        fs::rename(&staging, &folder).map_err(Error::io("save", folder.display()))?;
        once_fs::sync_dir(&self.dir).map_err(Error::io("save", self.dir.display()))?;
        Ok(proposal)
    }

    fn write_new(
        &self,
        folder: &Path,
        proposal: &mut Proposal,
        changes: Vec<(Change, Option<String>)>,
    ) -> Result<(), Error> {
        let files = folder.join("files");
        once_fs::create_dirs(&files).map_err(Error::io("create", files.display()))?;
        for (index, (mut change, content)) in changes.into_iter().enumerate() {
            if let Some(content) = content {
                let name = format!("files/{index}");
                let path = folder.join(&name);
                once_fs::write_atomic(&path, content.as_bytes(), Mode::CreateNew)
                    .map_err(Error::io("write", path.display()))?;
                change.file = Some(name);
            }
            proposal.changes.push(change);
        }
        write_proposal(folder, proposal)
    }

    /// Every problem with `draft`, or its changes ready to store (with their contents).
    fn validate(&self, draft: &Draft) -> Result<Vec<(Change, Option<String>)>, Error> {
        let mut problems = Vec::new();
        if draft.title.trim().is_empty() {
            problems.push("the title is empty: say in one line what the change set does".into());
        }
        if draft.changes.is_empty() {
            problems.push("there are no changes".into());
        }
        if draft.changes.len() > MAX_CHANGES {
            problems.push(format!(
                "more than {MAX_CHANGES} changes: split the change set"
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for change in &draft.changes {
            match self.check_change(change) {
                Ok(stored) => {
                    if !seen.insert(stored.path.clone()) {
                        problems.push(format!("`{}`: changed twice in one set", stored.path));
                    }
                    out.push((stored, change.content.clone()));
                }
                Err(problem) => problems.push(problem),
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(Error::Invalid { problems })
        }
    }

    fn check_change(&self, change: &crate::ChangeDraft) -> Result<Change, String> {
        let path = WorkspacePath::parse(&change.path).map_err(|e| e.to_string())?;
        let shown = path.to_string();
        if let Some(part) = path.reserved() {
            return Err(format!(
                "`{shown}`: files under `{part}/` cannot be changed by a change set"
            ));
        }
        let root = Root::open(&self.root).map_err(|e| format!("`{shown}`: {e}"))?;
        let current = digest(&root, &path)?;
        let need_content = matches!(change.action, Action::Create | Action::Replace);
        match (need_content, &change.content) {
            (true, None) => {
                return Err(format!(
                    "`{shown}`: a {} needs `content`",
                    change.action.as_str()
                ));
            }
            (false, Some(_)) => return Err(format!("`{shown}`: a delete takes no `content`")),
            _ => {}
        }
        let base = change
            .base
            .as_deref()
            .map(Base::parse)
            .transpose()
            .map_err(|e| format!("`{shown}`: {e}"))?;
        let base_blake3 = match (change.action, &base, &current) {
            (Action::Create, Some(_), _) => {
                return Err(format!(
                    "`{shown}`: a create takes no `base` (the file must not exist)"
                ));
            }
            (Action::Create, None, Some(_)) => {
                return Err(format!(
                    "`{shown}` already exists: use `replace` with the hash of the content you read"
                ));
            }
            (Action::Create, None, None) => None,
            (_, None, _) => {
                return Err(format!(
                    "`{shown}`: a {} needs `base`, the hash of the content you read: \
                     `sha256:<hex>` (what `sha256sum FILE` prints) or `blake3:<hex>`; \
                     once_query_hashes gives both",
                    change.action.as_str()
                ));
            }
            (_, Some(_), None) => {
                return Err(format!(
                    "`{shown}` does not exist: use `create` for a new file"
                ));
            }
            (_, Some(base), Some(now)) if base.hex() != base.of(now) => {
                return Err(format!(
                    "`{shown}` is not the file you read: its {} is now {}, not {}. Read it again, \
                     redo your change on its current content and name that as `base`: \
                     `sha256:<hex>` (`sha256sum FILE`) or `blake3:<hex>`; once_query_hashes \
                     gives both",
                    base.algorithm(),
                    base.of(now),
                    base.hex()
                ));
            }
            // The base matched the bytes just read, so their BLAKE3 names the same content.
            (_, Some(_), Some(now)) => Some(now.blake3.clone()),
        };
        Ok(Change {
            action: change.action,
            path: shown,
            base_blake3,
            base_sha256: match base {
                Some(Base::Sha256(hex)) => Some(hex),
                _ => None,
            },
            new_blake3: change
                .content
                .as_ref()
                .map(|c| once_fs::hash_hex(c.as_bytes())),
            file: None,
        })
    }

    /// The change set `id`.
    pub fn load(&self, id: &str) -> Result<Proposal, Error> {
        let folder = self.folder(id)?;
        let path = folder.join(PROPOSAL);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotFound { id: id.to_string() });
            }
            Err(error) => return Err(Error::io("read", path.display())(error)),
        };
        let proposal: Proposal = serde_json::from_slice(&bytes).map_err(|e| Error::Damaged {
            id: id.to_string(),
            message: format!("{PROPOSAL}: {e}"),
        })?;
        if proposal.id != id {
            return Err(Error::Damaged {
                id: id.to_string(),
                message: format!("{PROPOSAL} names the id `{}`", proposal.id),
            });
        }
        Ok(proposal)
    }

    /// The new content of `change` of `proposal`, checked against its recorded hash.
    pub fn content(&self, proposal: &Proposal, change: &Change) -> Result<Vec<u8>, Error> {
        let (Some(file), Some(hash)) = (&change.file, &change.new_blake3) else {
            return Ok(Vec::new());
        };
        let damaged = |message: String| Error::Damaged {
            id: proposal.id.clone(),
            message,
        };
        if WorkspacePath::parse(file).is_err() {
            return Err(damaged(format!(
                "`{file}` is not a path inside the change set"
            )));
        }
        let path = self.folder(&proposal.id)?.join(file);
        let bytes = fs::read(&path).map_err(|e| damaged(format!("{file}: {e}")))?;
        if once_fs::hash_hex(&bytes) != *hash {
            return Err(damaged(format!(
                "{file} does not have the hash it was saved with"
            )));
        }
        Ok(bytes)
    }

    /// Every change set, newest first, optionally only those with `status`. Finishes or undoes an
    /// interrupted apply first, so what is listed is true.
    pub fn list(&self, status: Option<Status>) -> Result<ChangeSetList, Error> {
        self.recover()?;
        let (proposals, broken) = self.read_all()?;
        Ok(ChangeSetList {
            change_sets: proposals
                .iter()
                .filter(|p| status.is_none_or(|s| p.status == s))
                .map(ChangeSetRow::new)
                .collect(),
            broken,
        })
    }

    /// How many change sets wait, were applied, were rejected. Only reads: an interrupted apply
    /// counts as pending until the next command that touches change sets recovers it.
    pub fn counts(&self) -> Result<ChangeSetCounts, Error> {
        let (proposals, _) = self.read_all()?;
        let mut counts = ChangeSetCounts::default();
        for proposal in &proposals {
            let slot = match proposal.status {
                Status::Pending => &mut counts.pending,
                Status::Applied => &mut counts.applied,
                Status::Rejected => &mut counts.rejected,
                Status::Failed => &mut counts.failed,
            };
            *slot += 1;
        }
        Ok(counts)
    }

    /// Ids of the folders that are change sets, newest first.
    pub(crate) fn ids(&self) -> Result<Vec<String>, Error> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(Error::io("read", self.dir.display())(error)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(Error::io("read", self.dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // Hidden names are our own: the lock, and proposals still being written.
            if !name.starts_with('.') && clock::is_valid_id(&name) && entry.path().is_dir() {
                ids.push(name);
            }
        }
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(ids)
    }

    fn read_all(&self) -> Result<(Vec<Proposal>, Vec<String>), Error> {
        let mut proposals = Vec::new();
        let mut broken = Vec::new();
        for id in self.ids()? {
            match self.load(&id) {
                Ok(proposal) => proposals.push(proposal),
                Err(error) => broken.push(error.to_string()),
            }
        }
        Ok((proposals, broken))
    }

    /// Rejects the change set `id` for the person `by`: nothing is applied, and the record stays
    /// with the decision.
    pub fn reject(&self, id: &str, reason: Option<String>, by: Decider) -> Result<Proposal, Error> {
        let _lock = self.lock()?;
        self.recover_locked(&Fault::none())?;
        let mut proposal = self.load(id)?;
        if proposal.status != Status::Pending {
            return Err(Error::Decided {
                id: id.to_string(),
                status: proposal.status.as_str(),
            });
        }
        proposal.status = Status::Rejected;
        proposal.decided = Some(clock::rfc3339(clock::now_seconds()));
        proposal.reason = reason.filter(|r| !r.trim().is_empty());
        proposal.decided_by = Some(by);
        write_proposal(&self.folder(id)?, &proposal)?;
        Ok(proposal)
    }

    /// Applies the change set `id` for the person `by`; see [`apply`](crate::apply) for how it
    /// stays all or nothing.
    pub fn apply(&self, id: &str, by: Decider) -> Result<Proposal, Error> {
        self.apply_with(id, by, &Fault::from_env())
    }

    /// [`apply`](Self::apply) with a fault injected at a named point (tests only).
    pub fn apply_with(&self, id: &str, by: Decider, fault: &Fault) -> Result<Proposal, Error> {
        let _lock = self.lock()?;
        self.recover_locked(&Fault::none())?;
        apply::apply(self, id, by, fault)
    }

    /// Finishes or undoes every interrupted apply. Every command that touches change sets calls
    /// it first.
    pub fn recover(&self) -> Result<(), Error> {
        self.recover_with(&Fault::none())
    }

    /// [`recover`](Self::recover) with a fault injected at a named point (tests only).
    pub(crate) fn recover_with(&self, fault: &Fault) -> Result<(), Error> {
        if !self.dir.is_dir() {
            return Ok(());
        }
        let _lock = self.lock()?;
        self.recover_locked(fault)
    }

    /// Recovers every set with a journal. A set that cannot be recovered is marked `failed`; if
    /// even that fails, it is left for the next command and the others are still recovered, so
    /// one set never stops the commands that touch the rest.
    fn recover_locked(&self, fault: &Fault) -> Result<(), Error> {
        for id in self.ids()? {
            if self.dir.join(&id).join(JOURNAL).exists() {
                let _ = apply::recover(self, &id, fault);
            }
        }
        Ok(())
    }

    /// Makes `.once/changes`, never through a link (see `once_fs::state_dir`).
    fn make_dir(&self) -> Result<(), Error> {
        once_fs::state_dir(&self.dir)
            .map_err(|e| Error::io("create", self.dir.display())(std::io::Error::other(e)))
    }

    fn lock(&self) -> Result<once_fs::Lock, Error> {
        self.make_dir()?;
        let path = self.dir.join(".lock");
        once_fs::lock(&path).map_err(Error::io("lock", path.display()))
    }
}

pub(crate) fn write_proposal(folder: &Path, proposal: &Proposal) -> Result<(), Error> {
    let path = folder.join(PROPOSAL);
    let mut bytes = serde_json::to_vec_pretty(proposal).map_err(|e| Error::Damaged {
        id: proposal.id.clone(),
        message: format!("cannot encode {PROPOSAL}: {e}"),
    })?;
    bytes.push(b'\n');
    once_fs::write_atomic(&path, &bytes, Mode::Replace).map_err(Error::io("write", path.display()))
}
