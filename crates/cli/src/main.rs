//! The `tern` binary. Headless print mode (`tern -p`) and the inspection
//! subcommands (`tern tools`, `tern mcp list`) live here; the interactive
//! TUI arrives with its own crate.

#![deny(clippy::print_stdout, clippy::print_stderr)]

/// A line on stderr that cannot panic (`eprintln!` panics when stderr is a
/// closed pipe); see `tern_runtime::ending`.
macro_rules! errln {
    ($($arg:tt)*) => {
        tern_runtime::ending::say_line(&format!($($arg)*))
    };
}

/// A line on stdout that cannot panic (`println!` panics when stdout is a
/// closed pipe); see `tern_runtime::ending`.
macro_rules! outln {
    ($($arg:tt)*) => {
        tern_runtime::ending::write_stdout(format!("{}\n", format_args!($($arg)*)).as_bytes())
    };
}

mod cli;
mod completion;
mod doctor;
mod inspect;

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use clap::Parser;
use cli::*;

use tern_headless as headless;
pub(crate) use tern_headless::{say, with_runtime};
pub use tern_protocol::exit;

impl Common {
    fn overrides(&self) -> tern_runtime::Overrides {
        tern_runtime::Overrides {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            cwd: self.cwd.clone(),
            disallowed_tools: self
                .disallowed_tools
                .iter()
                .flat_map(|s| tern_policy::rules::split_rule_list(s))
                .collect(),
            allowed_tools: self.allowed_tools.iter().flat_map(|s| tern_policy::rules::split_rule_list(s)).collect(),
            permission_mode: if self.dangerously_skip_permissions {
                Some("bypass".into())
            } else {
                self.permission_mode.clone()
            },
            allow_bypass: self.allow_dangerously_skip_permissions,
            add_dirs: self.add_dir.clone(),
            mcp_config: self.mcp_config.clone(),
            trust: self.trust,
            sandbox: self.sandbox.clone(),
            strict_mcp_config: self.strict_mcp_config,
            tools: self.tools.as_deref().map(tern_policy::rules::split_rule_list),
            thinking_budget: self.thinking_budget(),
            max_budget_usd: self.max_budget_usd,
            json_schema: self.json_schema.as_deref().and_then(|s| tern_runtime::parse_schema(s).ok()),
            fallback_model: self.fallback_model.clone(),
            tool_call_format: self.tool_call_format.as_deref().map(|f| match f {
                "text" => tern_runtime::ToolCallFormat::Text,
                "prompt" => tern_runtime::ToolCallFormat::Prompt,
                _ => tern_runtime::ToolCallFormat::Native,
            }),
            betas: self.betas.iter().flat_map(|b| tern_policy::rules::split_rule_list(b)).collect(),
            notes: self.unapplied(),
            claude_settings: self.settings.clone(),
            setting_sources: self.setting_sources.clone(),
            ..Default::default()
        }
    }
}

impl Common {
    /// The thinking budget the flags ask for: --max-thinking-tokens, else
    /// --effort, else --thinking (`disabled` is none; `adaptive`, the config's).
    /// The values were checked by [`Common::check`].
    fn thinking_budget(&self) -> Option<u64> {
        self.max_thinking_tokens
            .or_else(|| self.effort.as_deref().and_then(|e| tern_runtime::effort_budget(e).ok()))
            .or_else(|| match self.thinking.as_deref() {
                Some("disabled") => Some(0),
                Some("enabled") => Some(tern_runtime::effort_budget("medium").unwrap_or(8192)),
                _ => None,
            })
    }

    /// The Agent SDK flags tern takes without applying, each named.
    fn unapplied(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(mode) = &self.thinking_display {
            notes.push(format!("--thinking-display {mode}: not applied (tern shows thinking as it streams)"));
        }
        for dir in &self.plugin_dir {
            notes.push(format!("--plugin-dir {}: not applied (tern does not load Claude Code plugins)", dir.display()));
        }
        if let Some(budget) = &self.task_budget {
            notes.push(format!("--task-budget {budget}: not applied (tern has no task budget)"));
        }
        if self.session_mirror {
            notes.push("--session-mirror: not applied (tern writes its own session files; docs/sessions.md)".into());
        }
        if self.include_hook_events {
            notes.push("--include-hook-events: not applied (tern's stream-json carries no hook events)".into());
        }
        notes
    }

