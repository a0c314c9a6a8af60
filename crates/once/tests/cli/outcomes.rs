//! Every tool that acts answers with one of five words, through the real binary: `done`,
//! `refused`, `busy`, `problem` and `none`, each produced by a real call of a real tool, with the
//! word first in the text and in `structuredContent` whether or not the call is an error.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use crate::support::{Mcp, PATIENCE, Test};

const MANIFEST: &str = "\
[targets.py]
kind = \"command\"
[targets.py.evaluator]
language = \"python\"

[targets.ok]
kind = \"command\"
[targets.ok.capabilities.build]
command = \"echo fine\"

[targets.broken]
kind = \"command\"
[targets.broken.capabilities.build]
command = \"echo the reason; exit 3\"
";

/// The word, the message and the value of an acting tool's reply, after checking that the text
/// and `isError` agree with the word.
fn answer(reply: &Value) -> (String, String, Value) {
    let result = &reply["result"];
    let structured = &result["structuredContent"];
    let word = structured["outcome"]
        .as_str()
        .unwrap_or_else(|| panic!("an outcome: {reply}"));
    let message = structured["message"].as_str().expect("a message");
    let text = result["content"][0]["text"].as_str().expect("a text");
    assert!(text.starts_with(&format!("{word}: {message}")), "{reply}");
    assert!(
        !message.contains('\n') && !message.ends_with('.'),
        "{message}"
    );
    assert_eq!(
        result["isError"],
        matches!(word, "refused" | "busy" | "problem"),
        "{reply}"
    );
    (
        word.to_owned(),
        message.to_owned(),
        structured["result"].clone(),
    )
}

/// Python that says it started (a file), then sleeps in short steps until released (another
/// file), 60 s at most.
fn held(started: &Path, release: &Path) -> String {
    format!(
        "import os, time\nopen({:?}, 'w').close()\nend = time.time() + 60\n\
         while not os.path.exists({:?}) and time.time() < end:\n    time.sleep(0.01)\n'released'",
        started.display().to_string(),
        release.display().to_string(),
    )
}

#[test]
fn each_word_comes_from_a_real_call_of_a_real_tool() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &["--allow-run", "--allow-edit"]);
    server.initialize();

    // done, then done again from the cache: a run where all was cached did what was asked.
    let (word, message, report) =
        answer(&server.call(1, "once_run", json!({"target": "ok:build"})));
    assert_eq!(
        (word.as_str(), report["status"].as_str()),
        ("done", Some("succeeded")),
        "{message}"
    );
    let (word, message, _) = answer(&server.call(2, "once_run", json!({"target": "ok:build"})));
    assert_eq!(word, "done");
    assert!(message.contains("0 ran, 1 cached"), "{message}");

    // problem: the command failed; the message names the action, the report is there.
    let (word, message, report) =
        answer(&server.call(3, "once_run", json!({"target": "broken:build"})));
    assert_eq!(word, "problem");
    assert!(message.contains("`broken:build` failed"), "{message}");
    assert_eq!(report["status"], "failed");

    // refused: no such target, before anything runs.
    let (word, message, _) = answer(&server.call(4, "once_run", json!({"target": "nope:build"})));
    assert_eq!(word, "refused");
    assert!(message.contains("nope"), "{message}");

    // none: a run that has ended has nothing to cancel.
    let run_id = report["run_id"].as_str().expect("a run id");
    let (word, message, _) = answer(&server.call(5, "once_cancel", json!({"run_id": run_id})));
    assert_eq!(word, "none");
    assert!(message.contains("already ended"), "{message}");

    // refused with the current text: a write from an old revision.
    let (word, _, created) =
        answer(&server.call(6, "once_remember", json!({"title": "T", "body": "one\n"})));
    assert_eq!(word, "done");
    let id = created["id"].as_str().expect("an id").to_owned();
    let (word, _, _) = answer(&server.call(
        7,
        "once_remember",
        json!({"id": id, "revision": 1, "body": "two\n"}),
    ));
    assert_eq!(word, "done");
    let (word, message, current) = answer(&server.call(
        8,
        "once_remember",
        json!({"id": id, "revision": 1, "body": "lost?\n"}),
    ));
    assert_eq!(word, "refused");
    assert!(message.contains("revision 2, not 1"), "{message}");
    assert_eq!(current["revision"], 2);
    assert!(
        current["current"]
            .as_str()
            .is_some_and(|t| t.contains("two\n")),
        "{current}"
    );

    // none: forgetting what is not there (any more).
    let (word, _, _) = answer(&server.call(9, "once_forget", json!({"id": id, "revision": 2})));
    assert_eq!(word, "done");
    let (word, message, _) =
        answer(&server.call(10, "once_forget", json!({"id": id, "revision": 2})));
    assert_eq!(word, "none");
    assert!(message.contains("nothing to forget"), "{message}");

    // done, then none: an example already there with the same content has nothing to write.
    let starter = json!({"example": "node-package", "into": "starter"});
    let (word, message, written) =
        answer(&server.call(20, "once_materialize_example", starter.clone()));
    assert_eq!(word, "done", "{message}");
    assert!(
        written["created"].as_array().is_some_and(|c| !c.is_empty()),
        "{written}"
    );
    let (word, message, written) = answer(&server.call(21, "once_materialize_example", starter));
    assert_eq!(word, "none", "{message}");
    assert_eq!(written["created"], json!([]));

    // refused by the argument check, before the handler runs.
    let (word, message, _) =
        answer(&server.call(11, "once_eval", json!({"target": "py", "code": 1})));
    assert_eq!(word, "refused");
    assert!(message.contains("`code`"), "{message}");
    // none: empty code; problem: the code raised.
    let (word, _, _) = answer(&server.call(12, "once_eval", json!({"target": "py", "code": "  "})));
    assert_eq!(word, "none");
    let (word, message, evaluation) =
        answer(&server.call(13, "once_eval", json!({"target": "py", "code": "1/0"})));
    assert_eq!(word, "problem");
    assert!(message.contains("ZeroDivisionError"), "{message}");
    assert_eq!(evaluation["status"], "error");
}

#[test]
fn a_second_evaluation_while_one_runs_is_busy_at_once() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    server.initialize();
    let (started, release) = (test.root().join("started"), test.root().join("release"));
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "once_eval",
            "arguments": {"target": "py", "code": held(&started, &release), "deadline": "5m"},
        }})
        .to_string(),
    );
    let end = Instant::now() + PATIENCE;
    while !started.exists() {
        assert!(Instant::now() < end, "the first evaluation never started");
        std::thread::yield_now();
    }
    let busy = server.call(2, "once_eval", json!({"target": "py", "code": "1"}));
    let answered_while_held = !release.exists();
    std::fs::write(&release, "").expect("releases the first evaluation");
    assert!(answered_while_held);
    let (word, message, _) = answer(&busy);
    assert_eq!(word, "busy");
    assert!(
        message.starts_with("the evaluator of `py` is evaluating another call (started "),
        "{message}"
    );
    let first = loop {
        let message = server.recv();
        if message["id"] == 1 {
            break message;
        }
    };
    let (word, _, evaluation) = answer(&first);
    assert_eq!(
        (word.as_str(), &evaluation["value"]),
        ("done", &json!("'released'"))
    );
}
