//! Commands every front end sends, applied by the core: the mode a session
//! may enter, the words a setting takes.

use std::sync::{Arc, Mutex};

use tern_protocol::{AgentEvent, Command, Mode};
use tern_runtime::apply::{CommandError, Outcome};
use tern_runtime::{Overrides, Runtime};

#[tokio::test]
async fn modes_and_settings_follow_one_rule() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(r#"{"turns": []}"#).unwrap(), None)
        .await
        .unwrap();
    let overrides = crate::mock_overrides(&server, &work, &home);
    let rt = Runtime::new(overrides.clone()).await.unwrap();
    let seen: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let kept = seen.clone();
    let events: tern_agent_loop::EventSink = Arc::new(move |e| kept.lock().unwrap().push(e));

    // Bypass only when the session may; the refusal changes nothing and says nothing.
    let refused = rt.apply(Command::SetMode { mode: Mode::Bypass }, &events).await.unwrap_err();
    assert!(matches!(refused, CommandError::Mode(_)), "{refused}");
    assert_eq!(rt.policy().mode(), Mode::Default);
    assert!(seen.lock().unwrap().is_empty());
    // Another mode is entered, and said once; the cycle goes on from it.
    rt.apply(Command::SetMode { mode: Mode::AcceptEdits }, &events).await.unwrap();
    rt.apply(Command::CycleMode, &events).await.unwrap();
    let changes: Vec<(Mode, Mode)> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ModeChanged { mode, previous } => Some((*mode, *previous)),
            _ => None,
        })
        .collect();
    assert_eq!(changes, [(Mode::AcceptEdits, Mode::Default), (Mode::Plan, Mode::AcceptEdits)]);
    // With --allow-dangerously-skip-permissions, bypass may be entered later.
    let allowed = Runtime::new(Overrides { allow_bypass: true, ..overrides }).await.unwrap();
    allowed.apply(Command::SetMode { mode: Mode::Bypass }, &events).await.unwrap();
    assert_eq!(allowed.policy().mode(), Mode::Bypass);

    // The mode setting takes the words every front end takes, and keeps tern's.
    let set = |value: &str| Command::Setting { key: "mode".into(), value: value.into() };
    let Outcome::Setting { file, .. } = rt.apply(set("acceptEdits"), &events).await.unwrap() else {
        panic!("a setting's outcome");
    };
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("mode = \"accept-edits\""), "{text}");
    rt.apply(set("dontAsk"), &events).await.unwrap();
    assert!(std::fs::read_to_string(&file).unwrap().contains("mode = \"dont-ask\""));
    let bypass = rt.apply(set("bypassPermissions"), &events).await.unwrap_err();
    assert!(bypass.to_string().contains("bypass only by --permission-mode"), "{bypass}");
    assert!(rt.apply(set("sideways"), &events).await.is_err());
}