    /// The flag values clap cannot check; what is wrong, said so a person can fix it.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(effort) = &self.effort {
            tern_runtime::effort_budget(effort).map_err(|e| format!("--effort: {e}"))?;
        }
        if let Some(mode) = self.thinking.as_deref()
            && !matches!(mode, "adaptive" | "enabled" | "disabled")
        {
            return Err(format!("--thinking: `{mode}` is not a mode; use adaptive, enabled or disabled"));
        }
        if let Some(usd) = self.max_budget_usd
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(format!("--max-budget-usd: `{usd}` is not a positive amount of dollars"));
        }
        if let Some(schema) = &self.json_schema {
            tern_runtime::parse_schema(schema).map_err(|e| e.to_string())?;
        }
        if self.resume_session_at.is_some() || self.resume_drops_turn.is_some() {
            return Err("--resume-session-at / --resume-drops-turn: tern resumes a whole session; resume it with \
                        --resume ID and go back with /rewind in the TUI"
                .into());
        }
        Ok(())
    }
}

impl Cli {
    /// `--system-prompt-file` and `--append-system-prompt-file`, read into
    /// the flags they stand for.
    fn read_prompt_files(&mut self) -> Result<(), String> {
        let read = |path: &std::path::Path, flag: &str| {
            std::fs::read_to_string(path).map_err(|e| format!("{flag}: cannot read {}: {e}", path.display()))
        };
        if let Some(path) = &self.system_prompt_file {
            self.system_prompt = Some(read(path, "--system-prompt-file")?);
        }
        if let Some(path) = &self.append_system_prompt_file {
            self.append_system_prompt = Some(read(path, "--append-system-prompt-file")?);
        }
        Ok(())
    }

    /// The common overrides plus which session to go on with.
    fn session_overrides(&self) -> tern_runtime::Overrides {
        let resume = match (&self.resume, self.continue_session) {
            (Some(Some(id)), _) => Some(tern_runtime::Resume::Id(id.clone())),
            (Some(None), _) | (None, true) => Some(tern_runtime::Resume::Latest),
            (None, false) => None,
        };
        tern_runtime::Overrides {
            resume,
            fork_session: self.fork_session,
            no_session: self.no_session,
            session_id: self.session_id.clone(),
            agent: self.agent.clone(),
            ..self.common.overrides()
        }
    }
}

