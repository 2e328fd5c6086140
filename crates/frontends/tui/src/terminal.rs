//! The driver: owns the terminal, runs turns on the shared runtime, answers
//! permission questions through the app, runs `!cmd` in a pseudo-terminal,
//! and redraws — coalesced, at most 120 frames a second, each frame inside a
//! synchronized update so the screen never shows half a frame.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, EventStream, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode,
    enable_raw_mode,
};
use crossterm::{execute, queue};
use futures::StreamExt;
use futures::future::BoxFuture;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tern_protocol::{AgentEvent, Command as SessionCommand};
use tern_runtime::EventSink;
use tern_runtime::apply::Outcome;
use tern_runtime::{Mode, PermissionAnswer, PermissionPrompt, PermissionRequest, RunReport, Runtime};
use tokio::sync::{mpsc, oneshot};

use crate::app::{App, Command};
use crate::slash::Slash;
use crate::theme::Theme;
use crate::transcript::{CellKind, NoticeLevel, OutputTail, ShellCell, Transcript};
use tern_protocol::sync::LockExt as _;

/// The shortest time between two frames (120 fps).
const FRAME: Duration = Duration::from_micros(8_333);

/// What reaches the loop besides terminal input.
enum Msg {
    Agent(AgentEvent),
    Done(Box<RunReport>),
    Ask(Box<PermissionRequest>, oneshot::Sender<PermissionAnswer>),
    /// The model's questions (`ask_user`).
    AskUser(Vec<tern_protocol::UserQuestion>, oneshot::Sender<Option<Vec<tern_protocol::UserAnswer>>>),
    ShellOutput(usize, String),
    ShellDone(usize, Option<i32>, u64),
    Files(Vec<String>),
    /// A background slash command has something to say.
    Notice(String, NoticeLevel),
    /// The preview of a picker's item: (picker id, item, lines).
    Preview(u64, usize, Vec<ratatui::text::Line<'static>>),
    /// An image read for the composer (its name), or why not; a pasted
    /// path comes with its text, pasted as text when it is no image.
    Image(String, Result<tern_runtime::images::PromptImage, tern_runtime::images::ImageRefused>, Option<String>),
    /// A command the session applied: what it did, or why not; `true` when
    /// the person should not be told of it again (Shift+Tab shows the mode
    /// in the status line).
    Applied(Box<Result<Outcome, String>>, bool),
    /// `/resume` switched sessions: its conversation as cells, built from
    /// the runtime's history in place (not from a copy of the messages).
    Resumed(Box<tern_runtime::Resumed>, Box<Transcript>),
}

/// Apply `command` to the session off the UI thread: its events and its
/// outcome come back as messages.
fn apply(runtime: &Arc<Runtime>, tx: &mpsc::UnboundedSender<Msg>, command: SessionCommand) {
    let quiet = command == SessionCommand::CycleMode;
    let (rt, tx) = (runtime.clone(), tx.clone());
    tokio::spawn(async move {
        let events_tx = tx.clone();
        let events: EventSink = Arc::new(move |e| {
            let _ = events_tx.send(Msg::Agent(e));
        });
        let outcome = rt.apply(command, &events).await.map_err(|e| e.to_string());
        if let Ok(Outcome::Resumed(r)) = outcome {
            let mut cells = Transcript::new();
            rt.with_conversation(|messages| cells.replay_with(messages, &r.tool_runs)).await;
            let _ = tx.send(Msg::Resumed(r, Box::new(cells)));
            return;
        }
        let _ = tx.send(Msg::Applied(Box::new(outcome), quiet));
    });
}

/// Sends permission questions to the screen and waits for the answer.
struct TuiPrompt {
    tx: mpsc::UnboundedSender<Msg>,
}

impl PermissionPrompt for TuiPrompt {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        let (reply, answer) = oneshot::channel();
        let sent = self.tx.send(Msg::Ask(Box::new(request), reply)).is_ok();
        Box::pin(async move {
            if !sent {
                return PermissionAnswer::Unanswered;
            }
            answer.await.unwrap_or(PermissionAnswer::Unanswered)
        })
    }

    fn ask_user(
        &self,
        questions: Vec<tern_protocol::UserQuestion>,
    ) -> BoxFuture<'_, Option<Vec<tern_protocol::UserAnswer>>> {
        let (reply, answer) = oneshot::channel();
        let sent = self.tx.send(Msg::AskUser(questions, reply)).is_ok();
        Box::pin(async move {
            if !sent {
                return None;
            }
            answer.await.ok().flatten()
        })
    }

    fn interactive(&self) -> bool {
        true
    }
}

/// The composer's text edited in `$VISUAL` (or `$EDITOR`): the screen is
/// handed over while it runs and taken back after; the edited text replaces
/// the composer's. Without an editor set, a notice says so.
fn edit_in_editor(app: &mut App, enhanced_keys: bool) {
    let Some(editor) = ["VISUAL", "EDITOR"].iter().find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
    else {
        app.notice("Ctrl+G opens the prompt in your editor: set $VISUAL or $EDITOR", NoticeLevel::Warning);
        return;
    };
    let path = std::env::temp_dir().join(format!("tern-prompt-{}-{}.md", std::process::id(), fastrand_suffix()));
    let written = std::os::unix::fs::OpenOptionsExt::mode(std::fs::File::options().write(true).create_new(true), 0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(app.composer.text().as_bytes()));
    if let Err(e) = written {
        app.notice(format!("cannot open the editor: {e}"), NoticeLevel::Warning);
        return;
    }
    restore(enhanced_keys);
    // `$EDITOR` may carry arguments (`code --wait`): the shell splits it, the path goes as "$1".
    let status =
        std::process::Command::new("sh").arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(&path).status();
    let _ = enter_screen();
    match status {
        Ok(s) if s.success() => match tern_runtime::small_file::read_bounded(&path, 1024 * 1024, None) {
            Ok(text) => app.composer.set_text(text.trim_end_matches('\n')),
            Err(e) => app.notice(format!("cannot read the edited prompt: {e:?}"), NoticeLevel::Warning),
        },
        Ok(s) => app.notice(format!("the editor exited with {s}; the prompt is unchanged"), NoticeLevel::Warning),
        Err(e) => app.notice(format!("cannot run `{editor}`: {e}"), NoticeLevel::Warning),
    }
    let _ = std::fs::remove_file(&path);
}

/// Six random lowercase letters and digits, for a temp file's name.
fn fastrand_suffix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{nanos:08x}")
}

/// Restores the terminal however the TUI ends (return, error, panic).
struct TerminalGuard {
    enhanced_keys: bool,
}

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        Ok(Self { enhanced_keys: enter_screen()? })
    }
}

/// Whether tern has the alternate screen now (what restoring must undo:
/// leaving it when it was never entered would move the cursor to a stale
/// saved position).
static ON_ALT_SCREEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Mouse reports for the wheel only: presses and releases (mode 1000) in SGR
/// form (1006), never every motion (1003), so the terminal keeps as much of
/// its own selection as it can.
struct WheelMouse(bool);

