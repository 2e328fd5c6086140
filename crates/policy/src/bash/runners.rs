//! Programs that run other programs or code: wrappers (`timeout`, `env`,
//! `xargs`, ...), shells (`bash -c`), `eval`, `source`, `trap`, and language
//! interpreters (`python -c`, `node -e`). A wrapper is as bad as what it runs;
//! code we cannot read is Unknown; code from a download is Dangerous.

use super::judge::{self, Invocation, Stdin, Verdict, risky_variable};
use super::options::{self, Spec};
use super::readers::{self, PRINTS_ENVIRONMENT};
use super::word::Word;
use super::{BashClass, Cwd};

/// Judges `program` if it runs other programs or code; `None` otherwise.
pub(super) fn judge(program: &str, inv: &Invocation) -> Option<Verdict> {
    let verdict = match program {
        "timeout" => wrapper(inv, program, &Spec::wrapper("sk", &["--signal", "--kill-after"]), 1),
        "nice" => wrapper(inv, program, &Spec::wrapper("n", &["--adjustment"]), 0),
        "stdbuf" => wrapper(inv, program, &Spec::wrapper("ioe", &["--input", "--output", "--error"]), 0),
        "setsid" | "nohup" | "unbuffer" | "builtin" | "coproc" => wrapper(inv, program, &Spec::wrapper("", &[]), 0),
        "exec" => wrapper(inv, program, &Spec::wrapper("a", &[]), 0),
        "time" => time(inv),
        "ionice" => ionice(inv),
        "command" => command(inv),
        "env" => env(inv),
        "xargs" => xargs(inv),
        "watch" => watch(inv),
        "busybox" | "toybox" => match inv.args.first().and_then(Word::fixed) {
            Some(applet) if !applet.starts_with('-') => judge::run_rest(inv, 0, program, inv.stdin)?,
            Some(_) | None if inv.args.iter().all(|w| w.fixed().is_some()) => {
                Verdict::read_only(format!("{program} without an applet only prints"))
            }
            _ => Verdict::unknown(format!("{program} runs an applet computed at run time")),
        },
        "eval" => eval(inv),
        "source" | "." => source(program, inv),
        "trap" => trap(inv),
        "alias" => {
            if inv.args.iter().any(|w| w.text().contains('=') || w.is_dynamic()) {
                Verdict::unknown("alias defines a command name that can hide any command")
            } else {
                Verdict::read_only("alias only prints aliases")
            }
        }
        "ssh" => Verdict::unknown("ssh runs commands on another machine"),
        _ if is_shell(program) => shell(program, inv),
        _ => interpreter(program, inv)?,
    };
    Some(verdict)
}

pub(super) fn is_shell(program: &str) -> bool {
    matches!(
        program,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "rbash" | "fish" | "csh" | "tcsh" | "pdksh"
    )
}

/// `WRAPPER [options] [skip operands] COMMAND...`: judged by COMMAND.
fn wrapper(inv: &Invocation, program: &str, spec: &Spec, skip: usize) -> Verdict {
    let parsed = options::parse(inv.args, spec);
    if let Some(word) = parsed.uncertain {
        return Verdict::unknown(format!("{program} gets an argument computed at run time ({})", word.source));
    }
    match parsed.rest.and_then(|rest| judge::run_rest(inv, rest + skip, program, inv.stdin)) {
        Some(verdict) => verdict,
        None => Verdict::read_only(format!("{program} without a command runs nothing")),
    }
}

fn time(inv: &Invocation) -> Verdict {
    let parsed = options::parse(inv.args, &Spec::wrapper("fo", &["--format", "--output"]));
    let outputs: Vec<String> = parsed.values(&["-o", "--output"]).iter().map(|v| v.text().to_owned()).collect();
    let verdict = wrapper(inv, "time", &Spec::wrapper("fo", &["--format", "--output"]), 0);
    match outputs.first() {
        Some(path) => {
            let reason = format!("writes its timings to file {path} (time -o)");
            verdict.raised(BashClass::Write, reason).writing(outputs)
        }
        None => verdict,
    }
}

fn ionice(inv: &Invocation) -> Verdict {
    let spec = Spec::wrapper("cnpPu", &["--class", "--classdata", "--pid", "--pgid", "--uid"]);
    let parsed = options::parse(inv.args, &spec);
    if parsed.has_any(&["-p", "-P", "-u", "--pid", "--pgid", "--uid"]) {
        return Verdict::write("ionice -p changes another process's I/O priority");
    }
    wrapper(inv, "ionice", &spec, 0)
}

