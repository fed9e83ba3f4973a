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
    let clean = ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into())
        .url_relative(UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow ugc"))
        .clean(&html)
        .to_string();
    debug_assert_eq!(active_content(&clean), None, "the sanitizer let active content through");
    clean
}

/// The first thing in `html` that could run code or pull the reader elsewhere
/// unasked (a script-capable element, an event handler, a `javascript:`-like
/// URL), if any: the property the sanitizer must guarantee, checked by the
/// tests and the fuzz target on its output.
pub fn active_content(html: &str) -> Option<String> {
    const ELEMENTS: [&str; 12] =
        ["script", "style", "iframe", "frame", "object", "embed", "form", "input", "base", "meta", "link", "svg"];
    let lower = html.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut i = 0;
    while let Some(start) = lower[i..].find('<').map(|at| i + at) {
        // Serialized HTML escapes `<` in text, so this opens a tag; it ends at the
        // first `>` outside a quoted attribute value.
        let (mut end, mut quote) = (start + 1, None);
        while end < bytes.len() {
            match (bytes[end], quote) {
                (b'"' | b'\'', None) => quote = Some(bytes[end]),
                (q, Some(open)) if q == open => quote = None,
                (b'>', None) => break,
                _ => {}
            }
            end += 1;
        }
        let tag = &lower[start + 1..end.min(lower.len())];
        let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if ELEMENTS.contains(&name.as_str()) {
            return Some(format!("a <{name}> element"));
        }
        for (attr, value) in attributes(&tag[name.len() + usize::from(tag.starts_with('/'))..]) {
            let value = value.trim();
            if attr.starts_with("on") {
                return Some(format!("an event handler `{attr}`"));
            }
            if matches!(attr, "href" | "src" | "action" | "formaction" | "xlink:href")
                && ["javascript:", "vbscript:", "data:"].iter().any(|s| value.starts_with(s))
            {
                return Some(format!("a `{value}` URL"));
            }
        }
        i = end.max(start + 1);
    }
    None
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

/// `name=value` pairs of a tag's attribute text (`a="b c" d=e f`), values
/// unquoted.
fn attributes(mut text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    loop {
        text = text.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
        if text.is_empty() {
            return out;
        }
        let name_end = text.find(|c: char| c.is_whitespace() || c == '=').unwrap_or(text.len());
        let name = &text[..name_end];
        text = text[name_end..].trim_start();
        let Some(rest) = text.strip_prefix('=') else {
            out.push((name, ""));
            continue;
        };
        let rest = rest.trim_start();
        let (value, after) = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &rest[1..];
                let close = body.find(q).unwrap_or(body.len());
                (&body[..close], body.get(close + 1..).unwrap_or(""))
            }
            _ => {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        out.push((name, value));
        text = after;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{active_content, render};

    /// Fragments attackers put in READMEs, to be combined at random.
    const HOSTILE: [&str; 16] = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[a](javascript:alert(1))",
        "[a](JaVaScRiPt:alert(1))",
        "<a href=\"vbscript:x\">v</a>",
        "<svg onload=alert(1)>",
        "<iframe src=//evil>",
        "<style>*{}</style>",
        "<form action=//evil><input name=p></form>",
        "![i](data:text/html;base64,PHNjcmlwdD4=)",
        "<a href='x' onclick='y'>z</a>",
        "<scr<script>ipt>",
        "`<script>`",
        "<details open ontoggle=alert(1)>",
        "<base href=//evil>",
        "<math><mi xlink:href=\"javascript:1\">",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn no_readme_renders_active_content(
            parts in proptest::collection::vec(
                prop_oneof![proptest::sample::select(HOSTILE.to_vec()).prop_map(String::from), ".{0,40}"], 0..12),
        ) {
            let html = render(&parts.join("\n"));
            prop_assert_eq!(active_content(&html), None, "{}", html);
        }
    }

    #[test]
    fn the_checker_finds_what_it_is_for() {
        // Markdown rendering alone keeps each of these active: the sanitizer is what removes them.
        for hostile in &HOSTILE[..11] {
            let mut raw = String::new();
            pulldown_cmark::html::push_html(&mut raw, pulldown_cmark::Parser::new(hostile));
            assert!(active_content(&raw).is_some(), "{hostile} → {raw}");
        }
        assert!(active_content("<p>x</p><script>1</script>").is_some());
        assert!(active_content("<a href=\" javascript:x\">a</a>").is_some());
        assert!(active_content("<img src=\"a>b\" onerror=x>").is_some());
        assert!(active_content("<p title=\"a > b\">javascript: in text is text</p>").is_none());
    }

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
