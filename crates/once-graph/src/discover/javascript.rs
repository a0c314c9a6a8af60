//! npm, pnpm, yarn and bun workspaces, from `package.json` and `pnpm-workspace.yaml`.

use super::{Inferred, Reader};

/// The targets the workspace's JavaScript manifests describe.
pub(crate) fn discover(reader: &mut Reader) -> Vec<Inferred> {
    let _ = reader;
    Vec::new()
}