fn command(inv: &Invocation) -> Verdict {
    let parsed = options::parse(inv.args, &Spec::wrapper("", &[]));
    if parsed.has_any(&["-v", "-V"]) {
        return Verdict::read_only("command -v only looks up a name");
    }
    wrapper(inv, "command", &Spec::wrapper("", &[]), 0)
}

/// `env [-i] [-u NAME] [NAME=value...] [COMMAND...]`.
fn env(inv: &Invocation) -> Verdict {
    let spec = Spec::wrapper("uCS", &["--unset", "--chdir", "--split-string"]);
    let parsed = options::parse(inv.args, &spec);
    if parsed.has_any(&["-S", "--split-string"]) {
        return Verdict::unknown("env -S splits a string into a command, which is not judged");
    }
    if let Some(word) = parsed.uncertain {
        return Verdict::unknown(format!("env gets an argument computed at run time ({})", word.source));
    }
    let chdir = parsed.values(&["-C", "--chdir"]).first().map(|dir| match dir {
        options::ValueOf::Attached(text) => Cwd::Workspace.join(text),
        options::ValueOf::Word(word) => match word.path().filter(|_| !word.splits) {
            Some(path) => Cwd::Workspace.join(path),
            None => Cwd::Unknown,
        },
    });
    let mut at = parsed.rest.unwrap_or(inv.args.len());
    let mut risky = None;
    let mut overrides = Vec::new();
    while let Some(word) = inv.args.get(at) {
        let Some((name, value)) = assignment(word) else { break };
        risky = risky.or_else(|| risky_variable(name, &value));
        overrides.extend(env_override(name));
        at += 1;
    }
    let mut verdict = judge::run_rest(inv, at, "env", inv.stdin)
        .unwrap_or_else(|| Verdict::write(format!("env without a command {PRINTS_ENVIRONMENT}")));
    // `env -C DIR` runs the program in DIR, relative to where env runs.
    verdict.chdir = match (chdir, verdict.chdir.take()) {
        (None, inner) => inner,
        (Some(Cwd::Dir(outer)), Some(Cwd::Dir(inner))) => Some(Cwd::Dir(outer).join(&inner)),
        (Some(outer), None) => Some(outer),
        (Some(_), Some(_)) => Some(Cwd::Unknown),
    };
    verdict.overrides.extend(overrides);
    match risky {
        Some(reason) => verdict.raised(BashClass::Unknown, reason),
        None => verdict,
    }
}

/// Environment variables that only change output, language or logging: setting them for a
/// command (`RUST_LOG=debug cargo test`) keeps a prefix rule covering it. Any other variable
/// may change which program or configuration runs (`NODE_OPTIONS`, `npm_config_*`).
pub(super) fn env_override(name: &str) -> Option<String> {
    const SAFE: &[&str] = &[
        "CI",
        "NODE_ENV",
        "RUST_LOG",
        "RUST_BACKTRACE",
        "LANG",
        "LANGUAGE",
        "TZ",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "TERM",
        "COLUMNS",
        "LINES",
        "DEBUG",
        // Pagers are judged by their value (only cat/less/more pass): see judge::risky_variable.
        "PAGER",
        "GIT_PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
    ];
    let safe = SAFE.contains(&name) || name.starts_with("LC_");
    (!safe).then(|| format!("sets {name}"))
}

/// `NAME=value` as an argument of `env`.
fn assignment(word: &Word) -> Option<(&str, Word)> {
    let (name, value) = word.prefix.split_once('=')?;
    let is_name = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !is_name {
        return None;
    }
    let value = match word.fixed() {
        Some(_) => Word::literal(value),
        None => Word::unknown(word.source.get(name.len() + 1..).unwrap_or_default()),
    };
    Some((name, value))
}

/// Stands for the arguments `xargs` reads from its input.
const FROM_INPUT: &str = "(arguments read from input)";

