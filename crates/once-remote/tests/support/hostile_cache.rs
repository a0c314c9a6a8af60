//! A hostile REAPI cache for tests: an HTTP/2 gRPC server on `127.0.0.1` (port picked by the OS)
//! that answers as honestly or as badly as its `Plan` says: results that claim absurd sizes,
//! blobs that go on forever or carry the wrong bytes, length prefixes of 4 GiB, batch answers
//! with blobs nobody asked for. It records the path and headers of every call it gets. It runs on
//! a thread of its own and stops, with every connection, when dropped; it never reaches beyond
//! loopback.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, Response};
use once_remote::{bytestream, frame, reapi};
use prost::Message;

/// How the server answers `ByteStream.Read`.
#[derive(Debug, Clone)]
pub enum ReadPlan {
    /// The blob's bytes, in 64 KiB messages.
    Blob(Bytes),
    /// `total` bytes of `fill` (`None`: forever), in 64 KiB messages.
    Fill { fill: u8, total: Option<u64> },
    /// A message header stating `len` bytes, then garbage forever.
    Prefix(u32),
}

/// How the server answers `BatchReadBlobs`.
#[derive(Debug, Clone)]
pub enum BatchPlan {
    /// The blobs it has, by digest; the others are `NOT_FOUND`.
    Honest(Vec<Bytes>),
    /// Every blob asked for (from `blobs`), then one more nobody asked for.
    Extra(Vec<Bytes>),
    /// Every blob asked for (from `blobs`), each twice.
    Twice(Vec<Bytes>),
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The answer to every `GetActionResult`; `None`: `NOT_FOUND`.
    pub result: Option<reapi::ActionResult>,
    pub read: ReadPlan,
    pub batch: BatchPlan,
}

impl Plan {
    /// A cache that has nothing.
    pub fn empty() -> Plan {
        Plan {
            result: None,
            read: ReadPlan::Blob(Bytes::new()),
            batch: BatchPlan::Honest(Vec::new()),
        }
    }
}

/// One call the server got.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `/package.Service/Method`.
    pub path: String,
    /// Every header but the pseudo-headers, names lowercase.
    pub headers: Vec<(String, String)>,
}

/// The running server; stops when dropped.
pub struct HostileCache {
    address: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HostileCache {
    pub fn start(plan: Plan) -> HostileCache {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let address = listener.local_addr().expect("an address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (seen, stop, plan) = (seen.clone(), stop.clone(), Arc::new(plan));
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("tokio");
                    loop {
                        let Ok((tcp, _)) = listener.accept().await else {
                            continue;
                        };
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        let _ = tcp.set_nodelay(true);
                        tokio::spawn(serve(tcp, plan.clone(), seen.clone()));
                    }
                });
                // Dropping the runtime drops every connection's task.
            })
        };
        HostileCache {
            address,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// `grpc://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("grpc://{}", self.address)
    }

    /// The calls so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("not poisoned").clone()
    }
}