impl crossterm::Command for WheelMouse {
    fn write_ansi(&self, f: &mut impl std::fmt::Write) -> std::fmt::Result {
        f.write_str(if self.0 { "\x1b[?1000h\x1b[?1006h" } else { "\x1b[?1006l\x1b[?1000l" })
    }
}

/// The whole screen tern's (the alternate screen, the wheel scrolls), or back
/// to the normal screen with the terminal's own scrollback and selection.
fn alternate_screen(on: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout();
    if on == ON_ALT_SCREEN.swap(on, std::sync::atomic::Ordering::SeqCst) {
        return Ok(());
    }
    if on {
        execute!(out, EnterAlternateScreen, WheelMouse(true))
    } else {
        execute!(out, WheelMouse(false), LeaveAlternateScreen)
    }
}

/// Raw mode, pastes, focus reports; whether the keyboard enhancement flags
/// were pushed. The alternate screen is [`alternate_screen`]'s.
fn enter_screen() -> std::io::Result<bool> {
    enable_raw_mode()?;
    let mut out = std::io::stdout();
    execute!(out, EnableBracketedPaste, crossterm::event::EnableFocusChange)?;
    // Shift+Enter is only distinguishable where the terminal reports it
    // (kitty keyboard protocol). Asking the terminal first can stall for
    // seconds where nothing answers, so push the flags unconditionally:
    // terminals without the protocol ignore the sequence.
    let enhanced_keys = execute!(
        out,
        PushKeyboardEnhancementFlags(
            KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES | KeyboardEnhancementFlags::REPORT_ALTERNATE_KEYS
        )
    )
    .is_ok();
    Ok(enhanced_keys)
}

fn restore(enhanced_keys: bool) {
    let mut out = std::io::stdout();
    if enhanced_keys {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(out, crossterm::event::DisableFocusChange, DisableBracketedPaste);
    let _ = alternate_screen(false);
    let _ = execute!(out, crossterm::cursor::Show);
    let _ = disable_raw_mode();
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore(self.enhanced_keys);
    }
}

/// The terminal as tern draws on it: inline (the live frame below what was
/// written into the scrollback) or the whole alternate screen.
struct Screen {
    inline: crate::inline::InlineScreen,
    full: Option<Terminal<CrosstermBackend<std::io::Stdout>>>,
    /// The terminal's size at the last inline frame.
    size: (u16, u16),
    /// The transcript's epoch at the last inline frame.
    epoch: u64,
    /// Clear the screen before the next inline frame and write the recent history again.
    redraw: bool,
}

impl Screen {
    fn new() -> Self {
        Self { inline: crate::inline::InlineScreen::new(), full: None, size: (0, 0), epoch: 0, redraw: false }
    }

    /// One frame, on whichever screen the app wants now.
    fn draw(&mut self, app: &mut App) -> std::io::Result<()> {
        let want_full = !app.inline || app.full_view;
        if want_full {
            if self.full.is_none() {
                alternate_screen(true)?;
                // The alternate screen starts empty; `Terminal::clear` would ask the
                // terminal for the cursor position, which not every terminal answers.
                self.full = Some(Terminal::new(CrosstermBackend::new(std::io::stdout()))?);
            }
            if let Some(terminal) = self.full.as_mut() {
                draw(terminal, app)?;
            }
            return Ok(());
        }
        if self.full.take().is_some() {
            // Back on the normal screen, as it was: the frame is where it was left.
            alternate_screen(false)?;
            self.inline.invalidate();
        }
        let (width, height) = crossterm::terminal::size()?;
        // After a resize the terminal may have reflowed what is on screen: start from a clean one and
        // write again what was on it, at this width (older rows stay in the scrollback as they were).
        let mut reflow = std::mem::take(&mut self.redraw);
        if (width, height) != self.size {
            reflow |= self.size != (0, 0);
            self.size = (width, height);
        }
        // Another conversation (/clear, /resume): a clean screen, then its history.
        let epoch = app.transcript.epoch();
        let new_conversation = epoch != self.epoch;
        self.epoch = epoch;
        let now = Instant::now();
        // A turn that ended with a cell still marked running (a call that never reported back) lets it go.
        let all = !app.busy() && !app.shell_running;
        let mut history = app.transcript.take_settled(width, all);
        let (frame, cursor) = app.draw_inline(width, height, now);
        if reflow && !new_conversation {
            history = app.transcript.taken_tail(width, usize::from(height.saturating_sub(frame.area.height)));
        }
        let clear = reflow || new_conversation;
        let history = bounded(history, usize::from(height) * 50);
        self.inline.draw(&mut std::io::stdout(), &history, &frame, cursor, clear)
    }

    /// Leaving: inline, the frame goes and the cells not yet written are
    /// written. On the whole screen (`fullscreen = true`), `print_on_exit`
    /// leaves the last answer (`last`) or the conversation (`all`) on the
    /// normal screen, drawn as they were shown.
    fn finish(&mut self, app: &mut App, print_on_exit: &str) -> std::io::Result<()> {
        if self.full.take().is_some() {
            alternate_screen(false)?;
        }
        let width = crossterm::terminal::size().map_or(80, |s| s.0);
        let mut out = std::io::stdout();
        if app.inline {
            let history = app.transcript.take_settled(width, true);
            return self.inline.finish(&mut out, &history);
        }
        let rows = match print_on_exit {
            "all" => app.transcript.take_settled(width, true),
            "last" => app.transcript.last_answer_rows(width),
            _ => return Ok(()),
        };
        let mut s = Vec::new();
        for row in rows.iter().skip_while(|r| r.width() == 0) {
            crate::inline::write_line(&mut s, row, width)?;
            s.extend_from_slice(b"\r\n");
        }
        out.write_all(&s)?;
        out.flush()
    }
}

