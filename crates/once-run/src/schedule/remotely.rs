//! Performing an action on the remote execution engine: which actions may go there, the
//! description the engine runs (its lookup's, with the outputs of what it depends on), and
//! what comes back: a success's outputs downloaded and checked for the record, a failure's exit
//! code and logs (stdout, then stderr) written where a local run's log would be.
//!
//! A command that fails remotely because it read something it did not declare is the usual
//! surprise of remote execution: the worker has only the declared inputs. So a failure's log
//! is searched for paths that exist in the workspace but were not in the input tree, and the
//! report names them with the fix. It must never send an action that holds a secret, and never
//! let a download write anything but the staging folder (the record restores it).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use super::perform::Ran;
use super::{Worker, millis};
use crate::cache::output_globs;
use crate::describe::Described;
use crate::plan::Step;
use crate::remote::engine::{Engine, Executed};
use crate::remote::{Downloaded, Log, download};
use crate::report::ActionStatus;

/// The most paths a failure's report names as undeclared.
const MOST_HINTS: usize = 5;

impl Worker<'_> {
    /// Why `step` runs here even with remote execution on; `None` when it may go remotely.
    pub(super) fn stays_here(&self, step: &Step) -> Option<String> {
        if step.placement.local {
            return Some("`local = true`".to_owned());
        }
        if step.persistent {
            return Some("it is persistent".to_owned());
        }
        if !step.cache {
            return Some("it is never cached (`cache = false`), like a deploy".to_owned());
        }
        if step.mutex.is_some() {
            return Some("it names a `mutex`, a resource of this machine".to_owned());
        }
        if step.env_file.is_some() || self.keyer.holds_secrets(step) {
            return Some(
                "its environment holds secrets, which never leave this machine".to_owned(),
            );
        }
        None
    }

    /// Step `i` performed on `engine`; `Err(why)` when it cannot go there (remote execution
    /// went off, the engine refused it, it could not be described), so that it runs here.
    pub(super) fn run_remotely(
        &self,
        engine: &Engine,
        i: usize,
        start: Instant,
    ) -> Result<Ran, String> {
        self.try_remotely(engine, i, start)
            .unwrap_or_else(|| Err("remote execution went off in this run".to_owned()))
    }

    /// [`Worker::run_remotely`], with `None` for "remote execution went off".
    fn try_remotely(
        &self,
        engine: &Engine,
        i: usize,
        start: Instant,
    ) -> Option<Result<Ran, String>> {
        let step = &self.plan.steps[i];
        let describer = self.describer.as_ref()?;
        let described = match describer.describe_for_execution(i, engine.platform(&step.placement))
        {
            Ok(described) => described,
            Err(error) => {
                tracing::debug!(action = %step.action, %error, "cannot describe the action for the engine: running it here");
                return Some(Err(format!(
                    "it cannot be described for the engine: {error}"
                )));
            }
        };
        let stop = || self.cancel.is_cancelled() || self.registry.is_shutting_down();
        let ended = |status, tail: Vec<String>, ran_on| Ran {
            status,
            exit_code: None,
            duration_ms: millis(start.elapsed()),
            tail,
            log: None,
            retried: 0,
            ran_on,
            fetched: None,
        };
        let (result, ran_on, timed_out) = match engine.execute(
            &described,
            step.deadline,
            self.force,
            &stop,
        ) {
            Executed::Unavailable => return None,
            Executed::Refused(why) => return Some(Err(format!("the engine refused it ({why})"))),
            Executed::Cancelled => {
                return Some(Ok(ended(ActionStatus::Cancelled, Vec::new(), None)));
            }
            Executed::Overdue => {
                let tail = vec![format!(
                    "once: the remote execution engine did not finish it within its deadline ({}) and time to queue: it was cancelled there",
                    show(step.deadline)
                )];
                return Some(Ok(ended(ActionStatus::TimedOut, tail, None)));
            }
            Executed::Result {
                result,
                ran_on,
                timed_out,
            } => (result, ran_on, timed_out),
        };
        let spill = match self.cache.staging_folder() {
            Ok(folder) => folder,
            Err(error) => {
                tracing::warn!(%error, "no folder for downloads: running it here");
                return Some(Err(format!("no folder for its downloads: {error}")));
            }
        };
        let outputs = match output_globs(&step.action, &step.outputs) {
            Ok(outputs) => outputs,
            Err(error) => return Some(Err(error.to_string())),
        };
        let duration_ms = crate::remote::duration_of(&result);
        if result.exit_code == 0 && !timed_out {
            let limits = engine.limits();
            let downloaded = engine.with_client(|client| {
                download(client, &result, &outputs, &spill, &limits, Log::Both)
            })?;
            let fetched = match downloaded {
                Downloaded::Fetched(fetched) => fetched,
                Downloaded::NotRestorable => {
                    return Some(Ok(ended(
                        ActionStatus::Failed,
                        vec![format!(
                            "once: the worker's result holds an output this client will not restore (a link, or a path outside `outputs` {:?})",
                            step.outputs
                        )],
                        Some(ran_on),
                    )));
                }
                Downloaded::TooLarge(reason) | Downloaded::Corrupt(reason) => {
                    return Some(Ok(ended(
                        ActionStatus::Failed,
                        vec![format!("once: {reason}")],
                        Some(ran_on),
                    )));
                }
                Downloaded::Lost => {
                    return Some(Ok(ended(
                        ActionStatus::Failed,
                        vec!["once: the engine lost an output of the worker's result".to_owned()],
                        Some(ran_on),
                    )));
                }
            };
            return Some(Ok(Ran {
                status: ActionStatus::Succeeded,
                exit_code: Some(0),
                duration_ms,
                tail: Vec::new(),
                log: None,
                retried: 0,
                ran_on: Some(ran_on),
                fetched: Some(fetched),
            }));
        }
        // A failure: its logs where a local run's would be, its last lines, and what it looked
        // for that the worker did not have.
        let text = engine.logs(&result, &spill);
        let log = self.run.log_path(&step.action);
        let written = log
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&log, &text));
        if let Err(error) = &written {
            tracing::warn!(action = %step.action, %error, "cannot write the remote log");
        }
        let text = String::from_utf8_lossy(&text);
        let mut tail: Vec<String> = text
            .lines()
            .rev()
            .take(once_exec::DEFAULT_TAIL_LINES)
            .map(str::to_owned)
            .collect();
        tail.reverse();
        for path in undeclared(&text, step, &self.plan.root, &described) {
            tail.push(format!(
                "once: `{path}` is in the workspace but not among `{}`'s inputs, so the worker did not have it: declare it in the capability's `inputs` (or set `local = true`)",
                step.action
            ));
        }
        Some(Ok(Ran {
            status: if timed_out {
                ActionStatus::TimedOut
            } else {
                ActionStatus::Failed
            },
            exit_code: (!timed_out).then_some(result.exit_code),
            duration_ms,
            tail,
            log: written.is_ok().then_some(log),
            retried: 0,
            ran_on: Some(ran_on),
            fetched: None,
        }))
    }
}

