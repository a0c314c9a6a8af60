//! The floor under a no-op build: one process that stats every input file once, on two threads.
//!
//! `bench/compare.py` runs it on the folders that the generated packages declare as inputs
//! (`packages/*/src`) and prints its wall time beside the tools' no-op builds: a tool that checks
//! its inputs by their metadata cannot answer faster than the time it takes to read that
//! metadata. It walks each folder, calls `symlink_metadata` on every entry (as a hasher does
//! before it trusts a recorded stamp) and prints how many files it saw, so the benchmark can check
//! that it saw every input. It must never read a file's content or write anything: then it would
//! measure more than the floor.
//!
//!     cargo run --release --locked -p once-fs --example stat_floor -- FOLDER...

// A measuring program: its answer (the count of files) and its complaints are its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs, io, thread};

/// Two threads, as the benchmark's machines have two cores and once's hasher uses them.
const THREADS: usize = 2;

fn main() -> ExitCode {
    let folders: Vec<PathBuf> = env::args_os().skip(1).map(PathBuf::from).collect();
    if folders.is_empty() {
        eprintln!("stat_floor: give the input folders to stat, e.g. `packages/*/src`");
        return ExitCode::from(2);
    }
    match stat_all(&folders) {
        Ok(files) => {
            println!("{files}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("stat_floor: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Stats every file under `folders`, the folders dealt to the threads in turn; returns how many
/// files there were.
fn stat_all(folders: &[PathBuf]) -> io::Result<u64> {
    thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|first| {
                scope.spawn(move || -> io::Result<u64> {
                    folders
                        .iter()
                        .skip(first)
                        .step_by(THREADS)
                        .try_fold(0, |files, folder| stat_tree(folder).map(|n| files + n))
                })
            })
            .collect();
        workers.into_iter().try_fold(0, |total, worker| {
            // A worker that panicked has no count to give; say so rather than guess one.
            let files = worker
                .join()
                .map_err(|_| io::Error::other("a stat thread panicked"))??;
            Ok(total + files)
        })
    })
}

/// Stats every entry under `folder`, recursively, without following symbolic links; returns how
/// many of them are not folders.
fn stat_tree(folder: &Path) -> io::Result<u64> {
    let mut files = 0;
    for entry in fs::read_dir(folder)? {
        let path = entry?.path();
        if fs::symlink_metadata(&path)?.is_dir() {
            files += stat_tree(&path)?;
        } else {
            files += 1;
        }
    }
    Ok(files)
}