/// At most `max` rows, the last ones, under a line that says how many were
/// left out (a resumed session's whole history is not written out at once).
fn bounded(mut rows: Vec<ratatui::text::Line<'static>>, max: usize) -> Vec<ratatui::text::Line<'static>> {
    if rows.len() <= max {
        return rows;
    }
    let cut = rows.len() - max;
    rows.drain(..cut);
    let note = format!("… {cut} earlier rows · PageUp shows the whole conversation");
    rows.insert(0, ratatui::text::Line::styled(note, Theme::from_env().dim()));
    rows
}

/// A running `!cmd`.
struct ShellJob {
    cell: usize,
    killer: Box<dyn portable_pty::ChildKiller + Send + Sync>,
    /// The command's process group (the pty makes it a session leader).
    pgid: Option<u32>,
}

/// The app for this runtime: model, mode, where it works, and the notices
/// setup left (warnings, MCP servers that failed).
async fn new_app(runtime: &Runtime) -> App {
    let workspace = runtime.workspace();
    let cwd = home_relative(workspace);
    let palette = crate::theme::Palette::parse(runtime.tui_settings().theme.as_deref());
    let mut app = App::new(
        Theme::from_env().with_palette(palette),
        runtime.model().to_string(),
        runtime.policy().mode(),
        cwd,
        tern_runtime::prompt::git_branch(workspace),
        runtime.model_info().context_window,
    );
    app.priced = runtime.model_info().input_per_mtok > 0.0;
    app.composer.load_history(runtime.prompt_history());
    app.composer.set_vim(runtime.tui_settings().vim.unwrap_or(false));
    app.inline = !runtime.tui_settings().fullscreen.unwrap_or(false);
    let commands = runtime.slash_commands().into_iter().map(|c| {
        let description = match c.kind {
            tern_protocol::SlashKind::Command => c.description,
            tern_protocol::SlashKind::Skill => format!("skill: {}", c.description),
            tern_protocol::SlashKind::McpPrompt => format!("MCP prompt: {}", c.description),
        };
        (c.name, description)
    });
    app.set_custom_commands(commands.collect::<Vec<_>>());
    let settings = runtime.compaction_settings();
    let window = runtime.model_info().context_window;
    app.compact_at_pct =
        (settings.auto && window > 0).then(|| (settings.threshold(window) * 100 / window).min(100) as u8);
    // A first screen that says where tern stands (a resumed session shows its conversation instead).
    if runtime.resumed().is_none() {
        let servers = runtime.mcp_servers();
        let connected = servers.iter().filter(|s| s.state == tern_runtime::McpState::Connected).count();
        let mut welcome = format!(
            "tern {} · {} · {} mode · {}",
            env!("CARGO_PKG_VERSION"),
            runtime.model(),
            runtime.policy().mode(),
            home_relative(runtime.workspace())
        );
        if !servers.is_empty() {
            welcome.push_str(&format!(" · MCP {connected}/{} connected", servers.len()));
        }
        welcome.push_str(
            "\n/help for keys and commands · /status for the details · tern -c goes on with the last session",
        );
        app.notice(welcome, NoticeLevel::Info);
    }
    let files = runtime.instruction_files();
    if !files.is_empty() {
        let names: Vec<String> = files.iter().map(|f| shown_path(&f.path, runtime.workspace())).collect();
        app.notice(format!("instructions from {}", names.join(", ")), NoticeLevel::Info);
    }
    if let Some(r) = runtime.resumed() {
        // From the runtime's history, in place: the conversation is not copied to be shown.
        let runs = runtime.take_resumed_tool_runs();
        runtime.with_conversation(|messages| app.transcript.replay_with(messages, &runs)).await;
        app.todos = r.todos.clone();
        // The session's tokens and cost so far, as /cost and the status line count them.
        let (u, cost) = r.usage;
        app.tokens_in = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
        app.tokens_out = u.output_tokens;
        app.cost_usd = cost;
        let title = r.title.as_deref().map(|t| format!(" “{t}”")).unwrap_or_default();
        app.notice(format!("resumed session {}{title}: {} messages", r.from, r.message_count), NoticeLevel::Info);
    }
    for n in runtime.startup_notices().into_iter().filter(|n| n.warning) {
        app.notice(n.message, NoticeLevel::Warning);
    }
    app
}

/// Run the TUI until the person quits. `initial` is submitted at once.
pub async fn run(mut runtime: Runtime, initial: Option<String>) -> std::io::Result<u8> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    runtime.set_permission_prompt(Arc::new(TuiPrompt { tx: tx.clone() }));
    let runtime = Arc::new(runtime);
    let workspace = runtime.workspace().to_path_buf();
    let app = new_app(&runtime).await;
    // @ completion over the workspace's files, loaded off the UI thread.
    let files = tokio::task::spawn_blocking({
        let root = workspace.clone();
        move || crate::widgets::composer::file_index(&root, 50_000)
    });

    let prev_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore(true);
        prev_hook(info);
    }));
    let guard = TerminalGuard::enter()?;
    let mut screen = Screen::new();

    let mut input = EventStream::new();
    let shell: Arc<Mutex<Option<ShellJob>>> = Arc::new(Mutex::new(None));
    let mut files = Some(files);
    let mut dirty = true;
    let mut last_frame = Instant::now() - FRAME;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let attention = crate::attention::Attention::new(
        crate::attention::Notify::parse(runtime.tui_settings().notify.as_deref()),
        runtime.tui_settings().title.unwrap_or(true),
        &home_relative(runtime.workspace()),
    )
    .with_delay(runtime.tui_settings().notify_after_secs.map(Duration::from_secs));
    let mut d = Driver {
        attention,
        editor_requested: false,
        app,
        runtime: runtime.clone(),
        tx: tx.clone(),
        running: false,
        shell: shell.clone(),
    };
    // Background tasks start and end outside turns too: the status line counts them.
    let background_tx = tx.clone();
    runtime.watch_background(Arc::new(move |e| {
        let _ = background_tx.send(Msg::Agent(e));
    }));
    if let Some(prompt) = initial.filter(|p| !p.trim().is_empty()) {
        d.start_turn(prompt);
    }
    // The terminal closing (SIGHUP) or a polite kill (SIGTERM) ends the
    // session like /quit: background tasks live in their own process
    // groups, so nothing else would stop them.
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = signal(SignalKind::hangup())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut ended_by: Option<i32> = None;

    loop {
        // Wait for something, then take everything already waiting before drawing.
        let deadline = if dirty { Some(last_frame + FRAME) } else { None };
        tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(ev)) => {
                    d.on_input(ev);
                    dirty = true;
                    if std::mem::take(&mut d.editor_requested) {
                        // The editor gets the terminal, and the keys: nothing polls the input stream while it
                        // runs (the key that asked for it was the last one taken). The stream is kept, not
                        // made again: dropping it wakes crossterm's poller, and a wake that arrives with the
                        // first key after the editor swallowed that key's readiness (an Enter seen only when
                        // another key came).
                        edit_in_editor(&mut d.app, guard.enhanced_keys);
                        // Draw everything again, on a clean screen: the editor may have left anything on
                        // it (the whole screen is entered again, the alternate screen was left for it).
                        screen.full = None;
                        screen.redraw = true;
                    }
                }
                Some(Err(_)) | None => break,
            },
            Some(msg) = rx.recv() => { d.on_msg(msg); dirty = true; }
            _ = hangup.recv() => { ended_by = Some(libc::SIGHUP); break; }
            _ = terminate.recv() => { ended_by = Some(libc::SIGTERM); break; }
            _ = tick.tick(), if d.app.busy() || shell_running(&shell) || d.app.quit_armed.is_some() => { dirty = true; }
            _ = sleep_until(deadline), if deadline.is_some() => {}
            Ok(list) = async {
                match files.as_mut() {
                    Some(f) => f.await,
                    None => std::future::pending().await,
                }
            }, if files.is_some() => {
                d.app.composer.set_files(list);
                files = None;
            }
        }
        while let Ok(msg) = rx.try_recv() {
            d.on_msg(msg);
            dirty = true;
        }
        // A picker's selection moved to an item without a preview: compute it off the UI thread.
        let preview_tx = d.tx.clone();
        crate::picker_driver::request_preview(&mut d.app, &d.runtime, move |id, item, lines| {
            let _ = preview_tx.send(Msg::Preview(id, item, lines));
        });
        if d.app.quit {
            break;
        }
        let open = d.app.permission.as_ref().map(|p| (p.tool.as_str(), p.shown_at));
        let open = open.or_else(|| d.app.asking.as_ref().map(|a| ("ask_user", a.shown_at)));
        d.attention.question(open, Instant::now(), &mut std::io::stdout());
        if dirty && last_frame.elapsed() >= FRAME {
            let state = if d.app.permission.is_some() || d.app.asking.is_some() {
                crate::attention::State::Waiting
            } else if d.app.busy() {
                crate::attention::State::Working
            } else {
                crate::attention::State::Ready
            };
            d.attention.show(state, &mut std::io::stdout());
            screen.draw(&mut d.app)?;
            last_frame = Instant::now();
            dirty = false;
        }
    }
    if d.running {
        d.runtime.interrupter().interrupt();
    }
    // tern is leaving: no command it started may outlive it, whatever its own cleanup is doing.
    tern_runtime::process::kill_tracked();
    kill_shell(&shell);
    d.attention.reset(&mut std::io::stdout());
    runtime.shutdown().await;
    if let Some(signal) = ended_by {
        // The terminal may be gone: nothing more is written to it. The exit
        // code says which signal ended it, as a shell would (128 + N).
        drop(screen);
        drop(guard);
        return Ok(tern_protocol::exit::signalled(signal));
    }
    // Inline, the rest of the conversation goes into the scrollback where the frame was; on the
    // whole screen, what `print_on_exit` asks for is written as it was shown.
    let print_on_exit = runtime.tui_settings().print_on_exit.as_deref().map(str::trim).unwrap_or("none");
    let finished = screen.finish(&mut d.app, print_on_exit);
    drop(screen);
    drop(guard);
    finished?;
    // Back on the normal screen: what happened, and how to come back.
    let session = runtime.session();
    // For scrollback, when asked: the last answer or the whole conversation, cleaned.
    let has_conversation = d.app.prompts_run > 0 || runtime.resumed().is_some();
    let resume = (session.is_recording() && has_conversation).then(|| session.id().to_string());
    // A terminal gone by now is no reason to panic: the summary is only a courtesy.
    let _ = writeln!(std::io::stdout(), "{}", d.app.exit_summary(resume.as_deref()));
    // A last try at what a full disk held back; what is still not on disk is said, and fails the exit.
    session.sync();
    if let Some(why) = session.unsaved() {
        let _ = writeln!(std::io::stderr(), "tern: error: not saved: {why}");
        return Ok(1);
    }
    Ok(0)
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(d) = deadline {
        tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await;
    }
}

