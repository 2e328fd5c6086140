//! write and edit change a file without changing which file it is: owner,
//! group, mode, hard links and extended attributes survive; a file that may
//! not be written is refused; an in-place write stopped half-way is undone.
//! These run as whoever runs the tests (root here and in CI: the cases that
//! need privilege say so and are skipped without it); the ordinary-user
//! cases run the real binary as nobody (crates/cli/tests/e2e/file_identity.rs).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, ToolContext, ToolError, ToolOutput};
use tern_tools::ToolEnv;

use crate::xattrs::{get_xattr, root, set_xattr};
use tokio_util::sync::CancellationToken;

struct Fixture {
    _ws: tempfile::TempDir,
    env: Arc<ToolEnv>,
    tools: Vec<RuntimeTool>,
    journal: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let ws = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        // In-place writes keep their backups in the write journal, as tern's startup sets it up.
        let journal = root.join(".journal");
        tern_tools::start_write_journal(&journal);
        let env = Arc::new(ToolEnv::new(root.clone(), root.join(".tool-outputs")));
        let tools = tern_tools::builtin_tools(env.clone());
        Self { _ws: ws, env, tools, journal }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.env.workspace.join(rel)
    }

    fn put(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(rel);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    async fn call(&self, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.tools.iter().find(|t| t.name() == name).unwrap();
        let (input, _) = tool.understand(input);
        let ctx = ToolContext { call_id: "call_1".into(), tool_name: name.into(), confinement: None, judged: None };
        tool.implementation.execute(ctx, input, CancellationToken::new(), Arc::new(|_| {})).await
    }

    async fn read(&self, rel: &str) {
        self.call("read", json!({"path": rel})).await.unwrap();
    }

    /// Backups of in-place writes still in the journal.
    fn backups(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.journal)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".inplace"))
            .collect()
    }
}

/// `chattr` flags (FS_IOC_SETFLAGS); `Err` where this user or file system cannot set them.
fn set_flags(path: &Path, flags: libc::c_long) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    const FS_IOC_SETFLAGS: libc::c_ulong = 0x4008_6602;
    let f = std::fs::File::open(path)?;
    let mut v = flags;
    // SAFETY: the ioctl reads one long through the pointer.
    if unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_SETFLAGS, &mut v as *mut libc::c_long) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[tokio::test]
async fn as_root_an_edit_and_a_write_keep_another_users_owner_group_and_mode() {
    if !root() {
        eprintln!("needs root (to hand a file to another user): skipped");
        return;
    }
    let f = Fixture::new();
    let p = f.put("theirs.txt", b"one\ntwo\n");
    std::os::unix::fs::chown(&p, Some(1000), Some(1000)).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).unwrap();
    let ino = std::fs::metadata(&p).unwrap().ino();
    f.read("theirs.txt").await;
    f.call("edit", json!({"path": "theirs.txt", "old_string": "two", "new_string": "TWO"})).await.unwrap();
    // Root can give the replacement away, so the single-link file was replaced (a new inode).
    assert_ne!(std::fs::metadata(&p).unwrap().ino(), ino);
    f.call("write", json!({"path": "theirs.txt", "content": "one\nTWO\nthree\n"})).await.unwrap();
    let meta = std::fs::metadata(&p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"one\nTWO\nthree\n");
    assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (1000, 1000, 0o664));
    assert!(f.backups().is_empty());
}

