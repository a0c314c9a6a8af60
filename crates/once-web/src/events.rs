//! Live updates for open pages: a hub that fans events out to every page's event stream, and the
//! watcher that notices what changed in the workspace's state.
//!
//! The watcher looks at the places where runs, change sets, memory and the graph are kept, every
//! [`POLL`], and only while a page is open. It reads what every writer leaves behind — an MCP
//! call, `once run` from a terminal, a person editing a manifest — so nothing has to remember to
//! announce itself, and a page sees a change within `POLL` plus one fetch. An event only says
//! *what* changed (`runs`, `changes`, `memory`, `graph`, `evaluators`); the page fetches the rest
//! through the API, so no event can carry more than its reader may see.
//!
//! A page that stops reading never slows anyone: each page has a small bounded queue; when it is
//! full the page is dropped from the hub and its stream ends (the browser reconnects). At most
//! [`MAX_PAGES`] streams are open at once. This module must never block a publisher.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

/// How often the watcher looks, while a page is open.
pub const POLL: Duration = Duration::from_millis(200);
/// Event streams open at once.
pub const MAX_PAGES: usize = 16;
/// Events queued for one page before it counts as not reading.
const QUEUE: usize = 64;
/// The graph is looked at every this many looks (once a second).
const GRAPH_EVERY: u64 = 5;
/// How many of the newest runs the watcher looks into.
const RECENT_RUNS: usize = 8;

/// One event for the pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The SSE event name: `changed` or `focus`.
    pub name: &'static str,
    /// Its JSON data.
    pub data: String,
}

impl Event {
    /// `changed`, naming what.
    pub fn changed(what: &str) -> Event {
        Event {
            name: "changed",
            data: json!({ "what": what }).to_string(),
        }
    }
}

/// The pages' subscriptions.
#[derive(Debug, Default)]
pub struct Hub {
    pages: Mutex<Vec<SyncSender<Event>>>,
}

impl Hub {
    fn pages(&self) -> MutexGuard<'_, Vec<SyncSender<Event>>> {
        self.pages.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new page's queue; `None` when [`MAX_PAGES`] are open.
    pub fn subscribe(&self) -> Option<Receiver<Event>> {
        let mut pages = self.pages();
        if pages.len() >= MAX_PAGES {
            return None;
        }
        let (sender, receiver) = sync_channel(QUEUE);
        pages.push(sender);
        Some(receiver)
    }

    /// Sends `event` to every page; returns how many took it. A page whose queue is full or
    /// whose stream ended is dropped.
    pub fn publish(&self, event: &Event) -> usize {
        let mut pages = self.pages();
        pages.retain(|page| match page.try_send(event.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                tracing::debug!("a page stopped reading its events; dropped");
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
        pages.len()
    }

    /// How many pages are open.
    pub fn open(&self) -> usize {
        self.pages().len()
    }
}

/// What the watcher compares between looks: a fingerprint per part of the state (for the graph,
/// the live workspace's reload count).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Seen {
    runs: u64,
    changes: u64,
    memory: u64,
    graph: u64,
    evaluators: u64,
}

/// Where the watcher looks, and how it reads the graph and the evaluators.
pub struct Watched {
    /// The workspace root.
    pub root: PathBuf,
    /// The graph's reload count, after reloading it if a manifest changed.
    pub graph: Box<dyn Fn() -> u64 + Send + Sync>,
    /// A number that changes with the evaluators' transcripts.
    pub evaluators: Box<dyn Fn() -> u64 + Send + Sync>,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// The watcher: what it looks at, what it saw last, and the hub it tells.
pub struct Watcher {
    hub: Arc<Hub>,
    watched: Watched,
    /// The last look, `None` while no page is open. Held while looking, so a page that opens
    /// never races the thread's comparison.
    seen: Mutex<Option<Seen>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("watched", &self.watched)
            .finish_non_exhaustive()
    }
}

impl Watcher {
    /// Starts the watcher thread for `hub`; the thread ends once the watcher is dropped.
    pub fn start(hub: &Arc<Hub>, watched: Watched) -> std::io::Result<Arc<Watcher>> {
        let watcher = Arc::new(Watcher {
            hub: Arc::clone(hub),
            watched,
            seen: Mutex::new(None),
        });
        let weak = Arc::downgrade(&watcher);
        std::thread::Builder::new()
            .name("once-web-watcher".into())
            .spawn(move || watch_loop(&weak))?;
        Ok(watcher)
    }

    /// A new page's events. When it is the first page, the watcher looks now, before the page
    /// hears it is connected: everything that changes after the page's first fetch (which it makes
    /// once connected) differs from this look, so no change can slip between the two.
    pub fn subscribe(&self) -> Option<Receiver<Event>> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let events = self.hub.subscribe()?;
        if seen.is_none() {
            *seen = Some(look(&self.watched, None));
        }
        Some(events)
    }
}

