//! The remote cache: a second level behind `.once/cache/`, on a server that speaks the Remote
//! Execution API's caches (REAPI v2), so that clones on other machines replay what one of them
//! built.
//!
//! On a local miss a worker describes the action (`describe`), asks the server's ActionCache for
//! its `Action` digest, and on a hit downloads every output (and the log) before anything is
//! written: each blob is checked against its SHA-256 by the client, every output path must be a
//! plain relative path that the action's `outputs` globs match, and only then are the bytes put
//! into the local cache and restored from there, so a remote hit is never restored in part nor
//! anywhere a local hit could not be. A success is uploaded (when uploading is on): the `Action`,
//! `Command` and input-tree `Directory` messages, the outputs and the log (as stdout); input
//! files are not, as a cache needs none of them.
//!
//! Nothing a server states is trusted for an allocation: a result whose outputs together exceed
//! `max-result`, or with one over `max-blob` (`[cache]`, `ONCE_REMOTE_MAX_*`, the flags), is a
//! miss, said once per run; the client keeps blobs up to 1 MiB in memory and streams larger ones
//! into staging files of the cache's `cas/` folder (under `.once/`), hashed as they arrive, and
//! the cache moves them into place only once they are whole and correct.
//!
//! Credentials go only to a server the person named (see `config.rs`): one that only the
//! workspace's `once.toml` names gets no headers, and the run says so once.
//!
//! A server that cannot be reached, is slow, or answers wrongly (a corrupt blob, a broken reply)
//! turns the remote cache off for the rest of the run at its first failure, which costs at most
//! one call's timeout; the run goes on locally and the reason is reported once. A wrong instance
//! name or refused credentials found when connecting are errors that stop the run before it
//! starts: a CI that silently stopped writing would be worse. This module must never show a
//! header's value, never restore a blob it has not verified, and never upload a failure.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use globset::GlobSet;
use once_remote::{Bytes, Client, digest_of, reapi};
use serde::{Deserialize, Serialize};

use crate::cache::{ActionResult, Cache};

mod config;
mod download;
pub(crate) mod engine;
use crate::describe::Described;
use crate::fetched::Fetched;
pub use config::{ExecutionConfig, RemoteFlags};
pub(crate) use download::{Downloaded, Limits, Log, download, duration_of};
pub use engine::{Engine, ExecutionReport};

/// Where the remote cache is and how to use it, as resolved from the flags, the environment and
/// the manifest (see [`RemoteConfig::resolve`]).
#[derive(Clone)]
pub struct RemoteConfig {
    /// `grpc://host:port` or `grpcs://host[:port]`.
    pub url: String,
    pub instance: String,
    /// Upload successful results; `false` reads only.
    pub upload: bool,
    /// Sent with every call (credentials): never shown.
    pub headers: Vec<(String, String)>,
    /// Bounds every call, connecting included.
    pub timeout: Duration,
    /// The largest blob fetched, in bytes: a result with a larger one is a miss.
    pub max_blob: u64,
    /// The largest result fetched (its outputs together), in bytes: a larger one is a miss.
    pub max_result: u64,
    /// Said once when the run starts: why headers were not sent (see `config.rs`).
    pub notice: Option<String>,
}

impl fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RemoteConfig")
            .field("url", &self.url)
            .field("instance", &self.instance)
            .field("upload", &self.upload)
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .field("max_blob", &self.max_blob)
            .field("max_result", &self.max_result)
            .field("notice", &self.notice)
            .finish()
    }
}

/// What a run did with the remote cache: part of its report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteReport {
    pub url: String,
    pub instance: String,
    pub upload: bool,
    /// Actions replayed from the remote cache.
    pub hits: usize,
    /// Actions the remote cache did not have.
    pub misses: usize,
    /// Results uploaded.
    pub uploaded: usize,
    /// Calls sent to the server, each one round trip.
    pub round_trips: u64,
    /// What the person should know about the remote cache in this run, one sentence per line:
    /// why it went off (the run went on locally), results too large to fetch, headers not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A remote cache for one run, shared by its workers: a pool of connections (one per worker at
