//! The property behind command templates: a value in any accepted placeholder context reaches
//! the command as data, byte for byte, and never runs; a placeholder in any other context is
//! refused for every value.
//!
//! Values are drawn by a seeded splitmix64 from fragments that break naive quoting (quotes,
//! `$(…)`, backquotes, line breaks, `;&|<>`, backslashes, globs, `~`, `#`, unicode), with
//! payloads that create marker files if they ever run. Each accepted context renders every
//! value into one line `printf '%s\0' … >> out` of a script that the real `/bin/sh` runs; then
//! `out` must hold exactly the values and the folder nothing else. Set `ONCE_PROPERTY_SEED` to
//! replay another seed.
//!
//! The lexer itself is checked the other way round too: random templates built from shell
//! fragments, each one the lexer accepts run with payloads by `/bin/sh` (and by bash in POSIX
//! mode when there is one, since `/bin/sh` is bash on some systems): no payload may run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use once_graph::template::{Fill, Template};

use crate::util::TempWs;

const VALUES: usize = 10_000;
/// Every this many values, one is about 100 KB long.
const LARGE_EVERY: usize = 1_000;
const DEFAULT_SEED: u64 = 0x5eed_2026_1130;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "'",
    "\"",
    "`",
    "$",
    "\\",
    "\n",
    "\r",
    "\t",
    " ",
    ";",
    "&",
    "|",
    "<",
    ">",
    "(",
    ")",
    "{",
    "}",
    "*",
    "?",
    "[",
    "]",
    "~",
    "#",
    "!",
    "=",
    ",",
    "%",
    "-",
    "a",
    "Z",
    "0",
    "é",
    "日本",
    "🦀",
    "\u{a0}",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED",
    "&& touch PWNED #",
    "| touch PWNED",
    "\ntouch PWNED\n",
    "'; touch PWNED; '",
    "\"; touch PWNED; \"",
    "'\\''",
    "\\'",
    "\\\"",
    "\\$",
    "\\`",
    "\\\n",
    "$HOME",
    "${HOME}",
    "$((1+1))",
    "$'\\x41'",
    "> PWNED_REDIRECT",
    "$(mkdir PWNED_DIR)",
    "~root",
    "*.sh",
    "EOF",
    "%s",
    "\\0",
    "--flag",
    "x=1",
    "{a,b}",
];

fn value(rng: &mut SplitMix64, index: usize) -> String {
    let mut text = String::new();
    if index % LARGE_EVERY == LARGE_EVERY - 1 {
        while text.len() < 100_000 {
            text.push_str(FRAGMENTS[rng.below(FRAGMENTS.len())]);
        }
        return text;
    }
    // About one value in fourteen is empty.
    for _ in 0..rng.below(14) {
        text.push_str(FRAGMENTS[rng.below(FRAGMENTS.len())]);
    }
    text
}

/// Accepted contexts: a command that writes `{v}` to `out`, and what it writes for value `v`
/// (prefix, suffix). `$(…)` costs a fork, so each line of the script holds a group of values,
/// wrapped once: `open` command; command; … `close`.
const ACCEPTED: &[(&str, &str, &str, &str, &str)] = &[
    ("", "printf '%s\\0' {v} >> out", "", "", ""),
    ("", "printf '%s\\0' x={v}y >> out", "", "x=", "y"),
    ("", "printf '%s\\0' \"$HOME\"{v} >> out", "", "/h", ""),
    ("", "printf '%s\\0' 'a{v}b' >> out", "", "a", "b"),
    ("", "printf '%s\\0' \"a{v}b\" >> out", "", "a", "b"),
    (": \"$(", "printf '%s\\0' {v} >> out", ")\"", "", ""),
    (": $(", "printf '%s\\0' 'q{v}' x={v}y >> out", ")", "q", ""),
    (
        ": \"$(: \"$(",
        "printf '%s\\0' \"d{v}\" >> out",
        ")\")\"",
        "d",
        "",
    ),
];

/// Values per line of a script.
const GROUP: usize = 25;

