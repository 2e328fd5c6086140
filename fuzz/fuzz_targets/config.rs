//! A repository's config files: `.tern/config.toml` and `.mcp.json`, as a
//! hostile repository could write them. A parse error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(config) = toml::from_str::<tern_runtime::config::FileConfig>(text) {
        let _ = tern_runtime::config::FileConfig::default().merge(config);
    }
    if text.trim_start().starts_with('{') {
        // The `--mcp-config` form that takes the JSON itself (a path otherwise).
        let _ = tern_runtime::mcp_config::load_mcp_config_arg(std::path::Path::new(text), &mut Vec::new());
    }
});
