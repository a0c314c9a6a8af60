//! SHA-256 digests of blobs, the REAPI's content addresses. Every blob read from a server goes
//! through `verify` before anyone sees it; nothing here trusts a server's bytes.

use sha2::{Digest as _, Sha256};

use crate::reapi::Digest;

/// The digest of `data`: its lowercase hex SHA-256 and its length.
pub fn digest_of(data: &[u8]) -> Digest {
    Digest {
        hash: hex(&Sha256::digest(data)),
        size_bytes: i64::try_from(data.len()).unwrap_or(i64::MAX),
    }
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `hash/size`, the way digests appear in resource names and messages.
pub(crate) fn show(digest: &Digest) -> String {
    format!("{}/{}", digest.hash, digest.size_bytes)
}

/// `Err(actual digest)` unless `data` has `expected`'s size and hash.
pub(crate) fn verify(expected: &Digest, data: &[u8]) -> Result<(), Digest> {
    let size_matches = i64::try_from(data.len()).is_ok_and(|n| n == expected.size_bytes);
    let actual = digest_of(data);
    if size_matches && actual.hash.eq_ignore_ascii_case(&expected.hash) {
        Ok(())
    } else {
        Err(actual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_empty_is_the_known_sha256() {
        let d = digest_of(b"");
        assert_eq!(
            d.hash,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(d.size_bytes, 0);
    }

    #[test]
    fn verify_rejects_other_bytes_and_other_sizes() {
        let d = digest_of(b"hello");
        assert!(verify(&d, b"hello").is_ok());
        assert!(verify(&d, b"hellO").is_err());
        let wrong_size = Digest {
            size_bytes: 4,
            ..d.clone()
        };
        assert!(verify(&wrong_size, b"hello").is_err());
    }
}
