//! A fresh PostgreSQL cluster for tests, the database BuildGrid's SQL scheduler needs to serve
//! remote execution: `initdb` in a temporary folder, `postgres` listening on a free loopback port
//! with its unix socket in that folder too, BuildGrid's schema applied (`bgd migrate apply`), and
//! the whole server (its process group) stopped and the folder removed on drop. Shared by the
//! client's tests and `once`'s, which include this file by path; it must never need more than the
//! standard library and `libc`, nor leave a process running after a test.
//!
//! PostgreSQL refuses to run as root: when the tests are root (CI, the project's machines), the
//! cluster is made and run by `nobody` instead, and its folder is given to that user.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `postgres`, stopped on drop.
pub struct Postgres {
    child: Child,
    dir: PathBuf,
    /// `postgresql+psycopg2://bgd@127.0.0.1:PORT/postgres`, as BuildGrid's `!sql-connection`
    /// takes it.
    pub url: String,
}

impl Postgres {
    /// A new cluster with BuildGrid's schema in it; `bgd` is the BuildGrid that will use it.
    pub fn start(bgd: &Path) -> Postgres {
        let bin = postgres_bin();
        let dir = fresh_dir();
        let user = unprivileged_user();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("gives the folder away");
        }
        let data = dir.join("data");
        let init = as_user(Command::new(bin.join("initdb")), user)
            .arg("-D")
            .arg(&data)
            .args(["-U", "bgd", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", bin.join("initdb").display()));
        assert!(
            init.status.success(),
            "initdb failed:\n{}{}",
            String::from_utf8_lossy(&init.stdout),
            String::from_utf8_lossy(&init.stderr)
        );
        let port = free_port();
        let log = std::fs::File::create(dir.join("postgres.log")).expect("creates the log");
        let child = as_user(Command::new(bin.join("postgres")), user)
            .arg("-D")
            .arg(&data)
            .args(["-c", "listen_addresses=127.0.0.1", "-p", &port.to_string()])
            .arg("-k")
            .arg(&dir)
            // A test database: durability buys nothing and costs seconds.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a second handle on the log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", bin.join("postgres").display()));
        let mut server = Postgres {
            child,
            dir,
            url: format!("postgresql+psycopg2://bgd@127.0.0.1:{port}/postgres"),
        };
        server.migrate(bgd, port);
        server
    }

    /// Applies BuildGrid's schema, retrying while the server is still starting up; bounded, and
    /// fails early if postgres exits.
    fn migrate(&mut self, bgd: &Path, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("polls postgres") {
                panic!("postgres exited with {status}:\n{}", self.log());
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                let out = Command::new(bgd)
                    .args(["migrate", "apply", &self.url])
                    .stdin(Stdio::null())
                    .output()
                    .expect("runs `bgd migrate apply`");
                if out.status.success() {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "`bgd migrate apply` kept failing for 60 s:\n{}\npostgres:\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not listen on port {port} within 60 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What postgres printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
    }

    /// Whether the postmaster is still running.
    #[allow(dead_code)] // Only the harness's own test asks.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The postmaster's process id.
    #[allow(dead_code)] // Only the harness's own test asks.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let group = i32::try_from(self.child.id()).expect("a pid fits in i32");
        // SAFETY: signals the process group this harness created; no memory is involved.
        // SIGQUIT is postgres's immediate shutdown: its backends go with it, nothing is flushed.
        unsafe { libc::kill(-group, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; whatever did not stop in time is killed.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `command`, run as `user` (uid, gid) when one is given.
fn as_user(mut command: Command, user: Option<(u32, u32)>) -> Command {
    if let Some((uid, gid)) = user {
        // The standard library drops root's supplementary groups before it changes the user.
        command.uid(uid).gid(gid);
    }
    command
}

/// `nobody` (65534) when the tests run as root, which PostgreSQL refuses to be; else no change.
fn unprivileged_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    (unsafe { libc::geteuid() } == 0).then_some((65534, 65534))
}

/// The folder of `initdb` and `postgres`: `ONCE_PG_BIN`, else where `initdb` on `PATH` really
/// lives (Debian links it from `/usr/lib/postgresql/N/bin`), else the newest Debian install.
fn postgres_bin() -> PathBuf {
    if let Some(dir) = std::env::var_os("ONCE_PG_BIN") {
        return PathBuf::from(dir);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("initdb"))
            .find(|initdb| initdb.is_file())
    });
    if let Some(initdb) = on_path.and_then(|p| std::fs::canonicalize(p).ok())
        && let Some(dir) = initdb.parent()
        && dir.join("postgres").is_file()
    {
        return dir.to_path_buf();
    }
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("postgres").is_file())
        .collect();
    debian.sort();
    debian.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed (no `initdb` on `PATH` nor under `/usr/lib/postgresql`): \
             install it with `scripts/install-test-deps` (or set `ONCE_PG_BIN` to its `bin` folder)"
        )
    })
}

fn fresh_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "once-remote-pg-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates the cluster's folder");
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("binds a loopback port")
        .port()
}
