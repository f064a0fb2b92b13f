//! Where an event fans out to: a project's live endpoints subscribed to its type, read
//! from the database or reused from this process's [`TargetCache`] while the project's
//! endpoints version (read with the API key, see the `endpoints_version` migration) says
//! nothing about them changed.

use crate::core::{EndpointId, ProjectId};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use chrono::{DateTime, Utc};

/// An endpoint an event fans out to, with what a handed-off attempt needs to be sent.
#[derive(Clone, Debug)]
pub struct Target {
    /// The event type it was found for.
    pub event_type: String,
    pub id: EndpointId,
    pub url: String,
    pub throttled: bool,
    /// Its attempts go through the queue and are never handed off: it presents a client
    /// certificate (the claim reads it; the cache keeps no certificates), or it is a
    /// listen session's (its session claims them). A broker destination is handed off
    /// like an HTTP one.
    pub queued_only: bool,
    pub secret: String,
    /// How it signs (see [`crate::core::ed25519::active`]): its scheme, its sealed
    /// ed25519 key, and when it last switched.
    pub signature_scheme: String,
    pub signing_key: Option<String>,
    pub scheme_switched_at: Option<DateTime<Utc>>,
    previous_secret: Option<String>,
    previous_secret_expires_at: Option<DateTime<Utc>>,
    pub custom_headers: sqlx::types::Json<Vec<(String, crate::core::sealed::StoredValue)>>,
    /// Its filter, compiled (None: every event of its types).
    pub filter: Option<Arc<crate::core::filter::Filter>>,
    /// `http`, or the broker it publishes to, with its settings and sealed credentials
    /// (see [`crate::db::queue::Claimed::destination`]).
    pub destination: String,
    pub destination_settings: Option<String>,
    pub destination_credentials: Option<String>,
}

impl Target {
    /// The secret that still signs beside the current one after a rotation, until it
    /// expires (decided when used: a cached target outlives the moment it was read).
    pub fn previous_secret(&self, now: DateTime<Utc>) -> Option<String> {
        self.previous_secret
            .clone()
            .filter(|_| self.previous_secret_expires_at.is_some_and(|t| t > now))
    }
}

/// An endpoint an event's filters skipped, and why (kept with the event as JSON).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub endpoint_id: EndpointId,
    pub reason: String,
}

/// The targets whose filters let the event through, and those skipped as JSON text
/// (None when none were). The payload is converted for the filters once, and only when
/// some target has one.
pub fn pass<'t>(
    targets: &[&'t Target],
    event_type: &str,
    data_json: &str,
    subjects: &[String],
) -> (Vec<&'t Target>, Option<String>) {
    use crate::core::filter;
    if targets.iter().all(|t| t.filter.is_none()) {
        return (targets.to_vec(), None);
    }
    let filters: Vec<Option<&filter::Filter>> =
        targets.iter().map(|t| t.filter.as_deref()).collect();
    let judge = || {
        let input = filter::Input::parse(event_type, data_json, subjects);
        filter::verdicts(&input, &filters)
    };
    // Bounded, yet up to a few hundred milliseconds for a project's costliest filters on
    // its largest events: the worker says it is busy, so the runtime moves other tasks
    // (other tenants' requests) to another thread meanwhile.
    let verdicts = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(judge),
        _ => judge(),
    };
    let mut kept = Vec::with_capacity(targets.len());
    let mut skipped = Vec::new();
    for (t, verdict) in targets.iter().zip(verdicts) {
        match verdict.reason() {
            None => kept.push(*t),
            Some(reason) => skipped.push(Skipped {
                endpoint_id: t.id,
                reason,
            }),
        }
    }
    let skipped = (!skipped.is_empty())
        .then(|| serde_json::to_string(&skipped).ok())
        .flatten();
    (kept, skipped)
}

/// Why an endpoint's filter as it is now keeps the event from it (None: it passes, or
/// there is no filter): what Retry and bulk replay ask before they send again.
pub fn passes_now(
    filter: Option<&str>,
    event_type: &str,
    data_json: &str,
    subjects: &[String],
) -> Option<String> {
    use crate::core::filter;
    let f = match filter.map(filter::compiled)? {
        Ok(f) => f,
        Err(_) => filter::never(),
    };
    f.eval(&filter::Input::parse(event_type, data_json, subjects))
        .reason()
}

