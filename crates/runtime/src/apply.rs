//! The one entry point of a session. Every front end (the TUI, `-p` text,
//! json and stream-json with its control requests, ACP) turns what the
//! person or client did into a [`Command`] and calls [`Runtime::apply`];
//! the rules that used to be copied per front end live here once: which
//! modes may be entered, how `/NAME` expands (images kept), what a model
//! switch, a resume or a rewind changes, and which events say so.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use tern_agent_loop::EventSink;
use tern_policy::engine::{ModeRefused, Policy};
use tern_protocol::{AgentEvent, Command, ContentBlock, Message, Mode, SessionRecord, SessionSwitch, TaskSummary};
use tokio_util::sync::CancellationToken;

use crate::{
    RunReport, Runtime, RuntimeError, Session, checkpoints,
    context::{Compacted, ManualCompaction},
};
use tern_protocol::sync::LockExt as _;

/// What a command did, for the front end to show.
#[derive(Debug)]
pub enum Outcome {
    /// A prompt ran to its end.
    Ran(Box<RunReport>),
    /// The running prompts were told to stop; how many there were.
    Interrupted(usize),
    /// The mode now, and before.
    Mode {
        /// Now.
        mode: Mode,
        /// Before.
        previous: Mode,
    },
    /// The model now, with a warning when tern knows nothing of it.
    Model {
        /// The model.
        model: String,
        /// Why it may not work as expected.
        warning: Option<String>,
    },
    /// The conversation was summarised.
    Compacted(Compacted),
    /// `/compact` found too little to summarise and made no request (why, for a person).
    NothingToCompact(String),
    /// A new, empty conversation.
    Cleared,
    /// Gone back to before a prompt.
    Rewound {
        /// The prompt's number.
        number: usize,
        /// What the files did, when they were put back.
        restored: Option<checkpoints::Restored>,
        /// The prompt gone back over (for the composer).
        prompt: String,
        /// The conversation now, when it was cut back.
        conversation: Option<Vec<Message>>,
    },
    /// Another session goes on.
    Resumed(Box<crate::Resumed>),
    /// A copy of this session goes on, under this id.
    Forked(String),
    /// The session has a name.
    Renamed(String),
    /// The conversation was written here.
    Exported(PathBuf),
    /// A background task stopped.
    TaskStopped(TaskSummary),
    /// Bash calls that ran in the foreground went on in the background.
    MovedToBackground {
        /// The tasks they go on as (`bg-N`).
        moved: Vec<String>,
        /// Why others could not move (no room for another task).
        refused: Vec<String>,
    },
    /// An MCP server after a reconnect or a switch on or off.
    McpServer(crate::McpServerReport),
    /// A rule was added (or holds somewhere else now, `moved`).
    Rule {
        /// Its list.
        kind: tern_protocol::RuleKind,
        /// The rule as written.
        rule: String,
        /// How far it holds.
        scope: tern_protocol::RuleScope,
        /// The file it was kept in (none for the session).
        file: Option<PathBuf>,
        /// Whether it was in force already and moved.
        moved: bool,
    },
    /// A rule was removed from these places (none: it was nowhere).
    RuleRemoved {
        /// The rule as written.
        rule: String,
        /// Where it was.
        places: Vec<String>,
    },
    /// A setting was kept.
    Setting {
        /// The setting.
        key: String,
        /// Its value.
        value: String,
        /// The file.
        file: PathBuf,
    },
}

