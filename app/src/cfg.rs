//! All configuration, read and checked once at start-up. A bad value stops the program
//! with a message naming the variable.

use std::{net::SocketAddr, time::Duration};

use crate::core::{duration::parse_duration, duration::parse_schedule, retry::RetryPolicy};

const MIB: i64 = 1024 * 1024;

#[derive(Clone, Debug)]
pub struct Config {
    pub database_url: String,
    pub site_addr: SocketAddr,
    pub retry: RetryPolicy,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub allow_private_targets: bool,
    /// Extra trust roots for receivers' certificates, PEM (`POSTHORN_CA_FILE`), read at
    /// start, beside the built-in web roots.
    pub extra_roots: Option<Vec<u8>>,
    /// `POSTHORN_ENCRYPTION_KEY`: the keys sealing secret material at rest (see
    /// [`crate::core::sealed`]), checked and installed at start by the command line.
    pub encryption_key: Option<Redacted>,
    /// `POSTHORN_METRICS_TOKEN`: when set, `/metrics` wants `Authorization: Bearer` it.
    pub metrics_token: Option<Redacted>,
    /// `POSTHORN_EGRESS_PROXY`: every delivery to a receiver goes through this HTTP proxy
    /// (CONNECT), after the target guard has checked the target's address.
    pub egress_proxy: Option<EgressProxy>,
    pub retention_days: u32,
    pub bin_ttl: Duration,
    /// How long a portal session lasts at most from its link's use.
    pub portal_session: Duration,
    pub public_url: String,
    pub auto_disable_after: Duration,
    /// Where alert e-mail goes out (`smtp://`, `smtps://`; none: no e-mail).
    pub smtp_url: Option<String>,
    /// The alert e-mail's sender.
    pub smtp_from: String,
    /// How often the alert loop looks for failing, recovered and dead-lettered endpoints.
    pub alert_interval: Duration,
    /// Alert mails one project may have tried per hour; past it, its mail waits.
    pub alert_mails_per_hour: i64,
    /// Delay before each further try of an alert mail the server did not take for now
    /// (4xx, no connection); when it is used up the mail is failed.
    pub alert_mail_retry: Vec<Duration>,
    /// Dispatcher: rows claimed per round, attempts in flight at once, per endpoint.
    /// Throttled endpoints' attempts start on their booked slots without waiting for one
    /// of the `concurrency` slots: their rows' shares (per endpoint, per project, and
    /// twice `concurrency` held per dispatcher) bound them instead.
    pub batch_size: i64,
    pub concurrency: usize,
    pub per_endpoint_concurrency: usize,
    /// Rows one project may hold in a dispatcher at once, so no tenant takes every slot.
    pub project_concurrency: usize,
    pub lease: Duration,
    /// Inspector captures allowed per source address per minute.
    pub capture_per_minute: u32,
    /// Captures of one project's own deliveries to bins (Redirects, endpoints pointed at
    /// bins) allowed per minute: counted per project, never against the address they
    /// come from.
    pub project_capture_per_minute: u32,
    /// Inspector storage: per bin (oldest captures go first) and in all (then 507).
    pub bin_quota_bytes: i64,
    pub inspector_budget_bytes: i64,
    /// The percent of the budget one source (an address, or a project's deliveries to
    /// bins) may hold; past it that source gets 507 while others still capture.
    pub inspector_address_share: u8,
    /// The percent of the budget kept for Posthorn's own deliveries to bins: captures
    /// from addresses stop short of it.
    pub inspector_redirect_reserve: u8,
    /// The public API's requests per key per minute, by plan.
    pub plan_limits: crate::core::ratelimit::PlanLimits,
    /// Bulk replay: attempts enqueued per endpoint per second.
    pub replay_per_second: u32,
    /// Ingest hands fresh attempts straight to the dispatcher in the same process.
    pub handoff: bool,
    /// Writers that take concurrent API requests' statements together (lone events, key
    /// hits), one statement a group (0: each request runs its own).
    pub ingest_writers: usize,
    /// Bulk replay: (event, endpoint) pairs one replay may send at most, so one click
    /// cannot queue millions of requests.
    pub replay_max: u32,
    /// Inspector bins one source address may make per minute.
    pub bin_creations_per_minute: u32,
}

