//! The `changes` target: a change-set draft built from the input, proposed with
//! `once_changes::ChangeStore::propose` in a scratch workspace that holds the traps a hostile
//! proposal would aim at: `.git/`, `.once/`, a link to a folder outside, a link inside, a link to
//! a file, a dangling link.
//!
//! An input is text (decoded lossily): the title on the first line, the rationale on the second,
//! then one change per line, `action<TAB>path<TAB>base<TAB>content`. An unknown action stands for
//! the one its length picks, so mutated inputs still reach the path checks; a base of `=` is the
//! current hash of the path (the one way a mutated input can name a file's real hash); without a
//! fourth field there is no content; `\n` in the content is a newline.
//!
//! Properties: proposing never panics; it never changes anything outside `.once/changes/`
//! (neither in the workspace nor beside it); a refused draft leaves `.once/changes/` empty; an
//! accepted one stores a `proposal.json`, and each of its paths is relative, has no `.` or `..`
//! part, is not under `.git/` or `.once/`, passes through no link that leads outside, is not a
//! link itself, and matches its action and base. Must never write outside its scratch folder.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use once_changes::{Action, ChangeDraft, ChangeStore, Draft, Proposal};

use crate::scratch::Scratch;

/// Actions, separators and the paths of the scratch workspace.
pub const DICTIONARY: &[&str] = &[
    "create\t",
    "replace\t",
    "delete\t",
    "\t=\t",
    "\t\t",
    "\\n",
    "src/lib.rs",
    "src/new.rs",
    "old.txt",
    "once.toml",
    "link-out/",
    "link-in/",
    "file-link",
    "dangling",
    ".git/HEAD",
    ".once/changes/",
    ".once/memory/x.md",
    "./",
    "//",
    "../outside/secret.txt",
    "/etc/passwd",
    "src/lib.rs/x",
    "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
];

thread_local! {
    static WORKSPACE: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Proposes the draft that `data` describes and checks what the store did.
pub fn changes(data: &[u8]) {
    WORKSPACE.with(|workspace| {
        let mut workspace = workspace.borrow_mut();
        let base = workspace.get_or_insert_with(setup).path();
        check(base, data);
    });
}

fn check(base: &Path, data: &[u8]) {
    let root = base.join("root");
    let changes_dir = root.join(".once").join("changes");
    let before = snapshot(base, &changes_dir);
    let draft = draft(&root, &String::from_utf8_lossy(data));
    let outcome = ChangeStore::new(&root).propose(draft.clone());
    assert_eq!(
        snapshot(base, &changes_dir),
        before,
        "proposing changed files outside `.once/changes/`"
    );
    match outcome {
        Ok(proposal) => check_accepted(&root, &changes_dir, &draft, &proposal),
        Err(_) => {
            let left: Vec<_> = fs::read_dir(&changes_dir)
                .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
                .unwrap_or_default();
            assert!(
                left.is_empty(),
                "a refused proposal left {left:?} in `.once/changes/`"
            );
        }
    }
    let _ = fs::remove_dir_all(&changes_dir);
}

fn check_accepted(root: &Path, changes_dir: &Path, draft: &Draft, proposal: &Proposal) {
    assert!(
        changes_dir
            .join(&proposal.id)
            .join("proposal.json")
            .is_file(),
        "an accepted proposal has no `proposal.json`"
    );
    assert_eq!(proposal.changes.len(), draft.changes.len());
    let canonical_root = fs::canonicalize(root).expect("the scratch root exists");
    for (change, asked) in proposal.changes.iter().zip(&draft.changes) {
        let path = &change.path;
        assert!(
            !path.is_empty() && !path.starts_with('/') && !path.contains('\0'),
            "accepted the path {path:?}"
        );
        let parts: Vec<&str> = path.split('/').collect();
        assert!(
            parts.iter().all(|p| !matches!(*p, "" | "." | "..")),
            "accepted the path {path:?}"
        );
        assert!(
            !matches!(parts[0], ".git" | ".once"),
            "accepted the reserved path {path:?}"
        );
        // Every existing ancestor is looked at without following links; a link on the way must
        // lead inside the root, and the destination must not be a link at all.
        let mut at = canonical_root.clone();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            let Ok(meta) = fs::symlink_metadata(&at) else {
                break;
            };
            if meta.file_type().is_symlink() {
                assert!(
                    i + 1 < parts.len(),
                    "accepted {path:?}, which is a symbolic link"
                );
                let target = fs::canonicalize(&at)
                    .unwrap_or_else(|_| panic!("accepted {path:?} through a dangling link"));
                assert!(
                    target.starts_with(&canonical_root),
                    "accepted {path:?} through a link that leads outside"
                );
                at = target;
            }
        }
        assert_eq!(change.action, asked.action);
        let current = fs::symlink_metadata(&at)
            .ok()
            .filter(fs::Metadata::is_file)
            .and_then(|_| fs::read(&at).ok())
            .map(|bytes| blake3::hash(&bytes).to_hex().to_string());
        match change.action {
            Action::Create => assert!(
                fs::symlink_metadata(&at).is_err(),
                "accepted a create of the existing {path:?}"
            ),
            Action::Replace | Action::Delete => assert_eq!(
                change.base_blake3,
                current,
                "accepted a {} of {path:?} with the wrong base",
                change.action.as_str()
            ),
        }
    }
}