fn main() -> ExitCode {
    // `read` parses PDFs in a child of this binary under rlimits (tern_tools::pdf_child).
    if std::env::args_os().nth(1).is_some_and(|a| a == tern_tools::pdf_child::HELPER_ARG) {
        let args: Vec<String> = std::env::args_os().skip(2).take(2).map(|a| a.to_string_lossy().into_owned()).collect();
        return ExitCode::from(tern_tools::pdf_child::child_main(&args));
    }
    if let Ok(program) = std::env::current_exe() {
        tern_tools::pdf_child::register_program(program);
    }
    harden_process();
    completion::answer_if_asked();
    let mut cli = Cli::parse();
    // `tern -r "fix the test"`: what follows -r is a prompt, not an id (ids
    // are letters, digits and dashes), when no other prompt was given.
    if let Some(Some(word)) = &cli.resume
        && cli.prompt.is_none()
        && !tern_runtime::session::valid_id(word)
    {
        cli.prompt = Some(word.clone());
        cli.resume = Some(None);
    }
    if let Err(msg) = cli.common.check().and_then(|()| cli.read_prompt_files()) {
        errln!("tern: {msg}");
        return ExitCode::from(exit::USAGE);
    }
    match cli.command {
        Some(Command::Tools(args)) => {
            let mut overrides = cli.common.overrides();
            overrides.agent = args.agent;
            overrides.role = args.role;
            return ExitCode::from(inspect::tools(overrides, args.explain, args.json));
        }
        Some(Command::Mcp(McpCommand::List { json })) => {
            return ExitCode::from(inspect::mcp_list(cli.common.overrides(), json));
        }
        Some(Command::Permissions(PermissionsCommand::Check { call, input, json })) => {
            return ExitCode::from(inspect::permissions_check(cli.common.overrides(), &call, input.as_deref(), json));
        }
        Some(Command::Permissions(PermissionsCommand::List { json })) => {
            return ExitCode::from(inspect::permissions_list(cli.common.overrides(), json));
        }
        Some(Command::Sessions(SessionsCommand::List { all, json })) => {
            return ExitCode::from(inspect::sessions_list(cli.common.cwd.clone(), all, json));
        }
        Some(Command::Sessions(SessionsCommand::Show { id })) => {
            return ExitCode::from(inspect::sessions_export(cli.common.cwd.clone(), &id, ExportFormat::Markdown));
        }
        Some(Command::Sessions(SessionsCommand::Export { id, format })) => {
            return ExitCode::from(inspect::sessions_export(cli.common.cwd.clone(), &id, format));
        }
        Some(Command::Init(args)) => return ExitCode::from(init(cli.common.overrides(), &args)),
        Some(Command::Context(args)) => {
            let mut overrides = cli.common.overrides();
            overrides.ephemeral = true;
            overrides.resume = match (args.resume, args.continue_session) {
                (Some(id), _) => Some(tern_runtime::Resume::Id(id)),
                (None, true) => Some(tern_runtime::Resume::Latest),
                (None, false) => None,
            };
            return ExitCode::from(inspect::context(overrides, args.json));
        }
        Some(Command::Skills(ListCommand::List { json })) => {
            return ExitCode::from(inspect::skills_list(cli.common.overrides(), json));
        }
        Some(Command::Commands(ListCommand::List { json })) => {
            return ExitCode::from(inspect::commands_list(cli.common.overrides(), json));
        }
        Some(Command::Completions { shell }) => {
            let written = completion::script(shell).and_then(|script| {
                let mut out = std::io::stdout().lock();
                out.write_all(&script).and_then(|()| out.flush())
            });
            return match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    errln!("tern: cannot write the completion script: {e}");
                    ExitCode::from(exit::FAILED)
                }
            };
        }
        Some(Command::Man) => {
            let page = include_bytes!(concat!(env!("OUT_DIR"), "/tern.1"));
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(page).and_then(|()| out.flush());
            return ExitCode::SUCCESS;
        }
        Some(Command::Acp) => {
            let overrides = tern_runtime::Overrides {
                max_turns: cli.max_turns,
                append_system_prompt: cli.append_system_prompt.clone(),
                system_prompt: cli.system_prompt.clone(),
                front_end: Some(tern_catalog::FrontEnd::Headless),
                ..cli.common.overrides()
            };
            return ExitCode::from(tern_acp::run(overrides));
        }
        Some(Command::MediaCli(command)) => return ExitCode::from(media_cli(command, cli.common.overrides())),
        Some(Command::Doctor(args)) => {
            return ExitCode::from(doctor::run(cli.common.overrides(), args.offline, args.json));
        }
        Some(Command::Trust(args)) => {
            let dir = args.dir.or(cli.common.cwd.clone());
            return ExitCode::from(inspect::trust(dir, args.list, args.remove));
        }
        None => {}
    }
    if cli.input_format == InputFormat::StreamJson {
        cli.print = true;
    }
    if !cli.print {
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            errln!(
                "tern: the interactive TUI needs a terminal on stdin and stdout; run a prompt headless with `tern -p \"...\"` (see `tern --help`)"
            );
            return ExitCode::from(exit::USAGE);
        }
        let overrides = tern_runtime::Overrides {
            max_turns: cli.max_turns,
            append_system_prompt: cli.append_system_prompt.clone(),
            system_prompt: cli.system_prompt.clone(),
            front_end: Some(tern_catalog::FrontEnd::Tui),
            ..cli.session_overrides()
        };
        let initial = cli.prompt.clone();
        let pick = matches!(cli.resume, Some(None));
        return ExitCode::from(tui(overrides, initial, pick));
    }
    if let Err(msg) = check_headless_flags(&cli) {
        errln!("tern: {msg}");
        return ExitCode::from(exit::USAGE);
    }
    let prompt = if cli.input_format == InputFormat::StreamJson {
        None
    } else {
        match read_prompt(cli.prompt.clone()) {
            Ok(p) => Some(p),
            Err(msg) => {
                errln!("tern: {msg}");
                return ExitCode::from(exit::USAGE);
            }
        }
    };
    let overrides = tern_runtime::Overrides {
        max_turns: cli.max_turns,
        append_system_prompt: cli.append_system_prompt.clone(),
        system_prompt: cli.system_prompt.clone(),
        front_end: Some(tern_catalog::FrontEnd::Headless),
        ..cli.session_overrides()
    };
    let options = headless::Options {
        format: cli.output_format.into(),
        input: cli.input_format.into(),
        verbose: cli.verbose,
        partial: cli.include_partial_messages,
        replay: cli.replay_user_messages,
        stdio_permissions: cli.permission_prompt_tool.is_some(),
    };
    ExitCode::from(headless::run(prompt, overrides, options))
}

