//! The quoting context of each placeholder of a command, found by reading the command as
//! `/bin/sh` (dash, or bash in POSIX mode) reads it.
//!
//! A value can be quoted safely only when we know where it lands: unquoted, inside `'…'`,
//! inside `"…"`, or in one of those inside `$(…)`, to any depth. This lexer follows the shell's
//! own rules for exactly the constructs that change that answer (quotes, backslashes and line
//! continuations, `$(…)`, `${…}`, `$((…))`, backquotes, comments, here-documents) and nothing
//! else: it is not a parser. `/bin/sh` is bash on some systems, so bash's own readings count
//! too: `$'…'`, `NAME[…]`, `((`, and the places where bash evaluates a word again (`>&WORD`, the
//! operands inside `[[ … ]]`). It must never guess. Where it cannot be certain, or where the two
//! shells disagree, every placeholder from that point on is refused; a refused placeholder
//! refuses its whole command, so what comes after a refusal never needs to be exact.

use std::fmt;

/// One unit of a command: a character of its text, or a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item {
    Char(char),
    Slot,
}

/// Where a placeholder sits, for the contexts that have a safe rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quoting {
    /// Unquoted; `alone` when the placeholder is a whole word by itself (nothing glued to it).
    Bare { alone: bool },
    /// Inside `'…'`.
    Single,
    /// Inside `"…"`.
    Double,
}

/// Why a placeholder has no safe rendering where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsafe {
    /// Inside `` `…` ``, whose text is read twice with its own backslash rules.
    Backquotes,
    /// In a here-document's delimiter or body, where a line of the value can end the body.
    HereDoc,
    /// In a comment.
    Comment,
    /// Inside `${…}`.
    ParamExpansion,
    /// Inside `$((…))`.
    Arithmetic,
    /// Inside `$'…'` or `$"…"`, which dash and bash read differently.
    DollarQuote,
    /// Right after `$`: the value would become a parameter name or an expansion.
    AfterDollar,
    /// Right after `$NAME` inside `"…"`: the value would extend the variable's name.
    AfterVariable,
    /// Right after a backslash, which would escape the value's first character.
    AfterBackslash,
    /// In the word after `>&` or `<&`, which bash expands a second time.
    DupRedirect,
    /// Inside `[[ … ]]`, where bash evaluates the operands of `-eq`, `-v` and the like as
    /// arithmetic, and so runs `$(…)` inside a value such as `a[$(cmd)]`.
    DoubleBrackets,
    /// In the name of the program a command runs: the value would choose what runs.
    CommandName,
    /// In an argument of `eval`, which runs its arguments as shell code.
    Evaluated,

    /// After a construct the lexer cannot follow with certainty, named here.
    Uncertain(&'static str),
    /// Inside a construct the command never closes, named here (`sh` would refuse it too).
    Unclosed(&'static str),
}

impl Unsafe {
    /// The safe spelling to suggest, in template syntax.
    pub fn help(self) -> &'static str {
        match self {
            Unsafe::Backquotes => {
                "write `$(…)` instead of backquotes: in `$(printf '%s' {name})` the value is quoted"
            }
            Unsafe::HereDoc => {
                "pass the value as an argument instead of through a here-document, e.g. `printf '%s\\n' {name} | cmd`"
            }
            Unsafe::Comment => "remove the placeholder from the comment, or write `{{` for a brace",
            Unsafe::ParamExpansion => {
                "put the value in a variable first: `v={name}; echo \"${{v:-default}}\"`"
            }
            Unsafe::Arithmetic => "put the value in a variable first: `n={name}; echo $((n + 1))`",
            Unsafe::DollarQuote => "use `'…'` or `\"…\"`, or leave the placeholder unquoted",
            Unsafe::AfterDollar => {
                "a placeholder is not a shell variable: write `{name}` alone, and `${{VAR}}` for a variable"
            }
            Unsafe::AfterVariable => "end the variable's name first: `\"${{VAR}}{name}\"`",
            Unsafe::AfterBackslash => "remove the backslash before the placeholder",
            Unsafe::DupRedirect => "redirect to a file with `>` and `2>&1`: `cmd > {name} 2>&1`",
            Unsafe::DoubleBrackets => {
                "use `[ … ]`, which compares the value as a string: `[ {name} = yes ]`"
            }
            Unsafe::CommandName => {
                "name the program in the command and pass the value as an argument, e.g. `node {name}`; to choose between programs, test the value: `if [ {name} = fast ]; then fast-tool; else slow-tool; fi`"
            }
            Unsafe::Evaluated => {
                "pass the value as an argument of a program instead of through `eval`, which runs it as code"
            }

            Unsafe::Unclosed(_) => "close the quote or substitution the placeholder sits in",
            Unsafe::Uncertain(_) => {
                "move the placeholder before that construct, or put the value in a variable first (`v={name}; …`); unquoted, `echo msg={name}` renders as one word"
            }
        }
    }
}

