//! Human durations (`500ms`, `90s`, `5m`, `1h30m`, `1d`) used for deadlines.
//!
//! Pure parsing: it must never accept something ambiguous (zero, negative, an
//! unknown unit, a bare number) because a deadline that silently means
//! something else kills real work.

use std::time::Duration;

/// Parses a human duration: one or more `<digits><unit>` groups with units
/// `ms`, `s`, `m`, `h`, `d`, e.g. `1h30m`. The error says what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "a duration like `500ms`, `90s`, `5m`, `1h30m` or `1d`";
    let s = text.trim();
    if s.is_empty() {
        return Err(format!("empty duration; expected {EXPECTED}"));
    }
    if s.starts_with('-') {
        return Err(format!("negative duration `{text}`; expected {EXPECTED}"));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total_ms: u64 = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(format!("`{text}` is not a duration; expected {EXPECTED}"));
        }
        let number: u64 = s[start..i]
            .parse()
            .map_err(|_| format!("`{text}` is too large; expected {EXPECTED}"))?;
        let unit_start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let factor: u64 = match &s[unit_start..i] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" => {
                return Err(format!(
                    "`{text}` has no unit; expected {EXPECTED} (units: ms, s, m, h, d)"
                ));
            }
            other => {
                return Err(format!(
                    "unknown unit `{other}` in `{text}`; expected one of ms, s, m, h, d"
                ));
            }
        };
        total_ms = number
            .checked_mul(factor)
            .and_then(|v| total_ms.checked_add(v))
            .ok_or_else(|| format!("`{text}` is too large; expected {EXPECTED}"))?;
    }
    if total_ms == 0 {
        return Err(format!(
            "zero duration `{text}`; expected a positive duration"
        ));
    }
    Ok(Duration::from_millis(total_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86400)));
    }

    #[test]
    fn bad() {
        for bad in [
            "",
            "0s",
            "-5m",
            "5",
            "5x",
            "m",
            "99999999999999999999s",
            "18446744073709551615d",
            "1h 30m",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert!(err.contains("expected"), "{bad}: {err}");
        }
        assert!(
            parse_duration("3w")
                .unwrap_err()
                .contains("unknown unit `w`")
        );
    }
}