/// `90s`, `2m`: a deadline as a person writes one.
fn show(deadline: Duration) -> String {
    let secs = deadline.as_secs();
    if secs >= 60 && secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else if secs > 0 {
        format!("{secs}s")
    } else {
        format!("{}ms", deadline.as_millis())
    }
}

/// The paths `log` names that exist in the workspace (from `step`'s folder, or absolute inside
/// `root`) and that neither are nor hold an input of `described`: root-relative, at most
/// [`MOST_HINTS`], in the order the log names them.
fn undeclared(log: &str, step: &Step, root: &Path, described: &Described) -> Vec<String> {
    let inputs: HashSet<&Path> = described
        .files
        .values()
        .map(|(_, path)| path.as_path())
        .collect();
    let mut found: Vec<String> = Vec::new();
    for word in log.split(|c: char| c.is_whitespace() || "'\"`:,;()[]{}<>".contains(c)) {
        let word = word.trim_end_matches('.');
        if found.len() >= MOST_HINTS {
            break;
        }
        if word.is_empty() || word.starts_with('-') || word.len() > 4096 {
            continue;
        }
        if !word.contains('/') && !word.contains('.') {
            continue;
        }
        let Some(path) = normal(&step.dir.join(word)) else {
            continue;
        };
        let Ok(inside) = path.strip_prefix(root) else {
            continue;
        };
        if inside.as_os_str().is_empty() || std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let declared =
            inputs.contains(path.as_path()) || inputs.iter().any(|i| i.starts_with(&path));
        let shown = inside.to_string_lossy().into_owned();
        if !declared && !found.contains(&shown) {
            found.push(shown);
        }
    }
    found
}

/// `path` with `.` and `..` resolved by its words alone (no link is followed); `None` when it
/// climbs above the root of the file system.
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// The digest of `bytes`, for tests that build a description by hand.
#[cfg(test)]
fn digest(bytes: &[u8]) -> once_remote::reapi::Digest {
    once_remote::digest_of(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_failure_names_the_workspace_files_it_read_without_declaring() {
        let root = std::env::temp_dir().join(format!("once-undeclared-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("app/src")).unwrap();
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::fs::write(root.join("app/src/main.txt"), "in").unwrap();
        std::fs::write(root.join("shared/config.txt"), "cfg").unwrap();
        let mut step = crate::key::tests::step(&root.join("app"), &[], &[]);
        step.path = "app".into();
        let declared = root.join("app/src/main.txt");
        let described = Described {
            action: once_remote::reapi::Action::default(),
            action_digest: digest(b"a"),
            blobs: BTreeMap::new(),
            files: BTreeMap::from([(digest(b"in").hash, (2, declared))]),
        };
        let log = "cat: ../shared/config.txt: No such file or directory\n\
                   cat: src/main.txt: fine\nsh: 1: missing.sh: not found\n";
        assert_eq!(
            undeclared(log, &step, &root, &described),
            ["shared/config.txt"]
        );
        // Outside the workspace, or nowhere: never named.
        let log = "cannot open /etc/passwd or ../../../../etc/hosts or nothing/here.txt";
        assert!(undeclared(log, &step, &root, &described).is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_deadline_reads_as_written() {
        assert_eq!(show(Duration::from_secs(120)), "2m");
        assert_eq!(show(Duration::from_secs(90)), "90s");
        assert_eq!(show(Duration::from_millis(500)), "500ms");
    }
}
