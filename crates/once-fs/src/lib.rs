//! File safety shared by every part of `once` that writes into a workspace: project memory,
//! examples and change sets.
//!
//! - [`write_atomic`] and [`remove_durably`]: a reader sees the old file or the whole new one,
//!   never a torn one, and the change survives a crash (the folder is flushed too).
//! - [`lock`]: an advisory file lock (`File::lock`) that the kernel drops when its holder dies;
//!   [`lock_slot`]: one of many such locks kept in a single file.
//! - [`Root`] and [`Folder`]: every write of a person's file (change sets, examples, restored
//!   outputs), walked from a descriptor of the workspace root one folder at a time, never through
//!   a symbolic link and never into `.git` or `.once`, checked at the moment of writing.
//! - [`WorkspacePath`]: a relative path checked by its text: never absolute, never `..`, no name
//!   over 255 bytes. [`open_inside`] opens a file only to read it, and refuses one whose real
//!   location is outside the root or inside `.git` or `.once`.
//! - [`clock`]: time-ordered ids and RFC 3339 timestamps for the files we create.
//! - [`Stamp`]: proof from a `stat` that a file still has the content it had, as git uses it.
//! - [`codec`]: the binary encoding of `once`'s own records that must be read fast.
//! - [`owner_of`]: whether a file is ours, root's or another user's, for trusting a manifest.
//!
//! This crate must never print, and never write anywhere its caller did not name.

mod atomic;
mod beneath;
pub mod clock;
pub mod codec;
mod owner;
mod path;
mod reserved;
mod slot_lock;
mod stamp;

pub use atomic::{
    ABANDONED_AFTER, Lock, Mode, create_dirs, is_abandoned_temp, lock, open_in_place,
    open_nonblocking, open_own, remove_durably, sync_dir, temp_path, write_atomic, write_replacing,
    write_synced,
};
pub use beneath::{
    Folder, Kind, PATH_MAX, RESERVED, Root, STAGE_ROOM, is_stage_name, stage_name, state_dir,
};
pub use owner::{Owner, owner_of};
pub use path::{NAME_MAX, PathError, WorkspacePath, open_inside};
pub use slot_lock::{SlotLock, lock_slot};
pub use stamp::{FileKind, Lookup, RACY_WINDOW, STAMP_BYTES, Stamp, Status};

/// The BLAKE3 hash of `bytes`, as the lowercase hex every `once` file records.
pub fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}
