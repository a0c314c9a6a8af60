//! A scratch folder under the system's temporary directory, made once per thread and target and
//! reused for every input, removed when the thread ends.
//!
//! Targets that need a workspace on disk keep one here instead of making a folder per input,
//! which would cost more than the parse under test. It must never hand out a folder that another
//! thread uses: the name carries the process id and a per-process counter.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A folder that is removed, with everything in it, when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh, empty folder named after `what`.
    pub(crate) fn new(what: &str) -> Scratch {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("once-fuzz-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| {
            panic!("cannot create the scratch folder `{}`: {e}", dir.display())
        });
        Scratch { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
