//! `once changes list|show|apply|reject`: where a person decides on the change sets agents
//! proposed. Every one of these first finishes or undoes an apply that was interrupted, inside
//! `once_changes`. This module only parses, calls and prints; it must never touch a workspace
//! file itself.

use std::path::Path;

use anyhow::Result;
use once_changes::{ChangeStore, Decider, Error, Status};

use crate::cli::ChangesCommand;
use crate::exit::Outcome;
use crate::output;

pub fn run(workspace: Option<&Path>, command: ChangesCommand) -> Result<Outcome> {
    let root = super::find_root(workspace)?;
    let store = ChangeStore::new(&root);
    match command {
        ChangesCommand::List { status, json } => {
            let status = match status.as_deref() {
                None => None,
                Some(text) => match Status::parse(text) {
                    Some(status) => Some(status),
                    None => {
                        return Err(crate::exit::Usage(format!(
                            "unknown status `{text}`: use pending, applied, rejected or failed"
                        ))
                        .into());
                    }
                },
            };
            let list = store.list(status)?;
            if json {
                output::json(&list)?;
                return Ok(Outcome::Success);
            }
            let mut text = String::new();
            for row in &list.change_sets {
                text.push_str(&format!(
                    "{}  {:8}  +{} ~{} -{}  {}\n",
                    row.id,
                    row.status.as_str(),
                    row.create,
                    row.replace,
                    row.delete,
                    row.title
                ));
            }
            if list.change_sets.is_empty() {
                text.push_str("no change sets\n");
            }
            output::text(&text)?;
            for broken in &list.broken {
                eprintln!("warning: {broken}");
            }
        }
        ChangesCommand::Show { id, json } => {
            if json {
                store.recover()?;
                output::json(&store.load(&id)?)?;
            } else {
                output::text(&store.show(&id)?)?;
            }
        }
        ChangesCommand::Apply { id } => match store.apply(&id, Decider::Terminal) {
            Ok(proposal) => {
                output::text(&format!(
                    "applied {}: {} file(s) changed",
                    proposal.id,
                    proposal.changes.len()
                ))?;
            }
            Err(error @ (Error::Moved { .. } | Error::Decided { .. })) => {
                eprintln!("error: {error}");
                return Ok(Outcome::Failure);
            }
            Err(error) => return Err(error.into()),
        },
        ChangesCommand::Reject { id, reason } => {
            let proposal = store.reject(&id, reason, Decider::Terminal)?;
            output::text(&format!("rejected {}; the record stays", proposal.id))?;
        }
    }
    Ok(Outcome::Success)
}
