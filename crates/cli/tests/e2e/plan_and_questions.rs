//! Plan mode and the model's questions, through the real binary: the
//! plan-mode tools come and go with the mode; headless `--permission-mode
//! plan` ends with the plan as the result; `ask_user` is not offered where
//! nobody can answer.

use crate::common;

use common::{Harness, Wire, tool_names, write};
use serde_json::json;

#[tokio::test]
async fn headless_plan_mode_ends_with_the_plan_as_the_result() {
    let plan = "1. Add the parser test\n2. Fix the empty-input case";
    let script = json!({"turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "x.txt", "content": "no"}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": plan}}]},
        {"text": "unreachable"}
    ]});
    let mut h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    h.mode = Some("plan");
    let out = h.run(&["-p", "plan the fix", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["result"], plan, "{result}");
    assert!(!h.path("x.txt").exists(), "plan mode refused the write");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "the run ended at the plan");
    let tools = tool_names(&bodies[0]);
    assert!(tools.contains(&"exit_plan_mode".to_string()) && !tools.contains(&"enter_plan_mode".to_string()));
    assert!(!tools.contains(&"ask_user".to_string()), "nobody can answer headless: {tools:?}");
}

#[tokio::test]
async fn entering_plan_mode_swaps_the_tools_and_refuses_changes() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "enter_plan_mode", "arguments": {}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "x.txt", "content": "no"}}]},
        {"text": "planned"}
    ]});
    let mut h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    h.mode = Some("accept-edits");
    write(&h.path("keep.txt"), "k");
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let before = tool_names(&bodies[0]);
    let after = tool_names(&bodies[1]);
    // enter_plan_mode waits behind tool_search, named in the system prompt; called by its name, it runs.
    assert!(!before.contains(&"enter_plan_mode".to_string()) && !before.contains(&"exit_plan_mode".to_string()));
    assert!(bodies[0]["system"][0]["text"].as_str().unwrap().contains("\n- enter_plan_mode: "));
    assert!(after.contains(&"exit_plan_mode".to_string()) && !after.contains(&"enter_plan_mode".to_string()));
    assert!(!h.path("x.txt").exists(), "the write after entering plan mode was refused");
    assert!(!after.contains(&"write".to_string()), "plan mode takes writing tools out of the catalog: {after:?}");
    let results = h.tool_results(&bodies[2]);
    assert!(results[0].0.contains("Plan mode is on") && results.last().unwrap().1, "{results:?}");
}
