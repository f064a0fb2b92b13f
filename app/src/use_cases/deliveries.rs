//! Deliveries: the expanded view, Retry, Redirect and the test send; the same path from
//! the dashboard and from the API, audited either way.

use crate::core::{AttemptId, EndpointId, EventId};
use sqlx::PgPool;

use crate::{
    auth::Access,
    cfg::Config,
    core::{payload::build_body, permissions::Action, status::Trigger},
    db::{audit, bins, deliveries, endpoints, erasures},
    error::{AppError, AppResult},
    model::DeliveryRow,
};

/// One attempt with what was sent and what came back.
pub struct Detail {
    pub row: DeliveryRow,
    /// The exact body sent (empty once the event has been swept away).
    pub payload: String,
    /// `[name, value]` pairs as sent; none before the first send.
    pub request_headers: Option<Vec<(String, String)>>,
    pub response_headers: Option<Vec<(String, String)>>,
    /// The first 64 KiB of the response body.
    pub response_body: Option<String>,
    /// When the event's data was erased, and by which erasure (the payload is empty then).
    pub erased: Option<(chrono::DateTime<chrono::Utc>, i64)>,
}

pub async fn detail(pool: &PgPool, access: &Access, id: AttemptId) -> AppResult<Detail> {
    access.require(Action::ReadDeliveries)?;
    let row = deliveries::get_row(pool, access, id).await?;
    let extras = deliveries::extras(pool, &row).await?;
    // The body is rebuilt from the stored event exactly as the dispatcher builds it.
    let erased = extras.erased_at.zip(extras.erasure_id);
    let payload = match (&extras.data, extras.event_created_at) {
        (Some(data), Some(at)) if erased.is_none() => {
            String::from_utf8_lossy(&build_body(&row.event_id, &row.event_type, at, data))
                .into_owned()
        }
        _ => String::new(),
    };
    Ok(Detail {
        row,
        payload,
        request_headers: extras.request_headers.map(|j| j.0),
        response_headers: extras.response_headers.map(|j| j.0),
        response_body: extras.response_body,
        erased,
    })
}

/// A new attempt of the same event to the endpoint's current URL; returns it, queued.
pub async fn retry(pool: &PgPool, access: &Access, id: AttemptId) -> AppResult<DeliveryRow> {
    access.require(Action::Retry)?;
    let mut tx = pool.begin().await?;
    let row = deliveries::get_row(&mut *tx, access, id).await?;
    refuse_erased(&mut tx, &row.event_id).await?;
    refuse_filtered(&mut tx, &row).await?;
    let new_id = deliveries::retry(&mut tx, &row, &access.email).await?;
    let new = deliveries::get_row(&mut *tx, access, AttemptId::new(new_id)).await?;
    audit::record(
        &mut *tx,
        access,
        "retry",
        &row.event_id,
        serde_json::json!({"delivery": id, "new_delivery": new.id, "request_id": new.request_id}),
    )
    .await?;
    tx.commit().await?;
    Ok(new)
}

/// Sends the same event to the given inspector bin (its id or URL), or to a new one;
/// returns the queued attempt and the bin's id.
pub async fn redirect(
    pool: &PgPool,
    cfg: &Config,
    access: &Access,
    id: AttemptId,
    bin: Option<&str>,
) -> AppResult<(DeliveryRow, String)> {
    access.require(Action::Redirect)?;
    let mut tx = pool.begin().await?;
    let row = deliveries::get_row(&mut *tx, access, id).await?;
    refuse_erased(&mut tx, &row.event_id).await?;
    let bin_id = match bin.map(str::trim).filter(|b| !b.is_empty()) {
        Some(given) => {
            let id = bin_id_of(given).to_string();
            if bins::live(pool, &id).await?.is_none() {
                return Err(AppError::Invalid(
                    "That inspector bin does not exist or has expired.".into(),
                ));
            }
            id
        }
        None => bins::create(&mut *tx, cfg.bin_ttl, None).await?.0,
    };
    let new_id = deliveries::redirect(&mut tx, &row, &cfg.bin_url(&bin_id), &access.email).await?;
    audit::record(
        &mut *tx,
        access,
        "redirect",
        &row.event_id,
        serde_json::json!({"delivery": id, "bin": bin_id}),
    )
    .await?;
    let new = deliveries::get_row(&mut *tx, access, AttemptId::new(new_id)).await?;
    tx.commit().await?;
    Ok((new, bin_id))
}

/// Retry sends to the endpoint as it is now: an event its filter now keeps out is not
/// sent again (Redirect, to an inspector bin, still is).
async fn refuse_filtered(tx: &mut sqlx::PgConnection, row: &DeliveryRow) -> AppResult<()> {
    // A notice is Posthorn's own word to the operations endpoint: never filtered.
    if row.trigger == Trigger::Notice {
        return Ok(());
    }
    let found = endpoints::filter_now(tx, row.project_id, row.endpoint_id, &row.event_id).await?;
    let Some(now) = found else {
        return Ok(());
    };
    let subjects = now.subjects.as_deref().unwrap_or_default();
    match crate::core::filter::keeps_out(
        now.filter.as_deref(),
        &now.event_type,
        &now.data,
        subjects,
    ) {
        None => Ok(()),
        Some(why) => Err(AppError::Conflict(format!(
            "Not sent again: the endpoint's filter now keeps this event out ({why}). \
             Change the filter, or Redirect it to an inspector bin."
        ))),
    }
}

/// An erased event has nothing left to send again.
async fn refuse_erased(tx: &mut sqlx::PgConnection, event_id: &EventId) -> AppResult<()> {
    if erasures::is_erased(&mut *tx, event_id).await? {
        return Err(AppError::Conflict(
            "This event's data was erased: there is nothing left to send.".into(),
        ));
    }
    Ok(())
}

/// A bin's id from what a user pasted: the id itself or the bin's URL.
fn bin_id_of(given: &str) -> &str {
    given
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(given)
}

/// What a test send carries (the specification fixes the words).
pub const TEST_DATA: &str = r#"{"message":"Test webhook from Posthorn"}"#;

/// A `test.ping` event to one endpoint; returns the queued attempt.
pub async fn test_send(
    pool: &PgPool,
    access: &Access,
    endpoint_id: EndpointId,
) -> AppResult<DeliveryRow> {
    access.require(Action::TestSend)?;
    let ep = endpoints::get(pool, access, endpoint_id).await?;
    let mut tx = pool.begin().await?;
    let delivery_id = deliveries::send_single(
        &mut tx,
        access.project_id,
        (ep.id.get(), &ep.url),
        ("test.ping", TEST_DATA),
        (Trigger::Test, &access.email),
    )
    .await?;
    audit::record(
        &mut *tx,
        access,
        "test_send",
        &format!("endpoint #{endpoint_id}"),
        serde_json::json!({"delivery": delivery_id}),
    )
    .await?;
    let row = deliveries::get_row(&mut *tx, access, AttemptId::new(delivery_id)).await?;
    tx.commit().await?;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::bin_id_of;

    #[test]
    fn a_bin_is_named_by_its_id_or_its_url() {
        assert_eq!(bin_id_of("bin_abc"), "bin_abc");
        assert_eq!(bin_id_of("http://127.0.0.1:3000/r/bin_abc"), "bin_abc");
        assert_eq!(bin_id_of("http://127.0.0.1:3000/r/bin_abc/"), "bin_abc");
    }
}
