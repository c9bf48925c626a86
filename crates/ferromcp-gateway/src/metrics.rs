//! The gateway's Prometheus metrics: tool calls per upstream, tool and
//! outcome, their latency, each upstream's connection and breaker state,
//! and cache hits and misses, rendered in the Prometheus text exposition
//! format (version 0.0.4).
//!
//! Hand-written rather than through a metrics crate: five metric families
//! with fixed label sets need a counter map and a fixed-bucket histogram,
//! and the text format is a few escaping rules; a crate would add its
//! dependencies (and a proc-macro) to every build of the gateway for that.
//!
//! Label cardinality is bounded: tools come from the configuration-filtered
//! catalogues, and on top of that at most [`Metrics::max_series`]
//! `(upstream, tool)` pairs get their own series; calls of further tools are
//! counted under the tool label [`OTHER_TOOL`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The default cap on `(upstream, tool)` pairs with their own series.
pub const DEFAULT_MAX_SERIES: usize = 2000;

/// The tool label of calls beyond the series cap.
pub const OTHER_TOOL: &str = "__other__";

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// How a forwarded tool call ended (the `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true` from the upstream.
    ToolError,
    /// A JSON-RPC error from the upstream.
    RpcError,
    /// No answer within the upstream's `timeoutMs`.
    Timeout,
    /// The upstream was not connected.
    Down,
    /// Refused by the upstream's circuit breaker.
    BreakerOpen,
    /// The connection failed during the call.
    Broken,
    /// The upstream refused the gateway's credentials.
    Auth,
    /// A malformed answer, a cancelled call, anything else.
    Other,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::RpcError => "rpc_error",
            Outcome::Timeout => "timeout",
            Outcome::Down => "down",
            Outcome::BreakerOpen => "breaker_open",
            Outcome::Broken => "broken",
            Outcome::Auth => "auth",
            Outcome::Other => "other",
        }
    }
}

/// The state of one upstream at scrape time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamState {
    /// Its configured name.
    pub name: String,
    /// Whether it is connected.
    pub connected: bool,
    /// Its breaker: 0 closed, 1 open, 2 one trial request out.
    pub breaker: u8,
}

#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Cumulative counts are computed at render; these are per bucket,
    /// plus one for `+Inf`.
    buckets: [u64; BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

#[derive(Debug, Default)]
struct Inner {
    calls: BTreeMap<(String, String, Outcome), u64>,
    latency: BTreeMap<(String, String), Histogram>,
    cache: BTreeMap<(String, bool), u64>,
    dropped: BTreeMap<String, u64>,
}

/// The gateway's counters and histograms (shared by its upstreams).
#[derive(Debug)]
pub struct Metrics {
    inner: Mutex<Inner>,
    max_series: usize,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_SERIES)
    }
}

