//! Opaque page cursors: `<fingerprint>-<offset>`, e.g. `c1a2b3c4-50`.
//!
//! The fingerprint (8 hex chars of BLAKE3 over the query's filters) makes a
//! cursor reused with other filters fail loudly instead of skipping rows.
//! Clients must treat cursors as opaque; this module must never accept a
//! cursor it cannot fully validate.
//!
//! A page ends at `limit` rows or at [`PAGE_BYTES`] of rows, whichever comes
//! first, so its size does not depend on how long the names in it are.

use serde::Serialize;

use super::QueryError;

/// Default page size.
pub(crate) const DEFAULT_LIMIT: u32 = 50;
/// Largest page size.
pub const MAX_LIMIT: u32 = 200;
/// Most bytes of JSON rows one page carries. An MCP answer holds its value twice (structured
/// and as text), and every answer must stay under 40 KB, about 10,000 tokens.
pub(crate) const PAGE_BYTES: usize = 12 * 1024;

/// Fingerprint of the filter values that define a result list.
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().to_hex()[..8].to_string()
}

/// The cursor for the page starting at `offset`.
pub(crate) fn encode(fp: &str, offset: usize) -> String {
    format!("{fp}-{offset}")
}

/// The offset a cursor points at; `InvalidCursor` when malformed, made for
/// another filter, or past `total`.
pub(crate) fn decode(cursor: Option<&str>, fp: &str, total: usize) -> Result<usize, QueryError> {
    let Some(c) = cursor else { return Ok(0) };
    let (f, off) = c.split_once('-').ok_or(QueryError::InvalidCursor)?;
    if f != fp || off.is_empty() || !off.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QueryError::InvalidCursor);
    }
    let off: usize = off.parse().map_err(|_| QueryError::InvalidCursor)?;
    if off > total {
        return Err(QueryError::InvalidCursor);
    }
    Ok(off)
}

/// Validated page size.
pub(crate) fn limit(limit: Option<u32>) -> Result<usize, QueryError> {
    match limit {
        None => Ok(DEFAULT_LIMIT as usize),
        Some(0) => Err(QueryError::InvalidArgument {
            message: "`limit` must be at least 1".into(),
        }),
        Some(l) if l > MAX_LIMIT => Err(QueryError::InvalidArgument {
            message: format!(
                "`limit` must be at most {MAX_LIMIT}; page with `next_cursor` instead"
            ),
        }),
        Some(l) => Ok(l as usize),
    }
}

/// `(start, end, next_cursor)` for a list of `total` items.
pub(crate) fn window(
    cursor: Option<&str>,
    lim: Option<u32>,
    fp: &str,
    total: usize,
) -> Result<(usize, usize, Option<String>), QueryError> {
    let start = decode(cursor, fp, total)?;
    let end = start.saturating_add(limit(lim)?).min(total);
    let next = (end < total).then(|| encode(fp, end));
    Ok((start, end, next))
}

/// How many of `rows` fit in `budget` bytes of JSON; at least one, so a page always moves on.
pub(crate) fn fitting<T: Serialize>(rows: &[T], budget: usize) -> usize {
    let mut bytes = 0;
    for (i, row) in rows.iter().enumerate() {
        // The comma or bracket beside each row counts too.
        bytes += serde_json::to_string(row).map_or(0, |json| json.len()) + 1;
        if i > 0 && bytes > budget {
            return i;
        }
    }
    rows.len()
}

/// Cuts `rows`, the page that starts at `start`, after what fits in [`PAGE_BYTES`]; returns the
/// cursor that goes on from the cut, or `next` when everything fit.
pub(crate) fn fit<T: Serialize>(
    rows: &mut Vec<T>,
    start: usize,
    next: Option<String>,
    fp: &str,
) -> Option<String> {
    let kept = fitting(rows, PAGE_BYTES);
    if kept < rows.len() {
        rows.truncate(kept);
        return Some(encode(fp, start + kept));
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors() {
        let fp = fingerprint(&["a", ""]);
        assert_eq!(fp.len(), 8);
        assert_ne!(fp, fingerprint(&["", "a"]));
        let c = encode(&fp, 50);
        assert_eq!(decode(Some(&c), &fp, 60), Ok(50));
        assert_eq!(decode(None, &fp, 60), Ok(0));
        assert_eq!(
            decode(Some(&c), &fingerprint(&["b", ""]), 60),
            Err(QueryError::InvalidCursor)
        );
        assert_eq!(decode(Some(&c), &fp, 10), Err(QueryError::InvalidCursor));
        for bad in [
            "",
            "-",
            "zz",
            &format!("{fp}-"),
            &format!("{fp}-+1"),
            &format!("{fp}-99999999999999999999999"),
        ] {
            assert_eq!(
                decode(Some(bad), &fp, 60),
                Err(QueryError::InvalidCursor),
                "{bad}"
            );
        }
        assert_eq!(
            window(None, Some(2), &fp, 3).map(|w| w.2.is_some()),
            Ok(true)
        );
        assert!(limit(Some(0)).is_err());
        assert!(limit(Some(201)).is_err());
    }

    #[test]
    fn a_page_ends_at_its_byte_budget() {
        let fp = fingerprint(&["long"]);
        let long = "n".repeat(1_000);
        let mut rows = vec![long.clone(); 200];
        let next = fit(&mut rows, 400, None, &fp);
        assert!(rows.len() < 20, "{}", rows.len());
        assert!(serde_json::to_string(&rows).unwrap().len() <= PAGE_BYTES);
        assert_eq!(next, Some(encode(&fp, 400 + rows.len())));
        let mut short = vec!["n"; 200];
        assert_eq!(fit(&mut short, 0, None, &fp), None);
        assert_eq!(short.len(), 200);
        // One row larger than the budget still makes a page, so paging always moves on.
        let mut huge = vec!["n".repeat(PAGE_BYTES * 2); 3];
        assert_eq!(fit(&mut huge, 0, None, &fp), Some(encode(&fp, 1)));
    }
}
