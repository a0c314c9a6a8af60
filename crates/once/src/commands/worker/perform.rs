//! Performing one lease: the `Action` and its `Command` read from the CAS, the input root laid
//! out in a scratch folder of its own, the command run there by `once-exec` (so with once's
//! containment, a deadline and a process group), then the outputs, stdout and stderr collected
//! and uploaded. Split in three (`prepare`, the run, `finish`) so that the session can keep
//! reporting to the server while the command runs; it never talks to the server on its own
//! behalf beyond the CAS, and never leaves a scratch folder behind (`Prepared` removes it on drop).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use once_exec::{CommandSpec, EnvMode, Outcome, Status};
use once_remote::{Client, Work, reapi};
use prost::Message;

use super::input;
use super::output::{self, Uploads};

/// How a lease ended, for the session to report.
pub enum Performed {
    /// The command ran to its end (whatever its exit code).
    Done(reapi::ActionResult),
    /// The action's timeout stopped it; what it wrote so far is in the result.
    TimedOut(reapi::ActionResult),
    /// The worker stopped it (a signal, or the server took the lease back): another bot may
    /// run it.
    Stopped,
}

/// An action ready to run: its folder (removed on drop), the command and what to collect.
pub struct Prepared {
    dir: PathBuf,
    root: PathBuf,
    pub spec: CommandSpec,
    outputs: Vec<String>,
    working_directory: String,
    stderr: PathBuf,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads what `work` names from the CAS and lays it out in a new folder under `scratch`.
pub fn prepare(client: &Client, work: Work, scratch: &Path, lease_id: &str) -> Result<Prepared> {
    let dir = fresh_folder(scratch, lease_id)?;
    let spill = dir.join("spill");
    let root = dir.join("root");
    for folder in [&spill, &root] {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create `{}`", folder.display()))?;
    }
    // From here on, a failure must still remove the folder.
    let mut guard = FolderGuard(Some(dir.clone()));
    let action = match work {
        Work::Action(action) => action,
        Work::ActionDigest(digest) => decode(client, &digest, &spill, "Action")?,
    };
    let command_digest = action
        .command_digest
        .as_ref()
        .context("the Action names no Command")?;
    let command: reapi::Command = decode(client, command_digest, &spill, "Command")?;
    if command.arguments.is_empty() {
        bail!("the Command has no arguments: nothing to run");
    }
    let root_digest = action
        .input_root_digest
        .as_ref()
        .context("the Action names no input root")?;
    input::lay_out(client, root_digest, &root, &spill)?;
    let working_directory = if command.working_directory.is_empty() {
        String::new()
    } else {
        output::inside(&command.working_directory)?
    };
    let outputs = output::declared(&command)?;
    output::prepare(&root, &outputs)?;
    let cwd = root.join(&working_directory);
    std::fs::create_dir_all(&cwd).with_context(|| format!("cannot create `{}`", cwd.display()))?;
    let stderr = dir.join("stderr");
    let mut spec = CommandSpec::new(
        shell_line(&command.arguments, &stderr),
        cwd,
        dir.join("stdout"),
    );
    // The worker's basic variables (PATH, HOME, locale, ...) and the Command's on top: nothing
    // else of the worker's environment reaches an action from someone else's machine.
    spec.env_mode = EnvMode::Strict { pass: Vec::new() };
    spec.env = command
        .environment_variables
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    if let Some(timeout) = action.timeout.as_ref().and_then(to_duration) {
        spec.deadline = timeout;
    }
    spec.label = format!("lease {lease_id}");
    // `Prepared` owns the folder now.
    guard.0 = None;
    Ok(Prepared {
        dir,
        root,
        spec,
        outputs,
        working_directory,
        stderr,
    })
}

/// Collects and uploads what the command left; `Err` when it never ran (the reason).
pub fn finish(
    client: &Client,
    prepared: &Prepared,
    outcome: Outcome,
) -> Result<Result<Performed, String>> {
    let exit_code = match &outcome.status {
        Status::Exited { code } => *code,
        Status::Signaled { signal } => 128 + signal,
        Status::TimedOut => -1,
        Status::Cancelled => return Ok(Ok(Performed::Stopped)),
        Status::FailedToStart { message } => {
            return Ok(Err(format!("the command could not start: {message}")));
        }
    };
    let mut result = reapi::ActionResult {
        exit_code,
        ..Default::default()
    };
    let mut uploads = Uploads::default();
    output::collect(
        &prepared.root,
        &prepared.working_directory,
        &prepared.outputs,
        &mut result,
        &mut uploads,
    )?;
    let stdout = std::fs::read(&prepared.spec.log_path).unwrap_or_default();
    let stderr = std::fs::read(&prepared.stderr).unwrap_or_default();
    result.stdout_digest = Some(uploads.add(stdout));
    result.stderr_digest = Some(uploads.add(stderr));
    uploads.send(client)?;
    Ok(Ok(if outcome.status == Status::TimedOut {
        Performed::TimedOut(result)
    } else {
        Performed::Done(result)
    }))
}

/// `sh -c` line that runs `arguments` as they are, with stderr in the file `stderr` (once-exec
/// captures stdout and stderr together; REAPI keeps them apart).
fn shell_line(arguments: &[String], stderr: &Path) -> String {
    let argv: Vec<String> = arguments.iter().map(|a| quote(a)).collect();
    format!(
        "exec 2>{} && exec {}",
        quote(&stderr.to_string_lossy()),
        argv.join(" ")
    )
}

/// `text` in single quotes for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn decode<M: Message + Default>(
    client: &Client,
    digest: &reapi::Digest,
    spill: &Path,
    what: &str,
) -> Result<M> {
    let blob = client
        .read_blob(digest, spill)
        .with_context(|| format!("cannot read the {what} from the CAS"))?
        .with_context(|| format!("the CAS has no {what} `{}`", input::show(digest)))?;
    M::decode(input::bytes_of(blob)?.as_slice())
        .with_context(|| format!("the {what} `{}` is not one", input::show(digest)))
}

fn to_duration(d: &prost_types::Duration) -> Option<Duration> {
    let secs = u64::try_from(d.seconds).ok()?;
    let nanos = u32::try_from(d.nanos).ok()?;
    let duration = Duration::new(secs, nanos);
    (!duration.is_zero()).then_some(duration)
}

/// A new folder for one lease under `scratch`.
fn fresh_folder(scratch: &Path, lease_id: &str) -> Result<PathBuf> {
    let safe: String = lease_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(64)
        .collect();
    let dir = scratch.join(format!("once-worker-{}-{safe}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| {
        format!(
            "cannot create the scratch folder `{}`: pass a writable one with `--scratch`",
            dir.display()
        )
    })?;
    Ok(dir)
}

/// Removes a folder on drop, unless emptied.
struct FolderGuard(Option<PathBuf>);

impl Drop for FolderGuard {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_reach_sh_as_they_are() {
        let line = shell_line(
            &["printf".into(), r"%s\n".into(), "it's".into()],
            Path::new("/tmp/x y/stderr"),
        );
        assert_eq!(
            line,
            r"exec 2>'/tmp/x y/stderr' && exec 'printf' '%s\n' 'it'\''s'"
        );
    }
}
