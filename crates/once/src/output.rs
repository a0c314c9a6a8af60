//! Writing results to the process's stdout. CLI commands print here and nowhere else; `once mcp`
//! never calls into this module, because there only the protocol writer may touch stdout.

#![allow(clippy::print_stdout)]

use std::io::{self, Write};

use serde::Serialize;

/// How much pretty JSON is gathered before it is written: stdout is line-buffered, and a
/// thousand targets' listing is ten thousand lines, each a `write` of its own without this.
const JSON_BUFFER: usize = 64 * 1024;

/// Prints a value as pretty JSON followed by a newline.
pub fn json<T: Serialize + ?Sized>(value: &T) -> io::Result<()> {
    let mut stdout = io::BufWriter::with_capacity(JSON_BUFFER, io::stdout().lock());
    serde_json::to_writer_pretty(&mut stdout, value)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Prints lines of text.
pub fn text(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        stdout.write_all(b"\n")?;
    }
    stdout.flush()
}
