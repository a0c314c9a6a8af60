//! The MCP protocol versions this server speaks and what each one knows.
//!
//! Every version-dependent field the server emits is decided here, so that a
//! client is never sent a field its version does not define. It must never
//! hold connection state: negotiation is a pure function of the client's ask.

use std::fmt;

/// A protocol revision, oldest first (so `Ord` follows the spec's history).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// `2024-11-05`: tools are name, description and inputSchema only.
    V2024_11_05,
    /// `2025-03-26`: adds tool annotations (title inside them), progress
    /// messages and JSON-RPC batches.
    V2025_03_26,
    /// `2025-06-18`: adds tool title, outputSchema and structuredContent;
    /// removes batches.
    V2025_06_18,
    /// `2025-11-25`: the newest revision with a handshake, preferred by `initialize`.
    V2025_11_25,
    /// `2026-07-28`: no handshake; each request carries this version in its `_meta` (see
    /// `era.rs`). Never the answer to `initialize`.
    V2026_07_28,
}

impl ProtocolVersion {
    /// The version `initialize` answers when a client asks for one it cannot have.
    pub const LATEST: Self = Self::V2025_11_25;

    /// The versions served per request, without a handshake, newest first.
    pub const MODERN: [Self; 1] = [Self::V2026_07_28];

    /// The versions served after `initialize`, newest first.
    pub const HANDSHAKE: [Self; 4] = [
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// Every version we speak, newest first.
    pub const ALL: [Self; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The version for a wire string, if we speak it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// What `initialize` answers to a client asking for `requested`: the same version if we
    /// speak it with a handshake, else our latest handshake version (the lifecycle spec's rule;
    /// a revision without a handshake cannot be the answer to one).
    pub fn negotiate(requested: &str) -> Self {
        Self::parse(requested)
            .filter(|v| !v.is_modern())
            .unwrap_or(Self::LATEST)
    }

    /// Whether requests of this version carry it in `_meta`, with no handshake.
    pub fn is_modern(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// Tool `annotations` (hints) exist.
    pub fn has_tool_annotations(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Tool `title` is a top-level field (BaseMetadata).
    pub fn has_tool_title(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// The tool's display title can only travel as `annotations.title`.
    pub fn title_in_annotations(self) -> bool {
        self.has_tool_annotations() && !self.has_tool_title()
    }

    /// Tool `outputSchema` and result `structuredContent` exist.
    pub fn has_structured_output(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// `notifications/progress` may carry a `message`.
    pub fn has_progress_message(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// JSON-RPC batches are part of the protocol (only 2025-03-26 had them).
    pub fn accepts_batches(self) -> bool {
        self == Self::V2025_03_26
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        for v in ProtocolVersion::HANDSHAKE {
            assert_eq!(ProtocolVersion::negotiate(v.as_str()), v);
        }
        assert_eq!(
            ProtocolVersion::negotiate("2026-07-28"),
            ProtocolVersion::V2025_11_25
        );
        assert!(ProtocolVersion::MODERN.iter().all(|v| v.is_modern()));
        assert!(!ProtocolVersion::HANDSHAKE.iter().any(|v| v.is_modern()));
        assert_eq!(
            ProtocolVersion::negotiate("2099-01-01"),
            ProtocolVersion::V2025_11_25
        );
    }

    #[test]
    fn features() {
        use ProtocolVersion::*;
        assert!(!V2024_11_05.has_tool_annotations());
        assert!(V2025_03_26.title_in_annotations());
        assert!(!V2025_06_18.title_in_annotations());
        assert!(V2025_06_18.has_structured_output() && !V2025_03_26.has_structured_output());
        assert!(V2025_03_26.accepts_batches() && !V2025_06_18.accepts_batches());
        assert!(!V2024_11_05.has_progress_message());
    }
}
