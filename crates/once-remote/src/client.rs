//! The blocking client: one current-thread tokio runtime and one HTTP/2 connection per `Client`,
//! every call bounded by the client's timeout. It turns gRPC outcomes into `Error`s that name the
//! server and the call; it must never hand out a blob it has not verified, nor show a header's value,
//! nor size an allocation by what a server states: blobs stream into a `BlobSink` (memory up to
//! 1 MiB, a file above), batch answers are checked against what was asked, and every answer is
//! decoded within `Bounds`.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderName, HeaderValue};
use prost::Message;
use tokio::time::Instant;

use crate::blob::{Blob, BlobFile, BlobSink, IN_MEMORY, SinkError};
use crate::digest::{show, verify};
use crate::error::{Error, code_name};
use crate::grpc::{self, Bounds, CallError};
use crate::proto::google::bytestream as bs;
use crate::reapi;
use crate::tls::Tls;

const AC: &str = "/build.bazel.remote.execution.v2.ActionCache/";
const CAS: &str = "/build.bazel.remote.execution.v2.ContentAddressableStorage/";
const BYTESTREAM: &str = "/google.bytestream.ByteStream/";

/// The batch limit used until the server states its own, and the cap on any server's limit: the
/// usual 4 MiB gRPC message limit, less room for the envelope.
const DEFAULT_MAX_BATCH: usize = 4 * 1024 * 1024 - 64 * 1024;
/// The size of one ByteStream WriteRequest's data: well below every server's message limit.
const WRITE_CHUNK: usize = 1024 * 1024;
/// The most a unary answer may weigh: a full batch read with room for its envelope.
const UNARY_LIMIT: usize = 2 * DEFAULT_MAX_BATCH;
/// What a batch entry costs beyond its data (digest, status, field tags), counted generously.
const ENTRY_OVERHEAD: usize = 160;
/// The most digests one call names: what the server may answer about them (a missing digest,
/// a blob) stays within [`MAX_FIELDS`].
const MAX_DIGESTS_PER_CALL: usize = 10_000;
/// The most fields one answer may decode into: some 30 MB in memory at worst (an empty entry of
/// a repeated field costs two bytes on the wire, up to 150 in memory).
const MAX_FIELDS: usize = 200_000;
/// The bounds of a unary answer.
pub(crate) const UNARY: Bounds = Bounds {
    message: UNARY_LIMIT,
    total: UNARY_LIMIT as u64,
    fields: MAX_FIELDS,
    data: DATA_FIELDS,
};
/// The fields of bytes in the answers the client reads, by field numbers from the top: a batch
/// entry's `data`; a result's `stdout_raw`, `stderr_raw` and an output file's `contents`. One
/// list serves every answer: a path that means something else in another message only counts
/// less there, and no other answer nests that deep under those numbers.
const DATA_FIELDS: &[&[u32]] = &[&[1, 2], &[5], &[7], &[2, 5]];
/// The bounds of a ByteStream `Read` message: its one field is the blob's bytes.
pub(crate) const READ_MESSAGE: usize = UNARY_LIMIT;
/// Verified blobs of batches kept in memory by one `read_blobs`; later ones go to files.
const MEMORY_BUDGET: u64 = 16 * 1024 * 1024;

/// The most lookups one [`Client::get_action_results`] sends.
pub const MAX_LOOKUPS: usize = 64;
/// The most one answer of a set of lookups may weigh: an `ActionResult` of some thousand output
/// files, or a small inlined log. A larger one is asked for alone.
pub const LOOKUP_LIMIT: usize = 256 * 1024;
/// The bounds of one answer of a set of lookups.
const LOOKUP: Bounds = Bounds {
    message: LOOKUP_LIMIT,
    total: LOOKUP_LIMIT as u64,
    fields: MAX_FIELDS,
    data: DATA_FIELDS,
};

/// One answer of [`Client::get_action_results`].
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// The server has a result for the action (not yet checked for restoring).
    Hit(Box<reapi::ActionResult>),
    /// The server has none.
    Miss,
    /// Too large for a set, or broken: ask for it alone, with a lone lookup's bounds and checks.
    Alone,
}

/// What the server's `GetCapabilities` said that the client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The largest batch request, in bytes, the client will send (the server's, capped).
    pub max_batch_total_size_bytes: usize,
    /// Whether the server accepts `UpdateActionResult` from clients.
    pub action_cache_update_enabled: bool,
    /// Whether the server runs actions (`Execution.Execute`), not only caches their results.
    pub execution_enabled: bool,
}

