//! Every command the book and the README show with its output is run, and its output compared:
//! a ```` ```console ```` block holds `$ once …` lines, each followed by what it prints (stdout,
//! then stderr, the workspace's path as `[ROOT]`, and `[exit: N]` when it does not exit 0). The
//! HTML comment `<!-- console: FOLDER -->` on the line before the block names the workspace it runs
//! in, a folder of this repository copied afresh for each block (with a `.git` of its own, so the
//! root search stops there). The commands of one block run in order, in the same copy.
//! `ONCE_BLESS=1` rewrites the blocks with what the commands print now, but for a block that
//! still matches: there `[..]` in a line stands for any text (a key or a duration that changes
//! with the machine), as in trycmd.
//!
//! Keep such examples few and deterministic: no timings, run ids or hashes that change with the
//! machine. This test must never run anything but the `once` under test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{TempDir, copy_tree, once_binary, output_within};

const FIXTURE: &str = "<!-- console: ";

/// One ```` ```console ```` block: where its body starts and ends in the page (byte offsets), the
/// folder it runs in, and its body.
struct Block {
    body_start: usize,
    body_end: usize,
    fixture: String,
    body: String,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = page[from..].find("```console\n") {
        let fence = from + found;
        let body_start = fence + "```console\n".len();
        let body_end = body_start
            + page[body_start..]
                .find("```\n")
                .expect("a console block ends");
        let before = page[..fence].trim_end_matches('\n');
        let line = before.rsplit('\n').next().unwrap_or("");
        let fixture = line
            .strip_prefix(FIXTURE)
            .and_then(|rest| rest.strip_suffix(" -->"))
            .unwrap_or_else(|| {
                panic!("a console block must follow `<!-- console: FOLDER -->`, not `{line}`")
            })
            .to_owned();
        out.push(Block {
            body_start,
            body_end,
            fixture,
            body: page[body_start..body_end].to_owned(),
        });
        from = body_end;
    }
    out
}

/// The words of a command line: split at spaces, with `'…'` and `"…"` kept whole.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, ' ') => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// Runs each `$ once …` line of `body` in a fresh copy of `fixture`, and returns the body as it
/// should read: each command followed by what it printed.
fn run_block(fixture: &str, body: &str) -> String {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(fixture);
    assert!(source.is_dir(), "no folder `{fixture}` for a console block");
    let dir = TempDir::new();
    let root = dir.path().join("workspace");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    copy_tree(&source, &root);
    let state = dir.path().join("state");
    let mut out = String::new();
    for line in body.lines().filter(|line| line.starts_with("$ ")) {
        let words = words(&line[2..]);
        assert_eq!(
            words.first().map(String::as_str),
            Some("once"),
            "a console block runs only `once`: `{line}`"
        );
        let mut command = Command::new(once_binary());
        // A reader's shell, not the test harness's: no `CARGO_*` variables the harness sets (a key
        // lists the variables it reads), only `PATH`, a home of its own and the settings below.
        command
            .args(&words[1..])
            .current_dir(&root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("XDG_STATE_HOME", &state)
            .env("COLUMNS", "100")
            .env("NO_COLOR", "1")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("ONCE_LOG")
            .stdin(Stdio::null());
        let output = output_within(command);
        let mut printed = String::from_utf8_lossy(&output.stdout).into_owned();
        printed.push_str(&String::from_utf8_lossy(&output.stderr));
        let canonical = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        let printed = printed
            .replace(&canonical.display().to_string(), "[ROOT]")
            .replace(&root.display().to_string(), "[ROOT]");
        out.push_str(line);
        out.push('\n');
        out.push_str(&printed);
        if !printed.is_empty() && !printed.ends_with('\n') {
            out.push('\n');
        }
        match output.status.code() {
            Some(0) => {}
            code => out.push_str(&format!("[exit: {}]\n", code.unwrap_or(-1))),
        }
    }
    out
}

/// Whether `printed` is what `shown` shows, line by line, where `[..]` in a line of `shown` stands
/// for any text within that line.
fn matches(shown: &str, printed: &str) -> bool {
    let shown: Vec<&str> = shown.lines().collect();
    let printed: Vec<&str> = printed.lines().collect();
    shown.len() == printed.len()
        && shown
            .iter()
            .zip(&printed)
            .all(|(shown, printed)| line_matches(shown, printed))
}

/// One line of [`matches`]: the parts between `[..]` appear in order, the first at the start and
/// the last at the end.
fn line_matches(shown: &str, printed: &str) -> bool {
    let parts: Vec<&str> = shown.split("[..]").collect();
    if parts.len() == 1 {
        return shown == printed;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !printed.starts_with(first) || printed.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &printed[first.len()..];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

fn pages() -> Vec<PathBuf> {
    fn walk(folder: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = vec![repository.join("README.md")];
    walk(&repository.join("docs/src"), &mut out);
    out
}

#[test]
fn every_console_example_prints_what_it_shows() {
    let bless = std::env::var_os("ONCE_BLESS").is_some();
    let mut stale = Vec::new();
    let mut count = 0;
    for path in pages() {
        let page = std::fs::read_to_string(&path).unwrap();
        let mut rewritten = page.clone();
        // From the last block back, so the offsets of the earlier ones still hold.
        for block in blocks(&page).into_iter().rev() {
            count += 1;
            let now = run_block(&block.fixture, &block.body);
            if !matches(&block.body, &now) {
                stale.push(format!(
                    "{}: the block in `{}` now prints:\n{now}\ninstead of:\n{}",
                    path.display(),
                    block.fixture,
                    block.body
                ));
                rewritten.replace_range(block.body_start..block.body_end, &now);
            }
        }
        if bless && rewritten != page {
            std::fs::write(&path, rewritten).unwrap();
        }
    }
    assert!(
        count >= 3,
        "only {count} console blocks: the examples went missing"
    );
    assert!(
        stale.is_empty() || bless,
        "console examples are stale (run this test with ONCE_BLESS=1 to rewrite them):\n{}",
        stale.join("\n")
    );
}

#[test]
fn a_command_line_splits_into_words_as_a_shell_would_for_plain_quotes() {
    assert_eq!(
        words("once query owner 'a b'  \"c\" d"),
        ["once", "query", "owner", "a b", "c", "d"]
    );
    assert_eq!(
        words("once run x --param ''"),
        ["once", "run", "x", "--param", ""]
    );
}

#[test]
fn a_wildcard_stands_for_any_text_within_its_line() {
    assert!(line_matches("key [..] ok", "key ab12cd ok"));
    assert!(line_matches("in [..]s, run [..]", "in 0.06s, run 2026"));
    assert!(!line_matches("key [..] ok", "key ab12cd fail"));
    assert!(!line_matches("a[..]a", "a"));
    assert!(matches("x\ny [..]\n", "x\ny 1\n"));
    assert!(!matches("x\ny [..]\n", "x\ny 1\nz\n"));
}
