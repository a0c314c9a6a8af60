//! gRPC over one HTTP/2 connection (plain TCP, or TLS set up by `tls.rs`), by hand: each call is a
//! POST of length-prefixed protobuf messages whose outcome is the `grpc-status` trailer. It knows
//! nothing of the REAPI; it must never wait without the caller's deadline around it, and never put
//! a header's value in an error.
//!
//! Nothing a server states sizes an allocation: answers are decoded message by message as they
//! arrive (`Frames`), a length prefix over the call's message bound is refused before its bytes
//! are read, the answer's total is bounded, each message's decoding cost is checked on the wire
//! first (`wire.rs`), HTTP/2 windows are fixed and small, and header lists are capped.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use http::{HeaderName, HeaderValue};
use prost::Message;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::tls::Tls;

/// A call's failure before it is given a server's name and a call's name (see `client.rs`).
#[derive(Debug)]
pub(crate) enum CallError {
    /// The connection failed or was closed: the next call must open a new one.
    Transport(String),
    /// The server answered with a non-zero `grpc-status`.
    Status { code: i32, message: String },
    /// The answer was not gRPC as the client understands it.
    Protocol(String),
}

impl From<h2::Error> for CallError {
    fn from(e: h2::Error) -> Self {
        // A reset of one stream leaves the connection usable; anything else does not.
        if e.is_reset() && !e.is_go_away() {
            CallError::Protocol(format!("the server reset the call: {e}"))
        } else {
            CallError::Transport(e.to_string())
        }
    }
}

/// Opens one HTTP/2 connection to `address` (`host:port`), in TLS when `tls` is given, and drives
/// it on the runtime.
pub(crate) async fn connect(
    address: &str,
    tls: Option<&Tls>,
) -> Result<SendRequest<Bytes>, String> {
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    // Calls are small request/response pairs: Nagle's delay would add to every one.
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    match tls {
        None => start(tcp).await,
        Some(tls) => start(tls.handshake(tcp).await?).await,
    }
}

/// The HTTP/2 handshake over `io`, with the connection's task spawned on the runtime.
async fn start<T>(io: T) -> Result<SendRequest<Bytes>, String>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, connection) = h2::client::Builder::new()
        // Windows the client chooses: what the server may have in flight, whatever it says.
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(2 * STREAM_WINDOW)
        .max_header_list_size(MAX_HEADER_LIST)
        .handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    // The connection task ends with the runtime (dropped with the client) or on a transport error,
    // which the next call then sees as a closed connection.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(send)
}

/// The HTTP/2 flow-control window of one call: enough for a blob to stream at loopback speed,
/// small enough that a server can never make h2 buffer much.
const STREAM_WINDOW: u32 = 1024 * 1024;
/// The largest header list (the trailers included) the client accepts: gRPC's need a few hundred
/// bytes; h2's default would let a server make it hold 16 MiB.
const MAX_HEADER_LIST: u32 = 64 * 1024;

/// What one call's answer may weigh.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// The largest message, length prefix excluded.
    pub message: usize,
    /// The whole answer's body, every message's prefix included.
    pub total: u64,
    /// The most fields (nested ones included) one message may decode into.
    pub fields: usize,
    /// The fields that carry bytes, not messages (see `wire::fields_within`).
    pub data: &'static [&'static [u32]],
}

/// One frame: a zero compression flag, the big-endian length, the message.
pub(crate) fn frame<M: Message>(message: &M) -> Result<Bytes, CallError> {
    let len = message.encoded_len();
    let prefix = u32::try_from(len)
        .map_err(|_| CallError::Protocol(format!("a message of {len} bytes is too large")))?;
    let mut out = BytesMut::with_capacity(5 + len);
    out.put_u8(0);
    out.put_u32(prefix);
    message
        .encode(&mut out)
        .map_err(|e| CallError::Protocol(e.to_string()))?;
    Ok(out.freeze())
}

/// Runs `calls` with at most `in_flight` of them at once (each its own stream of the one
/// connection) and gives every outcome in the order of `calls`. A poll of the calls in flight
/// in turn, so that no task is spawned and the calls may borrow the caller's connection.
pub(crate) async fn all<T, F>(calls: impl Iterator<Item = F>, in_flight: usize) -> Vec<T>
where
    F: std::future::Future<Output = T>,
{
    use std::pin::Pin;
    use std::task::Poll;
    let mut waiting = calls.enumerate().peekable();
    let mut running: Vec<(usize, Pin<Box<F>>)> = Vec::with_capacity(in_flight);
    let mut done: Vec<(usize, T)> = Vec::new();
    std::future::poll_fn(|cx| {
        loop {
            while running.len() < in_flight {
                match waiting.next() {
                    Some((i, call)) => running.push((i, Box::pin(call))),
                    None => break,
                }
            }
            let before = running.len();
            let mut k = 0;
            while k < running.len() {
                if let Poll::Ready(out) = running[k].1.as_mut().poll(cx) {
                    let (i, _) = running.swap_remove(k);
                    done.push((i, out));
                } else {
                    k += 1;
                }
            }
            if running.is_empty() && waiting.peek().is_none() {
                return Poll::Ready(());
            }
            // Nothing finished: every call in flight is waiting on its waker.
            if running.len() == before {
                return Poll::Pending;
            }
        }
    })
    .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, out)| out).collect()
}

