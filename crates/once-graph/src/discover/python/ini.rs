//! Just enough of the INI dialect `setup.cfg`, `tox.ini` and `mypy.ini` share to answer "is
//! there a `[NAME]` section, and which keys does it set".
//!
//! Pure, and lenient: a line it cannot read is skipped, never an error (the tool that owns the
//! file will say what is wrong with it). It must never guess a value's meaning.

/// The keys of the section `[name]` (lowercased, in file order), or `None` when there is none.
pub(super) fn section_keys(text: &str, name: &str) -> Option<Vec<String>> {
    let mut keys: Option<Vec<String>> = None;
    let mut inside = false;
    for line in text.lines() {
        // A line indented is a continued value, never a key.
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim_end();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = header.trim() == name;
            if inside {
                keys.get_or_insert_with(Vec::new);
            }
            continue;
        }
        if inside
            && let Some(list) = keys.as_mut()
            && let Some(end) = line.find(['=', ':'])
        {
            list.push(line[..end].trim().to_ascii_lowercase());
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_section_and_its_keys_only() {
        let text = "[metadata]\nname = x\n[mypy]\nstrict = True\nfiles =\n  src,\n  tests\n\
                    ; comment\n[mypy-foo.*]\nignore_errors = True\n[tool:pytest]\ntestpaths: t\n";
        assert_eq!(
            section_keys(text, "mypy"),
            Some(vec!["strict".into(), "files".into()])
        );
        assert_eq!(
            section_keys(text, "tool:pytest"),
            Some(vec!["testpaths".into()])
        );
        assert_eq!(section_keys(text, "pytest"), None);
        assert_eq!(section_keys("[pytest]\n", "pytest"), Some(vec![]));
    }
}
