//! The `once` command-line tool.

fn main() {}
