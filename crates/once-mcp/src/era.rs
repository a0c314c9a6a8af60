//! The two eras of MCP, told apart per request: the handshake era (`initialize`, then requests
//! that lean on it; 2024-11-05 to 2025-11-25) and the 2026-07-28 revision, whose requests carry
//! their protocol version and client capabilities in `_meta` and need nothing before them.
//!
//! [`classify`] reads one request and says which era serves it, or why it is malformed; the
//! dispatcher in `server.rs` does the rest, so stdio, the socket door and HTTP all decide the
//! same way. [`check_http_headers`] is the one rule only HTTP has: headers that mirror the body
//! must match it. This module must never hold connection state: a modern request is judged by
//! what it carries, never by what came before it on the connection.

use serde_json::{Map, Value, json};

use crate::message::{
    HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY, RpcError,
    UNSUPPORTED_PROTOCOL_VERSION, excerpt,
};
use crate::task::TASKS_EXTENSION;
use crate::tool::LogLevel;
use crate::version::ProtocolVersion;

/// `_meta` key: the protocol version of one request.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for one request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest level of log message the client wants for one request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server's name and version.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// How long a client may keep `tools/list` and `server/discover`: an hour. Both are fixed for
/// the life of the server process (the gates come from its command line), and a restart is a
/// new process, which a client's cache does not outlive.
pub const CATALOG_TTL_MS: u64 = 3_600_000;
/// Who may keep them: `private`, since the catalog follows the flags one person chose and the
/// discover answer names their workspace; no shared cache may hand either to someone else.
pub const CATALOG_CACHE_SCOPE: &str = "private";

/// The methods that exist only without a handshake.
const MODERN_ONLY: [&str; 1] = ["server/discover"];

/// What a request that carries the 2026-07-28 protocol fields asks with them.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The version it names (one of [`ProtocolVersion::MODERN`]).
    pub version: ProtocolVersion,
    /// `clientInfo` as `name version`, so a tool can say who asked.
    pub client: Option<String>,
    /// The level of log messages it wants; none without one.
    pub log_level: Option<LogLevel>,
    /// Whether its capabilities' `extensions` name `io.modelcontextprotocol/tasks`: only then
    /// may it be answered with a task, or ask about one.
    pub tasks: bool,
}

/// Which era serves a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Era {
    /// No protocol fields in `_meta`: served as the handshake negotiated (or refused before it).
    Handshake,
    /// Served on its own, with what it carries.
    Modern(Envelope),
}

/// The start of every message about a missing or malformed envelope.
const NEEDS_ENVELOPE: &str = "Invalid params: a request without `initialize` must carry `_meta` \
                              with `io.modelcontextprotocol/protocolVersion` and \
                              `io.modelcontextprotocol/clientCapabilities`";

/// The error of a request that needs `initialize` and came without it or an envelope.
pub fn not_initialized(method: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "{NEEDS_ENVELOPE}; send `initialize` (and wait for its reply) before {}",
        excerpt(method)
    ))
}

/// Decides the era of request `method` with `params`. A request is modern when its `_meta` holds
/// either protocol field, or when its method exists only in the new revision; a modern request
/// missing a field, or naming a version we do not serve per request, is an error.
pub fn classify(method: &str, params: Option<&Value>) -> Result<Era, RpcError> {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let carries = |key| meta.is_some_and(|m| m.contains_key(key));
    let modern = carries(PROTOCOL_VERSION_KEY)
        || carries(CLIENT_CAPABILITIES_KEY)
        || MODERN_ONLY.contains(&method);
    if !modern {
        return Ok(Era::Handshake);
    }
    let empty = Map::new();
    envelope(meta.unwrap_or(&empty)).map(Era::Modern)
}

