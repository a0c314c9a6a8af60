//! The private channel of an adapter where a child cannot inherit descriptor 3 (Windows): a
//! loopback TCP connection that the adapter opens and proves with a secret token.
//!
//! `once` listens on `127.0.0.1` at a port the system picks and hands the adapter `PORT TOKEN`
//! in [`CHANNEL_ENV`]; the adapter removes the variable from its environment (evaluated code and
//! its subprocesses never see the token), connects, and writes the token as its first line. Any
//! other local process may connect too, so a connection is accepted only with the token, and
//! the wait for it is bounded. The listener is dropped after the one connection: this module
//! must never accept a second adapter on the same port, nor wait without a deadline.

use std::hash::{BuildHasher, RandomState};
use std::io::{self, BufRead, BufReader};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The variable that tells an adapter to connect instead of using descriptor 3; the same name
/// as in `adapters/*`.
pub(crate) const CHANNEL_ENV: &str = "ONCE_EVAL_CHANNEL";

/// How often to look for the adapter's connection while it starts.
const POLL: Duration = Duration::from_millis(5);

/// A listener waiting for one adapter.
#[derive(Debug)]
pub(crate) struct Loopback {
    listener: TcpListener,
    token: String,
}

impl Loopback {
    pub(crate) fn bind() -> io::Result<Loopback> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        Ok(Loopback {
            listener,
            token: token(),
        })
    }

    /// The value of [`CHANNEL_ENV`] for the adapter.
    pub(crate) fn env_value(&self) -> io::Result<String> {
        Ok(format!(
            "{} {}",
            self.listener.local_addr()?.port(),
            self.token
        ))
    }

    /// Waits until `limit` for the adapter's connection, while `alive` says it may still come.
    pub(crate) fn accept(
        self,
        limit: Duration,
        mut alive: impl FnMut() -> bool,
    ) -> io::Result<TcpStream> {
        let end = Instant::now() + limit;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if let Some(stream) = self.proven(stream, end)? {
                        return Ok(stream);
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    if !alive() {
                        return Err(io::Error::other(
                            "the evaluator exited before it connected to `once`",
                        ));
                    }
                    if Instant::now() >= end {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("the evaluator did not connect to `once` within {limit:?}"),
                        ));
                    }
                    std::thread::sleep(POLL);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// The connection, if its first line is the token; read by `end` at the latest.
    fn proven(&self, stream: TcpStream, end: Instant) -> io::Result<Option<TcpStream>> {
        stream.set_nonblocking(false)?;
        let left = end.saturating_duration_since(Instant::now());
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        // Byte by byte, so nothing after the token is consumed from the stream.
        let mut reader = BufReader::with_capacity(1, &stream);
        let mut line = Vec::new();
        let limit = self.token.len() as u64 + 1;
        match io::Read::take(&mut reader, limit).read_until(b'\n', &mut line) {
            Ok(_) if line.strip_suffix(b"\n") == Some(self.token.as_bytes()) => {}
            Ok(_) | Err(_) => {
                tracing::warn!("a local connection to an evaluator's port without its token");
                return Ok(None);
            }
        }
        stream.set_read_timeout(None)?;
        // Requests and replies are single short lines: send each at once.
        stream.set_nodelay(true)?;
        Ok(Some(stream))
    }
}

/// 128 bits no other process can guess: std's hasher keys come from the system's random source.
fn token() -> String {
    let pid = std::process::id();
    let first = RandomState::new().hash_one(pid);
    let second = RandomState::new().hash_one(Instant::now());
    format!("{first:016x}{second:016x}")
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use super::*;
    use crate::process::{NODE_ADAPTER, PYTHON_ADAPTER};
    use crate::reply;

    #[test]
    fn only_a_connection_with_the_token_is_accepted() {
        let loopback = Loopback::bind().unwrap();
        let env = loopback.env_value().unwrap();
        let (port, token) = env.split_once(' ').unwrap();
        assert_eq!(token.len(), 32);
        let port: u16 = port.parse().unwrap();
        let mut stranger = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
        stranger.write_all(b"guess\n").unwrap();
        let mut adapter = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
        adapter
            .write_all(format!("{token}\nafter").as_bytes())
            .unwrap();
        let mut accepted = loopback.accept(Duration::from_secs(10), || true).unwrap();
        let mut rest = [0; 5];
        io::Read::read_exact(&mut accepted, &mut rest).unwrap();
        assert_eq!(&rest, b"after");
    }

    #[test]
    fn the_wait_ends_when_the_adapter_is_gone_or_late() {
        let dead = Loopback::bind().unwrap();
        let error = dead.accept(Duration::from_secs(10), || false).unwrap_err();
        assert!(error.to_string().contains("exited"), "{error}");
        let late = Loopback::bind().unwrap();
        let error = late.accept(Duration::ZERO, || true).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn the_adapters_prove_themselves_and_hide_the_token_from_evaluated_code() {
        for (program, flag, source, code) in [
            (
                "python3",
                "-c",
                PYTHON_ADAPTER,
                "__import__('os').environ.get('ONCE_EVAL_CHANNEL', 'unset')",
            ),
            (
                "node",
                "-e",
                NODE_ADAPTER,
                "process.env.ONCE_EVAL_CHANNEL ?? 'unset'",
            ),
        ] {
            let loopback = Loopback::bind().unwrap();
            let mut child = Command::new(program)
                .arg(flag)
                .arg(source)
                .env(CHANNEL_ENV, loopback.env_value().unwrap())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let accepted = loopback.accept(Duration::from_secs(30), || {
                child.try_wait().is_ok_and(|status| status.is_none())
            });
            let Ok(mut channel) = accepted else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{program}: {accepted:?}");
            };
            channel.write_all(&reply::request(1, code, 1024)).unwrap();
            channel
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let mut line = String::new();
            BufReader::new(&channel).read_line(&mut line).unwrap();
            let reply = reply::parse(&line).unwrap_or_else(|| panic!("{program}: {line}"));
            assert_eq!(reply.id, 1);
            assert_eq!(reply.status, reply::ReplyStatus::Ok, "{program}: {line}");
            assert!(
                reply
                    .value
                    .as_deref()
                    .is_some_and(|value| value.contains("unset")),
                "{program}: {line}"
            );
            // Closing our end ends the adapter.
            drop(channel);
            let end = Instant::now() + Duration::from_secs(30);
            while child.try_wait().unwrap().is_none() {
                assert!(Instant::now() < end, "{program} outlived its channel");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
