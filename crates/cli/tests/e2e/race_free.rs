//! What was judged is what runs, through the real binary: while another
//! process keeps flipping a workspace symlink between a workspace file and a
//! private key (or a workspace folder and `~/.ssh`), hundreds of `read`,
//! `grep`, `ls` and `write` calls never touch the key or the folder — each
//! tool works on the file the policy judged, through descriptors, and a
//! link swapped in after the decision is refused rather than followed.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Harness, Wire, write};
use serde_json::{Value, json};

const MARKER: &str = "TERN-FAKE-PRIVATE-KEY-race-5d21";
const NAME_MARKER: &str = "tern_fake_key_name_9c3e";

/// A fake home holding a private key (and a file whose name is a marker).
fn fake_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    write(&home.path().join(".ssh/id_rsa"), &format!("-----BEGIN KEY-----\n{MARKER}\n-----END KEY-----\n"));
    write(&home.path().join(format!(".ssh/{NAME_MARKER}")), &format!("{MARKER}\n"));
    home
}

/// Flips `link` between `a` and `b` (atomic renames of fresh links) until
/// dropped; counts the flips so a test can tell the race really ran.
struct Flipper {
    stop: Arc<AtomicBool>,
    flips: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flipper {
    fn start(link: PathBuf, a: PathBuf, b: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flips = Arc::new(AtomicUsize::new(0));
        let (s, f) = (stop.clone(), flips.clone());
        let thread = std::thread::spawn(move || {
            let tmp = link.with_extension("flip-tmp");
            while !s.load(Ordering::Relaxed) {
                let target = if f.load(Ordering::Relaxed) % 2 == 0 { &a } else { &b };
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(target, &tmp).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
                f.fetch_add(1, Ordering::Relaxed);
            }
        });
        Self { stop, flips, thread: Some(thread) }
    }

    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.flips.load(Ordering::Relaxed)
    }
}

/// `turns` turns each making the calls `batch` (in parallel where the tools allow), then "done".
fn script(batch: &[Value], turns: usize) -> String {
    let mut all: Vec<Value> = (0..turns).map(|_| json!({ "tool_calls": batch })).collect();
    all.push(json!({"text": "done"}));
    json!({ "turns": all }).to_string()
}

/// `n` calls of `tool` with `args`.
fn calls(tool: &str, args: Value, n: usize) -> Vec<Value> {
    vec![json!({"name": tool, "arguments": args}); n]
}

async fn run(h: &Harness, home: &Path) -> (Option<i32>, String) {
    let mut cmd = h.command(&["-p", "go", "--output-format", "json"]);
    cmd.env("HOME", home);
    let out = cmd.output().await.unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Every tool result of the run, and whether any request carried a marker.
fn results(h: &Harness) -> (Vec<(String, bool)>, bool) {
    let bodies = h.bodies();
    let leaked = bodies.iter().any(|b| b.to_string().contains(MARKER) || b.to_string().contains(NAME_MARKER));
    (h.tool_results(bodies.last().unwrap()), leaked)
}

/// Runs tern while `link` flips between `a` and `b`; checks the run ended
/// well and the link really kept flipping. Returns the tool results and
/// whether a marker reached the model.
async fn run_flipping(h: &Harness, home: &Path, link: &str, a: PathBuf, b: PathBuf) -> (Vec<(String, bool)>, bool) {
    let flipper = Flipper::start(h.path(link), a, b);
    let (code, stderr) = run(h, home).await;
    let flips = flipper.stop();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(flips > 100, "the link kept flipping during the run ({flips})");
    results(h)
}

#[tokio::test]
async fn a_flipped_file_link_never_gives_read_the_key() {
    let home = fake_home();
    let batch = calls("read", json!({"path": "link"}), 50);
    let mut h = Harness::new(Wire::Anthropic, &script(&batch, 3)).await;
    h.mode = None;
    write(&h.path("README.md"), "the readme\n");
    let (results, leaked) =
        run_flipping(&h, home.path(), "link", h.path("README.md"), home.path().join(".ssh/id_rsa")).await;
    assert!(!leaked, "the key reached the model");
    assert_eq!(results.len(), 150);
    // Each read gave the readme or was refused (judged outside, or changed after the check);
    // which of them did depends on the scheduler, so only the count is printed.
    assert!(results.iter().all(|(t, e)| *e || t.contains("the readme")), "{results:?}");
    let read_readme = results.iter().filter(|(_, e)| !e).count();
    eprintln!("{read_readme} of {} reads gave the readme", results.len());
}

#[tokio::test]
async fn a_flipped_folder_link_never_gives_grep_or_ls_the_folder() {
    let home = fake_home();
    let grep = json!({"name": "grep", "arguments": {"pattern": "TERN-FAKE|readme", "path": "link"}});
    let ls = json!({"name": "ls", "arguments": {"path": "link"}});
    let batch: Vec<Value> = (0..50).map(|i| if i % 2 == 0 { grep.clone() } else { ls.clone() }).collect();
    let mut h = Harness::new(Wire::Anthropic, &script(&batch, 2)).await;
    h.mode = None;
    write(&h.path("docs/guide.md"), "the readme of docs\n");
    let (results, leaked) = run_flipping(&h, home.path(), "link", h.path("docs"), home.path().join(".ssh")).await;
    assert!(!leaked, "the folder's content or names reached the model");
    assert_eq!(results.len(), 100);
}

#[tokio::test]
async fn a_flipped_folder_link_never_lets_write_reach_ssh() {
    let home = fake_home();
    let batch = calls("write", json!({"path": "d/authorized_keys", "content": "ssh-ed25519 AAAA attacker\n"}), 30);
    let mut h = Harness::new(Wire::Anthropic, &script(&batch, 2)).await;
    h.mode = Some("accept-edits");
    std::fs::create_dir_all(h.path("realdir")).unwrap();
    let (results, _) = run_flipping(&h, home.path(), "d", h.path("realdir"), home.path().join(".ssh")).await;
    assert!(!home.path().join(".ssh/authorized_keys").exists(), "write reached ~/.ssh");
    assert_eq!(results.len(), 60);
    assert!(results.iter().all(|(t, e)| *e || t.contains("realdir/authorized_keys")), "{results:?}");
}

#[tokio::test]
async fn a_skill_swapped_for_a_link_after_discovery_is_not_read() {
    let home = fake_home();
    let turns = json!({"turns": [
        // An approved command (a script the policy cannot see into) swaps the skill for a link.
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sh swap.sh"}}]},
        {"tool_calls": [{"name": "skill", "arguments": {"name": "leak"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &turns.to_string()).await;
    write(&h.path(".agents/skills/leak/SKILL.md"), "---\nname: leak\ndescription: a skill\n---\nThe instructions.\n");
    write(&h.path("swap.sh"), "ln -sf \"$HOME/.ssh/id_rsa\" .agents/skills/leak/SKILL.md\n");
    let (code, stderr) = run(&h, home.path()).await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let target = std::fs::read_link(h.path(".agents/skills/leak/SKILL.md"))
        .unwrap_or_else(|e| panic!("{e}: {:?}", h.tool_results(h.bodies().last().unwrap())));
    assert_eq!(target, home.path().join(".ssh/id_rsa"), "the command swapped the skill for a link");
    let (results, leaked) = results(&h);
    assert!(!leaked, "the key reached the model: {results:?}");
    assert!(results[1].0.contains("links outside"), "{results:?}");
}
