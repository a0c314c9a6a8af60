//! Embeds every file under `examples/<name>/` into the library, in a sorted (so deterministic)
//! table of `(example, path, bytes)`. Build output that a test of an example may have left behind
//! (`target/`, `node_modules/`, `__pycache__/`, `.venv/`) is never embedded.
//!
//! Must never read anything outside `examples/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const SKIPPED: [&str; 4] = ["target", "node_modules", "__pycache__", ".venv"];

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"))
        .join("examples");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    let mut out = String::from("pub(crate) static FILES: &[(&str, &str, &[u8])] = &[\n");
    for relative in &files {
        let (example, path) = relative.split_once('/').expect("a file inside an example");
        writeln!(
            out,
            "    ({example:?}, {path:?}, include_bytes!({:?})),",
            root.join(relative).display().to_string()
        )
        .expect("writes to a string");
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("files.rs");
    std::fs::write(dest, out).expect("writes the table");
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("reads an examples folder") {
        let entry = entry.expect("reads a folder entry");
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().expect("reads a file type");
        if kind.is_dir() {
            if !SKIPPED.contains(&name.as_str()) {
                walk(root, &path, files);
            }
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).expect("under the root");
            let relative = relative.to_str().expect("example paths are UTF-8");
            files.push(relative.to_string());
        } else {
            panic!("{}: examples hold only files and folders", path.display());
        }
    }
}
