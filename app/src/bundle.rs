//! Which browser bundle a page hydrates with. The deliveries page, where support spends its
//! day, has a bundle of its own that holds no other page (`DeliveriesApp`); every other page
//! loads the bundle of all pages (`App`). `.ci/dev.sh` builds both and records their hashes:
//! `hash.txt` for the deliveries page's (and the stylesheet), `hash-full.txt` for the other.

use leptos::prelude::LeptosOptions;

/// The one page with a bundle of its own.
pub const DELIVERIES_PAGE: &str = "/developers/deliveries";
/// The bundle of every page: `pkg/posthorn-full.<hash>.js|wasm`.
pub const FULL_BUNDLE: &str = "posthorn-full";
const FULL_HASH_FILE: &str = "hash-full.txt";

/// The options whose name and hashes `HydrationScripts` links for a page at `path`.
pub fn options_for(path: &str, options: &LeptosOptions) -> LeptosOptions {
    if path == DELIVERIES_PAGE {
        return options.clone();
    }
    let mut full = options.clone();
    full.output_name = FULL_BUNDLE.into();
    if options.hash_files {
        let hashes = std::path::Path::new(&*options.hash_file).with_file_name(FULL_HASH_FILE);
        full.hash_file = hashes.to_string_lossy().into();
    }
    full
}

/// The options for the page being rendered (on the server; the browser never renders the
/// shell).
pub fn options_for_this_page(options: &LeptosOptions) -> LeptosOptions {
    #[cfg(feature = "ssr")]
    if let Some(parts) = leptos::prelude::use_context::<http::request::Parts>() {
        return options_for(parts.uri.path(), options);
    }
    options.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashed() -> LeptosOptions {
        let mut o = LeptosOptions::builder().output_name("posthorn").build();
        o.hash_files = true;
        o.hash_file = "/srv/site/hash.txt".into();
        o
    }

    #[test]
    fn the_deliveries_page_keeps_its_own_bundle() {
        let o = options_for(DELIVERIES_PAGE, &hashed());
        assert_eq!(&*o.output_name, "posthorn");
        assert_eq!(&*o.hash_file, "/srv/site/hash.txt");
    }

    #[test]
    fn every_other_page_loads_the_full_bundle_with_its_hashes() {
        for path in [
            "/developers",
            "/developers/webhooks",
            "/developers/deliveries/",
            "/inspector/x",
        ] {
            let o = options_for(path, &hashed());
            assert_eq!(&*o.output_name, FULL_BUNDLE, "{path}");
            assert_eq!(&*o.hash_file, "/srv/site/hash-full.txt", "{path}");
        }
    }
}
