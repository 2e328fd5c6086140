//! Inspection subcommands: `tern tools`, `tern mcp list`, `tern permissions`
//! and `tern trust`. The first three load the
//! same config and start the same MCP servers a run would, send nothing to
//! the model, and open no session log.

use std::io::Write;

use serde_json::json;
use tern_runtime::Runtime;

use crate::exit;

fn with_runtime(mut overrides: tern_runtime::Overrides, f: impl AsyncFnOnce(&Runtime) -> u8) -> u8 {
    overrides.ephemeral = true;
    // What is inspected is every server as it ends up, not as it was after the session's short wait.
    crate::with_runtime(overrides, async |runtime| {
        // The config's warnings (what inspection reports of MCP servers, it says itself).
        for w in runtime.warnings() {
            crate::say(&format!("warning: {w}"));
        }
        runtime.mcp_ready().await;
        f(runtime).await
    })
}

/// Print to stdout, cleaned of escape sequences: names and details come from
/// config files and servers tern does not control.
pub(crate) fn print(text: &str) {
    let text = tern_tui::sanitize::clean(text);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// `tern tools [--explain] [--json]`: the catalog as the next request would
/// carry it.
pub fn tools(overrides: tern_runtime::Overrides, explain: bool, as_json: bool) -> u8 {
    with_runtime(overrides, async |runtime| {
        let assembly = runtime.assemble_catalog();
        if as_json {
            let mut report = serde_json::to_value(assembly.report()).unwrap_or_default();
            report["model"] = json!(runtime.model());
            print(&format!("{report:#}\n"));
        } else {
            print(&format!("model: {}\n", runtime.model()));
            print(&assembly.render_text(explain));
            for s in runtime.mcp_servers().iter().filter(|s| s.state != tern_runtime::McpState::Connected) {
                print(&format!(
                    "MCP server `{}` is {}{}\n",
                    s.name,
                    s.state,
                    s.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
                ));
            }
        }
        exit::SUCCESS
    })
}

/// `tern mcp list [--json]`: every configured server with its state and
/// tool count.
pub fn mcp_list(overrides: tern_runtime::Overrides, as_json: bool) -> u8 {
    with_runtime(overrides, async |runtime| {
        let servers = runtime.mcp_servers();
        if as_json {
            print(&format!("{:#}\n", json!(servers)));
            return exit::SUCCESS;
        }
        if servers.is_empty() {
            print("No MCP servers configured. Add [mcp_servers.NAME] to config, a .mcp.json, or --mcp-config FILE.\n");
            return exit::SUCCESS;
        }
        let width = servers.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
        let mut text = format!("{:width$}  {:11}  {:>5}  {}\n", "NAME", "STATE", "TOOLS", "TRANSPORT / DETAIL");
        for s in &servers {
            let detail = match &s.detail {
                Some(d) => d.clone(),
                None => s.transport.clone(),
            };
            text.push_str(&format!("{:width$}  {:11}  {:>5}  {}\n", s.name, s.state, s.tool_count, detail));
        }
        print(&text);
        if servers.iter().any(|s| s.state == tern_runtime::McpState::Failed) { exit::FAILED } else { exit::SUCCESS }
    })
}

/// The tool input a `tool(argument)` call stands for.
fn call_input(tool: &str, arg: Option<&str>) -> serde_json::Value {
    let Some(arg) = arg else { return json!({}) };
    let mut input = match tool {
        // Searches need a pattern to be a valid call.
        "grep" => json!({"pattern": "."}),
        "glob" => json!({"pattern": "*"}),
        _ => json!({}),
    };
    input[tern_protocol::ToolKind::subject_arg(tool).unwrap_or("argument")] = json!(arg);
    input
}

/// `tern permissions check 'tool(argument)'`: the decision a run would make.
pub fn permissions_check(mut overrides: tern_runtime::Overrides, call: &str, input: Option<&str>, as_json: bool) -> u8 {
    overrides.no_mcp = true;
    let call = call.trim();
    let (tool, arg) = match call.find('(') {
        Some(open) => match call[open + 1..].strip_suffix(')') {
            Some(inner) => (call[..open].trim().to_string(), Some(inner.to_string())),
            None => {
                errln!("tern: `{call}`: the argument must end with `)`, as in `bash(git status)`");
                return exit::USAGE;
            }
        },
        None => (call.to_string(), None),
    };
    // MCP tool names keep their case; built-in and Claude Code names map to tern's.
    let tool = if tool.starts_with("mcp__") { tool } else { tern_policy::rules::canonical_tool(&tool) };
    let input = match input {
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) if v.is_object() => v,
            Ok(_) | Err(_) => {
                errln!("tern: --input must be a JSON object, e.g. '{{\"command\": \"ls\"}}'");
                return exit::USAGE;
            }
        },
        None => call_input(&tool, arg.as_deref()),
    };
    with_runtime(overrides, async |runtime| {
        let policy = runtime.policy();
        let decision = policy.decide(&tool, &input);
        if as_json {
            let v = json!({"tool": tool, "input": input, "mode": policy.mode(), "decision": decision,
                           "how_to_allow": decision.how_to_allow()});
            print(&format!("{v:#}\n"));
            return exit::SUCCESS;
        }
        let by = match &decision.decided_by {
            tern_runtime::DecidedBy::Rule { rule, list, source } => format!("{list} rule `{rule}` ({source})"),
            tern_runtime::DecidedBy::Mode { mode } => format!("mode {mode}"),
            tern_runtime::DecidedBy::Tier { tier } => format!("tier {tier}"),
            tern_runtime::DecidedBy::Classifier { class } => {
                format!("bash classifier ({})", serde_json::to_value(class).unwrap_or_default().as_str().unwrap_or("?"))
            }
            tern_runtime::DecidedBy::ProtectedPath { path } => format!("protected path {path}"),
            tern_runtime::DecidedBy::Role { role, .. } => format!("the {role} role's cap"),
        };
        let verdict = match decision.verdict {
            tern_runtime::Verdict::Allow => "allow",
            tern_runtime::Verdict::Ask => "ask (refused in headless mode)",
            tern_runtime::Verdict::Deny => "deny",
        };
        let mut text = format!(
            "call:       {tool} {input}\nmode:       {}\ndecision:   {verdict}\nreason:     {}\ndecided by: {by}\n",
            policy.mode(),
            decision.reason
        );
        if decision.verdict != tern_runtime::Verdict::Allow
            && let Some(how) = decision.how_to_allow()
        {
            text.push_str(&format!("to allow:   {}\n", how.trim_start_matches("allow it with ")));
        }
        if let Some(bash) = &decision.bash {
            text.push_str("bash parts:\n");
            for (i, p) in bash.parts.iter().enumerate() {
                let class = serde_json::to_value(p.class).unwrap_or_default();
                text.push_str(&format!(
                    "  {}. {:<40} {:<10} {}\n",
                    i + 1,
                    p.text,
                    class.as_str().unwrap_or("?"),
                    p.reason
                ));
            }
            if !bash.write_paths.is_empty() {
                text.push_str(&format!("  writes: {}\n", bash.write_paths.join(", ")));
            }
        }
        print(&text);
        exit::SUCCESS
    })
}