/// The value of `grpc-timeout`: at most eight digits, so the unit grows with the timeout.
pub(crate) fn timeout_header(timeout: Duration) -> String {
    let ms = timeout.as_millis();
    if ms < 100_000_000 {
        format!("{}m", ms.max(1))
    } else {
        format!("{}S", timeout.as_secs().min(99_999_999))
    }
}

/// Sends `requests` (already framed) on a new stream and hands each response message to
/// `on_message` as it arrives, within `bounds` (a server cannot make the client hold without
/// bound). `origin` (`http://host:port` or `https://host[:port]`) gives `:scheme` and
/// `:authority`. The messages come before the status is known: a caller keeps what they gave it
/// only when the call succeeds.
///
/// A server may answer before it has read every request (ByteStream.Write of a blob it already
/// has): then the rest is not sent, and the answer decides the call.
// Each argument is one part of the call (where, with what, how long, what may come back, and
// who takes it); a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call<R: Message + Default>(
    send: &SendRequest<Bytes>,
    origin: &str,
    path: &str,
    headers: &[(HeaderName, HeaderValue)],
    timeout: Duration,
    requests: Vec<Bytes>,
    bounds: Bounds,
    mut on_message: impl FnMut(R) -> Result<(), CallError>,
) -> Result<(), CallError> {
    let mut send = send.clone().ready().await?;
    let mut request = http::Request::builder()
        .method("POST")
        .uri(format!("{origin}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", timeout_header(timeout));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request
        .body(())
        .map_err(|e| CallError::Protocol(format!("cannot build the request: {e}")))?;
    let (response, mut stream) = send.send_request(request, false)?;

    let count = requests.len();
    'send: for (i, mut data) in requests.into_iter().enumerate() {
        let last = i + 1 == count;
        // Send within the peer's flow-control window instead of buffering a whole blob in h2.
        while !data.is_empty() {
            stream.reserve_capacity(data.len());
            match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
                Some(Ok(0)) => continue,
                Some(Ok(capacity)) => {
                    let chunk = data.split_to(capacity.min(data.len()));
                    let end = last && data.is_empty();
                    if stream.send_data(chunk, end).is_err() {
                        break 'send;
                    }
                }
                // The server closed its side or reset the stream: its answer says why.
                Some(Err(_)) | None => break 'send,
            }
        }
    }
    if count == 0 {
        let _ = stream.send_data(Bytes::new(), true);
    }

    let (head, mut body) = response.await?.into_parts();
    let mut frames = Frames::new(bounds.message);
    let mut total = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        total = total.saturating_add(chunk.len() as u64);
        if total > bounds.total {
            return Err(CallError::Protocol(format!(
                "an answer over {} bytes",
                bounds.total
            )));
        }
        frames.push(&chunk)?;
        while let Some(message) = frames.next()? {
            on_message(decode(message, &bounds)?)?;
        }
    }
    frames.finish()?;
    let trailers = body.trailers().await?;
    // A "trailers-only" answer carries the status in the headers.
    let meta = trailers.as_ref().unwrap_or(&head.headers);
    let status = meta.get("grpc-status").and_then(|v| v.to_str().ok());
    let Some(status) = status else {
        return Err(CallError::Protocol(format!(
            "no grpc-status in an answer with HTTP status {}",
            head.status
        )));
    };
    let code: i32 = status
        .parse()
        .map_err(|_| CallError::Protocol(format!("grpc-status `{status}` is not a number")))?;
    if code != 0 {
        let message = meta
            .get("grpc-message")
            .map(|v| percent_decode(v.as_bytes()))
            .unwrap_or_default();
        return Err(CallError::Status { code, message });
    }
    Ok(())
}

/// The messages of an answer's body as its chunks arrive: it holds at most one message and the
/// chunk that completes it, and refuses a length prefix over its bound before reading on.
#[derive(Debug)]
pub(crate) struct Frames {
    buf: BytesMut,
    max: usize,
}

impl Frames {
    pub(crate) fn new(max: usize) -> Frames {
        Frames {
            buf: BytesMut::new(),
            max,
        }
    }

