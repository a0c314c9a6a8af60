//! Draining a child's stdout and stderr: one thread per pipe, whole lines to the log file in
//! arrival order, and a bounded tail of the last lines in memory.
//!
//! The log is written through: what one read from a pipe brought is in the file before the next
//! read (one `write` per read, whole lines only, a partial line held back until its end or
//! [`CHUNK`] bytes), so a reader of a running command's log sees its output so far.
//!
//! The file is created with the first byte of output: a command that prints nothing leaves none,
//! and readers take a missing log for an empty one. A build of thousands of quiet commands thus
//! creates thousands fewer files, and creating a file is most of what a cached action costs the
//! file system (on ext4 without a journal, just after a cache was wiped, far more than writing).
//!
//! The threads read as fast as the child writes, so a child never blocks on a full pipe, and
//! memory stays bounded whatever it writes: one read buffer and one partial line per stream, and
//! at most `tail_lines` lines of at most [`LINE_CAP`] bytes. A failing log write must never stop
//! the draining (the child would block); it is reported once and the rest is discarded.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// The longest line kept in the tail, in bytes; a longer one is cut and ends with `…`.
pub const LINE_CAP: usize = 4096;

/// One read from a pipe; also the longest partial line held back from the log.
const CHUNK: usize = 64 * 1024;

/// The output of one run as it is being captured.
#[derive(Debug)]
pub(crate) struct Capture {
    sink: Arc<Mutex<Sink>>,
    done: Receiver<()>,
    streams: usize,
}

impl Capture {
    /// Starts one thread per pipe. On error, the threads already started end when their pipe
    /// closes.
    pub(crate) fn start(
        log: PathBuf,
        tail_lines: usize,
        pipes: [Box<dyn Read + Send>; 2],
    ) -> io::Result<Capture> {
        let sink = Arc::new(Mutex::new(Sink {
            log: Log {
                path: log,
                file: None,
            },
            log_bytes: 0,
            log_failed: false,
            tail: Tail::new(tail_lines),
        }));
        let (done_tx, done) = mpsc::channel();
        let mut streams = 0;
        for (pipe, name) in pipes
            .into_iter()
            .zip(["once-exec-stdout", "once-exec-stderr"])
        {
            let sink = Arc::clone(&sink);
            let done_tx = done_tx.clone();
            thread::Builder::new().name(name.into()).spawn(move || {
                pump(pipe, &sink);
                let _ = done_tx.send(());
            })?;
            streams += 1;
        }
        Ok(Capture {
            sink,
            done,
            streams,
        })
    }

    /// Waits up to `bound` for both pipes to close, then returns the tail and the bytes logged.
    ///
    /// The bound matters only when a process outside the group holds a pipe open; its thread is
    /// then left to finish on its own, and what it captures later reaches the log but not the tail.
    pub(crate) fn finish(self, bound: Duration) -> (Vec<String>, u64) {
        let end = Instant::now() + bound;
        for _ in 0..self.streams {
            if self
                .done
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .is_err()
            {
                tracing::warn!(
                    "a pipe stayed open after its process group was killed; not waiting for it"
                );
                break;
            }
        }
        let mut sink = lock(&self.sink);
        if let Err(error) = sink.log.flush() {
            tracing::warn!(%error, "cannot flush the log");
        }
        (sink.tail.lines.iter().cloned().collect(), sink.log_bytes)
    }
}

fn lock(sink: &Mutex<Sink>) -> MutexGuard<'_, Sink> {
    // A panic while holding the lock leaves at worst a partial line; the capture goes on.
    sink.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads one pipe to its end.
fn pump(mut pipe: impl Read, sink: &Mutex<Sink>) {
    let mut buffer = vec![0_u8; CHUNK];
    let mut line = PartialLine::default();
    loop {
        match pipe.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                let mut sink = lock(sink);
                sink.accept(&mut line, &buffer[..n]);
                sink.flush();
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!(%error, "cannot read from a child's pipe");
                break;
            }
        }
    }
    lock(sink).end_stream(&mut line);
}

