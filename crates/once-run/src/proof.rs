//! The no-op proof: a run whose every action was a local cache hit leaves, beside the cache, a
//! record of everything that decided it, so the same request made again can be answered by
//! checking that record instead of loading the workspace and computing every key.
//!
//! # What a proof holds, and why it is enough
//!
//! A run's result is a function of its request and of what it read. A proof holds both:
//! - the **request** ([`Request`]): the command line, the folder it was started in, the whole
//!   environment and the identity of the `once` binary (its path and stamp), as one digest that
//!   also names the proof's file (`.once/cache/proofs/<digest>`), so each request has its own;
//! - the workspace's **freshness** ([`once_graph::Freshness`]): every manifest loading read, with
//!   its stamp and content hash, and every look-up it made (manifests absent, globs expanded);
//! - what the keys and the look-ups **saw** ([`crate::witness`]): every folder listed, ignore
//!   file read, input file hashed, program found on `PATH`, cache pack read and output checked,
//!   each recorded before (or as) it was read;
//! - the **report** of the proven run, replayed as the new run's.
//!
//! A later run with the same request replays the report, without loading or keying anything,
//! only when the workspace root is found where it was, the freshness check says loading would
//! read the same manifests, and every record still holds: a stamp that proves the path unchanged,
//! or, where a stamp cannot (a path changed within the racy window of its record), the same
//! content digest or the same listing. Anything else (a record that cannot be checked, a proof
//! that does not decode, a different binary) is a normal run. A proof is only written by a run
//! that succeeded with every action a local hit (an output it restored is recorded by what it
//! wrote), whose witness recorded every read, with no remote cache, and no manifest it could not
//! read.
//!
//! The proof is a cache, never needed for correctness: deleting `.once/cache/proofs` costs one
//! normal run. It is renamed into place without an fsync; a torn or foreign file fails its
//! checksum and is ignored.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use once_fs::codec::{Decoder, Encoder};
use once_fs::{STAMP_BYTES, Stamp, write_replacing};
use once_graph::Freshness;

use crate::report::RunReport;
use crate::witness::{Seen, Witness};

/// The first bytes of a proof; a new layout gets a new magic, and old proofs are ignored.
const MAGIC: &[u8] = b"once no-op proof v2\n";

/// Records per section of a proof: enough sections for the threads to share the work evenly.
const SECTION: usize = 512;

/// At most this many proofs are kept (one per distinct request); the oldest go first.
const KEEP: usize = 8;

/// What a run was asked, as far as anything besides the files can change its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    digest: [u8; 32],
}

impl Request {
    /// The request this process is making: its arguments, current folder, environment and
    /// binary. `None` when one of them cannot be read (no proof is used or written then).
    pub fn of_this_process() -> Option<Request> {
        let args: Vec<OsString> = std::env::args_os().collect();
        let cwd = std::env::current_dir().ok()?;
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let exe = std::env::current_exe().ok()?;
        let stamp = Stamp::new(&fs::metadata(&exe).ok()?, SystemTime::now());
        Some(Request::of(&args, &cwd, &env, &exe, &stamp))
    }

    /// The request made of these parts; the environment in any order.
    pub fn of(
        args: &[OsString],
        cwd: &Path,
        env: &[(OsString, OsString)],
        exe: &Path,
        exe_stamp: &Stamp,
    ) -> Request {
        let mut hasher = blake3::Hasher::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(MAGIC);
        field(exe.as_os_str().as_encoded_bytes());
        // The stamp without its "racy" flag: the same binary is the same whenever it is looked at.
        field(&exe_stamp.to_bytes()[..STAMP_BYTES - 1]);
        field(cwd.as_os_str().as_encoded_bytes());
        field(b"args");
        for arg in args {
            field(arg.as_encoded_bytes());
        }
        field(b"env");
        let mut env: Vec<&(OsString, OsString)> = env.iter().collect();
        env.sort();
        for (name, value) in env {
            field(name.as_encoded_bytes());
            field(value.as_encoded_bytes());
        }
        Request {
            digest: *hasher.finalize().as_bytes(),
        }
    }

