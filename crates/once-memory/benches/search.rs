//! Search latency over 10,000 entries and the cost of one write, as a plain program that prints
//! its figures: `cargo bench -p once-memory --bench search`.
//!
//! Every search opens a fresh `Store`, so each figure includes what a cold CLI process does:
//! list the folder, stat every entry file, load the index cache, rank, read the files of the
//! returned page (bodies are not in the index) and hash their linked files.

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use once_memory::{Change, Draft, Entry, Kind, MemoryQuery, PathLink, Store, front_matter};

const ENTRIES: usize = 10_000;
const VOCABULARY: usize = 3_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, so every run measures the same corpus.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn word(i: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "da", "fe", "gu", "ho", "ji", "ve", "zo",
        "xu",
    ];
    let mut w = String::new();
    let mut n = i + 16;
    while n > 0 {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    w
}

fn words(rng: &mut Rng, count: usize) -> String {
    // Zipf-like: low word numbers are common, as in real text.
    (0..count)
        .map(|_| {
            let a = rng.below(VOCABULARY);
            word(rng.below(a + 1))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn populate(root: &Path) {
    let dir = root.join(".once/memory");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").expect("writes");
    let hash = blake3::hash(b"pub fn f() {}\n").to_hex().to_string();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for i in 0..ENTRIES {
        let entry = Entry {
            id: format!("20250101-000000-{i:08x}"),
            title: words(&mut rng, 6),
            kind: Kind::ALL[i % Kind::ALL.len()],
            tags: vec![word(rng.below(50)), word(rng.below(50))],
            targets: vec![format!("target-{}", i % 100)],
            paths: vec![PathLink {
                path: "src/lib.rs".into(),
                blake3: hash.clone(),
            }],
            created: "2025-01-01T00:00:00Z".into(),
            updated: "2025-01-01T00:00:00Z".into(),
            revision: 1,
            body: format!("{}\n", words(&mut rng, 80)),
        };
        std::fs::write(
            dir.join(format!("{}.md", entry.id)),
            front_matter::render(&entry),
        )
        .expect("writes");
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let root: PathBuf =
        std::env::temp_dir().join(format!("once-memory-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    populate(&root);
    // Entry files younger than the cache's "racy" window (2 s) are re-read on every scan; in a
    // real repository entries are older than that, so the steady state is measured past it.
    std::thread::sleep(Duration::from_millis(2500));
    let targets = |_: &str| true;
    let search = |words: &str| {
        let store = Store::new(&root);
        let q = MemoryQuery {
            query: Some(words.into()),
            ..MemoryQuery::default()
        };
        let start = Instant::now();
        let page = once_memory::query(&store, &q, &targets).expect("searches");
        (start.elapsed(), page.total)
    };

    let (cold, _) = search(&word(3));
    // The first scan wrote the cache while its files were racy; this one settles it.
    let _ = search(&word(3));
    println!("entries: {ENTRIES}");
    println!(
        "first search, no index cache (parse every file, write the cache): {}",
        ms(cold)
    );

    let queries = [
        word(1),
        format!("{} {}", word(7), word(40)),
        word(900),
        word(2500),
    ];
    for q in &queries {
        let samples: Vec<Duration> = (0..30).map(|_| search(q).0).collect();
        let (_, total) = search(q);
        println!(
            "search {q:?} ({total} matches), fresh Store, cache on disk: median {}, max {}",
            ms(median(samples.clone())),
            ms(samples.iter().max().copied().unwrap_or_default())
        );
    }
    let list: Vec<Duration> = (0..30)
        .map(|_| {
            let start = Instant::now();
            once_memory::query(&Store::new(&root), &MemoryQuery::default(), &targets)
                .expect("lists");
            start.elapsed()
        })
        .collect();
    println!("list, first page: median {}", ms(median(list)));

    let store = Store::new(&root);
    let creates: Vec<Duration> = (0..50)
        .map(|i| {
            let draft = Draft {
                title: format!("benchmark note {i}"),
                kind: Kind::Note,
                tags: vec!["bench".into()],
                targets: vec![],
                paths: vec!["src/lib.rs".into()],
                body: "A short body.\n".into(),
            };
            let start = Instant::now();
            store.create(draft).expect("creates");
            start.elapsed()
        })
        .collect();
    println!("remember (create, fsync'd): median {}", ms(median(creates)));
    let id = store
        .create(Draft {
            title: "updated".into(),
            kind: Kind::Note,
            tags: vec![],
            targets: vec![],
            paths: vec![],
            body: String::new(),
        })
        .expect("creates")
        .id;
    let updates: Vec<Duration> = (1..=50u64)
        .map(|revision| {
            let start = Instant::now();
            store
                .update(
                    &id,
                    Some(revision),
                    Change {
                        body: Some(format!("revision {revision}\n")),
                        ..Change::default()
                    },
                )
                .expect("updates");
            start.elapsed()
        })
        .collect();
    println!(
        "remember (update under the lock, revision-checked, fsync'd): median {}",
        ms(median(updates))
    );
    let (after, _) = search(&word(1));
    println!(
        "search right after 101 writes (re-reads only the new files): {}",
        ms(after)
    );
    let _ = std::fs::remove_dir_all(&root);
}