#[tokio::test]
async fn a_hard_linked_file_is_changed_in_place_and_both_names_see_it() {
    let f = Fixture::new();
    let p = f.put("data.txt", b"alpha\nbeta\n");
    std::fs::hard_link(&p, f.path("other-name.txt")).unwrap();
    let ino = std::fs::metadata(&p).unwrap().ino();
    f.read("data.txt").await;
    f.call("edit", json!({"path": "data.txt", "old_string": "beta", "new_string": "BETA, longer"})).await.unwrap();
    f.call("edit", json!({"path": "data.txt", "old_string": "BETA, longer", "new_string": "b"})).await.unwrap();
    for name in ["data.txt", "other-name.txt"] {
        let meta = std::fs::metadata(f.path(name)).unwrap();
        assert_eq!(std::fs::read(f.path(name)).unwrap(), b"alpha\nb\n", "{name}");
        assert_eq!((meta.ino(), meta.nlink()), (ino, 2), "{name}");
    }
    f.call("write", json!({"path": "other-name.txt", "content": "whole\n"}))
        .await
        .expect_err("the other name was never read");
    f.read("other-name.txt").await;
    f.call("write", json!({"path": "other-name.txt", "content": "whole\n"})).await.unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"whole\n");
    assert!(f.backups().is_empty(), "the backup goes once the write is on disk: {:?}", f.backups());
}

#[tokio::test]
async fn extended_attributes_survive_write_and_edit() {
    let f = Fixture::new();
    let p = f.put("tagged.txt", b"x = 1\n");
    if let Err(e) = set_xattr(&p, "user.origin", b"downloaded") {
        eprintln!("this file system keeps no user attributes ({e}): skipped");
        return;
    }
    f.read("tagged.txt").await;
    f.call("edit", json!({"path": "tagged.txt", "old_string": "1", "new_string": "2"})).await.unwrap();
    assert_eq!(get_xattr(&p, "user.origin").as_deref(), Some(&b"downloaded"[..]));
    f.call("write", json!({"path": "tagged.txt", "content": "x = 3\n"})).await.unwrap();
    assert_eq!(get_xattr(&p, "user.origin").as_deref(), Some(&b"downloaded"[..]));
    assert_eq!(std::fs::read(&p).unwrap(), b"x = 3\n");
}

#[tokio::test]
async fn a_read_only_file_is_refused_whoever_runs_tern() {
    let f = Fixture::new();
    let p = f.put("locked.txt", b"keep me\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    f.read("locked.txt").await;
    let err =
        f.call("edit", json!({"path": "locked.txt", "old_string": "keep", "new_string": "lose"})).await.unwrap_err();
    assert!(
        err.message.starts_with("Cannot edit locked.txt: it is read-only (mode 0444: nobody may write it"),
        "{}",
        err.message
    );
    assert!(err.message.contains("chmod u+w locked.txt") && err.message.ends_with("Nothing was changed."));
    let err = f.call("write", json!({"path": "locked.txt", "content": "gone\n"})).await.unwrap_err();
    assert!(err.message.starts_with("Cannot overwrite locked.txt: it is read-only"), "{}", err.message);
    assert_eq!(std::fs::read(&p).unwrap(), b"keep me\n");
    assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o7777, 0o444);
}

#[tokio::test]
async fn immutable_and_append_only_files_are_refused_and_say_why() {
    const IMMUTABLE: libc::c_long = 0x10;
    const APPEND: libc::c_long = 0x20;
    let f = Fixture::new();
    for (name, flag, why) in [
        ("frozen.txt", IMMUTABLE, "it has the immutable attribute (`chattr +i`)"),
        ("log.txt", APPEND, "it is append-only (`chattr +a`)"),
    ] {
        let p = f.put(name, b"as it was\n");
        f.read(name).await;
        if let Err(e) = set_flags(&p, flag) {
            eprintln!("cannot set chattr flags here ({e}): skipped");
            return;
        }
        let err = f.call("edit", json!({"path": name, "old_string": "was", "new_string": "is"})).await.unwrap_err();
        set_flags(&p, 0).unwrap();
        assert_eq!(err.message.split_once(": ").map(|(_, w)| w.starts_with(why)), Some(true), "{}", err.message);
        assert_eq!(std::fs::read(&p).unwrap(), b"as it was\n");
    }
}

