//! The book under `docs/` cannot go stale: its reference pages are generated from the parser
//! (`reference/cli.md`, every `--help`), the manifest's JSON Schema (`reference/manifest.md`) and
//! the MCP catalog (`reference/tools.md`, in `tools_page.rs`), and these tests regenerate them and
//! fail when the committed page differs (`ONCE_BLESS=1` rewrites it). The hand-written reference
//! pages are checked against the code they describe: every `ONCE_*` variable the code reads is in
//! `reference/environment.md`, every exit code in `reference/exit-codes.md`. And every link between
//! pages, anchors included, must lead somewhere, as mdBook would resolve it.
//!
//! Nothing here may depend on the machine: a generated page must be the same wherever it is made.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{TempDir, once_binary, output_within};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn book() -> PathBuf {
    repository().join("docs/src")
}

/// Compares `page` with the committed `docs/src/<rel>`, rewriting it first under `ONCE_BLESS`.
fn assert_page(rel: &str, page: &str, how: &str) {
    let path = book().join(rel);
    if std::env::var_os("ONCE_BLESS").is_some() {
        std::fs::write(&path, page).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == page,
        "`docs/src/{rel}` is stale: it is generated from {how}; run this test with ONCE_BLESS=1 \
         to rewrite it"
    );
}

/// `once ARGS` in an empty workspace, with a fixed width so clap wraps the same everywhere.
fn once(args: &[&str]) -> String {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), "").unwrap();
    let mut command = Command::new(once_binary());
    command
        .args(args)
        .current_dir(dir.path())
        .env("COLUMNS", "100")
        .env_remove("ONCE_LOG")
        .env_remove("CLICOLOR_FORCE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    let output = output_within(command);
    assert!(output.status.success(), "once {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The subcommands a help text lists under `Commands:`, `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    let Some(start) = help.find("\nCommands:\n") else {
        return Vec::new();
    };
    help[start + "\nCommands:\n".len()..]
        .lines()
        .take_while(|line| !line.trim().is_empty())
        // A command's name starts at the list's indent; a wrapped description is indented more.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command path, depth first, from `once` itself.
fn command_paths(path: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = once(&args);
    let children = subcommands(&help);
    out.push((path.clone(), help));
    for child in children {
        let mut next = path.clone();
        next.push(child);
        command_paths(next, out);
    }
}

fn cli_page() -> String {
    let mut commands = Vec::new();
    command_paths(Vec::new(), &mut commands);
    let mut page = String::from(
        "<!-- Generated from `once … --help` by crates/once/tests/cli/book.rs; do not edit by \
         hand. -->\n\n# Command line\n\nEvery command's `--help`, as the parser declares it. \
         `once help COMMAND` and `once COMMAND --help` print the same.\n",
    );
    for (path, help) in &commands {
        let name = std::iter::once("once")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(page, "\n## `{name}`\n\n```text\n{}\n```\n", help.trim_end());
    }
    page
}

#[test]
fn the_cli_reference_is_the_parser() {
    let page = cli_page();
    // The parser's own tree, not a list of ours: every top-level command has its section.
    for command in [
        "check", "query", "run", "mcp", "serve", "memory", "changes", "eval",
    ] {
        assert!(
            page.contains(&format!("\n## `once {command}`\n")),
            "{command} missing"
        );
    }
    assert!(
        page.contains("\n## `once query targets`\n"),
        "no nested commands"
    );
    assert_page("reference/cli.md", &page, "every `once … --help`");
}

fn manifest_page() -> String {
    once(&["query", "schema", "--manifest", "--markdown"])
}

#[test]
fn the_manifest_reference_is_the_schema() {
    let page = manifest_page();
    for table in [
        "[workspace]",
        "[discover]",
        "[cache]",
        "[targets.NAME]",
        "[targets.NAME.capabilities.NAME]",
    ] {
        assert!(
            page.contains(&format!("\n## `{table}`\n")),
            "{table} missing"
        );
    }
    assert!(page.contains("| `default-deadline` |"), "{page}");
    assert_page("reference/manifest.md", &page, "the manifest's JSON Schema");
}

/// Every Rust source file of the crates, tests left out.
fn sources(folder: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_variable_once_reads_is_in_the_environment_reference() {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(repository().join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    let mut names = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (at, _) in text.match_indices("\"ONCE_") {
            let name: String = text[at + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            names.insert(name.trim_end_matches('_').to_owned());
        }
    }
    assert!(names.contains("ONCE_LOG") && names.len() > 8, "{names:?}");
    let page = std::fs::read_to_string(book().join("reference/environment.md")).unwrap();
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !page.contains(&format!("`{name}")))
        .collect();
    assert!(
        missing.is_empty(),
        "`docs/src/reference/environment.md` does not say what {missing:?} do: add a row for each"
    );
    for common in ["NO_COLOR", "CLICOLOR_FORCE", "XDG_STATE_HOME", "EDITOR"] {
        assert!(page.contains(&format!("`{common}`")), "{common} missing");
    }
}

#[test]
fn the_exit_codes_reference_is_the_binary_s() {
    let exit = std::fs::read_to_string(repository().join("crates/once/src/exit.rs")).unwrap();
    let mut codes: BTreeSet<String> = BTreeSet::from(["0".to_owned()]);
    for (at, _) in exit.match_indices("ExitCode::from(") {
        let digits: String = exit[at + "ExitCode::from(".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if !digits.is_empty() {
            codes.insert(digits);
        }
    }
    assert!(
        exit.contains("128 + signal"),
        "signals no longer exit 128 + N"
    );
    codes.insert("128 + N".to_owned());
    let page = std::fs::read_to_string(book().join("reference/exit-codes.md")).unwrap();
    let listed: BTreeSet<String> = page
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    assert_eq!(
        listed, codes,
        "`docs/src/reference/exit-codes.md` lists other codes than `crates/once/src/exit.rs`"
    );
}

/// mdBook's id of a heading: its text lowercased, anything but letters, digits, `_`, `-` and
/// spaces left out, and each run of spaces made one `-` (`` `once.toml` `` gives `oncetoml`).
fn anchor(heading: &str) -> String {
    let kept: String = heading
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some(' ')
            } else {
                None
            }
        })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join("-")
}

