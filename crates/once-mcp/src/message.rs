//! JSON-RPC 2.0 message shapes as MCP uses them.
//!
//! It classifies a decoded value into request, notification, response or
//! invalid message, and builds the reply and notification values. It must
//! never guess an id: a reply carries the request's id exactly as received, or
//! `null` when the message had no usable id.

use std::fmt;

use serde_json::{Map, Value, json};

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The HTTP headers of a 2026-07-28 request do not match its body, or one it needs is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// A request needs a client capability (an extension) it did not declare (2026-07-28).
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// A 2026-07-28 request names a protocol version we do not serve that way; `data` lists the
/// ones we do. (A request that needs `initialize` and came before it is [`INVALID_PARAMS`]: it
/// lacks the `_meta` that would make it valid without one. -32002, which LSP gives that case,
/// is a code the 2026-07-28 revision forbids.)
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How many characters of a value the client sent an error message may repeat.
const ECHO_CHARS: usize = 64;

/// What an error message repeats of a value the client sent: the value itself when it is short,
/// else its first [`ECHO_CHARS`] characters and `…`, so a huge name or id never comes back whole.
pub fn excerpt(text: &str) -> std::borrow::Cow<'_, str> {
    excerpt_to(text, ECHO_CHARS)
}

/// [`excerpt`] to `chars` characters, for messages that quote a whole sentence (a decoding
/// error that itself quotes the client's text).
pub fn excerpt_to(text: &str, chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(chars) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &text[..cut])),
    }
}

/// A request id: MCP allows a string or a number; we accept numbers whose
/// value is an integer (JSON-RPC says ids SHOULD NOT have fractional parts).
/// An integer written as one is echoed byte-exact; one written otherwise
/// (`-0`, `7.0`, `1e3`) is the same number and is echoed as the plain
/// integer (`0`, `7`, `1000`), which every client compares equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id that fits in `i64`.
    Integer(i64),
    /// An integer id above `i64::MAX`.
    Unsigned(u64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id; `None` when the value is not a string or an integer.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => n
                .as_i64()
                .map(Self::Integer)
                .or_else(|| n.as_u64().map(Self::Unsigned))
                .or_else(|| n.as_f64().and_then(integral).map(Self::Integer)),
            _ => None,
        }
    }

    /// The id as it goes back on the wire.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Integer(n) => Value::from(*n),
            Self::Unsigned(n) => Value::from(*n),
            Self::String(s) => Value::String(s.clone()),
        }
    }
}

/// The integer a float stands for, when it is one that an `f64` holds exactly (|x| ≤ 2⁵³);
/// serde_json reads `-0`, `7.0` and `1e3` as floats.
fn integral(x: f64) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    // The range check makes the cast exact (and -0 becomes 0: integers have no sign of zero).
    (x.fract() == 0.0 && x.abs() <= EXACT).then_some(x as i64)
}

impl fmt::Display for RequestId {
    /// For messages and logs: a long string id is cut (see [`excerpt`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Integer(n) => write!(f, "{n}"),
            Self::Unsigned(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{:?}", excerpt(s)),
        }
    }
}

/// What one decoded (non-batch) message is.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: it gets exactly one reply with its id.
    Request {
        /// The id to echo.
        id: RequestId,
        /// The method name.
        method: String,
        /// The params, if present and not `null`.
        params: Option<Value>,
    },
    /// A notification: it never gets a reply.
    Notification {
        /// The method name.
        method: String,
        /// The params, if present and not `null`.
        params: Option<Value>,
    },
    /// A response to something we sent; we send no requests, so it is ignored.
    Response,
    /// Not a JSON-RPC message: it gets an Invalid Request error.
    Invalid {
        /// The id to echo, when the message had a valid one.
        id: Option<RequestId>,
        /// What is wrong, for the error message.
        reason: String,
    },
}

/// Classifies one decoded value (a batch's elements go through here one by one).
pub fn classify(value: Value) -> Incoming {
    let Value::Object(mut object) = value else {
        return invalid(None, "a JSON-RPC message must be a JSON object");
    };
    let id = match object.get("id") {
        None => Ok(None),
        Some(raw) => RequestId::from_value(raw).map(Some).ok_or(()),
    };
    let Some(method) = object.remove("method") else {
        if object.contains_key("result") || object.contains_key("error") {
            return Incoming::Response;
        }
        return invalid(id.ok().flatten(), "the message has no \"method\"");
    };
    let Ok(id) = id else {
        return invalid(None, "\"id\" must be a string or an integer");
    };
    let Value::String(method) = method else {
        return invalid(id, "\"method\" must be a string");
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some(JSONRPC_VERSION) {
        return invalid(id, "\"jsonrpc\" must be \"2.0\"");
    }
    // `null` is read as "absent" to be lenient with clients that serialise an
    // empty optional that way. Params of another kind than JSON-RPC allows (an
    // object or an array) are kept: they are the method's invalid params
    // (-32602, answered by dispatch), and a notification's handler ignores
    // what it cannot read.
    let params = match object.remove("params") {
        None | Some(Value::Null) => None,
        Some(p) => Some(p),
    };
    match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    }
}

fn invalid(id: Option<RequestId>, reason: &str) -> Incoming {
    Incoming::Invalid {
        id,
        reason: format!("Invalid Request: {reason}"),
    }
}

/// A protocol-level error, before it is put in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// One of the error-code constants.
    pub code: i64,
    /// A one-sentence explanation.
    pub message: String,
    /// What the code's definition says the error carries (the supported versions of -32022).
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with this code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error carrying `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32602 with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// -32601 naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {}", excerpt(method)),
        )
    }
}

/// A success reply.
pub fn result_response(id: &RequestId, result: Value) -> Value {
    json!({"jsonrpc": JSONRPC_VERSION, "id": id.to_value(), "result": result})
}

/// An error reply; `id` is `None` when the request's id could not be known.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    json!({
        "jsonrpc": JSONRPC_VERSION,
        "id": id.map_or(Value::Null, RequestId::to_value),
        "error": body,
    })
}

/// A notification we send.
pub fn notification(method: &str, params: Map<String, Value>) -> Value {
    json!({"jsonrpc": JSONRPC_VERSION, "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_exactly() {
        for raw in [json!(0), json!(-7), json!(u64::MAX), json!("a\u{0}b")] {
            assert_eq!(RequestId::from_value(&raw).unwrap().to_value(), raw);
        }
        for raw in [json!(null), json!(1.5), json!(true), json!([1]), json!({})] {
            assert_eq!(RequestId::from_value(&raw), None);
        }
        for (raw, id) in [(json!(-0.0), 0), (json!(7.0), 7), (json!(-3e3), -3000)] {
            assert_eq!(RequestId::from_value(&raw), Some(RequestId::Integer(id)));
        }
        assert_eq!(RequestId::from_value(&json!(1e300)), None);
    }

    #[test]
    fn excerpts_cut_on_characters() {
        assert_eq!(excerpt("short"), "short");
        let long = "é".repeat(100);
        assert_eq!(excerpt(&long), format!("{}…", "é".repeat(64)));
        assert_eq!(excerpt(&"x".repeat(64)), "x".repeat(64));
    }

    #[test]
    fn classification() {
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
            Incoming::Response
        );
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "method": "x"})),
            Incoming::Notification { .. }
        ));
        assert!(matches!(
            classify(json!({"jsonrpc": "1.0", "id": "a", "method": "x"})),
            Incoming::Invalid {
                id: Some(RequestId::String(_)),
                ..
            }
        ));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": [1], "method": "x"})),
            Incoming::Invalid { id: None, .. }
        ));
    }
}
