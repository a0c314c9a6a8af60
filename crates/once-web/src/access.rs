//! Who may use the window, and how a request proves it.
//!
//! Four checks, in this order, on every request:
//! 1. `Host` must name this session's loopback address and port (`127.0.0.1:PORT` or
//!    `localhost:PORT`), so a page on another site cannot reach us through DNS rebinding;
//! 2. `Origin`, when sent, must be this page's own origin, so no other page can post to us;
//! 3. the page key in `X-Once-Key` — or, for MCP over HTTP and `once sessions --url`, the
//!    session token as a bearer token;
//! 4. for every request that changes something, the CSRF token in `X-Once-CSRF`.
//!
//! The page key is what a login ends in: the page posts the one-time token of its login link to
//! `/api/login` and gets the key back as JSON, keeps it in `sessionStorage` and sends it as a
//! header with every request. Only a script of the page's own origin (scheme, host *and* port)
//! can read that answer or that storage, and no browser sends a custom header on its own. A
//! cookie could not do this: browsers send a cookie to every port of a host, and `SameSite`
//! counts all ports of 127.0.0.1 as one site, so any other loopback server the browser visits
//! would receive it. This module must never accept a credential from a cookie.
//!
//! Login links are single use and expire after [`LOGIN_VALID`]; at most [`MAX_LOGINS`] wait to be
//! used, the oldest dropped first. Every secret is compared in constant time and never logged.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::http::Request;
use crate::token::Token;

/// How long a login link can be used.
pub const LOGIN_VALID: Duration = Duration::from_secs(15 * 60);
/// Login links that may wait to be used at once.
const MAX_LOGINS: usize = 16;

/// The secrets of one session's window.
#[derive(Debug)]
pub struct Access {
    port: u16,
    /// The session token: MCP over HTTP presents it as a bearer token.
    session: Token,
    /// What a login hands the page, and the page sends in `X-Once-Key`.
    key: Token,
    /// What a page sends in `X-Once-CSRF`.
    csrf: Token,
    logins: Mutex<Vec<(Token, Instant)>>,
}

impl Access {
    /// Fresh page key and CSRF secrets for a session on `port` whose token is `session`.
    pub fn new(port: u16, session: Token) -> std::io::Result<Access> {
        Ok(Access {
            port,
            session,
            key: Token::generate()?,
            csrf: Token::generate()?,
            logins: Mutex::new(Vec::new()),
        })
    }

