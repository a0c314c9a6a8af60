//! The reserved names (`.git`, `.once`) as a folder compares names.
//!
//! A name is reserved when it is one of [`RESERVED`] byte for byte (on Windows, as Windows
//! compares names). But a folder may compare names more loosely than its platform's default: a
//! case-insensitive volume on macOS (the default), an ext4 folder with the casefold attribute, a
//! FAT or exFAT stick, an SMB share. There `.GIT/config` is git's own config. So a name that
//! [`resembles`] a reserved one (it differs only by case, by characters that HFS+ ignores, or by
//! trailing dots and spaces) is asked of the very folder it would be made in
//! (`Folder::reaches_reserved`, in `beneath.rs`): the answer is per folder, never per platform.
//!
//! Must never call a name harmless that the folder would open as a reserved one.

/// Components no user write may pass: git's folder and our own state.
pub const RESERVED: [&str; 2] = [".git", ".once"];

/// Whether `name` is one of [`RESERVED`], as the platform's file systems compare names.
#[cfg(not(windows))]
pub(crate) fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
}

/// Whether `name` is one of [`RESERVED`], as the platform's file systems compare names.
#[cfg(windows)]
pub(crate) fn is_reserved(name: &str) -> bool {
    reserved_on_windows(name)
}

/// Whether Windows would open one of [`RESERVED`] for `name`: it ignores case and trailing dots
/// and spaces (`.GIT.` is `.git`), and answers to 8.3 short names, which for these folders are
/// `GIT~1` and `ONCE~1` (a `~2` appears only when another name in the folder took `~1` first,
/// which this check does not try to foresee).
#[cfg(any(windows, test))]
fn reserved_on_windows(name: &str) -> bool {
    let name = name.trim_end_matches(['.', ' ']);
    RESERVED
        .iter()
        .chain(&["git~1", "once~1"])
        .any(|reserved| name.eq_ignore_ascii_case(reserved))
}

/// The reserved name that `name` would be in a folder that folds names, when `name` is not
/// exactly it: equal once case is folded, the code points HFS+ ignores are dropped, and
/// trailing dots and spaces are trimmed (`.GIT`, `.Git.`, `.g\u{200c}it`).
pub(crate) fn resembles(name: &str) -> Option<&'static str> {
    // Every spelling starts with the dot or with a code point HFS+ ignores (UTF-8 leading bytes
    // 0xE2 and 0xEF): the names of a no-op run's outputs leave here without an allocation.
    if !matches!(name.as_bytes().first(), Some(b'.' | 0xE2 | 0xEF)) || is_reserved(name) {
        return None;
    }
    let folded: String = name
        .chars()
        .filter(|c| !ignored_by_hfs(*c))
        .flat_map(char::to_lowercase)
        .collect();
    let folded = folded.trim_end_matches(['.', ' ']);
    RESERVED
        .iter()
        .copied()
        .find(|reserved| folded == *reserved)
}

/// The code points HFS+ drops when it compares names (the list git checks for `.git`).
fn ignored_by_hfs(c: char) -> bool {
    matches!(c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_windows_reserved_names_fold_case_trailing_dots_and_short_names() {
        for name in [
            ".git", ".GIT", ".Git.", ".git ", ".git. .", "GIT~1", "git~1", ".ONCE", "ONCE~1.",
        ] {
            assert!(reserved_on_windows(name), "{name}");
        }
        for name in [
            "git",
            ".gitignore",
            ".github",
            ".once-x",
            "a.git",
            "..git",
            ".g it",
        ] {
            assert!(!reserved_on_windows(name), "{name}");
        }
    }

    #[test]
    fn names_that_a_folding_folder_would_read_as_reserved_resemble_them() {
        for (name, reserved) in [
            (".GIT", ".git"),
            (".Git", ".git"),
            (".git.", ".git"),
            (".gIt ", ".git"),
            (".g\u{200c}it", ".git"),
            ("\u{feff}.git", ".git"),
            (".ONCE", ".once"),
            (".Once..", ".once"),
        ] {
            assert_eq!(resembles(name), Some(reserved), "{name:?}");
        }
        for name in [
            ".git",
            ".once",
            ".gitignore",
            ".github",
            "git",
            ".g-it",
            ".onc",
        ] {
            assert_eq!(resembles(name), None, "{name:?}");
        }
    }
}
