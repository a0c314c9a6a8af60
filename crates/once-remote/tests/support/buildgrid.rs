//! A real BuildGrid (`bgd`), the reference REAPI server, for tests: each one starts its own on a
//! free loopback port with a disk CAS in a fresh folder, and stops it (its whole process group)
//! when dropped. Shared by the client's tests and `once`'s, which include this file by path;
//! it must never need more than the standard library and `libc`. BuildGrid missing is a failure
//! that says how to install it.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `bgd server start`, stopped on drop.
pub struct BuildGrid {
    child: Child,
    dir: PathBuf,
    /// `grpc://127.0.0.1:PORT`.
    pub url: String,
    /// For another scheme (`grpcs://`) or host on the same port.
    #[allow(dead_code)] // Only once-remote's own tests speak TLS to it.
    pub port: u16,
}

impl BuildGrid {
    pub fn start() -> BuildGrid {
        BuildGrid::start_with("  method: none", None, None)
    }

    /// Serves remote execution too: the Execution, Operations and Bots services on an SQL
    /// scheduler in `database` (see `postgres.rs`), which must outlive the server. A bot that
    /// stays silent for `keepalive` seconds loses its session and its job goes to another.
    #[allow(dead_code)] // Only the tests of remote execution start one.
    pub fn start_execution(database: &str, keepalive: u32) -> BuildGrid {
        BuildGrid::start_with("  method: none", None, Some((database, keepalive)))
    }

    /// Asks for JSON Web Tokens signed with a secret that no test knows.
    pub fn start_with_jwt() -> BuildGrid {
        BuildGrid::start_with(
            "  method: jwt\n  algorithm: hs256\n  secret: SECRET_FILE",
            None,
            None,
        )
    }

    /// Serves TLS only, with the certificate `tests/tls/{name}.pem` of once-remote (signed by
    /// its test CA).
    #[allow(dead_code)] // Only once-remote's own tests speak TLS to it.
    pub fn start_tls(name: &str) -> BuildGrid {
        BuildGrid::start_with("  method: none", Some(name), None)
    }

    fn start_with(
        authorization: &str,
        certificate: Option<&str>,
        execution: Option<(&str, u32)>,
    ) -> BuildGrid {
        let bgd = bgd_path();
        let dir = fresh_dir();
        let port = free_port();
        let secret = dir.join("jwt-secret");
        std::fs::write(&secret, "a secret no client has").expect("writes the secret");
        let authorization = authorization.replace("SECRET_FILE", &secret.display().to_string());
        let channel = match certificate {
            None => "    insecure-mode: true".to_owned(),
            Some(name) => format!(
                "    insecure-mode: false\n    credentials:\n      tls-server-key: {}\n      \
                 tls-server-cert: {}",
                tls_file(&format!("{name}-key.pem")).display(),
                tls_file(&format!("{name}.pem")).display(),
            ),
        };
        // The scheduler polls its database every tenth of a second so that a test's job is
        // picked up at once, and reaps a silent bot's session every second.
        let (scheduler, execution_services) = match execution {
            None => (String::new(), ""),
            Some((database, keepalive)) => (
                format!(
                    r#"connections:
  - !sql-connection &sql
    connection-string: {database}
    pool-size: 10
schedulers:
  - !sql-scheduler &scheduler
    storage: *cas
    sql: *sql
    action-cache: *ac
    bot-session-keepalive-timeout: {keepalive}
    session-expiry-timer-interval: 1
    poll-interval: 0.1
    bot-poll-interval: 0.1
"#
                ),
                "      - !execution\n        scheduler: *scheduler\n      - !bots\n        scheduler: *scheduler\n",
            ),
        };
        let config = format!(
            r#"server:
  - !channel
    address: "127.0.0.1:{port}"
{channel}
authorization:
{authorization}
storages:
  - !disk-storage &cas
    path: {cas}
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 1000
    allow-updates: true
    cache-failed-actions: false
{scheduler}instances:
  - name: ""
    services:
      - !action-cache
        cache: *ac
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
{execution_services}"#,
            cas = dir.join("cas").display()
        );
        std::fs::write(dir.join("bgd.yml"), config).expect("writes the config");
        let log = std::fs::File::create(dir.join("bgd.log")).expect("creates the log");
        let child = Command::new(&bgd)
            .args(["server", "start"])
            .arg(dir.join("bgd.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a second handle on the log"))
            .stderr(log)
            // Its own process group, so that drop stops bgd and anything it started.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", bgd.display()));
        let mut server = BuildGrid {
            child,
            dir,
            url: format!("grpc://127.0.0.1:{port}"),
            port,
        };
        server.wait_for_port(port);
        server
    }

    /// Polls the port until bgd listens; bounded, and fails early if bgd exits.
    fn wait_for_port(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            if let Some(status) = self.child.try_wait().expect("polls bgd") {
                panic!("bgd exited with {status} before listening:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "bgd did not listen on port {port} within 90 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What bgd printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("bgd.log")).unwrap_or_default()
    }

    /// The file where the disk CAS keeps the blob whose SHA-256 is `hash` (hex).
    pub fn cas_file(&self, hash: &str) -> PathBuf {
        let (dir, name) = hash.split_at(2);
        find_file(&self.dir.join("cas"), dir, name)
            .unwrap_or_else(|| panic!("no CAS file for {hash} under {}", self.dir.display()))
    }

    /// Sends `signal` to bgd and everything it started (its process group): `SIGSTOP` makes a
    /// server that accepts connections and never answers.
    pub fn signal(&self, signal: i32) {
        let group = i32::try_from(self.child.id()).expect("a pid fits in i32");
        // SAFETY: signals the process group this harness created; no memory is involved.
        unsafe { libc::kill(-group, signal) };
    }

    /// Kills bgd and everything it started, and reaps it.
    pub fn stop(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for BuildGrid {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A file of once-remote's `tests/tls` (the test CA and certificates), from either test crate.
#[allow(dead_code)] // Only once-remote's own tests speak TLS to it.
pub fn tls_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../once-remote/tests/tls")
        .join(name)
}

fn find_file(root: &Path, dir: &str, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, dir, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name)
            && path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|d| d == dir)
        {
            return Some(path);
        }
    }
    None
}

/// BuildGrid's `bgd`: `ONCE_BGD`, else the venv `scripts/install-test-deps` makes.
pub fn bgd_path() -> PathBuf {
    let path = match std::env::var_os("ONCE_BGD") {
        Some(p) => PathBuf::from(p),
        // Both crates that include this file sit in `crates/`.
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/interop/buildgrid-venv/bin/bgd"),
    };
    assert!(
        path.is_file(),
        "BuildGrid's `bgd` is not at `{}`: install it with `scripts/install-test-deps` \
         (or set `ONCE_BGD` to a `bgd`)",
        path.display()
    );
    path
}

fn fresh_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "once-remote-bgd-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates the server's folder");
    dir
}

/// A loopback port that was free a moment ago (and has nothing listening on it now).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("binds a loopback port")
        .port()
}
