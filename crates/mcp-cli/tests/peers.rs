//! The CLI against behaviours of servers nobody here wrote (the TypeScript
//! and Python SDK servers), played by `tests/fixtures/scripted_server.py`
//! over stdio in the handshake era. Issue 13, items 4 to 8.

mod common;

use common::*;

/// `mcp ARGS… -- python3 scripted_server.py MODE` with `input` on stdin.
fn against(mode: &str, args: &[&str], input: &str) -> Run {
    let mut a: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    a.push("--era".into());
    a.push("handshake".into());
    a.push("--".into());
    a.extend(scripted(mode));
    run_with(&a, input, &[])
}

/// Item 5: the server turns our `--no-input` refusal into `isError: true`;
/// the exit code is still 5, not 1.
#[test]
fn no_input_is_exit_5_when_the_server_makes_the_refusal_a_tool_error() {
    let r = against("tool-error-on-refusal", &["call", "--no-input", "ask"], "");
    assert_eq!(r.code, 5, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--no-input"), "{}", r.stderr);
    // Control: answering the form is a success.
    let r = against("tool-error-on-refusal", &["call", "ask"], "y\n");
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
}
