//! Placeholders in a command are data: a value never runs, whatever it holds, and a template
//! that puts a placeholder where no quoting is safe is refused by `once check` and `once run`.

use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::{Mcp, PATIENCE, TempDir, Test, once_binary};

/// Three spellings that quote the value in each context the shell offers.
const ACCEPTED: &str = r#"[targets.t]
kind = "command"

[targets.t.capabilities.single]
command = "echo 'msg={msg}' > single.txt"
[targets.t.capabilities.single.params.msg]
type = "string"

[targets.t.capabilities.double]
command = "echo \"msg={msg}\" > double.txt"
[targets.t.capabilities.double.params.msg]
type = "string"

[targets.t.capabilities.bare]
command = "echo msg={msg} > bare.txt"
[targets.t.capabilities.bare.params.msg]
type = "string"

[targets.t.capabilities.nested]
command = "echo \"$(echo 'msg={msg}')\" > nested.txt"
[targets.t.capabilities.nested.params.msg]
type = "string"
"#;

/// Payloads that each create `X` if the value breaks out of its quoting.
const PAYLOADS: &[&str] = &[
    "; touch X",
    "'; touch X; '",
    "\"; touch X; \"",
    "$(touch X)",
    "`touch X`",
    "a\ntouch X",
    "& touch X &",
    "' && touch X #",
];

#[test]
fn a_value_in_any_accepted_context_arrives_literally_and_never_runs() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), ACCEPTED).expect("writes the manifest");
    for payload in PAYLOADS {
        let output = Command::new(once_binary())
            .arg("--workspace")
            .arg(dir.path())
            .args([
                "run", "t:single", "t:double", "t:bare", "t:nested", "--param",
            ])
            .arg(format!("msg={payload}"))
            .env_remove("ONCE_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("runs once");
        assert_eq!(
            output.status.code(),
            Some(0),
            "payload {payload:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !dir.path().join("X").exists(),
            "payload {payload:?} ran a command"
        );
        for file in ["single.txt", "double.txt", "bare.txt", "nested.txt"] {
            let written = std::fs::read_to_string(dir.path().join(file)).expect("written");
            assert_eq!(written, format!("msg={payload}\n"), "{file}");
        }
    }
}

#[test]
fn an_agent_s_value_through_once_run_is_data_too() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), ACCEPTED).expect("writes the manifest");
    let mut mcp = Mcp::spawn(dir.path(), &["--allow-run"]);
    mcp.initialize();
    for (id, payload) in (1..).zip(PAYLOADS) {
        let answer = mcp.call(
            id,
            "once_run",
            json!({"target": "t:single", "params": {"msg": payload}}),
        );
        let value = &answer["result"]["structuredContent"]["result"];
        assert_eq!(value["status"], "succeeded", "{answer}");
        assert!(!dir.path().join("X").exists(), "payload {payload:?} ran");
        let written = std::fs::read_to_string(dir.path().join("single.txt")).expect("written");
        assert_eq!(written, format!("msg={payload}\n"));
    }
    let answer = mcp.call(
        99,
        "once_run",
        json!({"target": "t:single", "params": {"msg": "a\u{0}b"}}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("NUL byte"), "{answer}");
    mcp.close_stdin();
    let (code, _) = mcp.wait(PATIENCE);
    assert_eq!(code, Some(0));
}

/// Each command puts `{msg}` where no quoting is safe: in backquotes, in `${…}`, in a
/// here-document's body, as the name of the program to run.
const REFUSED: &str = r#"[targets.t]
kind = "command"

[targets.t.capabilities.backquotes]
command = "echo \"msg=`echo {msg}`\" > out.txt"
[targets.t.capabilities.backquotes.params.msg]
type = "string"

[targets.t.capabilities.expansion]
command = "echo ${{UNSET:-{msg}}} > out.txt"
[targets.t.capabilities.expansion.params.msg]
type = "string"

[targets.t.capabilities.heredoc]
command = '''
cat > out.txt <<EOF
msg={msg}
EOF
'''
[targets.t.capabilities.heredoc.params.msg]
type = "string"

[targets.t.capabilities.program]
command = "echo ready && {msg} --version"
[targets.t.capabilities.program.params.msg]
type = "string"
"#;

#[test]
fn check_refuses_a_placeholder_with_no_safe_quoting_and_says_where() {
    let run = Test::new().manifest(REFUSED).args(["check"]).run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
    let stderr = run.stderr();
    for place in [
        "once.toml:5:29: error[unsafe-placeholder]",
        "once.toml:10:27: error[unsafe-placeholder]",
        "once.toml:17:5: error[unsafe-placeholder]",
        "once.toml:24:26: error[unsafe-placeholder]",
    ] {
        assert!(stderr.contains(place), "no `{place}` in\n{stderr}");
    }
    assert!(stderr.contains("backquotes"), "{stderr}");
    assert!(stderr.contains("name of the program"), "{stderr}");
    assert!(stderr.contains("help: "), "{stderr}");
    assert!(stderr.contains("error: 4 errors"), "{stderr}");
}

#[test]
fn run_refuses_a_refused_template_before_anything_runs() {
    let run = Test::new()
        .manifest(REFUSED)
        .args(["run", "t:backquotes", "--param", "msg=$(touch X)"])
        .run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
    assert!(
        run.stderr().contains("unsafe-placeholder"),
        "{}",
        run.stderr()
    );
    assert!(!run.root().join("X").exists());
    assert!(!run.root().join("out.txt").exists());
}

#[test]
fn values_that_cannot_reach_a_process_are_refused_while_planning() {
    let big = "x".repeat(64 * 1024 + 1);
    let run = Test::new()
        .manifest(ACCEPTED)
        .args(["run", "t:bare", "--param"])
        .args([format!("msg={big}")])
        .run();
    assert_eq!(run.code(), 2, "{}", run.stderr());
    let stderr = run.stderr();
    assert!(stderr.contains("parameter `msg` of `t:bare`"), "{stderr}");
    assert!(stderr.contains("65536 bytes"), "{stderr}");
    assert!(!run.root().join("bare.txt").exists());
}
