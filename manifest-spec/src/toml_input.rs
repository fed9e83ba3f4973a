//! Reading a TOML file a person wrote: size and encoding checks, then serde errors
//! turned into diagnostics that say what to write instead.

use serde::de::DeserializeOwned;

use crate::diagnostic::{Diagnostic, did_you_mean};

/// Largest manifest (or other file a person writes) accepted. Real ones are a few
/// KiB; the cap keeps a hostile file from costing memory or time.
pub const MAX_TOML_BYTES: usize = 1024 * 1024;

/// Largest lockfile accepted. A lock lists every package a project resolves to, about
/// 230 bytes each: 10,000 packages take 2 MB, so the manifest's cap would refuse the
/// lock of a large project; this one still bounds a hostile file.
pub const MAX_LOCK_BYTES: usize = 64 * 1024 * 1024;

/// Checks size (at most `limit` bytes) and UTF-8, returning the text or a
/// diagnostic at the offending byte.
pub(crate) fn decode<'a>(bytes: &'a [u8], file: &str, limit: usize) -> Result<&'a str, Diagnostic> {
    if bytes.len() > limit {
        return Err(Diagnostic::new(
            file,
            "",
            0..0,
            format!("file is larger than {limit} bytes ({} MiB), the limit for such ebpkg files", limit >> 20),
        )
        .with_help("this is not a file ebpkg wrote or one a person would; check that the right file is named"));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            // The valid prefix is UTF-8 by construction.
            let prefix = std::str::from_utf8(good).unwrap_or_default();
            let bad = bytes.get(e.valid_up_to()).copied().unwrap_or_default();
            Err(Diagnostic::new(
                file,
                prefix,
                prefix.len()..prefix.len(),
                format!("file is not valid UTF-8 (byte 0x{bad:02x} at offset {})", e.valid_up_to()),
            )
            .with_help("save the file as UTF-8"))
        }
    }
}

/// Deserializes `source` into `T`, translating the first error.
pub(crate) fn from_str<T: DeserializeOwned>(source: &str, file: &str) -> Result<T, Diagnostic> {
    toml::from_str(source).map_err(|e| translate(&e, source, file))
}

fn translate(e: &toml::de::Error, source: &str, file: &str) -> Diagnostic {
    let span = e.span().unwrap_or(0..0);
    let text = source.get(span.clone()).unwrap_or_default();
    let msg = e.message().trim_end_matches('\n');
    let diag = |m: String| Diagnostic::new(file, source, span.clone(), m);

    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (unknown, expected) = split_expected(rest);
        let mut d = diag(format!("unknown key `{unknown}`"));
        let expected_list = expected.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
        let help = match did_you_mean(unknown, expected.iter().map(String::as_str)) {
            Some(best) => format!("did you mean `{best}`? (this table accepts {expected_list})"),
            None if expected.is_empty() => "this table accepts no keys".to_owned(),
            None => format!("this table accepts {expected_list}"),
        };
        d = d.with_help(help);
        return d;
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let (unknown, expected) = split_expected(rest);
        let expected_list = expected.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
        let help = match did_you_mean(unknown, expected.iter().map(String::as_str)) {
            Some(best) => format!("did you mean \"{best}\"? (expected one of {expected_list})"),
            None => format!("expected one of {expected_list}"),
        };
        return diag(format!("unknown value \"{unknown}\"")).with_help(help);
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.trim_end_matches('`');
        let header = text.lines().next().unwrap_or_default().trim();
        let place = if header.starts_with('[') {
            format!("table {header}")
        } else {
            // An inline table: name it by the key it is assigned to (`returns = { … }`).
            let before = &source[..span.start.min(source.len())];
            let line = before.rsplit('\n').next().unwrap_or_default();
            match line.trim_end().strip_suffix('=') {
                Some(k) if !k.trim().is_empty() => format!("`{}`", k.trim()),
                _ => "table".to_owned(),
            }
        };
        return diag(format!("missing key `{key}` in {place}"))
            .with_help(format!("add `{key} = {}` to this table", example_value(key)));
    }
    if msg == "duplicate key" {
        return diag(format!("key `{}` is defined twice", text.trim())).with_help("remove one of the two definitions");
    }
    if msg.contains("recursion") || msg.contains("recurse") {
        return diag("values are nested too deeply".to_owned())
            .with_help("ebpkg files need at most a few levels of tables and arrays");
    }
    if msg.starts_with("invalid type: ") && msg.contains("expected a string") {
        return diag(msg.to_owned()).with_help("put the value in double quotes");
    }
    diag(msg.to_owned())
}

/// Splits serde's "x`, expected one of `a`, `b`" tail into ("x", ["a", "b"]).
fn split_expected(rest: &str) -> (&str, Vec<String>) {
    let (unknown, tail) = rest.split_once('`').unwrap_or((rest, ""));
    let expected = tail.split('`').skip(1).step_by(2).map(str::to_owned).collect();
    (unknown, expected)
}

/// An example to put in a "missing key" fix.
fn example_value(key: &str) -> &'static str {
    match key {
        "name" => "\"my_name\"",
        "version" => "\"0.1.0\"",
        "source" => "\"src/my_program.bpf.c\"",
        "hook" => "\"xdp\"",
        "doc" => "\"what it means\"",
        "type" => "\"u64\"",
        "key" | "value" => "[{ name = \"id\", type = \"u32\" }]",
        "object" => "\"prebuilt/my_program.bpf.o\"",
        "sha256" => "\"<64 hex digits>\"",
        "package" => "{ name = \"my-package\", version = \"0.1.0\" }",
        _ => "…",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_utf8_points_at_the_bad_byte() {
        let bytes = b"[package]\nname = \"n\xffet\"\n";
        let d = decode(bytes, "ebpkg.toml", MAX_TOML_BYTES).unwrap_err();
        assert_eq!(
            d.to_string(),
            "ebpkg.toml:2:10: file is not valid UTF-8 (byte 0xff at offset 19); save the file as UTF-8"
        );
    }

    #[test]
    fn oversized_files_are_refused_before_parsing() {
        let bytes = vec![b'#'; MAX_TOML_BYTES + 1];
        let d = decode(&bytes, "ebpkg.toml", MAX_TOML_BYTES).unwrap_err();
        assert!(d.to_string().starts_with("ebpkg.toml:1:1: file is larger than 1048576 bytes (1 MiB)"), "{d}");
        assert!(decode(&bytes, "ebpkg.lock", MAX_LOCK_BYTES).is_ok());
    }

    #[test]
    fn split_expected_parses_serde_lists() {
        let (u, e) = split_expected("nmae`, expected one of `name`, `version`");
        assert_eq!(u, "nmae");
        assert_eq!(e, vec!["name", "version"]);
        let (u, e) = split_expected("xpd`, expected `xdp` or `tc`");
        assert_eq!(u, "xpd");
        assert_eq!(e, vec!["xdp", "tc"]);
    }
}