/// The draft an input describes.
fn draft(root: &Path, text: &str) -> Draft {
    let mut lines = text.split('\n');
    let title = lines.next().unwrap_or_default().to_string();
    let rationale = lines.next().unwrap_or_default().to_string();
    let changes = lines
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut fields = line.split('\t');
            let action_text = fields.next().unwrap_or_default();
            let action = Action::parse(action_text).unwrap_or(
                [Action::Create, Action::Replace, Action::Delete][action_text.len() % 3],
            );
            let path = fields.next().unwrap_or_default().to_string();
            let base = match fields.next().unwrap_or_default() {
                "" => None,
                "=" => Some(hash_of(&root.join(&path))),
                base => Some(base.to_string()),
            };
            let content = fields.next().map(|c| c.replace("\\n", "\n"));
            ChangeDraft {
                action,
                path,
                content,
                base,
            }
        })
        .collect();
    Draft {
        title,
        rationale,
        author: Some("once-fuzz".into()),
        changes,
    }
}

/// The hash of the file at `path`, following links, or a hash no file has.
fn hash_of(path: &Path) -> String {
    match fs::read(path) {
        Ok(bytes) => blake3::hash(&bytes).to_hex().to_string(),
        Err(_) => "0".repeat(64),
    }
}

/// What a person would see of the scratch folder: every entry, its type, and a file's hash or a
/// link's target; everything below `skip` is left out.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    Folder,
    File(String),
    Link(PathBuf),
    Other,
}

fn snapshot(base: &Path, skip: &Path) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    let mut stack = vec![base.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.starts_with(skip) {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            let node = if meta.file_type().is_symlink() {
                Node::Link(fs::read_link(&path).unwrap_or_default())
            } else if meta.is_dir() {
                stack.push(path.clone());
                Node::Folder
            } else if meta.is_file() {
                Node::File(hash_of(&path))
            } else {
                Node::Other
            };
            out.insert(path, node);
        }
    }
    out
}

/// The scratch workspace, with a folder beside it that no proposal may reach.
fn setup() -> Scratch {
    let scratch = Scratch::new("changes");
    let base = scratch.path();
    let root = base.join("root");
    let made = (|| -> std::io::Result<()> {
        for dir in ["src", ".git", ".once/memory"] {
            fs::create_dir_all(root.join(dir))?;
        }
        fs::create_dir_all(base.join("outside"))?;
        fs::write(base.join("outside/secret.txt"), "outside\n")?;
        fs::write(root.join("once.toml"), "[targets.app]\n")?;
        fs::write(root.join("src/lib.rs"), "pub fn a() {}\n")?;
        fs::write(root.join("old.txt"), "old\n")?;
        fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n")?;
        fs::write(root.join(".once/memory/x.md"), "+++\n")?;
        symlink("../outside", &root.join("link-out"), true)?;
        symlink("src", &root.join("link-in"), true)?;
        symlink("old.txt", &root.join("file-link"), false)?;
        symlink("nowhere", &root.join("dangling"), false)?;
        Ok(())
    })();
    made.unwrap_or_else(|e| panic!("cannot set up `{}`: {e}", base.display()));
    scratch
}

/// A symbolic link at `link` to `target`, which is a folder when `folder` says so.
#[cfg(unix)]
fn symlink(target: &str, link: &Path, folder: bool) -> std::io::Result<()> {
    let _ = folder;
    std::os::unix::fs::symlink(target, link)
}

/// A symbolic link at `link` to `target`: Windows makes a folder's link and a file's differently
/// (and only for a user allowed to make links, such as in Developer Mode).
#[cfg(windows)]
fn symlink(target: &str, link: &Path, folder: bool) -> std::io::Result<()> {
    if folder {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seed_corpus_keeps_every_property() {
        crate::replay_corpus("changes");
    }

    #[test]
    fn the_accepting_seeds_are_accepted() {
        // Without them the fuzzer would rarely reach the checks of an accepted proposal.
        let scratch = super::setup();
        let root = scratch.path().join("root");
        let propose = |name: &str| {
            let text = std::fs::read(crate::corpus_dir("changes").join(name)).expect("a seed");
            let draft = super::draft(&root, &String::from_utf8_lossy(&text));
            once_changes::ChangeStore::new(&root).propose(draft)
        };
        let outcome = propose("accepted-all-actions");
        assert!(outcome.is_ok(), "{outcome:?}");
        // A link is never written through, even one that stays inside the workspace.
        let outcome = propose("inner-link");
        assert!(
            outcome
                .as_ref()
                .is_err_and(|e| e.to_string().contains("symbolic link")),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_base_of_equals_for_a_missing_file_is_a_hash_no_file_has() {
        let root = std::path::Path::new("/nonexistent-once-fuzz");
        let draft = super::draft(root, "t\nr\ndelete\tx\t=\n");
        assert_eq!(draft.changes[0].base, Some("0".repeat(64)));
    }
}