impl Drop for HostileCache {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which sees the flag and ends.
        let _ = std::net::TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(tcp: tokio::net::TcpStream, plan: Arc<Plan>, seen: Arc<Mutex<Vec<Seen>>>) {
    let Ok(mut connection) = h2::server::handshake(tcp).await else {
        return;
    };
    while let Some(Ok((request, respond))) = connection.accept().await {
        tokio::spawn(answer(request, respond, plan.clone(), seen.clone()));
    }
}

type Respond = h2::server::SendResponse<Bytes>;

async fn answer(
    request: Request<h2::RecvStream>,
    mut respond: Respond,
    plan: Arc<Plan>,
    seen: Arc<Mutex<Vec<Seen>>>,
) {
    let path = request.uri().path().to_owned();
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    seen.lock().expect("not poisoned").push(Seen {
        path: path.clone(),
        headers,
    });
    let mut body = request.into_body();
    let mut received = BytesMut::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        received.extend_from_slice(&chunk);
    }
    let message = received
        .get(5..)
        .map(Bytes::copy_from_slice)
        .unwrap_or_default();
    let method = path.rsplit('/').next().unwrap_or_default();
    match method {
        "GetCapabilities" => {
            let caps = reapi::ServerCapabilities {
                cache_capabilities: Some(reapi::CacheCapabilities {
                    digest_functions: vec![reapi::digest_function::Value::Sha256 as i32],
                    action_cache_update_capabilities: Some(reapi::ActionCacheUpdateCapabilities {
                        update_enabled: true,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            };
            ok(respond, vec![frame(&caps)]).await;
        }
        "GetActionResult" => match &plan.result {
            Some(result) => ok(respond, vec![frame(result)]).await,
            None => status(&mut respond, 5, "no such result"),
        },
        "UpdateActionResult" => {
            let request = reapi::UpdateActionResultRequest::decode(message).unwrap_or_default();
            let result = request.action_result.unwrap_or_default();
            ok(respond, vec![frame(&result)]).await;
        }
        "FindMissingBlobs" => {
            let request = reapi::FindMissingBlobsRequest::decode(message).unwrap_or_default();
            let answer = reapi::FindMissingBlobsResponse {
                missing_blob_digests: request.blob_digests,
            };
            ok(respond, vec![frame(&answer)]).await;
        }
        "BatchUpdateBlobs" => {
            let request = reapi::BatchUpdateBlobsRequest::decode(message).unwrap_or_default();
            let answer = reapi::BatchUpdateBlobsResponse {
                responses: request
                    .requests
                    .into_iter()
                    .map(|r| reapi::batch_update_blobs_response::Response {
                        digest: r.digest,
                        status: Some(Default::default()),
                    })
                    .collect(),
            };
            ok(respond, vec![frame(&answer)]).await;
        }
        "BatchReadBlobs" => {
            let request = reapi::BatchReadBlobsRequest::decode(message).unwrap_or_default();
            ok(respond, vec![frame(&batch(&plan.batch, &request.digests))]).await;
        }
        "Read" => read(respond, &plan.read).await,
        "Write" => {
            let mut committed = 0i64;
            let mut rest = received.freeze();
            while rest.len() >= 5 {
                let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
                let Some(message) = rest.get(5..5 + len) else {
                    break;
                };
                let request = bytestream::WriteRequest::decode(message).unwrap_or_default();
                committed += request.data.len() as i64;
                rest = rest.slice(5 + len..);
            }
            let answer = bytestream::WriteResponse {
                committed_size: committed,
            };
            ok(respond, vec![frame(&answer)]).await;
        }
        _ => status(&mut respond, 12, "not implemented here"),
    }
}

fn batch(plan: &BatchPlan, asked: &[reapi::Digest]) -> reapi::BatchReadBlobsResponse {
    let entry = |data: &Bytes| reapi::batch_read_blobs_response::Response {
        digest: Some(once_remote::digest_of(data)),
        data: data.to_vec(),
        status: Some(Default::default()),
        ..Default::default()
    };
    let known = |blobs: &[Bytes]| -> Vec<reapi::batch_read_blobs_response::Response> {
        asked
            .iter()
            .map(
                |digest| match blobs.iter().find(|b| once_remote::digest_of(b) == *digest) {
                    Some(data) => entry(data),
                    None => {
                        let mut missing = reapi::batch_read_blobs_response::Response {
                            digest: Some(digest.clone()),
                            status: Some(Default::default()),
                            ..Default::default()
                        };
                        if let Some(status) = missing.status.as_mut() {
                            status.code = 5;
                        }
                        missing
                    }
                },
            )
            .collect()
    };
    let responses = match plan {
        BatchPlan::Honest(blobs) => known(blobs),
        BatchPlan::Extra(blobs) => {
            let mut all = known(blobs);
            all.push(entry(&Bytes::from_static(b"a blob nobody asked for\n")));
            all
        }
        BatchPlan::Twice(blobs) => known(blobs)
            .into_iter()
            .flat_map(|e| [e.clone(), e])
            .collect(),
    };
    reapi::BatchReadBlobsResponse { responses }
}

/// The framed messages of 64 KiB each that carry `fill` bytes.
fn fill_message(fill: u8, len: usize) -> Bytes {
    frame(&bytestream::ReadResponse {
        data: vec![fill; len],
    })
}

const CHUNK: usize = 64 * 1024;

async fn read(respond: Respond, plan: &ReadPlan) {
    match plan {
        ReadPlan::Blob(data) => {
            let messages = data
                .chunks(CHUNK)
                .map(|c| frame(&bytestream::ReadResponse { data: c.to_vec() }))
                .collect();
            ok(respond, messages).await;
        }
        ReadPlan::Fill { fill, total } => {
            let Some(mut stream) = start(respond) else {
                return;
            };
            let whole = fill_message(*fill, CHUNK);
            let mut left = total.unwrap_or(u64::MAX);
            while left > 0 {
                let message = if left >= CHUNK as u64 {
                    whole.clone()
                } else {
                    fill_message(*fill, left as usize)
                };
                left = left.saturating_sub(CHUNK as u64);
                if send(&mut stream, message).await.is_err() {
                    return;
                }
            }
            finish(stream);
        }
        ReadPlan::Prefix(len) => {
            let Some(mut stream) = start(respond) else {
                return;
            };
            let mut header = vec![0u8];
            header.extend_from_slice(&len.to_be_bytes());
            if send(&mut stream, Bytes::from(header)).await.is_err() {
                return;
            }
            let garbage = Bytes::from(vec![0x5a; CHUNK]);
            while send(&mut stream, garbage.clone()).await.is_ok() {}
        }
    }
}

fn start(mut respond: Respond) -> Option<h2::SendStream<Bytes>> {
    let head = Response::builder()
        .header("content-type", "application/grpc")
        .body(())
        .expect("a response");
    respond.send_response(head, false).ok()
}

/// Sends `data` within the client's flow-control window; an error once the client is gone.
async fn send(stream: &mut h2::SendStream<Bytes>, mut data: Bytes) -> Result<(), ()> {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(0)) => continue,
            Some(Ok(n)) => {
                let chunk = data.split_to(n.min(data.len()));
                stream.send_data(chunk, false).map_err(|_| ())?;
            }
            _ => return Err(()),
        }
    }
    Ok(())
}

fn finish(mut stream: h2::SendStream<Bytes>) {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let _ = stream.send_trailers(trailers);
}

async fn ok(respond: Respond, messages: Vec<Bytes>) {
    let Some(mut stream) = start(respond) else {
        return;
    };
    for message in messages {
        if send(&mut stream, message).await.is_err() {
            return;
        }
    }
    finish(stream);
}

/// A "trailers-only" answer with a non-zero status.
fn status(respond: &mut Respond, code: u8, message: &str) {
    let head = Response::builder()
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string())
        .header("grpc-message", message.replace(' ', "%20"))
        .body(())
        .expect("a response");
    let _ = respond.send_response(head, true);
}