/// An egress proxy: `http://[user:password@]host:port`.
#[derive(Clone, PartialEq)]
pub struct EgressProxy {
    pub host: String,
    pub port: u16,
    /// User and password, percent-decoded, for `Proxy-Authorization: Basic`.
    pub credentials: Option<(String, String)>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}:{}", self.host, self.port)
    }
}

impl EgressProxy {
    pub fn parse(text: &str) -> Result<EgressProxy, String> {
        let url = url::Url::parse(text.trim()).map_err(|e| format!("`{text}`: {e}"))?;
        if url.scheme() != "http" {
            return Err("the proxy is spoken to in plain HTTP: `http://host:port`".into());
        }
        if url.path() != "/" || url.query().is_some() {
            return Err("give only `http://[user:password@]host:port`".into());
        }
        let host = url.host_str().ok_or("no host")?;
        // Brackets of an IPv6 literal are the URL's, not the address's.
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url
            .port()
            .ok_or("name the port (`http://proxy.internal:3128`)")?;
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let credentials = (!url.username().is_empty())
            .then(|| (decode(url.username()), decode(url.password().unwrap_or(""))));
        Ok(EgressProxy {
            host,
            port,
            credentials,
        })
    }
}

/// A value never printed, not even in a debug dump of the configuration.
#[derive(Clone)]
pub struct Redacted(pub String);

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A project may hold half of a dispatcher's slots: whatever one tenant's endpoints do,
/// every other tenant has the other half. (A quarter, as before, bound a fan-out to one
/// project's 100 endpoints at 128 sends in flight: 3,600–4,400 deliveries/s with the
/// cores a quarter idle, and claims of 13–50 rows read from 800 candidates.) Never fewer
/// than the 128 it was: a small dispatcher is not made stingier than it was.
pub fn default_project_concurrency(concurrency: usize) -> usize {
    (concurrency / 2).max(128)
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        Self::from_env_with(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (the environment, or a test's values).
    /// The values checked across variables are read first, in this order, so that of
    /// several bad values the first one here is the one reported.
    pub fn from_env_with(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let env = Env(lookup);
        let schedule = env.schedule("POSTHORN_RETRY_SCHEDULE", "30s,5m,30m,2h,6h")?;
        let allow_private_targets = env.flag("POSTHORN_ALLOW_PRIVATE_TARGETS", false)?;
        let extra_roots = ca_file(&env)?;
        let handoff = env.flag("POSTHORN_HANDOFF", true)?;
        let site_addr = site_addr(&env)?;
        let public_url = public_url(&env)?;
        let concurrency = env.number("POSTHORN_DISPATCH_CONCURRENCY", 512usize)?;
        let alert_mails_per_hour = alert_mails_per_hour(&env)?;
        let alert_mail_retry = env.schedule("POSTHORN_ALERT_MAIL_RETRY", "1m,5m,30m,2h")?;
        Ok(Config {
            database_url: env.var("DATABASE_URL").ok_or("DATABASE_URL: not set")?,
            site_addr,
            retry: RetryPolicy {
                schedule,
                max_window: env.duration("POSTHORN_MAX_WINDOW", "24h")?,
            },
            connect_timeout: env.duration("POSTHORN_CONNECT_TIMEOUT", "10s")?,
            read_timeout: env.duration("POSTHORN_READ_TIMEOUT", "30s")?,
            allow_private_targets,
            extra_roots,
            encryption_key: env.var("POSTHORN_ENCRYPTION_KEY").map(Redacted),
            metrics_token: env
                .var("POSTHORN_METRICS_TOKEN")
                .filter(|t| !t.trim().is_empty())
                .map(Redacted),
            egress_proxy: egress_proxy(&env)?,
            handoff,
            retention_days: env.number("POSTHORN_RETENTION_DAYS", 14u32)?,
            bin_ttl: env.duration("POSTHORN_BIN_TTL", "7d")?,
            portal_session: env.duration("POSTHORN_PORTAL_SESSION", "8h")?,
            public_url,
            auto_disable_after: env.duration("POSTHORN_AUTO_DISABLE_AFTER", "5d")?,
            smtp_url: env.var("POSTHORN_SMTP_URL"),
            smtp_from: env
                .var("POSTHORN_SMTP_FROM")
                .unwrap_or_else(|| "Posthorn alerts <alerts@posthorn.localhost>".into()),
            alert_interval: env.duration("POSTHORN_ALERT_INTERVAL", "10s")?,
            alert_mails_per_hour,
            alert_mail_retry,
            batch_size: env.number("POSTHORN_DISPATCH_BATCH", 200i64)?,
            concurrency,
            per_endpoint_concurrency: env.number("POSTHORN_ENDPOINT_CONCURRENCY", 16usize)?,
            project_concurrency: env.number(
                "POSTHORN_PROJECT_CONCURRENCY",
                default_project_concurrency(concurrency),
            )?,
            ingest_writers: env.number("POSTHORN_INGEST_WRITERS", 4usize)?,
            lease: env.duration("POSTHORN_LEASE", "60s")?,
            plan_limits: plan_limits(&env)?,
            replay_per_second: env.number("POSTHORN_REPLAY_RATE", 10u32)?,
            replay_max: env.number("POSTHORN_REPLAY_MAX", 100_000u32)?,
            bin_creations_per_minute: env.number(
                "POSTHORN_BIN_CREATE_RATE_LIMIT",
                crate::core::ratelimit::BIN_CREATIONS_PER_MINUTE,
            )?,
            bin_quota_bytes: env.mebibytes("POSTHORN_BIN_QUOTA_MB", 64)?,
            inspector_budget_bytes: env.mebibytes("POSTHORN_INSPECTOR_BUDGET_MB", 2048)?,
            capture_per_minute: env.number("POSTHORN_CAPTURE_RATE_LIMIT", 6000u32)?,
            project_capture_per_minute: env
                .number("POSTHORN_PROJECT_CAPTURE_RATE_LIMIT", 6000u32)?,
            inspector_address_share: env.percent(
                "POSTHORN_INSPECTOR_ADDRESS_SHARE",
                10,
                1..=100,
            )?,
            inspector_redirect_reserve: env.percent(
                "POSTHORN_INSPECTOR_REDIRECT_RESERVE",
                10,
                0..=99,
            )?,
        })
    }

    /// Inspector bin URL for an id.
    pub fn bin_url(&self, bin_id: &str) -> String {
        format!("{}/r/{bin_id}", self.public_url)
    }
}

/// The environment as the configuration reads it: a blank value counts as unset, and
/// every error names its variable.
struct Env<F>(F);

impl<F: Fn(&str) -> Option<String>> Env<F> {
    fn var(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    fn duration(&self, name: &str, default: &str) -> Result<Duration, String> {
        let text = self.var(name).unwrap_or_else(|| default.to_string());
        parse_duration(&text).map_err(|e| format!("{name}: {e}"))
    }

    fn schedule(&self, name: &str, default: &str) -> Result<Vec<Duration>, String> {
        let text = self.var(name).unwrap_or_else(|| default.to_string());
        parse_schedule(&text).map_err(|e| format!("{name}: {e}"))
    }

    fn number<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.var(name) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| format!("{name}: `{v}` is not a number")),
        }
    }

    /// A size given in MiB, in bytes; never under 2 MiB.
    fn mebibytes(&self, name: &str, default: i64) -> Result<i64, String> {
        Ok(self.number(name, default)?.max(2) * MIB)
    }

    fn percent(
        &self,
        name: &str,
        default: u8,
        range: std::ops::RangeInclusive<u8>,
    ) -> Result<u8, String> {
        let n: u8 = self.number(name, default)?;
        if range.contains(&n) {
            Ok(n)
        } else {
            Err(format!(
                "{name}: `{n}` is not a percent from {} to {}",
                range.start(),
                range.end()
            ))
        }
    }

    fn flag(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.var(name).as_deref() {
            None => Ok(default),
            Some("false") | Some("0") | Some("off") => Ok(false),
            Some("true") | Some("1") | Some("on") => Ok(true),
            Some(v) => Err(format!("{name}: `{v}` is not true or false")),
        }
    }
}

