//! Reading list parameters (`limit`, `cursor`, `since`, ids) and cutting pages, shared by
//! every list of the API.

use app::core::cursor::Cursor;
use serde::Serialize;

use super::ApiError;

/// Where a list stops: resume from `next_cursor`; fetch again now only if `has_more`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PageMeta {
    /// Comes with every page, the last one included, so a poller can resume from it later.
    #[schema(pattern = r"^[0-9]{1,16}_[0-9]{1,18}$")]
    pub next_cursor: String,
    pub has_more: bool,
}

impl PageMeta {
    pub fn new(next: Option<Cursor>, has_more: bool) -> PageMeta {
        let next = next.unwrap_or(Cursor {
            created_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            id: 0,
        });
        PageMeta {
            next_cursor: next.encode(),
            has_more,
        }
    }
}

/// Trims a page fetched with `limit + 1` rows to `limit`; returns the cursor to resume
/// from (the last row's, or the one the page started after) and whether more are waiting.
pub fn cut_page<T>(
    rows: &mut Vec<T>,
    limit: i64,
    after: Option<Cursor>,
    key: impl Fn(&T) -> Cursor,
) -> (Option<Cursor>, bool) {
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    (rows.last().map(key).or(after), has_more)
}

/// The shape of every event id (`evt_` and 24 of the ULID's characters, see
/// [`app::core::ids::new_event_id`]); the documents give it to event-id parameters.
pub const EVENT_ID_PATTERN: &str = "^evt_[0-9A-HJKMNP-TV-Z]{24}$";

/// An event id a caller filters by: one of [`EVENT_ID_PATTERN`]'s shape, or a 422 naming
/// the parameter. Nothing else can exist, and nothing else reaches a query (a NUL would
/// make PostgreSQL fail instead of matching nothing).
pub fn check_event_id(field: &str, id: &str) -> Result<(), ApiError> {
    if is_event_id(id) {
        return Ok(());
    }
    let shown: String = id.chars().take(40).flat_map(char::escape_debug).collect();
    Err(ApiError::invalid(format!(
        "{field}: an event id is `evt_` and 24 characters (0-9, A-Z without I, L, O, U), not `{shown}`"
    )))
}

fn is_event_id(id: &str) -> bool {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    id.strip_prefix("evt_")
        .is_some_and(|rest| rest.len() == 24 && rest.bytes().all(|b| ALPHABET.contains(&b)))
}

/// The `{id}` of `/events/{id}…`: documented with [`EVENT_ID_PATTERN`]; an id of any
/// other shape cannot exist and is answered 404 before any query.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct EventIdPath {
    /// Event id, `evt_…`.
    #[param(schema_with = event_id_schema)]
    pub id: String,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for EventIdPath {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        let not_found = || ApiError::from(app::error::AppError::NotFound);
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|_| not_found())?;
        if !is_event_id(&id) {
            return Err(not_found());
        }
        Ok(EventIdPath { id })
    }
}

/// An event id, as the documents give it.
pub fn event_id_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(EVENT_ID_PATTERN))
        .examples([serde_json::json!("evt_01JD8X0000000000000000AB")])
        .build()
}

/// Ids that are not numbers are simply unknown.
pub fn parse_id(id: &str) -> Result<i64, ApiError> {
    id.parse()
        .map_err(|_| app::error::AppError::NotFound.into())
}

/// `limit` query values: 1..=200, default 50.
pub fn page_limit(limit: Option<i64>) -> Result<i64, ApiError> {
    match limit {
        None => Ok(50),
        Some(n) if (1..=200).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::invalid(format!(
            "limit must be between 1 and 200, not {n}"
        ))),
    }
}

pub fn parse_cursor(c: Option<&str>) -> Result<Option<app::core::cursor::Cursor>, ApiError> {
    c.map(|c| app::core::cursor::Cursor::decode(c).map_err(ApiError::invalid))
        .transpose()
}

/// An empty `since=` is a mistake (the document says date-time), not "no filter".
pub fn parse_since(s: Option<&str>) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    s.map(|s| {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|_| ApiError::invalid(format!("since must be an RFC 3339 time, not `{s}`")))
    })
    .transpose()
}