/// `xargs [options] [COMMAND...]`: COMMAND gets arguments read from the input, which could be options.
fn xargs(inv: &Invocation) -> Verdict {
    let spec = Spec::wrapper(
        "ILnPsdEa",
        &["--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"],
    );
    let parsed = options::parse(inv.args, &spec);
    if let Some(word) = parsed.uncertain {
        return Verdict::unknown(format!("xargs gets an argument computed at run time ({})", word.source));
    }
    let Some(rest) = parsed.rest.filter(|rest| *rest < inv.args.len()) else {
        return Verdict::read_only("xargs without a command only echoes its input");
    };
    let replace = parsed
        .values(&["-I"])
        .first()
        .map(|v| v.text().to_owned())
        .or_else(|| parsed.has_any(&["-i", "--replace"]).then(|| "{}".to_owned()));
    let written: Vec<String> = inv.args[rest + 1..].iter().map(|w| w.text().to_owned()).collect();
    let mut args: Vec<Word> = inv.args[rest..].to_vec();
    match &replace {
        Some(marker) if !marker.is_empty() => {
            for word in args.iter_mut().skip(1) {
                if let Some(at) = word.text().find(marker.as_str()) {
                    let prefix = word.text()[..at].to_owned();
                    *word = Word { prefix, ..Word::unknown(&word.source) };
                }
            }
        }
        _ => args.push(Word::unknown(FROM_INPUT)),
    }
    let inner = Invocation { name: "", args: &args, stdin: &Stdin::Inherited, depth: inv.depth, cwd: inv.cwd };
    let mut verdict = judge::run_rest(&inner, 0, "xargs", &Stdin::Inherited)
        .unwrap_or_else(|| Verdict::read_only("xargs without a command only echoes its input"));
    verdict.writes.retain(|path| path != FROM_INPUT);
    if verdict.program.as_deref().is_some_and(readers::reads_files) {
        verdict.computed_reads.push(FROM_INPUT.to_owned());
    }
    verdict.argv(written)
}

/// `watch [options] COMMAND...`: the words are joined and run by `sh -c`, unless `-x`.
fn watch(inv: &Invocation) -> Verdict {
    let spec = Spec::wrapper("nq", &["--interval", "--equexit"]);
    let parsed = options::parse(inv.args, &spec);
    let Some(rest) = parsed.rest else {
        return Verdict::read_only("watch without a command runs nothing");
    };
    if parsed.has_any(&["-x", "--exec"]) {
        return wrapper(inv, "watch", &spec, 0);
    }
    let words: Option<Vec<&str>> = inv.args[rest..].iter().map(Word::fixed).collect();
    match words {
        Some(words) => nested("watch", "", &words.join(" "), inv),
        None => Verdict::unknown("watch runs a command computed at run time"),
    }
}

/// Judges the shell code in `text`, run by `program` in the directory `inv` runs in.
fn nested(program: &str, flag: &str, text: &str, inv: &Invocation) -> Verdict {
    let analysis = super::analyze(text, inv.depth.nested(), inv.cwd.clone());
    let first_line = text.trim().lines().next().unwrap_or_default();
    let shown: String = first_line.chars().take(60).collect();
    let ellipsis = if shown.len() < text.trim().len() { "..." } else { "" };
    let flag = if flag.is_empty() { String::new() } else { format!(" {flag}") };
    let reason = format!("{program}{flag} runs `{shown}{ellipsis}`: {}", analysis.reason);
    Verdict::new(analysis.class, reason).with_nested(analysis)
}

/// `bash [options] [-c STRING | SCRIPT | -s] [args...]`.
fn shell(program: &str, inv: &Invocation) -> Verdict {
    let args = inv.args;
    let mut at = 0;
    let mut command_mode = false;
    let mut from_stdin = false;
    while let Some(text) = args.get(at).and_then(Word::fixed) {
        if text == "-" || text == "--" {
            from_stdin |= text == "-";
            at += 1;
            break;
        }
        if matches!(text, "--version" | "--help") {
            return Verdict::read_only(format!("{program} {text} only prints"));
        }
        if let Some(long) = text.strip_prefix("--") {
            at += if matches!(long, "rcfile" | "init-file") { 2 } else { 1 };
            continue;
        }
        if text.len() > 1 && (text.starts_with('-') || text.starts_with('+')) {
            let cluster = &text[1..];
            command_mode |= cluster.contains('c');
            from_stdin |= cluster.contains(['s', 'i']);
            at += 1 + cluster.matches(['o', 'O']).count();
            continue;
        }
        break;
    }
    let verdict = if command_mode {
        match args.get(at) {
            None => Verdict::unknown(format!("{program} -c without a command")),
            Some(word) => match word.fixed() {
                Some(text) => nested(program, "-c", text, inv),
                None if word.downloads => {
                    Verdict::dangerous(format!("{program} -c runs code downloaded at run time ({})", word.source))
                }
                None => Verdict::unknown(format!("{program} -c runs a command computed at run time ({})", word.source)),
            },
        }
    } else {
        match args.get(at).filter(|_| !from_stdin) {
            Some(script) if !matches!(script.fixed(), Some("/dev/stdin")) => {
                if script.downloads {
                    Verdict::dangerous(format!("{program} runs a script downloaded at run time ({})", script.source))
                } else {
                    Verdict::unknown(format!("{program} runs the script {}, which is not judged", script.text()))
                }
            }
            _ => stdin_code(program, inv, true),
        }
    };
    if matches!(program, "fish" | "csh" | "tcsh") && verdict.class == BashClass::ReadOnly {
        return verdict.raised(BashClass::Unknown, format!("{program} code is not bash and is not judged"));
    }
    verdict
}

