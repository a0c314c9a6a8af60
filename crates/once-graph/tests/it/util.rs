//! Temp workspaces for tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A temp folder removed on drop.
pub struct TempWs {
    pub root: PathBuf,
}

impl TempWs {
    pub fn new(files: &[(&str, &str)]) -> TempWs {
        static N: AtomicU32 = AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "once-graph-it-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let ws = TempWs { root };
        for (p, c) in files {
            ws.write(p, c);
        }
        ws
    }

    pub fn write(&self, rel: &str, content: &str) {
        self.write_bytes(rel, content.as_bytes());
    }

    pub fn write_bytes(&self, rel: &str, content: &[u8]) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn load(&self) -> once_graph::Workspace {
        once_graph::Workspace::load(&self.root).unwrap()
    }
}

impl Drop for TempWs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// JSON of `v` with the temp root replaced by `[ROOT]`.
pub fn redact<T: serde::Serialize>(v: &T, ws: &once_graph::Workspace) -> serde_json::Value {
    let text = serde_json::to_string(v).unwrap();
    let root = serde_json::to_string(&ws.root().to_string_lossy()).unwrap();
    let root = &root[1..root.len() - 1];
    serde_json::from_str(&text.replace(root, "[ROOT]")).unwrap()
}
