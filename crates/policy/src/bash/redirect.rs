//! What a redirection does: read a file, write one, or only shuffle descriptors.

use super::BashClass;
use super::word::Word;

/// The effect of an output redirection (or of a program writing a file) on a command's class.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Effect {
    pub class: BashClass,
    pub reason: String,
    /// The file written, for the path rules; `None` when nothing is written.
    pub path: Option<String>,
    /// It connects to the network (`/dev/tcp/...`).
    pub network: bool,
}

/// One `file_redirect`, judged.
pub(super) enum FileRedirect {
    /// `< file`: the command reads it as its input.
    Input { download: bool },
    /// `> file` and friends.
    Output(Effect),
    /// `2>&1`, `>&-`, `> /dev/null`.
    Harmless,
}

/// Judges a file redirection by its operator (`>`, `>>`, `&>`, `>&`, `<`, ...) and destination;
/// `opened` are the descriptors this command's earlier redirections opened (`3>out`).
pub(super) fn file(operator: &str, destination: Option<&Word>, opened: &[u32]) -> FileRedirect {
    match operator {
        "<" => match destination.and_then(Word::fixed) {
            // bash opens a connection for these names itself.
            Some(path) if path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/") => {
                FileRedirect::Output(Effect {
                    class: BashClass::Write,
                    reason: format!("connects to the network ({path})"),
                    path: None,
                    network: true,
                })
            }
            _ => FileRedirect::Input { download: destination.is_some_and(|w| w.downloads) },
        },
        "<&-" | ">&-" => FileRedirect::Harmless,
        "<&" => match destination.and_then(Word::fixed) {
            Some("-") => FileRedirect::Harmless,
            Some(target) => duplicate(target, opened).unwrap_or_else(|| {
                unjudged(format!("reads from `<&{target}`, which is not a descriptor tern can judge"))
            }),
            None => unjudged("reads from a descriptor named at run time".to_owned()),
        },
        ">&" => match destination.and_then(Word::fixed) {
            Some("-") => FileRedirect::Harmless,
            Some(target) if target.bytes().all(|b| b.is_ascii_digit()) => {
                duplicate(target, opened).unwrap_or(FileRedirect::Harmless)
            }
            _ => output(destination),
        },
        ">" | ">>" | "&>" | "&>>" | ">|" => output(destination),
        other => FileRedirect::Output(Effect {
            class: BashClass::Unknown,
            reason: format!("uses the redirection `{other}`, which is not judged"),
            path: None,
            network: false,
        }),
    }
}

/// `>&N` or `<&N`: the standard streams and descriptors this command opened are
/// harmless; any other number is a descriptor tern's own process handed down (a
/// file, a pipe or a socket tern cannot see), so what goes through it is not judged.
/// `None` when `target` is not a number.
fn duplicate(target: &str, opened: &[u32]) -> Option<FileRedirect> {
    let fd: u32 = target.parse().ok()?;
    if fd <= 2 || opened.contains(&fd) {
        return Some(FileRedirect::Harmless);
    }
    Some(unjudged(format!(
        "uses file descriptor {fd}, which the command did not open: an inherited descriptor can lead to any file, \
         pipe or socket"
    )))
}

fn unjudged(reason: String) -> FileRedirect {
    FileRedirect::Output(Effect { class: BashClass::Unknown, reason, path: None, network: false })
}

fn output(destination: Option<&Word>) -> FileRedirect {
    let Some(word) = destination else {
        return FileRedirect::Output(Effect {
            class: BashClass::Unknown,
            reason: "redirects output to an unknown place".to_owned(),
            path: None,
            network: false,
        });
    };
    match write_effect(word, "redirection") {
        Some(effect) => FileRedirect::Output(effect),
        None => FileRedirect::Harmless,
    }
}

