//! The `remote` target: the bytes a hostile remote cache answers, read by the REAPI client
//! (`once_remote::check_answer`) exactly as a call reads them, as every answer it can get
//! (GetCapabilities, GetActionResult, FindMissingBlobs, BatchReadBlobs, ByteStream Read and
//! Write), fed in chunks of any size, then put through the client's own checks.
//!
//! Input: the first byte picks the answer, the second the chunk size, the third how many digests
//! the request named (`digest_of` of `"0"`, `"1"`, ...; its high bit makes the first claim
//! 2 MiB); the rest is the answer's body (gRPC frames). Properties: reading never panics and always ends, whatever sizes and length prefixes
//! the body states; a blob is accepted only with its digest's bytes; and no staging file is left
//! behind. It writes only in its scratch folder.

use once_remote::{Answer, check_answer, digest_of, reapi};

use crate::scratch::Scratch;

/// Frame headers, sizes and field keys of the messages the client reads.
pub const DICTIONARY: &[&str] = &[
    "\u{0}\u{0}\u{0}\u{0}\u{5}",
    "\u{0}\u{7f}\u{7f}\u{7f}\u{7f}",
    "\u{1}\u{0}\u{0}\u{0}\u{1}",
    "\u{12}\u{0}",
    "\u{a}\u{0}",
    "\u{52}\u{1}0",
    "\u{10}\u{7f}",
    "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9",
];

/// Reads `data` as the answer its first bytes say.
pub fn remote(data: &[u8]) {
    let [pick, chunk, named, body @ ..] = data else {
        return;
    };
    let answer = Answer::ALL[usize::from(*pick) % Answer::ALL.len()];
    let mut asked: Vec<reapi::Digest> = (0..usize::from(*named % 5))
        .map(|i| digest_of(i.to_string().as_bytes()))
        .collect();
    // The high bit claims 2 MiB for the first digest: a `Read` then stages its blob in a file.
    if named & 0x80 != 0
        && let Some(first) = asked.first_mut()
    {
        first.size_bytes = 2 << 20;
    }
    SCRATCH.with(|scratch| {
        let outcome = check_answer(
            answer,
            body,
            usize::from(*chunk).max(1),
            &asked,
            scratch.path(),
        );
        drop(outcome);
        let left = std::fs::read_dir(scratch.path())
            .map(|entries| entries.count())
            .unwrap_or(0);
        assert_eq!(left, 0, "a staging file was left behind");
    });
}

thread_local! {
    static SCRATCH: Scratch = Scratch::new("remote");
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_corpus_holds() {
        crate::replay_corpus("remote");
    }
}