    /// Takes the next bytes of the body; refuses a message header that states a compressed
    /// message or more than the bound.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), CallError> {
        self.buf.extend_from_slice(chunk);
        self.check_header()
    }

    fn check_header(&self) -> Result<(), CallError> {
        let Some(header) = self.buf.get(..5) else {
            return Ok(());
        };
        if header[0] != 0 {
            return Err(CallError::Protocol(
                "a compressed message, though none was asked for".into(),
            ));
        }
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
        if usize::try_from(len).map_or(true, |len| len > self.max) {
            return Err(CallError::Protocol(format!(
                "a message of {len} bytes, over the limit of {} bytes",
                self.max
            )));
        }
        Ok(())
    }

    /// The next whole message's bytes, if they have all arrived.
    pub(crate) fn next(&mut self) -> Result<Option<Bytes>, CallError> {
        self.check_header()?;
        let Some(header) = self.buf.get(..5) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        self.buf.advance(5);
        let message = self.buf.split_to(len).freeze();
        self.check_header()?;
        Ok(Some(message))
    }

    /// An error unless the body ended between messages.
    pub(crate) fn finish(&self) -> Result<(), CallError> {
        match self.buf.len() {
            0 => Ok(()),
            1..5 => Err(CallError::Protocol("a truncated message header".into())),
            _ => Err(CallError::Protocol("a truncated message".into())),
        }
    }
}

/// One message, once its decoding cost is known to stay within `fields`.
pub(crate) fn decode<R: Message + Default>(bytes: Bytes, bounds: &Bounds) -> Result<R, CallError> {
    if !crate::wire::fields_within(&bytes, bounds.fields, bounds.data) {
        return Err(CallError::Protocol(format!(
            "a message of over {} fields",
            bounds.fields
        )));
    }
    R::decode(bytes).map_err(|e| CallError::Protocol(format!("an undecodable message: {e}")))
}

/// Every message of a whole body, for tests and the fuzz target: the same path a call's answer
/// takes, fed in chunks of `chunk` bytes.
pub(crate) fn decode_body<R: Message + Default>(
    body: &[u8],
    chunk: usize,
    bounds: Bounds,
) -> Result<Vec<R>, CallError> {
    if body.len() as u64 > bounds.total {
        return Err(CallError::Protocol(format!(
            "an answer over {} bytes",
            bounds.total
        )));
    }
    let mut frames = Frames::new(bounds.message);
    let mut out = Vec::new();
    for piece in body.chunks(chunk.max(1)) {
        frames.push(piece)?;
        while let Some(message) = frames.next()? {
            out.push(decode(message, &bounds)?);
        }
    }
    frames.finish()?;
    Ok(out)
}