/// The endpoints of the project subscribed to each of `types`, and the project's
/// endpoints version in the same snapshot.
pub async fn find<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    project_id: ProjectId,
    types: &[&str],
) -> Result<(Vec<Target>, Option<i64>), sqlx::Error> {
    // The dispatchers are woken after the commit, not by the insert trigger (see the
    // `notify_after_commit` migration for why); setting it in the first query of a
    // transaction saves a round trip. Every row carries the version, and a project without a matching endpoint still
    // has one row, with no endpoint in it.
    type Headers = sqlx::types::Json<Vec<(String, crate::core::sealed::StoredValue)>>;
    struct Row {
        version: i64,
        event_type: Option<String>,
        id: Option<i64>,
        url: Option<String>,
        throttled: Option<bool>,
        queued_only: Option<bool>,
        secret: Option<String>,
        signature_scheme: Option<String>,
        signing_key: Option<String>,
        scheme_switched_at: Option<DateTime<Utc>>,
        previous_secret: Option<String>,
        previous_secret_expires_at: Option<DateTime<Utc>>,
        custom_headers: Option<sqlx::types::Json<Vec<(String, crate::core::sealed::StoredValue)>>>,
        filter: Option<String>,
        destination: Option<String>,
        destination_settings: Option<String>,
        destination_credentials: Option<String>,
    }
    let rows = sqlx::query_as!(
        Row,
        r#"SELECT p.endpoints_version AS "version!", t.event_type AS "event_type?", e.id AS "id?",
                e.url AS "url?", e.rate_limit IS NOT NULL AS "throttled?",
                e.client_cert IS NOT NULL OR e.destination = 'listen' AS "queued_only?", e.secret AS "secret?",
                e.previous_secret AS "previous_secret?", e.signature_scheme AS "signature_scheme?",
                e.signing_key AS "signing_key?", e.scheme_switched_at AS "scheme_switched_at?: DateTime<Utc>",
                e.previous_secret_expires_at AS "previous_secret_expires_at?: DateTime<Utc>",
                e.custom_headers AS "custom_headers?: Headers",
                e.filter AS "filter?", e.destination AS "destination?",
                e.destination_settings::text AS "destination_settings?",
                e.destination_credentials AS "destination_credentials?"
         FROM set_config('posthorn.defer_notify', 'on', true), projects p
         LEFT JOIN (unnest($2::text[]) AS t(event_type)
                    JOIN endpoints e ON e.event_types @> ARRAY['*'] OR e.event_types @> ARRAY[t.event_type])
           ON e.project_id = p.id AND e.enabled AND e.deleted_at IS NULL
         WHERE p.id = $1
         ORDER BY t.event_type, e.id"#,
        project_id.get(),
        types as _,
    )
    .fetch_all(conn)
    .await?;
    let version = rows.first().map(|r| r.version);
    let targets = rows
        .into_iter()
        .filter_map(|r| {
            Some(Target {
                event_type: r.event_type?,
                id: EndpointId::new(r.id?),
                url: r.url?,
                throttled: r.throttled?,
                queued_only: r.queued_only?,
                signature_scheme: r.signature_scheme?,
                signing_key: r.signing_key,
                scheme_switched_at: r.scheme_switched_at,
                secret: r.secret?,
                previous_secret: r.previous_secret,
                previous_secret_expires_at: r.previous_secret_expires_at,
                custom_headers: r.custom_headers?,
                // Checked when saved; one that no longer compiles (a stricter check
                // since) matches nothing rather than everything.
                filter: match r.filter.as_deref().map(crate::core::filter::compiled) {
                    None => None,
                    Some(Ok(f)) => Some(f),
                    Some(Err(_)) => Some(crate::core::filter::never()),
                },
                destination: r.destination?,
                destination_settings: r.destination_settings,
                destination_credentials: r.destination_credentials,
            })
        })
        .collect();
    Ok((targets, version))
}

/// Lists of targets this process keeps, per project and event type, each valid for one
/// version of the project's endpoints. Bounded so that no tenant can make it large or
/// push the others out: a project keeps at most [`TYPES_PER_PROJECT`] lists (more, and
/// its own are dropped), a list longer than [`LONGEST_KEPT`] is not kept, and when all
/// lists together pass [`MOST_KEPT`] targets the cache starts again empty. Whatever is
/// not kept is read from the database, as it always was.
#[derive(Default)]
pub struct TargetCache {
    inner: Mutex<Lists>,
    /// The compiled schemas of the projects' event types, kept for the same version.
    pub schemas: crate::core::schema::SchemaCache,
}

#[derive(Default)]
struct Lists {
    projects: HashMap<ProjectId, ProjectLists>,
    /// Targets held in all lists.
    held: usize,
}

struct ProjectLists {
    version: i64,
    by_type: HashMap<String, Arc<Vec<Target>>>,
}

pub const TYPES_PER_PROJECT: usize = 64;
pub const LONGEST_KEPT: usize = 1_000;
pub const MOST_KEPT: usize = 100_000;

impl TargetCache {
    /// The targets of `event_type` kept for this version of the project's endpoints.
    pub fn get(
        &self,
        project_id: ProjectId,
        version: i64,
        event_type: &str,
    ) -> Option<Arc<Vec<Target>>> {
        let lists = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let p = lists.projects.get(&project_id)?;
        (p.version == version)
            .then(|| p.by_type.get(event_type).cloned())
            .flatten()
    }

