//! The alert loop: tells the project's operations endpoint (and, by e-mail, the members
//! who asked at a confirmed address) when an endpoint starts failing, recovers, or
//! dead-letters deliveries. Each notice is decided and recorded in one transaction (see
//! `app::db::notices`), and each mail to each address is claimed on its own (see
//! `app::db::alert_mails`), so any number of servers may run this loop.

use std::time::Duration;

use app::{
    cfg::Config,
    core::{
        alert_mail::{classify, confirmation_mail, next_try, MailOutcome},
        alerts::summary,
        ids::new_token,
    },
    db::{alert_mails, alert_mails::Claimed, alert_recipients, notices},
};
use lettre::{message::Mailbox, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use sqlx::PgPool;
use tokio::sync::watch;

/// At most one `delivery.dead_lettered` per endpoint this often.
pub const DEAD_LETTER_NOTICE_EVERY: Duration = Duration::from_secs(60);

/// Mails claimed per round.
const MAILS_PER_ROUND: i64 = 20;

/// Alert e-mail over SMTP, one message per address.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The dashboard's address, for links in the mail.
    public_url: String,
    per_hour: i64,
    retry: Vec<Duration>,
}

impl Mailer {
    /// The mailer the configuration asks for, if any. `POSTHORN_SMTP_URL` is
    /// `smtp://host:port` (plain, or `?tls=required` for STARTTLS) or `smtps://host`;
    /// credentials as `smtp://user:password@host`.
    pub fn from_config(cfg: &Config) -> Result<Option<Mailer>, String> {
        let Some(url) = cfg.smtp_url.as_deref() else {
            return Ok(None);
        };
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| format!("POSTHORN_SMTP_URL: {e}"))?
            .timeout(Some(Duration::from_secs(10)))
            .build();
        let from = cfg
            .smtp_from
            .parse()
            .map_err(|e| format!("POSTHORN_SMTP_FROM: {e}"))?;
        Ok(Some(Mailer {
            transport,
            from,
            public_url: cfg.public_url.trim_end_matches('/').to_string(),
            per_hour: cfg.alert_mails_per_hour,
            retry: cfg.alert_mail_retry.clone(),
        }))
    }

    fn notice_mail(&self, m: &Claimed) -> (String, String) {
        let kind = m.kind.as_deref().unwrap_or_default();
        let data = m.data.as_ref().map(|d| d.0.clone()).unwrap_or_default();
        let line = summary(kind, &data);
        let link = match data["endpoint_id"].as_i64() {
            Some(id) if id > 0 => {
                format!("{}/developers/deliveries?endpoint={id}", self.public_url)
            }
            _ => format!("{}/developers/deliveries", self.public_url),
        };
        let body = format!(
            "{line}\n\nProject: {}\nNotice: {kind}\nAt: {}\n\n{}\n\nDeliveries: {link}\n\n\
             You get this because you asked for alerts by e-mail; turn them off on the \
             endpoints page of the project.\n",
            m.project,
            m.created_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            serde_json::to_string_pretty(&data).unwrap_or_default(),
        );
        (format!("[Posthorn] {}: {line}", m.project), body)
    }

    fn message(&self, to: &str, subject: String, body: String) -> Result<Message, String> {
        Message::builder()
            .from(self.from.clone())
            .to(to.parse().map_err(|e| format!("{to}: {e}"))?)
            .subject(subject)
            .body(body)
            .map_err(|e| e.to_string())
    }

    /// One try of one mail. A confirmation gets a fresh link, which replaces the last one.
    async fn try_one(
        &self,
        pool: &PgPool,
        m: &Claimed,
    ) -> app::error::AppResult<Option<MailOutcome>> {
        let (subject, body) = if m.notice_id.is_some() {
            self.notice_mail(m)
        } else {
            let token = new_token();
            if !alert_recipients::set_token(pool, m.project_id, m.user_id, &token).await? {
                return Ok(None);
            }
            confirmation_mail(
                &m.project,
                &format!("{}/alerts/confirm/{token}", self.public_url),
            )
        };
        let message = match self.message(&m.email, subject, body) {
            Ok(message) => message,
            // An address that cannot be written to is refused, never tried again.
            Err(e) => return Ok(Some(MailOutcome::Refused(e))),
        };
        Ok(Some(match self.transport.send(message).await {
            Ok(_) => MailOutcome::Sent,
            Err(e) => {
                let code = e.status().and_then(|c| c.to_string().parse().ok());
                classify(code, e.to_string())
            }
        }))
    }

    /// Mails what is due, each to its one address, and records each outcome as soon as
    /// it is known: a refusal fails that mail only, a temporary failure puts that mail
    /// off by the retry schedule, and a mail that went out is never sent again.
    pub async fn send_waiting(&self, pool: &PgPool) -> app::error::AppResult<usize> {
        alert_mails::drop_unwanted(pool).await?;
        let claimed = alert_mails::claim(pool, MAILS_PER_ROUND, self.per_hour).await?;
        let mut sent = 0;
        for (i, m) in claimed.iter().enumerate() {
            let Some(outcome) = self.try_one(pool, m).await? else {
                alert_mails::forget(pool, m.id).await?;
                continue;
            };
            let server_away = matches!(outcome, MailOutcome::Unreachable(_));
            match outcome {
                MailOutcome::Sent => {
                    alert_mails::record_sent(pool, m.id).await?;
                    sent += 1;
                }
                MailOutcome::Refused(reply) => {
                    tracing::warn!(mail = m.id, to = %m.email, %reply, "alert e-mail refused");
                    alert_mails::record_failed(pool, m.id, &reply).await?;
                }
                MailOutcome::Later(reply) | MailOutcome::Unreachable(reply) => {
                    match next_try(&self.retry, m.tries) {
                        Some(delay) => alert_mails::record_later(pool, m.id, &reply, delay).await?,
                        None => {
                            tracing::warn!(mail = m.id, to = %m.email, %reply, "alert e-mail given up");
                            alert_mails::record_failed(pool, m.id, &reply).await?;
                        }
                    }
                }
            }
            if server_away {
                // The rest wait for the next round without using up a try: no answer at
                // all means the mail server is away, not that their addresses are bad.
                let rest: Vec<i64> = claimed[i + 1..].iter().map(|m| m.id).collect();
                alert_mails::release(pool, &rest).await?;
                break;
            }
        }
        Ok(sent)
    }
}

/// How long before a client certificate expires its endpoint's project is told.
pub const CERTIFICATE_NOTICE_AHEAD: std::time::Duration =
    std::time::Duration::from_secs(14 * 24 * 3600);

/// One round: what changed since the last, told.
pub async fn tick(pool: &PgPool, mailer: Option<&Mailer>) -> app::error::AppResult<()> {
    notices::tell_failing(pool).await?;
    notices::tell_recovered(pool).await?;
    notices::tell_dead_letters(pool, DEAD_LETTER_NOTICE_EVERY).await?;
    notices::tell_certificates_expiring(pool, CERTIFICATE_NOTICE_AHEAD).await?;
    if let Some(m) = mailer {
        m.send_waiting(pool).await?;
    }
    Ok(())
}

pub async fn run(
    pool: PgPool,
    every: Duration,
    mailer: Option<Mailer>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        if let Err(e) = tick(&pool, mailer.as_ref()).await {
            tracing::warn!(error = %e, "alert round failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
    }
}
