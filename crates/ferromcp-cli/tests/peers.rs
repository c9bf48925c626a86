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

// LEGACY-04
/// Item 6: a server that offers only tools. `mcp resources`
/// and `mcp prompts` send nothing, say so plainly and list nothing;
/// commands that need the feature fail with exit 3 naming the capability.
#[test]
fn features_the_server_does_not_offer_are_not_requested() {
    for (cmd, what) in [("resources", "resources"), ("prompts", "prompts")] {
        let r = against("bare", &[cmd], "");
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("the server offers no {what}")),
            "{cmd}: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("Method not found"),
            "{cmd}: {}",
            r.stderr
        );
        let r = against("bare", &[cmd, "--json"], "");
        assert_eq!(r.code, 0, "{cmd} --json: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
        assert_eq!(v[what], serde_json::json!([]), "{cmd} --json: {}", r.stdout);
    }
    let r = against("bare", &["read", "test://x"], "");
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("does not offer resources"),
        "{}",
        r.stderr
    );
    // Control: the tools it does offer work.
    let r = against("bare", &["call", "ask"], "");
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Item 8: `mcp read` labels a blob by its MIME type; a PDF is not an image.
#[test]
fn blobs_are_labelled_by_their_mime_type() {
    let dir = scratch("peers-blobs");
    for (uri, label) in [
        ("test://pdf", "[binary application/pdf, 8 bytes saved to "),
        ("test://png", "[image image/png, 8 bytes saved to "),
        ("test://wav", "[audio audio/wav, 8 bytes saved to "),
        ("test://plain", "[binary (no MIME type), 8 bytes saved to "),
    ] {
        let r = against(
            "blobs",
            &["read", uri, "--save-dir", dir.to_str().unwrap()],
            "",
        );
        assert_eq!(r.code, 0, "{uri}: {}", r.stderr);
        assert!(r.stdout.starts_with(label), "{uri}: {}", r.stdout);
    }
    assert!(dir.join("pdf-1.pdf").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 7: form fields are asked in the server's order (name, email, age,
/// zone, bio), not alphabetically.
#[test]
fn form_fields_are_asked_in_the_servers_order() {
    let r = against(
        "ordered-form",
        &["call", "ask"],
        "Ada\nada@example.com\n36\nUTC\nhi\ny\n",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let positions: Vec<usize> = ["name (", "email (", "age (", "zone (", "bio ("]
        .iter()
        .map(|f| {
            r.stderr
                .find(f)
                .unwrap_or_else(|| panic!("{f} not asked: {}", r.stderr))
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "asked out of order: {}",
        r.stderr
    );
    // The server got every answer, typed.
    let content: serde_json::Value =
        serde_json::from_str(r.stdout.trim()).expect("the echoed content is JSON");
    assert_eq!(
        content,
        serde_json::json!({"name": "Ada", "email": "ada@example.com", "age": 36, "zone": "UTC", "bio": "hi"})
    );
}

// LEGACY-22
/// Item 4: -32042 URL elicitation required is not a dead end:
/// the message and URL are shown, the call is retried once the user says
/// the interaction is done, and otherwise the exit code is 7.
#[test]
fn url_elicitation_required_shows_the_urls_and_retries() {
    let url = "https://example.com/connect?state=1";
    // Interactive: do not open it, press Enter to retry: the retry succeeds.
    let r = against("url-required", &["call", "ask"], "n\n\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("Connect your example.com account"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(url), "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "called 2 times");
    // Declined: exit 7.
    let r = against("url-required", &["call", "ask"], "n\nn\n");
    assert_eq!(r.code, 7, "{}", r.stderr);
    // --no-input: the URL is printed, exit 7.
    let r = against("url-required", &["call", "--no-input", "ask"], "");
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.stderr.contains(url), "{}", r.stderr);
    // --json: the interactions as data on stdout.
    let r = against("url-required", &["call", "--json", "ask"], "");
    assert_eq!(r.code, 7, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON on stdout");
    assert_eq!(v["error"]["code"], -32042, "{v}");
    assert_eq!(v["urlElicitations"][0]["url"], url, "{v}");
    assert_eq!(
        v["urlElicitations"][0]["elicitationId"], "e-connect-1",
        "{v}"
    );
}

/// Item 8: after Ctrl-C the cancel is already sent, so a busy stdio server
/// that ignores it is stopped after a short grace, not the full 2 s per
/// step (stdin closed, SIGTERM, SIGKILL) of a normal shutdown.
#[test]
fn ctrl_c_stops_a_busy_stdio_server_quickly() {
    use std::time::{Duration, Instant};
    let dir = scratch("peers-busy");
    let marker = dir.join("busy");
    let mut args = vec![
        "call".to_owned(),
        "ask".into(),
        "--era".into(),
        "handshake".into(),
        "--".into(),
    ];
    args.extend(scripted("busy"));
    let child = mcp()
        .args(&args)
        .env("BUSY_FILE", &marker)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mcp");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the server never got the call");
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = Instant::now();
    let ok = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok);
    let out = child.wait_with_output().expect("wait");
    let took = interrupted.elapsed();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The full grace alone is 2 s before the SIGTERM; 250 ms now.
    assert!(took < Duration::from_millis(1800), "took {took:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 9: structured output is checked against the tool's outputSchema
/// by the client (opt-out with --no-validate-output).
#[test]
fn tool_results_are_checked_against_the_output_schema() {
    let r = against("output-schema", &["call", "good"], "");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = against("output-schema", &["call", "bad"], "");
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("tool \"bad\" broke its outputSchema: at /n"),
        "{}",
        r.stderr
    );
    let r = against("output-schema", &["call", "none"], "");
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("no structuredContent"), "{}", r.stderr);
    let r = against(
        "output-schema",
        &["call", "--no-validate-output", "bad"],
        "",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}