fn draw(terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>, app: &mut App) -> std::io::Result<()> {
    queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    let mut cursor = None;
    terminal.draw(|f| {
        let area = f.area();
        cursor = app.draw(area, f.buffer_mut(), Instant::now());
        if let Some((x, y)) = cursor {
            f.set_cursor_position((x, y));
        }
    })?;
    queue!(terminal.backend_mut(), EndSynchronizedUpdate)?;
    terminal.backend_mut().flush()
}

fn shell_running(shell: &Arc<Mutex<Option<ShellJob>>>) -> bool {
    shell.lock_or_recover().is_some()
}

/// Stop a running `!cmd` and everything it started: TERM to its group, then
/// KILL after the grace period (off the UI thread).
fn kill_shell(shell: &Arc<Mutex<Option<ShellJob>>>) {
    if let Some(mut job) = shell.lock_or_recover().take() {
        match job.pgid {
            // TERM, grace, KILL, off the UI thread.
            Some(pgid) => {
                std::thread::spawn(move || tern_runtime::process::reap_leftovers_blocking(pgid));
            }
            None => {
                let _ = job.killer.kill();
            }
        }
    }
}

/// What the event loop drives: the app, the runtime, and what is running.
struct Driver {
    /// The terminal title and the calls back to the person.
    attention: crate::attention::Attention,
    /// Ctrl+G asked for the external editor (the event loop runs it: it owns the input stream).
    editor_requested: bool,
    app: App,
    runtime: Arc<Runtime>,
    tx: mpsc::UnboundedSender<Msg>,
    /// Whether a prompt runs.
    running: bool,
    shell: Arc<Mutex<Option<ShellJob>>>,
}

