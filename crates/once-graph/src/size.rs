//! Byte sizes as people write them in `once.toml`, flags and variables: `1GiB`, `512MiB`,
//! `64KiB`, `1048576` (bytes). Binary units only, so a size means one number; it must never
//! accept zero, which would refuse everything, nor a size that does not fit in 64 bits.

/// The size `text` names, in bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| {
        format!("`{text}` is not a size: expected a number of bytes or `512MiB`, `1GiB`")
    })?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        other => {
            return Err(format!(
                "`{other}` is not a unit of size: write `B`, `KiB`, `MiB`, `GiB` or `TiB`"
            ));
        }
    };
    match number.checked_mul(scale) {
        Some(0) => Err("a size of zero would refuse everything: give at least `1B`".to_owned()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("`{text}` is larger than once can count")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("3B"), Ok(3));
        for bad in [
            "",
            "0",
            "0GiB",
            "1GB",
            "1.5GiB",
            "-1",
            "GiB",
            "99999999999TiB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
