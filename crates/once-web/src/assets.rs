//! The page's files, embedded in the binary at build time: the window works offline, from any
//! folder, with no CDN and nothing to install.
//!
//! The page is one HTML document, one script and one style sheet, served under a Content
//! Security Policy that allows nothing but them, so even a target or file name that carried
//! markup could never run as script. This module must never serve a file from disk.

use crate::http::Response;

const INDEX: &str = include_str!("../assets/index.html");
/// One script, of two files: the graph's grouping (pure functions) ahead of the page that uses it.
const SCRIPT: &str = concat!(
    include_str!("../assets/groups.js"),
    include_str!("../assets/app.js")
);
const STYLE: &str = include_str!("../assets/app.css");

/// Only our own files; no inline script or style; never framed.
const POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
                      script-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
                      base-uri 'none'; form-action 'self'";

/// `GET /`.
pub fn page() -> Response {
    Response::new(200, "text/html; charset=utf-8", INDEX).with("Content-Security-Policy", POLICY)
}

/// `GET /app.js`.
pub fn script() -> Response {
    Response::new(200, "text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /app.css`.
pub fn style() -> Response {
    Response::new(200, "text/css; charset=utf-8", STYLE)
}