    fn file_name(&self) -> String {
        blake3::Hash::from_bytes(self.digest).to_hex().to_string()
    }
}

fn folder(root: &Path) -> PathBuf {
    root.join(".once").join("cache").join("proofs")
}

/// Writes the proof that `report`, the answer to `request` in the workspace whose loading read
/// `freshness`, is what the same request gets while everything `witness` saw holds. Says nothing
/// and writes nothing when the witness missed a read; a proof that cannot be written costs the
/// next run its speed, never its answer.
pub fn prove(request: &Request, freshness: &Freshness, witness: Witness, report: &RunReport) {
    let root = freshness.root();
    let Some(records) = witness.into_records() else {
        return;
    };
    // A folder loading listed (a glob's, the survey's) and the keys listed again, unchanged in
    // between: the witness's record of it checks what the workspace's would. A stamp that was
    // not racy when loading took it proves nothing moved in the folder before the keys' look.
    let listed: HashMap<&Path, &Stamp> = records
        .iter()
        .filter_map(|(path, seen)| match seen {
            Seen::Folder {
                follow: false,
                stamp,
                ..
            } if !stamp.is_racy() => Some((path.strip_prefix(root).ok()?, stamp)),
            _ => None,
        })
        .collect();
    let mut freshness = freshness.clone();
    freshness.leave_listed_folders_to(|rel, stamp| listed.get(rel) == Some(&stamp));
    let Ok(report_json) = serde_json::to_vec(report) else {
        return;
    };
    let mut out = Encoder::new();
    out.fixed(MAGIC);
    out.fixed(&request.digest);
    freshness.encode(&mut out);
    // In sections, so the threads that check them decode them too.
    let sections: Vec<&[(PathBuf, Seen)]> = records.chunks(SECTION).collect();
    out.u64(sections.len() as u64);
    for section in sections {
        let mut part = Encoder::new();
        part.u64(section.len() as u64);
        for (path, seen) in section {
            // Inside the root, relative to it: each look-up starts from the root's descriptor.
            part.path(path.strip_prefix(root).unwrap_or(path));
            encode_seen(&mut part, seen);
        }
        out.bytes(&part.finish());
    }
    out.bytes(&report_json);
    let mut bytes = out.finish();
    let checksum = blake3::hash(&bytes);
    bytes.extend_from_slice(checksum.as_bytes());
    let folder = folder(root);
    // Never through a link planted in `.once/` (see `once_fs::state_dir`).
    if let Err(error) = crate::cache::state_dir(&folder) {
        tracing::debug!(%error, "cannot keep the no-op proof");
        return;
    }
    if let Err(error) = write_replacing(&folder.join(request.file_name()), &bytes) {
        tracing::debug!(%error, "cannot keep the no-op proof");
        return;
    }
    prune(&folder);
}

/// Whether a proof for `request` is kept in the workspace at `root` (it may still not hold).
pub fn exists(root: &Path, request: &Request) -> bool {
    folder(root).join(request.file_name()).is_file()
}

/// The report of the run that `request` proved a no-op in the workspace at `root`, when
/// everything it saw still holds: the answer the same request gets now, without running
/// anything. `None` (a normal run follows) at the first doubt.
pub fn replay(root: &Path, request: &Request) -> Option<RunReport> {
    let bytes = fs::read(folder(root).join(request.file_name())).ok()?;
    let (body, checksum) = bytes.split_last_chunk::<32>()?;
    if blake3::hash(body).as_bytes() != checksum {
        return None;
    }
    let mut input = Decoder::new(body);
    if input.fixed::<{ MAGIC.len() }>()? != MAGIC || *input.fixed::<32>()? != request.digest {
        return None;
    }
    let freshness = Freshness::decode(&mut input)?;
    if freshness.root() != root {
        return None;
    }
    let mut sections = Vec::new();
    for _ in 0..input.u64()? {
        sections.push(input.bytes()?);
    }
    let report_json = input.bytes()?;
    let lookup = once_fs::Lookup::new(root).ok()?;
    if !input.is_done() || !holds(&lookup, &freshness, &sections) {
        return None;
    }
    let mut report: RunReport = serde_json::from_slice(report_json).ok()?;
    report.owner = None;
    report.started_at = crate::schedule::unix_millis();
    Some(report)
}

