//! `bench-run [--quick] [--rounds R] [--duration S] [--only a,b] [--peers a,b]
//! [--update FILE]` — run from `bench/` (run.sh does).
//!
//! For every scenario, round and load level it starts each peer fresh,
//! pinned to core 0, checks it answers the benchmark request correctly,
//! records its idle RSS, warms it up, and loads it from core 1 (wrk for
//! HTTP, `stdio-driver` for stdio). Rounds are interleaved (every peer once
//! per round, the order rotated each round) and the table reports the
//! median of the rounds, metric by metric.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench_harness::{Noise, TICKS_PER_SEC, cpu_ticks, runq_wait_ns, set_autogroup_nice, status_kb, wait_quiet};

const PEERS: [&str; 3] = ["bare", "rmcp", "ours"];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// 2026-07-28 tools/call echo.
    Modern,
    /// 2025-11-25 tools/call echo on a session.
    Session,
    /// 2026-07-28 tools/list, 100 tools.
    List,
    /// stdio, one request at a time.
    StdioSeq,
    /// stdio, pipelined.
    StdioPipe,
}

struct Scenario {
    id: &'static str,
    title: &'static str,
    mode: Mode,
    /// Connections (HTTP) or request counts (stdio).
    loads: Vec<u64>,
}

struct Config {
    rounds: usize,
    duration: u64,
    warmup: u64,
    scenarios: Vec<Scenario>,
    peers: Vec<&'static str>,
    bench: PathBuf,
    out: PathBuf,
    update: Option<PathBuf>,
    quick: bool,
    /// Retry a run whose foreign load exceeded this (% of one core).
    max_noise: f64,
    retries: u32,
    /// Before each run, wait up to this long for the machine to be quiet.
    quiet_wait: Duration,
    /// Past this much time, stop waiting for quiet and stop retrying, so a
    /// busy machine cannot stretch the run without bound.
    budget: Duration,
    /// Niceness of the servers and load generators.
    nice: i32,
}

#[derive(Clone, Debug, Default)]
struct Sample {
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us: f64,
    idle_kb: f64,
    peak_kb: f64,
    /// CPU other processes used during the measurement, % of one core.
    foreign_pct: f64,
    /// Run-queue wait of the server or the load generator (the larger), %
    /// of the run: how much other work held the processes under test back.
    wait_pct: f64,
}

fn is_http(m: Mode) -> bool {
    !matches!(m, Mode::StdioSeq | Mode::StdioPipe)
}

fn bin(cfg: &Config, name: &str) -> PathBuf {
    if name == "everything-server" {
        cfg.bench.join("../target/release/everything-server")
    } else {
        cfg.bench.join("target/release").join(name)
    }
}

/// The server command for `peer` in `mode`; `addr` for HTTP.
fn server_cmd(cfg: &Config, peer: &str, mode: Mode, addr: Option<&str>) -> Vec<String> {
    let (exe, mut args): (&str, Vec<&str>) = match (peer, mode) {
        ("bare", Mode::StdioSeq | Mode::StdioPipe) => ("bare-stdio", vec![]),
        ("bare", _) => ("bare-http", vec![]),
        ("rmcp", _) => ("rmcp-server", vec![]),
        ("ours", Mode::List) => ("ours-tools", vec![]),
        _ => ("everything-server", vec![]),
    };
    match addr {
        Some(a) => args.extend(["--http", a]),
        None => args.push("--stdio"),
    }
    if mode == Mode::List {
        args.extend(["--tools", "100"]);
    }
    if mode == Mode::Session && peer == "rmcp" {
        args.push("--sessions");
    }
    let mut v = vec![bin(cfg, exe).display().to_string()];
    v.extend(args.into_iter().map(String::from));
    v
}

/// `nice -n N taskset -c CORE`: pinned, and ahead of other work on the
/// machine (other builds share it) when `nice` is negative.
fn pinned(cfg: &Config, core: &str) -> Command {
    let mut c = Command::new("nice");
    c.args(["-n", &cfg.nice.to_string(), "taskset", "-c", core]);
    c
}