impl fmt::Display for Unsafe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsafe::Backquotes => f.write_str("inside backquotes"),
            Unsafe::HereDoc => f.write_str("inside a here-document"),
            Unsafe::Comment => f.write_str("inside a comment"),
            Unsafe::ParamExpansion => f.write_str("inside `${…}`"),
            Unsafe::Arithmetic => f.write_str("inside `$((…))`"),
            Unsafe::DollarQuote => f.write_str("inside `$'…'` or `$\"…\"`"),
            Unsafe::AfterDollar => f.write_str("right after `$`"),
            Unsafe::AfterVariable => f.write_str("right after a variable inside `\"…\"`"),
            Unsafe::AfterBackslash => f.write_str("right after a backslash"),
            Unsafe::DupRedirect => f.write_str("in the word after `>&` or `<&`"),
            Unsafe::DoubleBrackets => f.write_str("inside `[[ … ]]`"),
            Unsafe::CommandName => f.write_str("in the name of the program a command runs"),
            Unsafe::Evaluated => f.write_str("in an argument of `eval`"),

            Unsafe::Uncertain(what) => {
                write!(f, "after {what}, which cannot be read with certainty")
            }
            Unsafe::Unclosed(what) => write!(f, "inside {what}"),
        }
    }
}

/// The context of each placeholder of `items`, in order.
pub(crate) fn classify(items: &[Item]) -> Vec<Result<Quoting, Unsafe>> {
    let mut lexer = Lexer {
        items,
        pos: 0,
        out: Vec::new(),
    };
    lexer.command(0, false, false);
    lexer.out
}

/// Deeper nesting of `$(…)` is refused rather than followed (and the recursion stays bounded).
const MAX_DEPTH: usize = 32;

/// A here-document whose body starts after the current line.
struct HereDoc {
    word: String,
    strip_tabs: bool,
    quoted: bool,
}

struct Lexer<'a> {
    items: &'a [Item],
    pos: usize,
    out: Vec<Result<Quoting, Unsafe>>,
}

fn identifier(word: &str) -> bool {
    word.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
        && word.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Words after which the next word still names the program to run (or is its assignment):
/// the shell's reserved words that open a command list, and the builtins and wrappers that run
/// their first argument as a program.
const LEADING_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "while", "until", "do", "!", "{", "time", "exec", "command",
    "builtin", "nohup", "env",
];

/// A word of the command being read, while it may still be the name of the program it runs.
struct Word {
    /// Index of the first placeholder read in the word.
    first: usize,
    /// The word's text, while it is only plain characters.
    text: String,
    /// Whether anything but plain characters (a placeholder, a quote, `$`, a backslash) is in it.
    plain: bool,
    /// `NAME=` seen while the word was plain: an assignment, not a program's name.
    assignment: bool,
    /// The word follows `<` or `>`: a file name, not a program's name.
    redirect: bool,
}

impl Word {
    fn new(first: usize, redirect: bool) -> Word {
        Word {
            first,
            text: String::new(),
            plain: true,
            assignment: false,
            redirect,
        }
    }

    fn push(&mut self, item: Item) {
        match item {
            Item::Char(c) if self.plain && !matches!(c, '\\' | '\'' | '"' | '`' | '$') => {
                if c == '=' && !self.assignment && identifier(&self.text) {
                    self.assignment = true;
                }
                self.text.push(c);
            }
            _ => self.plain = false,
        }
    }
}

fn blank(item: Option<Item>) -> bool {
    matches!(item, Some(Item::Char(' ' | '\t')))
}

/// Ends a word: end of text, a blank, a newline or an operator character.
fn word_end(item: Option<Item>) -> bool {
    matches!(
        item,
        None | Some(Item::Char(
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
        ))
    )
}

