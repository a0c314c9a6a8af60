//! Areas of simple shapes.

/// The area of a `width` by `height` rectangle.
pub fn rectangle(width: u32, height: u32) -> u32 {
    width * height
}

#[cfg(test)]
mod tests {
    #[test]
    fn rectangle() {
        assert_eq!(super::rectangle(2, 3), 6);
    }
}
