//! The store, search and staleness through the public API, on real files in a temporary folder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use once_memory::{
    Change, Draft, Error, Kind, MemoryQuery, Stale, Store, check, counts, front_matter, query,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "once-memory-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn draft(title: &str, kind: Kind, tags: &[&str], body: &str) -> Draft {
    Draft {
        title: title.into(),
        kind,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        targets: Vec::new(),
        paths: Vec::new(),
        body: body.into(),
    }
}

fn all_targets(_: &str) -> bool {
    true
}

fn ids(store: &Store, q: MemoryQuery) -> Vec<String> {
    query(store, &q, &all_targets)
        .unwrap()
        .entries
        .into_iter()
        .map(|row| row.title)
        .collect()
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn every_field_survives_the_disk() {
    let dir = TempDir::new();
    write(&dir.0, "src/lib.rs", "fn main() {}\n");
    let store = Store::new(&dir.0);
    let created = store
        .create(Draft {
            title: "Title with \"quotes\"".into(),
            kind: Kind::Decision,
            tags: vec!["b".into(), " a ".into(), "b".into()],
            targets: vec!["core".into()],
            paths: vec!["./src/lib.rs".into()],
            body: "Line one.\n\n```toml\n+++\n```\n".into(),
        })
        .unwrap();
    assert_eq!(created.tags, ["b", "a"]);
    assert_eq!(created.paths[0].path, "src/lib.rs");
    assert_eq!(
        created.paths[0].blake3,
        blake3::hash(b"fn main() {}\n").to_hex().to_string()
    );
    assert_eq!(created.revision, 1);
    assert_eq!(store.get(&created.id).unwrap(), created);
    let (listed, broken) = store.scan().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0], created);
    assert!(broken.is_empty());
    let text = std::fs::read_to_string(store.file(&created.id)).unwrap();
    assert!(text.starts_with("+++\nid = \""), "{text}");
    assert_eq!(front_matter::parse(&text, &created.id).unwrap(), created);
}

#[test]
fn search_ranks_a_fixed_corpus() {
    let dir = TempDir::new();
    let store = Store::new(&dir.0);
    let corpus = [
        (
            "OpenSSL must be vendored for release builds",
            Kind::Gotcha,
            &["build"][..],
            "Set the vendored feature; the system library is too old on CI.",
        ),
        (
            "Release checklist",
            Kind::Howto,
            &["release"][..],
            "Bump versions, tag, then build. OpenSSL is mentioned once here.",
        ),
        (
            "Error handling",
            Kind::Convention,
            &["errors"][..],
            "Libraries use thiserror; the binary uses anyhow.",
        ),
        (
            "Why no tokio",
            Kind::Decision,
            &["async"][..],
            "Nothing here does concurrent network I/O; threads are simpler.",
        ),
        (
            "Notes on builds",
            Kind::Note,
            &["openssl"][..],
            "Builds are slow; caching helps, and the linker dominates the time on large crates with many dependencies.",
        ),
    ];
    for (title, kind, tags, body) in corpus {
        store.create(draft(title, kind, tags, body)).unwrap();
    }
    let search = |words: &str| {
        ids(
            &store,
            MemoryQuery {
                query: Some(words.into()),
                ..Default::default()
            },
        )
    };
    // Title beats tag beats a single mention in a longer body.
    assert_eq!(
        search("openssl"),
        [
            "OpenSSL must be vendored for release builds",
            "Notes on builds",
            "Release checklist"
        ]
    );
    assert_eq!(search("THISERROR anyhow"), ["Error handling"]);
    assert!(search("kubernetes").is_empty());
    // Filters narrow before ranking.
    assert_eq!(
        ids(
            &store,
            MemoryQuery {
                query: Some("openssl".into()),
                kind: Some(Kind::Howto),
                ..Default::default()
            }
        ),
        ["Release checklist"]
    );
    assert_eq!(
        ids(
            &store,
            MemoryQuery {
                tag: Some("async".into()),
                ..Default::default()
            }
        ),
        ["Why no tokio"]
    );
    // Paging walks every row once.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = query(
            &store,
            &MemoryQuery {
                limit: Some(2),
                cursor,
                ..Default::default()
            },
            &all_targets,
        )
        .unwrap();
        assert_eq!(page.total, 5);
        seen.extend(page.entries.into_iter().map(|r| r.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5);
    let bad = MemoryQuery {
        cursor: Some("nope-1".into()),
        ..Default::default()
    };
    assert!(matches!(
        query(&store, &bad, &all_targets),
        Err(Error::Invalid { .. })
    ));
}

