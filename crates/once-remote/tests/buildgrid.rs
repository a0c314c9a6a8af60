//! The client against a real BuildGrid (`bgd`), the reference REAPI server: each test starts its
//! own (see `support/buildgrid.rs`), stopped when the test ends. BuildGrid missing is a failure
//! that says how to install it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use once_remote::{Blob, Bytes, Client, Error, Lookup, digest_of, reapi};

#[path = "support/buildgrid.rs"]
mod buildgrid;

use buildgrid::{BuildGrid, tls_file};

const TIMEOUT: Duration = Duration::from_secs(20);

fn client(server: &BuildGrid) -> Client {
    Client::connect(&server.url, "", vec![], TIMEOUT).unwrap()
}

/// A folder for the staging files of large blobs: the system's temporary folder.
fn spill() -> std::path::PathBuf {
    std::env::temp_dir()
}

/// The bytes of a blob read, wherever the client put them.
fn bytes(blob: Option<Blob>) -> Option<Bytes> {
    match blob? {
        Blob::Memory(bytes) => Some(bytes),
        Blob::File(file) => Some(Bytes::from(std::fs::read(file.path()).unwrap())),
    }
}

/// `read_blobs`, as bytes.
fn read_all(client: &Client, digests: &[reapi::Digest]) -> Result<Vec<Option<Bytes>>, Error> {
    Ok(client
        .read_blobs(digests, &spill())?
        .into_iter()
        .map(bytes)
        .collect())
}

/// `read_blob`, as bytes.
fn read_one(client: &Client, digest: &reapi::Digest) -> Result<Option<Bytes>, Error> {
    client.read_blob(digest, &spill()).map(bytes)
}

fn blob(data: Vec<u8>) -> (reapi::Digest, Bytes) {
    (digest_of(&data), Bytes::from(data))
}

fn big_blob() -> (reapi::Digest, Bytes) {
    blob(
        (0..8u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect(),
    )
}

#[test]
fn blobs_and_action_results_round_trip() {
    let server = BuildGrid::start();
    let client = client(&server);
    let caps = client.capabilities().unwrap();
    assert!(caps.max_batch_total_size_bytes > 1024, "{caps:?}");
    assert!(caps.action_cache_update_enabled);

    let small = blob(b"hello, cache\n".to_vec());
    let big = big_blob();
    let absent = digest_of(b"never uploaded");
    assert_eq!(
        client
            .find_missing_blobs(&[small.0.clone(), big.0.clone()])
            .unwrap()
            .len(),
        2
    );
    // The big blob is over the batch limit: it goes over ByteStream.
    client
        .batch_update_blobs(&[small.clone(), big.clone()])
        .unwrap();
    let missing = client
        .find_missing_blobs(&[small.0.clone(), absent.clone(), big.0.clone()])
        .unwrap();
    assert_eq!(missing, vec![absent.clone()]);

    let read = read_all(&client, &[big.0.clone(), absent.clone(), small.0.clone()]).unwrap();
    assert_eq!(read, vec![Some(big.1.clone()), None, Some(small.1.clone())]);
    assert_eq!(read_one(&client, &small.0).unwrap(), Some(small.1.clone()));
    assert_eq!(read_one(&client, &absent).unwrap(), None);

    // Writing a blob the server has: it may close the stream before the last chunk.
    client.write_blob(&big.0, big.1.clone()).unwrap();

    let action = digest_of(b"an action");
    assert_eq!(client.get_action_result(&action).unwrap(), None);
    let result = reapi::ActionResult {
        output_files: vec![reapi::OutputFile {
            path: "out/hello.txt".into(),
            digest: Some(small.0.clone()),
            ..Default::default()
        }],
        exit_code: 0,
        ..Default::default()
    };
    client.update_action_result(&action, &result).unwrap();
    let got = client.get_action_result(&action).unwrap().unwrap();
    assert_eq!(got.output_files, result.output_files);
}

#[test]
fn a_set_of_lookups_answers_each_in_order_with_several_in_flight() {
    let server = BuildGrid::start();
    let client = client(&server);
    let actions: Vec<reapi::Digest> = (0..40)
        .map(|i| digest_of(format!("action {i}").as_bytes()))
        .collect();
    // Every third action has a result (a success: BuildGrid keeps no failures here), each
    // naming its own worker to tell them apart.
    for (i, action) in actions.iter().enumerate().step_by(3) {
        let result = reapi::ActionResult {
            execution_metadata: Some(reapi::ExecutedActionMetadata {
                worker: format!("worker {i}"),
                ..Default::default()
            }),
            ..Default::default()
        };
        client.update_action_result(action, &result).unwrap();
    }
    let before = client.calls();
    let lookups = client.get_action_results(&actions, 4).unwrap();
    assert_eq!(lookups.len(), actions.len());
    for (i, lookup) in lookups.iter().enumerate() {
        match lookup {
            Lookup::Hit(result) if i % 3 == 0 => {
                let worker = result
                    .execution_metadata
                    .as_ref()
                    .map(|m| m.worker.as_str());
                assert_eq!(worker, Some(format!("worker {i}").as_str()));
            }
            Lookup::Miss if i % 3 != 0 => {}
            other => panic!("action {i}: {other:?}"),
        }
    }
    assert_eq!(client.calls() - before, 40);
    // The connection is still the client's: a lone lookup after the set needs no new one.
    assert!(client.get_action_result(&actions[0]).unwrap().is_some());
}

#[test]
fn many_digests_are_split_into_batches() {
    let server = BuildGrid::start();
    let client = client(&server);
    // ~80 bytes each on the wire: 60,000 digests exceed one 4 MiB batch.
    let digests: Vec<reapi::Digest> = (0..60_000u32)
        .map(|i| digest_of(&i.to_le_bytes()))
        .collect();
    let missing = client.find_missing_blobs(&digests).unwrap();
    assert_eq!(missing.len(), digests.len());
}

#[test]
fn a_corrupted_blob_is_an_error_and_never_returned() {
    let server = BuildGrid::start();
    let client = client(&server);
    let good = blob(b"the right bytes".to_vec());
    let big = big_blob();
    client
        .batch_update_blobs(&[good.clone(), big.clone()])
        .unwrap();
    for digest in [&good.0, &big.0] {
        let file = server.cas_file(&digest.hash);
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&file, bytes).unwrap();
    }

    for read in [
        read_all(&client, std::slice::from_ref(&good.0)),
        read_all(&client, std::slice::from_ref(&big.0)),
    ] {
        match read {
            Err(Error::DigestMismatch { digest, actual, .. }) => {
                assert_ne!(digest, actual);
            }
            other => panic!("expected a digest mismatch, got {other:?}"),
        }
    }
    let err = read_one(&client, &good.0).unwrap_err();
    assert!(
        err.to_string().contains("does not match its digest"),
        "{err}"
    );
}