/// The ids of a page's headings, outside code blocks, with mdBook's `-1`, `-2` for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let id = anchor(line.trim_start_matches('#'));
        let count = seen.entry(id.clone()).or_default();
        ids.insert(if *count == 0 {
            id.clone()
        } else {
            format!("{id}-{count}")
        });
        *count += 1;
    }
    ids
}

/// The targets of a page's Markdown links outside code (`[text](target)`), with their lines.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        // Inline code may hold `](`; only what is outside backticks is a link.
        let outside: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for (at, _) in outside.match_indices("](") {
            let rest = &outside[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push((number + 1, rest[..end].to_owned()));
            }
        }
    }
    out
}

fn pages(folder: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            pages(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_link_of_the_book_leads_to_a_page_and_an_anchor_that_exist() {
    let root = std::fs::canonicalize(book()).unwrap();
    let mut all = Vec::new();
    pages(&root, &mut all);
    assert!(all.len() > 20, "{all:?}");
    let texts: BTreeMap<PathBuf, String> = all
        .iter()
        .map(|p| (p.clone(), std::fs::read_to_string(p).unwrap()))
        .collect();
    let summary = &texts[&root.join("SUMMARY.md")];
    let mut broken = Vec::new();
    for (page, text) in &texts {
        let rel = page.strip_prefix(&root).unwrap().display().to_string();
        if page != &root.join("SUMMARY.md") && !summary.contains(&format!("]({rel})")) {
            broken.push(format!("{rel} is in no chapter of SUMMARY.md"));
        }
        for (line, target) in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let linked = normalise(&linked);
            let Some(linked_text) = texts.get(&linked) else {
                broken.push(format!(
                    "{rel}:{line}: `{target}` leads to no page of the book"
                ));
                continue;
            };
            if let Some(fragment) = fragment
                && !anchors(linked_text).contains(fragment)
            {
                broken.push(format!("{rel}:{line}: `{target}` names no heading there"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_anchor_of_a_heading_is_mdbooks() {
    assert_eq!(anchor(" The overlay"), "the-overlay");
    assert_eq!(anchor(" `once.toml`"), "oncetoml");
    assert_eq!(
        anchor(" The 2026-07-28 revision, beside the handshake"),
        "the-2026-07-28-revision-beside-the-handshake"
    );
    let ids = anchors("# A\n## A\n```\n# not a heading\n```\n## B c\n");
    assert_eq!(
        ids,
        BTreeSet::from(["a".to_owned(), "a-1".to_owned(), "b-c".to_owned()])
    );
}

#[test]
fn every_link_of_the_front_pages_leads_to_a_file_and_an_anchor_that_exist() {
    let root = std::fs::canonicalize(repository()).unwrap();
    let mut broken = Vec::new();
    for front in ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"] {
        let text = std::fs::read_to_string(root.join(front)).unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let linked = if file.is_empty() {
                root.join(front)
            } else {
                root.join(file)
            };
            if !linked.exists() {
                broken.push(format!("{front}:{line}: `{target}` leads to no file"));
            } else if !fragment.is_empty()
                && !anchors(&std::fs::read_to_string(&linked).unwrap()).contains(fragment)
            {
                broken.push(format!("{front}:{line}: `{target}` names no heading there"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