#[test]
fn staleness_follows_linked_files_and_targets() {
    let dir = TempDir::new();
    write(&dir.0, "a.rs", "one");
    write(&dir.0, "b.rs", "two");
    let store = Store::new(&dir.0);
    let mut d = draft("Linked", Kind::Note, &[], "x");
    d.paths = vec!["a.rs".into(), "b.rs".into()];
    d.targets = vec!["core".into(), "gone".into()];
    let entry = store.create(d).unwrap();
    let has_core = |t: &str| t == "core" || t == "gone";
    let reasons = |target_exists: &dyn Fn(&str) -> bool| {
        check(&store, target_exists)
            .unwrap()
            .stale
            .into_iter()
            .flat_map(|e| e.stale)
            .collect::<Vec<_>>()
    };
    assert!(reasons(&has_core).is_empty());
    write(&dir.0, "a.rs", "one, edited");
    assert_eq!(
        reasons(&has_core),
        [Stale::Changed {
            path: "a.rs".into()
        }]
    );
    std::fs::remove_file(dir.0.join("b.rs")).unwrap();
    let only_core = |t: &str| t == "core";
    assert_eq!(
        reasons(&only_core),
        [
            Stale::Changed {
                path: "a.rs".into()
            },
            Stale::Missing {
                path: "b.rs".into()
            },
            Stale::NoTarget {
                target: "gone".into()
            },
        ]
    );
    let c = counts(&store, &only_core).unwrap();
    assert_eq!((c.entries, c.stale, c.broken), (1, 1, 0));
    // The search rows carry the same reasons.
    let page = query(&store, &MemoryQuery::default(), &only_core).unwrap();
    assert_eq!(page.entries[0].stale.len(), 3);
    // Writing the entry again says it is true of the files as they are now.
    write(&dir.0, "b.rs", "two");
    store
        .update(
            &entry.id,
            Some(1),
            Change {
                targets: Some(vec!["core".into()]),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(reasons(&only_core).is_empty());
}

#[test]
fn a_stale_revision_is_refused_with_the_current_text() {
    let dir = TempDir::new();
    let store = Store::new(&dir.0);
    let entry = store
        .create(draft("Shared", Kind::Note, &[], "first"))
        .unwrap();
    let second = store
        .update(
            &entry.id,
            Some(1),
            Change {
                body: Some("second".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(second.revision, 2);
    let refused = store
        .update(
            &entry.id,
            Some(1),
            Change {
                body: Some("lost?".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    match refused {
        Error::StaleRevision { expected, current } => {
            assert_eq!(expected, 1);
            assert_eq!(current.revision, 2);
            // Written with the final newline every text file gets.
            assert_eq!(current.body, "second\n");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.get(&entry.id).unwrap().body, "second\n");
    assert!(matches!(
        store.forget(&entry.id, Some(1)),
        Err(Error::StaleRevision { .. })
    ));
    assert!(store.forget(&entry.id, Some(2)).unwrap().is_some());
    assert!(matches!(store.get(&entry.id), Err(Error::NotFound { .. })));
}

#[test]
fn a_broken_entry_is_reported_and_the_rest_are_served() {
    let dir = TempDir::new();
    let store = Store::new(&dir.0);
    let good = store
        .create(draft("Good entry", Kind::Note, &[], "findable words"))
        .unwrap();
    let bad = store
        .create(draft("Bad entry", Kind::Note, &[], "findable too"))
        .unwrap();
    let file = store.file(&bad.id);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("kind = \"note\"", "kind = note")).unwrap();
    let page = query(
        &store,
        &MemoryQuery {
            query: Some("findable".into()),
            ..Default::default()
        },
        &all_targets,
    )
    .unwrap();
    assert_eq!(
        page.entries
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        [good.id.as_str()]
    );
    assert_eq!(page.broken_total, 1);
    assert_eq!(page.broken[0].file, file);
    assert_eq!(page.broken[0].line, 4);
    match store.get(&bad.id) {
        Err(Error::Broken { line, .. }) => assert_eq!(line, 4),
        other => panic!("{other:?}"),
    }
    // A broken file can still be removed.
    assert!(store.forget(&bad.id, None).unwrap().is_none());
    assert_eq!(
        query(&store, &MemoryQuery::default(), &all_targets)
            .unwrap()
            .broken_total,
        0
    );
}

#[test]
fn the_index_cache_never_hides_a_hand_edit() {
    let dir = TempDir::new();
    let store = Store::new(&dir.0);
    let entry = store
        .create(draft("Cached", Kind::Note, &[], "alpha"))
        .unwrap();
    let search = |w: &str| {
        ids(
            &store,
            MemoryQuery {
                query: Some(w.into()),
                ..Default::default()
            },
        )
    };
    assert_eq!(search("alpha"), ["Cached"]);
    assert!(dir.0.join(".once/cache/memory-index").is_file());
    // Same size, same second: the stamp may not change, the racy rule must catch it.
    let file = store.file(&entry.id);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("alpha", "gamma")).unwrap();
    assert_eq!(search("gamma"), ["Cached"]);
    assert!(search("alpha").is_empty());
    // A corrupt cache is rebuilt, not trusted.
    std::fs::write(dir.0.join(".once/cache/memory-index"), b"oncemem1garbage").unwrap();
    assert_eq!(search("gamma"), ["Cached"]);
    std::fs::remove_file(&file).unwrap();
    assert!(search("gamma").is_empty());
}

#[test]
fn staging_files_of_killed_writers_are_cleaned_up_and_live_ones_kept() {
    let dir = TempDir::new();
    let store = Store::new(&dir.0);
    let kept = store
        .create(draft("Kept", Kind::Note, &[], "body"))
        .unwrap();
    // A writer that staged an entry and has not renamed it yet, then is killed.
    let mut writer = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let old = std::time::SystemTime::now() - once_fs::ABANDONED_AFTER * 2;
    let staged = (0..60)
        .map(|n| {
            let path = store
                .dir()
                .join(format!(".{n}.md.{}.0000abcd.tmp", writer.id()));
            let file = std::fs::File::create(&path).unwrap();
            file.set_modified(old).unwrap();
            path
        })
        .collect::<Vec<_>>();
    assert_eq!(ids(&store, MemoryQuery::default()), ["Kept"]);
    assert!(
        staged.iter().all(|path| path.exists()),
        "a running writer keeps its staging files"
    );

    writer.kill().unwrap();
    writer.wait().unwrap();
    assert_eq!(ids(&store, MemoryQuery::default()), ["Kept"]);
    let left: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .map(|item| item.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "abandoned staging files remain: {left:?}");
    assert_eq!(store.get(&kept.id).unwrap().title, "Kept");
}

/// A linked path is hashed only if its real location is inside the workspace and outside `.git`
/// and `.once`: otherwise an agent could learn the hash of any file it can name.
#[test]
fn a_linked_path_that_leaves_the_workspace_is_refused() {
    let dir = TempDir::new();
    let root = dir.0.join("root");
    write(&dir.0, "outside/secret", "s\n");
    write(&root, "src/lib.rs", "pub fn a() {}\n");
    write(&root, ".git/config", "[core]\n");
    std::os::unix::fs::symlink(dir.0.join("outside"), root.join("out")).unwrap();
    std::os::unix::fs::symlink(dir.0.join("outside/secret"), root.join("secret")).unwrap();
    std::os::unix::fs::symlink(".git", root.join("gitdir")).unwrap();
    std::os::unix::fs::symlink("src", root.join("alias")).unwrap();
    let store = Store::new(&root);
    for path in [
        "out/secret",
        "secret",
        "gitdir/config",
        ".git/config",
        "../outside/secret",
    ] {
        let mut d = draft("A note", Kind::Note, &[], "body");
        d.paths = vec![path.to_string()];
        let error = store.create(d).unwrap_err();
        assert!(matches!(error, Error::Invalid { .. }), "{path}: {error}");
        assert!(!error.to_string().contains(&once_fs_hash("s\n")), "{error}");
    }
    let mut d = draft("A note", Kind::Note, &[], "body");
    d.paths = vec!["alias/lib.rs".to_string()];
    store.create(d).unwrap();
}

fn once_fs_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

#[test]
fn the_store_never_follows_a_linked_state_folder_out_of_the_workspace() {
    let dir = TempDir::new();
    let root = dir.0.join("root");
    std::fs::create_dir_all(root.join(".once")).unwrap();
    std::fs::create_dir_all(dir.0.join("outside")).unwrap();
    std::os::unix::fs::symlink(dir.0.join("outside"), root.join(".once/memory")).unwrap();
    let error = Store::new(&root)
        .create(draft("A note", Kind::Note, &[], "body"))
        .unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_dir(dir.0.join("outside")).unwrap().count(), 0);
}

#[test]
fn a_page_of_long_bodies_ends_at_its_byte_budget_and_paging_still_sees_every_entry() {
    let dir = TempDir::new();
    let store = Store::new(&dir.0);
    let body = "A long note. ".repeat(200);
    for i in 0..30 {
        store
            .create(draft(&format!("Note {i}"), Kind::Note, &[], &body))
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = query(
            &store,
            &MemoryQuery {
                body: Some(true),
                limit: Some(100),
                cursor,
                ..Default::default()
            },
            &all_targets,
        )
        .unwrap();
        assert_eq!(page.total, 30);
        let size = serde_json::to_string(&page).unwrap().len();
        assert!(size < 16 * 1024, "a page of {size} bytes");
        pages += 1;
        seen.extend(page.entries.into_iter().map(|r| r.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert!(pages > 1, "{pages}");
    let count = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!((count, seen.len()), (30, 30));
}
