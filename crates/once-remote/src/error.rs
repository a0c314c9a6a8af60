//! The one error type of the client. Messages name the server and the call, never a header's
//! value (headers carry credentials): only header names may appear here.

/// What went wrong talking to a remote cache.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid remote cache url `{url}`: {reason}")]
    InvalidUrl { url: String, reason: &'static str },

    #[error("invalid remote cache header `{name}`: {reason}")]
    InvalidHeader { name: String, reason: &'static str },

    #[error("cannot reach the remote cache at `{url}`: {detail}")]
    CannotReach { url: String, detail: String },

    #[error("the remote cache at `{url}` has no instance named `{instance}`: {message}")]
    WrongInstance {
        url: String,
        instance: String,
        message: String,
    },

    #[error(
        "the remote cache at `{url}` refused the credentials ({code}): {message}; {}",
        sent_headers(.headers)
    )]
    Unauthenticated {
        url: String,
        code: &'static str,
        message: String,
        headers: Vec<String>,
    },

    #[error("the remote cache at `{url}` did not answer `{call}` within {timeout_ms} ms")]
    DeadlineExceeded {
        url: String,
        call: &'static str,
        timeout_ms: u128,
    },

    #[error(
        "the remote cache at `{url}` does not offer SHA256 digests, the only function once uses"
    )]
    NoSha256 { url: String },

    #[error(
        "blob `{digest}` from the remote cache at `{url}` does not match its digest (got `{actual}`)"
    )]
    DigestMismatch {
        url: String,
        digest: String,
        actual: String,
    },

    #[error(
        "blob `{digest}` from the remote cache at `{url}` goes on past the {size} bytes its digest states"
    )]
    BlobTooLong {
        url: String,
        digest: String,
        size: u64,
    },

    #[error(
        "cannot write a downloaded blob into `{folder}`: {detail}; check that the folder is writable and the disk has room"
    )]
    Spill { folder: String, detail: String },

    #[error("the remote cache at `{url}` failed `{call}` with {code}: {message}")]
    Status {
        url: String,
        call: &'static str,
        code: &'static str,
        message: String,
    },

    #[error("the remote cache at `{url}` broke the gRPC protocol in `{call}`: {detail}")]
    Protocol {
        url: String,
        call: &'static str,
        detail: String,
    },
}

fn sent_headers(names: &[String]) -> String {
    if names.is_empty() {
        "no headers were sent: configure the remote cache's headers".to_owned()
    } else {
        let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "check the value of the header(s) {} that were sent",
            list.join(", ")
        )
    }
}

/// The canonical name of a gRPC status code.
pub fn code_name(code: i32) -> &'static str {
    match code {
        0 => "OK",
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "an unknown status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_errors_name_headers_not_values() {
        let e = Error::Unauthenticated {
            url: "grpc://h:1".into(),
            code: "UNAUTHENTICATED",
            message: "bad token".into(),
            headers: vec!["authorization".into()],
        };
        let text = e.to_string();
        assert!(text.contains("`authorization`"), "{text}");
        let none = Error::Unauthenticated {
            url: "grpc://h:1".into(),
            code: "PERMISSION_DENIED",
            message: String::new(),
            headers: vec![],
        };
        assert!(none.to_string().contains("no headers were sent"));
    }
}
