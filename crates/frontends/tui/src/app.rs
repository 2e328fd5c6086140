//! The application state: the transcript, the composer, the permission
//! prompt, the todo panel and the status line, and how keys and agent events
//! change them. No I/O happens here: [`crate::terminal`] owns the terminal,
//! the runtime and the shell processes, and feeds this state.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use tern_protocol::{AgentEvent, TodoItem, Usage};
use tern_runtime::{PermissionAnswer, PermissionRequest};
use tokio::sync::oneshot;

use crate::slash::Slash;
use crate::theme::Theme;
use crate::transcript::{CellKind, NoticeLevel, ScrollState, Transcript};
use crate::widgets::composer::{Composer, ComposerAction, SlashCommand};
use crate::widgets::permission::{PermissionChoice, PermissionPane};
use crate::widgets::question::{QuestionOutcome, QuestionPane};
use crate::widgets::status::{StatusInfo, render_status};
use crate::widgets::todo::{render_todos, todo_height};
use tern_runtime::Mode;

/// Keys, as `/help` lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (queued while a turn runs)"),
    ("Shift+Enter, Alt+Enter, Ctrl+J, \\ Enter", "new line"),
    ("Up / Down", "move between lines; history on the first / last line"),
    ("Ctrl+R", "search earlier prompts (this folder's, across sessions)"),
    ("Ctrl+G", "edit the prompt in $VISUAL / $EDITOR"),
    ("Esc Esc", "on an empty composer: the rewind picker (/rewind)"),
    ("Esc", "interrupt the turn (kills running tools); close a popup"),
    ("Ctrl+C", "interrupt; clear the composer; twice on an empty composer: quit"),
    ("Ctrl+D twice", "quit (empty composer)"),
    ("Shift+Tab", "cycle permission mode: default → accept-edits → plan"),
    ("Ctrl+B", "send the running bash command to the background (it goes on as a bg-N task)"),
    ("Ctrl+V", "attach the clipboard's image (a pasted path to an image attaches it too)"),
    ("Ctrl+T", "show or hide thinking"),
    ("Ctrl+O", "expand or collapse the last tool cell (Alt+Up/Down select another)"),
    ("PageUp / PageDown", "scroll the whole transcript (inline: it opens on the alternate screen; Esc comes back)"),
    ("Ctrl+End", "jump to the bottom (inline: back from the whole transcript)"),
    ("Ctrl+F, or / while scrolled up", "search the transcript; Enter / n next, N previous, Esc done"),
    ("PageUp / PageDown, Home / End at a question", "page through what it shows; Ctrl+O gives it the screen"),
    ("/ at a question", "search what it shows: Enter, n next, N previous, Esc back to the answers"),
    ("@", "complete a file path"),
    (
        "in a picker",
        "type to search; Up/Down, PageUp/PageDown, Home/End; Enter chooses, Esc cancels (resume: Tab all folders, Ctrl+R rename; permissions: d/Delete remove, Tab move)",
    ),
    ("!cmd", "run a shell command in a pseudo-terminal"),
    ("/", "commands"),
    ("/vim, then Esc", "vim keys: d c y + motion (w b e $ 0 ^ h l j k, iw aw), dd, x, p, counts, u / Ctrl+R, ."),
];

/// Images attached and not yet sent, at most (the oldest goes first).
const MAX_PENDING_IMAGES: usize = 10;

/// What the app asks its driver to do.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Nothing.
    None,
    /// Start a turn with this prompt.
    Run(String),
    /// Run a shell command (`!cmd`).
    Shell(String),
    /// Cancel the running turn and any shell command.
    Interrupt,
    /// Esc or Ctrl+C at a question: stop the turn first, then refuse the
    /// question (so nothing more is sent), the composer the person's again.
    StopAtQuestion,
    /// A slash command that needs the runtime (`/tools`, `/mcp`, `/clear`, `/mode X`), with its argument.
    Slash(Slash, String),
    /// Edit the composer's text in `$VISUAL` / `$EDITOR` (Ctrl+G).
    Editor,
    /// Apply this to the session (a picker's choice: a model, a rewind, a resume, a rule removed).
    Session(tern_protocol::Command),
    /// Send the bash calls running in the foreground to the background (Ctrl+B).
    ToBackground,
    /// Attach the clipboard's image (Ctrl+V).
    PasteImage,
    /// Leave.
    Quit,
}

/// A permission question on screen, with where the answer goes.
pub struct PendingPermission {
    /// The pane.
    pub pane: PermissionPane,
    /// The suggested rule ("don't ask again").
    pub suggestion: Option<String>,
    /// The tool it is about.
    pub tool: String,
    /// The answer's channel.
    pub reply: Option<oneshot::Sender<PermissionAnswer>>,
    /// When it appeared: keys typed ahead within a moment do not answer it.
    pub shown_at: Instant,
}

/// The model's questions (`ask_user`) on screen, with where the answers go.
pub struct PendingAsk {
    /// The card.
    pub pane: QuestionPane,
    /// The answers' channel (None: dismissed).
    pub reply: Option<oneshot::Sender<Option<Vec<tern_protocol::UserAnswer>>>>,
    /// When it appeared (what the notification is about).
    pub shown_at: Instant,
    /// Keys count from here (it shows again after a permission question
    /// answered over it: a double-tapped answer must not reach it).
    pub keys_from: Instant,
}

/// How long after a question appears keys are not taken as its answer (the
/// person may still be typing into the composer).
const TYPE_AHEAD_GUARD: Duration = Duration::from_millis(300);

/// A retry as the status line shows it.
#[derive(Debug, Clone)]
struct RetryShown {
    reason: String,
    until: Instant,
    attempt: u32,
    of: u32,
}

impl RetryShown {
    /// `Rate limited (429) · retrying in 3 s (2/4)`, counting down to `now`.
    fn label(&self, now: Instant) -> String {
        let left = self.until.saturating_duration_since(now);
        let secs = left.as_millis().div_ceil(1000);
        if secs == 0 {
            format!("{} · retrying now ({}/{})", self.reason, self.attempt, self.of)
        } else {
            format!("{} · retrying in {secs} s ({}/{})", self.reason, self.attempt, self.of)
        }
    }
}

