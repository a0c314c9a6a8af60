//! The live view of `once run` on stderr: the commands' output, line by line and prefixed by
//! their action, and on a terminal one progress line redrawn in place below it.
//!
//! Theory of operation. The scheduler's observer is called with the scheduler's lock held, so
//! it only sends a note down a channel (two per action at most) and returns; one printer thread
//! does every read and write, and takes the notes in gathers ([`GATHER`]) so that a burst of
//! them costs one wake-up and one write, not one per note. Output is not passed through memory from the capture: every
//! command's log is already written through as it prints, so the printer tails the log of each
//! running action every [`POLL`], and reads it to its end when the action ends. The log file is
//! the buffer: a command writes to its pipe and the capture to the file whatever the printer
//! does, so a slow terminal can delay the view but never stall a command. What the printer holds
//! is bounded by [`LAG`]: when a log has grown more than that past what was shown, the lines in
//! between are counted, not printed, and one note says how many. This module must never write to
//! stdout (the `--json` report lives there) nor print a line in pieces.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use once_run::{ActionStatus, Event, RunDir};

use crate::render::{self, Prefixes, Progress};

/// Which actions' output `once run` shows (the names and meanings are turbo's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputLogs {
    /// Every action's output; a cached action's recorded output is replayed
    Full,
    /// The output of the actions that run; cached ones stay quiet
    NewOnly,
    /// Only the output of an action that fails, shown when it fails
    ErrorsOnly,
    /// No output, only the progress and the summary
    None,
}

/// How often the logs of running actions are read.
const POLL: Duration = Duration::from_millis(50);

/// How long the printer naps after a note before it takes every note that came meanwhile. A
/// note sent while it naps wakes nothing, so a burst of ends (a no-op run of a thousand cache
/// hits) costs a few wake-ups and writes instead of one of each per action; a person cannot
/// see a lag this short.
const GATHER: Duration = Duration::from_millis(10);

/// How far, in bytes, a log may grow past what was shown before lines are dropped.
const LAG: u64 = 256 * 1024;

/// What is still shown of a log that fell [`LAG`] behind: about its last this many bytes.
const KEEP: u64 = 64 * 1024;

/// The longest line shown, in bytes; the rest of it is cut and marked with `…`.
const LINE_CAP: usize = 4096;

/// What the observer hands the printer.
#[derive(Debug)]
enum Note {
    Started {
        action: String,
        log: PathBuf,
    },
    Finished {
        action: String,
        status: ActionStatus,
        cached: bool,
        done: usize,
        log: Option<PathBuf>,
    },
    Warning(String),
}

/// The printer thread and the channel to it.
#[derive(Debug)]
pub struct Live {
    notes: Sender<Note>,
    printer: JoinHandle<()>,
}

impl Live {
    /// Starts the printer of a run of `actions` (in plan order). `terminal`: stderr is one, so
    /// the progress line is drawn; `colour`: prefixes are coloured.
    pub fn start(
        actions: Vec<String>,
        mode: OutputLogs,
        terminal: bool,
        colour: bool,
    ) -> io::Result<Live> {
        let (notes, inbox) = mpsc::channel();
        let printer = Printer {
            mode,
            terminal,
            prefixes: Prefixes::new(actions.iter().map(String::as_str), colour),
            index: actions
                .iter()
                .enumerate()
                .map(|(i, a)| (a.clone(), i))
                .collect(),
            progress: Progress {
                total: actions.len(),
                ..Progress::default()
            },
            tails: Vec::new(),
            out: Vec::new(),
            dirty: terminal,
        };
        let printer = thread::Builder::new()
            .name("once-live".into())
            .spawn(move || printer.serve(&inbox))?;
        Ok(Live { notes, printer })
    }

    /// Tells the printer about `event`, at once and without waiting for it.
    pub fn observe(&self, run: &RunDir, event: Event<'_>) {
        let note = match event {
            Event::Started { action } => Note::Started {
                action: action.to_owned(),
                log: run.log_path(action),
            },
            Event::Finished {
                action,
                status,
                cached,
                done,
                log,
                ..
            } => Note::Finished {
                action: action.to_owned(),
                status,
                cached,
                done,
                log: log.map(PathBuf::from),
            },
            Event::Warning { message } => Note::Warning(message.to_owned()),
        };
        // The printer ends only after this sender is gone; a failed send means it panicked.
        let _ = self.notes.send(note);
    }