fn watch_loop(watcher: &Weak<Watcher>) {
    let mut looks: u64 = 0;
    loop {
        std::thread::sleep(POLL);
        let Some(watcher) = watcher.upgrade() else {
            return;
        };
        let mut seen = watcher.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if watcher.hub.open() == 0 {
            // Nobody to tell: look again from scratch when a page opens.
            *seen = None;
            continue;
        }
        looks += 1;
        let graph = seen
            .as_ref()
            .filter(|_| !looks.is_multiple_of(GRAPH_EVERY))
            .map(|seen| seen.graph);
        let now = look(&watcher.watched, graph);
        if let Some(before) = seen.as_ref() {
            for (what, changed) in [
                ("runs", before.runs != now.runs),
                ("changes", before.changes != now.changes),
                ("memory", before.memory != now.memory),
                ("graph", before.graph != now.graph),
                ("evaluators", before.evaluators != now.evaluators),
            ] {
                if changed {
                    watcher.hub.publish(&Event::changed(what));
                }
            }
        }
        *seen = Some(now);
    }
}

/// Looks at everything; the graph only every [`GRAPH_EVERY`] looks (or when `graph` is `None`),
/// since checking whether a manifest changed costs a walk of the workspace's manifests.
fn look(watched: &Watched, graph: Option<u64>) -> Seen {
    let state = watched.root.join(".once");
    Seen {
        runs: runs_fingerprint(&state.join("runs")),
        changes: folder_fingerprint(&state.join("changes"), 2),
        memory: folder_fingerprint(&state.join("memory"), 1),
        graph: graph.unwrap_or_else(|| (watched.graph)()),
        evaluators: (watched.evaluators)(),
    }
}

/// The newest runs' names and their `run.json` stamps: a run starting, progressing (its record
/// is rewritten as actions end) or ending changes it.
fn runs_fingerprint(folder: &Path) -> u64 {
    let mut names: Vec<String> = fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    let mut hasher = DefaultHasher::new();
    for name in names.iter().take(RECENT_RUNS) {
        name.hash(&mut hasher);
        stamp(&folder.join(name).join("run.json")).hash(&mut hasher);
    }
    hasher.finish()
}

/// Names and stamps of every entry down to `depth` levels.
fn folder_fingerprint(folder: &Path, depth: usize) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_folder(folder, depth, &mut hasher);
    hasher.finish()
}

fn hash_folder(folder: &Path, depth: usize, hasher: &mut DefaultHasher) {
    let mut entries: Vec<(String, PathBuf)> = fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            Some((e.file_name().into_string().ok()?, e.path()))
        })
        .collect();
    entries.sort_unstable();
    for (name, path) in entries {
        name.hash(hasher);
        stamp(&path).hash(hasher);
        if depth > 1 && path.is_dir() {
            hash_folder(&path, depth - 1, hasher);
        }
    }
}

/// Length and modification time, or nothing for a path that is not there.
fn stamp(path: &Path) -> Option<(u64, u128)> {
    let meta = fs::symlink_metadata(path).ok()?;
    let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((meta.len(), modified.as_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_stops_reading_is_dropped_and_others_still_get_events() {
        let hub = Hub::default();
        let _silent = hub.subscribe().expect("room");
        let reader = hub.subscribe().expect("room");
        for _ in 0..QUEUE {
            assert_eq!(hub.publish(&Event::changed("runs")), 2);
            reader.try_recv().expect("an event");
        }
        // The silent page's queue is full now: the next event drops it, and only it.
        assert_eq!(hub.publish(&Event::changed("runs")), 1);
        assert_eq!(hub.open(), 1);
        assert_eq!(
            reader.try_recv().expect("still served"),
            Event::changed("runs")
        );
    }

    #[test]
    fn pages_are_bounded_and_a_closed_one_frees_its_place() {
        let hub = Hub::default();
        let mut pages: Vec<_> = (0..MAX_PAGES)
            .map(|_| hub.subscribe().expect("room"))
            .collect();
        assert!(hub.subscribe().is_none(), "one page too many");
        pages.pop();
        hub.publish(&Event::changed("graph"));
        assert!(hub.subscribe().is_some(), "the closed page's place is free");
    }

    #[test]
    fn fingerprints_change_with_the_files() {
        let dir = std::env::temp_dir().join(format!("once-web-events-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("set-1")).expect("mkdir");
        let empty = folder_fingerprint(&dir, 2);
        fs::write(dir.join("set-1").join("set.json"), "{}").expect("write");
        let one = folder_fingerprint(&dir, 2);
        assert_ne!(empty, one);
        assert_eq!(
            one,
            folder_fingerprint(&dir, 2),
            "stable when nothing changes"
        );
        fs::write(dir.join("set-1").join("set.json"), "{\"a\":1}").expect("write");
        assert_ne!(one, folder_fingerprint(&dir, 2));
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
