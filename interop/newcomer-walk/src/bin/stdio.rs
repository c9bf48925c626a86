#[tokio::main]
async fn main() -> Result<(), ferromcp_server::Error> {
    // Task 8: tracing to stderr.
    use tracing_subscriber::fmt::format::FmtSpan;
    tracing_subscriber::fmt()
        .with_env_filter("info,ferromcp_server=info")
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();
    newcomer_walk::server()?.serve_stdio().await
}