/// The effect of writing to `word`; `None` for `/dev/null` and the terminal streams.
pub(super) fn write_effect(word: &Word, how: &str) -> Option<Effect> {
    // `$HOME/.bashrc` is a known file: `~/.bashrc` (a redirection target is never split).
    let home = word.home_path.as_deref().filter(|p| !p.contains(['*', '?', '[']));
    let Some(path) = word.fixed().or(home) else {
        return Some(Effect {
            class: BashClass::Unknown,
            reason: format!("writes to a file named at run time ({}, {how})", word.source),
            path: Some(word.source.clone()),
            network: false,
        });
    };
    if is_harmless_target(path) {
        return None;
    }
    if is_inherited_descriptor(path) {
        return Some(Effect {
            class: BashClass::Unknown,
            reason: format!(
                "writes to {path}, a file descriptor the command did not open: it can lead to any file, pipe or \
                 socket ({how})"
            ),
            path: None,
            network: false,
        });
    }
    if is_disk_device(path) {
        return Some(Effect {
            class: BashClass::Dangerous,
            reason: format!("writes straight to the device {path} ({how})"),
            path: Some(path.to_owned()),
            network: false,
        });
    }
    if path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/") {
        return Some(Effect {
            class: BashClass::Write,
            reason: format!("connects to the network ({path})"),
            path: None,
            network: true,
        });
    }
    Some(Effect {
        class: BashClass::Write,
        reason: format!("writes to file {path} ({how})"),
        path: Some(path.to_owned()),
        network: false,
    })
}

/// Devices that hold no one's data: writing there keeps nothing, reading there reveals nothing.
pub(crate) fn is_harmless_target(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/zero"
            | "/dev/random"
            | "/dev/urandom"
            | "/dev/stdin"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/tty"
    ) || matches!(path.strip_prefix("/dev/fd/"), Some("0" | "1" | "2"))
}

/// `/dev/fd/N` past the standard streams, and `/proc/PID/fd/N` for any process:
/// descriptors handed down to the command, or another process's.
pub(crate) fn is_inherited_descriptor(path: &str) -> bool {
    if let Some(n) = path.strip_prefix("/dev/fd/") {
        return !is_harmless_target(path) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    }
    let mut parts = path.strip_prefix("/proc/").unwrap_or_default().split('/').filter(|p| !p.is_empty());
    let who = parts.next().unwrap_or_default();
    let is_process =
        who == "self" || who == "thread-self" || (!who.is_empty() && who.bytes().all(|b| b.is_ascii_digit()));
    let rest: Vec<&str> = parts.collect();
    is_process && (rest.first() == Some(&"fd") || (rest.first() == Some(&"task") && rest.get(2) == Some(&"fd")))
}

/// Block devices and memory: writing there destroys file systems or the running system.
pub(super) fn is_disk_device(path: &str) -> bool {
    const DEVICES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "dm-", "md", "mapper/", "loop", "mem", "kmem",
        "port", "zram", "sr", "bcache", "root",
    ];
    path.strip_prefix("/dev/").is_some_and(|name| DEVICES.iter().any(|device| name.starts_with(device)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_harmless_targets() {
        assert!(is_disk_device("/dev/sda1"));
        assert!(is_disk_device("/dev/nvme0n1"));
        assert!(is_disk_device("/dev/mem"));
        assert!(!is_disk_device("/dev/null"));
        assert!(!is_disk_device("/tmp/sda"));
        assert!(is_harmless_target("/dev/null"));
        assert!(is_harmless_target("/dev/fd/2"));
        assert!(!is_harmless_target("/dev/fd/3"));
    }

    #[test]
    fn inherited_descriptors() {
        for path in ["/dev/fd/3", "/dev/fd/10", "/proc/self/fd/1", "/proc/123/fd/7", "/proc/self/task/9/fd/4"] {
            assert!(is_inherited_descriptor(path), "{path}");
        }
        for path in ["/dev/fd/1", "/dev/stdout", "/proc/self/status", "/tmp/fd/3", "/dev/fd/x"] {
            assert!(!is_inherited_descriptor(path), "{path}");
        }
    }
}
