//! A browser driven by hand for the sign-in and sign-out tests: which cookies it holds
//! is what those tests are about.

use reqwest::header;

use super::{client, TestApp};

/// A browser driven by hand: the cookies it holds (the portal's `Secure` one included,
/// which a cookie store keeps from plain http), sent as a same-origin page would.
pub(super) struct Jar {
    base: String,
    cookies: std::sync::Mutex<Vec<(String, String)>>,
}

pub(super) const PORTAL: &str = "posthorn_portal";
pub(super) const DASHBOARD: &str = "posthorn_session";

impl Jar {
    pub(super) fn new(app: &TestApp) -> Jar {
        Jar {
            base: app.base.clone(),
            cookies: Default::default(),
        }
    }

    pub(super) fn holds(&self, name: &str) -> bool {
        self.cookies.lock().unwrap().iter().any(|(n, _)| n == name)
    }

    pub(super) fn plant(&self, name: &str, value: &str) {
        let mut jar = self.cookies.lock().unwrap();
        jar.retain(|(n, _)| n != name);
        jar.push((name.into(), value.into()));
    }

    pub(super) fn value(&self, name: &str) -> Option<String> {
        let jar = self.cookies.lock().unwrap();
        jar.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    }

    /// Takes what the answer set; `Max-Age=0` forgets.
    pub(super) fn keep(&self, r: &reqwest::Response) {
        let mut jar = self.cookies.lock().unwrap();
        for set in r.headers().get_all(header::SET_COOKIE) {
            let set = set.to_str().unwrap();
            let Some((name, value)) = set.split(';').next().unwrap().split_once('=') else {
                continue;
            };
            jar.retain(|(n, _)| n != name);
            let gone = set.contains("Max-Age=0") || value.is_empty();
            if !gone {
                jar.push((name.into(), value.into()));
            }
        }
    }

    pub(super) async fn send(&self, req: reqwest::RequestBuilder) -> reqwest::Response {
        let cookies: Vec<String> = {
            let jar = self.cookies.lock().unwrap();
            jar.iter().map(|(n, v)| format!("{n}={v}")).collect()
        };
        let req = if cookies.is_empty() {
            req
        } else {
            req.header(header::COOKIE, cookies.join("; "))
        };
        let r = req.send().await.unwrap();
        self.keep(&r);
        r
    }

    pub(super) async fn get(&self, url_or_path: &str) -> reqwest::Response {
        let url = if url_or_path.starts_with("http") {
            url_or_path.to_string()
        } else {
            format!("{}{url_or_path}", self.base)
        };
        self.send(client().get(url)).await
    }

    /// A form posted from one of this site's pages: `Accept: text/html` as a browser
    /// sends it, the page as `Referer`, this site as `Origin`.
    pub(super) async fn form(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.send(
            client()
                .post(format!("{}{path}", self.base))
                .header(header::ACCEPT, "text/html,application/xhtml+xml")
                .header(header::ORIGIN, &self.base)
                .header(
                    header::REFERER,
                    format!("{}/developers/webhooks", self.base),
                )
                .form(form),
        )
        .await
    }

    /// A card's plain form: the status it answered.
    pub(super) async fn card_form(&self, name: &str, form: &[(&str, String)]) -> u16 {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = self.form(&format!("/api/{name}"), &form).await;
        r.status().as_u16()
    }

    /// A server function called by the page's script.
    pub(super) async fn call(&self, name: &str, form: &[(&str, &str)]) -> (u16, String) {
        let r = self
            .send(
                client()
                    .post(format!("{}/api/{name}", self.base))
                    .header(header::ORIGIN, &self.base)
                    .form(form),
            )
            .await;
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

/// A project's owner, with the password `password-123`: (project, email).
pub(super) async fn owner(app: &TestApp) -> (i64, String) {
    let email = format!("owner-{}@example.com", ulid::Ulid::new());
    let user = app::db::users::upsert(&app.pool, &email, "password-123", "user")
        .await
        .unwrap();
    let p = app::db::projects::create(&app.pool, "Mine", "business", user.id)
        .await
        .unwrap();
    (p.id.get(), email)
}

pub(super) async fn signed_in_owner(app: &TestApp) -> (i64, Jar) {
    let (project, email) = owner(app).await;
    let jar = Jar::new(app);
    let (s, body) = jar
        .call("login", &[("email", &email), ("password", "password-123")])
        .await;
    assert!(s < 400 && jar.holds(DASHBOARD), "{s} {body}");
    (project, jar)
}

/// The project an endpoint with this URL was made in.
pub(super) async fn project_of(app: &TestApp, url: &str) -> i64 {
    sqlx::query_scalar("SELECT project_id FROM endpoints WHERE url = $1")
        .bind(url)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}