/// Whether the workspace is fresh and every record holds, checked on as many threads as the
/// machine has cores (a no-op's cost is this check: thousands of `stat`s). The threads take
/// blocks of records as they go, and one of them checks the workspace first, so none idles
/// while another still has work.
fn holds(lookup: &once_fs::Lookup, freshness: &Freshness, sections: &[&[u8]]) -> bool {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let failed = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let check = |first: bool| {
        if first && freshness.is_stale_from(lookup) {
            tracing::debug!("the no-op proof fails: a manifest changed");
            failed.store(true, Ordering::Relaxed);
            return;
        }
        let mut buffer = vec![0u8; 64 * 1024];
        while let Some(section) = sections.get(next.fetch_add(1, Ordering::Relaxed)) {
            if failed.load(Ordering::Relaxed) || !section_holds(lookup, section, &mut buffer) {
                failed.store(true, Ordering::Relaxed);
                return;
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| check(false));
        }
        check(true);
    });
    !failed.load(Ordering::Relaxed)
}

/// Whether every record of one section holds (a section that does not decode does not).
fn section_holds(lookup: &once_fs::Lookup, section: &[u8], buffer: &mut [u8]) -> bool {
    let mut input = Decoder::new(section);
    let Some(count) = input.u64() else {
        return false;
    };
    for _ in 0..count {
        let (Some(path), Some(seen)) = (input.path(), decode_seen(&mut input)) else {
            return false;
        };
        if !seen.holds(lookup, &path, buffer) {
            tracing::debug!(path = %path.display(), "the no-op proof fails here");
            return false;
        }
    }
    input.is_done()
}

/// Keeps the newest [`KEEP`] proofs.
fn prune(folder: &Path) {
    let Ok(listing) = fs::read_dir(folder) else {
        return;
    };
    let mut proofs: Vec<(SystemTime, PathBuf)> = listing
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((modified, entry.path()))
        })
        .collect();
    if proofs.len() <= KEEP {
        return;
    }
    proofs.sort_unstable_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (_, path) in proofs.into_iter().skip(KEEP) {
        let _ = fs::remove_file(path);
    }
}

fn encode_seen(out: &mut Encoder, seen: &Seen) {
    match seen {
        Seen::Absent { follow } => {
            out.u8(0);
            out.u8(u8::from(*follow));
        }
        Seen::Stat { follow, stamp } => {
            out.u8(1);
            out.u8(u8::from(*follow));
            out.fixed(&stamp.to_bytes());
        }
        Seen::File {
            follow,
            stamp,
            digest,
        } => {
            out.u8(2);
            out.u8(u8::from(*follow));
            out.fixed(&stamp.to_bytes());
            out.fixed(digest);
        }
        Seen::Folder {
            follow,
            stamp,
            listing,
        } => {
            out.u8(3);
            out.u8(u8::from(*follow));
            out.fixed(&stamp.to_bytes());
            out.fixed(listing);
        }
        Seen::Directory => out.u8(4),
    }
}

fn decode_seen(input: &mut Decoder<'_>) -> Option<Seen> {
    let follow = |input: &mut Decoder<'_>| match input.u8()? {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    };
    let stamp = |input: &mut Decoder<'_>| input.fixed::<STAMP_BYTES>().map(Stamp::from_bytes);
    Some(match input.u8()? {
        0 => Seen::Absent {
            follow: follow(input)?,
        },
        1 => Seen::Stat {
            follow: follow(input)?,
            stamp: stamp(input)?,
        },
        2 => Seen::File {
            follow: follow(input)?,
            stamp: stamp(input)?,
            digest: *input.fixed::<32>()?,
        },
        3 => Seen::Folder {
            follow: follow(input)?,
            stamp: stamp(input)?,
            listing: *input.fixed::<32>()?,
        },
        4 => Seen::Directory,
        _ => return None,
    })
}