impl Driver {
    /// Run `prompt` as a turn in the background (its events come back as
    /// messages); false when it could not start (a command that does not
    /// expand), so the caller can go on with the queue.
    fn start_turn(&mut self, prompt: String) -> bool {
        // `/NAME args` (a custom command or a skill) expands in the session, and the prompt is
        // registered there before anything shows, so an Esc at once reaches it; the transcript
        // shows what was typed until the run says what it expanded to.
        let events_tx = self.tx.clone();
        let events: EventSink = Arc::new(move |e| {
            let _ = events_tx.send(Msg::Agent(e));
        });
        let images = self.app.take_images(&prompt);
        let run = match self.runtime.start_owned(prompt.clone(), images, events) {
            Ok(run) => run,
            Err(e) => {
                self.app.notice(e.to_string(), NoticeLevel::Warning);
                return false;
            }
        };
        self.attention.show(crate::attention::State::Working, &mut std::io::stdout());
        self.running = true;
        self.app.turn_started(&prompt, Instant::now());
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(Msg::Done(Box::new(run.await)));
        });
        true
    }

    /// The turn ended: the next queued prompt, if any (one that cannot start
    /// gives way to the one after).
    fn next_queued(&mut self) {
        while let Some(next) = self.app.turn_finished() {
            self.runtime.remember_prompt(&next);
            if self.start_turn(next) {
                break;
            }
        }
    }

    /// A key, paste or mouse event.
    fn on_input(&mut self, ev: Event) {
        let app = &mut self.app;
        let command = match ev {
            Event::Key(key) => app.on_key(key, Instant::now()),
            Event::Paste(text) => {
                let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
                match crate::image_input::pasted_image_path(&text, home.as_deref()).filter(|_| app.composing()) {
                    // A dropped image file: read off the UI thread, then attached (or pasted as text).
                    Some(path) => read_image(&self.runtime, &self.tx, ImageSource::File(path, text)),
                    None => app.on_paste(&text),
                }
                Command::None
            }
            Event::Mouse(m) => {
                app.on_mouse(m);
                Command::None
            }
            Event::FocusGained => {
                self.attention.focused = true;
                Command::None
            }
            Event::FocusLost => {
                self.attention.focused = false;
                Command::None
            }
            _ => Command::None, // resize: the next draw reflows
        };
        match command {
            Command::None => {}
            Command::Quit => self.app.quit = true,
            Command::Editor => self.editor_requested = true,
            Command::Session(command) => apply(&self.runtime, &self.tx, command),
            // A `!cmd` is the person's own, in a terminal of its own: it stays in the foreground.
            Command::ToBackground if !self.running && shell_running(&self.shell) => self.app.notice(
                "Ctrl+B moves the model's running bash command; a !command stays in the foreground (Esc stops it)",
                NoticeLevel::Info,
            ),
            Command::ToBackground => apply(&self.runtime, &self.tx, SessionCommand::MoveToBackground),
            Command::PasteImage => read_image(&self.runtime, &self.tx, ImageSource::Clipboard),
            Command::Run(prompt) => {
                self.runtime.remember_prompt(&prompt);
                self.start_turn(prompt);
            }
            Command::Interrupt => {
                if self.running {
                    self.runtime.interrupter().interrupt();
                    self.app.activity = "Interrupting".into();
                }
                kill_shell(&self.shell);
            }
            // Stopped before the refusal reaches the loop: it ends there instead of asking the model again.
            Command::StopAtQuestion => {
                if self.running {
                    self.runtime.interrupter().interrupt();
                    self.app.activity = "Interrupting".into();
                }
                self.app.refuse_questions(std::time::Instant::now());
                kill_shell(&self.shell);
            }
            Command::Shell(cmd) => start_shell(cmd, self.runtime.workspace(), &mut self.app, &self.tx, &self.shell),
            Command::Slash(Slash::Init, arg) => {
                let existing = self.runtime.workspace().join(tern_runtime::prompt::INIT_FILE).exists();
                if existing && arg.trim() != "update" {
                    self.app.notice(
                        "AGENTS.md already exists here: `/init update` has tern read it and revise it (the write is \
                         still asked about unless edits are allowed)",
                        NoticeLevel::Warning,
                    );
                } else {
                    self.start_turn(tern_runtime::prompt::init_prompt(existing));
                }
            }
            Command::Slash(command, arg) => slash(command, &arg, &mut self.app, &self.runtime, &self.tx),
        }
    }

    /// A message from a turn, a `!cmd` or the file indexer.
    fn on_msg(&mut self, msg: Msg) {
        let app = &mut self.app;
        match msg {
            Msg::Agent(e) => app.on_agent_event(&e, Instant::now(), |u, model| self.runtime.cost_of_model(u, model)),
            Msg::Ask(request, reply) => app.ask(*request, reply),
            Msg::AskUser(questions, reply) => app.ask_user_at(questions, reply, Instant::now()),
            Msg::Done(report) => {
                self.running = false;
                if report.outcome.stop_reason != tern_protocol::AgentStopReason::Aborted {
                    let ran = app.busy_since.map(|t| t.elapsed()).unwrap_or_default();
                    self.attention.done(ran, &mut std::io::stdout());
                }
                // Questions still on screen belong to the ended turn.
                app.drop_questions();
                let aborted = report.outcome.stop_reason == tern_protocol::AgentStopReason::Aborted;
                if aborted {
                    app.notice("interrupted", NoticeLevel::Warning);
                }
                for n in &report.notices {
                    app.notice(n.clone(), NoticeLevel::Info);
                }
                // Not on disk: said at once, and kept in the status line until a run ends with all of it saved.
                for why in &report.unsaved {
                    app.notice(format!("not saved: {why}"), NoticeLevel::Error);
                }
                app.unsaved = (!report.unsaved.is_empty()).then(|| "session not saved to disk".to_string());
                for d in &report.permission_denials {
                    app.denials.push(format!("{}: {}", d.tool_name, d.reason));
                }
                let extra = app.denials.len().saturating_sub(50);
                app.denials.drain(..extra);
                if aborted {
                    // After an interrupt, queued prompts go back to the composer
                    // instead of being sent behind the person's back.
                    app.turn_finished_keep_queue();
                } else {
                    self.next_queued();
                }
                refresh_files(&self.runtime, &self.tx);
            }
            Msg::Files(list) => app.composer.set_files(list),
            Msg::Notice(text, level) => app.notice(text, level),
            Msg::Image(name, Ok(image), _) => app.attach_image(&name, image),
            // Not an image after all: the path was text to paste.
            Msg::Image(_, Err(tern_runtime::images::ImageRefused::NotAnImage), Some(text)) => app.on_paste(&text),
            Msg::Image(name, Err(why), _) => app.notice(format!("{name} not attached: {why}"), NoticeLevel::Warning),
            Msg::Preview(id, item, lines) => {
                if let Some(p) = app.picker.as_mut().filter(|p| p.id == id) {
                    p.picker.set_preview(item, lines);
                }
            }
            Msg::Resumed(r, cells) => {
                show_resumed(app, &r, *cells);
                crate::picker_driver::refresh(app, &self.runtime);
            }
            Msg::Applied(outcome, quiet) => {
                match *outcome {
                    Ok(Outcome::Mode { .. }) if quiet => {}
                    Ok(outcome) => show_outcome(app, outcome, self.runtime.workspace()),
                    Err(why) => app.notice(why, NoticeLevel::Warning),
                }
                crate::picker_driver::refresh(app, &self.runtime);
            }
            Msg::ShellOutput(cell, chunk) => {
                if let Some(CellKind::Shell(s)) = app.transcript.cell_mut(cell) {
                    s.tail.push(&chunk);
                }
            }
            Msg::ShellDone(cell, code, ms) => {
                if let Some(CellKind::Shell(s)) = app.transcript.cell_mut(cell) {
                    s.exit_code = code;
                    s.duration_ms = Some(ms);
                }
                let mut job = self.shell.lock_or_recover();
                if job.as_ref().is_some_and(|j| j.cell == cell) {
                    *job = None;
                }
                app.shell_running = job.is_some();
            }
        }
    }
}

/// Where an image for the composer comes from.
enum ImageSource {
    /// A pasted path, with the pasted text.
    File(std::path::PathBuf, String),
    /// Ctrl+V.
    Clipboard,
}

/// Read an image off the UI thread; the session checks it (format, size,
/// whether the model reads images) and [`Msg::Image`] brings it back.
fn read_image(runtime: &Arc<Runtime>, tx: &mpsc::UnboundedSender<Msg>, from: ImageSource) {
    let (runtime, tx) = (runtime.clone(), tx.clone());
    tokio::task::spawn_blocking(move || {
        use tern_runtime::ImageFrom;
        let msg = match from {
            ImageSource::File(path, text) => {
                let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
                Msg::Image(name, runtime.prompt_image(ImageFrom::File(&path)), Some(text))
            }
            ImageSource::Clipboard => match crate::image_input::clipboard_image() {
                Ok(bytes) => Msg::Image("clipboard.png".into(), runtime.prompt_image(ImageFrom::Bytes(bytes)), None),
                Err(why) => Msg::Notice(why, NoticeLevel::Warning),
            },
        };
        let _ = tx.send(msg);
    });
}