#[test]
fn a_wrong_instance_name_is_a_clear_error() {
    let server = BuildGrid::start();
    let client = Client::connect(&server.url, "no-such-instance", vec![], TIMEOUT).unwrap();
    let err = client.capabilities().unwrap_err();
    assert!(matches!(err, Error::WrongInstance { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("no instance named `no-such-instance`"),
        "{text}"
    );
    let err = client.get_action_result(&digest_of(b"x")).unwrap_err();
    assert!(matches!(err, Error::WrongInstance { .. }), "{err:?}");
}

#[test]
fn a_stopped_server_is_a_clear_error_within_the_timeout() {
    let mut server = BuildGrid::start();
    let timeout = Duration::from_secs(5);
    let client = Client::connect(
        &server.url,
        "",
        vec![("authorization".into(), "Bearer s3cret".into())],
        timeout,
    )
    .unwrap();
    client.capabilities().unwrap();
    server.stop();

    let started = Instant::now();
    let err = client.get_action_result(&digest_of(b"x")).unwrap_err();
    let again = client.get_action_result(&digest_of(b"x")).unwrap_err();
    let fresh = Client::connect(&server.url, "", vec![], timeout).unwrap_err();
    // Three calls, each bounded: well within three timeouts (and in practice immediate).
    assert!(started.elapsed() < timeout * 3, "{:?}", started.elapsed());
    for e in [&err, &again, &fresh] {
        let text = e.to_string();
        assert!(matches!(e, Error::CannotReach { .. }), "{e:?}");
        assert!(
            text.starts_with(&format!(
                "cannot reach the remote cache at `{}`",
                server.url
            )),
            "{text}"
        );
        assert!(!text.contains("s3cret") && !format!("{e:?}").contains("s3cret"));
    }
}

#[test]
fn refused_credentials_name_the_headers_sent_never_their_values() {
    let server = BuildGrid::start_with_jwt();
    let with_token = Client::connect(
        &server.url,
        "",
        vec![("Authorization".into(), "Bearer not-a-valid-jwt".into())],
        TIMEOUT,
    )
    .unwrap();
    let err = with_token.get_action_result(&digest_of(b"x")).unwrap_err();
    assert!(matches!(err, Error::Unauthenticated { .. }), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(text.contains("`authorization`"), "{text}");
    assert!(!text.contains("not-a-valid-jwt"), "{text}");

    let without = Client::connect(&server.url, "", vec![], TIMEOUT).unwrap();
    let err = without.capabilities().unwrap_err();
    assert!(matches!(err, Error::Unauthenticated { .. }), "{err:?}");
    assert!(err.to_string().contains("no headers were sent"), "{err}");
}

/// Set in the child process that `in_child_trusting_the_test_ca` starts.
const CHILD: &str = "ONCE_REMOTE_TEST_CHILD";

/// Runs this binary's test named `test` again in a child process whose `SSL_CERT_FILE` is the test
/// CA, as a user trusts a private CA; returns true in that child, which runs the test's body, and
/// false in the parent once the child has passed. The variable is set only in a child because the
/// environment is process-wide and tests run on parallel threads.
fn in_child_trusting_the_test_ca(test: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("SSL_CERT_FILE", tls_file("ca.pem"))
        .env_remove("SSL_CERT_DIR")
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "`{test}` failed in its child process ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

#[test]
fn tls_with_the_ca_in_ssl_cert_file_carries_every_call() {
    if !in_child_trusting_the_test_ca("tls_with_the_ca_in_ssl_cert_file_carries_every_call") {
        return;
    }
    let server = BuildGrid::start_tls("server");
    // The certificate names both: the name checked is the URL's host, a DNS name or an address.
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("grpcs://{host}:{}", server.port);
        let client = Client::connect(&url, "", vec![], TIMEOUT).unwrap();
        let caps = client.capabilities().unwrap();
        assert!(caps.max_batch_total_size_bytes > 1024, "{caps:?}");
        let small = blob(format!("over TLS to {host}\n").into_bytes());
        let big = big_blob();
        // The big blob goes over ByteStream, in many HTTP/2 frames through the TLS stream.
        client
            .batch_update_blobs(&[small.clone(), big.clone()])
            .unwrap();
        let read = read_all(&client, &[small.0.clone(), big.0.clone()]).unwrap();
        assert_eq!(read, vec![Some(small.1.clone()), Some(big.1.clone())]);
        assert_eq!(read_one(&client, &big.0).unwrap(), Some(big.1));
        let action = digest_of(host.as_bytes());
        let result = reapi::ActionResult {
            exit_code: 0,
            stdout_digest: Some(small.0.clone()),
            ..Default::default()
        };
        client.update_action_result(&action, &result).unwrap();
        let got = client.get_action_result(&action).unwrap().unwrap();
        assert_eq!(got.stdout_digest, result.stdout_digest);
    }
}

#[test]
fn a_certificate_for_another_name_is_refused() {
    if !in_child_trusting_the_test_ca("a_certificate_for_another_name_is_refused") {
        return;
    }
    let server = BuildGrid::start_tls("other");
    let url = format!("grpcs://localhost:{}", server.port);
    let err = Client::connect(&url, "", vec![], TIMEOUT).unwrap_err();
    assert!(matches!(err, Error::CannotReach { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("the TLS certificate of `localhost` is not valid for that name"),
        "{text}"
    );
}

#[test]
fn an_untrusted_certificate_is_a_clear_error_not_a_hang() {
    // This process does not trust the test CA (no `SSL_CERT_FILE` names it).
    let server = BuildGrid::start_tls("server");
    let timeout = Duration::from_secs(5);
    let url = format!("grpcs://localhost:{}", server.port);
    let started = Instant::now();
    let err = Client::connect(&url, "", vec![], timeout).unwrap_err();
    assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
    assert!(matches!(err, Error::CannotReach { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot reach the remote cache at `{url}`")),
        "{text}"
    );
    assert!(
        text.contains("the TLS certificate of `localhost` is not trusted")
            && text.contains("SSL_CERT_FILE"),
        "{text}"
    );

    // The same server reached without TLS: refused within the timeout too.
    let plain = format!("grpc://127.0.0.1:{}", server.port);
    let started = Instant::now();
    let err = Client::connect(&plain, "", vec![], timeout)
        .and_then(|client| client.capabilities())
        .unwrap_err();
    assert!(started.elapsed() < timeout * 2, "{:?}", started.elapsed());
    assert!(matches!(err, Error::CannotReach { .. }), "{err:?}");
}

#[test]
fn a_plaintext_server_reached_with_grpcs_is_a_clear_error_within_the_timeout() {
    let server = BuildGrid::start();
    let timeout = Duration::from_secs(5);
    let url = format!("grpcs://127.0.0.1:{}", server.port);
    let started = Instant::now();
    let err = Client::connect(&url, "", vec![], timeout).unwrap_err();
    assert!(started.elapsed() < timeout * 2, "{:?}", started.elapsed());
    assert!(matches!(err, Error::CannotReach { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("TLS handshake with `127.0.0.1` failed") && text.contains("`grpc://`"),
        "{text}"
    );
}

#[path = "support/postgres.rs"]
mod postgres;

#[test]
fn an_execution_server_runs_on_its_own_postgres_and_leaves_nothing_running() {
    let mut database = postgres::Postgres::start(&buildgrid::bgd_path());
    let postmaster = database.pid();
    let server = BuildGrid::start_execution(&database.url, 5);
    let caps = client(&server).capabilities().unwrap();
    assert!(caps.execution_enabled, "{}", server.log());
    // A cache-only server says it does not run actions.
    let cache = BuildGrid::start();
    assert!(!client(&cache).capabilities().unwrap().execution_enabled);
    drop(server);
    assert!(database.is_running());
    drop(database);
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(postmaster as i32, 0) } == 0;
    assert!(
        !alive,
        "postgres ({postmaster}) still runs after its harness was dropped"
    );
}
