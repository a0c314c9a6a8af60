//! Pure text for the terminal: display columns, the progress line of a run, the prefix that
//! names an action's output lines, and counted nouns. Every function here is a value in, a string
//! out; nothing here must ever write, query the terminal or read the environment.

use std::fmt::Write as _;

/// `n` and the noun, plural unless `n` is 1: `1 action`, `2 actions`.
pub fn count(n: usize, word: &str) -> String {
    format!("{n} {}", noun(n, word))
}

/// The noun for `n` of it: `action` for 1, `actions` otherwise.
pub fn noun(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// The columns a character takes on a terminal: 0 for combining marks and controls, 2 for the
/// wide East Asian ranges and emoji, 1 otherwise. An approximation of Unicode's East Asian
/// Width that is exact for the scripts action names and progress lines use; erring on the wide
/// side only leaves a column blank, never wraps the line.
pub fn columns_of(c: char) -> usize {
    let c = c as u32;
    if c < 0x20 || (0x7f..0xa0).contains(&c) {
        return 0;
    }
    let zero = [
        (0x0300, 0x036f),
        (0x0483, 0x0489),
        (0x0591, 0x05bd),
        (0x200b, 0x200f),
        (0x20d0, 0x20ff),
        (0xfe00, 0xfe0f),
        (0xfe20, 0xfe2f),
    ];
    if zero.iter().any(|&(a, b)| (a..=b).contains(&c)) {
        return 0;
    }
    let wide = [
        (0x1100, 0x115f),
        (0x2e80, 0x303e),
        (0x3041, 0x33ff),
        (0x3400, 0x4dbf),
        (0x4e00, 0x9fff),
        (0xa000, 0xa4cf),
        (0xac00, 0xd7a3),
        (0xf900, 0xfaff),
        (0xfe30, 0xfe4f),
        (0xff00, 0xff60),
        (0xffe0, 0xffe6),
        (0x1f300, 0x1f64f),
        (0x1f900, 0x1f9ff),
        (0x20000, 0x3fffd),
    ];
    if wide.iter().any(|&(a, b)| (a..=b).contains(&c)) {
        2
    } else {
        1
    }
}

/// The columns `text` takes.
pub fn columns(text: &str) -> usize {
    text.chars().map(columns_of).sum()
}

/// `text` cut at a character boundary to at most `width` columns, ending with `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if columns(text) <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = columns_of(c);
        // Keep one column for the ellipsis.
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Where a run stands, as the progress line shows it.
#[derive(Debug, Default, Clone)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub cached: usize,
    pub failed: usize,
    /// The actions running now, oldest first.
    pub running: Vec<String>,
}

/// The progress line for a terminal `width` columns wide: one line that never reaches the last
/// column (a terminal that wraps there would leave the line behind on the next redraw).
pub fn progress_line(progress: &Progress, width: usize) -> String {
    let mut line = format!(
        "[{}/{}] {} running, {} cached, {} failed",
        progress.done,
        progress.total,
        progress.running.len(),
        progress.cached,
        progress.failed
    );
    if !progress.running.is_empty() {
        let _ = write!(line, "  {}", progress.running.join(", "));
    }
    truncate(&line, width.saturating_sub(1))
}

/// The prefixes of a run's output lines: each action's name padded to the longest (up to a
/// bound, so one long name does not push every line to the right), coloured when asked.
#[derive(Debug)]
pub struct Prefixes {
    width: usize,
    colour: bool,
}

/// Widest a prefix is padded to; longer names are shown whole, unpadded.
const PREFIX_WIDTH: usize = 32;

/// Colours for prefixes, in turn: cyan, magenta, yellow, green, blue and their bright forms.
/// Red is left for failures.
const PALETTE: [u8; 10] = [36, 35, 33, 32, 34, 96, 95, 93, 92, 94];

impl Prefixes {
    pub fn new<'a>(actions: impl IntoIterator<Item = &'a str>, colour: bool) -> Prefixes {
        let width = actions.into_iter().map(columns).max().unwrap_or(0);
        Prefixes {
            width: width.min(PREFIX_WIDTH),
            colour,
        }
    }

    /// `line` of `action`, the `index`th action of the plan: `core:test | line`.
    pub fn line(&self, action: &str, index: usize, line: &str) -> String {
        let pad = " ".repeat(self.width.saturating_sub(columns(action)));
        if self.colour {
            let colour = PALETTE[index % PALETTE.len()];
            format!("\x1b[{colour}m{action}{pad}\x1b[0m | {line}")
        } else {
            format!("{action}{pad} | {line}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(running: &[&str]) -> Progress {
        Progress {
            done: 3,
            total: 12,
            cached: 1,
            failed: 0,
            running: running.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn the_progress_line_fits_every_width_and_never_splits_a_character() {
        let state = progress(&["core:test", "web:build", "数据:测试", "ünïcødé:lint"]);
        for width in [20, 60, 200] {
            let line = progress_line(&state, width);
            assert!(columns(&line) < width, "{width}: {line:?}");
            assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
            assert!(line.starts_with("[3/12] "), "{line:?}");
        }
        assert_eq!(progress_line(&state, 20), "[3/12] 4 running, …");
        let wide = progress_line(&state, 200);
        assert_eq!(
            wide,
            "[3/12] 4 running, 1 cached, 0 failed  core:test, web:build, 数据:测试, ünïcødé:lint"
        );
        // Cut inside the wide characters: the line ends before the one that would not fit.
        let at = columns("[3/12] 4 running, 1 cached, 0 failed  core:test, web:build, 数");
        let cut = progress_line(&state, at + 1);
        assert_eq!(
            cut,
            "[3/12] 4 running, 1 cached, 0 failed  core:test, web:build, …"
        );
        assert_eq!(columns(&progress_line(&state, 60)), 59);
    }

    #[test]
    fn truncation_counts_columns_not_bytes() {
        assert_eq!(truncate("日本語テキスト", 7), "日本語…");
        assert_eq!(truncate("日本語テキスト", 8), "日本語…");
        assert_eq!(truncate("ééééé", 5), "ééééé");
        assert_eq!(truncate("ééééé", 4), "ééé…");
        assert_eq!(truncate("abc", 0), "");
        assert_eq!(columns("e\u{301}"), 1);
    }

    #[test]
    fn prefixes_are_padded_to_the_longest_name_and_coloured_on_request() {
        let plain = Prefixes::new(["a:b", "core:test", "数据:x"], false);
        assert_eq!(plain.line("a:b", 0, "hi"), "a:b       | hi");
        assert_eq!(plain.line("core:test", 1, "hi"), "core:test | hi");
        assert_eq!(plain.line("数据:x", 2, "hi"), "数据:x    | hi");
        let coloured = Prefixes::new(["a:b", "c:d"], true);
        assert_eq!(coloured.line("a:b", 0, "x"), "\x1b[36ma:b\x1b[0m | x");
        assert_eq!(coloured.line("c:d", 1, "x"), "\x1b[35mc:d\x1b[0m | x");
        let long = "t".repeat(40);
        let bounded = Prefixes::new([long.as_str(), "a:b"], false);
        assert_eq!(
            bounded.line("a:b", 1, "x"),
            format!("a:b{} | x", " ".repeat(29))
        );
        assert_eq!(bounded.line(&long, 0, "x"), format!("{long} | x"));
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(0, "action"), "0 actions");
        assert_eq!(count(1, "action"), "1 action");
        assert_eq!(count(2, "file"), "2 files");
        assert_eq!(noun(1, "target"), "target");
    }
}
