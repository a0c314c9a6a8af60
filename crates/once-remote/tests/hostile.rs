//! The client against a hostile cache (`support/hostile_cache.rs`) on loopback: whatever size a
//! server claims or however much it sends, every read ends in an error or a verified blob, never
//! an abort, and no staging file is left behind.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use once_remote::{Blob, Client, Error, LOOKUP_LIMIT, Lookup, MAX_LOOKUPS, digest_of, reapi};

#[path = "support/hostile_cache.rs"]
mod hostile_cache;

use hostile_cache::{BatchPlan, HostileCache, Plan, ReadPlan};

/// An empty folder for staging files, removed when dropped.
struct Spill(PathBuf);

impl Spill {
    fn new(name: &str) -> Spill {
        let dir = std::env::temp_dir().join(format!("once-spill-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Spill(dir)
    }

    fn files(&self) -> usize {
        std::fs::read_dir(&self.0).unwrap().count()
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn client(server: &HostileCache, timeout: Duration) -> Client {
    Client::connect(&server.url(), "", vec![], timeout).unwrap()
}

#[test]
fn a_blob_claiming_the_largest_size_streams_without_allocating_and_ends_in_an_error() {
    let server = HostileCache::start(Plan {
        read: ReadPlan::Fill {
            fill: 0x41,
            total: None,
        },
        ..Plan::empty()
    });
    let spill = Spill::new("huge");
    let huge = reapi::Digest {
        hash: "00".repeat(32),
        size_bytes: i64::MAX,
    };
    let client = client(&server, Duration::from_millis(1500));
    let error = client.read_blobs(&[huge], &spill.0).unwrap_err();
    assert!(
        matches!(error, Error::DeadlineExceeded { call: "Read", .. }),
        "{error}"
    );
    assert_eq!(spill.files(), 0, "a staging file was left behind");
}

#[test]
fn a_blob_that_goes_past_its_size_is_refused_at_once() {
    let server = HostileCache::start(Plan {
        read: ReadPlan::Fill {
            fill: 0,
            total: None,
        },
        ..Plan::empty()
    });
    let spill = Spill::new("past");
    let claimed = reapi::Digest {
        hash: "00".repeat(32),
        size_bytes: 3 << 20,
    };
    let error = client(&server, Duration::from_secs(20))
        .read_blob(&claimed, &spill.0)
        .unwrap_err();
    assert!(
        matches!(error, Error::BlobTooLong { size, .. } if size == 3 << 20),
        "{error}"
    );
    assert!(
        error.to_string().contains("goes on past the 3145728 bytes"),
        "{error}"
    );
    assert_eq!(spill.files(), 0);
}

#[test]
fn a_length_prefix_of_4_gib_is_refused_before_its_bytes() {
    let server = HostileCache::start(Plan {
        read: ReadPlan::Prefix(u32::MAX),
        ..Plan::empty()
    });
    let spill = Spill::new("prefix");
    let claimed = reapi::Digest {
        hash: "00".repeat(32),
        size_bytes: 100 << 20,
    };
    let error = client(&server, Duration::from_secs(20))
        .read_blob(&claimed, &spill.0)
        .unwrap_err();
    assert!(
        error.to_string().contains("a message of 4294967295 bytes"),
        "{error}"
    );
    assert_eq!(spill.files(), 0);
}

#[test]
fn a_large_blob_arrives_in_a_verified_file_and_wrong_bytes_in_none() {
    let data = Bytes::from(vec![9u8; 3 << 20]);
    let server = HostileCache::start(Plan {
        read: ReadPlan::Blob(data.clone()),
        ..Plan::empty()
    });
    let spill = Spill::new("file");
    let client = client(&server, Duration::from_secs(20));
    let Some(Blob::File(file)) = client.read_blob(&digest_of(&data), &spill.0).unwrap() else {
        panic!("a large blob not in a file");
    };
    assert_eq!(std::fs::read(file.path()).unwrap(), data);
    drop(file);
    assert_eq!(spill.files(), 0, "a dropped blob's file was left behind");
    // The same length, other bytes.
    let lie = digest_of(&vec![8u8; 3 << 20]);
    let error = client.read_blob(&lie, &spill.0).unwrap_err();
    assert!(matches!(error, Error::DigestMismatch { .. }), "{error}");
    assert_eq!(spill.files(), 0);
}

#[test]
fn a_batch_with_blobs_not_asked_for_or_twice_is_refused() {
    let blob = Bytes::from_static(b"asked for\n");
    for plan in [
        BatchPlan::Extra(vec![blob.clone()]),
        BatchPlan::Twice(vec![blob.clone()]),
    ] {
        let server = HostileCache::start(Plan {
            batch: plan.clone(),
            ..Plan::empty()
        });
        let spill = Spill::new("batch");
        let error = client(&server, Duration::from_secs(10))
            .read_blobs(&[digest_of(&blob)], &spill.0)
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("2 blobs in the answer, 1 asked for"),
            "{plan:?}: {text}"
        );
    }
    let server = HostileCache::start(Plan {
        batch: BatchPlan::Honest(vec![blob.clone()]),
        ..Plan::empty()
    });
    let spill = Spill::new("honest");
    let got = client(&server, Duration::from_secs(10))
        .read_blobs(&[digest_of(&blob), digest_of(b"absent")], &spill.0)
        .unwrap();
    assert!(matches!(&got[0], Some(Blob::Memory(b)) if *b == blob));
    assert!(got[1].is_none());
}

#[test]
fn a_set_of_lookups_holds_no_answer_over_its_bound_and_asks_for_it_alone() {
    // A result padded past what one answer of a set may weigh: a long inlined log.
    let padded = reapi::ActionResult {
        stdout_raw: vec![b'x'; LOOKUP_LIMIT + 1],
        ..reapi::ActionResult::default()
    };
    let server = HostileCache::start(Plan {
        result: Some(padded.clone()),
        ..Plan::empty()
    });
    let client = client(&server, Duration::from_secs(5));
    let actions: Vec<reapi::Digest> = (0..MAX_LOOKUPS)
        .map(|i| digest_of(format!("action {i}").as_bytes()))
        .collect();
    let lookups = client.get_action_results(&actions, 8).unwrap();
    assert_eq!(lookups, vec![Lookup::Alone; MAX_LOOKUPS]);
    // Alone, the answer is within a lone lookup's bound and arrives whole.
    assert_eq!(client.get_action_result(&actions[0]).unwrap(), Some(padded));
    // One more than a set may hold is refused before anything is sent.
    let over: Vec<reapi::Digest> = (0..=MAX_LOOKUPS)
        .map(|i| digest_of(format!("over {i}").as_bytes()))
        .collect();
    let before = client.calls();
    assert!(matches!(
        client.get_action_results(&over, 8).unwrap_err(),
        Error::Protocol { .. }
    ));
    assert_eq!(client.calls(), before);
}