    /// The port the session listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new one-time login link.
    pub fn login_url(&self) -> std::io::Result<String> {
        let token = Token::generate()?;
        let url = format!("http://127.0.0.1:{}/?login={}", self.port, token.to_hex());
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, made)| made.elapsed() < LOGIN_VALID);
        if logins.len() >= MAX_LOGINS {
            logins.remove(0);
        }
        logins.push((token, Instant::now()));
        Ok(url)
    }

    /// Whether `presented` is a login token that can still be used, without using it up: the
    /// login link's `GET` answers 403 at once for a dead link, and the page redeems a live one.
    pub fn login_waiting(&self, presented: &str) -> bool {
        let Some(presented) = Token::from_hex(presented) else {
            return false;
        };
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, made)| made.elapsed() < LOGIN_VALID);
        logins
            .iter()
            .map(|(token, _)| token.matches(&presented))
            .fold(false, |found, hit| found | hit)
    }

    /// Uses up the login token `presented`; the page key when it was valid.
    pub fn redeem_login(&self, presented: &str) -> Option<String> {
        let presented = Token::from_hex(presented)?;
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, made)| made.elapsed() < LOGIN_VALID);
        // Compare with every waiting token, so the time taken does not say which one matched.
        let found = logins
            .iter()
            .map(|(token, _)| token.matches(&presented))
            .fold(false, |found, hit| found | hit);
        if !found {
            return None;
        }
        logins.retain(|(token, _)| !token.matches(&presented));
        Some(self.key.to_hex())
    }

    /// The CSRF token, as the page reads it from `/api/session`.
    pub fn csrf_hex(&self) -> String {
        self.csrf.to_hex()
    }

    /// Whether `Host` names this session.
    pub fn host_ok(&self, request: &Request) -> bool {
        if request.header_count("host") != 1 {
            return false;
        }
        let Some(host) = request.header("host") else {
            return false;
        };
        let host = host.trim().to_ascii_lowercase();
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// Whether `Origin` is absent or this page's own.
    pub fn origin_ok(&self, request: &Request) -> bool {
        if request.header_count("origin") > 1 {
            return false;
        }
        match request.header("origin") {
            None => true,
            Some(origin) => {
                let origin = origin.trim().to_ascii_lowercase();
                origin == format!("http://127.0.0.1:{}", self.port)
                    || origin == format!("http://localhost:{}", self.port)
            }
        }
    }

    /// Whether the request carries the page key in `X-Once-Key` (once; cookies never count).
    pub fn key_ok(&self, request: &Request) -> bool {
        request.header_count("x-once-key") == 1
            && request
                .header("x-once-key")
                .and_then(|value| Token::from_hex(value.trim()))
                .is_some_and(|presented| self.key.matches(&presented))
    }

    /// Whether the request is the owner's: our own Host and Origin, and the page key or the
    /// session token. Only such a request lets its connection hold a place (`admission.rs`).
    pub fn proves(&self, request: &Request) -> bool {
        self.host_ok(request)
            && self.origin_ok(request)
            && (self.key_ok(request) || self.bearer_ok(request))
    }

    /// Whether the request carries the CSRF token.
    pub fn csrf_ok(&self, request: &Request) -> bool {
        request.header_count("x-once-csrf") == 1
            && request
                .header("x-once-csrf")
                .and_then(|value| Token::from_hex(value.trim()))
                .is_some_and(|presented| self.csrf.matches(&presented))
    }

    /// Whether the request carries `Authorization: Bearer <session token>`.
    pub fn bearer_ok(&self, request: &Request) -> bool {
        request.header_count("authorization") == 1
            && request
                .header("authorization")
                .and_then(|value| {
                    let (scheme, token) = value.trim().split_once(' ')?;
                    scheme
                        .eq_ignore_ascii_case("bearer")
                        .then(|| Token::from_hex(token.trim()))?
                })
                .is_some_and(|presented| self.session.matches(&presented))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "GET".into(),
            path: "/".into(),
            query: Vec::new(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
            keep_alive: true,
        }
    }

    fn access() -> Access {
        Access::new(4242, Token::generate().expect("token")).expect("access")
    }

    #[test]
    fn only_our_own_host_and_origin_pass() {
        let access = access();
        assert!(access.host_ok(&request(&[("host", "127.0.0.1:4242")])));
        assert!(access.host_ok(&request(&[("host", "LOCALHOST:4242")])));
        for host in ["evil.example:4242", "127.0.0.1:4243", "127.0.0.1", ""] {
            assert!(!access.host_ok(&request(&[("host", host)])), "{host}");
        }
        assert!(!access.host_ok(&request(&[])), "no host");
        assert!(
            !access.host_ok(&request(&[("host", "127.0.0.1:4242"), ("host", "evil")])),
            "two hosts"
        );
        assert!(access.origin_ok(&request(&[])));
        assert!(access.origin_ok(&request(&[("origin", "http://127.0.0.1:4242")])));
        for origin in [
            "null",
            "http://evil.example",
            "https://127.0.0.1:4242",
            "http://127.0.0.1:4243",
        ] {
            assert!(
                !access.origin_ok(&request(&[("origin", origin)])),
                "{origin}"
            );
        }
    }

    #[test]
    fn a_login_link_works_once_and_ends_in_the_page_key() {
        let access = access();
        let url = access.login_url().expect("url");
        let token = url.rsplit_once("login=").expect("token").1;
        assert!(
            access
                .redeem_login("00112233445566778899aabbccddeeff")
                .is_none()
        );
        assert!(access.login_waiting(token), "looking does not use it up");
        let key = access.redeem_login(token).expect("the page key");
        assert!(access.redeem_login(token).is_none(), "used twice");
        assert!(!access.login_waiting(token), "used up");
        assert!(access.redeem_login("not hex").is_none());
        assert!(access.key_ok(&request(&[("x-once-key", &key)])));
    }

    #[test]
    fn the_key_counts_only_as_its_own_header() {
        let access = access();
        let key = access.key.to_hex();
        assert!(access.key_ok(&request(&[("x-once-key", &key)])));
        for headers in [
            vec![("cookie", format!("once-4242={key}"))],
            vec![("cookie", format!("x-once-key={key}"))],
            vec![("authorization", format!("Bearer {key}"))],
            vec![("x-once-key", "00112233445566778899aabbccddeeff".to_owned())],
            vec![("x-once-key", key.clone()), ("x-once-key", key.clone())],
            vec![],
        ] {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            assert!(!access.key_ok(&request(&headers)), "{headers:?}");
        }
    }

    #[test]
    fn the_csrf_token_is_checked_exactly() {
        let access = access();
        let csrf = access.csrf_hex();
        assert!(access.csrf_ok(&request(&[("x-once-csrf", &csrf)])));
        assert!(!access.csrf_ok(&request(&[("x-once-csrf", "00")])));
        assert!(!access.csrf_ok(&request(&[])));
    }

    #[test]
    fn the_bearer_is_the_session_token() {
        let token = Token::generate().expect("token");
        let access = Access::new(1, token.clone()).expect("access");
        let header = format!("Bearer {}", token.to_hex());
        assert!(access.bearer_ok(&request(&[("authorization", &header)])));
        assert!(access.bearer_ok(&request(&[(
            "authorization",
            &format!("bearer {}", token.to_hex())
        )])));
        assert!(!access.bearer_ok(&request(&[("authorization", "Basic abc")])));
        assert!(!access.bearer_ok(&request(&[])));
    }
}
