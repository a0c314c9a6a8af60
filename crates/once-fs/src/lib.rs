//! File safety shared by every part of `once` that writes into a workspace: project memory,
//! examples and change sets.
//!
//! - [`write_atomic`] and [`remove_durably`]: a reader sees the old file or the whole new one,
//!   never a torn one, and the change survives a crash (the folder is flushed too).
//! - [`lock`]: an advisory `flock` that the kernel drops when its holder dies.
//! - [`WorkspacePath`]: a relative path checked to stay inside a root: never absolute, never `..`,
//!   never through a symbolic link that leads outside.
//! - [`clock`]: time-ordered ids and RFC 3339 timestamps for the files we create.
//! - [`Stamp`]: proof from a `stat` that a file still has the content it had, as git uses it.
//!
//! This crate must never print, and never write anywhere its caller did not name.

mod atomic;
pub mod clock;
mod path;
mod stamp;

pub use atomic::{
    ABANDONED_AFTER, Lock, Mode, create_dirs, is_abandoned_temp, lock, remove_durably, sync_dir,
    temp_path, write_atomic, write_replacing, write_synced,
};
pub use path::{PathError, WorkspacePath};
pub use stamp::{RACY_WINDOW, STAMP_BYTES, Stamp};

/// The BLAKE3 hash of `bytes`, as the lowercase hex every `once` file records.
pub fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}