/// `grpc-message` is percent-encoded UTF-8; undecodable bytes are replaced, not trusted.
fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if raw[i] == b'%'
            && i + 2 < raw.len()
            && let (Some(h), Some(l)) = (hex(raw[i + 1]), hex(raw[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: Bounds = Bounds {
        message: 1 << 20,
        total: 1 << 20,
        fields: 1000,
        data: &[],
    };

    /// `call`, its messages collected.
    async fn collect<R: Message + Default>(
        send: &SendRequest<Bytes>,
        origin: &str,
        path: &str,
        requests: Vec<Bytes>,
        bounds: Bounds,
    ) -> Result<Vec<R>, CallError> {
        let mut out = Vec::new();
        call(
            send,
            origin,
            path,
            &[],
            Duration::from_secs(10),
            requests,
            bounds,
            |m| {
                out.push(m);
                Ok(())
            },
        )
        .await?;
        Ok(out)
    }

    #[test]
    fn frames_round_trip() {
        let m = crate::reapi::Digest {
            hash: "ab".into(),
            size_bytes: 3,
        };
        let mut two = BytesMut::new();
        two.extend_from_slice(&frame(&m).unwrap());
        two.extend_from_slice(&frame(&m).unwrap());
        for chunk in [1, 3, 1000] {
            let back: Vec<crate::reapi::Digest> = decode_body(&two, chunk, ROOMY).unwrap();
            assert_eq!(back, vec![m.clone(), m.clone()]);
        }
    }

    #[test]
    fn truncated_and_compressed_frames_are_errors() {
        let m = crate::reapi::Digest {
            hash: "ab".into(),
            size_bytes: 3,
        };
        let whole = frame(&m).unwrap();
        let cut = whole.slice(..whole.len() - 1);
        assert!(decode_body::<crate::reapi::Digest>(&cut, 7, ROOMY).is_err());
        let mut flagged = BytesMut::from(&whole[..]);
        flagged[0] = 1;
        assert!(decode_body::<crate::reapi::Digest>(&flagged, 7, ROOMY).is_err());
    }

    #[test]
    fn a_length_prefix_over_the_bound_is_refused_before_its_bytes() {
        let mut frames = Frames::new(1 << 20);
        // 4 GiB less one byte: the largest prefix there is.
        let error = frames.push(&[0, 0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert!(
            matches!(&error, CallError::Protocol(d) if d.contains("a message of 4294967295 bytes")),
            "{error:?}"
        );
        // At the bound exactly, the message is awaited.
        let mut frames = Frames::new(4);
        frames.push(&[0, 0, 0, 0, 4, 1, 2]).unwrap();
        assert!(frames.next().unwrap().is_none());
        frames.push(&[3, 4]).unwrap();
        assert_eq!(&frames.next().unwrap().unwrap()[..], &[1, 2, 3, 4]);
        frames.finish().unwrap();
    }

    #[test]
    fn a_message_that_would_decode_into_too_many_fields_is_refused() {
        let m = crate::reapi::FindMissingBlobsResponse {
            missing_blob_digests: vec![crate::reapi::Digest::default(); 50],
        };
        let body = frame(&m).unwrap();
        let few = Bounds {
            fields: 49,
            ..ROOMY
        };
        let error = decode_body::<crate::reapi::FindMissingBlobsResponse>(&body, 64, few);
        assert!(matches!(error, Err(CallError::Protocol(d)) if d.contains("over 49 fields")));
        let got: Vec<crate::reapi::FindMissingBlobsResponse> =
            decode_body(&body, 64, ROOMY).unwrap();
        assert_eq!(got, vec![m]);
    }

    /// A one-stream h2 server on loopback that answers any call with `body` and status 0.
    async fn serve_once(body: Bytes) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut conn = h2::server::handshake(tcp).await.unwrap();
            if let Some(Ok((_request, mut respond))) = conn.accept().await {
                tokio::spawn(async move { while conn.accept().await.is_some() {} });
                let head = http::Response::builder()
                    .header("content-type", "application/grpc")
                    .body(())
                    .unwrap();
                let mut stream = respond.send_response(head, false).unwrap();
                let _ = stream.send_data(body, false);
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", HeaderValue::from_static("0"));
                let _ = stream.send_trailers(trailers);
            }
        });
        authority
    }

    #[test]
    fn an_answer_over_the_limit_is_refused() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let m = crate::reapi::Digest {
            hash: "ab".repeat(32),
            size_bytes: 3,
        };
        let mut body = BytesMut::new();
        for _ in 0..100 {
            body.extend_from_slice(&frame(&m).unwrap());
        }
        let body = body.freeze();
        let total = body.len();
        for (limit, fits) in [(total, true), (total - 1, false)] {
            let result = rt.block_on(async {
                let authority = serve_once(body.clone()).await;
                let send = connect(&authority, None).await.unwrap();
                let framed = vec![frame(&m).unwrap()];
                let bounds = Bounds {
                    total: limit as u64,
                    ..ROOMY
                };
                collect::<crate::reapi::Digest>(
                    &send,
                    &format!("http://{authority}"),
                    "/x/Y",
                    framed,
                    bounds,
                )
                .await
            });
            match result {
                Ok(messages) => assert!(fits && messages.len() == 100),
                Err(CallError::Protocol(detail)) => {
                    assert!(!fits && detail.contains("an answer over"), "{detail}")
                }
                Err(other) => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_answer_before_the_last_request_ends_the_upload() {
        // As a server that already has a blob does with ByteStream.Write: it answers and closes
        // at once, without reading what the client is still sending.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer = crate::proto::google::bytestream::WriteResponse {
            committed_size: 8 << 20,
        };
        let chunk = crate::proto::google::bytestream::WriteRequest {
            data: vec![7; 1 << 20],
            ..Default::default()
        };
        let requests: Vec<Bytes> = (0..8).map(|_| frame(&chunk).unwrap()).collect();
        let got = rt.block_on(async {
            let authority = serve_once(frame(&answer).unwrap()).await;
            let send = connect(&authority, None).await.unwrap();
            let origin = format!("http://{authority}");
            let bounds = Bounds {
                message: 1024,
                total: 1024,
                fields: 10,
                data: &[],
            };
            let call = collect::<crate::proto::google::bytestream::WriteResponse>(
                &send,
                &origin,
                "/google.bytestream.ByteStream/Write",
                requests,
                bounds,
            );
            tokio::time::timeout(Duration::from_secs(10), call).await
        });
        let got = got.expect("the upload waited for a server that had stopped reading");
        assert_eq!(got.unwrap(), vec![answer]);
    }

    #[test]
    fn timeouts_fit_eight_digits() {
        assert_eq!(timeout_header(Duration::from_millis(1500)), "1500m");
        assert_eq!(timeout_header(Duration::ZERO), "1m");
        assert_eq!(timeout_header(Duration::from_secs(10_000_000)), "10000000S");
    }

    #[test]
    fn messages_are_percent_decoded() {
        assert_eq!(
            percent_decode(b"Invalid%20instance%3a x%"),
            "Invalid instance: x%"
        );
    }
}
