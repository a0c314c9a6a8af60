//! Times sequential `GetActionResult` hits against a running server:
//!
//!     cargo run --release -p once-remote --example ac_latency -- grpc://127.0.0.1:50051 1000
//!
//! It stores one action result first, then asks for it `count` times on one connection and prints
//! the mean and the slowest call. A measuring tool only: never part of a test or of `once`.

use std::io::Write;
use std::time::{Duration, Instant};

use once_remote::{Client, digest_of, reapi};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "grpc://127.0.0.1:50051".into());
    let count: u32 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(1000);
    let started = Instant::now();
    let client = Client::connect(&url, "", vec![], Duration::from_secs(10))?;
    client.capabilities()?;
    let connected = started.elapsed();
    let action = digest_of(format!("ac_latency {}", std::process::id()).as_bytes());
    let result = reapi::ActionResult {
        exit_code: 0,
        ..Default::default()
    };
    client.update_action_result(&action, &result)?;
    let mut slowest = Duration::ZERO;
    let all = Instant::now();
    for _ in 0..count {
        let one = Instant::now();
        if client.get_action_result(&action)?.is_none() {
            return Err("the stored action result was not found".into());
        }
        slowest = slowest.max(one.elapsed());
    }
    let total = all.elapsed();
    writeln!(
        std::io::stdout(),
        "connect+capabilities {:.2} ms; {count} sequential GetActionResult hits in {:.0} ms: \
         {:.3} ms per call, slowest {:.2} ms",
        connected.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3 / f64::from(count.max(1)),
        slowest.as_secs_f64() * 1e3
    )?;
    Ok(())
}
