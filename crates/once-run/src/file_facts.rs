//! Facts about one file that keys, descriptions and the cache all ask for: its content's BLAKE3
//! and whether it is executable. A leaf: it imports nothing of this crate, so the modules that
//! share these facts need not import each other. Must never cache or record what it reads.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

/// The BLAKE3 digest of a file's content, read through `buffer`.
pub fn hash_file(path: &Path, buffer: &mut [u8]) -> io::Result<blake3::Hash> {
    let mut file = File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    loop {
        let n = file.read(buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize())
}

/// Whether a file has an executable bit. Windows has none: no output is recorded as executable
/// there, and an output restored there gets no mode.
#[cfg(unix)]
pub(crate) fn has_exec_bit(metadata: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

/// Whether a file has an executable bit. Windows has none: no output is recorded as executable
/// there, and an output restored there gets no mode.
#[cfg(windows)]
pub(crate) fn has_exec_bit(metadata: &fs::Metadata) -> bool {
    let _ = metadata;
    false
}
