//! A budget on what decoding a protobuf message may cost, checked on the wire before prost
//! decodes it. Decoding grows memory by far more than a message's length: an empty entry of a
//! repeated field is two bytes on the wire and a struct of a hundred or more in memory, so 8 MiB
//! of empty `OutputFile`s would decode into some 600 MB. This walker counts the fields of a
//! message and, without knowing its schema, of every length-delimited field that parses as a
//! message too, and says whether the total stays within a budget. A field that parses only in
//! part counts the fields before its fault when it is long (prost may build that much before it
//! finds the fault), and nothing when it is short: short ones are strings (hashes, paths) that
//! look like fields by chance, too short to cost anything. The fields that carry a blob's bytes
//! (which may look like anything, and cost only their length) are named by the caller as paths of
//! field numbers and never followed. It allocates nothing of a stated size and must never recurse
//! deeper than [`MAX_DEPTH`], which is deeper than any REAPI message nests.

/// How deep nested messages are followed; deeper bytes count as one field each.
const MAX_DEPTH: usize = 12;
/// The length from which a field that parses only in part counts what parsed.
const LONG: usize = 4096;

/// Whether `bytes`, read as a protobuf message, has at most `budget` fields in all, nested
/// messages' fields included. Bytes that are not a message count the fields before the first
/// that does not parse: prost may build that much before it finds the fault.
/// `data` names the fields of bytes, each by the field numbers that lead to it from the top.
pub(crate) fn fields_within(bytes: &[u8], budget: usize, data: &[&[u32]]) -> bool {
    let mut walk = Walk {
        path: Vec::with_capacity(MAX_DEPTH),
        data,
        cap: budget,
    };
    walk.count(bytes).0 <= budget
}

struct Walk<'d> {
    /// The field numbers that lead to the bytes being counted.
    path: Vec<u32>,
    data: &'d [&'d [u32]],
    cap: usize,
}

impl Walk<'_> {
    /// The fields of `bytes` read as a message, nested ones included (up to the cap and then
    /// some), as far as the bytes parse, and whether they all did.
    fn count(&mut self, bytes: &[u8]) -> (usize, bool) {
        let mut total = 0usize;
        let mut bytes = bytes;
        while !bytes.is_empty() && total <= self.cap {
            let Some(key) = varint(&mut bytes) else {
                return (total, false);
            };
            let Ok(number) = u32::try_from(key >> 3) else {
                return (total, false);
            };
            if number == 0 {
                return (total, false);
            }
            total += 1;
            let rest = match key & 7 {
                0 => varint(&mut bytes).map(|_| bytes),
                1 => bytes.get(8..),
                5 => bytes.get(4..),
                2 => {
                    let len = varint(&mut bytes).and_then(|len| usize::try_from(len).ok());
                    match len.and_then(|len| bytes.get(..len).map(|inner| (len, inner))) {
                        Some((len, inner)) => {
                            self.path.push(number);
                            let follow = self.path.len() <= MAX_DEPTH
                                && !self.data.contains(&self.path.as_slice());
                            if follow {
                                let (n, whole) = self.count(inner);
                                if whole || len >= LONG {
                                    total = total.saturating_add(n);
                                }
                            }
                            self.path.pop();
                            bytes.get(len..)
                        }
                        None => None,
                    }
                }
                // Groups (3, 4) are not in proto3; prost refuses them.
                _ => None,
            };
            match rest {
                Some(rest) => bytes = rest,
                None => return (total, false),
            }
        }
        (total, bytes.is_empty())
    }
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..10 {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(bytes: &[u8], _depth: usize, cap: usize) -> (usize, bool) {
        Walk {
            path: Vec::new(),
            data: &[],
            cap,
        }
        .count(bytes)
    }

    fn fields_within(bytes: &[u8], budget: usize) -> bool {
        super::fields_within(bytes, budget, &[])
    }
    use crate::reapi;
    use prost::Message;

    #[test]
    fn nested_fields_are_counted() {
        let result = reapi::ActionResult {
            output_files: vec![
                reapi::OutputFile {
                    path: "out/a".into(),
                    digest: Some(crate::digest_of(b"a")),
                    ..Default::default()
                };
                3
            ],
            exit_code: 1,
            ..Default::default()
        };
        let bytes = result.encode_to_vec();
        // exit_code, 3 files, each: path, digest, and the digest's hash and size; a hash's hex
        // may parse as a field or two by chance.
        let fields = 1 + 3 * 4;
        let (n, whole) = count(&bytes, 0, 99);
        assert!(whole && (fields..=2 * fields).contains(&n), "{n}");
    }

    #[test]
    fn ten_thousand_outputs_stay_well_within_the_client_budget() {
        let result = reapi::ActionResult {
            output_files: (0..10_000)
                .map(|i| reapi::OutputFile {
                    path: format!("out/deep/folder/file-{i}.o"),
                    digest: Some(crate::digest_of(format!("{i}").as_bytes())),
                    is_executable: i % 2 == 0,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        assert!(fields_within(&result.encode_to_vec(), 100_000));
    }

    #[test]
    fn a_flood_of_empty_entries_is_over_budget() {
        // Two bytes each on the wire: field 2 (`output_files`), length 0.
        let mut flood: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], 1_000_000)
            .flatten()
            .collect();
        assert!(reapi::ActionResult::decode(&flood[..]).is_ok());
        assert!(!fields_within(&flood, 100_000));
        // A broken tail does not hide the flood before it, which prost builds before failing,
        // at the top or nested in a field.
        flood.push(0xff);
        assert!(!fields_within(&flood, 100_000));
        let mut nested = vec![0x12u8];
        let mut len = flood.len();
        while len >= 0x80 {
            nested.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        nested.push(len as u8);
        nested.extend_from_slice(&flood);
        assert!(!fields_within(&nested, 100_000));
    }

    #[test]
    fn the_bytes_of_a_blob_are_not_read_as_fields() {
        // Text that reads as a stream of 64-bit fields, as a batch answer's blob.
        let answer = reapi::BatchReadBlobsResponse {
            responses: vec![reapi::batch_read_blobs_response::Response {
                digest: Some(crate::digest_of(b"a")),
                data: vec![b'a'; 1 << 20],
                ..Default::default()
            }],
        };
        let bytes = answer.encode_to_vec();
        assert!(!fields_within(&bytes, 1000));
        assert!(super::fields_within(&bytes, 1000, &[&[1, 2]]));
    }

    #[test]
    fn bytes_that_are_no_message_count_what_parses() {
        assert!(fields_within(&[0xff; 20], 0));
        assert!(fields_within(&[], 0));
        assert_eq!(count(&[0x08, 0x01, 0xff], 0, 9), (1, false));
    }
}