/// `POSTHORN_CA_FILE`: read now, so that a missing or empty file stops the start.
fn ca_file(env: &Env<impl Fn(&str) -> Option<String>>) -> Result<Option<Vec<u8>>, String> {
    let Some(path) = env.var("POSTHORN_CA_FILE") else {
        return Ok(None);
    };
    let pem =
        std::fs::read(&path).map_err(|e| format!("POSTHORN_CA_FILE: cannot read `{path}`: {e}"))?;
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(format!(
            "POSTHORN_CA_FILE: `{path}` holds no PEM certificate"
        ));
    }
    Ok(Some(pem))
}

fn site_addr(env: &Env<impl Fn(&str) -> Option<String>>) -> Result<SocketAddr, String> {
    let text = env
        .var("LEPTOS_SITE_ADDR")
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    text.parse()
        .map_err(|_| format!("LEPTOS_SITE_ADDR: `{text}` is not host:port"))
}

/// `POSTHORN_PUBLIC_URL`, checked as a URL and kept without a trailing slash.
fn public_url(env: &Env<impl Fn(&str) -> Option<String>>) -> Result<String, String> {
    let text = env
        .var("POSTHORN_PUBLIC_URL")
        .unwrap_or_else(|| "http://127.0.0.1:3000".into());
    url::Url::parse(&text).map_err(|e| format!("POSTHORN_PUBLIC_URL: {e}"))?;
    Ok(text.trim_end_matches('/').to_string())
}

