//! `everything-server --http 127.0.0.1:PORT` (endpoint `/mcp`) or
//! `everything-server --stdio`. SIGTERM and Ctrl-C exit cleanly.

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!("usage: everything-server --http HOST:PORT | --stdio");
    ExitCode::from(2)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.as_slice() {
        [flag, addr] if flag == "--http" => match addr.parse::<std::net::SocketAddr>() {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("invalid address {addr:?}: {e}");
                return usage();
            }
        },
        [flag] if flag == "--stdio" => None,
        _ => return usage(),
    };
    let server = match mcp_everything::everything_server() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("everything-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("everything-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        match mode {
            Some(addr) => {
                eprintln!("everything-server listening on http://{addr}/mcp");
                mcp_server::transport::http::serve(server, addr, shutdown_signal()).await
            }
            None => {
                tokio::select! {
                    r = server.serve_stdio() => r,
                    _ = shutdown_signal() => Ok(()),
                }
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything-server: {e}");
            ExitCode::FAILURE
        }
    }
}
