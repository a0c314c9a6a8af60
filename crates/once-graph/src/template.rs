//! Command templates: `{name}` placeholders, `{{`/`}}` literal braces.
//!
//! Used to validate placeholders at load time and to render commands for the
//! runner. It must never execute anything.

/// A placeholder found in a template: byte offset of its `{` and its name.
pub type Placeholder<'a> = (usize, &'a str);

/// Lists the placeholders of `template`, or `(offset, message)` for a
/// malformed template (unclosed `{`, stray `}`, empty `{}`).
pub fn placeholders(template: &str) -> Result<Vec<Placeholder<'_>>, (usize, String)> {
    let bytes = template.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if bytes.get(i + 1) == Some(&b'}') => i += 2,
            b'{' => {
                let Some(len) = template[i + 1..].find('}') else {
                    return Err((i, "unclosed `{` (write `{{` for a literal brace)".into()));
                };
                let name = &template[i + 1..i + 1 + len];
                if name.is_empty() || name.contains('{') {
                    return Err((
                        i,
                        format!(
                            "invalid placeholder `{{{name}}}` (write `{{{{` for a literal brace)"
                        ),
                    ));
                }
                out.push((i, name));
                i += len + 2;
            }
            b'}' => return Err((i, "stray `}` (write `}}` for a literal brace)".into())),
            _ => i += 1,
        }
    }
    Ok(out)
}

/// Renders `template`, replacing each placeholder by `lookup(name)`; returns
/// the first unknown placeholder name as the error.
pub fn render(template: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(r) = tail.strip_prefix("{{") {
            out.push('{');
            rest = r;
        } else if let Some(r) = tail.strip_prefix("}}") {
            out.push('}');
            rest = r;
        } else if let (true, Some(end)) = (tail.starts_with('{'), tail.find('}')) {
            let name = &tail[1..end];
            out.push_str(&lookup(name).ok_or_else(|| name.to_string())?);
            rest = &tail[end + 1..];
        } else {
            return Err(tail.chars().take(1).collect());
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_placeholders() {
        assert_eq!(
            placeholders("a {x} {{y}} {z}"),
            Ok(vec![(2, "x"), (12, "z")])
        );
        assert!(placeholders("a {x").is_err());
        assert!(placeholders("a }").is_err());
        assert!(placeholders("a {}").is_err());
    }

    #[test]
    fn renders() {
        let r = render("echo {a} {{b}}", |n| (n == "a").then(|| "1".to_string()));
        assert_eq!(r, Ok("echo 1 {b}".into()));
        assert_eq!(render("{q}", |_| None), Err("q".into()));
    }
}