/// A connection to one instance of a REAPI server's caches. Blocking: each call runs the client's
/// own runtime until the answer or the timeout.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    url: String,
    endpoint: Endpoint,
    /// For `grpcs://` only: the trust roots and the name the server's certificate must carry.
    tls: Option<Tls>,
    instance: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
    /// `None` after a transport error: the next call opens a new connection.
    connection: RefCell<Option<SendRequest<Bytes>>>,
    max_batch: Cell<Option<usize>>,
    /// Calls sent so far, each one round trip (a stream's messages travel in one call).
    calls: Cell<u64>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header names only: their values are credentials.
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Client")
            .field("url", &self.url)
            .field("instance", &self.instance)
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to `url` within `timeout`, which also bounds every later call: `grpc://host:port`
    /// in plaintext, or `grpcs://host[:port]` in TLS (port 443 unless given) trusting the system's
    /// CAs, or those of `SSL_CERT_FILE`/`SSL_CERT_DIR` when set. `headers` go with every call
    /// (e.g. `authorization`).
    pub fn connect(
        url: &str,
        instance: &str,
        headers: Vec<(String, String)>,
        timeout: Duration,
    ) -> Result<Client, Error> {
        let endpoint = parse_url(url)?;
        let headers = headers
            .into_iter()
            .map(|(name, value)| {
                let invalid = |reason| Error::InvalidHeader {
                    name: name.clone(),
                    reason,
                };
                let n = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
                    .map_err(|_| invalid("not a valid header name"))?;
                let mut v = HeaderValue::from_str(&value)
                    .map_err(|_| invalid("its value has characters a header cannot carry"))?;
                v.set_sensitive(true);
                Ok((n, v))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::CannotReach {
                url: url.to_owned(),
                detail: format!("cannot start the I/O runtime: {e}"),
            })?;
        let tls = if endpoint.tls {
            let tls = Tls::new(&endpoint.host).map_err(|detail| Error::CannotReach {
                url: url.to_owned(),
                detail,
            })?;
            Some(tls)
        } else {
            None
        };
        let client = Client {
            runtime,
            url: url.to_owned(),
            endpoint,
            tls,
            instance: instance.to_owned(),
            headers,
            timeout,
            connection: RefCell::new(None),
            max_batch: Cell::new(None),
            calls: Cell::new(0),
        };
        client.connection(Instant::now() + timeout)?;
        Ok(client)
    }

    /// How many calls (round trips) this client has sent.
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }

    /// The server's capabilities for this instance; an error unless it offers SHA256.
    pub fn capabilities(&self) -> Result<Capabilities, Error> {
        let request = reapi::GetCapabilitiesRequest {
            instance_name: self.instance.clone(),
        };
        let caps: reapi::ServerCapabilities = self.unary(
            "/build.bazel.remote.execution.v2.Capabilities/GetCapabilities",
            "GetCapabilities",
            &request,
        )?;
        let capabilities = accept_capabilities(caps).ok_or_else(|| Error::NoSha256 {
            url: self.url.clone(),
        })?;
        self.max_batch
            .set(Some(capabilities.max_batch_total_size_bytes));
        Ok(capabilities)
    }

    /// The cached result of the action whose digest is `action`, `None` when there is none.
    pub fn get_action_result(
        &self,
        action: &reapi::Digest,
    ) -> Result<Option<reapi::ActionResult>, Error> {
        let request = reapi::GetActionResultRequest {
            instance_name: self.instance.clone(),
            action_digest: Some(action.clone()),
            ..Default::default()
        };
        match self.unary(&format!("{AC}GetActionResult"), "GetActionResult", &request) {
            Ok(result) => Ok(Some(result)),
            Err(Error::Status {
                code: "NOT_FOUND", ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The cached results of `actions`, in the same order, with up to `in_flight` lookups at
    /// once on the one connection (each its own HTTP/2 stream), so that a set of lookups costs
    /// about one round trip per `in_flight` of them instead of one each. At most
    /// [`MAX_LOOKUPS`] actions per call. The set shares one deadline, the client's timeout.
    ///
    /// Each answer is bounded tighter than a lone lookup's ([`LOOKUP_LIMIT`]), so the set holds
    /// at most `MAX_LOOKUPS` times that whatever the server says; an answer over it, or one that
    /// breaks the protocol, is [`Lookup::Alone`]: the caller asks for it by
    /// [`Client::get_action_result`], which bounds and checks it as ever. Any other failure
    /// (a status other than `NOT_FOUND`, a broken connection) fails the whole set.
    pub fn get_action_results(
        &self,
        actions: &[reapi::Digest],
        in_flight: usize,
    ) -> Result<Vec<Lookup>, Error> {
        const NAME: &str = "GetActionResult";
        if actions.len() > MAX_LOOKUPS {
            return Err(self.protocol(
                NAME,
                &format!("{} lookups in one set, over {MAX_LOOKUPS}", actions.len()),
            ));
        }
        let deadline = Instant::now() + self.timeout;
        let send = self.connection(deadline)?;
        let path = format!("{AC}GetActionResult");
        let frames = actions
            .iter()
            .map(|action| {
                grpc::frame(&reapi::GetActionResultRequest {
                    instance_name: self.instance.clone(),
                    action_digest: Some(action.clone()),
                    inline_stdout: true,
                    ..Default::default()
                })
                .map_err(|e| self.call_error(NAME, e))
            })
            .collect::<Result<Vec<Bytes>, Error>>()?;
        self.calls.set(self.calls.get() + actions.len() as u64);
        let lookup = |frame: Bytes| {
            let send = &send;
            let path = &path;
            async move {
                let mut responses: Vec<reapi::ActionResult> = Vec::new();
                grpc::call(
                    send,
                    &self.endpoint.origin,
                    path,
                    &self.headers,
                    deadline.saturating_duration_since(Instant::now()),
                    vec![frame],
                    LOOKUP,
                    |r| one_more(&mut responses, r),
                )
                .await?;
                responses
                    .pop()
                    .ok_or_else(|| CallError::Protocol("no message for a unary call".into()))
            }
        };
        let answers = grpc::all(frames.into_iter().map(lookup), in_flight.max(1));
        let answers = match self
            .runtime
            .block_on(async { tokio::time::timeout_at(deadline, answers).await })
        {
            Ok(answers) => answers,
            Err(_) => {
                return Err(Error::DeadlineExceeded {
                    url: self.url.clone(),
                    call: NAME,
                    timeout_ms: self.timeout.as_millis(),
                });
            }
        };
        let mut lookups = Vec::with_capacity(answers.len());
        for answer in answers {
            lookups.push(match answer {
                Ok(result) => Lookup::Hit(Box::new(result)),
                Err(CallError::Protocol(_)) => Lookup::Alone,
                Err(e) => {
                    if matches!(e, CallError::Transport(_)) {
                        *self.connection.borrow_mut() = None;
                    }
                    match self.call_error(NAME, e) {
                        Error::Status {
                            code: "NOT_FOUND", ..
                        } => Lookup::Miss,
                        error => return Err(error),
                    }
                }
            });
        }
        Ok(lookups)
    }

    /// Stores `result` as the result of `action`; returns what the server stored.
    pub fn update_action_result(
        &self,
        action: &reapi::Digest,
        result: &reapi::ActionResult,
    ) -> Result<reapi::ActionResult, Error> {
        let request = reapi::UpdateActionResultRequest {
            instance_name: self.instance.clone(),
            action_digest: Some(action.clone()),
            action_result: Some(result.clone()),
            ..Default::default()
        };
        self.unary(
            &format!("{AC}UpdateActionResult"),
            "UpdateActionResult",
            &request,
        )
    }

    /// The digests among `digests` that the server does not have, in as many calls as its batch
    /// limit needs.
    pub fn find_missing_blobs(
        &self,
        digests: &[reapi::Digest],
    ) -> Result<Vec<reapi::Digest>, Error> {
        let limit = self.max_batch()?;
        let mut missing = Vec::new();
        let per_call = (limit / MAX_DIGESTS_PER_CALL).max(1);
        for batch in batches(digests, limit, |d| (d.encoded_len() + 8).max(per_call)) {
            let request = reapi::FindMissingBlobsRequest {
                instance_name: self.instance.clone(),
                blob_digests: batch.to_vec(),
                ..Default::default()
            };
            let response: reapi::FindMissingBlobsResponse = self.unary(
                &format!("{CAS}FindMissingBlobs"),
                "FindMissingBlobs",
                &request,
            )?;
            missing.extend(
                missing_among(batch, response)
                    .map_err(|e| self.call_error("FindMissingBlobs", e))?,
            );
        }
        Ok(missing)
    }

    /// Uploads `blobs` (each with its digest, which the caller vouches for): in batches up to the
    /// server's limit, and over ByteStream for a blob larger than that limit.
    pub fn batch_update_blobs(&self, blobs: &[(reapi::Digest, Bytes)]) -> Result<(), Error> {
        let limit = self.max_batch()?;
        let (small, large): (Vec<_>, Vec<_>) = blobs
            .iter()
            .partition(|(_, data)| data.len() + ENTRY_OVERHEAD <= limit);
        for (digest, data) in large {
            self.write_blob(digest, data.clone())?;
        }
        for batch in batches(&small, limit, |(_, data)| data.len() + ENTRY_OVERHEAD) {
            let request = reapi::BatchUpdateBlobsRequest {
                instance_name: self.instance.clone(),
                requests: batch
                    .iter()
                    .map(
                        |(digest, data)| reapi::batch_update_blobs_request::Request {
                            digest: Some(digest.clone()),
                            data: data.to_vec(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            };
            let response: reapi::BatchUpdateBlobsResponse = self.unary(
                &format!("{CAS}BatchUpdateBlobs"),
                "BatchUpdateBlobs",
                &request,
            )?;
            for entry in response.responses {
                let status = entry.status.unwrap_or_default();
                if status.code != 0 {
                    let digest = entry.digest.as_ref().map(show).unwrap_or_default();
                    return Err(self.status_error(
                        "BatchUpdateBlobs",
                        status.code,
                        format!("blob `{digest}`: {}", status.message),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Downloads `digests`, in the same order: `None` for a blob the server does not have. Every
    /// blob is checked against its digest; a mismatch is an error and its bytes are dropped.
    /// Blobs up to 1 MiB come in batches and stay in memory, up to 16 MiB in all; the others are
    /// written to staging files in `spill` (which must exist) as they arrive, over ByteStream for
    /// the larger ones. Nothing is allocated from a stated size.
    pub fn read_blobs(
        &self,
        digests: &[reapi::Digest],
        spill: &Path,
    ) -> Result<Vec<Option<Blob>>, Error> {
        let limit = self.max_batch()?;
        let mut found: Vec<Option<Blob>> = Vec::new();
        found.resize_with(digests.len(), || None);
        let mut indexed: Vec<(usize, &reapi::Digest, usize)> = Vec::new();
        for (i, digest) in digests.iter().enumerate() {
            let size = u64::try_from(digest.size_bytes).map_err(|_| {
                self.protocol(
                    "BatchReadBlobs",
                    &format!("blob `{}` has a negative size", show(digest)),
                )
            })?;
            match usize::try_from(size) {
                Ok(size) if size <= IN_MEMORY as usize && size + ENTRY_OVERHEAD <= limit => {
                    indexed.push((i, digest, size));
                }
                _ => found[i] = self.read_blob(digest, spill)?,
            }
        }
        let per_call = (limit / MAX_DIGESTS_PER_CALL).max(1);
        let mut held = 0u64;
        for batch in batches(&indexed, limit, |(_, _, size)| {
            (size + ENTRY_OVERHEAD).max(per_call)
        }) {
            let asked: Vec<reapi::Digest> = batch.iter().map(|(_, d, _)| (*d).clone()).collect();
            let request = reapi::BatchReadBlobsRequest {
                instance_name: self.instance.clone(),
                digests: asked.clone(),
                ..Default::default()
            };
            let response: reapi::BatchReadBlobsResponse =
                self.unary(&format!("{CAS}BatchReadBlobs"), "BatchReadBlobs", &request)?;
            let blobs = accept_batch(&asked, response).map_err(|e| match e {
                BatchError::Call(e) => self.call_error("BatchReadBlobs", e),
                BatchError::Mismatch { digest, actual } => self.mismatch(&digest, &actual),
            })?;
            for (position, data) in blobs {
                let (i, _, _) = batch[position];
                held += data.len() as u64;
                found[i] = Some(if held <= MEMORY_BUDGET {
                    Blob::Memory(Bytes::from(data))
                } else {
                    let file = BlobFile::write(spill, &data).map_err(|e| Error::Spill {
                        folder: spill.display().to_string(),
                        detail: e.to_string(),
                    })?;
                    Blob::File(file)
                });
            }
        }
        Ok(found)
    }

    /// Uploads one blob over ByteStream in chunks. A server that already has the blob may answer
    /// before the last chunk; that is a success.
    pub fn write_blob(&self, digest: &reapi::Digest, data: Bytes) -> Result<(), Error> {
        let resource = format!(
            "{}uploads/{}/blobs/{}",
            self.resource_prefix(),
            upload_id(),
            show(digest)
        );
        let mut requests = Vec::new();
        let mut offset = 0usize;
        let mut rest = data;
        loop {
            let chunk = rest.split_to(rest.len().min(WRITE_CHUNK));
            let finish = rest.is_empty();
            let request = bs::WriteRequest {
                // Only the first request names the resource.
                resource_name: if offset == 0 {
                    resource.clone()
                } else {
                    String::new()
                },
                write_offset: offset as i64,
                finish_write: finish,
                data: chunk.to_vec(),
            };
            offset += chunk.len();
            requests.push(grpc::frame(&request).map_err(|e| self.call_error("Write", e))?);
            if finish {
                break;
            }
        }
        let mut responses: Vec<bs::WriteResponse> = Vec::new();
        self.call(
            &format!("{BYTESTREAM}Write"),
            "Write",
            requests,
            UNARY,
            |r| one_more(&mut responses, r),
        )?;
        let committed = responses.first().map(|r| r.committed_size);
        // A server that had the blob may report its size or -1 (REAPI v2.1+); both are success.
        match committed {
            Some(size) if size == digest.size_bytes || size == -1 => Ok(()),
            Some(size) => Err(self.protocol(
                "Write",
                &format!(
                    "committed {size} of {} bytes of blob `{}`",
                    digest.size_bytes,
                    show(digest)
                ),
            )),
            None => Err(self.protocol("Write", "no WriteResponse")),
        }
    }

    /// Downloads one blob over ByteStream, `None` when the server does not have it: hashed as it
    /// arrives, refused at the first byte past its stated size, kept in memory up to 1 MiB and
    /// in a staging file of `spill` above, and handed out only when whole and correct.
    pub fn read_blob(&self, digest: &reapi::Digest, spill: &Path) -> Result<Option<Blob>, Error> {
        let mut sink = BlobSink::new(digest, spill)
            .map_err(|e| self.sink_error("Read", spill, &show(digest), e))?;
        let request = bs::ReadRequest {
            resource_name: format!("{}blobs/{}", self.resource_prefix(), show(digest)),
            read_offset: 0,
            read_limit: 0,
        };
        let frame = grpc::frame(&request).map_err(|e| self.call_error("Read", e))?;
        let size = u64::try_from(digest.size_bytes).unwrap_or(0);
        let bounds = read_bounds(size);
        let mut refused: Option<SinkError> = None;
        let outcome = self.call(
            &format!("{BYTESTREAM}Read"),
            "Read",
            vec![frame],
            bounds,
            |r: bs::ReadResponse| {
                sink.write(&r.data).map_err(|e| {
                    refused = Some(e);
                    CallError::Protocol("the blob was refused".into())
                })
            },
        );
        if let Some(e) = refused {
            return Err(self.sink_error("Read", spill, &sink.expected(), e));
        }
        match outcome {
            Ok(()) => {}
            Err(Error::Status {
                code: "NOT_FOUND", ..
            }) => return Ok(None),
            Err(e) => return Err(e),
        }
        let expected = sink.expected();
        sink.finish()
            .map(Some)
            .map_err(|e| self.sink_error("Read", spill, &expected, e))
    }

    fn sink_error(&self, name: &'static str, spill: &Path, digest: &str, e: SinkError) -> Error {
        match e {
            SinkError::NegativeSize => {
                self.protocol(name, &format!("blob `{digest}` has a negative size"))
            }
            SinkError::TooLong { expected } => Error::BlobTooLong {
                url: self.url.clone(),
                digest: digest.to_owned(),
                size: expected,
            },
            SinkError::Mismatch { actual } => Error::DigestMismatch {
                url: self.url.clone(),
                digest: digest.to_owned(),
                actual: show(&actual),
            },
            SinkError::Io(e) => Error::Spill {
                folder: spill.display().to_string(),
                detail: e.to_string(),
            },
        }
    }

    fn resource_prefix(&self) -> String {
        if self.instance.is_empty() {
            String::new()
        } else {
            format!("{}/", self.instance)
        }
    }

    fn mismatch(&self, digest: &reapi::Digest, actual: &reapi::Digest) -> Error {
        Error::DigestMismatch {
            url: self.url.clone(),
            digest: show(digest),
            actual: show(actual),
        }
    }

    fn max_batch(&self) -> Result<usize, Error> {
        match self.max_batch.get() {
            Some(max) => Ok(max),
            None => Ok(self.capabilities()?.max_batch_total_size_bytes),
        }
    }

    /// The live connection, or a new one opened before `deadline`.
    fn connection(&self, deadline: Instant) -> Result<SendRequest<Bytes>, Error> {
        if let Some(send) = self.connection.borrow().as_ref() {
            return Ok(send.clone());
        }
        let connect = grpc::connect(&self.endpoint.address, self.tls.as_ref());
        let send = match self
            .runtime
            .block_on(async { tokio::time::timeout_at(deadline, connect).await })
        {
            Ok(Ok(send)) => send,
            Ok(Err(detail)) => {
                return Err(Error::CannotReach {
                    url: self.url.clone(),
                    detail,
                });
            }
            Err(_) => {
                return Err(Error::CannotReach {
                    url: self.url.clone(),
                    detail: format!("no connection within {} ms", self.timeout.as_millis()),
                });
            }
        };
        *self.connection.borrow_mut() = Some(send.clone());
        Ok(send)
    }

    pub(crate) fn unary<Q: Message, R: Message + Default>(
        &self,
        path: &str,
        name: &'static str,
        request: &Q,
    ) -> Result<R, Error> {
        self.unary_within(path, name, request, self.timeout)
    }

    /// A unary call bounded by `timeout` instead of the client's: for the calls a server may
    /// hold on purpose (a bot's long poll for work).
    pub(crate) fn unary_within<Q: Message, R: Message + Default>(
        &self,
        path: &str,
        name: &'static str,
        request: &Q,
        timeout: Duration,
    ) -> Result<R, Error> {
        let frame = grpc::frame(request).map_err(|e| self.call_error(name, e))?;
        let mut responses: Vec<R> = Vec::new();
        self.call_within(path, name, vec![frame], UNARY, timeout, |r| {
            one_more(&mut responses, r)
        })?;
        match responses.pop() {
            Some(response) => Ok(response),
            None => Err(self.protocol(name, "no message for a unary call")),
        }
    }

    fn call<R: Message + Default>(
        &self,
        path: &str,
        name: &'static str,
        requests: Vec<Bytes>,
        bounds: Bounds,
        on_message: impl FnMut(R) -> Result<(), CallError>,
    ) -> Result<(), Error> {
        self.call_within(path, name, requests, bounds, self.timeout, on_message)
    }

    /// `call`, bounded by `timeout` (a new connection included) instead of the client's.
    pub(crate) fn call_within<R: Message + Default>(
        &self,
        path: &str,
        name: &'static str,
        requests: Vec<Bytes>,
        bounds: Bounds,
        timeout: Duration,
        on_message: impl FnMut(R) -> Result<(), CallError>,
    ) -> Result<(), Error> {
        // One deadline for the whole call, a new connection included.
        let deadline = Instant::now() + timeout;
        let send = self.connection(deadline)?;
        self.calls.set(self.calls.get() + 1);
        let call = grpc::call(
            &send,
            &self.endpoint.origin,
            path,
            &self.headers,
            deadline.saturating_duration_since(Instant::now()),
            requests,
            bounds,
            on_message,
        );
        match self
            .runtime
            .block_on(async { tokio::time::timeout_at(deadline, call).await })
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                if matches!(e, CallError::Transport(_)) {
                    *self.connection.borrow_mut() = None;
                }
                Err(self.call_error(name, e))
            }
            Err(_) => Err(Error::DeadlineExceeded {
                url: self.url.clone(),
                call: name,
                timeout_ms: timeout.as_millis(),
            }),
        }
    }

    /// The instance every call names.
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    pub(crate) fn call_error(&self, name: &'static str, e: CallError) -> Error {
        match e {
            CallError::Transport(detail) => Error::CannotReach {
                url: self.url.clone(),
                detail,
            },
            CallError::Status { code, message } => self.status_error(name, code, message),
            CallError::Protocol(detail) => self.protocol(name, &detail),
        }
    }

    fn status_error(&self, name: &'static str, code: i32, message: String) -> Error {
        let url = self.url.clone();
        match code_name(code) {
            "DEADLINE_EXCEEDED" => Error::DeadlineExceeded {
                url,
                call: name,
                timeout_ms: self.timeout.as_millis(),
            },
            code @ ("UNAUTHENTICATED" | "PERMISSION_DENIED") => Error::Unauthenticated {
                url,
                code,
                message,
                headers: self.headers.iter().map(|(n, _)| n.to_string()).collect(),
            },
            // The API has no code of its own for an unknown instance: BuildGrid answers
            // INVALID_ARGUMENT "Invalid instance name". NOT_FOUND is left alone: it is how a
            // cache says it has no entry.
            "INVALID_ARGUMENT" if message.to_ascii_lowercase().contains("instance") => {
                Error::WrongInstance {
                    url,
                    instance: self.instance.clone(),
                    message,
                }
            }
            code => Error::Status {
                url,
                call: name,
                code,
                message,
            },
        }
    }

    pub(crate) fn protocol(&self, name: &'static str, detail: &str) -> Error {
        Error::Protocol {
            url: self.url.clone(),
            call: name,
            detail: detail.to_owned(),
        }
    }
}

/// The bounds of a ByteStream `Read` of a blob of `size` bytes: the blob, plus a generous
/// allowance for the envelope of each message that carries it.
pub(crate) fn read_bounds(size: u64) -> Bounds {
    Bounds {
        message: READ_MESSAGE,
        total: size.saturating_add(size / 8).saturating_add(64 * 1024),
        fields: 1_000,
        data: &[&[10]],
    }
}

/// What the client takes from a server's capabilities, `None` unless it offers SHA256.
pub(crate) fn accept_capabilities(caps: reapi::ServerCapabilities) -> Option<Capabilities> {
    let cache = caps.cache_capabilities.unwrap_or_default();
    let sha256 = reapi::digest_function::Value::Sha256 as i32;
    if !cache.digest_functions.contains(&sha256) {
        return None;
    }
    // 0 means "no limit" in the API; the message limit still applies. A negative one is none.
    let server = usize::try_from(cache.max_batch_total_size_bytes).unwrap_or(0);
    let max = if server == 0 {
        DEFAULT_MAX_BATCH
    } else {
        server.min(DEFAULT_MAX_BATCH)
    };
    Some(Capabilities {
        max_batch_total_size_bytes: max,
        action_cache_update_enabled: cache
            .action_cache_update_capabilities
            .is_some_and(|c| c.update_enabled),
        execution_enabled: caps.execution_capabilities.is_some_and(|c| c.exec_enabled),
    })
}

/// Keeps the one message of a unary answer; a second is a protocol error at once.
fn one_more<R>(responses: &mut Vec<R>, response: R) -> Result<(), CallError> {
    if responses.is_empty() {
        responses.push(response);
        Ok(())
    } else {
        Err(CallError::Protocol(
            "more than one message for a unary call".into(),
        ))
    }
}

/// Why a batch answer was refused.
#[derive(Debug)]
pub(crate) enum BatchError {
    Call(CallError),
    Mismatch {
        digest: reapi::Digest,
        actual: reapi::Digest,
    },
}

/// The blobs of a `BatchReadBlobs` answer to `asked`, each with its position in `asked`, once
/// the answer proves sound: no more entries than were asked for, each about a digest that was
/// asked for and only once, each blob matching its digest. A blob the server does not have
/// (`NOT_FOUND`) is left out.
pub(crate) fn accept_batch(
    asked: &[reapi::Digest],
    response: reapi::BatchReadBlobsResponse,
) -> Result<Vec<(usize, Vec<u8>)>, BatchError> {
    let protocol = |detail: &str| BatchError::Call(CallError::Protocol(detail.to_owned()));
    if response.responses.len() > asked.len() {
        return Err(protocol(&format!(
            "{} blobs in the answer, {} asked for",
            response.responses.len(),
            asked.len()
        )));
    }
    let positions: HashMap<(&str, i64), usize> = asked
        .iter()
        .enumerate()
        .map(|(i, d)| ((d.hash.as_str(), d.size_bytes), i))
        .collect();
    let mut answered = vec![false; asked.len()];
    let mut blobs = Vec::new();
    for entry in response.responses {
        let Some(digest) = entry.digest else {
            return Err(protocol("an answer without a digest"));
        };
        // Only a digest that was asked for gets the bytes: a server cannot slip in others.
        let Some(&position) = positions.get(&(digest.hash.as_str(), digest.size_bytes)) else {
            return Err(protocol(&format!(
                "blob `{}`, which was not asked for",
                show(&digest)
            )));
        };
        if std::mem::replace(&mut answered[position], true) {
            return Err(protocol(&format!("blob `{}` twice", show(&digest))));
        }
        let status = entry.status.unwrap_or_default();
        if status.code == 5 {
            continue;
        }
        if status.code != 0 {
            return Err(BatchError::Call(CallError::Status {
                code: status.code,
                message: format!("blob `{}`: {}", show(&digest), status.message),
            }));
        }
        if let Err(actual) = verify(&digest, &entry.data) {
            return Err(BatchError::Mismatch { digest, actual });
        }
        blobs.push((position, entry.data));
    }
    Ok(blobs)
}

/// The digests a `FindMissingBlobs` answer says are missing, each of them one that was asked
/// about: a server cannot make the client upload what it never meant to.
pub(crate) fn missing_among(
    asked: &[reapi::Digest],
    response: reapi::FindMissingBlobsResponse,
) -> Result<Vec<reapi::Digest>, CallError> {
    if response.missing_blob_digests.len() > asked.len() {
        return Err(CallError::Protocol(format!(
            "{} digests missing of {} asked about",
            response.missing_blob_digests.len(),
            asked.len()
        )));
    }
    let asked: HashSet<(&str, i64)> = asked
        .iter()
        .map(|d| (d.hash.as_str(), d.size_bytes))
        .collect();
    for digest in &response.missing_blob_digests {
        if !asked.contains(&(digest.hash.as_str(), digest.size_bytes)) {
            return Err(CallError::Protocol(format!(
                "digest `{}` missing, which was not asked about",
                show(digest)
            )));
        }
    }
    Ok(response.missing_blob_digests)
}

/// Where a remote cache's URL says the server is.
#[derive(Debug)]
struct Endpoint {
    /// `grpcs://`: TLS.
    tls: bool,
    /// The host as a certificate names it: a DNS name or an IP address, without brackets.
    host: String,
    /// `host:port` to open a TCP connection to (an IPv6 address in brackets).
    address: String,
    /// The scheme and authority of every request: `:scheme` and `:authority`, without the port
    /// when it is HTTPS's 443.
    origin: String,
}

const EXPECTED_URL: &str = "expected `grpc://host:port` or `grpcs://host[:port]`";

/// The `Endpoint` of `grpc://host:port` or `grpcs://host[:port]` (port 443 by default).
fn parse_url(url: &str) -> Result<Endpoint, Error> {
    let invalid = |reason| Error::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let (tls, rest) = if let Some(rest) = url.strip_prefix("grpc://") {
        (false, rest)
    } else if let Some(rest) = url.strip_prefix("grpcs://") {
        (true, rest)
    } else if url.starts_with("https://") {
        return Err(invalid("gRPC over TLS is written `grpcs://host[:port]`"));
    } else if url.starts_with("http://") {
        return Err(invalid("plaintext gRPC is written `grpc://host:port`"));
    } else {
        return Err(invalid(EXPECTED_URL));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    // `[v6]:port` or `[v6]`, else `host:port` or `host`.
    let (host, bracketed, port) = if let Some(inner) = authority.strip_prefix('[') {
        let (host, after) = inner.split_once(']').ok_or_else(|| invalid(EXPECTED_URL))?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| invalid(EXPECTED_URL))?,
            ),
        };
        (host, format!("[{host}]"), port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, host.to_owned(), Some(port)),
            None => (authority, authority.to_owned(), None),
        }
    };
    // A colon belongs in a host only inside brackets (IPv6).
    let in_brackets = authority.starts_with('[');
    let odd = |c: char| c.is_whitespace() || "/?#@[]".contains(c) || (c == ':' && !in_brackets);
    if host.is_empty() || host.contains(odd) {
        return Err(invalid(EXPECTED_URL));
    }
    let port = match port {
        Some(port) => port.parse::<u16>().map_err(|_| invalid(EXPECTED_URL))?,
        None if tls => 443,
        None => {
            return Err(invalid(
                "plaintext gRPC has no default port: `grpc://host:port`",
            ));
        }
    };
    let origin = match (tls, port) {
        (true, 443) => format!("https://{bracketed}"),
        (true, _) => format!("https://{bracketed}:{port}"),
        (false, _) => format!("http://{bracketed}:{port}"),
    };
    Ok(Endpoint {
        tls,
        host: host.to_owned(),
        address: format!("{bracketed}:{port}"),
        origin,
    })
}

/// Splits `items` into runs whose summed `cost` stays within `limit` (an item over the limit
/// travels alone).
fn batches<T>(items: &[T], limit: usize, cost: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut total = 0usize;
    for (i, item) in items.iter().enumerate() {
        let c = cost(item);
        if i > start && total.saturating_add(c) > limit {
            out.push(&items[start..i]);
            start = i;
            total = 0;
        }
        total = total.saturating_add(c);
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// A fresh id for an upload's resource name, unique enough without a uuid crate: the standard
/// library's random hasher keys mixed with the time and the process.
fn upload_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut words = [0u64; 2];
    for (i, word) in words.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u32(std::process::id());
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        *word = h.finish();
    }
    let [a, b] = words;
    // Shaped like a version-4 uuid, which servers expect.
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        ((b >> 48) & 0x3fff) | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_grpc_with_a_port_or_grpcs() {
        let plain = parse_url("grpc://127.0.0.1:8980").unwrap();
        assert_eq!(
            (plain.tls, plain.host.as_str(), plain.address.as_str()),
            (false, "127.0.0.1", "127.0.0.1:8980")
        );
        assert_eq!(plain.origin, "http://127.0.0.1:8980");
        assert_eq!(parse_url("grpc://cache:1/").unwrap().address, "cache:1");
        // TLS on 443 unless told: the authority leaves the default port out, as HTTPS does.
        let tls = parse_url("grpcs://cache.example.com").unwrap();
        assert_eq!(
            (tls.tls, tls.host.as_str(), tls.address.as_str()),
            (true, "cache.example.com", "cache.example.com:443")
        );
        assert_eq!(tls.origin, "https://cache.example.com");
        let tls = parse_url("grpcs://cache.example.com:8443/").unwrap();
        assert_eq!(tls.address, "cache.example.com:8443");
        assert_eq!(tls.origin, "https://cache.example.com:8443");
        // An IPv6 address: brackets in the address, none in the name the certificate must carry.
        let v6 = parse_url("grpcs://[::1]:9443").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.address.as_str()),
            ("::1", "[::1]:9443")
        );
        for bad in [
            "grpc://h",
            "grpc://:1",
            "grpc://h:x",
            "grpcs://",
            "grpcs://:443",
            "grpcs://h:x",
            "grpcs://h:1/path",
            "cache:1",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
        for (http, instead) in [
            ("http://h:1", "`grpc://host:port`"),
            ("https://h", "`grpcs://host[:port]`"),
        ] {
            let text = parse_url(http).unwrap_err().to_string();
            assert!(text.contains(instead), "{text}");
        }
    }

    #[test]
    fn batches_stay_within_the_limit_and_keep_every_item() {
        let items = [3usize, 4, 2, 9, 1, 1];
        let got = batches(&items, 6, |n| *n);
        assert_eq!(got, vec![&[3][..], &[4, 2], &[9], &[1, 1]]);
        assert!(batches(&[] as &[usize], 6, |n| *n).is_empty());
    }

    #[test]
    fn upload_ids_are_uuid_shaped_and_differ() {
        let (a, b) = (upload_id(), upload_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
    }

    #[test]
    fn a_server_that_never_answers_costs_one_timeout() {
        // Accepts the connection and reads nothing: a hung server, as far as the client can tell.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("grpc://{}", listener.local_addr().unwrap());
        let held = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
        let timeout = Duration::from_millis(300);
        let client = Client::connect(&url, "", vec![], timeout).unwrap();
        let started = std::time::Instant::now();
        let err = client
            .get_action_result(&crate::digest_of(b"x"))
            .unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(
                err,
                Error::DeadlineExceeded {
                    call: "GetActionResult",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(took >= timeout && took < timeout * 10, "{took:?}");
        assert!(
            err.to_string()
                .contains("did not answer `GetActionResult` within 300 ms")
        );
        drop(held.join());
    }

    #[test]
    fn a_server_silent_in_the_tls_handshake_costs_one_timeout() {
        // Accepts the connection and never answers the ClientHello.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("grpcs://{}", listener.local_addr().unwrap());
        let held = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
        let timeout = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let err = Client::connect(&url, "", vec![], timeout).unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, Error::CannotReach { .. }), "{err:?}");
        assert!(took < timeout * 10, "{took:?}");
        assert!(
            err.to_string().contains("no connection within 300 ms"),
            "{err}"
        );
        drop(held.join());
    }

    #[test]
    fn debug_never_shows_header_values() {
        let client = Client::connect(
            "grpc://127.0.0.1:1",
            "",
            vec![("Authorization".into(), "Bearer s3cret".into())],
            Duration::from_millis(200),
        );
        // Port 1 is closed: the error names the server, never the header.
        let text = format!(
            "{:?} {}",
            client,
            client
                .as_ref()
                .map(|_| String::new())
                .unwrap_or_else(|e| e.to_string())
        );
        assert!(!text.contains("s3cret"), "{text}");
        assert!(
            text.contains("cannot reach the remote cache at `grpc://127.0.0.1:1`"),
            "{text}"
        );
    }
}