/// A retry's cause in a few words for the status line, from its typed
/// cause and HTTP status (the error text is for the transcript).
pub fn retry_reason(r: &tern_protocol::RetryInfo) -> String {
    use tern_protocol::RetryCause;
    match (r.cause, r.status) {
        (_, Some(429)) => "Rate limited (429)".into(),
        (_, Some(529)) => "Overloaded (529)".into(),
        (_, Some(503)) => "Unavailable (503)".into(),
        (_, Some(code @ 500..=599)) => format!("Server error ({code})"),
        (_, Some(code)) => format!("HTTP {code}"),
        (RetryCause::Overloaded, None) => "Overloaded".into(),
        (RetryCause::Connect, None) if r.error.to_ascii_lowercase().contains("connection refused") => {
            "Connection refused".into()
        }
        (RetryCause::Connect, None) if r.error.to_ascii_lowercase().contains("timed out") => "Timed out".into(),
        (RetryCause::Connect, None) => "Connection failed".into(),
        (RetryCause::Stream, None) => "Stream broke".into(),
        (RetryCause::Http | RetryCause::Other, None) => {
            let short: String = r.error.chars().take(40).collect();
            format!("Error: {short}")
        }
    }
}

/// The most queued prompts shown above the composer.
const MAX_QUEUE_ROWS: usize = 3;

/// What the status line says while a permission question waits.
const WAITING: &str = "Waiting for your answer";

/// Transcript search.
#[derive(Debug, Default)]
pub struct Search {
    /// What is being searched for.
    pub query: String,
    /// Still typing the query.
    pub editing: bool,
}

/// Everything on screen.
pub struct App {
    /// The cells.
    pub transcript: Transcript,
    /// Where the transcript is scrolled.
    pub scroll: ScrollState,
    /// The input.
    pub composer: Composer,
    /// The todo list from the last `todo_write`.
    pub todos: Vec<TodoItem>,
    /// Whether the todo panel shows.
    pub show_todos: bool,
    /// A question waiting for an answer.
    pub permission: Option<PendingPermission>,
    /// The model's questions on screen.
    pub asking: Option<PendingAsk>,
    /// Questions behind it (parallel calls ask at the same time).
    pub waiting_questions: VecDeque<(PermissionRequest, oneshot::Sender<PermissionAnswer>)>,
    /// Prompts typed while a turn ran.
    pub queue: VecDeque<String>,
    /// Prompts sent with a folded paste, (sent, shown), until their turn starts.
    folded_prompts: VecDeque<(String, String)>,
    /// Custom commands and skills, `/NAME` in the composer.
    custom_commands: Vec<SlashCommand>,
    /// A turn is running since then.
    pub busy_since: Option<Instant>,
    /// A `!cmd` is running (Esc stops it).
    pub shell_running: bool,
    /// The background tasks running now, by id (the status line counts them).
    background: std::collections::BTreeSet<String>,
    /// Images pasted or read from the clipboard, by their placeholder in the
    /// composer, until a prompt holding the placeholder sends them.
    images: VecDeque<(String, tern_protocol::ImageSource)>,
    /// Images attached so far (their placeholders are numbered).
    images_attached: usize,
    /// What the agent is doing right now ("Thinking", "Running bash").
    pub activity: String,
    /// Since when it does that (the status line's timer).
    pub activity_since: Option<Instant>,
    /// When Esc was last pressed on an empty composer (twice: `/rewind`).
    last_esc: Option<Instant>,
    /// A retry being waited for, shown as a countdown.
    retry: Option<RetryShown>,
    /// What the status line said before a permission question took it over.
    activity_before_question: Option<String>,
    /// When Ctrl+C was pressed on an empty composer.
    pub quit_armed: Option<Instant>,
    /// The key that armed quitting (`C` or `D`), for the hint.
    quit_key: char,
    /// Prompts run in this process (for the summary printed on exit).
    pub prompts_run: u64,
    /// Calls refused in this session, newest last (for `/permissions`).
    pub denials: Vec<String>,
    /// What the last run did that is not on disk (a full disk): shown in
    /// the status line until a run ends with everything saved.
    pub unsaved: Option<String>,
    /// Transcript search.
    pub search: Option<Search>,
    /// A picker in the bottom pane (rewind, resume, model, theme, permissions).
    pub picker: Option<crate::pickers::OpenPicker>,
    /// Styles.
    pub theme: Theme,
    /// Status line facts.
    pub model: String,
    /// Permission mode name.
    pub mode: Mode,
    /// Workspace shown in the status line.
    pub cwd: String,
    /// Git branch.
    pub branch: Option<String>,
    /// Context window of the model.
    pub context_window: u64,
    /// Prompt tokens of the last response (how full the context is).
    pub last_prompt_tokens: u64,
    /// Where auto-compaction triggers, in percent of the window (`None`: off).
    pub compact_at_pct: Option<u8>,
    /// Whether the person was told compaction is near (once per approach).
    compact_warned: bool,
    /// Tokens in, over the session.
    pub tokens_in: u64,
    /// Tokens out, over the session.
    pub tokens_out: u64,
    /// Estimated cost so far.
    pub cost_usd: f64,
    /// Whether the model table has a price for the model.
    pub priced: bool,
    /// Width of the last draw (for search).
    pub last_width: u16,
    /// Rows of the transcript area at the last draw (for paging).
    pub last_rows: u16,
    /// Set when the app should leave.
    pub quit: bool,
    /// Inline: finished cells go into the terminal's scrollback and only the
    /// live part is drawn (else the whole screen is tern's).
    pub inline: bool,
    /// Inline, the whole transcript on the alternate screen for a while
    /// (to scroll, search or expand a cell); Esc goes back.
    pub full_view: bool,
}

/// Rows the panes below the transcript take.
#[derive(Clone, Copy)]
struct Panes {
    todo: u16,
    queue: u16,
    bottom: u16,
    status: u16,
}

fn key_is(key: &KeyEvent, code: KeyCode, mods: KeyModifiers) -> bool {
    key.code == code && key.modifiers == mods
}

impl App {
    /// A fresh screen.
    pub fn new(
        theme: Theme,
        model: String,
        mode: Mode,
        cwd: String,
        branch: Option<String>,
        context_window: u64,
    ) -> Self {
        let commands = Slash::ALL
            .iter()
            .map(|c| SlashCommand { name: c.name().into(), description: c.description().into() })
            .collect();
        Self {
            transcript: Transcript::new(),
            scroll: ScrollState { offset: 0 },
            composer: Composer::new(commands, Vec::new()),
            todos: Vec::new(),
            show_todos: true,
            permission: None,
            asking: None,
            waiting_questions: VecDeque::new(),
            queue: VecDeque::new(),
            folded_prompts: VecDeque::new(),
            custom_commands: Vec::new(),
            busy_since: None,
            shell_running: false,
            background: std::collections::BTreeSet::new(),
            images: VecDeque::new(),
            images_attached: 0,
            activity: String::new(),
            activity_since: None,
            activity_before_question: None,
            retry: None,
            last_esc: None,
            quit_armed: None,
            quit_key: 'C',
            prompts_run: 0,
            denials: Vec::new(),
            unsaved: None,
            search: None,
            picker: None,
            theme,
            model,
            mode,
            cwd,
            branch,
            context_window,
            last_prompt_tokens: 0,
            compact_at_pct: None,
            compact_warned: false,
            tokens_in: 0,
            tokens_out: 0,
            cost_usd: 0.0,
            priced: true,
            last_width: 80,
            last_rows: 20,
            quit: false,
            inline: false,
            full_view: false,
        }
    }