/// Contexts with no safe quoting: every value must be refused.
const REFUSED: &[&str] = &[
    "printf '%s\\0' `printf '%s' {v}` >> out",
    "printf '%s\\0' \"`printf '%s' {v}`\" >> out",
    "cat >> out <<EOF\n{v}\nEOF",
    "cat >> out <<'EOF'\n{v}\nEOF",
    "printf x >> out # {v}",
    "printf '%s\\0' ${{UNSET:-{v}}} >> out",
    "printf '%s\\0' $(({v})) >> out",
    "printf '%s\\0' $'{v}' >> out",
    "printf '%s\\0' ${v} >> out",
    "printf '%s\\0' \\{v} >> out",
    "printf '%s\\0' \"\\{v}\" >> out",
    "printf '%s\\0' \"$HOME{v}\" >> out",
    "printf '%s\\0' $\"{v}\" >> out",
    "printf '%s\\0' x >&{v}",
    "printf '%s\\0' x >& \"$(printf '%s' '{v}')\"",
    "[[ {v} -eq 1 ]]",
    "a[{v}]=1",
];

#[test]
fn values_arrive_literally_in_accepted_contexts_and_are_refused_elsewhere() {
    let seed = std::env::var("ONCE_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let mut rng = SplitMix64(seed);
    let values: Vec<String> = (0..VALUES).map(|i| value(&mut rng, i)).collect();
    let large = values.iter().filter(|v| v.len() >= 100_000).count();

    let mut refused = 0usize;
    for template in REFUSED {
        let parsed = Template::parse(template).expect("parses");
        assert!(
            parsed.slots().all(|s| s.context.is_err()),
            "{template:?} is accepted"
        );
        for v in &values {
            assert!(parsed.render(|_| Some(Fill::Text(v.clone()))).is_err());
            refused += 1;
        }
    }

    let tmp = TempWs::new(&[]);
    let logs = TempWs::new(&[]);
    let log = logs.path().join("stderr");
    let mut ran = 0usize;
    for (open, command, close, prefix, suffix) in ACCEPTED {
        let mut script = String::new();
        for (group, chunk) in values.chunks(GROUP).enumerate() {
            let commands: Vec<String> = (0..chunk.len())
                .map(|i| command.replace("{v}", &format!("{{v{i}}}")))
                .collect();
            let template = format!("{open}{}{close}", commands.join("; "));
            let parsed = Template::parse(&template).expect("parses");
            assert!(parsed.slots().all(|s| s.context.is_ok()), "{template:?}");
            let line = parsed
                .render(|name| {
                    let i: usize = name.strip_prefix('v')?.parse().ok()?;
                    Some(Fill::Text(values.get(group * GROUP + i)?.clone()))
                })
                .expect("renders");
            script.push_str(&line);
            script.push('\n');
        }
        let template = format!("{open}{command}{close}");
        std::fs::write(tmp.path().join("script.sh"), script).expect("writes the script");
        run_sh(tmp.path(), &log);
        let out = std::fs::read(tmp.path().join("out")).expect("the script wrote `out`");
        let got: Vec<&[u8]> = out.split(|&b| b == 0).collect();
        // `printf '%s\0'` ends every record with a NUL, so the last piece is empty.
        let per_value = command.matches("{v}").count();
        assert_eq!(
            got.len(),
            values.len() * per_value + 1,
            "{template:?}: records"
        );
        let want_all = values.iter().flat_map(|v| {
            (0..per_value).map(move |k| {
                if k == 0 {
                    (v, *prefix, *suffix)
                } else {
                    (v, "x=", "y")
                }
            })
        });
        for ((v, prefix, suffix), g) in want_all.zip(&got) {
            let want = format!("{prefix}{v}{suffix}");
            assert!(
                want.as_bytes() == *g,
                "{template:?} with {v:?} printed {:?}",
                String::from_utf8_lossy(g)
            );
        }
        let mut entries: Vec<String> = std::fs::read_dir(tmp.path())
            .expect("lists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        assert_eq!(entries, ["out", "script.sh"], "{template:?} ran a value");
        std::fs::remove_file(tmp.path().join("out")).expect("removes `out`");
        ran += values.len() * per_value;
    }
    eprintln!(
        "seed {seed:#x}: {VALUES} values ({large} of about 100 KB) × {} accepted contexts = {} tried ({ran} placeholders rendered and run by /bin/sh), 0 ran; × {} refused contexts = {refused} refused",
        ACCEPTED.len(),
        VALUES * ACCEPTED.len(),
        REFUSED.len(),
    );
}

/// Pieces of shell that change how a word is read, for random templates.
const SHELL_FRAGMENTS: &[&str] = &[
    "'",
    "\"",
    "$(",
    ")",
    "(",
    "\\",
    "\n",
    " ",
    ";",
    "echo ",
    "a",
    "$x",
    "x=",
    "|",
    "&",
    "<",
    ">",
    "{v}",
    "{v}",
    "{v}",
    "{v}",
    "\\\n",
    "$",
    ":",
    "=",
    "*",
    "~",
    "#",
    "${{x}}",
    "[",
    "]",
    "a[",
    "]=",
    "-eq ",
    "[[ ",
    " ]]",
    "$HOME",
    "\\\\",
    "=~",
    "{{a,",
    ",b}}",
    "<(",
    ">(",
    "%",
    "?",
    "!",
    "-",
    "x",
    "printf %s ",
    "`",
    "$((",
    "<<EOF\n",
    "EOF\n",
    ">&",
    "$'",
    "case ",
];

/// Values that create a marker file if any part of them runs, in any context.
const PAYLOADS: &[&str] = &[
    ";touch M1;'\\'';touch M2;'\";touch M3;\"$(touch M4)`touch M5`\ntouch M6\n}touch M7 #)touch M8\nEOF\ntouch M9\n",
    "x[$(touch MA)]",
    "1+x[$(touch MB)]",
    "-v",
];

#[test]
fn random_templates_the_lexer_accepts_never_run_a_value() {
    const TEMPLATES: usize = 800;
    let mut rng = SplitMix64(DEFAULT_SEED);
    let mut shells = vec![vec!["/bin/sh"]];
    if std::path::Path::new("/bin/bash").exists() {
        shells.push(vec!["/bin/bash", "--posix"]);
    }
    let tmp = TempWs::new(&[]);
    let logs = TempWs::new(&[]);
    let log = logs.path().join("stderr");
    let (mut accepted, mut runs) = (0usize, 0usize);
    for _ in 0..TEMPLATES {
        let len = 1 + rng.below(10);
        // A program named first: a placeholder that names the program is refused, so templates
        // that start with one would mostly be refused and test nothing.
        let template: String = std::iter::once("printf %s ")
            .chain((0..len).map(|_| SHELL_FRAGMENTS[rng.below(SHELL_FRAGMENTS.len())]))
            .collect();
        let Ok(parsed) = Template::parse(&template) else {
            continue;
        };
        if parsed.slots().next().is_none() || parsed.slots().any(|s| s.context.is_err()) {
            continue;
        }
        accepted += 1;
        for payload in PAYLOADS {
            let command = parsed
                .render(|_| Some(Fill::Text((*payload).to_owned())))
                .expect("renders");
            for shell in &shells {
                run(shell, &command, tmp.path(), &log);
                runs += 1;
                let ran: Vec<String> = std::fs::read_dir(tmp.path())
                    .expect("lists")
                    .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with('M'))
                    .collect();
                assert!(
                    ran.is_empty(),
                    "{shell:?} ran {ran:?} from {template:?} rendered as {command:?}"
                );
                for entry in std::fs::read_dir(tmp.path()).expect("lists") {
                    let path = entry.expect("entry").path();
                    let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
                }
            }
        }
    }
    eprintln!(
        "seed {DEFAULT_SEED:#x}: {accepted} of {TEMPLATES} random templates accepted, {runs} runs, 0 ran a payload"
    );
    assert!(
        accepted > TEMPLATES / 10,
        "too few templates accepted: {accepted}"
    );
}

/// Runs `command` with `shell -c` in `dir`, its stderr to `log`, killing it after 10 seconds
/// (a random template may wait for input that never comes).
fn run(shell: &[&str], command: &str, dir: &std::path::Path, log: &std::path::Path) {
    let mut child = Command::new(shell[0])
        .args(&shell[1..])
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_clear()
        .env("HOME", "/h")
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("creates the log"))
        .spawn()
        .expect("starts the shell");
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().expect("waits").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Runs `sh script.sh` in `dir` with a small fixed environment, its stderr to `log`, failing
/// after a minute.
fn run_sh(dir: &std::path::Path, log: &std::path::Path) {
    let mut child = Command::new("/bin/sh")
        .arg("script.sh")
        .current_dir(dir)
        .env_clear()
        .env("HOME", "/h")
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("creates the log"))
        .spawn()
        .expect("starts /bin/sh");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            assert!(
                status.success(),
                "/bin/sh failed: {status}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("/bin/sh ran for over a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