/// Files change while tern works: reload the `@` completion list off the UI thread.
fn refresh_files(runtime: &Arc<Runtime>, tx: &mpsc::UnboundedSender<Msg>) {
    let root = runtime.workspace().to_path_buf();
    let tx = tx.clone();
    tokio::task::spawn_blocking(move || {
        let _ = tx.send(Msg::Files(crate::widgets::composer::file_index(&root, 50_000)));
    });
}

fn slash(command: Slash, arg: &str, app: &mut App, runtime: &Arc<Runtime>, tx: &mpsc::UnboundedSender<Msg>) {
    match command {
        Slash::Resume | Slash::Fork | Slash::Rename | Slash::Export => session_slash(command, arg, app, runtime, tx),
        Slash::Rewind => rewind_slash(arg, app, runtime, tx),
        Slash::Status => app.notice(runtime.status_lines().join("\n"), NoticeLevel::Info),
        Slash::Config => {
            let words: Vec<&str> = arg.split_whitespace().collect();
            match words.as_slice() {
                [] => {
                    let t = runtime.tui_settings();
                    let show = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| format!("{d} (default)"));
                    let text = format!(
                        "settings (your config: {}), change with /config KEY VALUE:\n  theme          {}\n  notify         {}\n  title          {}\n  print_on_exit  {}\n  vim            {}\n  fullscreen     {}\n  mode           {} (new sessions; this one: {})",
                        runtime.user_config_path().display(),
                        show(&t.theme, "auto"),
                        show(&t.notify, "auto"),
                        t.title.map_or_else(|| "true (default)".to_string(), |b| b.to_string()),
                        show(&t.print_on_exit, "none"),
                        t.vim.map_or_else(|| "false (default)".to_string(), |b| b.to_string()),
                        t.fullscreen.map_or_else(|| "false (default)".to_string(), |b| b.to_string()),
                        runtime.configured_mode().unwrap_or_else(|| "default (default)".into()),
                        runtime.policy().mode()
                    );
                    app.notice(text, NoticeLevel::Info);
                }
                [key, value] => {
                    apply(
                        runtime,
                        tx,
                        SessionCommand::Setting { key: (*key).to_string(), value: (*value).to_string() },
                    );
                }
                _ => app.notice("usage: /config [KEY VALUE]", NoticeLevel::Warning),
            }
        }
        Slash::Permissions => {
            let words: Vec<&str> = arg.split_whitespace().collect();
            match words.as_slice() {
                [] => crate::picker_driver::open_permissions(app, runtime),
                ["list"] => {
                    let mut text = runtime.permissions_report();
                    if app.denials.is_empty() {
                        text.push_str("no call refused in this session");
                    } else {
                        text.push_str("refused in this session, newest last:\n");
                        for d in app.denials.iter().rev().take(10).rev() {
                            text.push_str(&format!("  {d}\n"));
                        }
                    }
                    text.push_str(
                        "\n/permissions allow|ask|deny [session|project|user] RULE (default: project, kept in your \
                         user config) · /permissions remove RULE · /permissions move RULE session|project|user",
                    );
                    app.notice(text.trim_end().to_string(), NoticeLevel::Info);
                }
                [verb @ ("allow" | "ask" | "deny"), rest @ ..] if !rest.is_empty() => {
                    use tern_runtime::RuleKind;
                    let kind = match *verb {
                        "allow" => RuleKind::Allow,
                        "ask" => RuleKind::Ask,
                        _ => RuleKind::Deny,
                    };
                    let (scope, rule) = match tern_runtime::RuleScope::parse(rest[0]) {
                        Some(scope) if rest.len() > 1 => (scope, rest[1..].join(" ")),
                        _ => (tern_runtime::RuleScope::Project, rest.join(" ")),
                    };
                    apply(runtime, tx, SessionCommand::AddRule { kind, rule, scope });
                }
                ["move", rest @ .., to] if !rest.is_empty() => match tern_runtime::RuleScope::parse(to) {
                    Some(scope) => apply(runtime, tx, SessionCommand::MoveRule { rule: rest.join(" "), to: scope }),
                    None => app.notice("usage: /permissions move RULE session|project|user", NoticeLevel::Warning),
                },
                ["remove", rule @ ..] if !rule.is_empty() => {
                    apply(runtime, tx, SessionCommand::RemoveRule { rule: rule.join(" ") });
                }
                _ => app.notice(
                    "usage: /permissions [list | allow|ask|deny [session|project|user] RULE | remove RULE | move RULE SCOPE]",
                    NoticeLevel::Warning,
                ),
            }
        }
        Slash::Doctor => {
            app.notice("checking…", NoticeLevel::Info);
            let (rt, tx) = (runtime.clone(), tx.clone());
            tokio::spawn(async move {
                let checks = rt.health_checks(false).await;
                let level = if checks.iter().all(|c| c.ok) { NoticeLevel::Info } else { NoticeLevel::Warning };
                let _ = tx.send(Msg::Notice(tern_runtime::health::HealthCheck::render(&checks), level));
            });
        }
        Slash::Tasks => {
            let words: Vec<&str> = arg.split_whitespace().collect();
            match words.as_slice() {
                [] => {
                    let tasks = runtime.background_tasks();
                    let text = if tasks.is_empty() {
                        "no background tasks (the model starts them with bash or task run_in_background)".to_string()
                    } else {
                        tasks.iter().map(task_entry).collect::<Vec<_>>().join("\n")
                    };
                    app.notice(text, NoticeLevel::Info);
                }
                ["stop", id] => apply(runtime, tx, SessionCommand::StopTask { id: (*id).to_string() }),
                _ => app.notice("usage: /tasks [stop ID]", NoticeLevel::Warning),
            }
        }
        Slash::Theme => {
            let word = arg.trim();
            if word.is_empty() {
                app.picker = Some(crate::pickers::theme(app.theme.palette));
            } else {
                let palette = crate::theme::Palette::parse(Some(word));
                app.set_theme(app.theme.with_palette(palette));
                app.notice(format!("theme {palette:?}"), NoticeLevel::Info);
            }
        }
        Slash::Context => {
            let (rt, tx) = (runtime.clone(), tx.clone());
            tokio::spawn(async move {
                let report = rt.context_report().await;
                let _ = tx.send(Msg::Notice(report.render().trim_end().to_string(), NoticeLevel::Info));
            });
        }
        Slash::Compact => {
            app.notice("compacting the conversation…", NoticeLevel::Info);
            let focus = Some(arg.trim().to_string()).filter(|f| !f.is_empty());
            apply(runtime, tx, SessionCommand::Compact { focus });
        }
        Slash::Tools => {
            let text = runtime.assemble_catalog().render_text(true);
            app.notice(text.trim_end().to_string(), NoticeLevel::Info);
        }
        Slash::Mcp if !arg.trim().is_empty() => {
            let words: Vec<&str> = arg.split_whitespace().collect();
            let server = |name: &str| name.to_string();
            match words.as_slice() {
                ["reconnect", name] => apply(runtime, tx, SessionCommand::ReconnectMcp { server: server(name) }),
                ["enable", name] => {
                    apply(runtime, tx, SessionCommand::SetMcpEnabled { server: server(name), enabled: true })
                }
                ["disable", name] => {
                    apply(runtime, tx, SessionCommand::SetMcpEnabled { server: server(name), enabled: false })
                }
                _ => app.notice("usage: /mcp [reconnect|enable|disable NAME]", NoticeLevel::Warning),
            }
        }
        Slash::Mcp => {
            let servers = runtime.mcp_servers();
            let text = if servers.is_empty() {
                "No MCP servers configured ([mcp_servers.NAME] in config, .mcp.json, or --mcp-config).".to_string()
            } else {
                servers
                    .iter()
                    .map(|s| {
                        let detail = s.detail.clone().unwrap_or_else(|| s.transport.clone());
                        format!("{}  {}  {} tools  {detail}", s.name, s.state, s.tool_count)
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            app.notice(text, NoticeLevel::Info);
        }
        Slash::Model if arg.trim().is_empty() => crate::picker_driver::open_model(app, runtime),
        Slash::Model => apply(runtime, tx, SessionCommand::SetModel { model: Some(arg.trim().to_string()) }),
        Slash::Clear => {
            // The screen starts afresh at once; what runs after this is the new conversation's.
            app.transcript.clear();
            app.todos.clear();
            app.last_prompt_tokens = 0;
            app.notice("new conversation", NoticeLevel::Info);
            apply(runtime, tx, SessionCommand::Clear);
        }
        Slash::Mode => match arg.trim() {
            "" => app.notice(
                format!(
                    "permission mode: {} (Shift+Tab cycles; /mode default|accept-edits|plan)",
                    runtime.policy().mode()
                ),
                NoticeLevel::Info,
            ),
            "next" => apply(runtime, tx, SessionCommand::CycleMode),
            other => match other.parse::<Mode>() {
                Ok(mode) => apply(runtime, tx, SessionCommand::SetMode { mode }),
                Err(e) => app.notice(e.to_string(), NoticeLevel::Warning),
            },
        },
        Slash::Help | Slash::Cost | Slash::Todos | Slash::Quit | Slash::Init | Slash::Vim => {}
    }
}

/// `path` with `~` for the home directory.
fn home_relative(path: &std::path::Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        Some(rel) => format!("~/{}", rel.display()),
        None => path.display().to_string(),
    }
}

/// `path` relative to the workspace when inside it, else with `~` for home.
fn shown_path(path: &std::path::Path, workspace: &std::path::Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => home_relative(path),
    }
}