/// A shell or interpreter that reads its program from standard input.
fn stdin_code(program: &str, inv: &Invocation, shell: bool) -> Verdict {
    if inv.stdin.download() {
        return Verdict::dangerous(format!(
            "download piped into a shell: {program} runs code fetched from the network"
        ));
    }
    match inv.stdin {
        Stdin::Script { text: Some(text), .. } if shell => {
            // Judged like `eval`: a shell reading its input is never read-only, but a dangerous body shows.
            let verdict = nested(program, "<<", text, inv);
            if verdict.class == BashClass::Dangerous {
                verdict
            } else {
                let reason = format!("{} (a shell reading its input is not judged read-only)", verdict.reason);
                Verdict { class: BashClass::Unknown, reason, ..verdict }
            }
        }
        Stdin::Inherited => Verdict::unknown(format!("{program} reads the code it runs from its input")),
        _ => Verdict::unknown(format!("{program} runs code piped or redirected into it, which is not judged")),
    }
}

/// `eval ARGS`: never read-only; Dangerous when its static string holds a dangerous command.
fn eval(inv: &Invocation) -> Verdict {
    if inv.args.is_empty() {
        return Verdict::read_only("eval without arguments does nothing");
    }
    let words: Option<Vec<&str>> = inv.args.iter().map(Word::fixed).collect();
    match words {
        Some(words) => {
            let verdict = nested("eval", "", &words.join(" "), inv);
            if verdict.class == BashClass::Dangerous {
                verdict
            } else {
                let reason = format!("{} (eval is never judged read-only)", verdict.reason);
                Verdict { class: BashClass::Unknown, reason, ..verdict }
            }
        }
        None if inv.args.iter().any(|w| w.downloads) => Verdict::dangerous("eval runs code downloaded at run time"),
        None => Verdict::unknown("eval runs code computed at run time"),
    }
}

fn source(program: &str, inv: &Invocation) -> Verdict {
    match inv.args.first() {
        None => Verdict::unknown(format!("{program} without a file")),
        Some(word) if word.downloads => Verdict::dangerous(format!("{program} runs a script downloaded at run time")),
        Some(word) if matches!(word.fixed(), Some("/dev/stdin" | "-")) && inv.stdin.download() => {
            Verdict::dangerous(format!("download piped into a shell: {program} runs code fetched from the network"))
        }
        Some(word) => Verdict::unknown(format!("{program} runs the script {} in this shell", word.text())),
    }
}

/// `trap ACTION SIGNALS`: judged by ACTION, which runs later.
fn trap(inv: &Invocation) -> Verdict {
    let Some(action) = inv.args.first() else {
        return Verdict::read_only("trap only lists handlers");
    };
    match action.fixed() {
        Some("-l" | "-p") => Verdict::read_only("trap only lists handlers"),
        Some("" | "-") => Verdict::read_only("trap only resets a handler"),
        Some(text) => nested("trap", "", text, inv),
        None => Verdict::unknown("trap sets a handler computed at run time"),
    }
}

/// How an interpreter takes code on its command line.
struct Interpreter {
    /// Options whose value is code: `-c`, `-e`, `--eval`.
    code: &'static [&'static str],
    /// Letters that mean code inside a short cluster (`perl -lne`).
    code_letters: &'static str,
    /// Short options that take a value (the rest of the cluster or the next word).
    value_letters: &'static str,
    /// Long options that take the next word as a value.
    long_values: &'static [&'static str],
    /// Options that run a module: `python -m`.
    module: &'static [&'static str],
    /// Options that only print the version.
    version: &'static [&'static str],
}