    /// Shows what is left of the logs, clears the progress line and waits for the printer.
    pub fn finish(self) {
        drop(self.notes);
        // Cut its nap short: the run is over and nothing more will come.
        self.printer.thread().unpark();
        if self.printer.join().is_err() {
            tracing::warn!("the live view of the run stopped early");
        }
    }
}

/// The printer thread's state.
struct Printer {
    mode: OutputLogs,
    terminal: bool,
    prefixes: Prefixes,
    index: HashMap<String, usize>,
    progress: Progress,
    /// The logs followed now: the running actions' (when their output is shown live).
    tails: Vec<Tail>,
    /// Whole lines waiting for the next write.
    out: Vec<u8>,
    /// The progress line needs drawing again.
    dirty: bool,
}

impl Printer {
    fn serve(mut self, inbox: &Receiver<Note>) {
        let mut polled = Instant::now();
        let mut open = true;
        while open {
            match inbox.recv_timeout(POLL.saturating_sub(polled.elapsed())) {
                Ok(note) => {
                    self.note(note);
                    // Not woken by the notes of the nap (only by `finish`), then all of them.
                    thread::park_timeout(GATHER);
                    loop {
                        match inbox.try_recv() {
                            Ok(note) => self.note(note),
                            Err(TryRecvError::Empty) => break,
                            Err(TryRecvError::Disconnected) => {
                                open = false;
                                break;
                            }
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            // Poll on time even when notes keep coming (a run of cache hits), and draw the
            // progress line at most once per poll: a burst of notes is one redraw.
            if polled.elapsed() >= POLL {
                polled = Instant::now();
                for i in 0..self.tails.len() {
                    let lines = self.tails[i].read(false);
                    self.show(i, &lines);
                }
                self.write();
            } else if !self.out.is_empty() {
                self.write();
            }
        }
        for i in 0..self.tails.len() {
            let lines = self.tails[i].read(true);
            self.show(i, &lines);
        }
        self.write();
        if self.terminal {
            let _ = io::stderr().write_all(b"\r\x1b[K");
        }
    }

    fn note(&mut self, note: Note) {
        self.dirty = self.terminal;
        match note {
            Note::Started { action, log } => {
                if matches!(self.mode, OutputLogs::Full | OutputLogs::NewOnly) {
                    let index = self.index.get(&action).copied().unwrap_or(0);
                    self.tails.push(Tail::new(&action, index, log));
                }
                self.progress.running.push(action);
            }
            Note::Finished {
                action,
                status,
                cached,
                done,
                log,
            } => {
                self.progress.running.retain(|a| *a != action);
                self.progress.done = done;
                self.progress.cached += usize::from(cached);
                self.progress.failed += usize::from(status.is_failure());
                let index = self.index.get(&action).copied().unwrap_or(0);
                // A cached action has no log in this run: its output is the cache's.
                if let Some(at) = self.tails.iter().position(|t| t.action == action) {
                    let mut tail = self.tails.remove(at);
                    let lines = if cached { Vec::new() } else { tail.read(true) };
                    self.emit(&action, index, &lines);
                }
                let replay = match self.mode {
                    OutputLogs::Full => cached,
                    OutputLogs::ErrorsOnly => status.is_failure(),
                    OutputLogs::NewOnly | OutputLogs::None => false,
                };
                if replay && let Some(log) = log {
                    let lines = Tail::new(&action, index, log).read(true);
                    self.emit(&action, index, &lines);
                }
                // On a terminal only what matters stays on screen; elsewhere every end does.
                if !self.terminal || status.is_failure() {
                    let line = format!("{:>9} {action}\n", word(status, cached));
                    self.out.extend_from_slice(line.as_bytes());
                }
            }
            Note::Warning(message) => {
                self.out
                    .extend_from_slice(format!("warning: {message}\n").as_bytes());
            }
        }
    }

    fn show(&mut self, tail: usize, lines: &[String]) {
        let (action, index) = (self.tails[tail].action.clone(), self.tails[tail].index);
        self.emit(&action, index, lines);
    }

    fn emit(&mut self, action: &str, index: usize, lines: &[String]) {
        for line in lines {
            self.out
                .extend_from_slice(self.prefixes.line(action, index, line).as_bytes());
            self.out.push(b'\n');
        }
        self.dirty |= self.terminal && !lines.is_empty();
    }

    /// One write: the waiting lines, then (on a terminal) the progress line drawn afresh.
    fn write(&mut self) {
        if self.out.is_empty() && !self.dirty {
            return;
        }
        let mut bytes = Vec::with_capacity(self.out.len() + 256);
        if self.terminal {
            bytes.extend_from_slice(b"\r\x1b[K");
        }
        bytes.append(&mut self.out);
        if self.terminal {
            let line = render::progress_line(&self.progress, terminal_width());
            bytes.extend_from_slice(line.as_bytes());
        }
        self.dirty = false;
        let mut err = io::stderr().lock();
        let _ = err.write_all(&bytes);
        let _ = err.flush();
    }
}

/// How an ended action is named on its own line.
fn word(status: ActionStatus, cached: bool) -> &'static str {
    match (status, cached) {
        (ActionStatus::Succeeded, true) => "cached",
        (ActionStatus::Succeeded, false) => "ok",
        (ActionStatus::Failed, _) => "FAILED",
        (ActionStatus::TimedOut, _) => "TIMED OUT",
        (ActionStatus::Cancelled, _) => "cancelled",
        (ActionStatus::Interrupted, _) => "interrupted",
        (ActionStatus::Skipped, _) => "skipped",
        // Never the status of an action that ended.
        (ActionStatus::Pending | ActionStatus::Running, _) => "ended",
    }
}

/// The columns of the terminal on stderr, or 80 when it does not say.
#[cfg(unix)]
fn terminal_width() -> usize {
    // SAFETY: `winsize` is plain data, and TIOCGWINSZ only writes one into the value we own.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) };
    if rc == 0 && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

/// The columns of the console window on stderr, or 80 when it does not say.
#[cfg(windows)]
fn terminal_width() -> usize {
    use windows_sys::Win32::System::Console::{
        CONSOLE_SCREEN_BUFFER_INFO, GetConsoleScreenBufferInfo, GetStdHandle, STD_ERROR_HANDLE,
    };
    // SAFETY: the info is plain data that the call only writes into; the handle is the process's
    // own standard error, and a handle that is no console makes the call fail.
    let (rc, info) = unsafe {
        let mut info: CONSOLE_SCREEN_BUFFER_INFO = std::mem::zeroed();
        let rc = GetConsoleScreenBufferInfo(GetStdHandle(STD_ERROR_HANDLE), &mut info);
        (rc, info)
    };
    let columns = i32::from(info.srWindow.Right) - i32::from(info.srWindow.Left) + 1;
    match usize::try_from(columns) {
        Ok(columns) if rc != 0 && columns > 0 => columns,
        _ => 80,
    }
}

/// One log followed from where it was last read.
#[derive(Debug)]
struct Tail {
    action: String,
    index: usize,
    path: PathBuf,
    offset: u64,
    /// The start of a line whose end has not been written yet, at most [`LINE_CAP`] bytes.
    partial: Vec<u8>,
    /// The partial line was longer than that.
    cut: bool,
}

impl Tail {
    fn new(action: &str, index: usize, path: PathBuf) -> Tail {
        Tail {
            action: action.to_owned(),
            index,
            path,
            offset: 0,
            partial: Vec::new(),
            cut: false,
        }
    }

    /// The whole lines the log gained since the last read; with `end`, its last unfinished line
    /// too. A log that is not there yet has no lines.
    fn read(&mut self, end: bool) -> Vec<String> {
        let mut lines = Vec::new();
        let Ok(mut file) = File::open(&self.path) else {
            return lines;
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return lines;
        };
        // Shorter than what was read: a new attempt of a retried action started a new log.
        if len < self.offset {
            self.offset = 0;
            self.partial.clear();
            self.cut = false;
        }
        if len.saturating_sub(self.offset) > LAG {
            match self.skip(&mut file, len - KEEP) {
                Ok(skipped) => lines.push(format!(
                    "… {} not shown (see the log)",
                    render::count(skipped, "line")
                )),
                Err(_) => return lines,
            }
        }
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return lines;
        }
        let mut buffer = vec![0_u8; 64 * 1024];
        let mut file = file.take(len.saturating_sub(self.offset));
        loop {
            let n = match file.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            self.offset += n as u64;
            for piece in buffer[..n].split_inclusive(|&b| b == b'\n') {
                self.extend(piece.strip_suffix(b"\n").unwrap_or(piece));
                if piece.ends_with(b"\n") {
                    lines.push(self.take());
                }
            }
        }
        if end && (!self.partial.is_empty() || self.cut) {
            lines.push(self.take());
        }
        lines
    }

    /// Moves past every line that holds a byte before `to`, and returns how many there were.
    fn skip(&mut self, file: &mut File, to: u64) -> io::Result<usize> {
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buffer = vec![0_u8; 64 * 1024];
        // Each newline passed ends one line not shown (the partly read one included).
        let mut skipped = 0;
        let mut at = self.offset;
        self.partial.clear();
        self.cut = false;
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                // One line of more than `KEEP` bytes, still growing: what comes of it is shown
                // as the cut end of a line.
                self.offset = at;
                self.cut = true;
                return Ok(skipped + 1);
            }
            let chunk = &buffer[..n];
            let from = usize::try_from(to.saturating_sub(at)).map_or(n, |from| from.min(n));
            if let Some(newline) = chunk[from..].iter().position(|&b| b == b'\n') {
                let stop = from + newline + 1;
                self.offset = at + stop as u64;
                return Ok(skipped + newlines(&chunk[..stop]));
            }
            skipped += newlines(chunk);
            at += n as u64;
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        let room = LINE_CAP.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.cut |= bytes.len() > room;
    }

    fn take(&mut self) -> String {
        let bytes = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
        let mut line = String::from_utf8_lossy(bytes).into_owned();
        if self.cut {
            line.push('…');
        }
        self.partial.clear();
        self.cut = false;
        line
    }
}

fn newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("once-live-{}-{name}.log", std::process::id()))
    }

    #[test]
    fn a_line_is_shown_only_once_it_is_whole_unless_the_log_ended() {
        let path = log("whole");
        std::fs::write(&path, "one\r\ntw").unwrap();
        let mut tail = Tail::new("a:b", 0, path.clone());
        assert_eq!(tail.read(false), ["one"]);
        assert!(tail.read(false).is_empty());
        std::fs::write(&path, "one\r\ntwo\nthr").unwrap();
        assert_eq!(tail.read(false), ["two"]);
        assert_eq!(tail.read(true), ["thr"]);
        std::fs::remove_file(&path).unwrap();
        assert!(Tail::new("a:b", 0, path).read(true).is_empty());
    }

    #[test]
    fn a_log_far_ahead_is_skipped_to_its_end_with_a_count() {
        let path = log("behind");
        let text: String = (0..100_000).map(|i| format!("line {i:06}\n")).collect();
        assert!(text.len() as u64 > LAG);
        std::fs::write(&path, &text).unwrap();
        let mut tail = Tail::new("a:b", 0, path.clone());
        let lines = tail.read(true);
        let shown = lines.len() - 1;
        assert_eq!(
            lines[0],
            format!("… {} lines not shown (see the log)", 100_000 - shown)
        );
        assert!(
            shown as u64 * 12 <= KEEP && shown as u64 * 12 > KEEP - 24,
            "{shown}"
        );
        assert_eq!(lines[1], format!("line {:06}", 100_000 - shown));
        assert_eq!(lines.last().unwrap(), "line 099999");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn long_lines_are_cut_and_marked() {
        let path = log("long");
        std::fs::write(&path, format!("{}\nshort\n", "x".repeat(LINE_CAP * 2))).unwrap();
        let lines = Tail::new("a:b", 0, path.clone()).read(true);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], format!("{}…", "x".repeat(LINE_CAP)));
        assert_eq!(lines[1], "short");
        std::fs::remove_file(&path).unwrap();
    }
}
