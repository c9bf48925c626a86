//! `stdio-driver --mode seq|pipe --n N [--warmup W] [--timeout-s S] [--exit-wait-s S] -- CMD ARGS…`
//!
//! Spawns CMD (an MCP server in stdio mode; wrap it in `taskset -c 0` to pin
//! it: taskset execs, so the child's pid is the server's), checks that it
//! answers one `tools/call` echo, then sends N more:
//!
//! - `seq`: one at a time, each written only after the previous response
//!   arrived; round-trip latency is recorded per request.
//! - `pipe`: a writer thread streams all N as fast as the pipe takes them
//!   while this thread counts responses.
//!
//! Every request has a unique id (servers reject ids that collide with
//! in-flight ones). Prints one `STDIO_RESULT key=value…` line: req/s, p50/p99
//! (seq only), the server's CPU µs per request (utime+stime from
//! /proc/PID/stat), its RSS after the health check (idle) and its VmHWM
//! (peak) once every response is in.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bench_harness::{Noise, cpu_ticks, runq_wait_ns, status_kb};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}"#;

fn request_line(id: u64, out: &mut Vec<u8>) {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(320);
    let _ = write!(
        s,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},{META}}}}}"#
    );
    out.extend_from_slice(s.as_bytes());
    out.push(b'\n');
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct Opts {
    mode: String,
    n: u64,
    warmup: u64,
    timeout: Duration,
    exit_wait: Duration,
    cmd: Vec<String>,
}

fn parse() -> Result<Opts, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").ok_or("missing -- CMD")?;
    let (flags, cmd) = (&args[..split], &args[split + 1..]);
    if cmd.is_empty() {
        return Err("missing CMD after --".into());
    }
    let get = |k: &str| flags.iter().position(|a| a == k).and_then(|i| flags.get(i + 1));
    let num = |k: &str, d: u64| -> Result<u64, String> {
        get(k).map_or(Ok(d), |v| v.parse().map_err(|_| format!("bad {k} {v}")))
    };
    let mode = get("--mode").cloned().unwrap_or_else(|| "seq".into());
    if mode != "seq" && mode != "pipe" {
        return Err(format!("bad --mode {mode}"));
    }
    Ok(Opts {
        mode,
        n: num("--n", 10_000)?,
        warmup: num("--warmup", 1_000)?,
        timeout: Duration::from_secs(num("--timeout-s", 120)?),
        exit_wait: Duration::from_secs(num("--exit-wait-s", 2)?),
        cmd: cmd.to_vec(),
    })
}

/// Reads one response line; `Err` if the server closed stdout or the line
/// is not a successful echo.
fn read_echo(r: &mut impl BufRead, line: &mut Vec<u8>) -> Result<(), String> {
    line.clear();
    match r.read_until(b'\n', line) {
        Ok(0) => Err("the server closed stdout".into()),
        Ok(_) if is_echo(line) => Ok(()),
        Ok(_) => Err(format!(
            "unexpected response: {}",
            String::from_utf8_lossy(line).trim_end()
        )),
        Err(e) => Err(format!("reading the server's stdout: {e}")),
    }
}

