//! Ids and timestamps of the files `once` creates (memory entries, change sets). An id is `YYYYMMDD-HHMMSS-<8 hex>`: time-ordered so a folder listing reads
//! in creation order, with 32 random bits so two writers in the same second practically never
//! pick the same name (and the store's no-clobber create catches the rare case that they do).
//!
//! Must never depend on a date library: UTC civil time from the Unix epoch is a few lines.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now_seconds() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// `(year, month, day, hour, minute, second)` in UTC.
fn civil(seconds: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let part = |v: i64| u32::try_from(v).unwrap_or(0);
    (
        year,
        part(month),
        part(day),
        part(rest / 3600),
        part(rest / 60 % 60),
        part(rest % 60),
    )
}

/// RFC 3339 UTC, to the second: `2025-01-31T09:30:00Z`.
pub fn rfc3339(seconds: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(seconds);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// A fresh id for something created at `seconds`.
pub fn new_id(seconds: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(seconds);
    format!(
        "{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{:08x}",
        random_u32()
    )
}

/// 32 bits from the platform's random source. Should it fail (it does not on Linux ≥ 3.17), the
/// time, pid and a counter hashed together still differ between writers.
pub fn random_u32() -> u32 {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let mut hasher = blake3::Hasher::new();
        hasher.update(&nanos.to_le_bytes());
        hasher.update(&std::process::id().to_le_bytes());
        hasher.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        bytes.copy_from_slice(&hasher.finalize().as_bytes()[..4]);
    }
    u32::from_le_bytes(bytes)
}

/// Whether `id` can name a file or folder of ours: ASCII letters, digits, `-` and `_`, not empty, and not
/// starting with `.` (hidden files are the store's own temporaries).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_time() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_738_315_800), "2025-01-31T09:30:00Z");
        let id = new_id(1_738_315_800);
        assert!(id.starts_with("20250131-093000-"), "{id}");
        assert_eq!(id.len(), 24);
        assert!(is_valid_id(&id));
        assert!(!is_valid_id("../x") && !is_valid_id("") && !is_valid_id(".tmp"));
    }
}
