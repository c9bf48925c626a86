//! `bare-http --http 127.0.0.1:PORT [--tools N]`: hyper (HTTP/1.1) with
//! TCP_NODELAY; every POST body is answered by `bench_bare::answer`.

use bench_bare::{Answer, answer, tools, tools_arg};
use serde_json::value::RawValue;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;

async fn handle(req: Request<Incoming>, tools: Arc<Box<RawValue>>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let r = match answer(&body, &tools) {
        Answer::Reply(b) => {
            let mut r = Response::new(Full::new(Bytes::from(b)));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r
        }
        Answer::Nothing => {
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::ACCEPTED;
            r
        }
    };
    Ok(r)
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr: std::net::SocketAddr = match args.iter().position(|a| a == "--http").and_then(|i| args.get(i + 1)).map(|a| a.parse()) {
        Some(Ok(a)) => a,
        _ => {
            eprintln!("usage: bare-http --http HOST:PORT [--tools N]");
            return std::process::ExitCode::from(2);
        }
    };
    let tools: Arc<Box<RawValue>> = Arc::new(tools(tools_arg(&args)));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let r: std::io::Result<()> = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!("bare-http listening on http://{addr}/mcp");
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(_) => continue,
            };
            let _ = stream.set_nodelay(true);
            let tools = tools.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| handle(req, tools.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    if let Err(e) = r {
        eprintln!("bare-http: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
