//! READMEs: Markdown rendered to HTML, then sanitized, because a README is
//! whatever its publisher wrote (raw HTML included).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ammonia::UrlRelative;
use pulldown_cmark::{Options, Parser};

/// HTML safe to put in a page: no scripts, styles, event handlers, forms or
/// frames; links only to http(s) and mailto, marked `nofollow` (a registry
/// must not lend its reputation to links in uploads); relative URLs (which
/// would point into the catalog, not the package) removed.
pub fn render(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_HEADING_ATTRIBUTES;
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, Parser::new_ext(markdown, options));
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into())
        .url_relative(UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow ugc"))
        .clean(&html)
        .to_string()
}

/// Rendered READMEs by (package id, version): a README is immutable once
/// published, and rendering a large one costs milliseconds a page view should
/// not pay again. Bounded by entries; emptied when full (pages re-render).
#[derive(Default)]
pub struct ReadmeCache {
    entries: Mutex<HashMap<(i64, String), Arc<str>>>,
}

const MAX_ENTRIES: usize = 512;

impl ReadmeCache {
    pub fn get_or_render(&self, package_id: i64, version: &str, markdown: &str) -> Arc<str> {
        let key = (package_id, version.to_owned());
        if let Some(hit) = self.lock().get(&key) {
            return hit.clone();
        }
        let html: Arc<str> = render(markdown).into();
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, html.clone());
        html
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(i64, String), Arc<str>>> {
        // A panic while holding the lock left a map that is still whole.
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn scripts_handlers_and_dangerous_urls_are_removed() {
        let html = render(
            "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n\
             [js](javascript:alert(1)) [rel](../etc/passwd) [ok](https://example.org/a)\n\n\
             <iframe src=\"https://evil.example\"></iframe><style>body{}</style>\n\n\
             <a href=\"https://example.org\" onclick=\"x()\">a</a>\n",
        );
        for bad in ["<script", "onerror", "javascript:", "../etc", "<iframe", "<style", "onclick"] {
            assert!(!html.contains(bad), "`{bad}` survived: {html}");
        }
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains(r#"href="https://example.org/a""#), "{html}");
        assert!(html.contains("nofollow"), "{html}");
    }

    #[test]
    fn markdown_features_render() {
        let html = render("| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~\n\n```c\nint x;\n```\n");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("<del>old</del>"), "{html}");
        assert!(html.contains("<pre><code>int x;"), "{html}");
    }
}
