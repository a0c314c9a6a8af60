//! Prices in cents, so sums are exact.

/// The total of `quantity` items at `unit_cents` each, or `None` if it overflows.
pub fn total_cents(unit_cents: u64, quantity: u64) -> Option<u64> {
    unit_cents.checked_mul(quantity)
}

#[cfg(test)]
mod tests {
    use super::total_cents;

    #[test]
    fn multiplies_exactly() {
        assert_eq!(total_cents(199, 3), Some(597));
    }

    #[test]
    fn reports_overflow() {
        assert_eq!(total_cents(u64::MAX, 2), None);
    }
}
