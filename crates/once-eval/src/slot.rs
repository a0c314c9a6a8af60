//! One target's evaluator: started on first use, kept warm, replaced when it dies, and the
//! deadline machinery of every evaluation on it.
//!
//! A slot lives as long as its [`Evaluators`](crate::Evaluators) and outlives any number of
//! evaluator processes or nREPL sessions; each of those is a *generation*. Evaluations on one
//! target run one at a time: a call first *claims* the slot on its desk (a small lock of its
//! own, never held while anything runs), and a call that finds it claimed is answered `Busy` at
//! once, never queued silently behind the other. The claimant then takes the slot's state lock;
//! an interrupt, `reset` and `stop` reach the evaluation in flight through the slot's channel and
//! its group, never through that lock. The desk also keeps the target's transcript and what is
//! known of its evaluator, so a reader never waits for an evaluation. This module must never
//! return while an evaluator it gave up on is still running, and never lose state without saying
//! so in the result.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::evaluation::{Evaluation, Status};
use crate::event::Event;
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::launcher::Launcher;
use crate::nrepl::{self, Connection, Message};
use crate::process::{AdapterProcess, describe_exit};
use crate::reply::{Reply, ReplyStatus};
use crate::spec::{EvaluatorSpec, Language};
use crate::transcript::{EvaluatorTranscript, Transcript, TranscriptEntry};

/// How long to wait for an adapter's end marker after its reply (it was written first, so this
/// only bounds a pathological case).
const MARKER_WAIT: Duration = Duration::from_secs(1);
/// How long to collect a dying evaluator's last output.
const LAST_WORDS: Duration = Duration::from_millis(200);
/// The trivial evaluation that proves a fresh evaluator ready.
const READY_CODE: &str = "1";

/// What stopped the evaluation early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    Deadline,
    Cancel,
}

impl Why {
    fn status(self) -> Status {
        match self {
            Why::Deadline => Status::TimedOut,
            Why::Cancel => Status::Cancelled,
        }
    }

    fn describe(self, deadline: Duration) -> String {
        match self {
            Why::Deadline => format!("The evaluation passed its deadline of {deadline:?}"),
            Why::Cancel => "The evaluation was cancelled".into(),
        }
    }
}

#[derive(Debug)]
enum Live {
    Adapter(AdapterProcess),
    Nrepl(Connection),
}

#[derive(Debug)]
struct State {
    events: Receiver<Event>,
    live: Option<(Live, EvaluatorSpec)>,
    generation: u64,
    next_id: u64,
    /// The current generation's channel closed (seen while draining stale events).
    closed: bool,
}

#[derive(Debug)]
pub(crate) struct Slot {
    target: String,
    events: Sender<Event>,
    group: Arc<Group>,
    state: Mutex<State>,
    /// The last [`SO_FAR`] bytes the evaluation in flight printed, for progress; its own lock,
    /// so a reader never waits for the evaluation.
    so_far: Mutex<String>,
    desk: Mutex<Desk>,
}

/// Who holds the slot, what its evaluator was last seen to be, and what it was asked.
#[derive(Debug, Default)]
struct Desk {
    /// The language of the last call's spec; `None` until the first call.
    language: Option<Language>,
    /// When the call holding the slot claimed it.
    busy_since: Option<Instant>,
    /// The holding call was interrupted (a deadline, a cancel) and is stopping.
    stopping: bool,
    running: bool,
    pid: Option<u32>,
    transcript: Transcript,
}

/// A call's hold on its slot, released when dropped (also by a panic).
struct Claim<'a>(&'a Slot);

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.desk().busy_since = None;
    }
}

/// Most bytes of output an evaluation in flight shows in progress.
pub(crate) const SO_FAR: usize = 2048;

/// What the caller of [`Slot::eval`] shares with every slot.
pub(crate) struct Context<'a> {
    pub launcher: &'a Launcher,
    pub stopping: &'a dyn Fn() -> bool,
}

/// What to evaluate, and whether a killed evaluator is replaced at once (not while proving a
/// fresh one ready, which would loop).
struct Job<'a> {
    code: &'a str,
    deadline: Duration,
    restart: bool,
}

