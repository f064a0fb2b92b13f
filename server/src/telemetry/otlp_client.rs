//! The OTLP exporters' HTTP client: the process's own reqwest, run on its own runtime.
//! The SDK's batch processors export from threads of their own; a request spawned onto
//! the runtime and awaited there needs no second HTTP stack (opentelemetry-http would
//! bring another reqwest major version).

use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// The most of a collector's answer kept (it says only whether the export was taken).
const MAX_ANSWER: usize = 64 * 1024;

#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    /// None outside a Tokio runtime, or when no client can be built.
    pub fn new() -> Option<Client> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .no_proxy()
            .build()
            .ok()?;
        Some(Client { http, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let http = self.http.clone();
        let (parts, body) = request.into_parts();
        let sent = self.runtime.spawn(async move {
            let answer = http
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let status = answer.status();
            let headers = answer.headers().clone();
            let mut body = Vec::new();
            let mut answer = answer;
            while let Some(chunk) = answer.chunk().await? {
                let room = MAX_ANSWER.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok::<_, reqwest::Error>((status, headers, body))
        });
        let (status, headers, body) = sent.await??;
        let mut response = Response::builder().status(status);
        if let Some(h) = response.headers_mut() {
            *h = headers;
        }
        Ok(response.body(Bytes::from(body))?)
    }
}
