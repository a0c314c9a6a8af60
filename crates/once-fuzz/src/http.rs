//! The `http` target: the bytes a peer sends to the window's port, read by
//! `once_web::http::read_request` as one connection would, request after request.
//!
//! Properties: reading never panics and always ends (each request consumes input or ends the
//! connection); a request that parses has an origin-form path (or `*`), lowercase header names
//! and exactly the body its `Content-Length` announced, no larger than the limit; and a request's
//! head is never longer than the limit allows. Pure memory: never touches the network.

use std::io::Cursor;
use std::time::Duration;

use once_web::http::{self, BODY_LIMIT, HEAD_LIMIT, ReadError};

/// Request lines, headers and framing the parser must get right.
pub const DICTIONARY: &[&str] = &[
    "GET / HTTP/1.1\r\n",
    "POST /api/tool/once_query_workspace HTTP/1.1\r\n",
    "GET /?login=00112233445566778899aabbccddeeff HTTP/1.1\r\n",
    "OPTIONS * HTTP/1.1\r\n",
    "GET http://evil/ HTTP/1.1\r\n",
    "HTTP/1.0",
    "Host: 127.0.0.1:4242\r\n",
    "Origin: http://evil.example\r\n",
    "Cookie: once-4242=00112233445566778899aabbccddeeff\r\n",
    "X-Once-CSRF: ",
    "Content-Length: ",
    "Content-Length: 5\r\n",
    "Content-Length: 18446744073709551616\r\n",
    "Transfer-Encoding: chunked\r\n",
    "Connection: close\r\n",
    "Connection: keep-alive\r\n",
    "Content-Type: application/json\r\n",
    "\r\n\r\n",
    "%2e%2e%2f",
    "%zz",
    "%",
    "+",
    "?a=b&c",
];

/// Most requests read from one input before giving up on it.
const MAX_REQUESTS: usize = 64;

/// Reads every request of `data` as one connection.
pub fn http(data: &[u8]) {
    let mut wire = Cursor::new(data.to_vec());
    for _ in 0..MAX_REQUESTS {
        let before = wire.position();
        match http::read_request(&mut wire, Duration::from_secs(1), Vec::new()) {
            Ok(request) => {
                assert!(
                    request.path.starts_with('/') || request.path == "*",
                    "path {:?}",
                    request.path
                );
                for (name, _) in &request.headers {
                    assert_eq!(
                        name,
                        &name.to_ascii_lowercase(),
                        "header names are lowercased"
                    );
                }
                let announced = request
                    .header("content-length")
                    .and_then(|length| length.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                assert_eq!(
                    request.body.len(),
                    announced,
                    "the body is what was announced"
                );
                assert!(request.body.len() <= BODY_LIMIT);
                let used = usize::try_from(wire.position() - before).unwrap_or(usize::MAX);
                assert!(
                    used <= HEAD_LIMIT + request.body.len(),
                    "read {used} bytes for a request with a body of {}",
                    request.body.len()
                );
                if !request.keep_alive {
                    return;
                }
            }
            Err(ReadError::Closed | ReadError::Bad { .. } | ReadError::Io(_)) => return,
        }
        assert!(wire.position() > before, "a request that reads nothing");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_corpus_holds() {
        crate::replay_corpus("http");
    }
}
