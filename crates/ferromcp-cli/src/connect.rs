//! Where the server is, and connecting to it.

use crate::exit::Failure;
use crate::{Common, EraArg};
use ferromcp_client::{Client, ClientBuilder, EraPreference, StdioCommand};
use std::time::Duration;

/// A server: a Streamable HTTP URL or a command speaking stdio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `http://…` or `https://…`
    Url(String),
    /// Program and arguments.
    Command(Vec<String>),
}

/// Whether `s` looks like a server URL.
pub fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// Picks the target from `--server`, a leading URL argument or the command
/// after `--`; returns it with the remaining positional arguments.
pub fn split_target(
    common: &Common,
    mut positional: Vec<String>,
) -> Result<(Target, Vec<String>), Failure> {
    let leading_url = positional.first().is_some_and(|s| is_url(s));
    let url = if leading_url {
        Some(positional.remove(0))
    } else {
        None
    };
    match (url, &common.server, common.command.is_empty()) {
        (Some(_), _, false) | (None, Some(_), false) => Err(Failure::usage(
            "give the server either as a URL or as a command after `--`, not both",
        )),
        (Some(u), _, true) => Ok((Target::Url(u), positional)),
        (None, Some(u), true) => {
            if is_url(u) {
                Ok((Target::Url(u.clone()), positional))
            } else {
                Err(Failure::usage(format!(
                    "--server wants an http:// or https:// URL, not {u:?}"
                )))
            }
        }
        (None, None, false) => Ok((Target::Command(common.command.clone()), positional)),
        (None, None, true) => Err(Failure::usage(
            "no server: give a URL (mcp tools http://127.0.0.1:8080/mcp) or a command after `--` (mcp tools -- mcp serve --stdio)",
        )),
    }
}

/// The client builder for `common`'s options (handlers installed by the caller).
pub fn builder(common: &Common) -> ClientBuilder {
    let era = match common.era {
        EraArg::Auto => EraPreference::Auto,
        EraArg::Modern => EraPreference::Modern,
        EraArg::Handshake => EraPreference::Handshake,
    };
    let b = ClientBuilder::new("ferromcp-cli", env!("CARGO_PKG_VERSION")).era(era);
    let b = match common.protocol_version {
        Some(v) => b.protocol_version(v),
        None => b,
    };
    b.request_timeout(Duration::from_secs(common.timeout.max(1)))
        .validate_output(!common.no_validate_output)
        .max_mrtr_rounds(common.max_input_rounds.max(1))
        .on_elicitation_modes(
            true,
            true,
            crate::elicit::handler(common.no_input, common.answer.clone()),
        )
}

/// Connects to `target` with the default handlers.
pub async fn connect(target: &Target, common: &Common) -> Result<Client, Failure> {
    connect_with(target, builder(common)).await
}

/// Connects to `target` with `builder`.
pub async fn connect_with(target: &Target, builder: ClientBuilder) -> Result<Client, Failure> {
    let r = match target {
        // Stored OAuth credentials for this URL, if any (refreshed when
        // they expire); without them requests go out unauthenticated.
        // Without a config directory there is nothing stored to use.
        Target::Url(u) => match crate::auth::stored(u) {
            Ok(a) => builder.http_auth(a).connect_url(u).await,
            Err(_) => builder.connect_url(u).await,
        },
        Target::Command(cmd) => {
            let Some((program, args)) = cmd.split_first() else {
                return Err(Failure::usage("empty server command after `--`"));
            };
            builder
                .connect_command(StdioCommand::new(program, args))
                .await
        }
    };
    r.map_err(|e| {
        let mut f = Failure::from(e);
        f.message = format!("cannot connect to {}: {}", describe(target), f.message);
        f
    })
}

/// The target for messages.
pub fn describe(target: &Target) -> String {
    match target {
        Target::Url(u) => u.clone(),
        Target::Command(c) => format!("`{}`", c.join(" ")),
    }
}

/// How long a stdio server gets at each step of being stopped after Ctrl-C:
/// the request was already cancelled, so the full shutdown grace (2 s per
/// step) would only keep the user waiting on a busy server.
pub const INTERRUPT_GRACE: Duration = Duration::from_millis(250);

/// Closes the client after a command; quickly when it was interrupted.
pub async fn close<T>(client: &Client, outcome: &Result<T, Failure>) {
    if outcome
        .as_ref()
        .is_err_and(|f| f.code == crate::exit::code::INTERRUPTED)
    {
        client.close_within(INTERRUPT_GRACE).await;
    } else {
        client.close().await;
    }
}