/// Why a command did nothing.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A `/NAME` command or skill could not be expanded.
    #[error("{text}: {why}")]
    Invocation {
        /// What was typed.
        text: String,
        /// Why.
        why: crate::skills::SkillError,
    },
    /// The mode may not be entered now.
    #[error(transparent)]
    Mode(#[from] ModeRefused),
    /// A background task could not be stopped.
    #[error("{why}")]
    Task {
        /// The task's id.
        id: String,
        /// Why.
        why: String,
    },
    /// No bash call was running in the foreground to be moved.
    #[error("no command is running in the foreground to send to the background")]
    NothingToMove,
    /// No MCP server has that name (or none runs in this session).
    #[error("no MCP server `{server}` in this session{}", if known.is_empty() { String::new() } else { format!(" (servers: {})", known.join(", ")) })]
    NoMcpServer {
        /// The name asked for.
        server: String,
        /// The servers there are.
        known: Vec<String>,
    },
    /// The session could not do it (a file, the config, the provider).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl Runtime {
    /// Apply one command. Commands that need no waiting (interrupt, mode,
    /// model, rename) take effect when this is called; the future carries
    /// their result. A prompt is registered at once too, so an interrupt
    /// sent right after it reaches it. Events (a mode or model change, the
    /// usage, the run's own) go to `events`.
    pub fn apply<'a>(
        &'a self,
        command: Command,
        events: &'a EventSink,
    ) -> BoxFuture<'a, Result<Outcome, CommandError>> {
        let now = |r: Result<Outcome, CommandError>| -> BoxFuture<'a, Result<Outcome, CommandError>> {
            Box::pin(futures::future::ready(r))
        };
        match command {
            Command::Interrupt => now(Ok(Outcome::Interrupted(self.interrupter().interrupt()))),
            Command::SetMode { mode } => now(self.enter_mode(mode, events)),
            Command::CycleMode => now(self.enter_mode(self.policy.mode().next(), events)),
            Command::SetModel { model } => {
                let name = model.unwrap_or_else(|| self.configured_model());
                now(self.switch_model(&name, events).map_err(CommandError::from))
            }
            Command::Rename { title, session } => {
                now(self.rename(&title, session.as_deref()).map(|()| Outcome::Renamed(title)).map_err(Into::into))
            }
            Command::AddRule { kind, rule, scope } => now(self
                .add_rule(kind, &rule, scope)
                .map(|file| Outcome::Rule { kind, rule, scope, file, moved: false })
                .map_err(Into::into)),
            Command::RemoveRule { rule } => {
                now(self.remove_rule(&rule).map(|places| Outcome::RuleRemoved { rule, places }).map_err(Into::into))
            }
            Command::MoveRule { rule, to } => now(self
                .move_rule(&rule, to)
                .map_err(Into::into)
                .map(|(kind, file)| Outcome::Rule { kind, rule, scope: to, file, moved: true })),
            Command::Setting { key, value } => now(self
                .set_setting(&key, &value)
                .map(|file| Outcome::Setting { key, value, file })
                .map_err(Into::into)),
            Command::Submit { text, blocks } => match self.start(text, blocks, events) {
                Err(e) => now(Err(e)),
                Ok(run) => Box::pin(async move { Ok(Outcome::Ran(Box::new(run.await))) }),
            },
            Command::Compact { focus } => Box::pin(async move {
                let focus = focus.as_deref().map(str::trim).filter(|f| !f.is_empty());
                Ok(match self.compact(focus, events, &CancellationToken::new()).await? {
                    ManualCompaction::Compacted(c) => Outcome::Compacted(c),
                    ManualCompaction::NothingToCompact(why) => Outcome::NothingToCompact(why),
                })
            }),
            Command::Clear => Box::pin(async move {
                self.clear_history().await;
                events(AgentEvent::SessionSwitched {
                    id: self.session().id().to_string(),
                    how: SessionSwitch::Cleared,
                });
                Ok(Outcome::Cleared)
            }),
            Command::Rewind { prompt, code, conversation, force } => Box::pin(async move {
                let (restored, typed) = self.rewind(prompt, code, conversation, force).await?;
                let conversation = if conversation { Some(self.conversation().await) } else { None };
                Ok(Outcome::Rewound { number: prompt, restored: code.then_some(restored), prompt: typed, conversation })
            }),
            Command::Resume { id } => Box::pin(async move {
                let before = self.model();
                let resumed = self.resume(&crate::Resume::Id(id)).await?;
                events(AgentEvent::SessionSwitched {
                    id: self.session().id().to_string(),
                    how: SessionSwitch::Resumed,
                });
                if self.model() != before {
                    events(self.model_event());
                }
                events(self.usage_event());
                Ok(Outcome::Resumed(Box::new(resumed)))
            }),
            Command::Fork => Box::pin(async move {
                let id = self.fork().await?;
                events(AgentEvent::SessionSwitched { id: id.clone(), how: SessionSwitch::Forked });
                Ok(Outcome::Forked(id))
            }),
            Command::Export { file } => Box::pin(async move { Ok(Outcome::Exported(self.export_to(&file).await?)) }),
            Command::ReconnectMcp { server } => Box::pin(async move { self.mcp_switch(server, true).await }),
            Command::SetMcpEnabled { server, enabled } => {
                Box::pin(async move { self.mcp_switch(server, enabled).await })
            }
            Command::MoveToBackground => Box::pin(async move {
                let answers = self.background.move_foreground().await;
                if answers.is_empty() {
                    return Err(CommandError::NothingToMove);
                }
                let (moved, refused): (Vec<_>, Vec<_>) = answers.into_iter().partition(Result::is_ok);
                Ok(Outcome::MovedToBackground {
                    moved: moved.into_iter().flatten().collect(),
                    refused: refused.into_iter().filter_map(Result::err).collect(),
                })
            }),
            Command::StopTask { id } => Box::pin(async move {
                match self.background.stop(&id).await {
                    Ok(t) => Ok(Outcome::TaskStopped(t)),
                    Err(e) => Err(CommandError::Task { id, why: e.message }),
                }
            }),
        }
    }

    /// [`Command::Submit`] in two steps, for a front end that shows
    /// something between them: the prompt is registered (an interrupt from
    /// now on reaches it) with its `/NAME args` expanded (a custom command or
    /// a skill), or refused at once; the run is the future, to await.
    /// [`Runtime::apply`] does exactly this.
    pub fn start<'a>(
        &'a self,
        text: String,
        blocks: Vec<ContentBlock>,
        events: &'a EventSink,
    ) -> Result<BoxFuture<'a, RunReport>, CommandError> {
        let (invocation, registered) = self.accept(&text)?;
        Ok(Box::pin(async move { self.run_accepted(&text, invocation, blocks, events, registered).await }))
    }

    /// [`Runtime::start`] for a front end that runs the prompt on a task of
    /// its own: the same expansion and registration, done now; the run owns
    /// what it needs.
    pub fn start_owned(
        self: &Arc<Self>,
        text: String,
        blocks: Vec<ContentBlock>,
        events: EventSink,
    ) -> Result<BoxFuture<'static, RunReport>, CommandError> {
        let (invocation, registered) = self.accept(&text)?;
        let runtime = self.clone();
        Ok(Box::pin(async move { runtime.run_accepted(&text, invocation, blocks, &events, registered).await }))
    }

    /// An accepted prompt run to its end; it leaves the running list when the
    /// run ends, then the session's usage is said.
    async fn run_accepted(
        &self,
        text: &str,
        invocation: Option<crate::commands::Invocation>,
        blocks: Vec<ContentBlock>,
        events: &EventSink,
        registered: Registered,
    ) -> RunReport {
        let report = self.submit(text, invocation, blocks, events, &registered.cancel).await;
        drop(registered);
        events(self.usage_event());
        report
    }

    /// A prompt accepted: its `/NAME args` expanded, and registered so an
    /// interrupt from now on reaches it.
    fn accept(&self, text: &str) -> Result<(Option<crate::commands::Invocation>, Registered), CommandError> {
        let invocation = match self.invocation(text) {
            Some(Ok(i)) => Some(i),
            Some(Err(why)) => return Err(CommandError::Invocation { text: text.trim().to_string(), why }),
            None => None,
        };
        Ok((invocation, Registered::new(&self.running)))
    }

    /// Enter `mode` (recorded in the session; an event when it changed).
    fn enter_mode(&self, mode: Mode, events: &EventSink) -> Result<Outcome, CommandError> {
        let previous = enter_mode(&self.policy, &self.session(), Some(events), mode)?;
        Ok(Outcome::Mode { mode, previous })
    }

    /// Switch the model (recorded; an event).
    pub(crate) fn switch_model(&self, name: &str, events: &EventSink) -> Result<Outcome, RuntimeError> {
        let warning = self.set_model(name)?;
        events(self.model_event());
        Ok(Outcome::Model { model: self.model(), warning })
    }

    /// The model as an event.
    pub(crate) fn model_event(&self) -> AgentEvent {
        let info = self.model_info();
        AgentEvent::ModelChanged {
            model: self.model(),
            context_window: info.context_window,
            priced: info.input_per_mtok > 0.0,
        }
    }

    /// The session's usage as an event.
    pub(crate) fn usage_event(&self) -> AgentEvent {
        let (totals, cost_usd) = self.session_usage();
        AgentEvent::UsageUpdated { totals, cost_usd }
    }
}

