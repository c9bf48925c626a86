//! `bare-stdio [--tools N]`: a line echo. Reads newline-delimited JSON-RPC
//! from stdin on one thread, answers each line with `bench_bare::answer`,
//! and flushes stdout whenever no further input is already buffered (so a
//! one-at-a-time client is never kept waiting and a pipelining client gets
//! large writes).

use bench_bare::{Answer, answer, tools, tools_arg};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tools = tools(tools_arg(&args));
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let mut out = BufWriter::with_capacity(64 * 1024, stdout);
    let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Answer::Reply(b) = answer(&line, &tools) {
            out.write_all(&b)?;
            out.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()
}
