//! Testing a server without processes or sockets: the in-memory pair.
//!
//! ```sh
//! cargo test -p ferromcp-examples --example in_memory_test   # the tests below
//! cargo run  -p ferromcp-examples --example in_memory_test   # the same checks, printed
//! ```
//!
//! `Server::serve_in_memory()` serves the server on one end of a
//! `tokio::io::duplex` (the stdio wire: newline-delimited JSON-RPC) and
//! returns the other end; `ClientBuilder::connect_io(read, write)` connects
//! a real client to it. Pick the era with `.era(..)`: both the 2026-07-28
//! stateless era and the 2025-11-25 handshake era work in memory, so one
//! test can cover both. (Over your own reader/writer pair, use
//! `Server::serve_io(reader, writer)` on the server side.)

use ferromcp_client::{Client, ClientBuilder, EraPreference};

/// Connects a client in `era` to a fresh demo server, in memory.
async fn connect(era: EraPreference) -> Result<Client, Box<dyn std::error::Error>> {
    let (read, write) = ferromcp_examples::demo_server()?.serve_in_memory();
    Ok(ClientBuilder::new("in-memory-test", "1.0.0")
        .era(era)
        .connect_io(read, write)
        .await?)
}

/// Lists and calls the demo server's tools, reads a templated resource.
async fn check(era: EraPreference) -> Result<String, Box<dyn std::error::Error>> {
    let client = connect(era).await?;
    let tools = client.list_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let args = serde_json::json!({"a": 20, "b": 22});
    let sum = client.call_tool("add", args.as_object().cloned()).await?;
    let note = client.read_resource("notes://2").await?;
    let note = serde_json::to_value(&note)?["contents"][0]["text"].clone();
    let report = format!(
        "{:?} era: tools {names:?}, add → {}, notes://2 → {note}",
        client.era(),
        sum.structured_content.unwrap_or_default()
    );
    client.close().await;
    Ok(report)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        println!("{}", check(era).await?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferromcp_client::Era;
    use ferromcp_client::protocol::types::GetPromptRequestParams;
    use serde_json::json;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    async fn tools_prompts_and_resources(era: EraPreference, expected: Era) -> TestResult {
        let client = connect(era).await?;
        assert_eq!(client.era(), expected);

        let r = client
            .call_tool("add", json!({"a": 2, "b": 3}).as_object().cloned())
            .await?;
        assert_eq!(r.structured_content, Some(json!({"sum": 5})));
        // A failing handler is an `isError` result, not a protocol error.
        let r = client
            .call_tool("shout", json!({"text": ""}).as_object().cloned())
            .await?;
        assert_eq!(r.is_error, Some(true));

        let mut params = GetPromptRequestParams::new("review");
        params.arguments = Some([("code".to_string(), "fn f() {}".to_string())].into());
        let p = client.get_prompt(params, Default::default()).await?;
        assert_eq!(p.messages.len(), 1);

        let templates = client.list_resource_templates().await?;
        assert_eq!(templates[0].uri_template, "notes://{id}");
        let note = serde_json::to_value(client.read_resource("notes://1").await?)?;
        assert_eq!(note["contents"][0]["text"], "Buy milk.");
        client.close().await;
        Ok(())
    }

    #[tokio::test]
    async fn works_in_the_2026_07_28_era() -> TestResult {
        tools_prompts_and_resources(EraPreference::Modern, Era::Modern).await
    }

    #[tokio::test]
    async fn works_in_the_handshake_era() -> TestResult {
        tools_prompts_and_resources(EraPreference::Handshake, Era::Handshake).await
    }

    #[tokio::test]
    async fn main_runs() -> TestResult {
        for era in [EraPreference::Modern, EraPreference::Handshake] {
            assert!(check(era).await?.contains("\"sum\":42"));
        }
        Ok(())
    }
}