/// `tern permissions list`: every rule with its source, and the mode.
pub fn permissions_list(mut overrides: tern_runtime::Overrides, as_json: bool) -> u8 {
    overrides.no_mcp = true;
    with_runtime(overrides, async |runtime| {
        let policy = runtime.policy();
        let rules = policy.rules();
        if as_json {
            print(&format!("{:#}\n", json!({"mode": policy.mode(), "rules": rules})));
            return exit::SUCCESS;
        }
        let text = runtime.permissions_report();
        print(&text);
        exit::SUCCESS
    })
}

/// `tern trust [DIR] [--list | --remove]`: trust a folder (kept in the user
/// config), list trusted folders, or stop trusting one.
pub fn trust(dir: Option<std::path::PathBuf>, list: bool, remove: bool) -> u8 {
    let paths = match tern_runtime::TernPaths::discover() {
        Ok(p) => p,
        Err(e) => {
            errln!("tern: {e}");
            return exit::USAGE;
        }
    };
    let user_file = paths.user_config();
    let dir = match dir.map_or_else(std::env::current_dir, Ok).and_then(std::fs::canonicalize) {
        Ok(d) => d,
        Err(e) => {
            errln!("tern: cannot find the folder to trust: {e}");
            return exit::USAGE;
        }
    };
    if list {
        let user = match tern_runtime::FileConfig::load(&user_file) {
            Ok(u) => u,
            Err(e) => {
                errln!("tern: {e}");
                return exit::USAGE;
            }
        };
        for folder in &user.trust.folders {
            print(&format!("{}\n", folder.display()));
        }
        let state = tern_runtime::trust::decide(&user, &dir, false);
        print(&format!("{}: {}\n", dir.display(), state.describe()));
        return exit::SUCCESS;
    }
    let result = if remove {
        tern_runtime::trust::remove_trusted(&user_file, &dir)
    } else {
        tern_runtime::trust::save_trusted(&user_file, &dir)
    };
    match (result, remove) {
        (Ok(true), false) => print(&format!("trusted {} (saved in {})\n", dir.display(), user_file.display())),
        (Ok(false), false) => print(&format!("{} was already trusted\n", dir.display())),
        (Ok(true), true) => print(&format!("{} is no longer trusted\n", dir.display())),
        (Ok(false), true) => {
            errln!(
                "tern: {} is not listed in {} (a folder above it may be; see `tern trust --list`)",
                dir.display(),
                user_file.display()
            );
            return exit::FAILED;
        }
        (Err(e), _) => {
            errln!("tern: {e}");
            return exit::FAILED;
        }
    }
    exit::SUCCESS
}