fn is_echo(line: &[u8]) -> bool {
    line.windows(16).any(|w| w == br#""text":"hello"}]"#) && !line.windows(8).any(|w| w == br#""error":"#)
}

fn send(w: &mut ChildStdin, bytes: &[u8]) -> Result<(), String> {
    w.write_all(bytes)
        .and_then(|()| w.flush())
        .map_err(|e| format!("writing to the server: {e}"))
}

fn run(o: &Opts, child: &mut Child) -> Result<String, String> {
    let pid = child.id();
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::with_capacity(256 * 1024, child.stdout.take().ok_or("no stdout")?);
    let mut line = Vec::with_capacity(1024);
    let mut buf = Vec::with_capacity(512);
    // Health check: the first request must come back as an echo.
    request_line(0, &mut buf);
    send(&mut stdin, &buf)?;
    read_echo(&mut stdout, &mut line).map_err(|e| format!("health check failed: {e}"))?;
    std::thread::sleep(Duration::from_millis(200));
    let idle_rss = status_kb(pid, "VmRSS:").unwrap_or(0);
    let mut next_id = 1u64;
    for _ in 0..o.warmup {
        buf.clear();
        request_line(next_id, &mut buf);
        next_id += 1;
        send(&mut stdin, &buf)?;
        read_echo(&mut stdout, &mut line)?;
    }
    // Pipelined: every request rendered up front, so the driver only copies.
    let mut payload = Vec::new();
    if o.mode == "pipe" {
        payload.reserve(o.n as usize * 240);
        for id in next_id..next_id + o.n {
            request_line(id, &mut payload);
        }
    }
    let me = std::process::id();
    let cpu0 = cpu_ticks(pid).ok_or("cannot read /proc/PID/stat")?;
    let me0 = cpu_ticks(me).unwrap_or(0);
    let noise = Noise::start();
    let (wait_srv0, wait_me0) = (runq_wait_ns(pid), runq_wait_ns(me));
    let start = Instant::now();
    let deadline = start + o.timeout;
    let mut lat = Vec::new();
    if o.mode == "seq" {
        lat.reserve(o.n as usize);
        for _ in 0..o.n {
            if Instant::now() > deadline {
                return Err("timed out".into());
            }
            buf.clear();
            request_line(next_id, &mut buf);
            next_id += 1;
            let t = Instant::now();
            send(&mut stdin, &buf)?;
            read_echo(&mut stdout, &mut line)?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
    } else {
        let n = o.n;
        let (done_tx, done_rx) = mpsc::channel::<Result<(), String>>();
        let writer = std::thread::spawn(move || {
            let mut r = Ok(());
            for chunk in payload.chunks(64 * 1024) {
                if let Err(e) = stdin.write_all(chunk) {
                    r = Err(format!("writing to the server: {e}"));
                    break;
                }
            }
            if r.is_ok() {
                r = stdin.flush().map_err(|e| format!("writing to the server: {e}"));
            }
            let _ = done_tx.send(r);
            stdin // keep the pipe open until the caller drops it
        });
        // Count newline-terminated responses; check each is an echo.
        let mut got = 0u64;
        let mut bad = 0u64;
        let mut first_bad = None;
        while got < n {
            if Instant::now() > deadline {
                return Err(format!("timed out after {got} of {n} responses"));
            }
            line.clear();
            match stdout.read_until(b'\n', &mut line) {
                Ok(0) => return Err(format!("the server closed stdout after {got} of {n} responses")),
                Ok(_) => {
                    got += 1;
                    if !is_echo(&line) {
                        bad += 1;
                        first_bad.get_or_insert_with(|| String::from_utf8_lossy(&line).trim_end().to_string());
                    }
                }
                Err(e) => return Err(format!("reading the server's stdout: {e}")),
            }
        }
        if let Ok(Err(e)) = done_rx.recv_timeout(Duration::from_secs(5)) {
            return Err(e);
        }
        if bad > 0 {
            return Err(format!("{bad} of {n} responses were not echoes; first: {}", first_bad.unwrap_or_default()));
        }
        let secs = start.elapsed().as_secs_f64();
        let cpu1 = cpu_ticks(pid).unwrap_or(cpu0);
        let own = cpu1 - cpu0 + cpu_ticks(me).unwrap_or(me0) - me0;
        let foreign = noise.foreign_pct(own, secs);
        let wait = wait_pct(pid, wait_srv0, me, wait_me0, secs);
        let peak = status_kb(pid, "VmHWM:").unwrap_or(0);
        drop(writer.join());
        return Ok(summary(o, secs, &mut lat, cpu1 - cpu0, idle_rss, peak, foreign, wait));
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu1 = cpu_ticks(pid).unwrap_or(cpu0);
    let own = cpu1 - cpu0 + cpu_ticks(me).unwrap_or(me0) - me0;
    let foreign = noise.foreign_pct(own, secs);
    let wait = wait_pct(pid, wait_srv0, me, wait_me0, secs);
    let peak = status_kb(pid, "VmHWM:").unwrap_or(0);
    drop(stdin);
    Ok(summary(o, secs, &mut lat, cpu1 - cpu0, idle_rss, peak, foreign, wait))
}

/// The larger run-queue wait of the server and of this driver, as a
/// percentage of the run: how much the processes under test were held back
/// by other work on their cores.
fn wait_pct(pid: u32, srv0: u64, me: u32, me0: u64, secs: f64) -> f64 {
    let srv = runq_wait_ns(pid).saturating_sub(srv0) as f64;
    let drv = runq_wait_ns(me).saturating_sub(me0) as f64;
    100.0 * srv.max(drv) / (secs * 1e9)
}

#[allow(clippy::too_many_arguments)]
fn summary(o: &Opts, secs: f64, lat: &mut [u64], ticks: u64, idle_kb: u64, peak_kb: u64, foreign_pct: f64, wait_pct: f64) -> String {
    lat.sort_unstable();
    let cpu_us = ticks as f64 * 1e6 / bench_harness::TICKS_PER_SEC / o.n as f64;
    format!(
        "STDIO_RESULT mode={} requests={} secs={:.3} rps={:.0} p50_us={:.1} p99_us={:.1} cpu_us_per_req={:.2} idle_rss_kb={} peak_rss_kb={} foreign_pct={:.1} wait_pct={:.1}",
        o.mode,
        o.n,
        secs,
        o.n as f64 / secs,
        percentile(lat, 0.50) as f64 / 1000.0,
        percentile(lat, 0.99) as f64 / 1000.0,
        cpu_us,
        idle_kb,
        peak_kb,
        foreign_pct,
        wait_pct
    )
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("stdio-driver: {e}\nusage: stdio-driver --mode seq|pipe --n N [--warmup W] [--timeout-s S] [--exit-wait-s S] -- CMD ARGS...");
            return ExitCode::from(2);
        }
    };
    let mut child = match Command::new(&o.cmd[0])
        .args(&o.cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("stdio-driver: cannot start {:?}: {e}", o.cmd);
            return ExitCode::FAILURE;
        }
    };
    let r = run(&o, &mut child);
    // Give the server a moment to exit on EOF, then make sure it is gone.
    let t = Instant::now();
    while t.elapsed() < o.exit_wait {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::io::stderr().flush();
    match r {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("stdio-driver: {:?}: {e}", o.cmd);
            ExitCode::FAILURE
        }
    }
}
