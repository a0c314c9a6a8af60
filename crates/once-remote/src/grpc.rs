//! gRPC over one HTTP/2 connection (plain TCP, or TLS set up by `tls.rs`), by hand: each call is a
//! POST of length-prefixed protobuf messages whose outcome is the `grpc-status` trailer. It knows
//! nothing of the REAPI; it must never wait without the caller's deadline around it, and never put
//! a header's value in an error.

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
    let (send, connection) = h2::client::handshake(io).await.map_err(|e| e.to_string())?;
    // The connection task ends with the runtime (dropped with the client) or on a transport error,
    // which the next call then sees as a closed connection.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(send)
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

/// The value of `grpc-timeout`: at most eight digits, so the unit grows with the timeout.
pub(crate) fn timeout_header(timeout: Duration) -> String {
    let ms = timeout.as_millis();
    if ms < 100_000_000 {
        format!("{}m", ms.max(1))
    } else {
        format!("{}S", timeout.as_secs().min(99_999_999))
    }
}

/// Sends `requests` (already framed) on a new stream and returns the response messages, whose
/// total size may not exceed `limit` bytes (a server cannot make the client hold without bound).
/// `origin` (`http://host:port` or `https://host[:port]`) gives `:scheme` and `:authority`.
///
/// A server may answer before it has read every request (ByteStream.Write of a blob it already
/// has): then the rest is not sent, and the answer decides the call.
pub(crate) async fn call<R: Message + Default>(
    send: &SendRequest<Bytes>,
    origin: &str,
    path: &str,
    headers: &[(HeaderName, HeaderValue)],
    timeout: Duration,
    requests: Vec<Bytes>,
    limit: usize,
) -> Result<Vec<R>, CallError> {
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
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if buf.len() + chunk.len() > limit {
            return Err(CallError::Protocol(format!("an answer over {limit} bytes")));
        }
        buf.extend_from_slice(&chunk);
    }
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
    decode_frames(buf.freeze())
}

fn decode_frames<R: Message + Default>(mut buf: Bytes) -> Result<Vec<R>, CallError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        if buf.len() < 5 {
            return Err(CallError::Protocol("a truncated message header".into()));
        }
        let compressed = buf.get_u8();
        if compressed != 0 {
            return Err(CallError::Protocol(
                "a compressed message, though none was asked for".into(),
            ));
        }
        let len = buf.get_u32() as usize;
        if buf.len() < len {
            return Err(CallError::Protocol("a truncated message".into()));
        }
        let message = R::decode(buf.split_to(len))
            .map_err(|e| CallError::Protocol(format!("an undecodable message: {e}")))?;
        out.push(message);
    }
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

    #[test]
    fn frames_round_trip() {
        let m = crate::reapi::Digest {
            hash: "ab".into(),
            size_bytes: 3,
        };
        let mut two = BytesMut::new();
        two.extend_from_slice(&frame(&m).unwrap());
        two.extend_from_slice(&frame(&m).unwrap());
        let back: Vec<crate::reapi::Digest> = decode_frames(two.freeze()).unwrap();
        assert_eq!(back, vec![m.clone(), m]);
    }

    #[test]
    fn truncated_and_compressed_frames_are_errors() {
        let m = crate::reapi::Digest {
            hash: "ab".into(),
            size_bytes: 3,
        };
        let whole = frame(&m).unwrap();
        let cut = whole.slice(..whole.len() - 1);
        assert!(decode_frames::<crate::reapi::Digest>(cut).is_err());
        let mut flagged = BytesMut::from(&whole[..]);
        flagged[0] = 1;
        assert!(decode_frames::<crate::reapi::Digest>(flagged.freeze()).is_err());
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
                call::<crate::reapi::Digest>(
                    &send,
                    &format!("http://{authority}"),
                    "/x/Y",
                    &[],
                    Duration::from_secs(5),
                    framed,
                    limit,
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
            let call = call::<crate::proto::google::bytestream::WriteResponse>(
                &send,
                &origin,
                "/google.bytestream.ByteStream/Write",
                &[],
                Duration::from_secs(10),
                requests,
                1024,
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
