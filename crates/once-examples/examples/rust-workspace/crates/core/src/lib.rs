//! How to greet someone.

/// A greeting for `name`; a blank name greets the world.
pub fn greeting(name: &str) -> String {
    let name = name.trim();
    if name.is_empty() {
        "Hello, world!".to_string()
    } else {
        format!("Hello, {name}!")
    }
}

#[cfg(test)]
mod tests {
    use super::greeting;

    #[test]
    fn greets_by_name() {
        assert_eq!(greeting("Ada"), "Hello, Ada!");
    }

    #[test]
    fn a_blank_name_greets_the_world() {
        assert_eq!(greeting("  "), "Hello, world!");
    }
}
