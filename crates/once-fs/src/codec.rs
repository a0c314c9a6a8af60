//! A small binary encoding for `once`'s own records under `.once/`: little-endian integers and
//! length-prefixed byte strings, read back with a cursor that answers `None` on anything short
//! or malformed rather than panicking. A record that must be read fast (thousands of paths per
//! run) is written with these rather than JSON.

/// Appends fields to a byte buffer.
#[derive(Debug, Default)]
pub struct Encoder {
    bytes: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }

    pub fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    pub fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    /// A byte string, prefixed by its length.
    pub fn bytes(&mut self, value: &[u8]) {
        self.u64(value.len() as u64);
        self.bytes.extend_from_slice(value);
    }

    /// A path, as the platform encodes it.
    pub fn path(&mut self, path: &std::path::Path) {
        self.bytes(path.as_os_str().as_encoded_bytes());
    }

    /// Bytes of a length both sides know (a digest, a stamp).
    pub fn fixed(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
    }

    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads back what an [`Encoder`] wrote, in the same order.
#[derive(Debug)]
pub struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    pub fn new(bytes: &'a [u8]) -> Decoder<'a> {
        Decoder { rest: bytes }
    }

    pub fn u8(&mut self) -> Option<u8> {
        let (&first, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(first)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.fixed::<8>().map(|word| u64::from_le_bytes(*word))
    }

    /// A byte string written by [`Encoder::bytes`].
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u64()?).ok()?;
        if len > self.rest.len() {
            return None;
        }
        let (value, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(value)
    }

    /// A path written by [`Encoder::path`].
    pub fn path(&mut self) -> Option<std::path::PathBuf> {
        let bytes = self.bytes()?;
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Some(std::ffi::OsStr::from_bytes(bytes).into())
        }
        #[cfg(not(unix))]
        {
            std::str::from_utf8(bytes)
                .ok()
                .map(std::path::PathBuf::from)
        }
    }

    /// `N` bytes written by [`Encoder::fixed`].
    pub fn fixed<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let (value, rest) = self.rest.split_first_chunk::<N>()?;
        self.rest = rest;
        Some(value)
    }

    /// Whether everything was read: a record with bytes left over is not the one we wrote.
    pub fn is_done(&self) -> bool {
        self.rest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_back_in_order_and_a_short_record_is_none() {
        let mut out = Encoder::new();
        out.u8(7);
        out.u64(1 << 40);
        out.bytes(b"packages/a");
        out.fixed(&[9; 4]);
        let bytes = out.finish();
        let mut read = Decoder::new(&bytes);
        assert_eq!(read.u8(), Some(7));
        assert_eq!(read.u64(), Some(1 << 40));
        assert_eq!(read.bytes(), Some(&b"packages/a"[..]));
        assert_eq!(read.fixed::<4>(), Some(&[9; 4]));
        assert!(read.is_done());
        // Cut anywhere, the record reads as malformed, never as something else.
        for end in 0..bytes.len() {
            let mut read = Decoder::new(&bytes[..end]);
            let whole = read.u8().is_some()
                && read.u64().is_some()
                && read.bytes().is_some()
                && read.fixed::<4>().is_some();
            assert!(!whole, "a record cut at {end} read whole");
        }
        // A length beyond the end is refused, not trusted.
        let mut huge = Encoder::new();
        huge.u64(u64::MAX);
        assert_eq!(Decoder::new(&huge.finish()).bytes(), None);
    }
}
