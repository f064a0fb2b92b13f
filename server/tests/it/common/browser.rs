//! A browser as the server functions see it: a cookie jar of its own and form posts to
//! `/api/<name>`, redirects left unfollowed so a test sees what the server answered.

use super::TestApp;

pub struct Browser {
    http: reqwest::Client,
    base: String,
}

impl Browser {
    pub fn new(app: &TestApp) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: app.base.clone(),
        }
    }

    /// Calls a server function: (status, body).
    pub async fn call(&self, name: &str, form: &[(&str, &str)]) -> (u16, String) {
        let r = self
            .http
            .post(format!("{}/api/{name}", self.base))
            .form(form)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// Loads a page (or any URL of the app): (status, body).
    pub async fn get(&self, url: &str) -> (u16, String) {
        let r = self.http.get(url).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// Signs in; whether the server took the password.
    pub async fn login(&self, email: &str, password: &str) -> bool {
        let (status, _) = self
            .call("login", &[("email", email), ("password", password)])
            .await;
        status < 400
    }

    /// The signed-in user's `get_viewer` answer (`null` when nobody is signed in).
    pub async fn viewer(&self) -> String {
        self.call("get_viewer", &[]).await.1
    }
}
