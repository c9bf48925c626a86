//! A deliberately hostile MCP stdio server, for testing clients (issue 6).
//!
//! It answers `initialize` and `tools/list` normally and misbehaves in
//! `tools/call` according to the tool's name: garbage and non-UTF-8 lines,
//! malformed or decoy responses, over-long lines, floods of server requests,
//! endless output, exiting mid-call, stderr abuse. What it observes
//! (cancellations, answers to its requests) it reports on stderr, one line
//! each, for the test to check. Not an MCP server to use for anything else.
//!
//! `ping` is answered and reported (`ping` on stderr) until the tool
//! `go_deaf` is called; from then on the server reads but answers nothing,
//! like a hung process (`ignored METHOD` on stderr), for keep-alive tests.

use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::time::Duration;

fn rpc(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

fn line(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// A malformed response to `id`, by key.
fn malformed(key: &str, id: &Value) -> Vec<u8> {
    let v = match key {
        "not_utf8" => {
            let mut b = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            )
            .into_bytes();
            b.extend_from_slice(b"\xff\xfe\"}]}}");
            return b;
        }
        "code_string" => {
            json!({"jsonrpc":"2.0","id":id,"error":{"code":"-32000","message":"x"}})
        }
        "missing_message" => json!({"jsonrpc":"2.0","id":id,"error":{"code":-32000}}),
        "result_and_error" => {
            json!({"jsonrpc":"2.0","id":id,"result":{},"error":{"code":-32000,"message":"x"}})
        }
        "wrong_version" => json!({"jsonrpc":"1.0","id":id,"result":{}}),
        "neither" => json!({"jsonrpc":"2.0","id":id}),
        "content_is_5" => json!({"jsonrpc":"2.0","id":id,"result":{"content":5}}),
        other => {
            json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":format!("unknown key {other}")}})
        }
    };
    v.to_string().into_bytes()
}

fn behave(name: &str, id: &Value, out: &mut impl Write, answers: usize) -> std::io::Result<()> {
    let real = rpc(id, text(&format!("real {name}")));
    let n = id.as_i64().unwrap_or(0);
    match name {
        "ok" => line(out, real.as_bytes()),
        "answers" => line(out, rpc(id, text(&answers.to_string())).as_bytes()),
        "garbage" => {
            for g in [
                &b"not json at all"[..],
                b"{\"jsonrpc\":\"2.0\"",
                b"[1,2,3]",
                b"42",
                b"\"string\"",
                b"null",
                b"{}",
                b"\xff\xfe\xfd",
                b"",
                b"   ",
                b"\r",
                b"{\"jsonrpc\":\"2.0\",\"method\":5}",
                b"{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}",
            ] {
                line(out, g)?;
            }
            line(out, real.as_bytes())
        }
        "decoys" => {
            for d in [
                json!(n + 1000),
                json!(n.to_string()),
                json!(n as f64 + 0.5),
                json!([n]),
            ] {
                line(out, rpc(&d, text("decoy")).as_bytes())?;
            }
            line(out, real.as_bytes())?;
            line(out, rpc(id, text("duplicate")).as_bytes())
        }
        "early" => {
            // The answer to the next request, before it was sent.
            line(out, rpc(&json!(n + 1), text("early")).as_bytes())?;
            line(out, real.as_bytes())
        }
        "invalid_json" => line(
            out,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).as_bytes(),
        ),
        "long_line" => {
            let pad = vec![b'a'; 1 << 20];
            out.write_all(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"p":""#).as_bytes())?;
            out.write_all(&pad)?;
            line(out, b"\"}}")
        }
        "exit" => std::process::exit(3),
        "silent" => Ok(()),
        "stdout_forever" => {
            let note = json!({"jsonrpc":"2.0","method":"notifications/message",
                "params":{"level":"info","data":"forever"}})
            .to_string();
            let mut block = Vec::new();
            for i in 0..1000 {
                if i % 2 == 0 {
                    block.extend_from_slice(note.as_bytes());
                } else {
                    block.extend_from_slice(b"garbage garbage garbage");
                }
                block.push(b'\n');
            }
            loop {
                out.write_all(&block)?; // until the client closes the pipe
            }
        }
        "flood_ping" | "flood_ping_deaf" => {
            for i in 0..20_000 {
                let p = json!({"jsonrpc":"2.0","id":format!("p{i}"),"method":"ping"});
                out.write_all(p.to_string().as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
            if name == "flood_ping_deaf" {
                // Not reading stdin meanwhile: the client's answers back up.
                std::thread::sleep(Duration::from_millis(1500));
            }
            line(out, real.as_bytes())
        }
        "flood_elicit" => {
            for i in 0..2000 {
                let e = json!({"jsonrpc":"2.0","id":format!("e{i}"),"method":"elicitation/create",
                    "params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}});
                out.write_all(e.to_string().as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
            std::thread::sleep(Duration::from_millis(300));
            line(out, real.as_bytes())
        }
        "stderr_abuse" => {
            let mut err = std::io::stderr().lock();
            err.write_all(b"bad bytes \xff\xfe\xc0\n")?;
            for _ in 0..2000 {
                err.write_all(&[b'x'; 511])?;
                err.write_all(b"\n")?;
            }
            err.write_all(&vec![b'y'; 4 << 20])?; // 4 MiB without a newline
            err.write_all(b"\nstderr done\n")?;
            err.flush()?;
            line(out, real.as_bytes())
        }
        other => match other.strip_prefix("malformed:") {
            Some(key) => line(out, &malformed(key, id)),
            None => line(
                out,
                json!({"jsonrpc":"2.0","id":id,"error":{"code":-32602,"message":"unknown tool"}})
                    .to_string()
                    .as_bytes(),
            ),
        },
    }
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut answers = 0usize;
    let mut deaf = false;
    for raw in stdin.lock().split(b'\n') {
        let Ok(raw) = raw else { return };
        let Ok(msg) = serde_json::from_slice::<Value>(&raw) else {
            continue;
        };
        let id = msg["id"].clone();
        let method = msg["method"].as_str().unwrap_or("");
        if deaf {
            eprintln!("ignored {method}");
            continue;
        }
        let r = match method {
            "ping" => {
                eprintln!("ping");
                line(&mut out, rpc(&id, json!({})).as_bytes())
            }
            "tools/call" if msg["params"]["name"] == "go_deaf" => {
                deaf = true;
                line(&mut out, rpc(&id, text("real go_deaf")).as_bytes())
            }
            "" => {
                answers += 1;
                eprintln!("answer {id}");
                Ok(())
            }
            "notifications/cancelled" => {
                eprintln!("cancelled {}", msg["params"]["requestId"]);
                Ok(())
            }
            m if m.starts_with("notifications/") => Ok(()),
            "initialize" => line(
                &mut out,
                rpc(
                    &id,
                    json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                        "serverInfo":{"name":"hostile-stdio","version":"1"}}),
                )
                .as_bytes(),
            ),
            "tools/list" => {
                let result = match msg["params"]["cursor"].as_str() {
                    Some("tools-is-5") => json!({"tools": 5}),
                    _ => json!({"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]}),
                };
                line(&mut out, rpc(&id, result).as_bytes())
            }
            "tools/call" => {
                let name = msg["params"]["name"].as_str().unwrap_or("");
                behave(name, &id, &mut out, answers)
            }
            _ => line(&mut out, rpc(&id, json!({})).as_bytes()),
        };
        if r.is_err() {
            return; // the client closed stdout's pipe
        }
    }
}
