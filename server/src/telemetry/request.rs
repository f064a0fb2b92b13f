//! Every HTTP request: its span (named by its route, in the caller's trace), its trace
//! context for the handlers, and its RED metrics.

use std::{sync::Arc, time::Instant};

use axum::{
    extract::{MatchedPath, Request, State},
    middleware::Next,
    response::Response,
};
use tracing::{field::Empty, Instrument};

use super::RequestTrace;
use crate::metrics::{
    routes::{method_label, UNMATCHED},
    Metrics,
};

pub async fn observe_requests(
    State(metrics): State<Arc<Metrics>>,
    mut req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    // A clone of the matched pattern is a reference count, not a copy of the text.
    let matched = req.extensions().get::<MatchedPath>().cloned();
    let route = matched.as_ref().map_or(UNMATCHED, MatchedPath::as_str);
    let span = if super::spans() {
        tracing::info_span!(
            "request",
            otel.name = %format_args!("{method} {route}"),
            otel.kind = "server",
            otel.status_code = Empty,
            trace_id = Empty,
            http.request.method = method,
            http.route = route,
            http.response.status_code = Empty,
        )
    } else {
        tracing::Span::none()
    };
    let trace = RequestTrace::of(req.headers(), &span);
    if super::spans() && !super::exporting() {
        span.record(
            "trace_id",
            tracing::field::display(trace.parent.trace_id_hex()),
        );
    }
    req.extensions_mut().insert(trace);
    let response = next.run(req).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
    metrics
        .routes
        .observe(method, route, status, started.elapsed());
    response
}
