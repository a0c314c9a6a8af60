//! `once changes show`: a change set as a unified diff against the files as they are now, so a
//! person reads what applying would really do, including whether a base moved on since.
//!
//! Uses `similar` (already built for our snapshot tests, so it adds nothing to the build) rather
//! than a diff of our own. Must never write anything.

use std::fmt::Write as _;

use similar::TextDiff;

use crate::Error;
use crate::model::{Action, Proposal, Status};
use crate::store::ChangeStore;

impl ChangeStore {
    /// The change set `id` as text: a header, then one unified diff per change.
    pub fn show(&self, id: &str) -> Result<String, Error> {
        self.recover()?;
        let proposal = self.load(id)?;
        let mut out = header(&proposal);
        for change in &proposal.changes {
            let new = self.content(&proposal, change)?;
            // Read as apply would reach it: never through a link, never inside `.git`/`.once`.
            let current = once_fs::Root::open(self.root()).ok().and_then(|root| {
                let path = once_fs::WorkspacePath::parse(&change.path).ok()?;
                root.read(&path).ok().flatten()
            });
            let moved = match (&change.base_blake3, &current) {
                (None, Some(_)) => Some("the file exists now"),
                (Some(_), None) => Some("the file is gone now"),
                (Some(base), Some(bytes)) if *base != once_fs::hash_hex(bytes) => {
                    Some("the file changed since the proposal")
                }
                _ => None,
            };
            let _ = writeln!(out, "\n{} {}", change.action.as_str(), change.path);
            // Only a pending set can still be applied; once decided, the base has moved on by
            // design, and saying that applying would be refused misleads.
            if proposal.status == Status::Pending
                && let Some(moved) = moved
            {
                let _ = writeln!(out, "note: {moved}; applying would be refused");
            }
            if proposal.status == Status::Applied {
                let holds = match (&change.new_blake3, &current) {
                    (Some(new), Some(bytes)) => *new == once_fs::hash_hex(bytes),
                    (None, None) => true,
                    _ => false,
                };
                let note = if holds {
                    "applied; the file holds the proposed content"
                } else {
                    "applied; the file has changed since"
                };
                let _ = writeln!(out, "note: {note}");
            }
            let old = current.unwrap_or_default();
            let (old_name, new_name) = match change.action {
                Action::Create => ("/dev/null".to_string(), format!("b/{}", change.path)),
                Action::Replace => (format!("a/{}", change.path), format!("b/{}", change.path)),
                Action::Delete => (format!("a/{}", change.path), "/dev/null".to_string()),
            };
            out.push_str(&unified(&old, &new, &old_name, &new_name));
        }
        Ok(out)
    }
}

fn header(proposal: &Proposal) -> String {
    let mut out = format!(
        "change set {}: {}\nstatus: {}",
        proposal.id,
        proposal.title,
        proposal.status.as_str()
    );
    if let Some(decided) = &proposal.decided {
        let _ = write!(out, " ({decided}");
        if let Some(by) = proposal.decided_by {
            let _ = write!(out, " {}", by.phrase());
        }
        out.push(')');
    }
    if let Some(reason) = &proposal.reason {
        let _ = write!(out, "; reason: {reason}");
    }
    let _ = write!(
        out,
        "\nproposed: {} by {}\n",
        proposal.created,
        proposal.author.as_deref().unwrap_or("an unknown client")
    );
    if !proposal.rationale.is_empty() {
        out.push('\n');
        for line in proposal.rationale.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// A unified diff of two contents, `old` as it is now; binary content is named, not shown.
pub(crate) fn unified(old: &[u8], new: &[u8], old_name: &str, new_name: &str) -> String {
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else {
        return format!("Binary files {old_name} and {new_name} differ\n");
    };
    if old == new {
        return "(no difference)\n".to_string();
    }
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::unified;

    #[test]
    fn a_unified_diff_with_headers_and_hunks() {
        let diff = unified(b"a\nb\nc\n", b"a\nB\nc\n", "a/x", "b/x");
        assert_eq!(diff, "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        assert!(unified(&[0xff], b"x", "a/x", "b/x").starts_with("Binary files"));
    }
}