/// The headless flags that only make sense together.
fn check_headless_flags(cli: &Cli) -> Result<(), String> {
    if cli.input_format == InputFormat::StreamJson {
        if cli.output_format != OutputFormat::StreamJson {
            return Err("--input-format stream-json needs --output-format stream-json".into());
        }
        if cli.prompt.is_some() {
            return Err(
                "--input-format stream-json reads its prompts from stdin; drop the prompt argument (or send it as                  the first user message)"
                    .into(),
            );
        }
    }
    if cli.include_partial_messages && cli.output_format != OutputFormat::StreamJson {
        return Err("--include-partial-messages needs --output-format stream-json".into());
    }
    if cli.replay_user_messages && cli.input_format != InputFormat::StreamJson {
        return Err("--replay-user-messages needs --input-format stream-json (it prints back the messages read)".into());
    }
    match cli.permission_prompt_tool.as_deref() {
        None => {}
        Some("stdio") if cli.input_format == InputFormat::StreamJson => {}
        Some("stdio") => {
            return Err(
                "--permission-prompt-tool stdio needs --input-format stream-json (answers come on stdin)".into()
            );
        }
        Some(other) => {
            return Err(format!(
                "--permission-prompt-tool {other}: tern asks only over `stdio` (control requests); an MCP tool as                  the prompt is not supported"
            ));
        }
    }
    Ok(())
}

/// `tern init`: a headless run of the `/init` prompt that may write AGENTS.md
/// (and nothing else) without asking.
fn init(mut overrides: tern_runtime::Overrides, args: &InitArgs) -> u8 {
    let cwd = match tern_runtime::resolve_workspace(&overrides) {
        Ok(w) => w,
        Err(e) => {
            errln!("tern: {e}");
            return exit::USAGE;
        }
    };
    let file = tern_runtime::prompt::INIT_FILE;
    let existing = cwd.join(file).exists();
    if existing && !args.update {
        errln!(
            "tern: {} already exists; `tern init --update` has tern read it and revise it",
            cwd.join(file).display()
        );
        return exit::USAGE;
    }
    overrides.allowed_tools.extend([format!("write({file})"), format!("edit({file})")]);
    overrides.front_end = Some(tern_catalog::FrontEnd::Headless);
    let options = headless::Options {
        format: headless::OutputFormat::Text,
        input: headless::InputFormat::Text,
        verbose: args.verbose,
        partial: false,
        replay: false,
        stdio_permissions: false,
    };
    headless::run(Some(tern_runtime::prompt::init_prompt(existing)), overrides, options)
}

/// The interactive front end. Setup problems are printed before the screen
/// is taken over; so is the trust question, when the folder's project would
/// run or widen something and the folder is not trusted yet.
fn tui(overrides: tern_runtime::Overrides, initial: Option<String>, pick: bool) -> u8 {
    let builder = match tern_runtime::RuntimeBuilder::new(overrides) {
        Ok(b) => b,
        Err(e) => {
            errln!("tern: {e}");
            return exit::USAGE;
        }
    };
    let builder = match builder.trust_question() {
        None => builder,
        Some(q) => match tern_tui::trust_prompt::ask(&q) {
            Ok(tern_tui::trust_prompt::TrustChoice::Always) => {
                if let Err(e) = tern_runtime::trust::save_trusted(&q.user_config, &q.workspace) {
                    errln!("tern: {e}");
                    return exit::FAILED;
                }
                match builder.trusted_for_this_run() {
                    Ok(b) => b,
                    Err(e) => {
                        errln!("tern: {e}");
                        return exit::USAGE;
                    }
                }
            }
            Ok(tern_tui::trust_prompt::TrustChoice::Once) => match builder.trusted_for_this_run() {
                Ok(b) => b,
                Err(e) => {
                    errln!("tern: {e}");
                    return exit::USAGE;
                }
            },
            Ok(tern_tui::trust_prompt::TrustChoice::No) => builder,
            Ok(tern_tui::trust_prompt::TrustChoice::Quit) => return exit::SUCCESS,
            Err(e) => {
                errln!("tern: terminal error: {e}");
                return exit::FAILED;
            }
        },
    };
    // `--resume` with no id: pick one of this folder's sessions.
    let builder = if pick {
        if builder.sessions().is_empty() {
            errln!(
                "tern: no session to resume in this folder; starting a new one (every folder's: tern sessions list --all)"
            );
            builder.resume(None)
        } else {
            let sessions = builder.sessions_everywhere();
            match tern_tui::resume_picker::ask(sessions, &builder.sessions_dir(), builder.workspace()) {
                Ok(tern_tui::resume_picker::Pick::Session(id)) => builder.resume(Some(tern_runtime::Resume::Id(id))),
                Ok(tern_tui::resume_picker::Pick::New) => builder.resume(None),
                Ok(tern_tui::resume_picker::Pick::Quit) => return exit::SUCCESS,
                Err(e) => {
                    errln!("tern: terminal error: {e}");
                    return exit::FAILED;
                }
            }
        }
    } else {
        builder
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            errln!("tern: cannot start the async runtime: {e}");
            return exit::FAILED;
        }
    };
    rt.block_on(async move {
        let runtime = match builder.build().await {
            Ok(r) => r,
            Err(e) => {
                errln!("tern: {e}");
                return exit::USAGE;
            }
        };
        match tern_tui::run(runtime, initial).await {
            Ok(code) => code,
            Err(e) => {
                errln!("tern: terminal error: {e}");
                exit::FAILED
            }
        }
    })
}

