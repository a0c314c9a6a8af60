//! Python projects and uv workspaces, from `pyproject.toml`.

use super::{Inferred, Reader};

/// The targets the workspace's Python manifests describe.
pub(crate) fn discover(reader: &mut Reader) -> Vec<Inferred> {
    let _ = reader;
    Vec::new()
}