/// most, each a blocking client) and what the run did with it.
pub struct Remote {
    config: RemoteConfig,
    clients: Mutex<Vec<Client>>,
    /// Set once, at the first failure: the remote cache is off for the rest of the run.
    off: OnceLock<String>,
    /// The server refuses `UpdateActionResult`: known from its capabilities.
    read_only_server: bool,
    /// Said when uploads were asked of a server that refuses them.
    read_only_note: Option<String>,
    /// Said the first time a result is too large to fetch.
    too_large: OnceLock<String>,
    hits: AtomicUsize,
    misses: AtomicUsize,
    uploaded: AtomicUsize,
    /// Calls of the clients dropped so far (those in the pool are counted when asked).
    spent: AtomicU64,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote")
            .field("config", &self.config)
            .field("off", &self.off.get())
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// Connects to the server and reads its capabilities. A configuration the server refuses
    /// (an unknown instance, credentials it does not accept, no SHA-256) is an error; a server
    /// that cannot be reached or does not answer in time gives a remote cache that is off from
    /// the start, with the reason as its warning.
    pub fn connect(config: RemoteConfig) -> Result<Remote, once_remote::Error> {
        let mut remote = Remote {
            config,
            clients: Mutex::new(Vec::new()),
            off: OnceLock::new(),
            read_only_server: false,
            read_only_note: None,
            too_large: OnceLock::new(),
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            uploaded: AtomicUsize::new(0),
            spent: AtomicU64::new(0),
        };
        let client = match remote.open() {
            Ok(client) => client,
            Err(error) if fatal(&error) => return Err(error),
            Err(error) => {
                remote.turn_off(&error);
                return Ok(remote);
            }
        };
        match client.capabilities() {
            Ok(capabilities) => {
                remote.read_only_server = !capabilities.action_cache_update_enabled;
                if remote.read_only_server && remote.config.upload {
                    remote.read_only_note = Some(format!(
                        "the remote cache at `{}` does not accept results from clients: nothing will be uploaded",
                        remote.config.url
                    ));
                }
                remote.lock_clients().push(client);
            }
            Err(error) if fatal(&error) => return Err(error),
            Err(error) => {
                remote.spent.fetch_add(client.calls(), Ordering::Relaxed);
                remote.turn_off(&error);
            }
        }
        Ok(remote)
    }

    /// Whether uploads are asked for and possible.
    fn uploads(&self) -> bool {
        self.config.upload && !self.read_only_server
    }

    /// Whether the remote cache is still in use in this run.
    pub(crate) fn is_on(&self) -> bool {
        self.off.get().is_none()
    }

