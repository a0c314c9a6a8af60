//! A temporary workspace for the ecosystems' tests: its files written, the folder removed on drop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A folder under the system's temp folder, unique to this process and call.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    /// A fresh folder holding `files` (relative path, text).
    pub(crate) fn new(files: &[(&str, &str)]) -> Scratch {
        static N: AtomicU32 = AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "once-discover-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let scratch = Scratch(root);
        for (rel, text) in files {
            scratch.write(rel, text);
        }
        scratch
    }

    /// Writes `bytes` at `rel`, making its folders.
    pub(crate) fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