fn interpreter_for(program: &str) -> Option<Interpreter> {
    let python = program.starts_with("python") || program.starts_with("pypy");
    let python =
        python && program.chars().skip_while(|c| c.is_ascii_alphabetic()).all(|c| c.is_ascii_digit() || c == '.');
    Some(match program {
        _ if python => Interpreter {
            code: &["-c"],
            code_letters: "c",
            value_letters: "WXQm",
            long_values: &["--check-hash-based-pycs"],
            module: &["-m"],
            version: &["--version", "-V", "-VV"],
        },
        "node" | "nodejs" | "bun" => Interpreter {
            code: &["-e", "--eval", "-p", "--print", "-pe", "-ep"],
            code_letters: "",
            value_letters: "rC",
            long_values: &["--require", "--import", "--loader", "--experimental-loader", "--conditions"],
            module: &[],
            version: &["--version", "-v"],
        },
        "perl" => Interpreter {
            code: &["-e", "-E"],
            code_letters: "eE",
            value_letters: "IMm",
            long_values: &[],
            module: &[],
            version: &["--version", "-v", "-V"],
        },
        "ruby" => Interpreter {
            code: &["-e"],
            code_letters: "e",
            value_letters: "IrCEF",
            long_values: &[],
            module: &[],
            version: &["--version", "-v"],
        },
        "php" => Interpreter {
            code: &["-r", "-R", "-B", "-E"],
            code_letters: "rRBE",
            value_letters: "cdzt",
            long_values: &[],
            module: &[],
            version: &["--version", "-v"],
        },
        "lua" | "luajit" | "osascript" | "rscript" | "tclsh" | "wish" => Interpreter {
            code: &["-e"],
            code_letters: "e",
            value_letters: "l",
            long_values: &[],
            module: &[],
            version: &["--version", "-v"],
        },
        _ => return None,
    })
}

/// `python [options] (-c CODE | -m MODULE | SCRIPT | -) [args]` and the like.
fn interpreter(program: &str, inv: &Invocation) -> Option<Verdict> {
    if matches!(program, "pwsh" | "powershell") {
        let code = inv.args.iter().any(|w| {
            let text = w.text().to_ascii_lowercase();
            text.starts_with("-c") || text.starts_with("-e")
        });
        return Some(if code {
            Verdict::unknown(format!("{program} -Command runs code that is not judged"))
        } else {
            Verdict::write(format!("{program} runs a script"))
        });
    }
    let spec = interpreter_for(program)?;
    let args = inv.args;
    if args.len() == 1 && args[0].fixed().is_some_and(|t| spec.version.contains(&t)) {
        return Some(Verdict::read_only(format!("{program} {} only prints its version", args[0].text())));
    }
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        let Some(text) = word.fixed() else {
            if word.could_be_option() {
                return Some(Verdict::unknown(format!(
                    "{program} gets an argument computed at run time ({})",
                    word.source
                )));
            }
            return Some(script(program, word));
        };
        if text == "-" {
            break;
        }
        if text == "--" {
            return Some(match args.get(at) {
                Some(word) => script(program, word),
                None => stdin_code(program, inv, false),
            });
        }
        let code_word = args.get(at);
        let attached_code = text.starts_with("--") && spec.code.iter().any(|c| text.starts_with(&format!("{c}=")));
        if attached_code
            || spec.code.contains(&text)
            || (text.starts_with('-') && !text.starts_with("--") && text.contains(|c| spec.code_letters.contains(c)))
        {
            if code_word.is_some_and(|w| w.downloads) {
                return Some(Verdict::dangerous(format!("{program} runs code downloaded at run time")));
            }
            return Some(Verdict::unknown(format!("{program} {text} runs code that is not judged")));
        }
        if spec.module.contains(&text) {
            let module = code_word.map(|w| w.text()).unwrap_or_default();
            return Some(Verdict::write(format!("{program} -m runs the module {module}")));
        }
        if let Some(long) = text.strip_prefix("--") {
            if spec.long_values.iter().any(|v| v.trim_start_matches('-') == long) {
                at += 1;
            }
            continue;
        }
        if let Some(cluster) = text.strip_prefix('-') {
            if let Some(letter_at) = cluster.find(|c| spec.value_letters.contains(c)) {
                if letter_at + 1 == cluster.len() {
                    at += 1;
                }
                if cluster[letter_at..].starts_with('m') && spec.module.contains(&"-m") {
                    return Some(Verdict::write(format!("{program} -m runs a module")));
                }
            }
            continue;
        }
        return Some(script(program, word));
    }
    Some(stdin_code(program, inv, false))
}

fn script(program: &str, word: &Word) -> Verdict {
    if word.downloads {
        Verdict::dangerous(format!("{program} runs a script downloaded at run time ({})", word.source))
    } else {
        Verdict::write(format!("{program} runs the script {}", word.text()))
    }
}
