//! The alert loop: tells the project's operations endpoint (and, by e-mail, the members
//! who asked) when an endpoint starts failing, recovers, or dead-letters deliveries.
//! Each notice is decided and recorded in one transaction (see `app::db::notices`), so
//! any number of servers may run this loop.

use std::time::Duration;

use app::{core::alerts::summary, db::notices};
use lettre::{message::Mailbox, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use sqlx::PgPool;
use tokio::sync::watch;

/// At most one `delivery.dead_lettered` per endpoint this often.
pub const DEAD_LETTER_NOTICE_EVERY: Duration = Duration::from_secs(60);

/// Alert e-mail over SMTP.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The dashboard's address, for links in the mail.
    public_url: String,
}

impl Mailer {
    /// `smtp://host:port` (plain, or `?tls=required` for STARTTLS) or `smtps://host`;
    /// credentials as `smtp://user:password@host`.
    pub fn new(url: &str, from: &str, public_url: &str) -> Result<Mailer, String> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| format!("POSTHORN_SMTP_URL: {e}"))?
            .timeout(Some(Duration::from_secs(10)))
            .build();
        let from = from
            .parse()
            .map_err(|e| format!("POSTHORN_SMTP_FROM: {e}"))?;
        Ok(Mailer {
            transport,
            from,
            public_url: public_url.trim_end_matches('/').to_string(),
        })
    }

    fn message(&self, to: &str, n: &notices::ToMail) -> Result<Message, String> {
        let line = summary(&n.kind, &n.data.0);
        let endpoint = n.data.0["endpoint_id"].as_i64();
        let link = match endpoint {
            Some(id) => format!("{}/developers/deliveries?endpoint={id}", self.public_url),
            None => format!("{}/developers/deliveries", self.public_url),
        };
        let body = format!(
            "{line}\n\nProject: {}\nNotice: {}\nAt: {}\n\n{}\n\nDeliveries: {link}\n\n\
             You get this because you asked for alerts by e-mail; turn them off on the \
             endpoints page of the project.\n",
            n.project,
            n.kind,
            n.created_at.to_rfc3339(),
            serde_json::to_string_pretty(&n.data.0).unwrap_or_default(),
        );
        Message::builder()
            .from(self.from.clone())
            .to(to.parse().map_err(|e| format!("{to}: {e}"))?)
            .subject(format!("[Posthorn] {}: {line}", n.project))
            .body(body)
            .map_err(|e| e.to_string())
    }

    /// Mails the notices waiting for it; a notice is marked mailed once every recipient
    /// was sent it, so an SMTP failure leaves it (and the rest) for the next round.
    pub async fn send_waiting(&self, pool: &PgPool) -> app::error::AppResult<usize> {
        let waiting = notices::to_mail(pool, 20).await?;
        let mut mailed = Vec::new();
        for n in &waiting {
            if !self.send_to_all(n).await {
                break;
            }
            mailed.push(n.id);
        }
        let unsent: Vec<i64> = waiting[mailed.len()..].iter().map(|n| n.id).collect();
        notices::mark_mailed(pool, &mailed, &unsent).await?;
        Ok(mailed.len())
    }

    /// Whether every recipient of the notice was sent it.
    async fn send_to_all(&self, n: &notices::ToMail) -> bool {
        for to in &n.recipients {
            let sent = match self.message(to, n) {
                Ok(m) => self
                    .transport
                    .send(m)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => {
                    // An address that cannot be written to is skipped, not retried.
                    tracing::warn!(notice = n.id, error = %e, "alert e-mail not built");
                    Ok(())
                }
            };
            if let Err(e) = sent {
                tracing::warn!(notice = n.id, error = %e, "alert e-mail not sent; retrying later");
                return false;
            }
        }
        true
    }
}

/// One round: what changed since the last, told.
pub async fn tick(pool: &PgPool, mailer: Option<&Mailer>) -> app::error::AppResult<()> {
    notices::tell_failing(pool).await?;
    notices::tell_recovered(pool).await?;
    notices::tell_dead_letters(pool, DEAD_LETTER_NOTICE_EVERY).await?;
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
