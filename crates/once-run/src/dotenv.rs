//! Reading a capability's `env-file`: `KEY=value` lines, as dotenv files write them.
//!
//! The format is the common subset: blank lines and `#` comments, an optional
//! `export ` before the name, values bare (trailing spaces and a ` #` comment
//! dropped), in single quotes (taken as written) or in double quotes (with `\n`,
//! `\t`, `\"` and `\\`). Nothing is interpolated: a value never runs or reads
//! anything. Values are secrets: this module must never log or return them in
//! an error, which names only the file and the line.

use std::collections::BTreeMap;

/// Files larger than this are refused: a dotenv file is a handful of lines.
pub(crate) const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// Parses a dotenv file. The error gives the 1-based line and what is wrong with it, never its
/// text.
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, (usize, &'static str)> {
    let mut vars = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line
            .strip_prefix("export ")
            .map(str::trim_start)
            .unwrap_or(line);
        let Some((name, rest)) = line.split_once('=') else {
            return Err((i + 1, "expected `NAME=value`"));
        };
        let name = name.trim_end();
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err((
                i + 1,
                "a variable name is letters, digits and `_`, not starting with a digit",
            ));
        }
        let value = value(rest.trim_start()).ok_or((i + 1, "a quoted value is not closed"))?;
        if value.contains('\0') {
            return Err((i + 1, "a value holds a NUL byte"));
        }
        vars.insert(name.to_string(), value);
    }
    Ok(vars)
}

/// The value after `=`: quoted or bare. `None` when a quote is not closed on the line.
fn value(rest: &str) -> Option<String> {
    if let Some(inner) = rest.strip_prefix('\'') {
        return inner.find('\'').map(|end| inner[..end].to_string());
    }
    if let Some(inner) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => match chars.next()? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    other => out.push(other),
                },
                c => out.push(c),
            }
        }
        return None;
    }
    let bare = match rest.find(" #") {
        Some(at) => &rest[..at],
        None => rest,
    };
    Some(bare.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_common_forms() {
        let vars = parse(
            "# comment\n\nA=1\nexport B = two words # note\nC='lit $X \\n'\nD=\"x\\ny\\\"z\"\nE=\n",
        )
        .unwrap();
        assert_eq!(vars["A"], "1");
        assert_eq!(vars["B"], "two words");
        assert_eq!(vars["C"], "lit $X \\n");
        assert_eq!(vars["D"], "x\ny\"z");
        assert_eq!(vars["E"], "");
    }

    #[test]
    fn errors_name_the_line_never_the_value() {
        assert_eq!(parse("A=1\nnot a line\n").unwrap_err().0, 2);
        assert_eq!(parse("1A=x").unwrap_err().0, 1);
        let (line, why) = parse("OK=1\nSECRET=\"hunter2\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(!why.contains("hunter2"));
    }
}