fn alert_mails_per_hour(env: &Env<impl Fn(&str) -> Option<String>>) -> Result<i64, String> {
    let n = env.number("POSTHORN_ALERT_MAILS_PER_HOUR", 60i64)?;
    if !(1..=100_000).contains(&n) {
        return Err(format!(
            "POSTHORN_ALERT_MAILS_PER_HOUR: `{n}` is not between 1 and 100000"
        ));
    }
    Ok(n)
}

fn egress_proxy(env: &Env<impl Fn(&str) -> Option<String>>) -> Result<Option<EgressProxy>, String> {
    env.var("POSTHORN_EGRESS_PROXY")
        .map(|v| EgressProxy::parse(&v))
        .transpose()
        .map_err(|e| format!("POSTHORN_EGRESS_PROXY: {e}"))
}

fn plan_limits(
    env: &Env<impl Fn(&str) -> Option<String>>,
) -> Result<crate::core::ratelimit::PlanLimits, String> {
    crate::core::ratelimit::PlanLimits::parse(&env.var("POSTHORN_PLAN_LIMITS").unwrap_or_default())
        .map_err(|e| format!("POSTHORN_PLAN_LIMITS: {e}"))
}

#[cfg(test)]
mod documented;

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, String)> = [("DATABASE_URL", "postgres://127.0.0.1/x")]
            .iter()
            .chain(vars)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_env_with(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .unwrap()
    }

    #[test]
    fn alert_mail_limits_default_and_a_bad_value_names_its_variable() {
        let c = config(&[]);
        assert_eq!(c.alert_mails_per_hour, 60);
        assert_eq!(c.alert_mail_retry.len(), 4, "five tries in all");
        let c = config(&[("POSTHORN_ALERT_MAILS_PER_HOUR", "5")]);
        assert_eq!(c.alert_mails_per_hour, 5);
        for bad in ["0", "-1", "lots"] {
            let e = Config::from_env_with(|name| match name {
                "DATABASE_URL" => Some("postgres://127.0.0.1/x".into()),
                "POSTHORN_ALERT_MAILS_PER_HOUR" => Some(bad.into()),
                _ => None,
            })
            .unwrap_err();
            assert!(e.starts_with("POSTHORN_ALERT_MAILS_PER_HOUR"), "{e}");
        }
    }

    #[test]
    fn an_egress_proxy_is_host_port_and_optional_credentials() {
        use super::EgressProxy;
        let p = EgressProxy::parse("http://squid.internal:3128").unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.credentials),
            ("squid.internal", 3128, None)
        );
        let p = EgressProxy::parse("http://hooks:p%40ss+1@10.0.0.5:8080").unwrap();
        assert_eq!(p.credentials, Some(("hooks".into(), "p@ss+1".into())));
        assert_eq!(
            format!("{p:?}"),
            "http://10.0.0.5:8080",
            "no password in logs"
        );
        assert_eq!(EgressProxy::parse("http://[::1]:3128").unwrap().host, "::1");
        for bad in [
            "https://p:3128",
            "http://p",
            "http://p:3128/path",
            "p:3128",
            "socks5://p:1080",
        ] {
            assert!(EgressProxy::parse(bad).is_err(), "{bad}");
        }
        let e = Config::from_env_with(|name| match name {
            "DATABASE_URL" => Some("postgres://127.0.0.1/x".into()),
            "POSTHORN_EGRESS_PROXY" => Some("http://p".into()),
            _ => None,
        })
        .unwrap_err();
        assert!(e.starts_with("POSTHORN_EGRESS_PROXY"), "{e}");
    }

    #[test]
    fn a_ca_file_is_read_at_start_and_a_missing_or_empty_one_is_refused() {
        assert_eq!(config(&[]).extra_roots, None);
        let dir = std::env::temp_dir().join(format!("posthorn-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, empty) = (dir.join("ca.pem"), dir.join("empty.pem"));
        std::fs::write(
            &good,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        std::fs::write(&empty, "not a certificate").unwrap();
        let c = config(&[("POSTHORN_CA_FILE", good.to_str().unwrap())]);
        assert!(c.extra_roots.is_some());
        for path in [empty.to_str().unwrap(), "/nonexistent/ca.pem"] {
            let err = Config::from_env_with(|n| match n {
                "DATABASE_URL" => Some("postgres://127.0.0.1/x".into()),
                "POSTHORN_CA_FILE" => Some(path.into()),
                _ => None,
            })
            .unwrap_err();
            assert!(err.starts_with("POSTHORN_CA_FILE"), "{err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_project_may_hold_half_a_large_dispatcher_unless_the_operator_says_otherwise() {
        let c = config(&[]);
        assert_eq!((c.concurrency, c.project_concurrency), (512, 256));
        let c = config(&[("POSTHORN_DISPATCH_CONCURRENCY", "1024")]);
        assert_eq!(c.project_concurrency, 512);
        let c = config(&[("POSTHORN_DISPATCH_CONCURRENCY", "64")]);
        assert_eq!(
            c.project_concurrency, 128,
            "as before: no smaller than it was"
        );
        let c = config(&[
            ("POSTHORN_DISPATCH_CONCURRENCY", "64"),
            ("POSTHORN_PROJECT_CONCURRENCY", "10"),
        ]);
        assert_eq!(c.project_concurrency, 10);
    }

    #[test]
    fn an_address_may_hold_a_tenth_of_the_inspector_and_a_tenth_is_kept_for_redirects() {
        let c = config(&[]);
        assert_eq!(
            (c.inspector_address_share, c.inspector_redirect_reserve),
            (10, 10)
        );
        let c = config(&[
            ("POSTHORN_INSPECTOR_ADDRESS_SHARE", "25"),
            ("POSTHORN_INSPECTOR_REDIRECT_RESERVE", "0"),
        ]);
        assert_eq!(
            (c.inspector_address_share, c.inspector_redirect_reserve),
            (25, 0)
        );
        for (name, bad) in [
            ("POSTHORN_INSPECTOR_ADDRESS_SHARE", "0"),
            ("POSTHORN_INSPECTOR_ADDRESS_SHARE", "101"),
            ("POSTHORN_INSPECTOR_REDIRECT_RESERVE", "100"),
            ("POSTHORN_INSPECTOR_REDIRECT_RESERVE", "ten"),
        ] {
            let vars = [("DATABASE_URL", "postgres://127.0.0.1/x"), (name, bad)];
            let err = Config::from_env_with(|n| {
                vars.iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            })
            .unwrap_err();
            assert!(err.starts_with(name), "{err}");
        }
    }
}
