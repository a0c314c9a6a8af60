//! Paths relative to the workspace root, as manifests write them: `/`-separated, joined onto a
//! manifest's folder with `.` and `..` resolved.
//!
//! The one reading of such a path for every manifest (once.toml and each ecosystem's). It must
//! never touch the file system and never answer a path that is absolute or leaves the root.

/// Joins a manifest-relative `path` onto the manifest folder `dir_rel`
/// (both relative to the workspace root), normalizing `.` and `..`.
/// Errors when the path is absolute or escapes the root.
pub(crate) fn join_path(dir_rel: &str, path: &str) -> Result<String, &'static str> {
    if path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':') {
        return Err("absolute-path");
    }
    // Common case: a plain relative path already in normal form.
    let plain = |p: &str| {
        !p.is_empty() && !p.contains('\\') && p.split('/').all(|c| !matches!(c, "" | "." | ".."))
    };
    if plain(path) && (dir_rel.is_empty() || plain(dir_rel)) {
        return Ok(if dir_rel.is_empty() {
            path.to_string()
        } else {
            format!("{dir_rel}/{path}")
        });
    }
    let mut parts: Vec<&str> = dir_rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("path-escapes-workspace");
                }
            }
            p => parts.push(p),
        }
    }
    Ok(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// `rel` (a path as a manifest writes it, `\\` allowed) taken from `folder` (`.` for the root);
/// `None` when it is absolute or leaves the workspace root.
pub(crate) fn join(folder: &str, rel: &str) -> Option<String> {
    let folder = if folder == "." { "" } else { folder };
    join_path(folder, rel).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_stay_inside_the_root() {
        assert_eq!(join_path("", "."), Ok(".".into()));
        assert_eq!(join_path("", "crates/core/"), Ok("crates/core".into()));
        assert_eq!(join_path("services/a", "../b"), Ok("services/b".into()));
        assert_eq!(
            join_path("services", "../.."),
            Err("path-escapes-workspace")
        );
        assert_eq!(join_path("", "/etc"), Err("absolute-path"));
        assert_eq!(join_path("", "C:/x"), Err("absolute-path"));
        assert_eq!(join(".", "./a/b/"), Some("a/b".into()));
        assert_eq!(join("crates/a", "..\\b"), Some("crates/b".into()));
        assert_eq!(join("a", "../.."), None);
        assert_eq!(join("a", "/abs"), None);
        assert_eq!(join("a", ".."), Some(".".into()));
    }
}
