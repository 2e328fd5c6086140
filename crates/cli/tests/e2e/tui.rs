//! The real `tern` TUI in a pseudo-terminal against the mock model, the
//! screen parsed with vt100: type a prompt, see streamed text and a bash
//! cell's output, answer the permission prompt, interrupt a long command
//! (no process left), quit with the terminal restored.

use crate::common;

use std::time::{Duration, Instant};

use common::screen::{answer_until_gone, quit, start, start_env, start_sized, start_with};
use common::{Harness, Wire, processes_matching, wait_gone};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_a_real_terminal() {
    let mut h = Harness::new(
        Wire::Anthropic,
        &json!({"chunk_delay_ms": 5, "turns": [
            {"text": "Hello from the mock model.", "tool_calls": [
                {"name": "bash", "arguments": {"command": "printf 'alpha\\nbeta\\ngamma\\n'"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch made-by-tern.txt"}}]},
            {"text": "Made the file."},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 31; echo never"}}]},
            {"text": "unused"}
        ]})
        .to_string(),
    )
    .await;
    h.mode = None;
    // The screen is polled with short blocking sleeps; the mock serves from
    // the other worker thread.
    let mut s = start(&h);

    s.wait_for("Ask tern");
    s.type_text("hello tern\r");
    s.wait_for("Hello from the mock model.");
    s.wait_for("gamma");
    // The write is asked about in the bottom pane.
    s.wait_for("touch made-by-tern.txt");
    s.wait_for("don't ask again");
    // Keys within a moment of the question are taken as typing ahead, not
    // as its answer: press 1 until the question is gone (bounded).
    answer_until_gone(&mut s, b"1", "don't ask again");
    s.wait_for("Made the file.");
    assert!(h.path("made-by-tern.txt").exists());

    // A long command, interrupted with Esc: nothing is left running.
    s.type_text("run the long one\r");
    s.wait_for("sleep 31");
    assert!(!common::wait_present("sleep 31").await.is_empty(), "the command never started");
    s.send(b"\x1b");
    s.wait_for("interrupted");
    assert!(wait_gone("sleep 31").await.is_empty(), "the interrupted command is still running");

    // Ctrl+C twice on an empty composer quits, restoring the terminal (a turn still ending
    // takes the first one, so press until quitting is armed).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.text().contains("Ctrl+C again to quit") {
        assert!(Instant::now() < deadline, "quitting was never armed:\n{}", s.text());
        s.send(b"\x03");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.send(b"\x03");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = s.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "tern did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    // The reader thread may still be taking the last bytes off the terminal.
    let deadline = Instant::now() + Duration::from_secs(5);
    let raw = loop {
        let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
        if raw.contains("\x1b[?1049l") || Instant::now() > deadline {
            break raw;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(raw.contains("\x1b[?2004l"), "bracketed paste switched off");
    // Inline: the terminal's own screen, its scrollback and selection; the mouse is not taken.
    assert!(!raw.contains("\x1b[?1049h") && !raw.contains("\x1b[?1003h") && !raw.contains("\x1b[?1000h"), "{raw:?}");
    let all = s.all_text();
    assert!(all.contains("hello tern") && all.contains("Made the file.") && all.contains("gamma"), "{all}");
}

/// Inline, a resize draws the screen again at the new width: what was on it
/// once, re-wrapped, the frame at the bottom of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_draws_the_inline_screen_again_at_the_new_width() {
    let long = "word ".repeat(30);
    let script = json!({"turns": [{"text": format!("START {long}END")}]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("a question\r");
    s.wait_for("END");
    s.wait_idle();
    s.resize(30, 50);
    // The status line is drawn again for 50 columns: shorter, the folder cut.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = s.text();
        let lines: Vec<&str> = text.lines().collect();
        if text.matches("START").count() == 1
            && text.matches("END").count() == 1
            && text.matches("? /help").count() == 1
            && lines.iter().all(|l| l.chars().count() <= 50)
            && lines.iter().filter(|l| l.contains("word")).count() >= 3
        {
            break;
        }
        assert!(Instant::now() < deadline, "not drawn again at 50 columns:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    quit(&mut s);
}

/// Inline (the default): each finished cell goes into the terminal's own
/// scrollback, in order, and stays after exit with the frame gone; PageUp
/// shows the whole transcript on the alternate screen and Esc comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_stays_in_the_terminal_after_exit() {
    let script = json!({"turns": [
        {"when_request_contains": "second question", "text": "Second answer."},
        {"text": "First answer, line one.\n\nline two."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("first question\r");
    s.wait_for("line two.");
    s.wait_idle();
    assert!(!String::from_utf8_lossy(&s.raw.lock().unwrap()).contains("\x1b[?1049h"));
    s.send(b"\x1b[5~");
    s.wait_for("whole transcript");
    let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
    assert!(raw.contains("\x1b[?1049h") && raw.contains("\x1b[?1000h") && !raw.contains("\x1b[?1003h"), "{raw:?}");
    s.send(b"\x1b");
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.text().contains("whole transcript") {
        assert!(Instant::now() < deadline, "Esc did not come back:\n{}", s.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    s.type_text("second question\r");
    s.wait_for("Second answer.");
    s.wait_idle();
    quit(&mut s);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.text().contains("resume with") {
        assert!(Instant::now() < deadline, "no summary:\n{}", s.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    let all = s.all_text();
    let at = |needle: &str| all.find(needle).unwrap_or_else(|| panic!("`{needle}` is not in the terminal:\n{all}"));
    assert!(at("first question") < at("First answer, line one."), "{all}");
    assert!(at("line two.") < at("second question") && at("second question") < at("Second answer."), "{all}");
    assert!(at("Second answer.") < at("resume with"), "{all}");
    // Each shows once, and the frame (composer, status line) is gone.
    assert_eq!(all.matches("First answer, line one.").count(), 1, "{all}");
    assert!(!all.contains("Ask tern") && !all.contains("? /help"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_folder_is_asked_about_before_the_tui_starts() {
    let h = Harness::new(Wire::Anthropic, &json!({"turns": [{"text": "REPLY-AFTER-TRUST"}]}).to_string()).await;
    let marker = h.home.path().join("hook-ran");
    common::write(
        &h.path(".tern/config.toml"),
        &format!("[[hooks.session_start]]\ncommand = \"touch {}\"\n", marker.display()),
    );
    let mut s = start(&h);
    s.wait_for("this folder is not trusted yet");
    s.wait_for(&format!("runs the hook `touch {}` on session_start", marker.display()));
    s.send(b"1");
    s.wait_for("Ask tern");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    let workspace = std::fs::canonicalize(h.workspace.path()).unwrap();
    assert!(config.contains("[trust]") && config.contains(&workspace.display().to_string()), "{config}");
    s.type_text("hello\r");
    // A word of its own: "hi" is in "this folder" and other text already on screen.
    s.wait_for("REPLY-AFTER-TRUST");
    assert!(marker.exists(), "trusted: the project's session_start hook ran");
    // The turn may still be ending (a Ctrl+C then interrupts it): press until quitting is armed.
    quit(&mut s);
    // Trusted now: the next start asks nothing.
    let mut s = start(&h);
    s.wait_for("Ask tern");
    assert!(!s.text().contains("not trusted"), "{}", s.text());
    s.child.kill().unwrap();
    let _ = s.child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_command_leaves_no_background_child() {
    let h = Harness::new(Wire::Anthropic, &json!({"turns": []}).to_string()).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("!sleep 34 & echo started-bg\r");
    s.wait_for("started-bg");
    assert!(wait_gone("sleep 34").await.is_empty(), "the background child of !cmd is still running");
    // The first `!cmd` counts as running until its group is reaped (a zombie left to an init
    // that does not reap keeps the group for the grace period): the next one is refused until then.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        s.type_text("!sleep 35 & sleep 36\r");
        if !common::wait_present("sleep 36").await.is_empty() {
            break;
        }
        assert!(s.text().contains("already running") && Instant::now() < deadline, "never started: {}", s.text());
    }
    s.send(b"\x1b");
    assert!(wait_gone("sleep 35").await.is_empty(), "Esc left the background child running");
    assert!(wait_gone("sleep 36").await.is_empty(), "Esc left the command running");
    s.child.kill().unwrap();
    let _ = s.child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_picks_a_session_and_the_session_commands_work() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"first reply"},{"text":"second reply"}]}"#).await;
    assert_eq!(h.run(&["-p", "remember the pelican"]).await.code, Some(0));
    let sessions = h.home.path().join("sessions");
    let files = |ext: &str| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        v.sort();
        v
    };
    let original = files("jsonl").remove(0);
    let mut s = start_with(&h, &["-r"]);
    s.wait_for("Resume a session");
    s.wait_for("1 sessions in this folder");
    s.wait_for("remember the pelican");
    // The preview shows the session's last message.
    s.wait_for("• first reply");
    s.send(b"\r");
    s.wait_for("resumed session");
    s.wait_for("first reply");
    s.wait_idle();
    s.type_text("/rename pelican work\r");
    s.wait_for("session named");
    s.type_text("/export notes.md\r");
    s.wait_for("conversation written to");
    let notes = std::fs::read_to_string(h.path("notes.md")).unwrap();
    assert!(notes.contains("# pelican work") && notes.contains("remember the pelican"), "{notes}");
    let before_fork = std::fs::read(&original).unwrap();
    s.type_text("/fork\r");
    s.wait_for("forked: going on in session");
    s.type_text("and more\r");
    s.wait_for("second reply");
    assert_eq!(std::fs::read(&original).unwrap(), before_fork, "after /fork the original file is left alone");
    let all = files("jsonl");
    assert_eq!(all.len(), 2);
    let forked = all.iter().find(|p| **p != original).unwrap();
    let text = std::fs::read_to_string(forked).unwrap();
    assert!(text.contains("remember the pelican") && text.contains("and more"), "{text}");
    quit(&mut s);
    // Back on the normal screen: how to come back to this session.
    let forked_id = forked.file_stem().unwrap().to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !String::from_utf8_lossy(&s.raw.lock().unwrap()).contains(&format!("resume with: tern --resume {forked_id}"))
    {
        assert!(
            Instant::now() < deadline,
            "no resume hint on exit:\n{}",
            String::from_utf8_lossy(&s.raw.lock().unwrap())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_history_survives_a_restart_and_ctrl_r_finds_it() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"noted"}]}"#).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    // The first screen says where tern stands; /status says the rest.
    s.wait_for("/help for keys and commands");
    s.wait_for("· mock · ");
    s.type_text("/status\r");
    s.wait_for("permission mode");
    s.wait_for("instruction files: none");
    // /model lists this provider's models; another provider's model is refused, not sent to the wrong API.
    s.type_text("/model\r");
    s.wait_for("models of anthropic");
    s.wait_for("claude-sonnet-4-5");
    s.wait_for("● mock");
    s.send(b"\x1b");
    s.wait_until_gone("models of anthropic");
    s.type_text("/model gpt-5\r");
    s.wait_for("is a model of openai");
    s.type_text("remember the pelican\r");
    s.wait_for("noted");
    // The terminal's title says what tern does, and where.
    let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
    assert!(raw.contains("\x1b]0;tern · ready · ") && raw.contains("\x1b]0;tern · working · "), "{raw:?}");
    quit(&mut s);
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.send(b"\x12");
    s.type_text("pelic");
    s.wait_for("search: pelic");
    s.wait_for("remember the pelican");
    s.send(b"\r");
    s.send(b"\r");
    // A new session: the mock answers its first turn again, to the prompt found.
    s.wait_for("noted");
    assert_eq!(h.bodies().last().unwrap()["messages"][0]["content"][0]["text"], "remember the pelican");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_g_edits_the_prompt_in_the_editor() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"got it"}]}"#).await;
    // An "editor" that rewrites the file it is given, as a person would.
    let editor = h.home.path().join("fake-editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf 'rewritten in the editor\\n' > \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut s = start_env(&h, &[], &[("EDITOR", editor.to_str().unwrap())]);
    s.wait_for("Ask tern");
    s.type_text("draft text");
    s.send(b"\x07");
    s.wait_for("rewritten in the editor");
    // One Enter, at once: the first key after the editor arrives (it was lost 1 run in 15 on a
    // loaded machine while the input stream was made again around the editor).
    s.send(b"\r");
    s.wait_for("got it");
    assert_eq!(h.bodies()[0]["messages"][0]["content"][0]["text"], "rewritten in the editor");
    quit(&mut s);
}

/// A `write` call for the mock's script.
fn write(path: &str, content: &str) -> serde_json::Value {
    json!({"name": "write", "arguments": {"path": path, "content": content}})
}

/// A TUI in bypass mode after `prompt-one`, `-two` and `-three`, which made
/// the `calls` and answered `done one`, `-two`, `-three`; `prompt-four` is answered `done four`.
async fn after_three_prompts(calls: [serde_json::Value; 3]) -> (Harness, common::screen::Screen) {
    let [one, two, three] = calls;
    let script = json!({"turns": [
        {"when_request_contains": "prompt-four", "text": "done four"},
        {"tool_calls": one}, {"text": "done one"},
        {"tool_calls": two}, {"text": "done two"},
        {"tool_calls": three}, {"text": "done three"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    let mut s = start_with(&h, &["--permission-mode", "bypass"]);
    s.wait_for("Ask tern");
    for (prompt, done) in [("prompt-one", "done one"), ("prompt-two", "done two"), ("prompt-three", "done three")] {
        s.type_text(&format!("{prompt}\r"));
        s.wait_for(done);
    }
    s.wait_idle();
    (h, s)
}

/// After going back to before prompt 2: it is in the composer; `prompt-four`
/// is sent instead, and the conversation it goes with has neither prompt 2 nor 3.
fn send_instead_of_prompt_two(h: &Harness, s: &mut common::screen::Screen) {
    s.wait_for("› prompt-two");
    s.send(b"\x15");
    s.type_text("prompt-four\r");
    s.wait_for("done four");
    s.wait_idle();
    let last = h.bodies().pop().unwrap().to_string();
    assert!(last.contains("prompt-one") && !last.contains("prompt-two") && !last.contains("prompt-three"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_puts_files_and_the_conversation_back_before_a_prompt() {
    let (h, mut s) = after_three_prompts([
        json!([write("a.txt", "v1\n")]),
        json!([write("a.txt", "v2\n"), write("b.txt", "b2\n"),
            {"name": "bash", "arguments": {"command": "printf 'made by bash\\n' > made.txt"}}]),
        json!([write("a.txt", "v3\n")]),
    ])
    .await;
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "v3\n");
    assert_eq!(std::fs::read_to_string(h.path("made.txt")).unwrap(), "made by bash\n");
    // Someone edits b.txt after tern wrote it.
    std::fs::write(h.path("b.txt"), "the person's\n").unwrap();
    s.type_text("/rewind\r");
    s.wait_for("go back to before a prompt");
    s.send(b"\x1b");
    s.wait_until_gone("go back to before a prompt");
    s.type_text("/rewind 2\r");
    s.wait_for("went back to before prompt 2");
    s.wait_for("left alone, changed since tern wrote them: b.txt");
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "v1\n", "as it was before prompt 2");
    assert!(!h.path("made.txt").exists(), "a file a bash command created in prompt 2 is gone too");
    assert_eq!(std::fs::read_to_string(h.path("b.txt")).unwrap(), "the person's\n", "not overwritten");
    send_instead_of_prompt_two(&h, &mut s);
    // After /clear the conversation cannot go back across it (the files still could).
    s.type_text("/clear\r");
    s.wait_for("new conversation");
    s.type_text("/rewind 1 conversation\r");
    s.wait_for("compacted or cleared after that prompt");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_lists_adds_and_removes_rules() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/permissions allow bash(make test:*)\r");
    s.wait_for("allow `bash(make test:*)` for this project");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    assert!(config.contains("bash(make test:*)") && config.contains("[retry]"), "saved, the rest kept: {config}");
    s.type_text("/permissions deny user bash(curl:*)\r");
    s.wait_for("deny `bash(curl:*)` for every project");
    s.type_text("/permissions list\r");
    s.wait_for("mode: default");
    s.wait_for("no call refused in this session");
    s.type_text("/permissions move bash(make test:*) session\r");
    s.wait_for("`bash(make test:*)` now holds for this session");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("bash(make test:*)") && config.contains("deny = [\"bash(curl:*)\"]"), "{config}");
    s.type_text("/permissions remove bash(curl:*)\r");
    s.wait_for("`bash(curl:*)` removed from");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("bash(curl:*)"), "{config}");
    // /config keeps settings in the same file; bypass is not one it sets.
    s.type_text("/config theme light\r");
    s.wait_for("theme = light, kept in");
    s.type_text("/config mode bypass\r");
    s.wait_for("bypass only by --permission-mode");
    s.type_text("/config\r");
    s.wait_for("print_on_exit  none (default)");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    assert!(config.contains("[tui]\ntheme = \"light\"") && !config.contains("bypass"), "{config}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_answer_can_be_left_in_scrollback() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"The answer is **42**."}]}"#).await;
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[tui]\nfullscreen = true\nprint_on_exit = \"last\"\n");
    std::fs::write(&config, text).unwrap();
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("question\r");
    s.wait_for("The answer is 42.");
    quit(&mut s);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
        // After the alternate screen is left: the answer as it was shown (no Markdown marks), then the summary.
        if let Some(after) = raw.rsplit("\x1b[?1049l").next()
            && after.contains("resume with")
        {
            let shown = s.text();
            assert!(shown.contains("The answer is 42.") && !shown.contains("**"), "{shown}");
            break;
        }
        assert!(Instant::now() < deadline, "the answer was not printed on exit: {raw:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_command_runs_from_the_composer_and_shows_as_typed() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"Looked at it."}]}"#).await;
    common::write(
        &h.path(".tern/commands/explain.md"),
        "---\ndescription: Explain a file\n---\nEXPLAIN-TEMPLATE for $1.",
    );
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/expl");
    s.wait_for("Explain a file");
    s.type_text("\x15/explain src/main.rs\r");
    s.wait_for("Looked at it.");
    assert!(s.text().contains("› /explain src/main.rs"), "{}", s.text());
    let body = &h.bodies()[0];
    assert!(body["messages"].to_string().contains("EXPLAIN-TEMPLATE for src/main.rs."), "{body}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_shows_under_its_task_cell() {
    let script = json!({"turns": [
        {"when_request_contains": "NOTES-BODY", "text": "The notes say hi."},
        {"when_request_contains": "You are a subagent (explore)", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "read the notes", "prompt": "What do the notes say?"}}]},
        {"text": "Finished."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    common::write(&h.path("notes.txt"), "NOTES-BODY\n");
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("go\r");
    s.wait_for("Finished.");
    let screen = s.text();
    assert!(screen.contains("task explore read the notes"), "{screen}");
    assert!(screen.contains("↳ read notes.txt") && screen.contains("The notes say hi."), "{screen}");
    quit(&mut s);
}

/// A stream cut on every attempt: each retry drops what the broken attempt
/// streamed, so the cell holds one attempt's text, never the attempts glued
/// together ("A long answer… loreA long answer… lore…").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_stream_shows_only_the_current_attempts_text() {
    let script = json!({"turns": [{
        "faults": [{"cut_after_events": 6, "repeat": true}],
        "text": "A long answer that goes on for a while, lorem ipsum dolor sit amet."
    }]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("tell me\r");
    s.wait_for("ended before");
    assert_eq!(h.server.requests().len(), 4, "every attempt was cut");
    let screen = s.text();
    assert_eq!(screen.matches("A long answer").count(), 1, "{screen}");
    quit(&mut s);
}

/// Vim mode in the real terminal: an operator with a count, undo, and `.`
/// edit the prompt before it is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vim_operators_counts_and_undo_edit_the_prompt() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"got it"}]}"#).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/vim\r");
    s.wait_for("vim mode on");
    s.type_text("alpha beta gamma delta");
    s.wait_for("alpha beta gamma delta");
    s.send(b"\x1b");
    s.wait_for("NORMAL");
    // d2w from the start takes two words; u puts them back; dw then . takes them again, one by one.
    s.type_text("0d2w");
    s.wait_for("│› gamma delta");
    s.type_text("u");
    s.wait_for("│› alpha beta gamma delta");
    s.type_text("dw.");
    s.wait_for("│› gamma delta");
    s.type_text("\r");
    s.wait_for("got it");
    let sent = h.bodies()[0]["messages"][0].to_string();
    assert!(sent.contains("gamma delta") && !sent.contains("alpha"), "{sent}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_approved_in_the_tui_and_the_mode_follows() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "## Plan\n1. Fix PLAN-STEP-ONE\n2. Test it"}}]},
        {"text": "Carrying it out."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start_with(&h, &["--permission-mode", "plan"]);
    s.wait_for("Ask tern");
    s.type_text("plan it\r");
    s.wait_for("Approve this plan?");
    // The card is drawn whole before it is read (its options last).
    s.wait_for("Yes, and accept edits");
    assert!(s.text().contains("PLAN-STEP-ONE"), "{}", s.text());
    answer_until_gone(&mut s, b"2", "Approve this plan?");
    s.wait_for("Carrying it out.");
    s.wait_for("accept-edits");
    // The card is gone; the plan it asked about stays in the transcript, as Markdown.
    s.wait_for("plan approved · now accept-edits");
    let screen = s.text();
    let rows: Vec<&str> = screen.lines().map(str::trim).collect();
    assert!(
        rows.contains(&"Plan") && rows.contains(&"1. Fix PLAN-STEP-ONE") && rows.contains(&"2. Test it"),
        "{screen}"
    );
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("approved the plan") && results[0].0.contains("accept-edits"), "{results:?}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_question_is_a_card_and_the_answer_goes_back() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "ask_user", "arguments": {"questions": [{
            "question": "Which database should the cache use?", "header": "Cache",
            "options": [{"label": "Redis", "description": "fast, separate service"}, {"label": "SQLite"}]
        }]}}]},
        {"text": "Going with your choice."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("add a cache\r");
    s.wait_for("Which database should the cache use?");
    // The card is drawn whole before it is read (its last line last).
    s.wait_for("Type your own answer");
    assert!(s.text().contains("Redis — fast, separate service"), "{}", s.text());
    answer_until_gone(&mut s, b"2", "Type your own answer");
    s.wait_for("Going with your choice.");
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].0.contains("Which database should the cache use? → SQLite"), "{results:?}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_setup_from_the_tui() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/doctor\r");
    s.wait_for("all checks passed");
    assert!(s.text().contains("✓ reachability") && s.text().contains("✓ session dir"), "{}", s.text());
    quit(&mut s);
}

/// Closing the terminal (SIGHUP) or SIGTERM ends the session like /quit:
/// background commands, in process groups of their own, are stopped too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_terminal_stops_the_background_tasks() {
    for (signal, marker) in [(libc::SIGHUP, "sleep 3131"), (libc::SIGTERM, "sleep 3132")] {
        let script = json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": marker, "run_in_background": true}}]},
            {"text": "it runs in the background"}
        ]});
        let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
        let mut s = start_with(&h, &["--permission-mode", "bypass", "start it"]);
        s.wait_for("it runs in the background");
        assert!(!processes_matching(marker).is_empty(), "{marker} runs");
        let pid = s.child.process_id().unwrap() as i32;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, signal) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while s.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "tern did not exit on signal {signal}");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(wait_gone(marker).await, Vec::<u32>::new(), "signal {signal} stopped {marker}");
    }
}

/// A queued prompt that cannot start (a skill whose file went away) gives
/// way to the next one in the queue instead of stopping it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_prompt_that_cannot_start_lets_the_next_one_run() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "while [ ! -e go ]; do sleep 0.05; done"}}]},
        {"text": "first answer"},
        {"text": "second answer"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let skill = h.path(".tern/skills/gone/SKILL.md");
    common::write(&skill, "---\ndescription: Goes away\n---\nDo it.\n");
    let mut s = start_with(&h, &["--permission-mode", "bypass", "--trust", "start"]);
    s.wait_for("while [ ! -e go ]");
    s.type_text("/gone now\r");
    s.type_text("second prompt\r");
    s.wait_for("queued ▸ second prompt");
    std::fs::remove_file(&skill).unwrap();
    std::fs::write(h.path("go"), "").unwrap();
    s.wait_for("second answer");
    quit(&mut s);
}

/// A custom command sent with a pasted block shows as typed, with the
/// paste's placeholder, not the pasted text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_with_a_paste_keeps_its_placeholder() {
    let h = Harness::new(Wire::Anthropic, &json!({"turns": [{"text": "reviewed it"}]}).to_string()).await;
    common::write(&h.path(".tern/commands/review.md"), "---\ndescription: Review\n---\nReview this: $ARGUMENTS\n");
    let mut s = start_with(&h, &["--trust"]);
    s.wait_for("/help for keys");
    s.type_text("/review ");
    let pasted: String = (1..=30).map(|i| format!("pasted line {i}\n")).collect();
    s.send(format!("\x1b[200~{pasted}\x1b[201~").as_bytes());
    s.wait_for("[Pasted 30 lines]");
    s.send(b"\r");
    s.wait_for("reviewed it");
    let screen = s.text();
    assert!(screen.contains("/review [Pasted 30 lines]"), "{screen}");
    assert!(!screen.contains("pasted line 17"), "{screen}");
    let sent = h.bodies()[0].to_string();
    assert!(sent.contains("Review this: pasted line 1") && sent.contains("pasted line 30"), "the model gets it all");
    quit(&mut s);
}

/// SIGTERM while a foreground command that ignores SIGTERM runs: tern
/// exits, and the command's group is killed on the way out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_exit_kills_a_running_command_that_ignores_sigterm() {
    let marker = "sleep 3133.5";
    let command = format!("trap '' TERM; {marker}; {marker}");
    let script =
        json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "x"}]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start_with(&h, &["--permission-mode", "bypass", "run it"]);
    assert!(!common::wait_present(marker).await.is_empty(), "{marker} runs");
    let pid = s.child.process_id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "tern did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(wait_gone(marker).await, Vec::<u32>::new(), "the command died with tern");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_on_a_terminal_drops_the_models_escape_sequences() {
    // An OSC 52 clipboard write, a window title and a screen clear, as a prompt-injected model
    // might answer.
    let answer = "before\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2Jafter";
    let h = Harness::new(Wire::Anthropic, &json!({"turns": [{"text": answer}]}).to_string()).await;
    let mut s = start_with(&h, &["-p", "answer"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !String::from_utf8_lossy(&s.raw.lock().unwrap()).contains("after") {
        assert!(Instant::now() < deadline, "no answer: {}", String::from_utf8_lossy(&s.raw.lock().unwrap()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = s.child.wait();
    let raw = String::from_utf8_lossy(&s.raw.lock().unwrap()).into_owned();
    assert!(raw.contains("beforeafter"), "{raw:?}");
    assert!(!raw.contains("\u{1b}]52") && !raw.contains("\u{1b}]0;") && !raw.contains("\u{1b}[2J"), "{raw:?}");
}

/// A resumed session's cells show the figures the session kept: the
/// command's real line count and time (not `0ms` and the kept tail's
/// count), and the edit's diff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_shows_the_kept_figures_and_the_edits_diff() {
    let script = json!({"turns": [
        {"tool_calls": [
            {"name": "read", "arguments": {"path": "a.txt"}},
            {"name": "edit", "arguments": {"path": "a.txt", "old_string": "old-line", "new_string": "NEW-LINE"}}
        ]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 5001"}}]},
        {"text": "all done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    std::fs::write(h.path("a.txt"), "first\nold-line\nlast\n").unwrap();
    let out = h.run(&["-p", "change it", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let id =
        serde_json::from_str::<serde_json::Value>(&out.stdout).unwrap()["session_id"].as_str().unwrap().to_string();
    let mut s = start_with(&h, &["-r", &id]);
    s.wait_for("resumed session");
    s.wait_for("5001 lines");
    let screen = s.text();
    assert!(screen.contains("- old-line") || screen.contains("-old-line"), "the edit's diff: {screen}");
    assert!(screen.contains("NEW-LINE"), "{screen}");
    let summary = screen.lines().find(|l| l.contains("5001 lines")).unwrap();
    // The invented figure was exactly `0ms`; a real one may end in 0 (`40ms`).
    assert!(summary.trim().starts_with("exit 0 · ") && !summary.contains("· 0ms"), "{summary}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_brings_the_sessions_totals_with_it() {
    let script = r#"{"turns":[
        {"when_request_contains":"tui prompt","text":"tui reply","usage":{"input_tokens":7000,"output_tokens":700}},
        {"text":"first reply","usage":{"input_tokens":1234,"output_tokens":56}}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::write(
        h.home.path().join("config.toml"),
        "[models.mock]\ncontext_window = 100000\nmax_output = 1000\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n\n\
",
    )
    .unwrap();
    let out = h.run(&["-p", "remember the heron", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let earlier: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let id = earlier["session_id"].as_str().unwrap().to_string();
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("tui prompt\r");
    s.wait_for("tui reply");
    s.type_text("/cost\r");
    s.wait_for("tokens in 7000 · out 700");
    s.wait_for("↑7.0k ↓700");
    s.type_text(&format!("/resume {id}\r"));
    s.wait_for("resumed session");
    // The resumed session's own totals, not this one's: in /cost and in the status line.
    s.type_text("/cost\r");
    s.wait_for("tokens in 1234 · out 56");
    s.wait_for("↑1.2k ↓56");
    assert!(!s.text().contains("↑7.0k"), "{}", s.text());
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_tab_cycles_the_mode_quietly_and_clear_starts_afresh_at_once() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"first reply"}]}"#).await;
    let mut s = start_with(&h, &["--permission-mode", "default"]);
    s.wait_for("Ask tern");
    s.send(b"\x1b[Z");
    s.wait_for("accept-edits");
    // Messages are handled in order: once /cost answers, the mode change's own answer was handled too.
    s.type_text("/cost\r");
    s.wait_for("tokens in");
    assert!(!s.text().contains("permission mode: accept-edits"), "Shift+Tab needs no notice: {}", s.text());
    s.type_text("hello\r");
    s.wait_for("first reply");
    s.wait_idle();
    s.type_text("/clear\r");
    // The notice, not the command list's "start a new conversation" while /clear is typed.
    s.wait_for("· new conversation");
    assert!(!s.text().contains("first reply"), "{}", s.text());
    quit(&mut s);
}

/// An MCP server's form (elicitation) is a question card; the answer, in the
/// form's type, goes back to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_form_is_asked_in_the_tui() {
    let python = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/python-sdk/.venv/bin/python");
    if !python.exists() {
        eprintln!(
            "skipped: the Python MCP SDK is not installed in {} (`cargo xtask ci` installs it)",
            python.display()
        );
        return;
    }
    let server = python.with_file_name("../../form_server.py");
    let script = json!({"turns": [
        {"when_request_contains": "booked for", "text": "Table booked."},
        {"tool_calls": [{"name": "mcp__forms__book", "arguments": {}}]}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    common::write(
        &h.home.path().join("config.toml"),
        &format!(
            "[mcp_servers.forms]\ncommand = {:?}\nargs = [{:?}]\n",
            python.display().to_string(),
            server.display().to_string()
        ),
    );
    let mut s = start_with(&h, &["--permission-mode", "bypass", "book a table"]);
    s.wait_for("Booking a table");
    s.wait_for("Type your own answer");
    // A field without choices takes what is typed at once.
    answer_until_gone(&mut s, b"4\r", "Booking a table");
    s.wait_for("Table booked.");
    let results = h.tool_results(&h.bodies()[1]);
    assert_eq!(results[0].0.trim(), "booked for 4", "{results:?}");
    quit(&mut s);
}

/// Esc at an approval stops the turn: the call is refused, nothing more is
/// sent, the composer is the person's again, and the next prompt carries the
/// refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_at_an_approval_stops_the_turn() {
    let script = json!({"turns": [
        {"when_request_contains": "do it without touch", "text": "Understood, another way."},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch stopped-here"}}]},
        {"text": "SHOULD-NOT-APPEAR"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("make the file\r");
    s.wait_for("Esc stop");
    answer_until_gone(&mut s, b"\x1b", "Esc stop");
    s.wait_idle();
    assert_eq!(h.bodies().len(), 1, "nothing was sent after the refusal");
    assert!(!h.path("stopped-here").exists());
    assert!(!s.text().contains("SHOULD-NOT-APPEAR"), "{}", s.text());
    // The correction goes with the refusal.
    s.type_text("do it without touch\r");
    s.wait_for("Understood, another way.");
    let body = h.bodies()[1].to_string();
    assert!(body.contains("do it without touch") && body.contains("declined"), "{body}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rewind_picker_goes_back_in_the_conversation_only() {
    let (h, mut s) = after_three_prompts([
        json!([write("a.txt", "v1\n")]),
        json!([write("a.txt", "v2\nmore\n")]),
        json!([write("a.txt", "v3\n")]),
    ])
    .await;
    // The picker opens on the newest prompt, previewing what it changed (Esc Esc opens it too).
    s.type_text("/rewind\r");
    s.wait_for("Rewind: go back to before a prompt");
    s.wait_for("prompt 3 prompt-three");
    s.wait_for("a.txt +1 −2");
    // The second-to-last prompt, then "conversation only".
    s.send(b"\x1b[A");
    s.wait_for("prompt 2 prompt-two");
    s.wait_for("a.txt +2 −1");
    s.send(b"\r");
    s.wait_for("Go back to before prompt 2");
    s.send(b"\x1b[B");
    s.send(b"\r");
    s.wait_for("went back to before prompt 2");
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "v3\n", "conversation only: the file stays");
    // The conversation went back: the rewound prompt is in the composer, the next request lacks it.
    send_instead_of_prompt_two(&h, &mut s);
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_picker_searches_previews_and_resumes() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[{"when_request_contains":"zebrafinch","text":"back again"},{"text":"pelican facts follow"},{"text":"heron answer here"}]}"#,
    )
    .await;
    assert_eq!(h.run(&["-p", "tell me about pelicans"]).await.code, Some(0));
    assert_eq!(h.run(&["-p", "and herons please"]).await.code, Some(0));
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/resume\r");
    s.wait_for("Resume a session");
    s.wait_for("2 sessions in this folder");
    s.wait_for("and herons please");
    s.type_text("pelic");
    s.wait_for("1/2");
    s.wait_until_gone("and herons please");
    // The preview shows the session's last message.
    s.wait_for("• pelican facts follow");
    s.send(b"\r");
    s.wait_for("resumed session");
    s.type_text("zebrafinch\r");
    s.wait_for("back again");
    let last = h.bodies().pop().unwrap().to_string();
    assert!(last.contains("tell me about pelicans") && !last.contains("herons"), "{last}");
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_theme_picker_shows_each_theme_and_esc_puts_the_first_back() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[]}"#).await;
    let mut s = start_env(&h, &[], &[("COLORFGBG", "15;0")]);
    s.wait_for("Ask tern");
    let cyan = s.color_of("›");
    assert_eq!(cyan, Some(vt100::Color::Idx(6)), "dark: the prompt mark is cyan");
    s.type_text("/theme\r");
    s.wait_for("the screen shows each as you move");
    assert_eq!(s.color_of("Theme"), Some(vt100::Color::Idx(6)));
    // Light, shown at once: its accent is blue.
    s.send(b"\x1b[B");
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.color_of("Theme") != Some(vt100::Color::Idx(4)) {
        assert!(Instant::now() < deadline, "the light theme was not shown: {:?}", s.color_of("Theme"));
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send(b"\x1b");
    s.wait_until_gone("the screen shows each as you move");
    assert_eq!(s.color_of("›"), cyan, "Esc put the dark theme back");
    // Enter keeps the one chosen.
    s.type_text("/theme\r");
    s.wait_for("the screen shows each as you move");
    s.send(b"\x1b[B");
    s.send(b"\r");
    s.wait_for("theme Light for this session");
    assert_eq!(s.color_of("›"), Some(vt100::Color::Idx(4)));
    quit(&mut s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_permissions_picker_removes_a_rule() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[]}"#).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/permissions allow bash(make test:*)\r");
    s.wait_for("allow `bash(make test:*)` for this project");
    s.type_text("/permissions\r");
    s.wait_for("This project (your user config)");
    s.wait_for("allow bash(make test:*)");
    s.type_text("make");
    s.send(b"\x1b[3~");
    s.wait_for("remove `bash(make test:*)`?");
    s.send(b"\x1b[3~");
    s.wait_for("`bash(make test:*)` removed from");
    s.wait_until_gone("allow bash(make test:*)");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("bash(make test:*)"), "{config}");
    quit(&mut s);
}

/// A 2000-line write asked about in a 60×20 terminal: PageDown moves by the
/// rows the window shows, End and Home reach either end, and `/` finds a
/// line deep in it; then the file is approved and written whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_write_is_read_through_in_a_small_terminal() {
    let content: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": content}}]},
        {"text": "Wrote the big file."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut s = start_sized(&h, (60, 20), &[], &[]);
    s.wait_for("Ask tern");
    s.type_text("write the big file\r");
    s.wait_for("rows 1–6 of 2000 · 1994 more");
    // The file's line numbers on screen, in order.
    let shown = |s: &common::screen::Screen| -> Vec<usize> {
        s.text()
            .lines()
            .filter_map(|row| {
                let mut words = row.trim_start_matches('│').split_whitespace();
                let n = words.next()?.parse().ok()?;
                (words.next() == Some("+")).then_some(n)
            })
            .collect()
    };
    assert_eq!(shown(&s), (1..=6).collect::<Vec<_>>(), "{}", s.text());
    // Keys in the first moment of a question are type-ahead: press until one is taken.
    answer_until_gone(&mut s, b"\x1b[6~", "rows 1–6 of 2000");
    let page = shown(&s);
    assert_eq!(page.len(), 6, "{}", s.text());
    assert_eq!((page[0] - 1) % 6, 0, "a page is the six rows shown, none skipped: {page:?}");
    s.send(b"\x1b[F");
    s.wait_for("rows 1995–2000 of 2000");
    assert_eq!(shown(&s).last(), Some(&2000));
    s.send(b"\x1b[H");
    s.wait_for("rows 1–6 of 2000");
    // Search: the query is typed (a `y` in it answers nothing), Enter finds it.
    s.send(b"/");
    s.wait_for("search the preview");
    s.type_text("line 1717");
    s.wait_for("/ line 1717");
    s.send(b"\r");
    s.wait_for("“line 1717” 1/1");
    assert!(shown(&s).contains(&1717), "{}", s.text());
    assert!(s.text().contains("Write this file?"), "still asking: {}", s.text());
    // Esc leaves the search, not the question; then y approves.
    s.send(b"\x1b");
    s.wait_for("Enter choose · Ctrl+O all");
    let text = s.text();
    assert!(text.contains("Write this file?") && text.contains("rows 1715–1720 of 2000"), "{text}");
    s.send(b"y");
    s.wait_for("Wrote the big file.");
    assert_eq!(std::fs::read_to_string(h.path("big.txt")).unwrap(), content);
    quit(&mut s);
}

/// Esc twice on an empty composer opens the rewind picker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_esc_on_an_empty_composer_opens_the_rewind_picker() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"first done"}]}"#).await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("prompt-one\r");
    s.wait_for("first done");
    s.wait_idle();
    // Two presses apart, as a person's are (back to back, the bytes read as Alt+Esc).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.text().contains("Rewind: go back to before a prompt") {
        assert!(Instant::now() < deadline, "Esc Esc opened no picker:\n{}", s.text());
        s.send(b"\x1b");
        std::thread::sleep(Duration::from_millis(150));
        s.send(b"\x1b");
        std::thread::sleep(Duration::from_millis(300));
    }
    s.wait_for("prompt-one");
    quit(&mut s);
}
