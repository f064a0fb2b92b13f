//! The same metrics over OTLP: one observable instrument per family of `/metrics`, each
//! reading the process's counters when the SDK collects (every
//! `OTEL_METRIC_EXPORT_INTERVAL`). Read from the Prometheus text itself, so the two can
//! never disagree: counters stay counters, gauges gauges, and a histogram goes out as its
//! `_sum` and `_count` (its buckets stay Prometheus').

use std::sync::{Arc, Mutex};

use opentelemetry::KeyValue;

use crate::metrics::Metrics;

/// The instruments, kept for the life of the process.
static KEPT: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>> = Mutex::new(Vec::new());

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

/// Registers the instruments when an OTLP metrics exporter is installed.
pub fn bridge(metrics: Arc<Metrics>) {
    if !super::metering() {
        return;
    }
    let meter = opentelemetry::global::meter("posthorn");
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    for (name, kind) in families(&metrics.render()) {
        let m = metrics.clone();
        let family = name.clone();
        let read = move || series(&m.render(), &family);
        match kind {
            Kind::Counter => kept.push(Box::new(
                meter
                    .f64_observable_counter(name)
                    .with_callback(move |o| {
                        for (v, attrs) in read() {
                            o.observe(v, &attrs);
                        }
                    })
                    .build(),
            )),
            Kind::Gauge => kept.push(Box::new(
                meter
                    .f64_observable_gauge(name)
                    .with_callback(move |o| {
                        for (v, attrs) in read() {
                            o.observe(v, &attrs);
                        }
                    })
                    .build(),
            )),
        }
    }
}

/// Every series name of the text and its kind (a histogram is its `_sum` and `_count`
/// counters).
fn families(text: &str) -> Vec<(String, Kind)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let Some((name, kind)) = rest.split_once(' ') else {
            continue;
        };
        match kind {
            "counter" => out.push((name.to_string(), Kind::Counter)),
            "gauge" => out.push((name.to_string(), Kind::Gauge)),
            "histogram" => {
                out.push((format!("{name}_sum"), Kind::Counter));
                out.push((format!("{name}_count"), Kind::Counter));
            }
            _ => {}
        }
    }
    out
}

/// The samples of one series name: value and labels.
fn series(text: &str, name: &str) -> Vec<(f64, Vec<KeyValue>)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((head, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (series, labels) = match head.split_once('{') {
            Some((s, l)) => (s, l.strip_suffix('}').unwrap_or(l)),
            None => (head, ""),
        };
        if series != name {
            continue;
        }
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        out.push((value, parse_labels(labels)));
    }
    out
}

/// `k="v",k2="v2"` (values as `/metrics` escapes them).
fn parse_labels(text: &str) -> Vec<KeyValue> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push(KeyValue::new(
            key.trim_start_matches(',').to_string(),
            value,
        ));
        rest = &after[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prometheus_text_is_read_back_as_instruments_and_samples() {
        let m = Metrics::default();
        m.routes
            .observe("GET", "/a/{id}", 200, std::time::Duration::from_millis(2));
        let text = m.render();
        let fams = families(&text);
        assert!(fams.contains(&("posthorn_attempts_total".into(), Kind::Counter)));
        assert!(fams.contains(&(
            "posthorn_http_request_duration_seconds_count".into(),
            Kind::Counter
        )));
        assert!(fams.contains(&("posthorn_queue_depth".into(), Kind::Gauge)));
        let got = series(&text, "posthorn_http_requests_total");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 1.0);
        let labels: Vec<String> = got[0]
            .1
            .iter()
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        assert_eq!(labels, ["method=GET", "route=/a/{id}", "status=2xx"]);
        let odd = parse_labels(r#"a="x\"y",b="c\\d""#);
        assert_eq!(odd[0].value.as_str(), "x\"y");
        assert_eq!(odd[1].value.as_str(), "c\\d");
    }
}