    /// Keeps the targets read at `version`, in place of the project's lists kept for any
    /// other version. (Versions only grow, but a database restored from a backup goes
    /// back: a list kept from before could otherwise answer again once the restored
    /// project's version reached its number. A request still holding an older version
    /// costs at most a read for the next request.)
    pub fn put(
        &self,
        project_id: ProjectId,
        version: i64,
        event_type: &str,
        targets: Arc<Vec<Target>>,
    ) {
        if targets.len() > LONGEST_KEPT {
            return;
        }
        let mut lists = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let lists = &mut *lists;
        if lists.held + targets.len() > MOST_KEPT {
            lists.projects.clear();
            lists.held = 0;
        }
        let p = lists
            .projects
            .entry(project_id)
            .or_insert_with(|| ProjectLists {
                version,
                by_type: HashMap::new(),
            });
        if p.version != version || p.by_type.len() >= TYPES_PER_PROJECT {
            lists.held -= p.by_type.values().map(|l| l.len()).sum::<usize>();
            p.by_type.clear();
            p.version = version;
        }
        lists.held += targets.len();
        if let Some(old) = p.by_type.insert(event_type.to_string(), targets) {
            lists.held -= old.len();
        }
    }

    /// Targets held in all lists.
    pub fn held(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: EndpointId) -> Target {
        Target {
            event_type: "a.b".into(),
            id,
            url: format!("http://127.0.0.1/{id}"),
            throttled: false,
            queued_only: false,
            secret: "s".into(),
            signature_scheme: "hmac-sha256".into(),
            signing_key: None,
            scheme_switched_at: None,
            previous_secret: Some("old".into()),
            previous_secret_expires_at: Some(Utc::now() + chrono::Duration::seconds(60)),
            custom_headers: sqlx::types::Json(Vec::new()),
            filter: None,
            destination: "http".into(),
            destination_settings: None,
            destination_credentials: None,
        }
    }

    fn list(n: usize) -> Arc<Vec<Target>> {
        Arc::new((0..n as i64).map(|i| target(EndpointId::new(i))).collect())
    }

    #[test]
    fn a_list_answers_only_for_its_version() {
        let c = TargetCache::default();
        c.put(ProjectId::new(1), 5, "a.b", list(2));
        assert_eq!(c.get(ProjectId::new(1), 5, "a.b").map(|l| l.len()), Some(2));
        assert!(
            c.get(ProjectId::new(1), 6, "a.b").is_none(),
            "a newer version is read again"
        );
        assert!(c.get(ProjectId::new(1), 4, "a.b").is_none());
        assert!(c.get(ProjectId::new(1), 5, "a.c").is_none());
        assert!(
            c.get(ProjectId::new(2), 5, "a.b").is_none(),
            "another project's list is never its"
        );
    }

    #[test]
    fn a_list_read_at_another_version_replaces_the_projects_lists() {
        let c = TargetCache::default();
        c.put(ProjectId::new(1), 5, "a.b", list(2));
        c.put(ProjectId::new(1), 5, "a.c", list(3));
        c.put(ProjectId::new(1), 6, "a.b", list(1));
        assert!(
            c.get(ProjectId::new(1), 6, "a.c").is_none(),
            "dropped with its version"
        );
        assert!(c.get(ProjectId::new(1), 5, "a.c").is_none());
        assert_eq!(c.held(), 1);
        // A restored database: the version went back, and what was kept from version 6
        // must not answer when the project reaches 6 again.
        c.put(ProjectId::new(1), 4, "a.c", list(3));
        assert_eq!(c.get(ProjectId::new(1), 4, "a.c").map(|l| l.len()), Some(3));
        assert!(c.get(ProjectId::new(1), 6, "a.b").is_none());
        assert_eq!(c.held(), 3);
    }

    #[test]
    fn one_project_cannot_push_another_out_by_its_types() {
        let c = TargetCache::default();
        c.put(ProjectId::new(2), 1, "theirs.x", list(1));
        for i in 0..TYPES_PER_PROJECT * 3 {
            c.put(ProjectId::new(1), 1, &format!("mine.t{i}"), list(1));
        }
        assert!(c.get(ProjectId::new(2), 1, "theirs.x").is_some());
        assert!(c.held() <= TYPES_PER_PROJECT + 1);
    }

    #[test]
    fn memory_is_bounded() {
        let c = TargetCache::default();
        c.put(ProjectId::new(1), 1, "a.b", list(LONGEST_KEPT + 1));
        assert_eq!(c.held(), 0, "a list too long is not kept");
        for p in 0..(MOST_KEPT / LONGEST_KEPT) as i64 + 5 {
            c.put(ProjectId::new(p), 1, "a.b", list(LONGEST_KEPT));
            assert!(c.held() <= MOST_KEPT);
        }
    }

    #[test]
    fn the_previous_secret_signs_only_until_it_expires() {
        let mut t = target(EndpointId::new(1));
        let now = Utc::now();
        assert_eq!(t.previous_secret(now).as_deref(), Some("old"));
        assert_eq!(t.previous_secret(now + chrono::Duration::seconds(61)), None);
        t.previous_secret_expires_at = None;
        assert_eq!(t.previous_secret(now), None);
    }
}
