//! Every answer the client reads, as one function of a body's bytes: the same framing, decoding
//! bounds and checks a call applies, without a server. It is what the fuzz target drives (so a
//! hostile answer can only ever be an error) and must never grow a path of its own that a real
//! call does not take.

use std::path::Path;

use bytes::Bytes;

use crate::blob::BlobSink;
use crate::client::{
    BatchError, UNARY, accept_batch, accept_capabilities, missing_among, read_bounds,
};
use crate::grpc::{self, CallError};
use crate::proto::google::bytestream as bs;
use crate::reapi;

/// The calls whose answers the client reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    GetCapabilities,
    GetActionResult,
    FindMissingBlobs,
    BatchReadBlobs,
    /// ByteStream `Read` of one blob.
    Read,
    /// ByteStream `Write`'s one answer.
    Write,
}

impl Answer {
    pub const ALL: [Answer; 6] = [
        Answer::GetCapabilities,
        Answer::GetActionResult,
        Answer::FindMissingBlobs,
        Answer::BatchReadBlobs,
        Answer::Read,
        Answer::Write,
    ];
}

/// Reads `body` (gRPC frames, fed in chunks of `chunk` bytes) as the answer to `answer` about
/// `asked` (the digests the request named; the first one is the blob a `Read` asked for), and
/// runs the client's checks on it. A blob that needs a file goes into `spill`, and is deleted.
/// `Err` carries what the client would have said, without a server's name.
pub fn check_answer(
    answer: Answer,
    body: &[u8],
    chunk: usize,
    asked: &[reapi::Digest],
    spill: &Path,
) -> Result<(), String> {
    let protocol = |e: CallError| format!("{e:?}");
    match answer {
        Answer::GetCapabilities => {
            let caps: reapi::ServerCapabilities = unary(body, chunk)?;
            accept_capabilities(caps).ok_or("no SHA256")?;
        }
        Answer::GetActionResult => {
            let _: reapi::ActionResult = unary(body, chunk)?;
        }
        Answer::FindMissingBlobs => {
            let response: reapi::FindMissingBlobsResponse = unary(body, chunk)?;
            missing_among(asked, response).map_err(protocol)?;
        }
        Answer::BatchReadBlobs => {
            let response: reapi::BatchReadBlobsResponse = unary(body, chunk)?;
            accept_batch(asked, response).map_err(|e| match e {
                BatchError::Call(e) => protocol(e),
                BatchError::Mismatch { .. } => "a blob that does not match its digest".to_owned(),
            })?;
        }
        Answer::Read => {
            let digest = asked.first().cloned().unwrap_or_default();
            let size = u64::try_from(digest.size_bytes).map_err(|_| "a negative size")?;
            let mut sink = BlobSink::new(&digest, spill).map_err(|e| format!("{e:?}"))?;
            let bounds = read_bounds(size);
            let messages: Vec<bs::ReadResponse> =
                grpc::decode_body(body, chunk, bounds).map_err(protocol)?;
            for message in messages {
                sink.write(&message.data).map_err(|e| format!("{e:?}"))?;
            }
            sink.finish().map_err(|e| format!("{e:?}"))?;
        }
        Answer::Write => {
            let _: bs::WriteResponse = unary(body, chunk)?;
        }
    }
    Ok(())
}

/// The one message of a unary answer.
fn unary<R: prost::Message + Default>(body: &[u8], chunk: usize) -> Result<R, String> {
    let mut messages: Vec<R> =
        grpc::decode_body(body, chunk, UNARY).map_err(|e| format!("{e:?}"))?;
    match messages.len() {
        1 => Ok(messages.remove(0)),
        n => Err(format!("{n} messages for a unary call")),
    }
}

/// The bytes of `message` framed as a server frames it: for building answers to check.
pub fn frame<M: prost::Message>(message: &M) -> Bytes {
    // A message over 4 GiB cannot be built in memory here; the fallback is never taken.
    grpc::frame(message).unwrap_or_default()
}
