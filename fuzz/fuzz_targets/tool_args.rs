//! Arguments a model might send, through every built-in tool's argument
//! preparation (conforming to the schema and near-misses included),
//! precheck and schema validation: an error, never a panic.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use tern_agent_loop::RuntimeTool;

fn tools() -> &'static Vec<RuntimeTool> {
    static TOOLS: OnceLock<Vec<RuntimeTool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tern-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        tern_tools::builtin_tools(Arc::new(tern_tools::ToolEnv::new(&dir, dir.join("out"))))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    for tool in tools() {
        let (prepared, _understood) = tool.understand(input.clone());
        let _ = tool.implementation.precheck(&prepared);
        let _ = tool.validate(&prepared);
    }
});
