//! The end of a log that is still being written, for the progress messages of `once_run`: the
//! last lines a running action printed, so an agent watching a long build sees where it is.
//!
//! It reads at most [`TAIL_BYTES`] from the end of a file, whatever the log's size, and it must
//! never fail a run: a log that is missing (nothing printed yet) or unreadable is no output.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the end of a log is read.
pub(crate) const TAIL_BYTES: u64 = 2048;
/// How many of its last lines are kept.
pub(crate) const TAIL_LINES: usize = 10;

/// The last [`TAIL_LINES`] complete or partial lines within the last [`TAIL_BYTES`] of `path`,
/// joined by `\n`; empty when there are none.
pub(crate) fn last_lines(path: &Path) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let length = file.metadata().map_or(0, |m| m.len());
    let start = length.saturating_sub(TAIL_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.take(TAIL_BYTES).read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    // Reading from the middle of the file cut its first line: it is not shown in part.
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    let keep = lines.len().saturating_sub(TAIL_LINES);
    lines[keep..]
        .iter()
        .map(|line| line.trim_end_matches('\r'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_of_a_log_and_nothing_for_a_missing_one() {
        let dir = std::env::temp_dir().join(format!("once-mcp-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("a.log");
        assert_eq!(last_lines(&log), "");
        std::fs::write(&log, "one\r\ntwo\nthree").unwrap();
        assert_eq!(last_lines(&log), "one\ntwo\nthree");
        let many: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, many).unwrap();
        let tail = last_lines(&log);
        assert_eq!(tail.lines().count(), TAIL_LINES);
        assert!(tail.ends_with("line 999"), "{tail}");
        assert!(tail.starts_with("line 990"), "{tail}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