/// What [`Command::Interrupt`] does, as a handle a signal handler or a
/// connection's other task can keep: cancel every prompt submitted and not
/// yet ended.
#[derive(Debug, Clone)]
pub struct Interrupter(Arc<Running>);

impl Interrupter {
    /// Stop the running prompts; how many there were.
    pub fn interrupt(&self) -> usize {
        let running = self.0.lock();
        running.iter().for_each(|(_, c)| c.cancel());
        running.len()
    }
}

impl Runtime {
    /// The modes that may be entered now, in the order lists show them
    /// (`bypass` only when the session may enter it).
    pub fn modes(&self) -> Vec<Mode> {
        tern_protocol::MODES.into_iter().filter(|m| *m != Mode::Bypass || self.policy.bypass_allowed()).collect()
    }

    /// The session's [`Interrupter`].
    pub fn interrupter(&self) -> Interrupter {
        Interrupter(self.running.clone())
    }
}

/// The prompts submitted and not yet ended, each with its token.
#[derive(Debug, Default)]
pub(crate) struct Running {
    next: std::sync::atomic::AtomicU64,
    tokens: std::sync::Mutex<Vec<(u64, CancellationToken)>>,
}

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, CancellationToken)>> {
        self.tokens.lock_or_recover()
    }
}

/// One prompt's place in [`Running`], given up when the run ends or its
/// future is dropped.
struct Registered {
    running: Arc<Running>,
    id: u64,
    cancel: CancellationToken,
}

impl Registered {
    fn new(running: &Arc<Running>) -> Self {
        let id = running.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let cancel = CancellationToken::new();
        running.lock().push((id, cancel.clone()));
        Self { running: running.clone(), id, cancel }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.running.lock().retain(|(id, _)| *id != self.id);
    }
}

/// Enter `mode` under `policy`'s rule (bypass only when the session may),
/// record it in `session`, and say so on `events` when it changed; the mode
/// before. The one way the mode changes: commands, the plan-mode tools and
/// a permission answer all come here.
pub(crate) fn enter_mode(
    policy: &Policy,
    session: &Arc<Session>,
    events: Option<&EventSink>,
    mode: Mode,
) -> Result<Mode, ModeRefused> {
    let previous = policy.set_mode(mode)?;
    if previous != mode {
        session.write(&SessionRecord::ModeChanged { mode: mode.to_string() });
        if let Some(events) = events {
            events(AgentEvent::ModeChanged { mode, previous });
        }
    }
    Ok(previous)
}