impl Lexer<'_> {
    fn peek_raw(&self) -> Option<Item> {
        self.items.get(self.pos).copied()
    }

    fn next_raw(&mut self) -> Option<Item> {
        let item = self.peek_raw()?;
        self.pos += 1;
        Some(item)
    }

    /// Skips line continuations: both shells drop backslash-newline everywhere outside single
    /// quotes, comments and quoted here-documents, before anything else sees the text.
    fn skip_continuations(&mut self) {
        while self.items.get(self.pos) == Some(&Item::Char('\\'))
            && self.items.get(self.pos + 1) == Some(&Item::Char('\n'))
        {
            self.pos += 2;
        }
    }

    fn peek(&mut self) -> Option<Item> {
        self.skip_continuations();
        self.peek_raw()
    }

    fn next(&mut self) -> Option<Item> {
        self.skip_continuations();
        self.next_raw()
    }

    /// Whether the next characters (continuations skipped) spell `word`.
    fn ahead(&self, word: &str) -> bool {
        let mut pos = self.pos;
        for want in word.chars() {
            while self.items.get(pos) == Some(&Item::Char('\\'))
                && self.items.get(pos + 1) == Some(&Item::Char('\n'))
            {
                pos += 2;
            }
            if self.items.get(pos) != Some(&Item::Char(want)) {
                return false;
            }
            pos += 1;
        }
        true
    }

    /// Refuses every placeholder from here on and stops lexing.
    fn give_up(&mut self, why: Unsafe) {
        let rest = self.items[self.pos.min(self.items.len())..]
            .iter()
            .filter(|i| **i == Item::Slot)
            .count();
        self.out.extend(std::iter::repeat_n(Err(why), rest));
        self.pos = self.items.len();
    }

    /// The text ended inside a construct opened at placeholder index `first`: the shell would
    /// refuse the command, and so do we, for every placeholder inside it.
    fn unterminated(&mut self, first: usize, what: &'static str) {
        self.refuse_since(first, Unsafe::Unclosed(what));
    }

    /// At the end of a command frame: what a `>&` word, a word with `[` or an unclosed `[[`
    /// holds is refused.
    fn refuse_open(&mut self, dup: Option<(usize, bool)>, brackets: Option<usize>) {
        if let Some((first, _)) = dup {
            self.refuse_since(first, Unsafe::DupRedirect);
        }
        if let Some(first) = brackets {
            self.refuse_since(first, Unsafe::DoubleBrackets);
        }
    }

    /// Refuses every placeholder from index `first` on that is not refused already.
    fn refuse_since(&mut self, first: usize, why: Unsafe) {
        for context in self.out.iter_mut().skip(first) {
            if context.is_ok() {
                *context = Err(why);
            }
        }
    }

    /// Unquoted text: the whole command, or the inside of `$(…)` when `subst` (then returns
    /// true once its `)` is read). `pending` says an enclosing command still waits for the body
    /// of a here-document.
    fn command(&mut self, depth: usize, subst: bool, pending: bool) -> bool {
        let first = self.out.len();
        let mut parens = 0usize;
        let mut word_start = true;
        let mut heredocs: Vec<HereDoc> = Vec::new();
        // The word after `>&`/`<&`: bash expands it again when it is not a number, so a value
        // anywhere in it, even quoted, would be expanded twice. (first placeholder, word begun)
        let mut dup: Option<(usize, bool)> = None;
        // Inside `[[ … ]]`: the first placeholder since `[[`.
        let mut brackets: Option<usize> = None;
        // The word so far while it is only letters, digits and `_`.
        let mut plain: Option<String> = Some(String::new());
        // Whether the next word names the program a command runs; the word being read; whether
        // the next word follows a redirection; the first placeholder after an `eval`.
        let mut at_command = true;
        let mut word: Option<Word> = None;
        let mut redirect = false;
        let mut evaluated: Option<usize> = None;
        while let Some(item) = self.next() {
            if word_end(Some(item)) {
                if let Some(done) = word.take() {
                    self.settle(done, item, &mut at_command, &mut evaluated);
                }
                match item {
                    Item::Char(';' | '&' | '|' | '\n' | '(' | ')') => {
                        at_command = true;
                        redirect = false;
                        if let Some(first) = evaluated.take() {
                            self.refuse_since(first, Unsafe::Evaluated);
                        }
                    }
                    Item::Char('<' | '>') => redirect = true,
                    _ => {}
                }
            } else {
                word.get_or_insert_with(|| {
                    Word::new(self.out.len(), std::mem::take(&mut redirect))
                })
                .push(item);
            }
            match dup {
                Some((first, true)) if word_end(Some(item)) => {
                    self.refuse_since(first, Unsafe::DupRedirect);
                    dup = None;
                }
                Some((first, false)) if !word_end(Some(item)) => dup = Some((first, true)),
                _ => {}
            }
            let Item::Char(c) = item else {
                let alone = word_start && word_end(self.peek());
                self.out.push(Ok(Quoting::Bare { alone }));
                word_start = false;
                plain = None;
                continue;
            };
            let starts_word = word_start;
            word_start = word_end(Some(item));
            // The plain word before this character, if it is one.
            let before = if starts_word {
                Some(String::new())
            } else {
                plain.take()
            };
            let name = before.as_deref().is_some_and(identifier);
            plain = match before {
                _ if word_start => Some(String::new()),
                Some(mut word) if c == '_' || c.is_ascii_alphanumeric() => {
                    word.push(c);
                    Some(word)
                }
                _ => None,
            };
            match c {
                '\n' => {
                    if subst && pending {
                        self.give_up(Unsafe::Uncertain(
                            "a line break inside `$(…)` before a here-document's body",
                        ));
                        return false;
                    }
                    for doc in std::mem::take(&mut heredocs) {
                        if !self.heredoc_body(&doc) {
                            return false;
                        }
                    }
                }
                '<' if self.peek() == Some(Item::Char('<')) => {
                    self.next();
                    let strip_tabs = self.peek() == Some(Item::Char('-'));
                    if strip_tabs {
                        self.next();
                    }
                    if self.peek() == Some(Item::Char('<')) {
                        self.give_up(Unsafe::Uncertain("`<<<`"));
                        return false;
                    }
                    // The delimiter is read here, so the next word is not the redirection's.
                    redirect = false;
                    match self.delimiter(strip_tabs) {
                        Some(doc) => heredocs.push(doc),
                        None => return false,
                    }
                }
                '[' if starts_word && self.ahead("[") => {
                    self.next();
                    brackets = brackets.or(Some(self.out.len()));
                }
                ']' if starts_word && self.ahead("]") => {
                    self.next();
                    if let Some(first) = brackets.take() {
                        self.refuse_since(first, Unsafe::DoubleBrackets);
                    }
                }
                '[' if name => {
                    // `NAME[`: bash reads an array subscript by its own rules (`>` and blanks
                    // inside it do not end the word) and evaluates it as arithmetic.
                    self.give_up(Unsafe::Uncertain("`NAME[`"));
                    return false;
                }
                '>' | '<' if self.peek() == Some(Item::Char('&')) => {
                    self.next();
                    dup = Some((self.out.len(), false));
                }
                '(' if self.peek() == Some(Item::Char('(')) => {
                    // bash's arithmetic command, or two subshells in dash.
                    self.give_up(Unsafe::Uncertain("`((`"));
                    return false;
                }
                '(' => parens += 1,
                ')' if subst && parens == 0 => {
                    self.refuse_open(dup, brackets);
                    return true;
                }
                ')' => parens = parens.saturating_sub(1),
                '#' if starts_word => self.comment(),
                'c' if subst && starts_word && self.ahead("ase") => {
                    // Its patterns end in `)`, which only a parser can tell from the end of `$(…)`.
                    self.give_up(Unsafe::Uncertain("`case` inside `$(…)`"));
                    return false;
                }
                '\\' => self.escaped(),
                '\'' => self.single(),
                '"' => self.double(depth, pending || !heredocs.is_empty(), None),
                '`' => self.backquotes(pending || !heredocs.is_empty()),
                '$' => self.dollar(depth, pending || !heredocs.is_empty(), false),
                _ => {}
            }
        }
        if let Some(done) = word.take() {
            self.settle(done, Item::Char('\n'), &mut at_command, &mut evaluated);
        }
        if let Some(first) = evaluated {
            self.refuse_since(first, Unsafe::Evaluated);
        }
        self.refuse_open(dup, brackets);
        if subst {
            self.unterminated(first, "an unclosed `$(`");
        }
        false
    }

    /// A word of the command ended (at `end`): when it names the program to run, every
    /// placeholder in it is refused, and `eval`'s arguments will be.
    fn settle(
        &mut self,
        word: Word,
        end: Item,
        at_command: &mut bool,
        evaluated: &mut Option<usize>,
    ) {
        if word.redirect || !*at_command || word.assignment {
            return;
        }
        if word.plain {
            let fd = matches!(end, Item::Char('<' | '>'))
                && word.text.bytes().all(|b| b.is_ascii_digit());
            if fd || LEADING_WORDS.contains(&word.text.as_str()) {
                return;
            }
        }
        *at_command = false;
        for context in self.out.iter_mut().skip(word.first) {
            if context.is_ok() {
                *context = Err(Unsafe::CommandName);
            }
        }
        if word.plain && word.text == "eval" {
            *evaluated = Some(self.out.len());
        }
    }

    /// After a backslash outside single quotes: the next character is taken literally, and a
    /// placeholder there would have its value's first character escaped.
    fn escaped(&mut self) {
        if self.next_raw() == Some(Item::Slot) {
            self.out.push(Err(Unsafe::AfterBackslash));
        }
    }

    fn comment(&mut self) {
        while let Some(item) = self.peek_raw() {
            match item {
                Item::Char('\n') => return,
                Item::Slot => self.out.push(Err(Unsafe::Comment)),
                Item::Char(_) => {}
            }
            self.pos += 1;
        }
    }

    fn single(&mut self) {
        let first = self.out.len();
        while let Some(item) = self.next_raw() {
            match item {
                Item::Slot => self.out.push(Ok(Quoting::Single)),
                Item::Char('\'') => return,
                Item::Char(_) => {}
            }
        }
        self.unterminated(first, "an unclosed `'`");
    }

    /// Inside `"…"`; `refuse` marks bash's `$"…"`, whose placeholders are all refused.
    fn double(&mut self, depth: usize, pending: bool, refuse: Option<Unsafe>) {
        let first = self.out.len();
        while let Some(item) = self.next() {
            match item {
                Item::Slot => self.out.push(refuse.map_or(Ok(Quoting::Double), Err)),
                Item::Char('"') => return,
                Item::Char('\\') => self.escaped(),
                Item::Char('`') => self.backquotes(pending),
                Item::Char('$') => self.dollar(depth, pending, true),
                Item::Char(_) => {}
            }
        }
        self.unterminated(first, "an unclosed `\"`");
    }

    /// Old-style command substitution: its end is the first backquote not escaped by a
    /// backslash (as the shell finds it); everything inside is refused.
    fn backquotes(&mut self, pending: bool) {
        let first = self.out.len();
        while let Some(item) = self.next_raw() {
            match item {
                Item::Slot => self.out.push(Err(Unsafe::Backquotes)),
                Item::Char('`') => return,
                Item::Char('\\') => {
                    if self.next_raw() == Some(Item::Slot) {
                        self.out.push(Err(Unsafe::Backquotes));
                    }
                }
                Item::Char('\n') if pending => {
                    self.give_up(Unsafe::Uncertain(
                        "a line break inside backquotes before a here-document's body",
                    ));
                    return;
                }
                Item::Char(_) => {}
            }
        }
        self.unterminated(first, "an unclosed backquote");
    }

    /// After a `$`, unquoted (`in_double` false) or inside `"…"`.
    fn dollar(&mut self, depth: usize, pending: bool, in_double: bool) {
        match self.peek() {
            Some(Item::Slot) => {
                self.next();
                self.out.push(Err(Unsafe::AfterDollar));
            }
            Some(Item::Char('(')) => {
                self.next();
                if self.peek() == Some(Item::Char('(')) {
                    self.next();
                    self.arithmetic();
                } else if depth >= MAX_DEPTH {
                    self.give_up(Unsafe::Uncertain("`$(…)` nested too deep"));
                } else {
                    self.command(depth + 1, true, pending);
                }
            }
            Some(Item::Char('{')) => {
                self.next();
                self.parameter();
            }
            Some(Item::Char('[')) => self.give_up(Unsafe::Uncertain("`$[`")),
            Some(Item::Char('\'')) if !in_double => {
                self.next();
                self.dollar_single();
            }
            Some(Item::Char('"')) if !in_double => {
                self.next();
                self.double(depth, pending, Some(Unsafe::DollarQuote));
            }
            Some(Item::Char(c)) if c == '_' || c.is_ascii_alphabetic() => {
                while let Some(Item::Char(c)) = self.peek() {
                    if c != '_' && !c.is_ascii_alphanumeric() {
                        break;
                    }
                    self.next();
                }
                // Unquoted, a glued value is always single-quoted, which ends the name.
                if in_double && self.peek() == Some(Item::Slot) {
                    self.next();
                    self.out.push(Err(Unsafe::AfterVariable));
                }
            }
            _ => {}
        }
    }

    /// After `$((`: to the matching `))`, everything refused.
    fn arithmetic(&mut self) {
        let first = self.out.len();
        let mut parens = 0usize;
        while let Some(item) = self.next() {
            match item {
                Item::Slot => self.out.push(Err(Unsafe::Arithmetic)),
                Item::Char('(') => parens += 1,
                Item::Char(')') if parens > 0 => parens -= 1,
                Item::Char(')') => {
                    if self.next() != Some(Item::Char(')')) {
                        self.give_up(Unsafe::Uncertain("`$((` closed by one `)`"));
                    }
                    return;
                }
                Item::Char('\'' | '"' | '`' | '\\') => {
                    self.give_up(Unsafe::Uncertain("quotes inside `$((…))`"));
                    return;
                }
                Item::Char('$') if self.peek() == Some(Item::Char('(')) => {
                    self.give_up(Unsafe::Uncertain("`$(` inside `$((…))`"));
                    return;
                }
                Item::Char(_) => {}
            }
        }
        self.unterminated(first, "an unclosed `$((`");
    }

    /// After `${`: to the matching `}`, everything refused. Only the simple forms are followed.
    fn parameter(&mut self) {
        let first = self.out.len();
        let mut nested = 0usize;
        while let Some(item) = self.next() {
            match item {
                Item::Slot => self.out.push(Err(Unsafe::ParamExpansion)),
                Item::Char('}') if nested == 0 => return,
                Item::Char('}') => nested -= 1,
                Item::Char('$') if self.peek() == Some(Item::Char('{')) => {
                    self.next();
                    nested += 1;
                }
                Item::Char('$') if self.peek() == Some(Item::Char('(')) => {
                    self.give_up(Unsafe::Uncertain("`$(` inside `${…}`"));
                    return;
                }
                Item::Char('\'' | '"' | '`' | '\\' | '\n') => {
                    self.give_up(Unsafe::Uncertain("quotes or a line break inside `${…}`"));
                    return;
                }
                Item::Char(_) => {}
            }
        }
        self.unterminated(first, "an unclosed `${`");
    }

    /// After `$'`: bash reads backslash escapes here and dash does not, so a backslash gives up.
    fn dollar_single(&mut self) {
        let first = self.out.len();
        while let Some(item) = self.next_raw() {
            match item {
                Item::Slot => self.out.push(Err(Unsafe::DollarQuote)),
                Item::Char('\'') => return,
                Item::Char('\\') => {
                    self.give_up(Unsafe::Uncertain("a backslash inside `$'…'`"));
                    return;
                }
                Item::Char(_) => {}
            }
        }
        self.unterminated(first, "an unclosed `$'`");
    }

    /// The word after `<<`: the delimiter, unquoted as the shell does. `None` once given up.
    fn delimiter(&mut self, strip_tabs: bool) -> Option<HereDoc> {
        const COMPLEX: Unsafe = Unsafe::Uncertain("a here-document delimiter with `$` or `\\`");
        while blank(self.peek()) {
            self.next();
        }
        let mut word = String::new();
        let mut quoted = false;
        loop {
            let item = self.peek();
            if word_end(item) {
                break;
            }
            if item == Some(Item::Slot) {
                self.give_up(Unsafe::HereDoc);
                return None;
            }
            self.next();
            match item {
                Some(Item::Char('\'')) => {
                    quoted = true;
                    loop {
                        match self.peek_raw() {
                            Some(Item::Char('\'')) => {
                                self.pos += 1;
                                break;
                            }
                            Some(Item::Char(c)) => {
                                self.pos += 1;
                                word.push(c);
                            }
                            Some(Item::Slot) => {
                                self.give_up(Unsafe::HereDoc);
                                return None;
                            }
                            None => {
                                self.give_up(COMPLEX);
                                return None;
                            }
                        }
                    }
                }
                Some(Item::Char('"')) => {
                    quoted = true;
                    loop {
                        match self.peek() {
                            Some(Item::Char('"')) => {
                                self.pos += 1;
                                break;
                            }
                            Some(Item::Char('\\' | '$' | '`')) | None => {
                                self.give_up(COMPLEX);
                                return None;
                            }
                            Some(Item::Char(c)) => {
                                self.pos += 1;
                                word.push(c);
                            }
                            Some(Item::Slot) => {
                                self.give_up(Unsafe::HereDoc);
                                return None;
                            }
                        }
                    }
                }
                Some(Item::Char('\\')) => {
                    quoted = true;
                    match self.peek_raw() {
                        Some(Item::Char(c)) => {
                            self.pos += 1;
                            word.push(c);
                        }
                        Some(Item::Slot) => {
                            self.give_up(Unsafe::HereDoc);
                            return None;
                        }
                        None => {
                            self.give_up(COMPLEX);
                            return None;
                        }
                    }
                }
                Some(Item::Char('$' | '`')) | Some(Item::Slot) | None => {
                    self.give_up(COMPLEX);
                    return None;
                }
                Some(Item::Char(c)) => word.push(c),
            }
        }
        if word.is_empty() {
            self.give_up(Unsafe::Uncertain("`<<` without a delimiter"));
            return None;
        }
        Some(HereDoc {
            word,
            strip_tabs,
            quoted,
        })
    }

    /// Reads a here-document's body, line by line up to its delimiter, refusing every
    /// placeholder in it. False once given up.
    fn heredoc_body(&mut self, doc: &HereDoc) -> bool {
        while self.pos < self.items.len() {
            let mut line = String::new();
            let mut has_slot = false;
            while let Some(item) = self.next_raw() {
                match item {
                    Item::Char('\n') => break,
                    Item::Char(c) => line.push(c),
                    Item::Slot => {
                        has_slot = true;
                        self.out.push(Err(Unsafe::HereDoc));
                    }
                }
            }
            // Unquoted, a body joins continued lines and parses `$(…)` (dash across lines,
            // bash not), so where it ends is not certain.
            if !doc.quoted
                && (line.ends_with('\\')
                    || line.contains("$(")
                    || line.contains("${")
                    || line.contains('`'))
            {
                self.give_up(Unsafe::Uncertain(
                    "an unquoted here-document with `\\`, `$(`, `${` or backquotes",
                ));
                return false;
            }
            let check = if doc.strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line.as_str()
            };
            if !has_slot && check == doc.word {
                return true;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `template` with each `@` a placeholder.
    fn contexts(template: &str) -> Vec<Result<Quoting, Unsafe>> {
        let items: Vec<Item> = template
            .chars()
            .map(|c| if c == '@' { Item::Slot } else { Item::Char(c) })
            .collect();
        classify(&items)
    }

    const ALONE: Quoting = Quoting::Bare { alone: true };
    const GLUED: Quoting = Quoting::Bare { alone: false };

    #[test]
    fn accepted_contexts() {
        let cases: &[(&str, &[Quoting])] = &[
            ("echo @", &[ALONE]),
            (
                "echo @ @;echo @|cat @>@",
                &[ALONE, ALONE, ALONE, ALONE, ALONE],
            ),
            ("FOO=@ BAR='@' cmd @", &[GLUED, Quoting::Single, ALONE]),
            ("2>@ echo @; >'@' echo", &[ALONE, ALONE, Quoting::Single]),
            ("case @ in a) echo @;; esac", &[ALONE, ALONE]),
            ("if true; then echo @; fi", &[ALONE]),
            ("echo --x=@ a@b @x", &[GLUED, GLUED, GLUED]),
            ("echo '@' 'a@b'", &[Quoting::Single, Quoting::Single]),
            ("echo \"@\" \"a@b\"", &[Quoting::Double, Quoting::Double]),
            (
                "echo \"it's @\" 'say \"@\"'",
                &[Quoting::Double, Quoting::Single],
            ),
            ("echo $(echo @)", &[ALONE]),
            (
                "echo \"$(echo '@' \"@\" @)\"",
                &[Quoting::Single, Quoting::Double, ALONE],
            ),
            ("echo $(echo $(echo \"@\") @)", &[Quoting::Double, ALONE]),
            ("echo $(cd a && (echo x) ) @", &[ALONE]),
            (
                "echo $HOME@ $1@ \"$1@\" \"${x}@\"",
                &[GLUED, GLUED, Quoting::Double, Quoting::Double],
            ),
            ("echo a#b @", &[ALONE]),
            ("echo \\\\@", &[GLUED]),
            ("echo \"\\\\@\"", &[Quoting::Double]),
            ("echo ${HOME} @", &[ALONE]),
            ("echo $((1 + (2 * 3))) @", &[ALONE]),
            ("cat <<EOF\nbody $x\nEOF\necho @", &[ALONE]),
            ("cat <<-'E O'\n\tbody\n\tE O\necho '@'", &[Quoting::Single]),
            ("cat <<EOF; echo \"a\nb\"\nbody\nEOF\necho @", &[ALONE]),
            ("echo a \\\n@", &[ALONE]),
            ("echo \"$\\\n(echo @)\"", &[ALONE]),
            ("# a comment\necho @", &[ALONE]),
            ("echo $'x' @", &[ALONE]),
            (
                "[[ -n x ]] && echo @ [ @ = x ] *.[ch] @",
                &[ALONE, ALONE, ALONE],
            ),
        ];
        for (template, want) in cases {
            let want: Vec<_> = want.iter().map(|q| Ok(*q)).collect();
            assert_eq!(contexts(template), want, "{template:?}");
        }
    }

    #[test]
    fn refused_contexts() {
        use Unsafe::*;
        let cases: &[(&str, &[Unsafe])] = &[
            ("echo `echo @`", &[Backquotes]),
            ("echo \"`echo \\`@\\``\"", &[Backquotes]),
            ("echo # @", &[Comment]),
            ("echo a \\\n# @", &[Comment]),
            ("echo ${x:-@}", &[ParamExpansion]),
            ("echo \"${x:-${y:-@}}\"", &[ParamExpansion]),
            ("echo $((@ + 1))", &[Arithmetic]),
            ("echo $'@'", &[DollarQuote]),
            ("echo $\"@\"", &[DollarQuote]),
            ("echo $@ \"$@\"", &[AfterDollar, AfterDollar]),
            ("echo \"$HOME@\"", &[AfterVariable]),
            ("echo \\@ \"\\@\"", &[AfterBackslash, AfterBackslash]),
            ("cat <<EOF\n@\nEOF", &[HereDoc]),
            ("cat <<'EOF'\n'@'\nEOF", &[HereDoc]),
            ("cat <<@\nx\n", &[HereDoc]),
            ("echo >&@ 2>&'@'", &[DupRedirect, DupRedirect]),
            ("echo >& \"$(echo @)\"x", &[DupRedirect]),
            ("cat <&a@", &[DupRedirect]),
            ("echo $(echo >&@)", &[DupRedirect]),
            ("[[ @ -eq 1 ]]", &[DoubleBrackets]),
            ("[[ -v \"@\" ]] && echo", &[DoubleBrackets]),
            ("@ --version", &[CommandName]),
            (
                "echo x | @ && './@.sh' || \"@\"x",
                &[CommandName, CommandName, CommandName],
            ),
            ("FOO=1 BAR=2 @ arg", &[CommandName]),
            ("2>/dev/null @", &[CommandName]),
            ("echo $(@ x) \"$(@)\"", &[CommandName, CommandName]),
            ("if @; then ( @ ); fi", &[CommandName, CommandName]),
            (
                "exec @; env @; time @",
                &[CommandName, CommandName, CommandName],
            ),
            ("cat <<EOF\nx\nEOF\n@", &[CommandName]),
            ("eval echo @ '@'", &[Evaluated, Evaluated]),
        ];
        for (template, want) in cases {
            let want: Vec<_> = want.iter().map(|u| Err(*u)).collect();
            assert_eq!(contexts(template), want, "{template:?}");
        }
    }

    #[test]
    fn uncertain_constructs_refuse_what_follows_only() {
        let cases = [
            "echo $(case x in a) echo;; esac) @",
            "echo ((1)) @",
            "cat <<<x @",
            "echo $[1] @",
            "echo ${x:-'a'} @",
            "echo $((\"1\")) @",
            "echo $'a\\'' @",
            "cat <<EOF\n$(echo\nEOF\n)\nEOF\necho @",
            "cat <<EOF\nx\\\nEOF\nEOF\necho @",
            "cat <<EOF $(\n)\nEOF\necho @",
            "cat <<$x\n$x\necho @",
            "a[@]=1",
            "a['x']=1 @",
            "a[$x>(@)]=",
            "echo x_1[0] @",
        ];
        for template in cases {
            let got = contexts(template);
            assert!(
                matches!(got.as_slice(), [Err(Unsafe::Uncertain(_))]),
                "{template:?}: {got:?}"
            );
        }
        assert_eq!(
            contexts("echo @ $(case x in a) echo;; esac) @"),
            [Ok(ALONE), Err(Unsafe::Uncertain("`case` inside `$(…)`"))]
        );
    }

    #[test]
    fn an_unclosed_construct_refuses_what_is_inside() {
        for template in [
            "echo '@",
            "echo \"@",
            "echo $(echo @",
            "echo `@",
            "echo ${@",
        ] {
            let got = contexts(template);
            assert!(matches!(got.as_slice(), [Err(_)]), "{template:?}: {got:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_followed() {
        let deep = format!("{}@{}", "$(".repeat(10_000), ")".repeat(10_000));
        assert!(matches!(
            contexts(&deep).as_slice(),
            [Err(Unsafe::Uncertain(_))]
        ));
    }
}