    /// A turn is running.
    pub fn busy(&self) -> bool {
        self.busy_since.is_some()
    }

    /// Add a notice cell.
    pub fn notice(&mut self, text: impl Into<String>, level: NoticeLevel) {
        self.transcript.push(CellKind::Notice { text: text.into(), level });
        self.scroll.offset = 0;
    }

    /// Use `theme` from now on (the transcript redraws in it).
    pub fn set_theme(&mut self, theme: Theme) {
        self.theme = theme;
        self.transcript.set_theme(theme);
    }

    /// The line printed on the normal screen when the TUI ends: what this
    /// run did, and how to come back (`resume` is the session id, when the
    /// session is recorded).
    pub fn exit_summary(&self, resume: Option<&str>) -> String {
        let mut parts = vec![format!("{} prompt{}", self.prompts_run, if self.prompts_run == 1 { "" } else { "s" })];
        if self.tokens_in > 0 || self.tokens_out > 0 {
            parts.push(format!(
                "↑{} ↓{} tokens",
                crate::widgets::status::compact_count(self.tokens_in),
                crate::widgets::status::compact_count(self.tokens_out)
            ));
        }
        if self.priced && self.cost_usd > 0.0 {
            parts.push(format!("~${:.2}", self.cost_usd));
        }
        let mut line = format!("tern: {}", parts.join(" · "));
        if let Some(id) = resume {
            line.push_str(&format!("\nresume with: tern --resume {id}"));
        }
        line
    }

    /// Custom commands and skills (name, description): offered after `/`,
    /// listed by `/help`, and sent as `/NAME args`. A name a built-in
    /// command has stays the built-in's.
    pub fn set_custom_commands(&mut self, list: impl IntoIterator<Item = (String, String)>) {
        let list: Vec<SlashCommand> = list
            .into_iter()
            .filter(|(name, _)| Slash::parse(name).is_none())
            .map(|(name, description)| SlashCommand { name: name.into(), description: description.into() })
            .collect();
        self.composer.add_commands(list.iter().cloned());
        self.custom_commands = list;
    }

    /// The next turn's prompt `sent` shows as `shown` in the transcript
    /// (a custom command's expansion shows as `/NAME args`).
    pub fn show_prompt_as(&mut self, sent: &str, shown: &str) {
        if self.folded_prompts.len() >= 16 {
            self.folded_prompts.pop_front();
        }
        self.folded_prompts.push_back((sent.to_string(), shown.to_string()));
    }

    /// How the prompt `sent` is to show, taken (a paste's placeholder),
    /// for a prompt that runs as something else (a custom command's expansion).
    pub fn take_shown(&mut self, sent: &str) -> Option<String> {
        let at = self.folded_prompts.iter().position(|(s, _)| s == sent)?;
        self.folded_prompts.remove(at).map(|(_, shown)| shown)
    }

    /// The turn started.
    pub fn turn_started(&mut self, prompt: &str, now: Instant) {
        // Ctrl+O goes back to meaning "the last tool cell".
        self.transcript.clear_selection();
        let folded = self.take_shown(prompt);
        self.transcript.push(CellKind::User { text: prompt.to_string(), folded, expanded: false });
        self.prompts_run += 1;
        self.busy_since = Some(now);
        self.activity = "Thinking".into();
        self.activity_since = Some(now);
        self.scroll.offset = 0;
    }

    /// The turn ended: returns the next queued prompt, if any.
    pub fn turn_finished(&mut self) -> Option<String> {
        self.busy_since = None;
        self.activity.clear();
        self.activity_since = None;
        self.queue.pop_front()
    }

    /// The turn was interrupted: queued prompts go back into the composer
    /// (after what is typed there) rather than being sent.
    pub fn turn_finished_keep_queue(&mut self) {
        self.busy_since = None;
        self.activity.clear();
        self.activity_since = None;
        if self.queue.is_empty() {
            return;
        }
        let mut parts: Vec<String> = Vec::new();
        if !self.composer.is_empty() {
            parts.push(self.composer.text());
        }
        parts.extend(self.queue.drain(..));
        self.composer.set_text(&parts.join("\n"));
        self.notice("queued messages are back in the composer", NoticeLevel::Info);
    }

    fn set_activity(&mut self, what: String, now: Instant) {
        if self.activity != what {
            self.activity = what;
            self.activity_since = Some(now);
        }
    }