/// A free loopback port (bound, read, released).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn proc_kb(pid: u32, key: &str) -> f64 {
    status_kb(pid, key).map_or(0.0, |v| v as f64)
}

fn log_tail(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// A server process that is killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `cmd` to completion within `limit`, stdout to a file; returns stdout
/// and the CPU ticks the process used (sampled while it runs).
fn run_bounded(mut cmd: Command, limit: Duration, stdout: &Path, stderr: &Path) -> Result<(String, u64, u64), String> {
    let out = std::fs::File::create(stdout).map_err(|e| e.to_string())?;
    let err = std::fs::File::create(stderr).map_err(|e| e.to_string())?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let t = Instant::now();
    let pid = child.id();
    let mut ticks = 0;
    let mut wait_ns = 0;
    let status = loop {
        if let Some(v) = cpu_ticks(pid) {
            ticks = v;
            wait_ns = wait_ns.max(runq_wait_ns(pid));
        }
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{cmd:?} did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = std::fs::read_to_string(stdout).unwrap_or_default();
    if !status.success() {
        return Err(format!("{cmd:?} failed ({status}):\n{}\n{}", text.trim(), log_tail(stderr)));
    }
    Ok((text, ticks, wait_ns))
}

fn kv(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|t| t.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}"#;

/// One curl POST; returns (headers, body).
fn curl(url: &str, headers: &[(&str, &str)], body: &str, logs: &Path) -> Result<(String, String), String> {
    let hdr = logs.join("curl.headers");
    let mut c = Command::new("curl");
    c.args(["-sS", "--max-time", "5", "-X", "POST", "-D"]).arg(&hdr).arg(url);
    for (k, v) in headers {
        c.arg("-H").arg(format!("{k}: {v}"));
    }
    c.arg("--data-binary").arg(body);
    let out = c.output().map_err(|e| format!("cannot run curl: {e}"))?;
    if !out.status.success() {
        return Err(format!("curl failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let h = std::fs::read_to_string(&hdr).unwrap_or_default();
    Ok((h, String::from_utf8_lossy(&out.stdout).into_owned()))
}

fn header_value(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

fn status_line(headers: &str) -> &str {
    // The last status line (curl records interim 1xx ones too).
    headers.lines().filter(|l| l.starts_with("HTTP/")).last().unwrap_or("")
}

/// Checks the server answers the scenario's request; returns the session id
/// for the session path.
fn health_check(peer: &str, mode: Mode, url: &str, logs: &Path) -> Result<Option<String>, String> {
    let base = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let modern_call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},{META}}}}}"#
    );
    let check_echo = |h: &str, b: &str| -> Result<(), String> {
        if status_line(h).contains(" 200") && b.contains(r#""text":"hello""#) && !b.contains(r#""error":"#) {
            Ok(())
        } else {
            Err(format!("not an echo: {} {}", status_line(h), b.trim()))
        }
    };
    match mode {
        Mode::Modern => {
            let mut hs = base.to_vec();
            hs.extend([("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")]);
            let (h, b) = curl(url, &hs, &modern_call, logs)?;
            check_echo(&h, &b)?;
            Ok(None)
        }
        Mode::List => {
            let mut hs = base.to_vec();
            hs.extend([("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")]);
            let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
            let (h, b) = curl(url, &hs, &body, logs)?;
            let n = b.matches(r#""name":"tool_"#).count();
            if !status_line(&h).contains(" 200") || n != 100 {
                return Err(format!("tools/list returned {n} tools: {} {}", status_line(&h), &b[..b.len().min(400)]));
            }
            Ok(None)
        }
        Mode::Session => {
            let call = r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
            if peer == "bare" {
                // No sessions: the same tools/call body, stateless.
                let mut hs = base.to_vec();
                hs.push(("MCP-Protocol-Version", "2025-11-25"));
                let (h, b) = curl(url, &hs, call, logs)?;
                check_echo(&h, &b)?;
                return Ok(None);
            }
            let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
            let (h, b) = curl(url, &base, init, logs)?;
            let sid = header_value(&h, "mcp-session-id")
                .ok_or_else(|| format!("initialize gave no Mcp-Session-Id: {} {}", status_line(&h), b.trim()))?;
            if !b.contains("2025-11-25") {
                return Err(format!("initialize did not negotiate 2025-11-25: {}", b.trim()));
            }
            let mut hs = base.to_vec();
            hs.extend([("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Session-Id", sid.as_str())]);
            let (h, _) = curl(url, &hs, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, logs)?;
            if !status_line(&h).contains(" 202") {
                return Err(format!("notifications/initialized: {}", status_line(&h)));
            }
            let (h, b) = curl(url, &hs, call, logs)?;
            check_echo(&h, &b)?;
            Ok(Some(sid))
        }
        Mode::StdioSeq | Mode::StdioPipe => unreachable!(),
    }
}

/// One wrk run: (requests, seconds, p50 µs, p99 µs, wrk's CPU ticks, wrk's
/// run-queue wait in ns).
fn wrk(cfg: &Config, url: &str, mode: Mode, sid: Option<&str>, conns: u64, secs: u64, logs: &Path) -> Result<(f64, f64, f64, f64, u64, u64), String> {
    let mut c = pinned(cfg, "1");
    c.args(["wrk", "-t1"])
        .arg(format!("-c{conns}"))
        .arg(format!("-d{secs}s"))
        .args(["--timeout", "5s", "-s"])
        .arg(cfg.bench.join("wrk/mcp.lua"))
        .arg(url)
        .env(
            "MCP_MODE",
            match mode {
                Mode::List => "list",
                Mode::Session => "session",
                _ => "modern",
            },
        )
        .env("MCP_SESSION", sid.unwrap_or(""));
    let (out, ticks, wait_ns) = run_bounded(c, Duration::from_secs(secs + 30), &logs.join("wrk.out"), &logs.join("wrk.err"))?;
    let line = out
        .lines()
        .find(|l| l.starts_with("WRK_RESULT"))
        .ok_or_else(|| format!("no WRK_RESULT in wrk output:\n{out}"))?;
    let g = |k| kv(line, k).unwrap_or(0.0);
    let errors = g("err_connect") + g("err_read") + g("err_write") + g("err_status") + g("err_timeout");
    if g("requests") == 0.0 {
        return Err(format!("wrk completed no request:\n{out}"));
    }
    if errors > 0.0 {
        return Err(format!("wrk saw errors: {line}"));
    }
    Ok((g("requests"), g("duration_us") / 1e6, g("p50_us"), g("p99_us"), ticks, wait_ns))
}

fn wait_listening(p: &mut Proc, addr: SocketAddr, log: &Path) -> Result<(), String> {
    let t = Instant::now();
    loop {
        if let Ok(Some(s)) = p.0.try_wait() {
            return Err(format!("the server exited at start ({s}):\n{}", log_tail(log)));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(10) {
            return Err(format!("the server did not listen on {addr} within 10 s:\n{}", log_tail(log)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn http_run(cfg: &Config, peer: &str, mode: Mode, conns: u64, logs: &Path) -> Result<Sample, String> {
    let port = free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().map_err(|e| format!("{e}"))?;
    let url = format!("http://{addr}/mcp");
    let cmd = server_cmd(cfg, peer, mode, Some(&addr.to_string()));
    let log = logs.join("server.log");
    let logf = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let child = pinned(cfg, "0")
        .args(&cmd)
        .stdin(Stdio::null())
        .stdout(logf.try_clone().map_err(|e| e.to_string())?)
        .stderr(logf)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let mut p = Proc(child);
    let pid = p.0.id();
    wait_listening(&mut p, addr, &log)?;
    let sid = health_check(peer, mode, &url, logs).map_err(|e| format!("{cmd:?}: health check failed: {e}"))?;
    std::thread::sleep(Duration::from_millis(200));
    let idle_kb = proc_kb(pid, "VmRSS:");
    if cfg.warmup > 0 {
        wrk(cfg, &url, mode, sid.as_deref(), conns, cfg.warmup, logs).map_err(|e| format!("warm-up: {e}"))?;
    }
    let c0 = cpu_ticks(pid).ok_or("cannot read /proc/PID/stat")?;
    let noise = Noise::start();
    let w0 = runq_wait_ns(pid);
    let t0 = Instant::now();
    let (reqs, secs, p50, p99, wrk_ticks, wrk_wait) = wrk(cfg, &url, mode, sid.as_deref(), conns, cfg.duration, logs)?;
    let c1 = cpu_ticks(pid).ok_or("cannot read /proc/PID/stat")?;
    let elapsed = t0.elapsed().as_secs_f64();
    let foreign_pct = noise.foreign_pct(c1 - c0 + wrk_ticks, elapsed);
    let srv_wait = runq_wait_ns(pid).saturating_sub(w0);
    let wait_pct = 100.0 * srv_wait.max(wrk_wait) as f64 / (elapsed * 1e9);
    let peak_kb = proc_kb(pid, "VmHWM:");
    if let Ok(Some(s)) = p.0.try_wait() {
        return Err(format!("the server died during the run ({s}):\n{}", log_tail(&log)));
    }
    Ok(Sample {
        rps: reqs / secs,
        p50_us: p50,
        p99_us: p99,
        cpu_us: (c1 - c0) as f64 * 1e6 / TICKS_PER_SEC / reqs,
        idle_kb,
        peak_kb,
        foreign_pct,
        wait_pct,
    })
}

fn stdio_run(cfg: &Config, peer: &str, mode: Mode, n: u64, logs: &Path) -> Result<Sample, String> {
    let mut c = pinned(cfg, "1");
    c.arg(cfg.bench.join("target/release/stdio-driver"))
        .args(["--mode", if mode == Mode::StdioSeq { "seq" } else { "pipe" }])
        .arg("--n")
        .arg(n.to_string())
        .args(["--warmup", "1000", "--timeout-s", "120", "--", "taskset", "-c", "0"])
        .args(server_cmd(cfg, peer, mode, None));
    let (out, _, _) = run_bounded(c, Duration::from_secs(150), &logs.join("driver.out"), &logs.join("driver.err"))?;
    let line = out
        .lines()
        .find(|l| l.starts_with("STDIO_RESULT"))
        .ok_or_else(|| format!("no STDIO_RESULT:\n{out}"))?;
    let g = |k| kv(line, k).unwrap_or(0.0);
    Ok(Sample {
        rps: g("rps"),
        p50_us: g("p50_us"),
        p99_us: g("p99_us"),
        cpu_us: g("cpu_us_per_req"),
        idle_kb: g("idle_rss_kb"),
        peak_kb: g("peak_rss_kb"),
        foreign_pct: g("foreign_pct"),
        wait_pct: g("wait_pct"),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

fn median_sample(v: &[Sample]) -> Sample {
    let m = |f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
    Sample {
        rps: m(|s| s.rps),
        p50_us: m(|s| s.p50_us),
        p99_us: m(|s| s.p99_us),
        cpu_us: m(|s| s.cpu_us),
        idle_kb: m(|s| s.idle_kb),
        peak_kb: m(|s| s.peak_kb),
        foreign_pct: m(|s| s.foreign_pct),
        wait_pct: m(|s| s.wait_pct),
    }
}

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'");
    let flags = sh("grep -m1 -o -w -e avx2 -e avx512f /proc/cpuinfo | sort -u | tr '\\n' ' '");
    let mhz = sh("grep -m1 'cpu MHz' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'");
    let cache = sh("grep -m1 'cache size' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'");
    format!(
        "- Date: {}\n- CPU: {cpu}, {} cores, {mhz} MHz, cache {cache}, {flags}\n- Memory: {}\n- Kernel: {}\n- Toolchain: {}\n- wrk: {}\n- Commit under test: {}",
        sh("date -u '+%Y-%m-%d %H:%M UTC'"),
        sh("nproc"),
        sh("free -h | awk '/Mem:/{print $2}'"),
        sh("uname -sr"),
        sh("rustc --version"),
        sh("dpkg-query -W -f '${Version}' wrk 2>/dev/null"),
        sh("git log -1 --format='%h %s' 2>/dev/null"),
    )
}

type Key = (usize, u64, &'static str);

fn fmt_ratio(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && b > 0.0 { format!("{:.2}×", a / b) } else { "–".into() }
}

fn report(cfg: &Config, results: &BTreeMap<Key, Vec<Sample>>, failures: &[String]) -> String {
    let med: BTreeMap<Key, Sample> = results.iter().map(|(k, v)| (*k, median_sample(v))).collect();
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", machine());
    let _ = writeln!(
        s,
        "Median of {} interleaved round(s); HTTP runs {} s after a {} s warm-up, servers on core 0 (`taskset -c 0`), load generator on core 1, both at `nice -n {}` in a session whose scheduler autogroup is at the same niceness (so they take precedence over other sessions' work on the shared machine). CPU = server utime+stime per request. RSS: idle = VmRSS after start and one request; peak = VmHWM after the run. ×bare / ×rmcp = req/s ratios; p99 ×bare = p99 latency ratio. Held back = run-queue wait of the server or the load generator (the larger, /proc/PID/task/*/schedstat) as % of the run: how much other work on the machine delayed the processes under test; other load = CPU other processes used meanwhile (% of one core; /proc/stat minus the server and the load generator). On stdio, a multi-threaded server pinned to one core also waits for its own threads, so there it is an upper bound. An HTTP run held back more than {}% is retried (up to {} time(s), within a {}-minute budget for waiting and retries).\n",
        cfg.rounds, cfg.duration, cfg.warmup, cfg.nice, cfg.max_noise, cfg.retries, cfg.budget.as_secs() / 60
    );
    let _ = writeln!(s, "| Scenario | Load | Server | req/s | p50 µs | p99 µs | CPU µs/req | idle RSS MB | peak RSS MB | ×bare | ×rmcp | p99 ×bare | held back | other load |");
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (si, sc) in cfg.scenarios.iter().enumerate() {
        for &load in &sc.loads {
            let get = |p: &'static str| med.get(&(si, load, p));
            for peer in PEERS.iter().filter(|p| cfg.peers.contains(p)) {
                let load_s = match sc.mode {
                    Mode::StdioSeq | Mode::StdioPipe => format!("N={load}"),
                    _ => format!("{load} conn"),
                };
                let Some(m) = get(peer) else {
                    let _ = writeln!(s, "| {} | {load_s} | {peer} | FAILED | | | | | | | | | | |", sc.title);
                    continue;
                };
                let bare = get("bare").map_or(f64::NAN, |b| b.rps);
                let rmcp = get("rmcp").map_or(f64::NAN, |b| b.rps);
                let bare_p99 = get("bare").map_or(f64::NAN, |b| b.p99_us);
                let lat = |v: f64| if v > 0.0 { format!("{v:.0}") } else { "–".into() };
                let _ = writeln!(
                    s,
                    "| {} | {load_s} | {peer} | {:.0} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {:.1}% | {:.0}% |",
                    sc.title,
                    m.rps,
                    lat(m.p50_us),
                    lat(m.p99_us),
                    m.cpu_us,
                    m.idle_kb / 1024.0,
                    m.peak_kb / 1024.0,
                    fmt_ratio(m.rps, bare),
                    fmt_ratio(m.rps, rmcp),
                    if m.p99_us > 0.0 { fmt_ratio(m.p99_us, bare_p99) } else { "–".into() },
                    m.wait_pct,
                    m.foreign_pct,
                );
            }
        }
    }
    // The goals, checked against the medians.
    let find = |mode: Mode, load: u64, peer: &'static str| {
        cfg.scenarios
            .iter()
            .position(|s| s.mode == mode)
            .and_then(|i| med.get(&(i, load, peer)))
            .cloned()
    };
    let mut goals = Vec::new();
    let mut goal = |name: String, value: Option<f64>, ok: fn(f64) -> bool, unit: &str| {
        let (v, mark) = match value {
            Some(v) if v.is_finite() => (format!("{v:.2}{unit}"), if ok(v) { "met" } else { "NOT met" }),
            _ => ("–".into(), "not measured"),
        };
        goals.push(format!("| {name} | {v} | {mark} |"));
    };
    let ratio = |mode, load, f: fn(&Sample) -> f64| match (find(mode, load, "ours"), find(mode, load, "bare")) {
        (Some(o), Some(b)) => Some(f(&o) / f(&b)),
        _ => None,
    };
    goal("HTTP echo, 1 conn: req/s ≥ 0.9× bare".into(), ratio(Mode::Modern, 1, |s| s.rps), |v| v >= 0.9, "×");
    goal("HTTP echo, 16 conn: req/s ≥ 0.8× bare".into(), ratio(Mode::Modern, 16, |s| s.rps), |v| v >= 0.8, "×");
    goal("HTTP echo, 64 conn: req/s ≥ 0.8× bare".into(), ratio(Mode::Modern, 64, |s| s.rps), |v| v >= 0.8, "×");
    goal("HTTP echo, 64 conn: p99 ≤ 1.5× bare".into(), ratio(Mode::Modern, 64, |s| s.p99_us), |v| v <= 1.5, "×");
    goal(
        "Idle RSS (HTTP, ours) ≤ 6 MB".into(),
        find(Mode::Modern, 1, "ours").map(|s| s.idle_kb / 1024.0),
        |v| v <= 6.0,
        " MB",
    );
    if let Some(sc) = cfg.scenarios.iter().find(|s| s.mode == Mode::StdioSeq) {
        goal(
            "stdio one-at-a-time: req/s ≥ 0.95× bare".into(),
            ratio(Mode::StdioSeq, sc.loads[0], |s| s.rps),
            |v| v >= 0.95,
            "×",
        );
    }
    if let Some(sc) = cfg.scenarios.iter().find(|s| s.mode == Mode::StdioPipe) {
        let o = find(Mode::StdioPipe, sc.loads[0], "ours");
        goal("stdio pipelined: ≥ 400k req/s".into(), o.as_ref().map(|s| s.rps / 1000.0), |v| v >= 400.0, "k");
        goal(
            "stdio pipelined: peak RSS bounded (ours, MB)".into(),
            o.as_ref().map(|s| s.peak_kb / 1024.0),
            |v| v <= 32.0,
            " MB",
        );
    }
    let _ = writeln!(s, "\n| Goal | Measured | |\n|---|---:|---|");
    for g in goals {
        let _ = writeln!(s, "{g}");
    }
    if !failures.is_empty() {
        let _ = writeln!(s, "\nFailed runs:\n");
        for f in failures {
            let _ = writeln!(s, "- {}", f.replace('\n', " ⏎ "));
        }
    }
    s
}

fn parse_args() -> Result<Config, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let quick = args.iter().any(|a| a == "--quick");
    let num = |k: &str, d: u64| -> Result<u64, String> {
        get(k).map_or(Ok(d), |v| v.parse().map_err(|_| format!("bad {k} {v}")))
    };
    let (seq_n, pipe_n) = if quick { (10_000, 20_000) } else { (50_000, 100_000) };
    let all = vec![
        Scenario { id: "http-echo", title: "HTTP tools/call echo (2026-07-28)", mode: Mode::Modern, loads: vec![1, 16, 64] },
        Scenario { id: "http-session", title: "HTTP tools/call echo, 2025-11-25 session", mode: Mode::Session, loads: vec![16] },
        Scenario { id: "http-list", title: "HTTP tools/list, 100 tools", mode: Mode::List, loads: vec![16] },
        Scenario { id: "stdio-seq", title: "stdio tools/call, one at a time", mode: Mode::StdioSeq, loads: vec![num("--seq-n", seq_n)?] },
        Scenario { id: "stdio-pipe", title: "stdio tools/call, pipelined", mode: Mode::StdioPipe, loads: vec![num("--pipe-n", pipe_n)?] },
    ];
    let scenarios = match get("--only") {
        Some(list) => {
            let want: Vec<&str> = list.split(',').collect();
            for w in &want {
                if !all.iter().any(|s| s.id == *w) {
                    return Err(format!("unknown scenario {w}"));
                }
            }
            all.into_iter().filter(|s| want.contains(&s.id)).collect()
        }
        None => all,
    };
    let peers = match get("--peers") {
        Some(list) => PEERS.iter().copied().filter(|p| list.split(',').any(|w| w == *p)).collect(),
        None => PEERS.to_vec(),
    };
    let bench = std::env::current_dir().map_err(|e| e.to_string())?;
    Ok(Config {
        rounds: num("--rounds", if quick { 1 } else { 3 })? as usize,
        duration: num("--duration", if quick { 3 } else { 10 })?,
        warmup: num("--warmup", 1)?,
        scenarios,
        peers,
        out: bench.join("results"),
        bench,
        update: get("--update").map(PathBuf::from),
        quick,
        max_noise: num("--max-noise", 10)? as f64,
        retries: num("--retries", if quick { 0 } else { 1 })? as u32,
        quiet_wait: Duration::from_secs(num("--quiet-wait", 5)?),
        budget: Duration::from_secs(60 * num("--budget-min", if quick { 3 } else { 14 })?),
        nice: get("--nice").map_or(Ok(-20), |v| v.parse().map_err(|_| format!("bad --nice {v}")))?,
    })
}

fn splice(file: &Path, table: &str) -> Result<(), String> {
    const BEGIN: &str = "<!-- BEGIN GENERATED TABLE (bench-run --update) -->";
    const END: &str = "<!-- END GENERATED TABLE -->";
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!("{} has no generated-table markers", file.display()));
    };
    let new = format!("{}{BEGIN}\n{table}\n{}", &text[..a], &text[b..]);
    std::fs::write(file, new).map_err(|e| e.to_string())
}

fn main() -> std::process::ExitCode {
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bench-run: {e}\nusage: bench-run [--quick] [--rounds R] [--duration S] [--warmup S] [--only http-echo,http-session,http-list,stdio-seq,stdio-pipe] [--peers bare,rmcp,ours] [--seq-n N] [--pipe-n N] [--max-noise PCT] [--retries N] [--quiet-wait S] [--budget-min M] [--nice N] [--update RESULTS.md]");
            return std::process::ExitCode::from(2);
        }
    };
    let _ = std::fs::create_dir_all(cfg.out.join("logs"));
    let prev_nice = if cfg.nice < 0 {
        let p = set_autogroup_nice(cfg.nice);
        if p.is_none() {
            eprintln!("bench-run: could not raise the session's autogroup priority; other work on the machine may skew the figures");
        }
        p
    } else {
        None
    };
    let raw_path = cfg.out.join(if cfg.quick { "raw-quick.tsv" } else { "raw.tsv" });
    let mut raw = match std::fs::File::create(&raw_path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("bench-run: {}: {e}", raw_path.display());
            return std::process::ExitCode::FAILURE;
        }
    };
    let _ = writeln!(raw, "round\tscenario\tload\tpeer\trps\tp50_us\tp99_us\tcpu_us_per_req\tidle_kb\tpeak_kb\tforeign_pct\twait_pct\terror");
    let mut results: BTreeMap<Key, Vec<Sample>> = BTreeMap::new();
    let mut failures = Vec::new();
    let started = Instant::now();
    for round in 0..cfg.rounds {
        for (si, sc) in cfg.scenarios.iter().enumerate() {
            for &load in &sc.loads {
                // Rotate the peer order every round.
                let mut order = cfg.peers.clone();
                let len = order.len().max(1);
                order.rotate_left(round % len);
                for peer in order {
                    let logs = cfg.out.join("logs").join(format!("{}-{load}-{peer}", sc.id));
                    let _ = std::fs::create_dir_all(&logs);
                    let mut attempt = 0;
                    let r = loop {
                        let over = started.elapsed() > cfg.budget;
                        let q = wait_quiet(5.0, if over { Duration::ZERO } else { cfg.quiet_wait });
                        if q > 5.0 {
                            eprintln!("  (machine still busy: {q:.0}% of a core used by others; going ahead)");
                        }
                        let r = match sc.mode {
                            Mode::StdioSeq | Mode::StdioPipe => stdio_run(&cfg, peer, sc.mode, load, &logs),
                            _ => http_run(&cfg, peer, sc.mode, load, &logs),
                        };
                        match &r {
                            Ok(smp) if is_http(sc.mode) && smp.wait_pct > cfg.max_noise && attempt < cfg.retries && !over => {
                                attempt += 1;
                                eprintln!(
                                    "  {} {load} {peer}: held back {:.1}% of the run by other work; retrying ({attempt}/{})",
                                    sc.id, smp.wait_pct, cfg.retries
                                );
                            }
                            _ => break r,
                        }
                    };
                    let t = started.elapsed().as_secs();
                    match r {
                        Ok(smp) => {
                            eprintln!(
                                "[{t:>4}s] round {} {:<12} {:>7} {:<4} {:>9.0} req/s  p50 {:>6.0} µs  p99 {:>6.0} µs  cpu {:>6.1} µs/req  rss {:>6.1}/{:>6.1} MB  held back {:>4.1}%  other {:>3.0}%",
                                round + 1, sc.id, load, peer, smp.rps, smp.p50_us, smp.p99_us, smp.cpu_us, smp.idle_kb / 1024.0, smp.peak_kb / 1024.0, smp.wait_pct, smp.foreign_pct
                            );
                            let _ = writeln!(
                                raw,
                                "{}\t{}\t{load}\t{peer}\t{:.1}\t{:.1}\t{:.1}\t{:.3}\t{:.0}\t{:.0}\t{:.1}\t{:.2}\t",
                                round + 1, sc.id, smp.rps, smp.p50_us, smp.p99_us, smp.cpu_us, smp.idle_kb, smp.peak_kb, smp.foreign_pct, smp.wait_pct
                            );
                            results.entry((si, load, peer)).or_default().push(smp);
                        }
                        Err(e) => {
                            eprintln!("[{t:>4}s] round {} {} {load} {peer}: FAILED: {e}", round + 1, sc.id);
                            let _ = writeln!(raw, "{}\t{}\t{load}\t{peer}\t\t\t\t\t\t\t\t\t{}", round + 1, sc.id, e.replace(['\n', '\t'], " "));
                            failures.push(format!("round {} {} {load} {peer}: {e}", round + 1, sc.id));
                        }
                    }
                }
            }
        }
    }
    if let Some(p) = prev_nice {
        let _ = set_autogroup_nice(p);
    }
    let table = report(&cfg, &results, &failures);
    println!("\n{table}");
    let latest = cfg.out.join(if cfg.quick { "latest-quick.md" } else { "latest.md" });
    let _ = std::fs::write(&latest, &table);
    eprintln!("wrote {} and {} in {} s", latest.display(), raw_path.display(), started.elapsed().as_secs());
    if let Some(f) = &cfg.update {
        if let Err(e) = splice(f, &table) {
            eprintln!("bench-run: {e}");
            return std::process::ExitCode::FAILURE;
        }
        eprintln!("updated {}", f.display());
    }
    if failures.is_empty() { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}
