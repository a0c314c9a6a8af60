//! Whether what we write is coloured: the one decision behind clap's help and errors, the log
//! lines and `once run`'s prefixes, so `NO_COLOR` and `CLICOLOR_FORCE` mean the same everywhere.
//! It only answers; it must never write, and never decide anything but colour (a forced colour
//! is not a terminal: the progress line still needs a real one).

use std::ffi::OsString;
use std::io::IsTerminal;

/// Whether text written to `stream` gets ANSI colours: never when `NO_COLOR` has a value, always
/// when `CLICOLOR_FORCE` has one other than `0`, else only when `stream` is a terminal.
pub fn enabled(stream: &impl IsTerminal) -> bool {
    decide(
        std::env::var_os("NO_COLOR"),
        std::env::var_os("CLICOLOR_FORCE"),
        stream.is_terminal(),
    )
}

/// [`enabled`] as clap wants it: decided here, so clap's own reading of the environment never
/// comes into play.
pub fn clap_choice(stream: &impl IsTerminal) -> clap::ColorChoice {
    if enabled(stream) {
        clap::ColorChoice::Always
    } else {
        clap::ColorChoice::Never
    }
}

fn decide(no_color: Option<OsString>, force: Option<OsString>, terminal: bool) -> bool {
    // An empty value is the same as none, as both conventions say.
    if no_color.is_some_and(|value| !value.is_empty()) {
        return false;
    }
    if force.is_some_and(|value| !value.is_empty() && value != "0") {
        return true;
    }
    terminal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(value: &str) -> Option<OsString> {
        Some(value.into())
    }

    #[test]
    fn no_color_wins_then_force_then_the_terminal() {
        assert!(decide(None, None, true));
        assert!(!decide(None, None, false));
        assert!(!decide(os("1"), None, true));
        assert!(decide(os(""), None, true));
        assert!(!decide(os("1"), os("1"), true));
        assert!(decide(None, os("1"), false));
        assert!(decide(None, os("yes"), false));
        assert!(!decide(None, os("0"), false));
        assert!(!decide(None, os(""), false));
        assert!(decide(os(""), os("1"), false));
    }
}
