//! The CLI's words for messages the libraries write for agents. A library's error names what an
//! MCP caller sends and calls (`cursor`, `limit`, "call once_query_targets"), and MCP returns it
//! as is; the same error on the command line must name what a person types (`--cursor`,
//! "run `once query targets`"). Rather than teach every library who is asking, the binary rewrites
//! those phrases at its edge, here, with one table. It must never change what a message says,
//! only how it names arguments and tools; and never touch JSON, which is the same for both.

/// Phrases of the libraries' messages and the command line's words for them, applied in order
/// (longer phrases first). A phrase that starts a sentence after `did you mean …?` is capitalised
/// there; [`for_cli`] tries both spellings.
const PHRASES: &[(&str, &str)] = &[
    (
        "call once_query_targets to list targets",
        "run `once query targets` to list targets",
    ),
    (
        "call once_query_schema without `kind` to see every kind",
        "run `once query schema` to see every kind",
    ),
    (
        "once_query_runs without arguments lists the recent runs",
        "`once query runs` lists the recent runs",
    ),
    (
        "once_query_runs with only run_id lists its actions",
        "`once query runs RUN_ID` lists its actions",
    ),
    (
        "call once_query_runs without arguments to find the run",
        "run `once query runs` to find the run",
    ),
    ("(see once_query_workspace)", "(run `once check`)"),
    (
        "mode `order` needs a capability",
        "`order` needs a capability",
    ),
    ("invalid cursor:", "invalid `--cursor`:"),
    ("invalid `cursor`:", "invalid `--cursor`:"),
    ("omit `cursor`", "leave out `--cursor`"),
    (
        "or omit it to start again",
        "or leave it out to start again",
    ),
    (
        "pass `next_cursor` back",
        "pass an answer's `next_cursor` back as `--cursor`",
    ),
    (
        "pass back the `next_cursor`",
        "pass back as `--cursor` the `next_cursor`",
    ),
    ("page with `next_cursor`", "page with `--cursor`"),
    ("`limit`", "`--limit`"),
    ("or set `capability`", "or pass `--capability`"),
    ("but `capability` is", "but `--capability` is"),
    ("pass `target` as", "pass the target as"),
    ("`files` names", "`--files` names"),
    ("`name` is not a valid glob", "`--name` is not a valid glob"),
];

/// `message` in the command line's words.
pub fn for_cli(message: &str) -> String {
    let mut text = target_call(message);
    for (agent, person) in PHRASES {
        text = text.replace(agent, person);
        let (agent, person) = (capitalised(agent), capitalised(person));
        text = text.replace(&agent, &person);
    }
    text
}

/// "call once_query_target with name `web`" → "run `once query target web`" (either case).
fn target_call(message: &str) -> String {
    let mut text = message.to_owned();
    for (call, run) in [("call", "run"), ("Call", "Run")] {
        let opening = format!("{call} once_query_target with name `");
        while let Some(start) = text.find(&opening) {
            let name_at = start + opening.len();
            let Some(length) = text[name_at..].find('`') else {
                break;
            };
            let name = text[name_at..name_at + length].to_owned();
            text.replace_range(
                start..name_at + length + 1,
                &format!("{run} `once query target {name}`"),
            );
        }
    }
    text
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_and_arguments_become_commands_and_flags() {
        for (agent, person) in [
            (
                "no target named `wbe`; did you mean `web`? Call once_query_targets to list targets",
                "no target named `wbe`; did you mean `web`? Run `once query targets` to list targets",
            ),
            (
                "target `web` has no capability `bild`; call once_query_target with name `web` to see its capabilities",
                "target `web` has no capability `bild`; run `once query target web` to see its capabilities",
            ),
            ("`limit` must be at least 1", "`--limit` must be at least 1"),
            (
                "mode `order` needs a capability: pass `target` as `web:CAP` or set `capability`; `web` has: build",
                "`order` needs a capability: pass the target as `web:CAP` or pass `--capability`; `web` has: build",
            ),
            (
                "no run with id `x`; once_query_runs without arguments lists the recent runs",
                "no run with id `x`; `once query runs` lists the recent runs",
            ),
        ] {
            assert_eq!(for_cli(agent), person);
        }
    }

    #[test]
    fn a_message_without_those_phrases_is_unchanged() {
        let text = "target `once_query_target` has no capability `x`";
        assert_eq!(for_cli(text), text);
    }
}