/// The log file, created when there is a first byte to write.
#[derive(Debug)]
struct Log {
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

impl Log {
    /// The file to write to, created (or emptied) now if it is not open yet.
    fn file(&mut self) -> io::Result<&mut BufWriter<File>> {
        let file = match self.file.take() {
            Some(file) => file,
            None => BufWriter::with_capacity(CHUNK, File::create(&self.path)?),
        };
        Ok(self.file.insert(file))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// Where both streams meet: the log file and the tail.
#[derive(Debug)]
struct Sink {
    log: Log,
    log_bytes: u64,
    log_failed: bool,
    tail: Tail,
}

/// The current, unfinished line of one stream.
#[derive(Debug, Default)]
struct PartialLine {
    /// Bytes not yet written to the log, so the other stream cannot split the line there.
    unlogged: Vec<u8>,
    /// The first [`LINE_CAP`] bytes of the line, for the tail.
    head: Vec<u8>,
    /// The line was longer than `head`.
    cut: bool,
}

impl PartialLine {
    fn extend_head(&mut self, bytes: &[u8]) {
        let room = LINE_CAP - self.head.len();
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.cut |= bytes.len() > room;
    }

    fn take(&mut self) -> String {
        let line = render(&self.head, self.cut);
        self.head.clear();
        self.cut = false;
        line
    }
}

impl Sink {
    fn accept(&mut self, line: &mut PartialLine, chunk: &[u8]) {
        let Some(last) = chunk.iter().rposition(|&b| b == b'\n') else {
            line.unlogged.extend_from_slice(chunk);
            if line.unlogged.len() >= CHUNK {
                self.write(&line.unlogged);
                line.unlogged.clear();
            }
            line.extend_head(chunk);
            return;
        };
        self.write(&line.unlogged);
        line.unlogged.clear();
        self.write(&chunk[..=last]);
        line.unlogged.extend_from_slice(&chunk[last + 1..]);

        // Only the last `capacity` lines of the chunk can survive in the tail, so walk back from
        // the end and stop there: megabytes of short lines cost one scan, not one String each.
        let complete = &chunk[..last];
        let mut newest = Vec::new();
        let mut end = complete.len();
        let mut oldest = None;
        while newest.len() < self.tail.capacity {
            match complete[..end].iter().rposition(|&b| b == b'\n') {
                Some(i) => {
                    newest.push(&complete[i + 1..end]);
                    end = i;
                }
                None => {
                    oldest = Some(&complete[..end]);
                    break;
                }
            }
        }
        if let Some(oldest) = oldest {
            line.extend_head(oldest);
            self.tail.push(line.take());
        }
        line.head.clear();
        line.cut = false;
        for text in newest.into_iter().rev() {
            self.tail.push(render(text, false));
        }
        line.extend_head(&chunk[last + 1..]);
    }

    fn end_stream(&mut self, line: &mut PartialLine) {
        self.write(&line.unlogged);
        line.unlogged.clear();
        if !line.head.is_empty() || line.cut {
            self.tail.push(line.take());
        }
    }

    /// Hands what the buffer holds to the file, so readers see it now.
    fn flush(&mut self) {
        if self.log_failed {
            return;
        }
        if let Err(error) = self.log.flush() {
            tracing::warn!(%error, "cannot write the log; the rest of the output is discarded");
            self.log_failed = true;
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.log_failed || bytes.is_empty() {
            return;
        }
        match self.log.file().and_then(|file| file.write_all(bytes)) {
            Ok(()) => self.log_bytes += bytes.len() as u64,
            Err(error) => {
                tracing::warn!(%error, "cannot write the log; the rest of the output is discarded");
                self.log_failed = true;
            }
        }
    }
}

/// A line as the tail shows it: at most [`LINE_CAP`] bytes, without a carriage return, lossy UTF-8.
fn render(bytes: &[u8], cut: bool) -> String {
    let cut = cut || bytes.len() > LINE_CAP;
    let bytes = &bytes[..bytes.len().min(LINE_CAP)];
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if cut {
        text.push('…');
    }
    text
}

/// The last lines, oldest first.
#[derive(Debug)]
struct Tail {
    lines: VecDeque<String>,
    capacity: usize,
}

impl Tail {
    fn new(capacity: usize) -> Tail {
        // Reserve lazily: a huge `tail_lines` must not allocate before there is output.
        Tail {
            lines: VecDeque::new(),
            capacity,
        }
    }

    fn push(&mut self, line: String) {
        if self.capacity == 0 {
            return;
        }
        if self.lines.len() == self.capacity {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds chunks of one stream through a sink whose log is a temporary file.
    fn feed(capacity: usize, chunks: &[&[u8]]) -> (Vec<String>, Vec<u8>) {
        let path = std::env::temp_dir().join(format!(
            "once-exec-capture-{}-{}.log",
            std::process::id(),
            rand_id()
        ));
        let mut sink = Sink {
            log: Log {
                path: path.clone(),
                file: None,
            },
            log_bytes: 0,
            log_failed: false,
            tail: Tail::new(capacity),
        };
        let mut line = PartialLine::default();
        for chunk in chunks {
            sink.accept(&mut line, chunk);
        }
        sink.end_stream(&mut line);
        sink.log.flush().unwrap();
        // No output, no file.
        let log = std::fs::read(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert_eq!(sink.log_bytes, log.len() as u64);
        (sink.tail.lines.into_iter().collect(), log)
    }

    fn rand_id() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    #[test]
    fn lines_split_across_chunks_are_joined() {
        let (tail, log) = feed(10, &[b"ab", b"c\nde", b"f\n", b"g"]);
        assert_eq!(tail, ["abc", "def", "g"]);
        assert_eq!(log, b"abc\ndef\ng");
    }

    #[test]
    fn only_the_last_lines_are_kept() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let (tail, log) = feed(3, &[text.as_bytes()]);
        assert_eq!(tail, ["line 98", "line 99", "line 100"]);
        assert_eq!(log, text.as_bytes());
        let (tail, _) = feed(3, &[b"a\n", b"b\nc\nd", b"e\n"]);
        assert_eq!(tail, ["b", "c", "de"]);
    }

    #[test]
    fn long_lines_are_cut_and_marked() {
        let long = vec![b'x'; LINE_CAP * 3];
        let (tail, log) = feed(2, &[&long[..10], &long[10..], b"\r\nshort\r\n"]);
        assert_eq!(tail.len(), 2);
        assert_eq!(tail[0].len(), LINE_CAP + '…'.len_utf8());
        assert!(tail[0].ends_with('…'));
        assert_eq!(tail[1], "short");
        assert_eq!(log.len(), LINE_CAP * 3 + 9);
    }

    #[test]
    fn empty_lines_and_zero_capacity() {
        let (tail, _) = feed(5, &[b"\n\na\n\n"]);
        assert_eq!(tail, ["", "", "a", ""]);
        let (tail, log) = feed(0, &[b"a\nb\n"]);
        assert!(tail.is_empty());
        assert_eq!(log, b"a\nb\n");
    }

    #[test]
    fn the_log_holds_each_whole_line_while_the_pipe_is_still_open() {
        let path = std::env::temp_dir().join(format!(
            "once-exec-through-{}-{}.log",
            std::process::id(),
            rand_id()
        ));
        let (reader, mut writer) = std::io::pipe().unwrap();
        let (quiet, quiet_writer) = std::io::pipe().unwrap();
        let capture = Capture::start(path.clone(), 5, [Box::new(reader), Box::new(quiet)]).unwrap();
        writer.write_all(b"first\nhalf").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read(&path).unwrap_or_default() != b"first\n" {
            assert!(Instant::now() < deadline, "the line never reached the log");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop((writer, quiet_writer));
        let (tail, bytes) = capture.finish(Duration::from_secs(10));
        assert_eq!(tail, ["first", "half"]);
        assert_eq!(bytes, 10);
        assert_eq!(std::fs::read(&path).unwrap(), b"first\nhalf");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_command_that_prints_nothing_leaves_no_log_file() {
        let path = std::env::temp_dir().join(format!(
            "once-exec-quiet-{}-{}.log",
            std::process::id(),
            rand_id()
        ));
        let (out, out_writer) = std::io::pipe().unwrap();
        let (err, err_writer) = std::io::pipe().unwrap();
        let capture = Capture::start(path.clone(), 5, [Box::new(out), Box::new(err)]).unwrap();
        drop((out_writer, err_writer));
        let (tail, bytes) = capture.finish(Duration::from_secs(10));
        assert!(tail.is_empty());
        assert_eq!(bytes, 0);
        assert!(!path.exists(), "a quiet command created {}", path.display());
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let (tail, _) = feed(1, &[b"a\xffb\n"]);
        assert_eq!(tail, ["a\u{fffd}b"]);
    }
}
