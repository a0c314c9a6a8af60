//! `once completions SHELL`: the shell's completion script, written by `clap_complete` from the
//! same command-line declaration the parser reads, so the two cannot drift apart. It must never
//! read the workspace: a script is the same in every folder, and installing it must work anywhere.

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;
use crate::exit::Outcome;
use crate::output;

pub fn run(shell: Shell) -> Result<Outcome> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "once", &mut script);
    let script = String::from_utf8(script).context("the completion script is not UTF-8")?;
    output::text(&script).context("cannot print the completion script")?;
    Ok(Outcome::Success)
}
