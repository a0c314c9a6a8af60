//! What a change set is, on disk (`proposal.json`) and in the JSON values both doors show.
//! The shapes are a public contract: defined here and nowhere else.

use serde::{Deserialize, Serialize};

/// What one change does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Write a file that does not exist yet.
    Create,
    /// Replace the content of an existing file.
    Replace,
    /// Remove an existing file.
    Delete,
}

impl Action {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Replace => "replace",
            Action::Delete => "delete",
        }
    }

    /// The action named `text`.
    pub fn parse(text: &str) -> Option<Action> {
        [Action::Create, Action::Replace, Action::Delete]
            .into_iter()
            .find(|a| a.as_str() == text)
    }
}

/// Where a change set stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for a person.
    Pending,
    /// Applied to the workspace.
    Applied,
    /// Rejected; kept as a record.
    Rejected,
    /// An apply was interrupted and could be neither finished nor undone; `reason` says why.
    /// Kept as a record; never applied again.
    Failed,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Applied => "applied",
            Status::Rejected => "rejected",
            Status::Failed => "failed",
        }
    }

    /// The status named `text`.
    pub fn parse(text: &str) -> Option<Status> {
        [
            Status::Pending,
            Status::Applied,
            Status::Rejected,
            Status::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// Who decided a change set: always a person, through one of the two doors a person has. An
/// agent can only propose; nothing it can call applies or rejects, so there is no agent here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decider {
    /// `once changes apply` or `once changes reject`.
    Terminal,
    /// The Apply or Reject button of the window (`once serve`).
    Window,
}

impl Decider {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Terminal => "terminal",
            Decider::Window => "window",
        }
    }

    /// How the decision reads in a sentence: "by a person in the terminal".
    pub fn phrase(self) -> &'static str {
        match self {
            Decider::Terminal => "by a person in the terminal",
            Decider::Window => "by a person in the window",
        }
    }
}

/// One change as an agent proposes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeDraft {
    /// Create, replace or delete.
    pub action: Action,
    /// Relative to the workspace root.
    pub path: String,
    /// The new content (create and replace).
    pub content: Option<String>,
    /// The hash of the file the agent saw (replace and delete): `sha256:<hex>`, `blake3:<hex>`,
    /// or 64 bare hex digits, which mean BLAKE3.
    pub base: Option<String>,
}

/// A change set as an agent proposes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// One line: what the change set does.
    pub title: String,
    /// Why: what a person needs to decide.
    pub rationale: String,
    /// Who proposed it (the MCP client's name and version, say).
    pub author: Option<String>,
    /// The changes, in order.
    pub changes: Vec<ChangeDraft>,
}

/// One stored change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Create, replace or delete.
    pub action: Action,
    /// Relative to the workspace root.
    pub path: String,
    /// BLAKE3 of the base the agent saw; null for a create (the file must not exist). When the
    /// agent named its base by SHA-256, this is the BLAKE3 of the very bytes that matched it.
    pub base_blake3: Option<String>,
    /// SHA-256 of the base, when the agent named it so; checked as well as `base_blake3` when
    /// the set is applied. Absent otherwise, and in change sets saved before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha256: Option<String>,
    /// BLAKE3 of the new content; null for a delete.
    pub new_blake3: Option<String>,
    /// The new content's file, relative to the change set's folder; null for a delete.
    pub file: Option<String>,
}

/// `proposal.json`: a whole change set and its decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The format of this file; 1.
    pub format: u32,
    /// Time-ordered id, also the folder's name.
    pub id: String,
    /// One line: what it does.
    pub title: String,
    /// Why.
    pub rationale: String,
    /// Who proposed it, when known.
    pub author: Option<String>,
    /// RFC 3339 UTC.
    pub created: String,
    /// Pending, applied, rejected or failed.
    pub status: Status,
    /// When it was applied, rejected or marked failed (RFC 3339 UTC).
    pub decided: Option<String>,
    /// Who decided: `terminal` or `window`; null while pending, and in records written before
    /// it was kept.
    #[serde(default)]
    pub decided_by: Option<Decider>,
    /// Why it was rejected, when a reason was given; why it failed.
    pub reason: Option<String>,
    /// The changes, in order.
    pub changes: Vec<Change>,
}

/// One row of [`ChangeSetList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeSetRow {
    /// The id to show, apply or reject it by.
    pub id: String,
    /// What it does.
    pub title: String,
    /// Pending, applied or rejected.
    pub status: Status,
    /// Who proposed it.
    pub author: Option<String>,
    /// When.
    pub created: String,
    /// How many files it creates, replaces and deletes.
    pub create: u32,
    /// Replacements.
    pub replace: u32,
    /// Deletions.
    pub delete: u32,
}

impl ChangeSetRow {
    /// The row of `proposal`.
    pub fn new(proposal: &Proposal) -> ChangeSetRow {
        let count = |action| {
            let n = proposal
                .changes
                .iter()
                .filter(|c| c.action == action)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        ChangeSetRow {
            id: proposal.id.clone(),
            title: proposal.title.clone(),
            status: proposal.status,
            author: proposal.author.clone(),
            created: proposal.created.clone(),
            create: count(Action::Create),
            replace: count(Action::Replace),
            delete: count(Action::Delete),
        }
    }
}

/// `once changes list`: change sets, newest first, and any that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeSetList {
    /// Newest first.
    pub change_sets: Vec<ChangeSetRow>,
    /// Folders under `.once/changes/` that are not readable change sets, with why.
    pub broken: Vec<String>,
}

/// How many change sets stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChangeSetCounts {
    /// Waiting for a person.
    pub pending: u32,
    /// Applied.
    pub applied: u32,
    /// Rejected.
    pub rejected: u32,
    /// Failed: neither applied nor undone (see each set's reason).
    pub failed: u32,
}
