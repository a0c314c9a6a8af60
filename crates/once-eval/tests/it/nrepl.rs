//! The nREPL client against a real nREPL server: Clojure with nREPL 1.0 from Debian's
//! `clojure` and `libnrepl-clojure` packages (`scripts/install-test-deps` installs them).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use once_eval::{Evaluators, Interrupt, Language, Status};
use once_exec::Registry;

use crate::{Fixture, MARK_VAR};

const NREPL_JAR: &str = "/usr/share/java/nrepl.jar";
const LONG: Duration = Duration::from_secs(60);

/// A Clojure nREPL server in its own process group, killed with it on drop.
struct Server {
    child: Child,
}

impl Server {
    fn start(fixture: &Fixture) -> Server {
        assert!(
            std::path::Path::new(NREPL_JAR).exists(),
            "no nREPL server: install Debian's `clojure` and `libnrepl-clojure` \
             (scripts/install-test-deps does)"
        );
        let child = Command::new("clojure")
            .args([
                "-cp",
                NREPL_JAR,
                "-m",
                "nrepl.cmdline",
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(&fixture.dir)
            .env(MARK_VAR, &fixture.mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("clojure starts");
        let server = Server { child };
        // nrepl.cmdline writes the port file once it listens; the JVM takes a few seconds.
        let port_file = fixture.dir.join(once_eval::DEFAULT_PORT_FILE);
        let end = Instant::now() + LONG;
        while !std::fs::read_to_string(&port_file)
            .is_ok_and(|text| text.trim().parse::<u16>().is_ok())
        {
            assert!(Instant::now() < end, "the nREPL server wrote no port file");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill has no memory effects; the group is the server's own.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_nrepl_server_keeps_state_captures_output_and_is_interrupted_past_the_deadline() {
    let fixture = Fixture::new();
    let _server = Server::start(&fixture);
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    let spec = fixture.spec(Language::Nrepl);
    let eval = |target: &str, code: &str, deadline: Duration| {
        evaluators
            .eval(target, &spec, code, deadline, &Interrupt::new())
            .expect("an nREPL session")
    };

    let defined = eval("clj", "(def x 40)", LONG);
    assert_eq!(defined.status, Status::Ok, "{defined:?}");
    assert_eq!(defined.value.as_deref(), Some("#'user/x"));
    assert_eq!(eval("clj", "(+ x 2)", LONG).value.as_deref(), Some("42"));

    let printed = eval(
        "clj",
        "(println \"to out\") (binding [*out* *err*] (println \"to err\")) :v",
        LONG,
    );
    assert_eq!(printed.stdout, "to out\n", "{printed:?}");
    assert_eq!(printed.stderr, "to err\n");
    assert_eq!(printed.value.as_deref(), Some(":v"));

    let raised = eval("clj", "(/ 1 0)", LONG);
    assert_eq!(raised.status, Status::Error, "{raised:?}");
    assert!(
        raised
            .error
            .unwrap_or_default()
            .contains("ArithmeticException")
    );

    // One session per target: switching namespace in one leaves the other's alone.
    eval("clj", "(ns elsewhere)", LONG);
    assert_eq!(
        eval("other", "(str *ns*)", LONG).value.as_deref(),
        Some("\"user\"")
    );
    assert_eq!(
        eval("clj", "(str *ns*)", LONG).value.as_deref(),
        Some("\"elsewhere\"")
    );

    let slept = eval("clj", "(Thread/sleep 600000)", Duration::from_millis(300));
    assert_eq!(slept.status, Status::TimedOut, "{slept:?}");
    assert!(!slept.state_lost, "{slept:?}");
    assert_eq!(
        eval("clj", "(str *ns*)", LONG).value.as_deref(),
        Some("\"elsewhere\"")
    );
    assert_eq!(
        eval("clj", "(+ user/x 2)", LONG).value.as_deref(),
        Some("42")
    );

    registry.stop_all(Duration::from_secs(1));
    let refused = evaluators.eval("clj", &spec, "1", LONG, &Interrupt::new());
    assert!(refused.is_err());
}

#[test]
fn no_port_file_is_an_error_that_says_what_to_do() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    let error = evaluators
        .eval(
            "clj",
            &fixture.spec(Language::Nrepl),
            "1",
            LONG,
            &Interrupt::new(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(".nrepl-port") && error.contains("start the nREPL server"),
        "{error}"
    );
}