fn envelope(meta: &Map<String, Value>) -> Result<Envelope, RpcError> {
    let malformed = |what: &str| RpcError::invalid_params(format!("{NEEDS_ENVELOPE}; {what}"));
    let version = match meta.get(PROTOCOL_VERSION_KEY) {
        None => {
            return Err(malformed(
                "`io.modelcontextprotocol/protocolVersion` is missing",
            ));
        }
        Some(Value::String(version)) => version,
        Some(_) => {
            return Err(malformed(
                "`io.modelcontextprotocol/protocolVersion` must be a string",
            ));
        }
    };
    let Some(version) = ProtocolVersion::parse(version).filter(|v| v.is_modern()) else {
        return Err(unsupported_version(version));
    };
    let capabilities = match meta.get(CLIENT_CAPABILITIES_KEY) {
        None => {
            return Err(malformed(
                "`io.modelcontextprotocol/clientCapabilities` is missing",
            ));
        }
        Some(Value::Object(capabilities)) => capabilities,
        Some(_) => {
            return Err(malformed(
                "`io.modelcontextprotocol/clientCapabilities` must be an object",
            ));
        }
    };
    let tasks = capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION));
    let log_level = match meta.get(LOG_LEVEL_KEY) {
        None | Some(Value::Null) => None,
        Some(level) => Some(level.as_str().and_then(LogLevel::parse).ok_or_else(|| {
            RpcError::invalid_params(
                "Invalid params: `io.modelcontextprotocol/logLevel` must be one of debug, info, \
                 notice, warning, error, critical, alert, emergency",
            )
        })?),
    };
    Ok(Envelope {
        version,
        client: client_name(meta.get(CLIENT_INFO_KEY)),
        log_level,
        tasks,
    })
}

/// -32022 for `requested`, listing the versions served per request (the handshake versions are
/// named in the message: a client that wants one of them sends `initialize`).
pub fn unsupported_version(requested: &str) -> RpcError {
    let modern: Vec<&str> = ProtocolVersion::MODERN.iter().map(|v| v.as_str()).collect();
    let handshake: Vec<&str> = ProtocolVersion::HANDSHAKE
        .iter()
        .map(|v| v.as_str())
        .collect();
    let (last, rest) = handshake.split_last().unwrap_or((&"", &[]));
    RpcError::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version `{}`: this server serves `{}` per request, and {} and \
             {last} after `initialize`",
            excerpt(requested),
            modern.join("`, `"),
            rest.join(", "),
        ),
    )
    .with_data(json!({"supported": modern, "requested": excerpt(requested)}))
}