/// `/rewind`: with no argument, the prompts to go back to; `/rewind N
/// [code|conversation] [force]` goes back to before prompt N (both by default).
fn rewind_slash(arg: &str, app: &mut App, runtime: &Arc<Runtime>, tx: &mpsc::UnboundedSender<Msg>) {
    let words: Vec<&str> = arg.split_whitespace().collect();
    let Some(first) = words.first() else {
        let turns = runtime.checkpoints().turns();
        if turns.is_empty() {
            app.notice("no prompt to go back to yet", NoticeLevel::Info);
            return;
        }
        app.picker = Some(crate::pickers::rewind(&turns));
        return;
    };
    let Ok(number) = first.parse::<usize>() else {
        app.notice("usage: /rewind [N [code|conversation] [force]]", NoticeLevel::Warning);
        return;
    };
    let (code, conversation) = match words.get(1).copied() {
        Some("code" | "files") => (true, false),
        Some("conversation" | "chat") => (false, true),
        _ => (true, true),
    };
    let force = words.contains(&"force");
    apply(runtime, tx, SessionCommand::Rewind { prompt: number, code, conversation, force });
}

/// What a command the session applied did, in the transcript and the status line.
/// `/resume` switched to another session: its cells replace this one's.
fn show_resumed(app: &mut App, r: &tern_runtime::Resumed, cells: Transcript) {
    app.transcript.replace_cells(cells);
    app.todos = r.todos.clone();
    app.last_prompt_tokens = 0;
    let title = r.title.as_deref().map(|t| format!(" “{t}”")).unwrap_or_default();
    app.notice(format!("resumed session {}{title}: {} messages", r.from, r.message_count), NoticeLevel::Info);
    for n in &r.notices {
        app.notice(format!("warning: {n}"), NoticeLevel::Warning);
    }
}

