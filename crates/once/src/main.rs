//! The `once` command-line tool: parses the command line, runs one command, and turns its outcome
//! into an exit code. Everything that knows about terminals, exit codes, signals and the process's
//! own stdout lives in this crate; the libraries never print.

mod cli;
mod colour;
mod commands;
mod exit;
mod live;
mod output;
mod overview;
mod render;
mod session;
mod signals;
mod stdout_guard;
mod wording;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    // A misspelt `ONCE_CONTAINMENT` must not leave anyone believing a mode is in force.
    if let Err(error) = once_exec::Containment::from_env() {
        eprintln!("error: {error}");
        return exit::Outcome::Invalid.into();
    }
    commands::run(cli).into()
}