    /// Fold in an agent event (cost needs the runtime: passed in).
    /// `cost(usage, model)`: a response's price; `model` empty for this
    /// session's own model, else the one a subagent ran on.
    pub fn on_agent_event(&mut self, event: &AgentEvent, now: Instant, cost: impl Fn(&Usage, &str) -> f64) {
        match event {
            // A subagent's tokens count in the totals (not in this conversation's context),
            // at the price of the model it ran on.
            AgentEvent::Subagent { event: inner, .. } => {
                if let AgentEvent::AssistantMessage { usage, model, .. } = inner.as_ref() {
                    self.tokens_in += usage.prompt_tokens();
                    self.tokens_out += usage.output_tokens;
                    self.cost_usd += cost(usage, model);
                }
                // A child's events are not news about the parent's request (its retry countdown stays).
                self.transcript.apply(event);
                return;
            }
            AgentEvent::AssistantMessage { usage, .. } => {
                self.last_prompt_tokens = usage.prompt_tokens() + usage.output_tokens;
                self.tokens_in += usage.prompt_tokens();
                self.tokens_out += usage.output_tokens;
                self.cost_usd += cost(usage, "");
                if let (Some(pct), Some(at)) = (self.context_pct(), self.compact_at_pct)
                    && pct + 10 >= at
                    && !self.compact_warned
                {
                    self.compact_warned = true;
                    self.notice(
                        format!(
                            "context {pct}% full: the conversation is compacted at {at}%; \
                             /compact FOCUS now to steer the summary"
                        ),
                        NoticeLevel::Warning,
                    );
                }
            }
            AgentEvent::Compaction { tokens_after, .. } => {
                self.last_prompt_tokens = *tokens_after;
                self.compact_warned = false;
            }
            AgentEvent::TodoUpdate { todos } => self.todos = todos.clone(),
            AgentEvent::BackgroundTask { task } => {
                if task.status == tern_protocol::TaskStatus::Running {
                    self.background.insert(task.id.clone());
                } else {
                    self.background.remove(&task.id);
                }
                // Not news about the running turn: its retry countdown stays.
                return;
            }
            AgentEvent::ToolCallStart { name, .. } => self.set_activity(format!("Running {name}"), now),
            AgentEvent::ToolExecutionEnd { .. } => self.set_activity("Thinking".into(), now),
            // The session says what changed; the status line follows.
            AgentEvent::ModeChanged { mode, .. } => self.mode = *mode,
            AgentEvent::ModelChanged { model, context_window, priced } => {
                self.model = model.clone();
                self.context_window = *context_window;
                self.priced = *priced;
            }
            AgentEvent::UsageUpdated { totals, cost_usd } => {
                // The session's own count (a resumed session's included) replaces the running one.
                self.tokens_in = totals.input_tokens + totals.cache_read_tokens + totals.cache_write_tokens;
                self.tokens_out = totals.output_tokens;
                self.cost_usd = *cost_usd;
            }
            AgentEvent::TurnStart { .. } => self.set_activity("Thinking".into(), now),
            AgentEvent::TextDelta { .. } => self.set_activity("Writing".into(), now),
            AgentEvent::Waiting(wait) => {
                // The status line's clock counts from the request, not from this report.
                let reading = wait.reading();
                let mut chars = reading.chars();
                let label: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
                if self.activity != label {
                    self.activity = label;
                    self.activity_since = now.checked_sub(Duration::from_millis(wait.elapsed_ms)).or(Some(now));
                }
            }
            AgentEvent::Retry(r) => {
                // Retries show in the status line, counting down, not as transcript
                // cells; a final failure still arrives as an error.
                let until = now + Duration::from_millis(r.delay_ms);
                self.retry =
                    Some(RetryShown { reason: retry_reason(r), until, attempt: r.attempt, of: r.max_attempts });
                self.set_activity(retry_reason(r), now);
                // The transcript drops what the abandoned attempt streamed.
                self.transcript.apply(event);
                return;
            }
            _ => {}
        }
        self.retry = None;
        self.transcript.apply(event);
    }

    /// A permission question arrived.
    pub fn ask(&mut self, request: PermissionRequest, reply: oneshot::Sender<PermissionAnswer>) {
        self.ask_at(request, reply, Instant::now());
    }

    /// [`App::ask`] at a given time (tests).
    pub fn ask_at(&mut self, request: PermissionRequest, reply: oneshot::Sender<PermissionAnswer>, now: Instant) {
        if self.permission.is_some() {
            self.waiting_questions.push_back((request, reply));
            return;
        }
        let suggestion = request.decision.suggestion.clone();
        // The clock shows how long the question has waited, not the tool's time.
        if self.activity != WAITING {
            self.activity_before_question = Some(std::mem::take(&mut self.activity));
        }
        self.set_activity(WAITING.into(), now);
        self.permission = Some(PendingPermission {
            pane: PermissionPane::new(&request),
            suggestion,
            tool: request.tool.clone(),
            reply: Some(reply),
            shown_at: now,
        });
        self.scroll.offset = 0;
    }

    /// The model asks the person (`ask_user`).
    pub fn ask_user_at(
        &mut self,
        questions: Vec<tern_protocol::UserQuestion>,
        reply: oneshot::Sender<Option<Vec<tern_protocol::UserAnswer>>>,
        now: Instant,
    ) {
        if self.activity != WAITING {
            self.activity_before_question = Some(std::mem::take(&mut self.activity));
        }
        self.set_activity(WAITING.into(), now);
        self.asking =
            Some(PendingAsk { pane: QuestionPane::new(questions), reply: Some(reply), shown_at: now, keys_from: now });
        self.scroll.offset = 0;
    }

    /// A key while the model's questions show: Ctrl+C dismisses them and interrupts.
    fn on_ask_key(&mut self, key: KeyEvent, now: Instant) -> Command {
        let Some(a) = self.asking.as_mut() else { return Command::None };
        let interrupt = key_is(&key, KeyCode::Char('c'), KeyModifiers::CONTROL);
        let outcome = if interrupt {
            Some(QuestionOutcome::Dismissed)
        } else if now.duration_since(a.keys_from) < TYPE_AHEAD_GUARD {
            None
        } else {
            a.pane.handle_key(key)
        };
        if let Some(outcome) = outcome {
            if let Some(reply) = self.asking.take().and_then(|mut a| a.reply.take()) {
                let _ = reply.send(match outcome {
                    QuestionOutcome::Answered(answers) => Some(answers),
                    QuestionOutcome::Dismissed => None,
                });
            }
            if let Some(before) = self.activity_before_question.take()
                && self.busy()
            {
                self.set_activity(before, now);
            }
        }
        if interrupt { Command::Interrupt } else { Command::None }
    }

    /// The turn ended: questions still on screen or waiting belong to it.
    pub fn drop_questions(&mut self) {
        self.permission = None;
        self.asking = None;
        self.waiting_questions.clear();
    }