/// `tern media-cli install|status|remove`.
fn media_cli(command: MediaCliCommand, overrides: tern_runtime::Overrides) -> u8 {
    use tern_runtime::media_cli;
    let paths = match tern_runtime::TernPaths::discover() {
        Ok(p) => p,
        Err(e) => {
            say(&format!("error: {e}"));
            return 2;
        }
    };
    let data = &paths.data_dir;
    match command {
        MediaCliCommand::Install { from } => {
            let source = from.map_or(media_cli::Source::Npm, media_cli::Source::Dir);
            match media_cli::install(data, &source) {
                Ok(done) => {
                    outln!("{done}");
                    0
                }
                Err(e) => {
                    say(&format!("error: {e}"));
                    1
                }
            }
        }
        MediaCliCommand::Status { json } => {
            // As a session here would find it: `[media_cli] enabled` applies.
            let found = match tern_runtime::RuntimeBuilder::new(overrides) {
                Ok(builder) => builder.media_cli(),
                Err(e) => {
                    say(&format!("error: {e}"));
                    return 2;
                }
            };
            if json {
                outln!("{}", serde_json::to_string(&found).unwrap_or_default());
            } else {
                outln!("{}", found.summary());
            }
            u8::from(!matches!(found.state, media_cli::MediaState::Ready | media_cli::MediaState::Missing))
        }
        MediaCliCommand::Remove => match media_cli::remove(data) {
            Ok(true) => {
                outln!("removed the media CLI from {}", media_cli::bin_dir(data).display());
                0
            }
            Ok(false) => {
                outln!("the media CLI was not installed");
                0
            }
            Err(e) => {
                say(&format!("error: {e}"));
                1
            }
        },
    }
}

/// Make tern's own process unreadable to the commands it runs: its
/// environment holds the API key, and `/proc/<pid>/environ` of a process
/// of the same user is readable unless the process is not dumpable (the
/// sandbox does not cover it). Children are dumpable again after `exec`.
fn harden_process() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) only changes a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// The prompt from the argument, else from stdin when it is not a terminal.
fn read_prompt(arg: Option<String>) -> Result<String, String> {
    let prompt = match arg {
        Some(p) => p,
        None if !std::io::stdin().is_terminal() => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
            s
        }
        None => return Err("no prompt: pass it as an argument (`tern -p \"...\"`) or pipe it on stdin".into()),
    };
    if prompt.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(prompt)
}

impl From<OutputFormat> for tern_headless::OutputFormat {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Text => Self::Text,
            OutputFormat::Json => Self::Json,
            OutputFormat::StreamJson => Self::StreamJson,
            OutputFormat::TernEvents => Self::TernEvents,
        }
    }
}

impl From<InputFormat> for tern_headless::InputFormat {
    fn from(f: InputFormat) -> Self {
        match f {
            InputFormat::Text => Self::Text,
            InputFormat::StreamJson => Self::StreamJson,
        }
    }
}