/// `tern context [--continue | --resume ID] [--json]`: what fills the context window.
pub fn context(overrides: tern_runtime::Overrides, as_json: bool) -> u8 {
    with_runtime(overrides, async |runtime| {
        let report = runtime.context_report().await;
        if as_json {
            print(&format!("{:#}\n", json!(report)));
        } else {
            print(&report.render());
        }
        exit::SUCCESS
    })
}

/// `tern sessions show ID` and `tern sessions export ID --format markdown|json`:
/// the conversation on the session's current branch, as a resume would
/// continue it (after its last compaction).
pub fn sessions_export(cwd: Option<std::path::PathBuf>, id: &str, format: crate::ExportFormat) -> u8 {
    let found = tern_runtime::TernPaths::discover().map_err(tern_runtime::RuntimeError::from).and_then(|paths| {
        let overrides = tern_runtime::Overrides { cwd, ..Default::default() };
        let workspace = tern_runtime::resolve_workspace(&overrides)?;
        let path = tern_runtime::session_index::find(
            &paths.sessions_dir(),
            &workspace,
            &tern_runtime::Resume::Id(id.to_string()),
        )?;
        Ok(tern_runtime::session::LoadedSession::load(&path)?)
    });
    let loaded = match found {
        Ok(l) => l,
        Err(e) => {
            errln!("tern: {e}");
            return exit::USAGE;
        }
    };
    for n in &loaded.notices {
        errln!("tern: warning: {}", tern_tui::sanitize::clean(n));
    }
    let c = loaded.conversation();
    let messages = c.messages();
    let text = match format {
        crate::ExportFormat::Markdown => {
            tern_runtime::session_export::markdown(&loaded.header, c.title.as_deref(), &messages)
        }
        crate::ExportFormat::Json => {
            // Exact JSON, not cleaned: escape sequences are already escaped by the encoder.
            let value = tern_runtime::session_export::json(&loaded.header, c.title.as_deref(), &messages);
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{value:#}");
            return exit::SUCCESS;
        }
    };
    print(&text);
    exit::SUCCESS
}

/// `tern sessions list [--all] [--json]`: this folder's sessions (or all), newest first.
pub fn sessions_list(cwd: Option<std::path::PathBuf>, all: bool, as_json: bool) -> u8 {
    let paths = match tern_runtime::TernPaths::discover() {
        Ok(p) => p,
        Err(e) => {
            errln!("tern: {e}");
            return exit::USAGE;
        }
    };
    let overrides = tern_runtime::Overrides { cwd, ..Default::default() };
    let workspace = match tern_runtime::resolve_workspace(&overrides) {
        Ok(w) => w,
        Err(e) => {
            errln!("tern: {e}");
            return exit::USAGE;
        }
    };
    let scope = (!all).then_some(workspace.as_path());
    let sessions = tern_runtime::session_index::list(&paths.sessions_dir(), scope);
    // Files whose header cannot be read are listed too, marked, never left out.
    let damaged = tern_runtime::damaged_sessions::damaged(&paths.sessions_dir(), scope, 0);
    if as_json {
        let mut rows: Vec<(u64, serde_json::Value)> = sessions.iter().map(|s| (s.modified_ms, json!(s))).collect();
        rows.extend(damaged.iter().map(|d| (d.modified_ms, json!(d))));
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        let rows: Vec<serde_json::Value> = rows.into_iter().map(|(_, v)| v).collect();
        print(&format!("{:#}\n", json!(rows)));
        return exit::SUCCESS;
    }
    if sessions.is_empty() && damaged.is_empty() {
        let scope = if all { String::new() } else { format!(" in {}", workspace.display()) };
        print(&format!("No sessions{scope} (see all folders with --all).\n"));
        return exit::SUCCESS;
    }
    let mut rows: Vec<(u64, String)> = damaged
        .iter()
        .map(|d| {
            let size = tern_protocol::text::human_bytes(d.bytes);
            (
                d.modified_ms,
                format!(
                    "{}  {:<18}  {:>9}  {:>7}  {}  ({})\n",
                    d.id,
                    "DAMAGED",
                    size,
                    "-",
                    d.damaged,
                    d.path.display()
                ),
            )
        })
        .collect();
    for s in &sessions {
        let size = tern_protocol::text::human_bytes(s.bytes);
        let about = s.title.as_deref().or(s.first_prompt.as_deref()).unwrap_or("(no prompt)");
        let place = if all { format!("  {}", s.cwd) } else { String::new() };
        let cost = match s.cost_usd {
            Some(c) if c > 0.0 => format!("${c:.2}"),
            _ => "-".into(),
        };
        rows.push((s.modified_ms, format!("{}  {:<18}  {:>9}  {cost:>7}  {about}{place}\n", s.id, s.model, size)));
    }
    // Newest first, the damaged ones where they were written.
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let text: String = rows.into_iter().map(|(_, row)| row).collect();
    print(&text);
    exit::SUCCESS
}

/// The config as a session here would read it, with its warnings said, and
/// `list` printed as JSON when asked (Err: the exit code, when done).
fn listing<T: serde::Serialize>(
    overrides: tern_runtime::Overrides,
    as_json: bool,
    find: impl FnOnce(&tern_runtime::RuntimeBuilder) -> (Vec<T>, Vec<String>),
) -> Result<Vec<T>, u8> {
    let builder = tern_runtime::RuntimeBuilder::new(overrides).map_err(|e| {
        errln!("tern: {e}");
        crate::exit::USAGE
    })?;
    let (list, warnings) = find(&builder);
    for w in &warnings {
        crate::say(&format!("warning: {w}"));
    }
    if as_json {
        print(&serde_json::to_string_pretty(&list).unwrap_or_default());
        return Err(crate::exit::SUCCESS);
    }
    Ok(list)
}

/// `tern skills list`: the skills a session here would offer.
pub fn skills_list(overrides: tern_runtime::Overrides, as_json: bool) -> u8 {
    let list = match listing(overrides, as_json, |b| {
        let s = b.skills();
        (s.list, s.warnings)
    }) {
        Ok(list) => list,
        Err(code) => return code,
    };
    if list.is_empty() {
        print("No skills. Add skills/NAME/SKILL.md in your config dir or .tern/skills/NAME/SKILL.md here.");
        return crate::exit::SUCCESS;
    }
    let mut text = String::new();
    for s in &list {
        let at = s.path.as_ref().map_or_else(|| "built in".to_string(), |p| p.display().to_string());
        text.push_str(&format!("/{}  ({}, {at})\n    {}\n", s.name, s.source.as_str(), s.description));
        if !s.allowed_tools.is_empty() {
            text.push_str(&format!("    allows: {}\n", s.allowed_tools.join(", ")));
        }
    }
    print(text.trim_end());
    crate::exit::SUCCESS
}

/// `tern commands list`: the custom slash commands a session here would offer.
pub fn commands_list(overrides: tern_runtime::Overrides, as_json: bool) -> u8 {
    let list = match listing(overrides, as_json, |b| {
        let c = b.commands();
        (c.list, c.warnings)
    }) {
        Ok(list) => list,
        Err(code) => return code,
    };
    if list.is_empty() {
        print("No custom commands. Add .tern/commands/NAME.md here or commands/NAME.md in your config dir.");
        return crate::exit::SUCCESS;
    }
    let mut text = String::new();
    for c in &list {
        let hint = c.argument_hint.as_deref().map(|h| format!(" {h}")).unwrap_or_default();
        text.push_str(&format!(
            "/{}{hint}  ({}, {})\n    {}\n",
            c.name,
            c.source.as_str(),
            c.path.display(),
            c.description
        ));
    }
    print(text.trim_end());
    crate::exit::SUCCESS
}
