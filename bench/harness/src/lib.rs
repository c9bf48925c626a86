//! /proc readings shared by `bench-run` and `stdio-driver`.

/// USER_HZ: /proc reports CPU time in these ticks per second on Linux.
pub const TICKS_PER_SEC: f64 = 100.0;

/// utime + stime of a whole process (all its threads, live or exited), in ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat; `rest` starts at field 3.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// A `kB` field of /proc/PID/status (VmRSS:, VmHWM:), in kB.
pub fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Machine-wide CPU time from /proc/stat: (busy, total) ticks over all
/// cores. Busy includes steal, so time the hypervisor took counts as load.
pub fn machine_ticks() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let idle = v.get(3)? + v.get(4)?;
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let busy = v.iter().take(8).sum::<u64>() - idle;
    Some((busy, busy + idle))
}

/// Tracks the CPU the rest of the machine used while we measured: all busy
/// ticks minus those of the processes under test and of the load generator.
pub struct Noise {
    start: (u64, u64),
}

impl Noise {
    pub fn start() -> Self {
        Self { start: machine_ticks().unwrap_or((0, 0)) }
    }

    /// Foreign load as a percentage of one core, given the ticks our own
    /// processes (server, load generator) used meanwhile.
    pub fn foreign_pct(&self, own_ticks: u64, secs: f64) -> f64 {
        let (busy, _) = machine_ticks().unwrap_or(self.start);
        let foreign = (busy - self.start.0).saturating_sub(own_ticks) as f64;
        100.0 * foreign / (secs * TICKS_PER_SEC).max(1.0)
    }
}

/// Waits (at most `limit`) until the machine is quiet: under `max_pct` of
/// one core busy over a one-second window. Returns the last reading.
pub fn wait_quiet(max_pct: f64, limit: std::time::Duration) -> f64 {
    let t = std::time::Instant::now();
    loop {
        let a = machine_ticks().unwrap_or((0, 0));
        let w = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let b = machine_ticks().unwrap_or(a);
        let pct = (b.0 - a.0) as f64 * 100.0 / (w.elapsed().as_secs_f64() * TICKS_PER_SEC);
        if pct <= max_pct || t.elapsed() >= limit {
            return pct;
        }
    }
}

/// Time the threads of `pid` spent runnable but waiting for a CPU
/// (/proc/PID/task/*/schedstat, second field), in nanoseconds. Threads that
/// exited meanwhile are not counted.
pub fn runq_wait_ns(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    dir.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .sum()
}

/// Sets the scheduler autogroup niceness of this process's session (and so
/// of every child); returns the previous value. With autogroups on (the
/// default), plain `nice` only ranks processes within their own session, so
/// this is what gives the benchmark precedence over other sessions' builds.
pub fn set_autogroup_nice(nice: i32) -> Option<i32> {
    let prev = std::fs::read_to_string("/proc/self/autogroup")
        .ok()?
        .split_whitespace()
        .last()?
        .parse()
        .ok()?;
    std::fs::write("/proc/self/autogroup", nice.to_string()).ok()?;
    Some(prev)
}