    /// Mouse: the wheel scrolls.
    pub fn on_mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollUp => self.scroll.offset = self.scroll.offset.saturating_add(3),
            MouseEventKind::ScrollDown => self.scroll.offset = self.scroll.offset.saturating_sub(3),
            _ => {}
        }
    }

    /// Bracketed paste.
    pub fn on_paste(&mut self, text: &str) {
        if let Some(search) = self.search.as_mut().filter(|s| s.editing) {
            search.query.push_str(text.lines().next().unwrap_or_default());
        } else if let Some(p) = self.permission.as_mut() {
            p.pane.handle_paste(text);
        } else if let Some(a) = self.asking.as_mut() {
            a.pane.handle_paste(text);
        } else if let Some(p) = self.picker.as_mut() {
            p.picker.handle_paste(text);
        } else {
            self.composer.handle_paste(text);
        }
    }

    /// Whether a paste goes to the composer (not a question's field or a search).
    pub fn composing(&self) -> bool {
        self.permission.is_none() && self.asking.is_none() && self.search.is_none() && !self.composer.searching()
    }

    /// Attach an image (pasted, from the clipboard): its placeholder,
    /// `[image 1: shot.png 120.0 KB]`, goes into the composer at the cursor,
    /// and the image goes with the prompt that holds it.
    pub fn attach_image(&mut self, name: &str, image: tern_runtime::images::PromptImage) {
        self.images_attached += 1;
        let size = tern_protocol::text::human_bytes(image.bytes);
        let placeholder = format!("[image {}: {name} {size}]", self.images_attached);
        if self.images.len() >= MAX_PENDING_IMAGES {
            self.images.pop_front();
        }
        self.images.push_back((placeholder.clone(), image.source));
        self.composer.insert_text(&placeholder);
    }

    /// The images whose placeholders `prompt` holds, taken for it.
    pub fn take_images(&mut self, prompt: &str) -> Vec<tern_protocol::ContentBlock> {
        let mut taken = Vec::new();
        self.images.retain(|(placeholder, source)| {
            let held = prompt.contains(placeholder.as_str());
            if held {
                taken.push(tern_protocol::ContentBlock::Image { source: source.clone() });
            }
            !held
        });
        taken
    }

    /// A key; returns what the driver should do.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) -> Command {
        if key.kind == KeyEventKind::Release {
            return Command::None;
        }
        // The permission prompt takes every key while it shows, and so do the model's questions.
        if self.permission.is_some() {
            return self.on_question_key(key, now);
        }
        if self.asking.is_some() {
            return self.on_ask_key(key, now);
        }
        if self.picker.is_some() {
            return self.on_picker_key(key);
        }
        if self.search.is_some() {
            return self.on_search_key(key);
        }
        // Ctrl+R's history search takes every key while it is open.
        if self.composer.searching() {
            self.composer.handle_key(key);
            return Command::None;
        }
        if let Some(command) = self.on_quit_key(key, now) {
            return command;
        }
        if let Some(command) = self.on_view_key(key) {
            return command;
        }
        if key_is(&key, KeyCode::Char('g'), KeyModifiers::CONTROL) {
            return Command::Editor;
        }
        // The session decides what runs in the foreground and may move; this only asks.
        if key_is(&key, KeyCode::Char('b'), KeyModifiers::CONTROL) {
            return Command::ToBackground;
        }
        // Text pastes arrive as bracketed pastes; a raw Ctrl+V asks for the clipboard's image.
        if key_is(&key, KeyCode::Char('v'), KeyModifiers::CONTROL) {
            return Command::PasteImage;
        }
        // A queued prompt comes back to be edited (Enter queues it again) or dropped.
        if key.code == KeyCode::Up
            && key.modifiers.is_empty()
            && self.composer.is_empty()
            && let Some(last) = self.queue.pop_back()
        {
            self.composer.set_text(&last);
            return Command::None;
        }
        // `?` on an empty composer: the keys and commands (as the status line says).
        if key.code == KeyCode::Char('?')
            && (key.modifiers.is_empty() || key.modifiers == KeyModifiers::SHIFT)
            && self.composer.is_empty()
            && self.composer.vim_mode().is_none_or(|m| m == crate::widgets::composer::VimMode::Insert)
        {
            return Command::Slash(Slash::Help, String::new());
        }
        // In vim's insert mode with text typed, Esc goes to normal mode, not to the turn.
        let vim_typing =
            self.composer.vim_mode() == Some(crate::widgets::composer::VimMode::Insert) && !self.composer.is_empty();
        // Esc in the whole transcript goes back first (a second Esc interrupts).
        if key.code == KeyCode::Esc && self.full_view && self.composer.popup().is_none() && !vim_typing {
            self.leave_full_view();
            return Command::None;
        }
        if key.code == KeyCode::Esc
            && (self.busy() || self.shell_running)
            && self.composer.popup().is_none()
            && !vim_typing
        {
            return Command::Interrupt;
        }
        match self.composer.handle_key(key) {
            ComposerAction::Submit(text) => self.submit(text),
            ComposerAction::Interrupt if self.busy() => Command::Interrupt,
            // Esc twice on an empty composer: the prompts to go back to.
            ComposerAction::Interrupt => {
                if self.last_esc.is_some_and(|t| now.duration_since(t) < Duration::from_millis(800)) {
                    self.last_esc = None;
                    return Command::Slash(Slash::Rewind, String::new());
                }
                self.last_esc = Some(now);
                Command::None
            }
            _ => Command::None,
        }
    }

    /// A key while a picker shows: it takes every key; what it asks for is done here or by the driver.
    fn on_picker_key(&mut self, key: KeyEvent) -> Command {
        use crate::pickers::PickerAction;
        let Some(open) = self.picker.as_mut() else { return Command::None };
        let action = open.on_key(key);
        let original = match &open.kind {
            crate::pickers::PickerKind::Theme { original } => Some(*original),
            _ => None,
        };
        match action {
            PickerAction::None | PickerAction::Replace | PickerAction::Resume(_) => Command::None,
            PickerAction::Close => {
                self.picker = None;
                Command::None
            }
            PickerAction::Apply { command, close } => {
                if close {
                    self.picker = None;
                }
                Command::Session(command)
            }
            PickerAction::Theme { palette, close } => {
                self.set_theme(self.theme.with_palette(palette));
                if close {
                    self.picker = None;
                    if original.is_some_and(|o| o != palette) {
                        self.notice(
                            format!("theme {palette:?} for this session (/config theme keeps one for every start)"),
                            NoticeLevel::Info,
                        );
                    }
                }
                Command::None
            }
        }
    }

    /// A key while a permission question shows: Ctrl+C refuses it and
    /// interrupts; keys right after it appeared are type-ahead, not answers.
    fn on_question_key(&mut self, key: KeyEvent, now: Instant) -> Command {
        let Some(p) = self.permission.as_mut() else { return Command::None };
        if key_is(&key, KeyCode::Char('c'), KeyModifiers::CONTROL) {
            return Command::StopAtQuestion;
        }
        if now.duration_since(p.shown_at) < TYPE_AHEAD_GUARD {
            return Command::None;
        }
        if let Some(choice) = p.pane.handle_key(key) {
            // Esc: refused, and the turn stops (nothing more is sent); the composer is the person's.
            if choice == PermissionChoice::Stop {
                return Command::StopAtQuestion;
            }
            let answer = match choice {
                PermissionChoice::Yes => PermissionAnswer::Allow,
                PermissionChoice::YesAlways(scope) => match p.suggestion.clone() {
                    Some(rule) => PermissionAnswer::AllowAlways { rule, scope },
                    None => PermissionAnswer::Allow,
                },
                // The status line follows when the runtime confirms (the tool's result).
                PermissionChoice::YesInMode(mode) => PermissionAnswer::AllowInMode(mode),
                PermissionChoice::No { feedback } => PermissionAnswer::Deny { feedback },
                PermissionChoice::Stop => PermissionAnswer::Deny { feedback: None },
            };
            self.answer(answer, now);
        }
        Command::None
    }

    /// Ctrl+C (interrupt, clear, or quit when pressed twice) and Ctrl+D.
    fn on_quit_key(&mut self, key: KeyEvent, now: Instant) -> Option<Command> {
        let ctrl = KeyModifiers::CONTROL;
        if key_is(&key, KeyCode::Char('c'), ctrl) {
            if self.busy() {
                return Some(Command::Interrupt);
            }
            if !self.composer.is_empty() {
                self.composer.clear();
                return Some(Command::None);
            }
            return Some(self.quit_when_pressed_again('C', now));
        }
        // Ctrl+D on an empty composer asks the same way: a stray one does not end the session.
        if key_is(&key, KeyCode::Char('d'), ctrl) && self.composer.is_empty() {
            return Some(self.quit_when_pressed_again('D', now));
        }
        self.quit_armed = None;
        None
    }

    /// Quit on the second press of the same key within two seconds; arm on the first.
    fn quit_when_pressed_again(&mut self, key: char, now: Instant) -> Command {
        if self.quit_key == key && self.quit_armed.is_some_and(|t| now.duration_since(t) < Duration::from_secs(2)) {
            self.quit = true;
            return Command::Quit;
        }
        self.quit_key = key;
        self.quit_armed = Some(now);
        Command::None
    }

    /// Keys about the view: thinking, tool cells, search, scrolling, the mode.
    fn on_view_key(&mut self, key: KeyEvent) -> Option<Command> {
        let ctrl = KeyModifiers::CONTROL;
        // Inline, the keys that look back open the whole transcript first.
        if self.inline && !self.full_view {
            let looks_back = key_is(&key, KeyCode::PageUp, KeyModifiers::NONE)
                || key_is(&key, KeyCode::Char('f'), ctrl)
                || key_is(&key, KeyCode::Char('o'), ctrl)
                || key_is(&key, KeyCode::Up, KeyModifiers::ALT);
            if looks_back {
                self.full_view = true;
                self.scroll.offset = 0;
            }
        }
        if self.full_view && key_is(&key, KeyCode::End, ctrl) {
            self.leave_full_view();
            return Some(Command::None);
        }
        if key_is(&key, KeyCode::Char('t'), ctrl) {
            let show = !self.transcript.show_thinking();
            self.transcript.set_show_thinking(show);
            return Some(Command::None);
        }
        if key_is(&key, KeyCode::Char('o'), ctrl) {
            if self.transcript.selected().is_none() {
                self.transcript.select_last_tool();
            }
            self.transcript.toggle_selected();
            return Some(Command::None);
        }
        if key_is(&key, KeyCode::Up, KeyModifiers::ALT) || key_is(&key, KeyCode::Down, KeyModifiers::ALT) {
            if key.code == KeyCode::Up {
                self.transcript.select_prev_tool();
            } else {
                self.transcript.select_next_tool();
            }
            // Bring the selected cell into view.
            if let Some(i) = self.transcript.selected()
                && let Some(offset) = self.transcript.offset_of_cell(i, self.last_width)
            {
                self.scroll.offset = offset;
            }
            return Some(Command::None);
        }
        if key_is(&key, KeyCode::Char('f'), ctrl)
            || (key.code == KeyCode::Char('/') && self.scroll.offset > 0 && self.composer.is_empty())
        {
            self.search = Some(Search { query: String::new(), editing: true });
            return Some(Command::None);
        }
        if key.code == KeyCode::BackTab {
            return Some(Command::Slash(Slash::Mode, "next".into()));
        }
        let page = usize::from(self.last_rows.saturating_sub(2)).max(1);
        match key.code {
            KeyCode::PageUp => self.scroll.offset = self.scroll.offset.saturating_add(page),
            KeyCode::PageDown => self.scroll.offset = self.scroll.offset.saturating_sub(page),
            KeyCode::End if key.modifiers.contains(ctrl) => self.scroll.offset = 0,
            _ => return None,
        }
        Some(Command::None)
    }

    /// Back from the whole transcript to the inline frame.
    pub fn leave_full_view(&mut self) {
        self.full_view = false;
        self.scroll.offset = 0;
        self.search = None;
        self.transcript.set_highlight(None);
        self.transcript.clear_selection();
    }

    /// The question refused, and those waiting behind it (the turn was stopped first).
    pub fn refuse_questions(&mut self, now: Instant) {
        self.waiting_questions.clear();
        self.answer(PermissionAnswer::Deny { feedback: None }, now);
    }

    fn answer(&mut self, answer: PermissionAnswer, now: Instant) {
        if let Some(mut p) = self.permission.take()
            && let Some(reply) = p.reply.take()
        {
            let _ = reply.send(answer);
        }
        // A card that shows again takes no keys for a moment either (a double-tapped answer).
        if let Some(a) = self.asking.as_mut() {
            a.keys_from = now;
        }
        if let Some((request, reply)) = self.waiting_questions.pop_front() {
            self.ask_at(request, reply, now);
        } else if let Some(before) = self.activity_before_question.take()
            && self.busy()
        {
            self.set_activity(before, now);
        }
    }

    /// Enter in the composer.
    pub fn submit(&mut self, text: String) -> Command {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Command::None;
        }
        self.composer.push_history(text.clone());
        let folded = self.composer.take_folded().filter(|(sent, _)| *sent == text);
        self.composer.clear();
        self.scroll.offset = 0;
        if let Some(rest) = trimmed.strip_prefix('!') {
            let cmd = rest.trim().to_string();
            if cmd.is_empty() {
                self.notice("`!` runs a shell command: `!git status`", NoticeLevel::Info);
                return Command::None;
            }
            return Command::Shell(cmd);
        }
        // A prompt with a folded paste keeps its placeholder in the transcript.
        if let Some((sent, shown)) = folded {
            self.show_prompt_as(&sent, &shown);
        }
        if let Some(rest) = trimmed.strip_prefix('/') {
            let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            return self.slash(name, arg.trim());
        }
        if self.busy() {
            self.queue.push_back(text);
            return Command::None;
        }
        Command::Run(text)
    }

    fn slash(&mut self, name: &str, arg: &str) -> Command {
        let Some(command) = Slash::parse(name) else {
            // A custom command or a skill: sent as `/NAME args`, expanded by the runtime.
            if self.custom_commands.iter().any(|c| c.name == name) {
                let text = if arg.is_empty() { format!("/{name}") } else { format!("/{name} {arg}") };
                if self.busy() {
                    self.queue.push_back(text);
                    return Command::None;
                }
                return Command::Run(text);
            }
            self.notice(format!("unknown command /{name} — /help lists them"), NoticeLevel::Warning);
            return Command::None;
        };
        if !command.during_turn() && self.busy() {
            self.notice(
                format!("a turn is running: interrupt it (Esc) before /{}", command.name()),
                NoticeLevel::Warning,
            );
            return Command::None;
        }
        match command {
            Slash::Help => {
                // Each entry on its own line, its meaning indented under it: readable at any width
                // (side by side columns wrapped their descriptions back to the margin).
                let mut text = String::from("Keys\n");
                for (k, what) in KEYS {
                    text.push_str(&format!("  {k}\n      {what}\n"));
                }
                text.push_str("Commands\n");
                for c in Slash::ALL {
                    let usage = match c.argument() {
                        Some(a) => format!("/{} {a}", c.name()),
                        None => format!("/{}", c.name()),
                    };
                    text.push_str(&format!("  {usage}\n      {}\n", c.description()));
                }
                if !self.custom_commands.is_empty() {
                    text.push_str("Custom commands and skills\n");
                    for c in &self.custom_commands {
                        text.push_str(&format!("  /{}\n      {}\n", c.name, c.description));
                    }
                }
                self.notice(text.trim_end().to_string(), NoticeLevel::Info);
                Command::None
            }
            Slash::Model => Command::Slash(Slash::Model, arg.to_string()),
            Slash::Cost => {
                let cost = if self.priced {
                    format!("estimated ${:.4}", self.cost_usd)
                } else {
                    "no price known for this model (add it under [models] in config)".to_string()
                };
                let text = format!(
                    "tokens in {} · out {} · {cost} · context {}%",
                    self.tokens_in,
                    self.tokens_out,
                    self.context_pct().unwrap_or(0)
                );
                self.notice(text, NoticeLevel::Info);
                Command::None
            }
            Slash::Vim => {
                let on = self.composer.vim_mode().is_none();
                self.composer.set_vim(on);
                let text = if on {
                    "vim mode on: Esc for normal mode (motions, d c y with counts, p, u, Ctrl+R, .; see /help), Enter sends; /vim turns it off"
                } else {
                    "vim mode off"
                };
                self.notice(text, NoticeLevel::Info);
                Command::None
            }
            Slash::Todos => {
                self.show_todos = !self.show_todos;
                let state = if self.show_todos { "shown" } else { "hidden (/todos shows it)" };
                self.notice(format!("todo panel {state}"), NoticeLevel::Info);
                Command::None
            }
            Slash::Quit => {
                self.quit = true;
                Command::Quit
            }
            Slash::Tools
            | Slash::Mcp
            | Slash::Clear
            | Slash::Mode
            | Slash::Status
            | Slash::Theme
            | Slash::Permissions
            | Slash::Tasks
            | Slash::Doctor
            | Slash::Config
            | Slash::Init
            | Slash::Compact
            | Slash::Context
            | Slash::Rewind
            | Slash::Resume
            | Slash::Fork
            | Slash::Rename
            | Slash::Export => Command::Slash(command, arg.to_string()),
        }
    }

    fn on_search_key(&mut self, key: KeyEvent) -> Command {
        let Some(search) = self.search.as_mut() else { return Command::None };
        let width = self.last_width;
        match key.code {
            KeyCode::Esc => self.search = None,
            KeyCode::Enter if search.editing => {
                search.editing = false;
                let q = search.query.clone();
                self.jump(&q, false, width);
            }
            KeyCode::Enter | KeyCode::Char('n') if !search.editing => {
                let q = search.query.clone();
                self.jump(&q, false, width);
            }
            KeyCode::Char('N') if !search.editing => {
                let q = search.query.clone();
                self.jump(&q, true, width);
            }
            KeyCode::Backspace if search.editing => {
                search.query.pop();
            }
            KeyCode::Char(c) if search.editing && !key.modifiers.contains(KeyModifiers::CONTROL) => {
                search.query.push(c);
            }
            _ if !search.editing => {
                // Any other key leaves search mode and is handled normally.
                self.search = None;
                self.transcript.set_highlight(None);
                return self.on_key(key, Instant::now());
            }
            _ => {}
        }
        let highlight = self.search.as_ref().map(|s| s.query.clone()).filter(|q| !q.is_empty());
        self.transcript.set_highlight(highlight);
        Command::None
    }

    fn jump(&mut self, query: &str, backwards: bool, width: u16) {
        if query.is_empty() {
            return;
        }
        match self.transcript.find(query, width, self.scroll.offset, backwards) {
            Some(offset) => self.scroll.offset = offset,
            None => self.notice(format!("no match for `{query}`"), NoticeLevel::Info),
        }
    }

    fn context_pct(&self) -> Option<u8> {
        (self.context_window > 0 && self.last_prompt_tokens > 0)
            .then(|| ((self.last_prompt_tokens * 100) / self.context_window).min(100) as u8)
    }

    /// Draw everything into `buf` (one frame); returns the cursor position.
    pub fn draw(&mut self, area: Rect, buf: &mut Buffer, now: Instant) -> Option<(u16, u16)> {
        if area.height < 4 || area.width < 10 {
            Line::from("tern: the terminal is too small").render(area, buf);
            return None;
        }
        let panes = self.panes(area.width, area.height);
        self.draw_frame(area, &panes, buf, now, false)
    }

    /// Inline mode's frame for a terminal of `width` × `screen_h`: the cells
    /// not yet in the scrollback (their last rows, when taller than the
    /// screen allows), then the panes; with the cursor position.
    pub fn draw_inline(&mut self, width: u16, screen_h: u16, now: Instant) -> (Buffer, Option<(u16, u16)>) {
        if screen_h < 4 || width < 10 {
            let mut buf = Buffer::empty(Rect::new(0, 0, width.max(1), 1));
            Line::from("tern: the terminal is too small").render(buf.area, &mut buf);
            return (buf, None);
        }
        let panes = self.panes(width, screen_h);
        let panes_h = panes.todo + panes.queue + panes.bottom + panes.status;
        let popup_h = match (&self.permission, &self.asking, &self.search) {
            (None, None, None) => self.composer.popup().map_or(0, |p| p.height()),
            _ => 0,
        };
        let live = self.transcript.live_height(width).max(usize::from(popup_h));
        let live_h = u16::try_from(live).unwrap_or(u16::MAX).min(screen_h.saturating_sub(panes_h));
        let area = Rect::new(0, 0, width, live_h + panes_h);
        let mut buf = Buffer::empty(area);
        let cursor = self.draw_frame(area, &panes, &mut buf, now, true);
        (buf, cursor)
    }

    /// What the panes below the transcript take at `width` in a screen `screen_h` rows high.
    fn panes(&self, width: u16, screen_h: u16) -> Panes {
        let status_h = 1u16;
        // A finished list folds away once the turn is over (it stays in the transcript's history).
        let all_done = self.todos.iter().all(|t| t.status == tern_protocol::TodoStatus::Completed);
        let todo_h = if self.show_todos && (self.busy() || !all_done) { todo_height(&self.todos, width) } else { 0 };
        // A question may take the whole screen but the status line: in a
        // short terminal what will run and the answers matter most.
        let max_bottom = if self.permission.is_some() || self.asking.is_some() {
            screen_h.saturating_sub(status_h)
        } else {
            screen_h.saturating_sub(status_h + 3)
        };
        let max_bottom = if self.picker.is_some() && self.permission.is_none() && self.asking.is_none() {
            screen_h.saturating_sub(status_h)
        } else {
            max_bottom
        };
        let bottom_h = match (&self.permission, &self.asking) {
            (Some(p), _) => p.pane.desired_height(width),
            (None, Some(a)) => a.pane.desired_height(width),
            (None, None) if self.picker.is_some() => self.picker.as_ref().map_or(0, |p| p.picker.desired_height(width)),
            (None, None) if self.search.is_some() => 1,
            (None, None) => self.composer.desired_height(width),
        }
        .min(max_bottom);
        let todo_h = todo_h.min(max_bottom.saturating_sub(bottom_h) / 2);
        // Prompts typed during the turn, waiting: shown (the newest few), not just counted.
        let queue_h = if self.permission.is_none() && !self.queue.is_empty() {
            (self.queue.len().min(MAX_QUEUE_ROWS) as u16).min(max_bottom.saturating_sub(bottom_h + todo_h) / 2)
        } else {
            0
        };
        Panes { todo: todo_h, queue: queue_h, bottom: bottom_h, status: status_h }
    }

    /// Draw a frame into `area` with the panes at their heights; `live`:
    /// the transcript part shows only the cells not yet in the scrollback.
    fn draw_frame(
        &mut self,
        area: Rect,
        panes: &Panes,
        buf: &mut Buffer,
        now: Instant,
        live: bool,
    ) -> Option<(u16, u16)> {
        let theme = self.theme;
        let Panes { todo: todo_h, queue: queue_h, bottom: bottom_h, status: status_h } = *panes;
        // The transcript takes what the panes leave, top to bottom.
        let [transcript_area, todo_area, queue_area, bottom_area, status_area] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(todo_h),
            Constraint::Length(queue_h),
            Constraint::Length(bottom_h),
            Constraint::Length(status_h),
        ])
        .areas(area);
        let transcript_h = transcript_area.height;
        self.last_width = area.width;
        self.last_rows = transcript_h;
        if live {
            self.transcript.render_live(transcript_area, buf, &theme, now);
        } else {
            self.transcript.render(transcript_area, buf, &mut self.scroll, &theme, now);
        }
        if todo_h > 0 {
            render_todos(&self.todos, todo_area, buf, &theme);
        }
        if queue_h > 0 {
            let skip = self.queue.len().saturating_sub(usize::from(queue_h));
            for (i, q) in self.queue.iter().skip(skip).enumerate() {
                let first = q.lines().next().unwrap_or_default();
                let hint =
                    if i + skip + 1 == self.queue.len() { "  (Up on an empty prompt takes it back)" } else { "" };
                let line = Line::from(vec![
                    Span::styled("  queued ▸ ", theme.dim()),
                    Span::styled(first.to_string(), theme.text()),
                    Span::styled(hint, theme.dim()),
                ]);
                let row = Rect { y: queue_area.y + i as u16, height: 1, ..queue_area };
                crate::wrap::truncate(&line.spans, usize::from(row.width)).render(row, buf);
            }
        }
        let mut cursor = None;
        match (&self.permission, &self.search) {
            (Some(p), _) => p.pane.render(bottom_area, buf, &theme),
            (None, _) if self.asking.is_some() => {
                if let Some(a) = &self.asking {
                    a.pane.render(bottom_area, buf, &theme);
                }
            }
            (None, _) if self.picker.is_some() => {
                if let Some(p) = self.picker.as_mut() {
                    let line = p.field_line(usize::from(area.width.saturating_sub(4)), &theme);
                    p.picker.set_field_line(line);
                    p.picker.render(bottom_area, buf, &theme);
                }
            }
            (None, Some(search)) => {
                let hint =
                    if search.editing { "  (Enter to search, Esc to stop)" } else { "  (n next · N previous · Esc)" };
                Line::from(vec![
                    Span::styled("search: ", theme.accent()),
                    Span::raw(search.query.clone()),
                    Span::styled(hint, theme.dim()),
                ])
                .render(bottom_area, buf);
                if search.editing {
                    let x = bottom_area.x + 8 + unicode_width::UnicodeWidthStr::width(search.query.as_str()) as u16;
                    cursor = Some((x.min(bottom_area.right().saturating_sub(1)), bottom_area.y));
                }
            }
            (None, None) => {
                cursor = self.composer.render(bottom_area, buf, &theme);
                if let Some(popup) = self.composer.popup() {
                    let h = popup.height().min(transcript_h);
                    let popup_area = Rect { y: bottom_area.y.saturating_sub(h), height: h, ..area };
                    ratatui::widgets::Clear.render(popup_area, buf);
                    popup.render(popup_area, buf, &theme);
                }
            }
        }
        if self.quit_armed.is_some_and(|t| now.duration_since(t) >= Duration::from_secs(2)) {
            self.quit_armed = None;
        }
        let hint = if self.quit_armed.is_some() {
            Some(format!("Ctrl+{} again to quit", self.quit_key))
        } else if self.full_view {
            Some("whole transcript · Esc goes back".to_string())
        } else if self.scroll.offset > 0 {
            Some("scrolled up · Ctrl+End to follow".to_string())
        } else {
            None
        };
        let info = StatusInfo {
            model: self.model.clone(),
            mode: self.mode,
            context_pct: self.context_pct(),
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            cost_usd: self.cost_usd,
            cwd: self.cwd.clone(),
            branch: self.branch.clone(),
            busy: self.busy_since.map(|t| {
                let label = match &self.retry {
                    Some(r) => r.label(now),
                    None => self.activity.clone(),
                };
                (label, self.activity_since.unwrap_or(t))
            }),
            queued: self.queue.len(),
            background: self.background.len(),
            hint,
            alert: self.unsaved.clone(),
        };
        render_status(&info, status_area, buf, &theme, now);
        cursor
    }
}
