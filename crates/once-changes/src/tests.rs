//! Behaviour of the store: what a proposal refuses, what applying does to a real tree, and that a
//! failure at any step leaves the tree as it was or, past the commit point, fully applied.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::{Action, ChangeDraft, ChangeStore, Decider, Draft, Error, Fault, Status};

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("once-changes-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("root/src")).unwrap();
        fs::create_dir_all(dir.join("outside")).unwrap();
        fs::write(dir.join("root/src/lib.rs"), "pub fn a() {}\n").unwrap();
        fs::write(dir.join("root/old.txt"), "old\n").unwrap();
        Scratch(dir)
    }
    fn root(&self) -> PathBuf {
        self.0.join("root")
    }
    fn store(&self) -> ChangeStore {
        ChangeStore::new(&self.root())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Every file and folder under `dir` except `.once/`, with contents: the tree a person sees.
fn tree(dir: &Path) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let key = path.strip_prefix(dir).unwrap().display().to_string();
            if key == ".once" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(key, None);
                stack.push(path);
            } else if meta.is_symlink() {
                out.insert(
                    key,
                    Some(format!("-> {}", fs::read_link(&path).unwrap().display())),
                );
            } else {
                out.insert(key, Some(fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

fn hash(text: &str) -> String {
    once_fs::hash_hex(text.as_bytes())
}

fn create(path: &str, content: &str) -> ChangeDraft {
    ChangeDraft {
        action: Action::Create,
        path: path.into(),
        content: Some(content.into()),
        base: None,
    }
}

fn replace(path: &str, base: &str, content: &str) -> ChangeDraft {
    ChangeDraft {
        action: Action::Replace,
        path: path.into(),
        content: Some(content.into()),
        base: Some(hash(base)),
    }
}

fn delete(path: &str, base: &str) -> ChangeDraft {
    ChangeDraft {
        action: Action::Delete,
        path: path.into(),
        content: None,
        base: Some(hash(base)),
    }
}

fn draft(changes: Vec<ChangeDraft>) -> Draft {
    Draft {
        title: "Add docs, bump lib, drop old".into(),
        rationale: "Because.".into(),
        author: Some("test-client 1.0".into()),
        changes,
    }
}

/// Three files: one created in new folders, one replaced, one deleted.
fn three_changes() -> Draft {
    draft(vec![
        create("docs/guide/intro.md", "# Intro\n"),
        replace(
            "src/lib.rs",
            "pub fn a() {}\n",
            "pub fn a() {}\npub fn b() {}\n",
        ),
        delete("old.txt", "old\n"),
    ])
}

fn applied_tree(before: &BTreeMap<String, Option<String>>) -> BTreeMap<String, Option<String>> {
    let mut after = before.clone();
    after.insert("docs".into(), None);
    after.insert("docs/guide".into(), None);
    after.insert("docs/guide/intro.md".into(), Some("# Intro\n".into()));
    after.insert(
        "src/lib.rs".into(),
        Some("pub fn a() {}\npub fn b() {}\n".into()),
    );
    after.remove("old.txt");
    after
}

#[test]
fn a_proposal_is_saved_and_nothing_is_applied() {
    let s = Scratch::new("propose");
    let before = tree(&s.root());
    let proposal = s.store().propose(three_changes()).unwrap();
    assert_eq!(tree(&s.root()), before);
    assert_eq!(proposal.status, Status::Pending);
    let folder = s.root().join(".once/changes").join(&proposal.id);
    assert!(folder.join("proposal.json").is_file());
    assert_eq!(
        fs::read_to_string(folder.join("files/0")).unwrap(),
        "# Intro\n"
    );
    assert_eq!(s.store().load(&proposal.id).unwrap(), proposal);
    let counts = s.store().counts().unwrap();
    assert_eq!((counts.pending, counts.applied, counts.rejected), (1, 0, 0));
    let list = s.store().list(Some(Status::Pending)).unwrap();
    assert_eq!(list.change_sets.len(), 1);
    assert_eq!(
        (list.change_sets[0].create, list.change_sets[0].delete),
        (1, 1)
    );
}

#[test]
fn a_proposal_reports_every_problem_and_saves_nothing() {
    let s = Scratch::new("invalid");
    symlink(s.0.join("outside"), s.root().join("out")).unwrap();
    let error = s
        .store()
        .propose(draft(vec![
            create("/etc/passwd", "x"),
            create("../outside/x", "x"),
            create("out/x", "x"),
            create(".once/memory/x.md", "x"),
            create("src/lib.rs", "exists"),
            replace("src/lib.rs", "not what is there\n", "x"),
            delete("missing.txt", "x"),
            ChangeDraft {
                content: None,
                ..create("new.txt", "")
            },
        ]))
        .unwrap_err();
    let Error::Invalid { problems } = &error else {
        panic!("{error}");
    };
    assert_eq!(problems.len(), 8, "{problems:#?}");
    for (problem, expected) in problems.iter().zip([
        "absolute",
        "`..`",
        "symbolic link",
        "`.once/`",
        "already exists",
        "is not the file you read",
        "does not exist",
        "needs `content`",
    ]) {
        assert!(problem.contains(expected), "{problem:?} lacks {expected:?}");
    }
    assert!(!s.root().join(".once/changes").exists() || s.store().ids().unwrap().is_empty());
    assert!(fs::read_dir(s.0.join("outside")).unwrap().next().is_none());
}

fn sha256(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_sha256_base_is_checked_when_proposed_and_again_when_applied() {
    let s = Scratch::new("sha256");
    let base = format!("sha256:{}", sha256("pub fn a() {}\n"));
    let replaced = ChangeDraft {
        base: Some(base.clone()),
        ..replace("src/lib.rs", "", "pub fn b() {}\n")
    };
    let proposal = s.store().propose(draft(vec![replaced.clone()])).unwrap();
    let stored = &proposal.changes[0];
    assert_eq!(stored.base_sha256.as_deref(), Some(&base[7..]));
    assert_eq!(stored.base_blake3, Some(hash("pub fn a() {}\n")));
    s.store().apply(&proposal.id, Decider::Terminal).unwrap();
    assert_eq!(
        fs::read_to_string(s.root().join("src/lib.rs")).unwrap(),
        "pub fn b() {}\n"
    );

    // The same base is stale now: refused when proposed, naming both forms and the tool.
    let error = s.store().propose(draft(vec![replaced])).unwrap_err();
    let Error::Invalid { problems } = &error else {
        panic!("{error}");
    };
    for expected in [
        "is not the file you read",
        "SHA-256",
        &sha256("pub fn b() {}\n"),
        "sha256:<hex>",
        "blake3:<hex>",
        "once_query_hashes",
    ] {
        assert!(
            problems[0].contains(expected),
            "{problems:?} lacks {expected}"
        );
    }

    // Moved on after the proposal: the apply is refused and nothing changes.
    let current = format!("SHA256:{}", sha256("pub fn b() {}\n").to_uppercase());
    let id = s
        .store()
        .propose(draft(vec![ChangeDraft {
            base: Some(current),
            ..delete("src/lib.rs", "")
        }]))
        .unwrap()
        .id;
    fs::write(s.root().join("src/lib.rs"), "pub fn c() {}\n").unwrap();
    let error = s.store().apply(&id, Decider::Terminal).unwrap_err();
    assert!(matches!(error, Error::Moved { .. }), "{error}");
    assert!(s.root().join("src/lib.rs").exists());
}

#[test]
fn a_bare_or_prefixed_blake3_base_and_a_malformed_one() {
    let s = Scratch::new("bases");
    let blake3 = hash("old\n");
    for base in [
        blake3.clone(),
        format!("blake3:{blake3}"),
        blake3.to_uppercase(),
    ] {
        let change = ChangeDraft {
            base: Some(base.clone()),
            ..delete("old.txt", "")
        };
        let proposal = s.store().propose(draft(vec![change])).unwrap();
        assert_eq!(
            proposal.changes[0].base_blake3.as_ref(),
            Some(&blake3),
            "{base}"
        );
        assert_eq!(proposal.changes[0].base_sha256, None);
    }
    for base in ["sha1:0000", "not a hash", ""] {
        let change = ChangeDraft {
            base: Some(base.into()),
            ..delete("old.txt", "")
        };
        let error = s.store().propose(draft(vec![change])).unwrap_err();
        assert!(
            error.to_string().contains("sha256:<64 hex digits>"),
            "{error}"
        );
    }
    let missing = ChangeDraft {
        base: None,
        ..delete("old.txt", "")
    };
    let error = s.store().propose(draft(vec![missing])).unwrap_err();
    assert!(error.to_string().contains("once_query_hashes"), "{error}");
}

#[test]
fn hashes_tell_size_and_both_digests_and_refuse_what_a_change_set_cannot_name() {
    let s = Scratch::new("hashes");
    let root = s.root();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::write(root.join(".git/config"), "[core]\n").unwrap();
    fs::write(s.0.join("outside/secret"), "secret\n").unwrap();
    symlink(s.0.join("outside"), root.join("out")).unwrap();
    symlink(s.0.join("outside/secret"), root.join("secret.txt")).unwrap();
    let ask = |paths: &[&str]| {
        let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        crate::hashes(&root, &paths)
    };
    let answer = ask(&[
        "./src//lib.rs",
        "missing.txt",
        "../outside/secret",
        "/etc/passwd",
        ".git/config",
        "out/secret",
        "secret.txt",
        "src",
    ])
    .unwrap();
    let value = serde_json::to_value(&answer).unwrap();
    assert_eq!(
        value["files"][0],
        serde_json::json!({
            "path": "src/lib.rs",
            "exists": true,
            "size": 14,
            "blake3": hash("pub fn a() {}\n"),
            "sha256": sha256("pub fn a() {}\n"),
        })
    );
    assert_eq!(
        value["files"][1],
        serde_json::json!({"path": "missing.txt", "exists": false})
    );
    for (row, expected) in answer.files[2..].iter().zip([
        "`..`",
        "absolute",
        "`.git/`",
        "symbolic link",
        "symbolic link",
        "folder",
    ]) {
        let error = row.error.as_deref().unwrap_or_default();
        assert!(error.contains(expected), "{row:?} lacks {expected:?}");
        assert_eq!((row.exists, &row.blake3, &row.sha256), (None, &None, &None));
    }
    assert!(!answer.all_found());

    for paths in [vec![], vec!["old.txt"; 101]] {
        let error = ask(&paths).unwrap_err();
        assert!(matches!(error, Error::Invalid { .. }), "{error}");
    }
    // A hundred rows with both digests weigh more than an answer may: the rows stop, and the
    // answer counts the paths left for another call.
    let hundred = ask(&vec!["old.txt"; 100]).unwrap();
    assert!(hundred.files.len() < 100 && hundred.files.len() + hundred.omitted == 100);
    assert!(serde_json::to_string(&hundred).unwrap().len() < 17 * 1024);
    assert!(!hundred.all_found());
    assert!(ask(&[&"a".repeat(1025)]).is_err());
}

#[test]
fn apply_writes_every_change_and_records_the_decision() {
    let s = Scratch::new("apply");
    let before = tree(&s.root());
    let id = s.store().propose(three_changes()).unwrap().id;
    let applied = s.store().apply(&id, Decider::Terminal).unwrap();
    assert_eq!(applied.status, Status::Applied);
    assert!(applied.decided.is_some());
    assert_eq!(tree(&s.root()), applied_tree(&before));
    assert!(
        !s.root()
            .join(".once/changes")
            .join(&id)
            .join("journal.json")
            .exists()
    );
    let again = s.store().apply(&id, Decider::Terminal).unwrap_err();
    assert!(
        matches!(
            again,
            Error::Decided {
                status: "applied",
                ..
            }
        ),
        "{again}"
    );
}

#[test]
fn a_base_that_moved_on_refuses_the_whole_set() {
    let s = Scratch::new("moved");
    let id = s.store().propose(three_changes()).unwrap().id;
    fs::write(
        s.root().join("src/lib.rs"),
        "pub fn a() {} // edited by a person\n",
    )
    .unwrap();
    fs::write(
        s.root().join("docs"),
        "a file where a folder will be needed\n",
    )
    .unwrap();
    let before = tree(&s.root());
    let error = s.store().apply(&id, Decider::Terminal).unwrap_err();
    let Error::Moved { moved } = &error else {
        panic!("{error}");
    };
    assert_eq!(moved.len(), 2, "{moved:?}");
    assert!(moved[1].contains("src/lib.rs"), "{moved:?}");
    assert_eq!(tree(&s.root()), before);
    assert_eq!(s.store().load(&id).unwrap().status, Status::Pending);
}

#[test]
fn a_failed_write_before_the_commit_point_leaves_the_tree_as_it_was() {
    for point in ["stage:1", "stage:2"] {
        let s = Scratch::new(&point.replace(':', "-"));
        let before = tree(&s.root());
        let id = s.store().propose(three_changes()).unwrap().id;
        let error = s
            .store()
            .apply_with(&id, Decider::Terminal, &Fault::fail_at(point))
            .unwrap_err();
        assert!(error.to_string().contains("injected fault"), "{error}");
        assert_eq!(tree(&s.root()), before, "after a fault at {point}");
        assert_eq!(s.store().load(&id).unwrap().status, Status::Pending);
        // Nothing is left to recover, and the set still applies once the disk is fine again.
        s.store().apply(&id, Decider::Terminal).unwrap();
        assert_eq!(tree(&s.root()), applied_tree(&before));
    }
}

#[test]
fn an_interruption_after_the_commit_point_is_rolled_forward() {
    for point in ["commit", "rename:1", "rename:2"] {
        let s = Scratch::new(&point.replace(':', "-"));
        let before = tree(&s.root());
        let id = s.store().propose(three_changes()).unwrap().id;
        s.store()
            .apply_with(&id, Decider::Terminal, &Fault::fail_at(point))
            .unwrap_err();
        assert!(
            s.root()
                .join(".once/changes")
                .join(&id)
                .join("journal.json")
                .exists()
        );
        s.store().recover().unwrap();
        assert_eq!(
            tree(&s.root()),
            applied_tree(&before),
            "after a fault at {point}"
        );
        assert_eq!(s.store().load(&id).unwrap().status, Status::Applied);
        // Recovering twice changes nothing.
        s.store().recover().unwrap();
        assert_eq!(tree(&s.root()), applied_tree(&before));
    }
}

#[test]
fn reject_keeps_the_record_with_the_decision() {
    let s = Scratch::new("reject");
    let before = tree(&s.root());
    let id = s.store().propose(three_changes()).unwrap().id;
    let rejected = s
        .store()
        .reject(&id, Some("not now".into()), Decider::Terminal)
        .unwrap();
    assert_eq!(rejected.status, Status::Rejected);
    assert_eq!(rejected.reason.as_deref(), Some("not now"));
    assert_eq!(s.store().load(&id).unwrap(), rejected);
    assert_eq!(tree(&s.root()), before);
    assert!(matches!(
        s.store().apply(&id, Decider::Terminal),
        Err(Error::Decided {
            status: "rejected",
            ..
        })
    ));
    let shown = s.store().show(&id).unwrap();
    assert!(
        shown.contains("status: rejected") && shown.contains("reason: not now"),
        "{shown}"
    );
}

#[test]
fn an_applied_set_shows_that_it_was_applied_not_that_applying_would_be_refused() {
    let s = Scratch::new("show-applied");
    let id = s.store().propose(three_changes()).unwrap().id;
    s.store().apply(&id, Decider::Terminal).unwrap();
    let shown = s.store().show(&id).unwrap();
    assert!(!shown.contains("applying would be refused"), "{shown}");
    assert!(shown.contains("status: applied"), "{shown}");
    assert!(
        shown.contains("note: applied; the file holds the proposed content"),
        "{shown}"
    );
}

#[test]
fn show_is_a_diff_against_the_current_files() {
    let s = Scratch::new("show");
    let id = s.store().propose(three_changes()).unwrap().id;
    let shown = s.store().show(&id).unwrap();
    assert!(
        shown.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
        "{shown}"
    );
    assert!(shown.contains("+pub fn b() {}\n"), "{shown}");
    assert!(
        shown.contains("--- /dev/null\n+++ b/docs/guide/intro.md\n"),
        "{shown}"
    );
    assert!(shown.contains("-old\n"), "{shown}");
    assert!(!shown.contains("applying would be refused"), "{shown}");
    fs::write(s.root().join("old.txt"), "changed\n").unwrap();
    let shown = s.store().show(&id).unwrap();
    assert!(
        shown.contains("the file changed since the proposal"),
        "{shown}"
    );
    assert!(matches!(
        s.store().show("nope"),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        s.store().show("../x"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn git_and_once_are_out_of_reach_through_links_and_nested_repositories() {
    let s = Scratch::new("reserved");
    let root = s.root();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::write(root.join(".git/config"), "[core]\n").unwrap();
    fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
    fs::write(root.join("vendor/lib/.git/config"), "[core]\n").unwrap();
    fs::create_dir_all(root.join(".once/memory")).unwrap();
    symlink(".git", root.join("gitdir")).unwrap();
    symlink(".once", root.join("oncedir")).unwrap();
    symlink("src", root.join("srclink")).unwrap();
    let evil = "[core]\nfsmonitor = touch /tmp/owned\n";
    for change in [
        replace("gitdir/config", "[core]\n", evil),
        replace("vendor/lib/.git/config", "[core]\n", evil),
        create("vendor/lib/.git/hooks/pre-commit", evil),
        create("oncedir/memory/x.md", "x"),
        create("deep/.once/x", "x"),
        create("srclink/new.rs", "x"),
    ] {
        let shown = change.path.clone();
        let error = s.store().propose(draft(vec![change])).unwrap_err();
        assert!(matches!(error, Error::Invalid { .. }), "{shown}: {error}");
    }
    assert_eq!(
        fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!root.join("vendor/lib/.git/hooks").exists());
    assert!(!root.join(".once/memory/x.md").exists());

    // A folder that was real when proposed and is a link to `.git` when applied.
    fs::create_dir_all(root.join("tools")).unwrap();
    let id = s
        .store()
        .propose(draft(vec![create("tools/config", evil)]))
        .unwrap()
        .id;
    fs::remove_dir(root.join("tools")).unwrap();
    symlink(".git", root.join("tools")).unwrap();
    let error = s.store().apply(&id, Decider::Terminal).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(
        fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(fs::read_dir(root.join(".git")).unwrap().count(), 1);
    assert_ne!(s.store().load(&id).unwrap().status, Status::Applied);
}

#[test]
fn long_names_are_refused_when_proposed_and_the_longest_name_applies() {
    let s = Scratch::new("long");
    let longest = "n".repeat(255);
    let id = s
        .store()
        .propose(draft(vec![create(&format!("src/{longest}"), "x\n")]))
        .unwrap()
        .id;
    s.store().apply(&id, Decider::Terminal).unwrap();
    assert_eq!(
        fs::read_to_string(s.root().join("src").join(&longest)).unwrap(),
        "x\n"
    );

    let too_long = "n".repeat(256);
    let error = s
        .store()
        .propose(draft(vec![create(&too_long, "x\n")]))
        .unwrap_err();
    assert!(error.to_string().contains("255 bytes"), "{error}");
    let deep = vec!["d".repeat(200); 21].join("/");
    let error = s
        .store()
        .propose(draft(vec![create(&deep, "x\n")]))
        .unwrap_err();
    assert!(error.to_string().contains("at most 4095 bytes"), "{error}");
    // Every command still works.
    assert_eq!(s.store().list(None).unwrap().change_sets.len(), 1);
}

/// Every point of an apply where a write can fail, in order.
const POINTS: [&str; 8] = [
    "journal", "stage:1", "stage:2", "commit", "rename:1", "rename:2", "rename:3", "decided",
];

#[test]
fn a_failure_at_any_step_leaves_the_tree_before_or_after_and_the_store_usable() {
    for point in POINTS {
        let s = Scratch::new(&format!("every-{}", point.replace(':', "-")));
        let before = tree(&s.root());
        let id = s.store().propose(three_changes()).unwrap().id;
        let error = s
            .store()
            .apply_with(&id, Decider::Terminal, &Fault::fail_at(point))
            .unwrap_err();
        assert!(
            error.to_string().contains("injected fault"),
            "{point}: {error}"
        );
        s.store().recover().unwrap();
        let status = s.store().load(&id).unwrap().status;
        let expected = match status {
            Status::Pending => before.clone(),
            Status::Applied => applied_tree(&before),
            other => panic!("{point}: {other:?}"),
        };
        assert_eq!(tree(&s.root()), expected, "after a fault at {point}");
        assert_eq!(s.store().list(None).unwrap().change_sets.len(), 1);
        s.store().show(&id).unwrap();
    }
}

/// A thread swaps the folder `w` with a link to a folder outside the workspace, back and forth,
/// while change sets that write into `w` are applied: no file may land outside, and a set is
/// `applied` only if every file of it is in place.
#[cfg(target_os = "linux")]
#[test]
fn a_folder_swapped_for_a_link_during_applies_never_leads_a_write_outside() {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    const TRIALS: usize = 300;
    let s = Scratch::new("race");
    let root = s.root();
    let outside = s.0.join("outside");
    fs::create_dir_all(root.join("w")).unwrap();
    symlink(&outside, root.join("w.link")).unwrap();
    let ids: Vec<String> = (0..TRIALS)
        .map(|n| {
            let changes = vec![
                create(&format!("w/a{n}.txt"), &format!("a{n}\n")),
                create(&format!("w/b{n}.txt"), &format!("b{n}\n")),
            ];
            s.store().propose(draft(changes)).unwrap().id
        })
        .collect();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let w = CString::new(root.join("w").as_os_str().as_bytes()).unwrap();
        let link = CString::new(root.join("w.link").as_os_str().as_bytes()).unwrap();
        std::thread::spawn(move || {
            // An even number of exchanges leaves `w` a folder again.
            while !stop.load(Ordering::Relaxed) || swaps.load(Ordering::Relaxed) % 2 == 1 {
                // SAFETY: two valid C strings; RENAME_EXCHANGE swaps the two names atomically.
                let rc = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        w.as_ptr(),
                        libc::AT_FDCWD,
                        link.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut refused = 0;
    for id in &ids {
        if s.store().apply(id, Decider::Terminal).is_err() {
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(fs::symlink_metadata(root.join("w")).unwrap().is_dir());
    s.store().recover().unwrap();

    let outside_files = fs::read_dir(&outside).unwrap().count();
    let (mut applied, mut false_applied, mut pending, mut failed) = (0, 0, 0, 0);
    for (n, id) in ids.iter().enumerate() {
        let in_place = |name: &str| {
            fs::read_to_string(root.join("w").join(format!("{name}{n}.txt"))).ok()
                == Some(format!("{name}{n}\n"))
        };
        match s.store().load(id).unwrap().status {
            Status::Applied if in_place("a") && in_place("b") => applied += 1,
            Status::Applied => false_applied += 1,
            Status::Pending => pending += 1,
            _ => failed += 1,
        }
    }
    println!(
        "race: {TRIALS} applies, {} swaps, {refused} refused; applied {applied}, pending {pending}, \
         failed {failed}; files outside {outside_files}, applied with files missing {false_applied}",
        swaps.load(Ordering::Relaxed)
    );
    assert_eq!(outside_files, 0);
    assert_eq!(false_applied, 0);
}

#[test]
fn a_set_that_can_be_neither_finished_nor_undone_is_marked_failed_and_the_store_keeps_working() {
    // Before the commit point, a rollback that keeps failing; after it, a rename that keeps failing.
    for fault in [
        Fault::fail_at("stage:2").and_fail_at("unstage:1"),
        Fault::fail_at("rename:2"),
    ] {
        let s = Scratch::new("failed");
        let id = s.store().propose(three_changes()).unwrap().id;
        s.store()
            .apply_with(&id, Decider::Terminal, &fault)
            .unwrap_err();
        let folder = s.root().join(".once/changes").join(&id);
        assert!(folder.join("journal.json").exists(), "{fault:?}");
        s.store().recover_with(&fault).unwrap();
        let failed = s.store().load(&id).unwrap();
        assert_eq!(failed.status, Status::Failed, "{fault:?}");
        let reason = failed.reason.unwrap_or_default();
        assert!(reason.contains("injected fault"), "{reason}");
        assert!(!folder.join("journal.json").exists());
        assert!(folder.join("journal.failed.json").exists());
        // Every other command keeps working, and the set is never applied again.
        let list = s.store().list(None).unwrap();
        assert_eq!(list.change_sets[0].status, Status::Failed);
        assert_eq!(s.store().counts().unwrap().failed, 1);
        s.store().show(&id).unwrap();
        assert!(matches!(
            s.store().apply(&id, Decider::Terminal),
            Err(Error::Decided {
                status: "failed",
                ..
            })
        ));
        let other = s
            .store()
            .propose(draft(vec![create("other.txt", "x\n")]))
            .unwrap()
            .id;
        s.store().apply(&other, Decider::Terminal).unwrap();
        let rejected = s
            .store()
            .propose(draft(vec![create("more.txt", "x\n")]))
            .unwrap()
            .id;
        s.store()
            .reject(&rejected, None, Decider::Terminal)
            .unwrap();
    }
}

#[test]
fn the_store_never_follows_a_linked_state_folder_out_of_the_workspace() {
    let s = Scratch::new("state-link");
    symlink(s.0.join("outside"), s.root().join(".once")).unwrap();
    let error = s.store().propose(three_changes()).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(fs::read_dir(s.0.join("outside")).unwrap().count(), 0);
}

#[test]
fn the_person_who_decided_is_recorded_with_the_decision() {
    let s = Scratch::new("decided-by");
    let applied = s.store().propose(three_changes()).unwrap().id;
    let set = s.store().apply(&applied, Decider::Window).unwrap();
    assert_eq!(set.decided_by, Some(Decider::Window));
    let stored = s.store().load(&applied).unwrap();
    assert_eq!(stored.decided_by, Some(Decider::Window));
    assert_eq!(
        serde_json::to_value(&stored).unwrap()["decided_by"],
        "window"
    );
    assert!(
        s.store()
            .show(&applied)
            .unwrap()
            .contains("by a person in the window"),
        "{}",
        s.store().show(&applied).unwrap()
    );

    let rejected = s
        .store()
        .propose(draft(vec![create("notes.md", "notes\n")]))
        .unwrap()
        .id;
    let set = s
        .store()
        .reject(&rejected, None, Decider::Terminal)
        .unwrap();
    assert_eq!(set.decided_by, Some(Decider::Terminal));
    assert_eq!(
        serde_json::to_value(s.store().load(&rejected).unwrap()).unwrap()["decided_by"],
        "terminal"
    );
    // A pending set was decided by nobody yet.
    let pending = s
        .store()
        .propose(draft(vec![create("later.md", "later\n")]))
        .unwrap();
    assert_eq!(pending.decided_by, None);
    assert!(serde_json::to_value(&pending).unwrap()["decided_by"].is_null());
}

#[test]
fn an_apply_finished_by_recovery_records_who_applied_it() {
    // The journal carries the person: the command that rolls the apply forward (any command
    // that touches change sets, perhaps from another door) is not the one who decided.
    for point in ["commit", "rename:2"] {
        let s = Scratch::new(&format!("decided-by-{}", point.replace(':', "-")));
        let id = s.store().propose(three_changes()).unwrap().id;
        s.store()
            .apply_with(&id, Decider::Window, &Fault::fail_at(point))
            .unwrap_err();
        s.store().recover().unwrap();
        let set = s.store().load(&id).unwrap();
        assert_eq!(set.status, Status::Applied, "after a fault at {point}");
        assert_eq!(
            set.decided_by,
            Some(Decider::Window),
            "after a fault at {point}"
        );
    }
}

#[test]
fn a_record_written_before_the_decider_was_kept_still_loads() {
    let s = Scratch::new("decided-by-old");
    let id = s.store().propose(three_changes()).unwrap().id;
    let path = s
        .root()
        .join(".once/changes")
        .join(&id)
        .join("proposal.json");
    let mut value: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    value.as_object_mut().unwrap().remove("decided_by");
    fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    assert_eq!(s.store().load(&id).unwrap().decided_by, None);
}