impl Metrics {
    /// Empty metrics giving at most `max_series` `(upstream, tool)` pairs
    /// their own series.
    pub fn new(max_series: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            max_series,
        }
    }

    /// The cap on `(upstream, tool)` pairs with their own series.
    pub fn max_series(&self) -> usize {
        self.max_series
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one forwarded tool call of `upstream`'s own tool `tool` and
    /// its latency.
    pub fn record_call(&self, upstream: &str, tool: &str, outcome: Outcome, took: Duration) {
        let mut m = self.lock();
        let key = (upstream.to_owned(), tool.to_owned());
        let tool = if m.latency.contains_key(&key) || m.latency.len() < self.max_series {
            tool
        } else {
            OTHER_TOOL
        };
        *m.calls
            .entry((upstream.to_owned(), tool.to_owned(), outcome))
            .or_default() += 1;
        let h = m
            .latency
            .entry((upstream.to_owned(), tool.to_owned()))
            .or_default();
        let secs = took.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        h.buckets[i] += 1;
        h.sum += secs;
        h.count += 1;
    }

    /// Counts one cache lookup for `upstream`: a hit or a miss.
    pub fn record_cache(&self, upstream: &str, hit: bool) {
        *self
            .lock()
            .cache
            .entry((upstream.to_owned(), hit))
            .or_default() += 1;
    }

    /// Counts `n` notifications of `upstream` dropped by its rate limit.
    pub fn record_dropped(&self, upstream: &str, n: u64) {
        *self.lock().dropped.entry(upstream.to_owned()).or_default() += n;
    }

    /// The number of tool calls counted for `(upstream, tool, outcome)`.
    pub fn calls(&self, upstream: &str, tool: &str, outcome: Outcome) -> u64 {
        self.lock()
            .calls
            .get(&(upstream.to_owned(), tool.to_owned(), outcome))
            .copied()
            .unwrap_or(0)
    }

    /// Everything in the Prometheus text format, with the upstreams'
    /// current states as gauges.
    pub fn render(&self, upstreams: &[UpstreamState]) -> String {
        let m = self.lock();
        let mut out = String::new();
        family(
            &mut out,
            "mcp_gateway_tool_calls_total",
            "counter",
            "Tool calls forwarded to upstreams, by upstream, upstream tool name and outcome.",
        );
        for ((u, t, o), n) in &m.calls {
            sample(
                &mut out,
                "mcp_gateway_tool_calls_total",
                &[("upstream", u), ("tool", t), ("outcome", o.as_str())],
                &n.to_string(),
            );
        }
        family(
            &mut out,
            "mcp_gateway_tool_call_duration_seconds",
            "histogram",
            "Latency of tool calls forwarded to upstreams, by upstream and upstream tool name.",
        );
        for ((u, t), h) in &m.latency {
            let mut cumulative = 0;
            for (i, b) in BUCKETS.iter().enumerate() {
                cumulative += h.buckets[i];
                sample(
                    &mut out,
                    "mcp_gateway_tool_call_duration_seconds_bucket",
                    &[("upstream", u), ("tool", t), ("le", &b.to_string())],
                    &cumulative.to_string(),
                );
            }
            sample(
                &mut out,
                "mcp_gateway_tool_call_duration_seconds_bucket",
                &[("upstream", u), ("tool", t), ("le", "+Inf")],
                &h.count.to_string(),
            );
            let labels = [("upstream", u.as_str()), ("tool", t.as_str())];
            sample(
                &mut out,
                "mcp_gateway_tool_call_duration_seconds_sum",
                &labels,
                &h.sum.to_string(),
            );
            sample(
                &mut out,
                "mcp_gateway_tool_call_duration_seconds_count",
                &labels,
                &h.count.to_string(),
            );
        }
        family(
            &mut out,
            "mcp_gateway_upstream_connected",
            "gauge",
            "1 if the upstream is connected, else 0.",
        );
        for u in upstreams {
            sample(
                &mut out,
                "mcp_gateway_upstream_connected",
                &[("upstream", &u.name)],
                if u.connected { "1" } else { "0" },
            );
        }
        family(
            &mut out,
            "mcp_gateway_upstream_breaker_state",
            "gauge",
            "The upstream's circuit breaker: 0 closed, 1 open, 2 one trial request out.",
        );
        for u in upstreams {
            sample(
                &mut out,
                "mcp_gateway_upstream_breaker_state",
                &[("upstream", &u.name)],
                &u.breaker.to_string(),
            );
        }
        family(
            &mut out,
            "mcp_gateway_cache_lookups_total",
            "counter",
            "Cache lookups of upstream results, by upstream and result (hit or miss).",
        );
        for ((u, hit), n) in &m.cache {
            let r = if *hit { "hit" } else { "miss" };
            sample(
                &mut out,
                "mcp_gateway_cache_lookups_total",
                &[("upstream", u), ("result", r)],
                &n.to_string(),
            );
        }
        family(
            &mut out,
            "mcp_gateway_notifications_dropped_total",
            "counter",
            "Upstream notifications dropped by the upstream's notification rate limit.",
        );
        for (u, n) in &m.dropped {
            sample(
                &mut out,
                "mcp_gateway_notifications_dropped_total",
                &[("upstream", u)],
                &n.to_string(),
            );
        }
        out
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: &str) {
    out.push_str(name);
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        escape(out, v);
        out.push('"');
    }
    out.push_str("} ");
    out.push_str(value);
    out.push('\n');
}

/// A label value as the text format wants it: backslash, double quote and
/// line feed escaped.
fn escape(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let m = Metrics::default();
        m.record_call("a\"b", "t\\\n", Outcome::Ok, Duration::from_millis(1));
        let text = m.render(&[]);
        assert!(
            text.contains(
                "mcp_gateway_tool_calls_total{upstream=\"a\\\"b\",tool=\"t\\\\\\n\",outcome=\"ok\"} 1\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.record_call("u", "t", Outcome::Ok, Duration::from_millis(3));
        m.record_call("u", "t", Outcome::Timeout, Duration::from_secs(60));
        let text = m.render(&[]);
        let b = |le: &str| {
            format!(
                "mcp_gateway_tool_call_duration_seconds_bucket{{upstream=\"u\",tool=\"t\",le=\"{le}\"}} "
            )
        };
        assert!(text.contains(&(b("0.005") + "1\n")), "{text}");
        assert!(text.contains(&(b("30") + "1\n")), "{text}");
        assert!(text.contains(&(b("+Inf") + "2\n")), "{text}");
        assert!(text.contains(
            "mcp_gateway_tool_call_duration_seconds_count{upstream=\"u\",tool=\"t\"} 2\n"
        ));
    }

    #[test]
    fn tools_beyond_the_series_cap_share_one_label() {
        let m = Metrics::new(2);
        for t in ["a", "b", "c", "d", "a"] {
            m.record_call("u", t, Outcome::Ok, Duration::ZERO);
        }
        assert_eq!(m.calls("u", "a", Outcome::Ok), 2);
        assert_eq!(m.calls("u", "b", Outcome::Ok), 1);
        assert_eq!(m.calls("u", "c", Outcome::Ok), 0);
        assert_eq!(m.calls("u", OTHER_TOOL, Outcome::Ok), 2);
    }

    #[test]
    fn cache_and_gauges_render() {
        let m = Metrics::default();
        m.record_cache("u", true);
        m.record_cache("u", true);
        m.record_cache("u", false);
        let text = m.render(&[UpstreamState {
            name: "u".into(),
            connected: true,
            breaker: 1,
        }]);
        for line in [
            "mcp_gateway_cache_lookups_total{upstream=\"u\",result=\"hit\"} 2\n",
            "mcp_gateway_cache_lookups_total{upstream=\"u\",result=\"miss\"} 1\n",
            "mcp_gateway_upstream_connected{upstream=\"u\"} 1\n",
            "mcp_gateway_upstream_breaker_state{upstream=\"u\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