fn show_outcome(app: &mut App, outcome: Outcome, workspace: &std::path::Path) {
    match outcome {
        Outcome::Ran(_) | Outcome::Interrupted(_) => {}
        Outcome::Renamed(title) => app.notice(format!("session named “{title}”"), NoticeLevel::Info),
        Outcome::Mode { mode, .. } => app.notice(format!("permission mode: {mode}"), NoticeLevel::Info),
        Outcome::Model { model, warning } => {
            app.notice(
                format!("model {model} from the next turn · context window {} tokens", app.context_window),
                NoticeLevel::Info,
            );
            if let Some(w) = warning {
                app.notice(w, NoticeLevel::Warning);
            }
        }
        Outcome::Compacted(c) => app.notice(
            format!(
                "compacted: ~{} → ~{} tokens; {} old tool results saved as receipts, {} latest messages kept (Ctrl+O on the summary shows it)",
                c.tokens_before, c.tokens_after, c.archived, c.kept
            ),
            NoticeLevel::Info,
        ),
        Outcome::NothingToCompact(why) => app.notice(why, NoticeLevel::Info),
        // Shown when it was asked (`/clear`).
        Outcome::Cleared => {}
        Outcome::Rewound { number, restored: r, prompt, conversation } => {
            let list =
                |v: &[std::path::PathBuf]| v.iter().map(|p| shown_path(p, workspace)).collect::<Vec<_>>().join(", ");
            let mut text = format!("went back to before prompt {number}");
            if let Some(r) = &r {
                text.push_str(&format!(": {} file(s) restored, {} removed", r.restored.len(), r.removed.len()));
            }
            let r = r.unwrap_or_default();
            let mut level = NoticeLevel::Info;
            if !r.conflicts.is_empty() {
                level = NoticeLevel::Warning;
                text.push_str(&format!(
                    "\nleft alone, changed since tern wrote them: {} (`/rewind {number} code force` puts them back anyway)",
                    list(&r.conflicts)
                ));
            }
            for (path, why) in &r.failed {
                level = NoticeLevel::Warning;
                text.push_str(&format!("\n{} could not be put back: {why}", shown_path(path, workspace)));
            }
            if let Some(messages) = conversation {
                // The calls kept keep the figures their cells had.
                let runs = app.transcript.tool_runs();
                app.transcript.clear();
                app.transcript.replay_with(&messages, &runs);
                app.last_prompt_tokens = 0;
                if app.composer.is_empty() {
                    app.composer.set_text(&prompt);
                }
            }
            app.notice(text, level);
        }
        // `apply` sends a resume as `Msg::Resumed`, with its cells; nothing else applies one.
        Outcome::Resumed(r) => show_resumed(app, &r, Transcript::new()),
        Outcome::Forked(id) => app.notice(
            format!("forked: going on in session {id}; the earlier one is unchanged"),
            NoticeLevel::Info,
        ),
        Outcome::Exported(path) => {
            app.notice(format!("conversation written to {}", path.display()), NoticeLevel::Info)
        }
        Outcome::TaskStopped(t) => app.notice(format!("{} stopped", t.id), NoticeLevel::Info),
        Outcome::MovedToBackground { moved, refused } => {
            if !moved.is_empty() {
                app.notice(
                    format!("{} goes on in the background (/tasks lists it; /tasks stop ID ends it)", moved.join(", ")),
                    NoticeLevel::Info,
                );
            }
            for why in refused {
                app.notice(format!("not sent to the background: {why}"), NoticeLevel::Warning);
            }
        }
        Outcome::McpServer(s) => {
            let detail = s.detail.map(|d| format!(": {d}")).unwrap_or_default();
            app.notice(format!("MCP server {} is {} ({} tools){detail}", s.name, s.state, s.tool_count), NoticeLevel::Info)
        }
        Outcome::Rule { kind, rule, scope, file, moved } => {
            let saved = file.map(|f| format!(" (saved in {})", f.display())).unwrap_or_default();
            let what = if moved {
                format!("`{rule}` now holds {}", scope.describe())
            } else {
                format!("{kind} `{rule}` {}", scope.describe())
            };
            app.notice(format!("{what}{saved}"), NoticeLevel::Info);
        }
        Outcome::RuleRemoved { rule, places } => {
            if places.is_empty() {
                app.notice(format!("no rule `{rule}` to remove (/permissions lists them)"), NoticeLevel::Warning);
            } else {
                app.notice(format!("`{rule}` removed from {}", places.join("; ")), NoticeLevel::Info);
            }
        }
        Outcome::Setting { key, value, file } => {
            if key == "theme" {
                app.set_theme(app.theme.with_palette(crate::theme::Palette::parse(Some(&value))));
            }
            app.notice(
                format!("{key} = {value}, kept in {} (from the next start where it is not live)", file.display()),
                NoticeLevel::Info,
            );
        }
    }
}

/// `/resume`, `/fork`, `/rename`, `/export`: the session commands. The
/// slow ones run off the UI thread and answer with a message.
fn session_slash(command: Slash, arg: &str, app: &mut App, runtime: &Arc<Runtime>, tx: &mpsc::UnboundedSender<Msg>) {
    let arg = arg.trim();
    match command {
        Slash::Resume if arg.is_empty() => crate::picker_driver::open_resume(app, runtime),
        Slash::Resume => apply(runtime, tx, SessionCommand::Resume { id: arg.trim().to_string() }),
        Slash::Fork => apply(runtime, tx, SessionCommand::Fork),
        Slash::Rename => apply(runtime, tx, SessionCommand::Rename { title: arg.trim().to_string(), session: None }),
        Slash::Export => apply(runtime, tx, SessionCommand::Export { file: arg.trim().to_string() }),
        _ => {}
    }
}

/// `!cmd`: run it with `bash -c` in a pseudo-terminal in the workspace and
/// stream its output into a shell cell.
fn start_shell(
    cmd: String,
    workspace: &std::path::Path,
    app: &mut App,
    tx: &mpsc::UnboundedSender<Msg>,
    shell: &Arc<Mutex<Option<ShellJob>>>,
) {
    if shell_running(shell) {
        app.notice("a shell command is already running (Esc stops it)", NoticeLevel::Warning);
        return;
    }
    app.transcript.clear_selection();
    let cell = app.transcript.push(CellKind::Shell(ShellCell {
        command: cmd.clone(),
        tail: OutputTail::new(500),
        started: Instant::now(),
        exit_code: None,
        duration_ms: None,
        expanded: false,
    }));
    let pty = portable_pty::native_pty_system();
    let size = portable_pty::PtySize { rows: 24, cols: app.last_width.max(20), pixel_width: 0, pixel_height: 0 };
    let spawned = pty.openpty(size).map_err(|e| e.to_string()).and_then(|pair| {
        let mut builder = portable_pty::CommandBuilder::new("bash");
        builder.args(["-c", &cmd]);
        builder.env("TERM", "dumb");
        builder.cwd(workspace);
        let child = pair.slave.spawn_command(builder).map_err(|e| e.to_string())?;
        let reader = pair.master.try_clone_reader().map_err(|e| e.to_string())?;
        Ok((child, reader, pair.master))
    });
    let (mut child, mut reader, master) = match spawned {
        Ok(parts) => parts,
        Err(e) => {
            app.notice(format!("could not start `{cmd}`: {e}"), NoticeLevel::Error);
            return;
        }
    };
    let pgid = child.process_id();
    *shell.lock_or_recover() = Some(ShellJob { cell, killer: child.clone_killer(), pgid });
    app.shell_running = true;
    let started = Instant::now();
    let out_tx = tx.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        let mut decoder = tern_runtime::process::Utf8Carry::default();
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let text = decoder.decode(&buf[..n]);
                    if !text.is_empty() {
                        let _ = out_tx.send(Msg::ShellOutput(cell, text));
                    }
                }
            }
        }
    });
    let done_tx = tx.clone();
    std::thread::spawn(move || {
        let code = child.wait().ok().map(|s| s.exit_code() as i32);
        // Background jobs it left behind go with it.
        if let Some(pgid) = pgid {
            tern_runtime::process::reap_leftovers_blocking(pgid);
        }
        drop(master);
        let _ = done_tx.send(Msg::ShellDone(cell, code, started.elapsed().as_millis() as u64));
    });
}

/// Whether the terminal speaks the kitty keyboard protocol (so Shift+Enter
/// and other modified keys are reported), asked of the terminal itself;
/// `None` when it cannot be asked (not a terminal, no answer).
pub fn keyboard_protocol() -> Option<bool> {
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return None;
    }
    crossterm::terminal::supports_keyboard_enhancement().ok()
}

/// One background task as `/tasks` lists it; a subagent with its progress.
fn task_entry(t: &tern_protocol::TaskSummary) -> String {
    let mut out =
        format!("{}  {}  {}s  {}", t.id, t.status, t.elapsed_ms / 1000, t.command.lines().next().unwrap_or_default());
    if let Some(report) = &t.subagent {
        for line in report.describe().lines() {
            out.push_str(&format!("\n    {line}"));
        }
    }
    out.push_str(&format!("\n    log: {}", t.log.display()));
    out
}