#[tokio::test]
async fn a_failed_in_place_write_puts_the_original_back() {
    let f = Fixture::new();
    let old: Vec<u8> = (0..120_000).flat_map(|i| format!("old line {i}\n").into_bytes()).collect();
    let p = f.put("big.txt", &old);
    std::fs::hard_link(&p, f.path("big-link.txt")).unwrap();
    f.read("big.txt").await;
    // The disk fills up after the first megabyte.
    tern_tools::set_in_place_hook(Some(|written| {
        if written >= 1 << 20 { Err(std::io::Error::from_raw_os_error(libc::ENOSPC)) } else { Ok(()) }
    }));
    let new: String = (0..120_000).map(|i| format!("NEW line {i}\n")).collect();
    let err = f.call("write", json!({"path": "big.txt", "content": new})).await.unwrap_err();
    tern_tools::set_in_place_hook(None);
    assert!(err.message.contains("No space left on device"), "{}", err.message);
    assert!(err.message.contains("the file was put back as it was"), "{}", err.message);
    assert!(std::fs::read(&p).unwrap() == old, "the original is whole again");
    assert!(f.backups().is_empty());
}

/// The writer [`a_kill_in_the_middle_of_an_in_place_write_is_undone_at_the_next_start`]
/// starts and kills: a test that does nothing unless that test runs it.
#[tokio::test]
async fn killed_writer_child() {
    let Some(dir) = std::env::var_os("TERN_TEST_KILLED_WRITER") else { return };
    let dir = PathBuf::from(dir);
    tern_tools::start_write_journal(&dir.join("journal"));
    let env = Arc::new(ToolEnv::new(dir.join("ws"), dir.join("out")));
    let tools = tern_tools::builtin_tools(env);
    // After the first megabyte: say so, then wait to be killed.
    tern_tools::set_in_place_hook(Some(|_| {
        println!("half-written");
        let _ = std::io::stdin().read_line(&mut String::new());
        Err(std::io::Error::other("the test did not kill the writer"))
    }));
    let call = |name: &str, input: Value| {
        let tool = tools.iter().find(|t| t.name() == name).unwrap();
        let ctx = ToolContext { call_id: "c".into(), tool_name: name.into(), confinement: None, judged: None };
        tool.implementation.execute(ctx, input, CancellationToken::new(), Arc::new(|_| {}))
    };
    call("read", json!({"path": "big.txt"})).await.unwrap();
    let new: String = (0..200_000).map(|i| format!("NEW line {i}\n")).collect();
    let _ = call("write", json!({"path": "big.txt", "content": new})).await;
}

#[test]
fn a_kill_in_the_middle_of_an_in_place_write_is_undone_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(base.join("ws")).unwrap();
    let p = base.join("ws/big.txt");
    let old: Vec<u8> = (0..200_000).flat_map(|i| format!("old line {i}\n").into_bytes()).collect();
    std::fs::write(&p, &old).unwrap();
    std::fs::hard_link(&p, base.join("ws/link.txt")).unwrap();
    let ino = std::fs::metadata(&p).unwrap().ino();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["keep_identity::killed_writer_child", "--exact", "--nocapture"])
        .env("TERN_TEST_KILLED_WRITER", &base)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("half-written"))),
        "the writer stopped before its write was half-done"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let torn = std::fs::read(&p).unwrap();
    assert!(torn != old && torn.starts_with(b"NEW line 0\n"), "the kill left a half-written file");

    let stale = tern_tools::start_write_journal(&base.join("journal"));
    assert_eq!(stale.restored, std::slice::from_ref(&p));
    assert!(stale.kept.is_empty(), "{:?}", stale.kept);
    for name in ["big.txt", "link.txt"] {
        let path = base.join("ws").join(name);
        assert!(std::fs::read(&path).unwrap() == old, "{name} has its original back");
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    }
    let left: Vec<_> = std::fs::read_dir(base.join("journal"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".inplace"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let warnings = stale.warnings();
    assert!(warnings[0].ends_with("it has its content from before that write again"), "{warnings:?}");
}