/// -32021 for a `tasks/…` request whose capabilities do not declare the tasks extension.
pub fn tasks_not_declared(method: &str) -> RpcError {
    RpcError::new(
        MISSING_CLIENT_CAPABILITY,
        format!(
            "missing required client capability: `{}` is part of the `{TASKS_EXTENSION}` \
             extension; declare it under `extensions` in \
             `io.modelcontextprotocol/clientCapabilities`",
            excerpt(method)
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// -32601 for a method the new revision does not have, saying what replaces it.
pub fn not_in_modern(method: &str) -> RpcError {
    let instead = match method {
        "ping" => "",
        "logging/setLevel" => {
            "; send `io.modelcontextprotocol/logLevel` in a request's `_meta` instead"
        }
        "initialize" => "; send it without `_meta` protocol fields to use an older protocol",
        _ => return RpcError::method_not_found(method),
    };
    RpcError::new(
        METHOD_NOT_FOUND,
        format!("Method not found: {method} (it is not part of protocol 2026-07-28{instead})"),
    )
}

/// -32602 for `resources/read`: we list no resources, so every uri names none (the revision's
/// code for a missing resource, with the uri as `data`).
pub fn no_such_resource(params: Option<&Value>) -> RpcError {
    let uri = params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    RpcError::invalid_params(format!(
        "Invalid params: no resource `{}`: this server offers tools only, and `resources/list` is empty",
        excerpt(uri)
    ))
    .with_data(json!({"uri": excerpt(uri)}))
}

/// The fields every modern result carries: `resultType` first, `_meta` naming the server last
/// (merged into a `_meta` the result already has).
pub fn stamp_result(result: Value, name: &str, version: &str) -> Value {
    let Value::Object(fields) = result else {
        return result;
    };
    let mut stamped = Map::new();
    // A task's answer says `task` itself; every other result is `complete`.
    let result_type = match fields.get("resultType") {
        Some(Value::String(own)) if own == "task" => "task",
        _ => "complete",
    };
    stamped.insert("resultType".into(), json!(result_type));
    let mut meta = Map::new();
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("resultType", _) => {}
            ("_meta", Value::Object(own)) => meta.extend(own),
            (_, value) => {
                stamped.insert(key, value);
            }
        }
    }
    let mut server = Map::new();
    server.insert(
        SERVER_INFO_KEY.into(),
        json!({"name": name, "version": version}),
    );
    server.extend(meta);
    stamped.insert("_meta".into(), Value::Object(server));
    Value::Object(stamped)
}

/// What HTTP headers of a modern request say, as the transport read them (trimmed).
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`, possibly in the `=?base64?…?=` form.
    pub name: Option<&'a str>,
}

/// Whether the HTTP request with `headers` and JSON-RPC `body` should be served as the new
/// revision: its body carries the protocol fields, or its version header names a modern version.
pub fn is_modern_http(headers: &HttpHeaders<'_>, body: &Value) -> bool {
    let header_modern = headers
        .protocol_version
        .and_then(ProtocolVersion::parse)
        .is_some_and(ProtocolVersion::is_modern);
    let method = body.get("method").and_then(Value::as_str).unwrap_or("");
    header_modern
        || matches!(
            classify(method, body.get("params")),
            Ok(Era::Modern(_)) | Err(_)
        )
}

/// Checks a modern request's mirrored headers against its body: -32020 when one it needs is
/// missing or says something else than the body. The body's own envelope is judged by the loop.
pub fn check_http_headers(headers: &HttpHeaders<'_>, body: &Value) -> Result<(), RpcError> {
    let mismatch =
        |what: String| RpcError::new(HEADER_MISMATCH, format!("header mismatch: {what}"));
    let method = body.get("method").and_then(Value::as_str).unwrap_or("");
    let body_version = body
        .pointer("/params/_meta")
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str);
    match (headers.protocol_version, body_version) {
        (None, _) => {
            return Err(mismatch(
                "send the `MCP-Protocol-Version` header with every request".into(),
            ));
        }
        (Some(header), Some(body)) if header != body => {
            return Err(mismatch(format!(
                "`MCP-Protocol-Version` is `{}` but `_meta` names `{}`; send the same version in both",
                excerpt(header),
                excerpt(body)
            )));
        }
        _ => {}
    }
    match headers.method {
        None => {
            return Err(mismatch(
                "send the `Mcp-Method` header with every request".into(),
            ));
        }
        Some(header) if header != method => {
            return Err(mismatch(format!(
                "`Mcp-Method` is `{}` but the body's method is `{}`; send the same method in both",
                excerpt(header),
                excerpt(method)
            )));
        }
        _ => {}
    }
    let named = match method {
        "tools/call" | "prompts/get" => body.pointer("/params/name"),
        "resources/read" => body.pointer("/params/uri"),
        // The tasks extension routes by task, so intermediaries can find the server holding it.
        "tasks/get" | "tasks/update" | "tasks/cancel" => body.pointer("/params/taskId"),
        _ => return Ok(()),
    };
    let Some(named) = named.and_then(Value::as_str) else {
        // The body itself is malformed: the loop says so with -32602.
        return Ok(());
    };
    let Some(header) = headers.name else {
        return Err(mismatch(format!(
            "send the `Mcp-Name` header with `{method}` requests"
        )));
    };
    let decoded = decode_header_value(header).ok_or_else(|| {
        mismatch(
            "`Mcp-Name` is not valid `=?base64?…?=`: encode the UTF-8 name in standard base64"
                .into(),
        )
    })?;
    if decoded != named {
        return Err(mismatch(format!(
            "`Mcp-Name` is `{}` but the body names `{}`; send the same name in both",
            excerpt(&decoded),
            excerpt(named)
        )));
    }
    Ok(())
}

/// A header value, decoded when it is in the `=?base64?…?=` form; `None` when that form does
/// not hold base64 of UTF-8.
fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64_decode(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// Standard base64 (padding optional). Twenty lines, rather than a crate for one header.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let text = text.trim_end_matches('=').as_bytes();
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut bits = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            bits |= sextet(c)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// The discover result: the versions served per request, what we offer and how to use it.
pub fn discover_result(
    instructions: &str,
    workspace_meta: Option<(&str, &str)>,
    capabilities: Value,
) -> Value {
    let mut result = Map::new();
    let versions: Vec<&str> = ProtocolVersion::MODERN.iter().map(|v| v.as_str()).collect();
    result.insert("supportedVersions".into(), json!(versions));
    result.insert("capabilities".into(), capabilities);
    if !instructions.is_empty() {
        result.insert("instructions".into(), json!(instructions));
    }
    result.insert("ttlMs".into(), json!(CATALOG_TTL_MS));
    result.insert("cacheScope".into(), json!(CATALOG_CACHE_SCOPE));
    if let Some((key, root)) = workspace_meta {
        result.insert("_meta".into(), json!({ key: root }));
    }
    Value::Object(result)
}

/// Adds the caching hints to a list result.
pub fn cacheable(mut result: Value) -> Value {
    if let Value::Object(fields) = &mut result {
        fields.insert("ttlMs".into(), json!(CATALOG_TTL_MS));
        fields.insert("cacheScope".into(), json!(CATALOG_CACHE_SCOPE));
    }
    result
}

/// `clientInfo` as `name version`, when it has a name.
pub(crate) fn client_name(info: Option<&Value>) -> Option<String> {
    let info = info?;
    let name = info.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    Some(match info.get("version").and_then(Value::as_str) {
        Some(version) if !version.trim().is_empty() => format!("{name}/{}", version.trim()),
        _ => name.to_owned(),
    })
}

/// The code's HTTP status, as the 2026-07-28 transport asks: 404 for an unknown method, 400 for
/// a malformed or unsupported request, 200 for everything else (tool errors included).
pub fn http_status(code: Option<i64>) -> u16 {
    match code {
        Some(METHOD_NOT_FOUND) => 404,
        Some(INVALID_PARAMS | HEADER_MISMATCH | UNSUPPORTED_PROTOCOL_VERSION) => 400,
        Some(crate::message::INVALID_REQUEST | crate::message::PARSE_ERROR) => 400,
        _ => 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_names_decode() {
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(decode_header_value("=?base64?*?="), None);
        assert_eq!(base64_decode("YQ").as_deref(), Some(&b"a"[..]));
        assert_eq!(base64_decode("YWI=").as_deref(), Some(&b"ab"[..]));
    }

    #[test]
    fn classification() {
        assert_eq!(classify("tools/list", None), Ok(Era::Handshake));
        assert!(classify("server/discover", None).is_err());
        let meta = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {},
                                    CLIENT_INFO_KEY: {"name": "c", "version": "1"}}});
        let Ok(Era::Modern(envelope)) = classify("tools/list", Some(&meta)) else {
            panic!("modern");
        };
        assert_eq!(envelope.client.as_deref(), Some("c/1"));
        assert_eq!(envelope.log_level, None);
    }

    #[test]
    fn headers_must_match_the_body() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "é", "_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}});
        let good = HttpHeaders {
            protocol_version: Some("2026-07-28"),
            method: Some("tools/call"),
            name: Some("=?base64?w6k=?="),
        };
        assert_eq!(check_http_headers(&good, &body), Ok(()));
        for bad in [
            HttpHeaders {
                protocol_version: None,
                ..good
            },
            HttpHeaders {
                method: Some("tools/list"),
                ..good
            },
            HttpHeaders {
                name: Some("e"),
                ..good
            },
            HttpHeaders { name: None, ..good },
            HttpHeaders {
                protocol_version: Some("2025-11-25"),
                ..good
            },
        ] {
            assert_eq!(
                check_http_headers(&bad, &body).map_err(|e| e.code),
                Err(HEADER_MISMATCH)
            );
        }
    }
}
