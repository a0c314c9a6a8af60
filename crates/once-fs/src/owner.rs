//! Who owns a file, for the rule that a manifest found outside any repository must belong to the
//! person running `once` (or to root), as git's `safe.directory` rule does for repositories.
//!
//! It answers from the file's metadata and the process's effective user id only; it must never
//! follow a guess (a name, a mode) or change anything.

use std::fs::Metadata;

/// Whose a file is, seen from this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The process's effective user, or a platform without owners as unix has them.
    Us,
    /// The superuser, whom every user already trusts with everything.
    Root,
    /// Another user, by uid.
    Other(u32),
}

impl Owner {
    /// Whether a file so owned may decide what `once` runs without the person naming it.
    pub fn is_trusted(self) -> bool {
        matches!(self, Owner::Us | Owner::Root)
    }
}

/// The owner of the file `metadata` describes.
#[cfg(unix)]
pub fn owner_of(metadata: &Metadata) -> Owner {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let us = unsafe { libc::geteuid() };
    owner_given(metadata.uid(), us)
}

/// The owner of the file `metadata` describes: on this platform, always [`Owner::Us`].
#[cfg(not(unix))]
pub fn owner_of(_metadata: &Metadata) -> Owner {
    Owner::Us
}

/// The rule itself, apart from the system calls, so it can be tested as any user.
#[cfg_attr(not(unix), allow(dead_code))]
fn owner_given(uid: u32, us: u32) -> Owner {
    if uid == us {
        Owner::Us
    } else if uid == 0 {
        Owner::Root
    } else {
        Owner::Other(uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_us_and_root_are_trusted() {
        assert_eq!(owner_given(1000, 1000), Owner::Us);
        assert_eq!(owner_given(0, 0), Owner::Us);
        assert_eq!(owner_given(0, 1000), Owner::Root);
        assert_eq!(owner_given(65534, 1000), Owner::Other(65534));
        assert_eq!(owner_given(65534, 0), Owner::Other(65534));
        assert!(Owner::Us.is_trusted() && Owner::Root.is_trusted());
        assert!(!Owner::Other(65534).is_trusted());
    }

    #[cfg(unix)]
    #[test]
    fn a_file_we_create_is_ours() {
        let path = std::env::temp_dir().join(format!("once-owner-{}", std::process::id()));
        std::fs::write(&path, "x").unwrap();
        let owner = owner_of(&std::fs::metadata(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(owner, Owner::Us);
    }
}
