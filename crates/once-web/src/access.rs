//! Who may use the window, and how a request proves it.
//!
//! Four checks, in this order, on every request:
//! 1. `Host` must name this session's loopback address and port (`127.0.0.1:PORT` or
//!    `localhost:PORT`), so a page on another site cannot reach us through DNS rebinding;
//! 2. `Origin`, when sent, must be this page's own origin, so no other page can post to us;
//! 3. the session cookie (HttpOnly, `SameSite=Strict`, named after the port since cookies do not
//!    tell ports apart), which a person gets by opening a one-time login link — or, for MCP over
//!    HTTP, the session token as a bearer token;
//! 4. for every request that changes something, the CSRF token in `X-Once-CSRF`, which only a
//!    page that could read `/api/session` (same origin, with the cookie) knows.
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
    /// The value of the cookie a login sets.
    cookie: Token,
    /// What a page sends in `X-Once-CSRF`.
    csrf: Token,
    logins: Mutex<Vec<(Token, Instant)>>,
}

impl Access {
    /// Fresh cookie and CSRF secrets for a session on `port` whose token is `session`.
    pub fn new(port: u16, session: Token) -> std::io::Result<Access> {
        Ok(Access {
            port,
            session,
            cookie: Token::generate()?,
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

    /// Uses up the login token `presented`; whether it was valid.
    pub fn redeem_login(&self, presented: &str) -> bool {
        let Some(presented) = Token::from_hex(presented) else {
            return false;
        };
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        logins.retain(|(_, made)| made.elapsed() < LOGIN_VALID);
        // Compare with every waiting token, so the time taken does not say which one matched.
        let found = logins
            .iter()
            .map(|(token, _)| token.matches(&presented))
            .fold(None, |found, hit| found.or(hit.then_some(())));
        if found.is_some() {
            logins.retain(|(token, _)| !token.matches(&presented));
        }
        found.is_some()
    }

    /// The `Set-Cookie` value a successful login sends.
    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name(),
            self.cookie.to_hex()
        )
    }

    fn cookie_name(&self) -> String {
        format!("once-{}", self.port)
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

    /// Whether the request carries this session's cookie.
    pub fn has_cookie(&self, request: &Request) -> bool {
        let name = self.cookie_name();
        request
            .headers
            .iter()
            .filter(|(n, _)| n == "cookie")
            .flat_map(|(_, value)| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, value)| Token::from_hex(value.trim()))
            .any(|presented| self.cookie.matches(&presented))
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
    fn a_login_link_works_once() {
        let access = access();
        let url = access.login_url().expect("url");
        let token = url.rsplit_once("login=").expect("token").1;
        assert!(!access.redeem_login("00112233445566778899aabbccddeeff"));
        assert!(access.redeem_login(token));
        assert!(!access.redeem_login(token), "used twice");
        assert!(!access.redeem_login("not hex"));
    }

    #[test]
    fn the_cookie_and_csrf_token_are_checked_exactly() {
        let access = access();
        let cookie = access.set_cookie();
        let pair = cookie.split(';').next().expect("pair");
        assert!(access.has_cookie(&request(&[("cookie", &format!("a=b; {pair}"))])));
        assert!(!access.has_cookie(&request(&[(
            "cookie",
            "once-4242=00112233445566778899aabbccddeeff"
        )])));
        assert!(!access.has_cookie(&request(&[])));
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