/// An evaluation being assembled.
struct Draft {
    started: Instant,
    status: Status,
    value: Option<String>,
    stdout: String,
    stderr: String,
    error: Option<String>,
    state_lost: bool,
    notices: Vec<String>,
}

impl Draft {
    fn new(started: Instant) -> Draft {
        Draft {
            started,
            status: Status::Ok,
            value: None,
            stdout: String::new(),
            stderr: String::new(),
            error: None,
            state_lost: false,
            notices: Vec::new(),
        }
    }

    fn lost(&mut self, notice: String) {
        self.state_lost = true;
        self.notices.push(notice);
    }

    fn finish(self, target: &str, language: Language) -> Evaluation {
        Evaluation {
            target: target.to_owned(),
            language,
            status: self.status,
            value: self.value,
            stdout: self.stdout,
            stderr: self.stderr,
            error: self.error,
            state_lost: self.state_lost,
            notice: (!self.notices.is_empty()).then(|| self.notices.join(" ")),
            elapsed_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Slot {
    pub(crate) fn new(target: &str) -> Slot {
        let (events, receiver) = mpsc::channel();
        Slot {
            target: target.to_owned(),
            events,
            group: Arc::new(Group::default()),
            state: Mutex::new(State {
                events: receiver,
                live: None,
                generation: 0,
                next_id: 0,
                closed: false,
            }),
            so_far: Mutex::new(String::new()),
            desk: Mutex::new(Desk::default()),
        }
    }

    fn desk(&self) -> MutexGuard<'_, Desk> {
        // Each change is one assignment or push; a panic cannot leave it half-changed.
        self.desk.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims the slot for one call, or says who holds it.
    fn claim(&self, language: Language) -> Result<Claim<'_>, Error> {
        let mut desk = self.desk();
        desk.language = Some(language);
        if let Some(since) = desk.busy_since {
            return Err(Error::Busy {
                target: self.target.clone(),
                seconds: since.elapsed().as_secs(),
                stopping: desk.stopping,
            });
        }
        desk.busy_since = Some(Instant::now());
        desk.stopping = false;
        Ok(Claim(self))
    }

    /// Notes that the call holding the slot was interrupted, so a caller told it is busy knows
    /// the wait is short.
    fn stopping(&self) {
        self.desk().stopping = true;
    }

    /// Records what is live in `state` on the desk, for readers that must not wait.
    fn note(&self, state: &State) {
        let (running, pid) = live_now(state);
        let mut desk = self.desk();
        desk.running = running;
        desk.pid = pid;
    }

    /// The target's transcript, or `None` before its first call. Never waits for an evaluation:
    /// while one runs, the evaluator is described as last seen.
    pub(crate) fn transcript(&self) -> Option<EvaluatorTranscript> {
        let evaluating = self.desk().busy_since.is_some();
        // Between calls the state lock is free but for a moment (a reset, a stop): look afresh,
        // so an evaluator that died since is not shown running.
        if !evaluating && let Ok(state) = self.state.try_lock() {
            self.note(&state);
        }
        let desk = self.desk();
        Some(EvaluatorTranscript {
            target: self.target.clone(),
            language: desk.language?,
            running: desk.running,
            evaluating: desk.busy_since.is_some(),
            pid: desk.pid,
            entries: desk.transcript.entries(),
        })
    }

    /// A cheap summary of what [`Slot::transcript`] would show (whether it runs or evaluates, its
    /// pid, how many entries and the newest's time), without copying the entries.
    pub(crate) fn stamp(&self) -> Option<SlotStamp> {
        if self.desk().busy_since.is_none()
            && let Ok(state) = self.state.try_lock()
        {
            self.note(&state);
        }
        let desk = self.desk();
        desk.language?;
        Some(SlotStamp {
            target: self.target.clone(),
            running: desk.running,
            evaluating: desk.busy_since.is_some(),
            pid: desk.pid,
            entries: desk.transcript.stamp(),
        })
    }

    /// The end of what the evaluation in flight printed so far (stdout and stderr as they came).
    pub(crate) fn output_so_far(&self) -> String {
        self.so_far
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn show(&self, text: &str) {
        let mut so_far = self.so_far.lock().unwrap_or_else(PoisonError::into_inner);
        so_far.push_str(text);
        if so_far.len() > SO_FAR {
            let mut cut = so_far.len() - SO_FAR;
            while !so_far.is_char_boundary(cut) {
                cut += 1;
            }
            so_far.drain(..cut);
        }
    }

    /// Evaluates `code`, starting or replacing the evaluator as needed; `Busy` at once when
    /// another call holds the evaluator, `Empty` for blank code. Every call goes into the
    /// transcript.
    pub(crate) fn eval(
        &self,
        cx: &Context<'_>,
        spec: &EvaluatorSpec,
        code: &str,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Evaluation, Error> {
        let refusal = if code.trim().is_empty() {
            self.desk().language = Some(spec.language);
            Err(Error::Empty {
                target: self.target.clone(),
            })
        } else {
            match self.claim(spec.language) {
                Ok(claim) => {
                    let result = self.eval_claimed(cx, spec, code, deadline, interrupt);
                    self.note(&self.lock());
                    // The entry is in before the claim goes: a reader that sees the slot free
                    // sees what the call did.
                    self.desk()
                        .transcript
                        .push(TranscriptEntry::of(code, &result));
                    drop(claim);
                    return result;
                }
                Err(busy) => Err(busy),
            }
        };
        self.desk()
            .transcript
            .push(TranscriptEntry::of(code, &refusal));
        refusal
    }

    fn eval_claimed(
        &self,
        cx: &Context<'_>,
        spec: &EvaluatorSpec,
        code: &str,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Evaluation, Error> {
        let started = Instant::now();
        let mut state = self.lock();
        self.drain(&mut state);
        if (cx.stopping)() {
            return Err(Error::ShuttingDown);
        }
        let mut draft = Draft::new(started);
        self.so_far
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.check_live(&mut state, spec, &mut draft);
        if state.live.is_none() {
            self.start(&mut state, cx, spec)?;
        }
        if interrupt.is_fired() {
            draft.status = Status::Cancelled;
            draft
                .notices
                .push("The evaluation was cancelled before it started; nothing ran.".into());
            return Ok(draft.finish(&self.target, spec.language));
        }
        let _attached = interrupt.attach(self.events.clone());
        match state
            .live
            .as_ref()
            .map(|(live, _)| matches!(live, Live::Adapter(_)))
        {
            Some(true) => self.eval_adapter(
                &mut state,
                cx,
                spec,
                Job {
                    code,
                    deadline,
                    restart: true,
                },
                &mut draft,
            ),
            Some(false) => self.eval_nrepl(
                &mut state,
                cx,
                spec,
                Job {
                    code,
                    deadline,
                    restart: true,
                },
                &mut draft,
            ),
            None => {}
        }
        Ok(draft.finish(&self.target, spec.language))
    }

    /// Ends the evaluator, if any; the next evaluation starts a fresh one. An evaluation in
    /// flight is not waited for: its process is killed at once and it reports `died`.
    pub(crate) fn reset(&self) -> bool {
        self.group.kill();
        let mut state = self.lock();
        self.drain(&mut state);
        let was_live = state.live.is_some();
        end(&mut state);
        self.note(&state);
        was_live
    }

    /// Stops everything at once, without waiting for the lock (the evaluation in flight, if
    /// any, wakes on `Stop` and returns); `finish_stop` then ends what is left.
    pub(crate) fn begin_stop(&self) {
        let _ = self.events.send(Event::Stop);
        self.group.kill();
    }

    pub(crate) fn finish_stop(&self) {
        let mut state = self.lock();
        end(&mut state);
        self.note(&state);
    }

    /// The pid of the live adapter process, if there is one.
    pub(crate) fn pid(&self) -> Option<u32> {
        match &self.lock().live {
            Some((Live::Adapter(process), _)) => Some(process.pid()),
            _ => None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every path that changes the state leaves it whole before it can panic; a poisoned
        // lock only means an evaluation's thread panicked in between.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops messages left over from earlier evaluations, noting whether the live evaluator's
    /// channel closed meanwhile.
    fn drain(&self, state: &mut State) {
        while let Ok(event) = state.events.try_recv() {
            if let Event::Closed { generation } = event
                && generation == state.generation
            {
                state.closed = true;
            }
        }
    }

    /// Replaces a live evaluator that died or whose spec changed, saying so in `draft`.
    fn check_live(&self, state: &mut State, spec: &EvaluatorSpec, draft: &mut Draft) {
        let Some((live, live_spec)) = &state.live else {
            return;
        };
        let language = live_spec.language.as_str();
        if live_spec != spec {
            end(state);
            draft.lost(format!(
                "The evaluator's configuration changed, so the old {language} evaluator was \
                 stopped and a fresh one started: earlier state was lost."
            ));
            return;
        }
        let dead = state.closed
            || match live {
                Live::Adapter(process) => process.has_exited(),
                Live::Nrepl(_) => false,
            };
        if !dead {
            return;
        }
        let how = match state.live.take() {
            Some((Live::Adapter(process), _)) => describe_exit(process.end()),
            Some((Live::Nrepl(connection), _)) => {
                connection.close();
                "lost its connection".into()
            }
            None => "ended".into(),
        };
        draft.lost(format!(
            "The {language} evaluator of `{}` had died since the last evaluation (it {how}); a \
             fresh one was started: earlier state was lost.",
            self.target
        ));
    }

    fn start(
        &self,
        state: &mut State,
        cx: &Context<'_>,
        spec: &EvaluatorSpec,
    ) -> Result<(), Error> {
        state.generation += 1;
        state.closed = false;
        let generation = state.generation;
        let language = spec.language.as_str();
        let live = match spec.language {
            Language::Python | Language::Node => {
                let process = AdapterProcess::spawn(
                    cx.launcher,
                    spec,
                    Arc::clone(&self.group),
                    generation,
                    self.events.clone(),
                )
                .map_err(|source| Error::Spawn {
                    target: self.target.clone(),
                    language,
                    command: spec.interpreter().to_owned(),
                    source,
                })?;
                Live::Adapter(process)
            }
            Language::Nrepl => {
                let port = nrepl::read_port(spec).map_err(|reason| Error::Nrepl {
                    target: self.target.clone(),
                    reason,
                })?;
                let connection =
                    Connection::open(port, spec.start_timeout, generation, self.events.clone())
                        .map_err(|error| Error::Nrepl {
                            target: self.target.clone(),
                            reason: format!("cannot connect to 127.0.0.1:{port}: {error}"),
                        })?;
                Live::Nrepl(connection)
            }
        };
        state.live = Some((live, spec.clone()));
        let ready = self.ready(state, cx, spec);
        if ready.is_err() {
            end(state);
        }
        self.note(state);
        ready
    }

    /// Proves a fresh evaluator ready with a trivial evaluation (and, for nREPL, opens the
    /// session first).
    fn ready(
        &self,
        state: &mut State,
        cx: &Context<'_>,
        spec: &EvaluatorSpec,
    ) -> Result<(), Error> {
        let language = spec.language.as_str();
        let not_ready = |reason: String| Error::NotReady {
            target: self.target.clone(),
            language,
            reason,
        };
        if let Some((Live::Nrepl(connection), _)) = &mut state.live {
            connection
                .send("clone", "once-clone", &[])
                .map_err(|error| not_ready(format!("cannot ask for a session: {error}")))?;
            let until = Instant::now() + spec.start_timeout;
            let generation = state.generation;
            let session = loop {
                match recv_until(&state.events, until) {
                    Some(Event::Nrepl {
                        generation: g,
                        message,
                    }) if g == generation => {
                        if let Some(session) = message.text("new-session") {
                            break session;
                        }
                    }
                    Some(Event::Closed { generation: g }) if g == generation => {
                        return Err(not_ready("the server closed the connection".into()));
                    }
                    Some(Event::Stop) => return Err(Error::ShuttingDown),
                    Some(_) => {}
                    None => {
                        return Err(Error::StartTimeout {
                            target: self.target.clone(),
                            language,
                            timeout: spec.start_timeout,
                        });
                    }
                }
            };
            connection.session = Some(session);
        }
        let mut draft = Draft::new(Instant::now());
        let interrupt = Interrupt::new();
        let _attached = interrupt.attach(self.events.clone());
        let is_adapter = matches!(state.live, Some((Live::Adapter(_), _)));
        if is_adapter {
            self.eval_adapter(
                state,
                cx,
                spec,
                Job {
                    code: READY_CODE,
                    deadline: spec.start_timeout,
                    restart: false,
                },
                &mut draft,
            );
        } else {
            self.eval_nrepl(
                state,
                cx,
                spec,
                Job {
                    code: READY_CODE,
                    deadline: spec.start_timeout,
                    restart: false,
                },
                &mut draft,
            );
        }
        match draft.status {
            Status::Ok if draft.value.as_deref() == Some("1") && state.live.is_some() => Ok(()),
            Status::Stopped => Err(Error::ShuttingDown),
            Status::TimedOut => Err(Error::StartTimeout {
                target: self.target.clone(),
                language,
                timeout: spec.start_timeout,
            }),
            _ => {
                let mut reason = draft.notices.join(" ");
                for text in [&draft.error, &Some(draft.stdout), &Some(draft.stderr)]
                    .into_iter()
                    .flatten()
                {
                    let text = text.trim();
                    if !text.is_empty() {
                        reason.push_str(&format!("\n{text}"));
                    }
                }
                Err(not_ready(reason))
            }
        }
    }

    fn eval_adapter(
        &self,
        state: &mut State,
        cx: &Context<'_>,
        spec: &EvaluatorSpec,
        job: Job<'_>,
        draft: &mut Draft,
    ) {
        let Job {
            code,
            deadline,
            restart,
        } = job;
        let language = spec.language.as_str();
        state.next_id += 1;
        let id = state.next_id;
        let generation = state.generation;
        let Some((Live::Adapter(process), _)) = &mut state.live else {
            return;
        };
        // A failed send means the process is gone; its reader thread reports `Closed` next.
        let _ = process.send(id, code);
        let deadline_at = Instant::now() + deadline;
        let mut interrupted: Option<(Why, Instant)> = None;
        // An interrupt that lands before the adapter has read the request finds no evaluation
        // to stop and is dropped; one more, halfway through the grace, covers that window.
        let mut repeat_at: Option<Instant> = None;
        loop {
            let until = match (interrupted, repeat_at) {
                (None, _) => deadline_at,
                (Some(_), Some(repeat)) => repeat,
                (Some((_, grace_end)), None) => grace_end,
            };
            match recv_until(&state.events, until) {
                Some(Event::Reply {
                    generation: g,
                    reply,
                }) if g == generation && reply.id == id => {
                    let stray = if reply.marker {
                        process.stray.next_segment(MARKER_WAIT)
                    } else {
                        String::new()
                    };
                    fill_from_reply(draft, reply, stray, interrupted.map(|(why, _)| why));
                    if let Some((why, _)) = interrupted
                        && matches!(draft.status, Status::TimedOut | Status::Cancelled)
                    {
                        draft.notices.push(format!(
                            "{} and was interrupted; the evaluator kept its state.",
                            why.describe(deadline)
                        ));
                    }
                    return;
                }
                Some(Event::Output {
                    generation: g,
                    id: i,
                    text,
                }) if g == generation && i == id => self.show(&text),
                Some(Event::Closed { generation: g }) if g == generation => {
                    let stray = process.stray.rest(LAST_WORDS);
                    draft.stdout.push_str(&stray);
                    let how = match state.live.take() {
                        Some((Live::Adapter(process), _)) => describe_exit(process.end()),
                        _ => "ended".into(),
                    };
                    draft.status = Status::Died;
                    draft.lost(format!(
                        "The {language} evaluator {how} during the evaluation: earlier state was \
                         lost, and the next evaluation starts a fresh one."
                    ));
                    return;
                }
                Some(Event::Interrupt) => {
                    if interrupted.is_none() {
                        // Marked before the signal goes: a caller told busy after the code has
                        // seen its interrupt must hear that the holder is stopping.
                        self.stopping();
                        process.interrupt();
                        interrupted = Some((Why::Cancel, Instant::now() + spec.grace));
                        repeat_at = Some(Instant::now() + spec.grace / 2);
                    }
                }
                Some(Event::Stop) => {
                    end(state);
                    draft.status = Status::Stopped;
                    draft.lost("once is shutting down: the evaluator was stopped.".into());
                    return;
                }
                Some(_) => {}
                None => match interrupted {
                    None => {
                        self.stopping();
                        process.interrupt();
                        interrupted = Some((Why::Deadline, Instant::now() + spec.grace));
                        repeat_at = Some(Instant::now() + spec.grace / 2);
                    }
                    Some(_) if repeat_at.take().is_some() => process.interrupt(),
                    Some((why, _)) => {
                        let stray = process.stray.rest(Duration::ZERO);
                        draft.stdout.push_str(&stray);
                        end(state);
                        draft.status = why.status();
                        let mut notice = format!(
                            "{} and did not stop within {:?} of the interrupt, so the {language} \
                             evaluator was killed and a fresh one started: earlier state was lost \
                             (variables, imports, definitions).",
                            why.describe(deadline),
                            spec.grace
                        );
                        if !restart || (cx.stopping)() {
                            notice = notice.replace(" and a fresh one started", "");
                        } else if let Err(error) = self.start(state, cx, spec) {
                            notice.push_str(&format!(
                                " The fresh one could not start ({error}); the next evaluation \
                                 tries again."
                            ));
                        }
                        draft.lost(notice);
                        return;
                    }
                },
            }
        }
    }

    fn eval_nrepl(
        &self,
        state: &mut State,
        cx: &Context<'_>,
        spec: &EvaluatorSpec,
        job: Job<'_>,
        draft: &mut Draft,
    ) {
        let Job {
            code,
            deadline,
            restart,
        } = job;
        state.next_id += 1;
        let id = format!("once-{}", state.next_id);
        let generation = state.generation;
        let Some((Live::Nrepl(connection), _)) = &mut state.live else {
            return;
        };
        if let Err(error) = connection.send("eval", &id, &[("code", code)]) {
            draft.status = Status::Died;
            draft.lost(format!(
                "The connection to the nREPL server broke ({error}); the next evaluation \
                 connects again, in a new session."
            ));
            end(state);
            return;
        }
        let deadline_at = Instant::now() + deadline;
        let mut interrupted: Option<(Why, Instant)> = None;
        loop {
            let until = interrupted.map_or(deadline_at, |(_, grace_end)| grace_end);
            match recv_until(&state.events, until) {
                Some(Event::Nrepl {
                    generation: g,
                    message,
                }) if g == generation => {
                    if message.text("id").as_deref() != Some(id.as_str()) {
                        continue;
                    }
                    for key in ["out", "err"] {
                        if let Some(text) = message.text(key) {
                            self.show(&text);
                        }
                    }
                    if fill_from_nrepl(draft, &message, interrupted.map(|(why, _)| why)) {
                        if let Some((why, _)) = interrupted
                            && matches!(draft.status, Status::TimedOut | Status::Cancelled)
                        {
                            draft.notices.push(format!(
                                "{} and was interrupted; the session kept its state.",
                                why.describe(deadline)
                            ));
                        }
                        return;
                    }
                }
                Some(Event::Closed { generation: g }) if g == generation => {
                    end(state);
                    draft.status = Status::Died;
                    draft.lost(
                        "The nREPL server closed the connection during the evaluation: the \
                         session's state was lost, and the next evaluation connects again."
                            .into(),
                    );
                    return;
                }
                Some(Event::Interrupt) => {
                    if interrupted.is_none() {
                        self.stopping();
                        let _ = connection.send(
                            "interrupt",
                            &format!("{id}-interrupt"),
                            &[("interrupt-id", &id)],
                        );
                        interrupted = Some((Why::Cancel, Instant::now() + spec.grace));
                    }
                }
                Some(Event::Stop) => {
                    end(state);
                    draft.status = Status::Stopped;
                    draft.lost("once is shutting down: the nREPL session was closed.".into());
                    return;
                }
                Some(_) => {}
                None => match interrupted {
                    None => {
                        self.stopping();
                        let _ = connection.send(
                            "interrupt",
                            &format!("{id}-interrupt"),
                            &[("interrupt-id", &id)],
                        );
                        interrupted = Some((Why::Deadline, Instant::now() + spec.grace));
                    }
                    Some((why, _)) => {
                        end(state);
                        draft.status = why.status();
                        let mut notice = format!(
                            "{} and the nREPL server did not stop it within {:?} of the \
                             interrupt, so once closed the session and opened a new one: the \
                             session's state (current namespace, *1, *e) was lost, and the code \
                             may still be running in the server.",
                            why.describe(deadline),
                            spec.grace
                        );
                        if restart
                            && !(cx.stopping)()
                            && let Err(error) = self.start(state, cx, spec)
                        {
                            notice.push_str(&format!(
                                " A new session could not be opened ({error}); the next \
                                 evaluation tries again."
                            ));
                        }
                        draft.lost(notice);
                        return;
                    }
                },
            }
        }
    }
}

/// Whether an evaluator is live in `state` (an adapter that has not exited, or an nREPL
/// session), and the adapter's pid.
fn live_now(state: &State) -> (bool, Option<u32>) {
    match &state.live {
        Some((Live::Adapter(process), _)) if !state.closed && !process.has_exited() => {
            (true, Some(process.pid()))
        }
        Some((Live::Nrepl(_), _)) => (!state.closed, None),
        _ => (false, None),
    }
}

/// Ends the live evaluator, if any: kills and reaps an adapter, closes an nREPL session.
fn end(state: &mut State) {
    match state.live.take() {
        Some((Live::Adapter(process), _)) => {
            process.end();
        }
        Some((Live::Nrepl(connection), _)) => connection.close(),
        None => {}
    }
    state.closed = false;
}

/// The next event, or `None` once `until` has passed.
fn recv_until(events: &Receiver<Event>, until: Instant) -> Option<Event> {
    let left = until.saturating_duration_since(Instant::now());
    match events.recv_timeout(left) {
        Ok(event) => Some(event),
        Err(RecvTimeoutError::Timeout) => None,
        // The slot owns a sender, so the channel cannot disconnect while it waits.
        Err(RecvTimeoutError::Disconnected) => Some(Event::Stop),
    }
}

fn fill_from_reply(draft: &mut Draft, reply: Reply, stray: String, interrupted: Option<Why>) {
    draft.value = reply.value;
    draft.stdout = reply.stdout;
    draft.stdout.push_str(&stray);
    draft.stderr = reply.stderr;
    draft.error = reply.error;
    draft.status = match (reply.status, interrupted) {
        (ReplyStatus::Ok, _) => Status::Ok,
        (ReplyStatus::Interrupted, Some(why)) => why.status(),
        // An interrupt nobody here sent (a signal from outside) is just an exception.
        (ReplyStatus::Error | ReplyStatus::Interrupted, _) => Status::Error,
    };
}

/// Folds one message of the evaluation in; true when the evaluation is done.
fn fill_from_nrepl(draft: &mut Draft, message: &Message, interrupted: Option<Why>) -> bool {
    if let Some(value) = message.text("value") {
        // One value per top-level form; the last one is the code's value.
        draft.value = Some(value);
    }
    if let Some(out) = message.text("out") {
        draft.stdout.push_str(&out);
    }
    if let Some(err) = message.text("err") {
        draft.stderr.push_str(&err);
    }
    if let Some(ex) = message.text("ex") {
        let root = message.text("root-ex").filter(|root| *root != ex);
        let mut error = format!(
            "{ex}{}",
            root.map(|r| format!(" (root: {r})")).unwrap_or_default()
        );
        if !draft.stderr.is_empty() {
            error = format!("{}\n{error}", draft.stderr.trim_end());
        }
        draft.error = Some(error);
    }
    if message.has_status("eval-error") {
        draft.status = Status::Error;
    }
    if message.has_status("interrupted") {
        draft.status = interrupted.map_or(Status::Error, Why::status);
        draft.error.get_or_insert_with(|| "interrupted".into());
    }
    message.has_status("done")
}

/// What a slot's transcript shows, in brief (see [`Slot::stamp`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SlotStamp {
    target: String,
    running: bool,
    evaluating: bool,
    pid: Option<u32>,
    /// How many entries, and when the newest ended.
    entries: (usize, u64),
}