    /// What the run did with the remote cache so far.
    pub fn report(&self) -> RemoteReport {
        let pooled: u64 = self.lock_clients().iter().map(Client::calls).sum();
        let warnings = self.warnings();
        let warning = (!warnings.is_empty()).then(|| warnings.join("\n"));
        RemoteReport {
            url: self.config.url.clone(),
            instance: self.config.instance.clone(),
            upload: self.uploads(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            uploaded: self.uploaded.load(Ordering::Relaxed),
            round_trips: self.spent.load(Ordering::Relaxed) + pooled,
            warning,
        }
    }

    /// Looks `action` up and downloads its outputs and log, all of them or nothing; blobs
    /// over 1 MiB go to staging files in `spill`. `None` for a miss, for a result this client
    /// will not restore (a failure, outputs outside `outputs`, links, or one over the size
    /// limits), and once the remote cache is off.
    pub(crate) fn fetch(
        &self,
        action: &reapi::Digest,
        outputs: &GlobSet,
        spill: &Path,
    ) -> Option<Fetched> {
        let result = self.with_client(|client| client.get_action_result(action))?;
        let Some(result) = result else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let limits = self.limits();
        let downloaded = self.with_client(|client| {
            download(client, &result, outputs, spill, &limits, Log::Stdout)
        })?;
        match downloaded {
            Downloaded::Fetched(fetched) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Some(fetched);
            }
            Downloaded::NotRestorable | Downloaded::Lost => {
                tracing::debug!(action = %action.hash, "remote result not restorable: treated as a miss");
            }
            Downloaded::TooLarge(reason) => self.say_too_large(reason),
            Downloaded::Corrupt(reason) => {
                self.turn_off(&reason);
                return None;
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// The bounds a fetched result must keep.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            url: self.config.url.clone(),
            max_blob: self.config.max_blob,
            max_result: self.config.max_result,
        }
    }

    fn say_too_large(&self, reason: String) {
        if self.too_large.set(reason).is_ok() {
            tracing::debug!("a remote result over the size limits: a miss");
        }
    }

    /// Uploads the result of a successful run: what is missing of its messages, outputs and log,
    /// then its `ActionResult`. Does nothing when uploading is off.
    pub(crate) fn upload(&self, described: &Described, result: &ActionResult, cache: &Cache) {
        if !self.uploads() || !self.is_on() {
            return;
        }
        let mut blobs: Vec<(reapi::Digest, Bytes)> = described
            .blobs
            .values()
            .map(|bytes| (digest_of(bytes), Bytes::from(bytes.clone())))
            .collect();
        let mut files = Vec::with_capacity(result.outputs.len());
        for output in &result.outputs {
            let kept = match &output.text {
                Some(text) => Some(Bytes::from(text.clone().into_bytes())),
                None => read_object(cache.object_path(&output.digest)),
            };
            let Some(bytes) = kept else {
                return;
            };
            let digest = digest_of(&bytes);
            files.push(reapi::OutputFile {
                path: output.path.clone(),
                digest: Some(digest.clone()),
                is_executable: output.executable,
                ..reapi::OutputFile::default()
            });
            blobs.push((digest, bytes));
        }
        let stdout_digest = result
            .log
            .as_deref()
            .and_then(|log| read_object(cache.object_path(log)))
            .map(|bytes| {
                let digest = digest_of(&bytes);
                blobs.push((digest.clone(), bytes));
                digest
            });
        blobs.sort_by(|a, b| a.0.hash.cmp(&b.0.hash));
        blobs.dedup_by(|a, b| a.0 == b.0);
        let completed = SystemTime::now();
        let started = completed - Duration::from_millis(result.duration_ms);
        let action_result = reapi::ActionResult {
            output_files: files,
            exit_code: 0,
            stdout_digest,
            execution_metadata: Some(reapi::ExecutedActionMetadata {
                worker: "once".to_owned(),
                worker_start_timestamp: Some(started.into()),
                worker_completed_timestamp: Some(completed.into()),
                ..reapi::ExecutedActionMetadata::default()
            }),
            ..reapi::ActionResult::default()
        };
        let sent = self.with_client(|client| {
            let digests: Vec<reapi::Digest> = blobs.iter().map(|(d, _)| d.clone()).collect();
            let missing = client.find_missing_blobs(&digests)?;
            let upload: Vec<(reapi::Digest, Bytes)> = blobs
                .iter()
                .filter(|(d, _)| missing.contains(d))
                .cloned()
                .collect();
            if !upload.is_empty() {
                client.batch_update_blobs(&upload)?;
            }
            client.update_action_result(&described.action_digest, &action_result)
        });
        if sent.is_some() {
            self.uploaded.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Runs `call` on a pooled connection (or a new one). The first failure turns the remote
    /// cache off; so does any failure to connect. A server that says it is busy
    /// (`RESOURCE_EXHAUSTED`: too many calls at once, as BuildGrid says past 5 per core) is asked
    /// again a few times, after a short and growing pause, before that counts as a failure.
    fn with_client<T>(&self, call: impl Fn(&Client) -> Result<T, once_remote::Error>) -> Option<T> {
        if !self.is_on() {
            return None;
        }
        let pooled = self.lock_clients().pop();
        let client = match pooled {
            Some(client) => client,
            None => match self.open() {
                Ok(client) => client,
                Err(error) => {
                    self.turn_off(&error);
                    return None;
                }
            },
        };
        let mut result = call(&client);
        for pause_ms in BUSY_PAUSES_MS {
            if !matches!(
                &result,
                Err(once_remote::Error::Status {
                    code: "RESOURCE_EXHAUSTED",
                    ..
                })
            ) {
                break;
            }
            std::thread::sleep(Duration::from_millis(pause_ms));
            result = call(&client);
        }
        match result {
            Ok(value) => {
                self.lock_clients().push(client);
                Some(value)
            }
            Err(error) => {
                self.spent.fetch_add(client.calls(), Ordering::Relaxed);
                self.turn_off(&error);
                None
            }
        }
    }

    fn open(&self) -> Result<Client, once_remote::Error> {
        Client::connect(
            &self.config.url,
            &self.config.instance,
            self.config.headers.clone(),
            self.config.timeout,
        )
    }

    fn turn_off(&self, reason: &dyn fmt::Display) {
        let message = format!("{reason}; going on without the remote cache");
        if self.off.set(message).is_ok() {
            tracing::debug!(reason = %reason, "remote cache off");
        }
    }

    /// What the person should know about the remote cache in this run, each said once, in the
    /// order they became true: headers not sent, that it takes no uploads though they were asked
    /// for, a result too large to fetch, why it went off.
    pub(crate) fn warnings(&self) -> Vec<&str> {
        [
            self.config.notice.as_ref(),
            self.read_only_note.as_ref(),
            self.too_large.get(),
            self.off.get(),
        ]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect()
    }

    fn lock_clients(&self) -> std::sync::MutexGuard<'_, Vec<Client>> {
        // Each update is one push or pop, which leaves the pool whole.
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pauses before asking a busy server again: about a third of a second in all, so a busy
/// server never costs more than a slow one.
const BUSY_PAUSES_MS: [u64; 3] = [20, 60, 180];

/// Errors that mean the configuration is wrong rather than the server unwell: worth stopping for.
fn fatal(error: &once_remote::Error) -> bool {
    use once_remote::Error as E;
    matches!(
        error,
        E::InvalidUrl { .. }
            | E::InvalidHeader { .. }
            | E::WrongInstance { .. }
            | E::Unauthenticated { .. }
            | E::NoSha256 { .. }
    )
}

/// The bytes of a local cache object, `None` (and nothing uploaded for the action) when it
/// cannot be read.
fn read_object(path: PathBuf) -> Option<Bytes> {
    match std::fs::read(&path) {
        Ok(bytes) => Some(Bytes::from(bytes)),
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "cannot read a cache object to upload");
            None
        }
    }
}
