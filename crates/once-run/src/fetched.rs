//! What a remote lookup hands the local cache: a hit's outputs and log, downloaded and verified.
//! Its own module so that the cache, which stores it, and the remote cache, which makes it, meet
//! here and neither imports the other for it. Holds data only; must never download or write.

use once_remote::Blob;

/// The outputs and log of a remote hit, downloaded and verified: in memory, or in staging files
/// of the cache's `cas/` folder (deleted when this is dropped unless the cache took them).
pub(crate) struct Fetched {
    /// Every blob, once each (outputs of equal content share one).
    pub blobs: Vec<Blob>,
    /// Path relative to the target's folder, index in `blobs`, executable.
    pub outputs: Vec<(String, usize, bool)>,
    /// The log's index in `blobs`.
    pub log: Option<usize>,
    pub duration_ms: u64,
}
