//! What the API's requests may hold: the registry's handlers check these, and
//! `/api/openapi.json` states them (`minLength`, `maxLength`, `pattern`, …) from
//! the same constants, so a request valid under the document is one the server
//! reads (Schemathesis checks both ways in registry-server's
//! `tests/it/conformance.rs`).
//!
//! Lengths count characters, as JSON Schema's do. Patterns are written with
//! explicit code point ranges only, so that ECMA-262 (what JSON Schema names),
//! Python's `re` (Schemathesis) and Rust's `regex` (this module's tests) read
//! them alike; each has a test that the check beside it agrees.

/// A token's name: 1 to this many characters.
pub const TOKEN_NAME_MAX: usize = 64;
/// No control character (Unicode `Cc`, what `char::is_control` matches), and at
/// least one character that is not white space (`char::is_whitespace`), as
/// [`valid_token_name`] checks.
pub const TOKEN_NAME_PATTERN: &str = concat!(
    r"^[^\x00-\x1f\x7f-\x9f]*",
    r"[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
    r"[^\x00-\x1f\x7f-\x9f]*$"
);
/// Most package globs one token may be limited to.
pub const TOKEN_MAX_GLOBS: usize = 32;
/// A package glob: a package name (SPEC §2.1) where `*` stands for any run of
/// characters (the reserved names aside, which the document's description
/// names).
pub const PACKAGE_GLOB_PATTERN: &str = r"^[a-z*][a-z0-9_*-]{0,63}$";
/// The longest life a token may be given, in days (the shortest is 1).
pub const TOKEN_MAX_EXPIRY_DAYS: u32 = 3650;

/// Whether `name` may name a token (it is stored trimmed).
pub fn valid_token_name(name: &str) -> bool {
    let len = name.chars().count();
    (1..=TOKEN_NAME_MAX).contains(&len) && !name.chars().any(char::is_control) && !name.trim().is_empty()
}

/// A user name: 1 to this many characters.
pub const LOGIN_MAX: usize = 39;
/// ASCII letters, digits, `-` and `_`, starting with a letter or a digit.
pub const LOGIN_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,38}$";
/// Most users one owners request may add or remove.
pub const MAX_OWNERS_PER_REQUEST: usize = 100;

/// Whether `login` is a valid user name (the users table's CHECK says it too).
pub fn valid_login(login: &str) -> bool {
    let b = login.as_bytes();
    !b.is_empty()
        && b.len() <= LOGIN_MAX
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
}

/// A search query: at most this many characters.
pub const SEARCH_QUERY_MAX: usize = 256;
/// No control character (Unicode `Cc`).
pub const SEARCH_QUERY_PATTERN: &str = r"^[^\x00-\x1f\x7f-\x9f]*$";
/// Most results per page.
pub const MAX_PER_PAGE: u32 = 100;
/// The last page a search may ask for.
pub const MAX_PAGE: u32 = 10_000;

/// Whether `q` is a search query the registry answers.
pub fn valid_search_query(q: &str) -> bool {
    q.chars().count() <= SEARCH_QUERY_MAX && !q.chars().any(char::is_control)
}

/// A publisher key's PEM: at most this many bytes (a P-256 key is 178; PEM is
/// ASCII, so bytes and characters agree for every PEM there is).
pub const MAX_PEM_BYTES: usize = 4096;
/// A PEM public key block (what `cosign.pub` and `ebpkg key export` hold); that
/// it is an ECDSA P-256 key the server checks by reading it.
pub const PEM_PUBLIC_KEY_PATTERN: &str =
    r"^\s*-----BEGIN PUBLIC KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PUBLIC KEY-----\s*$";

/// A trusted publisher's repository: `owner/repo`, each part 1 to 100 ASCII
/// letters, digits, `-`, `_` and `.`, neither `.` nor `..`.
pub const REPOSITORY_PATTERN: &str = concat!(
    r"^([A-Za-z0-9_-][A-Za-z0-9._-]{0,99}|\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,98}|\.\.[A-Za-z0-9._-]{1,98})",
    r"/([A-Za-z0-9_-][A-Za-z0-9._-]{0,99}|\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,98}|\.\.[A-Za-z0-9._-]{1,98})$"
);
/// A trusted publisher's workflow: a file name under `.github/workflows/`, at
/// most 100 ASCII letters, digits, `-`, `_` and `.`, ending in `.yml` or
/// `.yaml` after at least one of them.
pub const WORKFLOW_PATTERN: &str = r"^([A-Za-z0-9._-]{1,96}\.yml|[A-Za-z0-9._-]{1,95}\.yaml)$";
/// A trusted publisher's environment: 1 to this many characters (the table's
/// CHECK counts characters too, since migration 0010).
pub const ENVIRONMENT_MAX: usize = 255;
/// No control character (Unicode `Cc`).
pub const ENVIRONMENT_PATTERN: &str = r"^[^\x00-\x1f\x7f-\x9f]*$";

/// Whether `repository` is `owner/repo` as [`REPOSITORY_PATTERN`] says.
pub fn valid_repository(repository: &str) -> bool {
    repository.split_once('/').is_some_and(|(o, r)| valid_repository_part(o) && valid_repository_part(r))
}

/// Whether `workflow` is a workflow file name as [`WORKFLOW_PATTERN`] says.
pub fn valid_workflow(workflow: &str) -> bool {
    let stem = workflow.strip_suffix(".yml").or_else(|| workflow.strip_suffix(".yaml"));
    valid_repository_part(workflow) && stem.is_some_and(|s| !s.is_empty())
}

/// Whether `environment` names a deployment environment as [`ENVIRONMENT_PATTERN`] says.
pub fn valid_environment(environment: &str) -> bool {
    let len = environment.chars().count();
    (1..=ENVIRONMENT_MAX).contains(&len) && !environment.chars().any(char::is_control)
}

fn valid_repository_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s != "."
        && s != ".."
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A package name as a publish check reads it: SPEC §2.1's characters and length
/// (the reserved names are excluded beside it, as a `not` of their `enum`).
pub const PACKAGE_NAME_PATTERN: &str = "^[a-z][a-z0-9_-]{0,63}$";

/// A version as the API reads it: SemVer 2.0, each number at most 16 digits
/// (so that it fits the 64 bits the parser keeps).
pub const VERSION_PATTERN: &str = r"^(0|[1-9][0-9]{0,15})\.(0|[1-9][0-9]{0,15})\.(0|[1-9][0-9]{0,15})(-(0|[1-9][0-9]{0,15}|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]{0,15}|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$";

/// A publisher key id as the API reads it in a JSON body: standard base64 of 32
/// bytes (the last character before `=` carries 4 bits, the rest being zero).
pub const KEY_ID_PATTERN: &str = "^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Strings around each rule's edges, and every code point up to U+3100 (and
    /// a few beyond) inside each.
    fn samples() -> Vec<String> {
        let mut out: Vec<String> = [
            "",
            " ",
            "  ",
            "a",
            " a ",
            "A",
            "0",
            "-",
            "_",
            ".",
            "..",
            "...",
            ".a",
            "..a",
            "a.",
            "a..b",
            "a/b",
            "a/",
            "/b",
            "./b",
            "../b",
            ".../b",
            "a/..",
            "a/.b",
            "x.yml",
            ".yml",
            "x.yaml",
            "x.yml.txt",
            "x.YML",
            "-a",
            "a-",
            "a b",
            "é",
            "日本",
            "\u{3000}",
            "\u{feff}",
            "*",
            "net*",
            "*x",
            "a**b",
            "Net",
            "1net",
            "n_e-t",
            "std",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for len in [38, 39, 40, 63, 64, 65, 95, 96, 97, 99, 100, 101, 254, 255, 256, 257] {
            out.push("a".repeat(len));
            out.push("é".repeat(len));
            out.push(format!("{}.yml", "a".repeat(len.saturating_sub(4))));
            out.push(format!("{}.yaml", "a".repeat(len.saturating_sub(5))));
            out.push(format!("{}/b", "a".repeat(len)));
        }
        for c in (0..0x3100u32).chain([0xfeff, 0xffff, 0x1_0000, 0x10_ffff]).filter_map(char::from_u32) {
            out.push(c.to_string());
            out.push(format!("a{c}b"));
            out.push(format!("{c}{c}"));
        }
        out
    }

    fn agree(pattern: &str, min: usize, max: usize, check: impl Fn(&str) -> bool) {
        let re = regex::Regex::new(pattern).unwrap();
        for s in samples() {
            let len = s.chars().count();
            let schema = re.is_match(&s) && (min..=max).contains(&len);
            assert_eq!(schema, check(&s), "{pattern} and the check disagree on {s:?}");
        }
    }

    #[test]
    fn each_pattern_says_what_its_check_does() {
        agree(TOKEN_NAME_PATTERN, 1, TOKEN_NAME_MAX, valid_token_name);
        agree(LOGIN_PATTERN, 0, LOGIN_MAX, valid_login);
        agree(SEARCH_QUERY_PATTERN, 0, SEARCH_QUERY_MAX, valid_search_query);
        agree(REPOSITORY_PATTERN, 0, usize::MAX, valid_repository);
        agree(WORKFLOW_PATTERN, 0, usize::MAX, valid_workflow);
        agree(ENVIRONMENT_PATTERN, 1, ENVIRONMENT_MAX, valid_environment);
        let glob = |g: &str| crate::names::PackageGlob::new(g).is_ok();
        // The pattern and the excluded reserved globs beside it, as the schema says them.
        let reserved = crate::names::reserved_package_globs();
        let re = regex::Regex::new(PACKAGE_GLOB_PATTERN).unwrap();
        let mut globs = samples();
        globs.extend(["as", "*s", "*nd", "st*", "*", "hike_*", "a*", "*ssert", "while", "wh*le"].map(String::from));
        for s in &globs {
            let schema = re.is_match(s) && !reserved.contains(s);
            assert_eq!(
                schema,
                glob(s),
                "{PACKAGE_GLOB_PATTERN} less the reserved globs and PackageGlob disagree on {s:?}"
            );
        }
    }

    #[test]
    fn the_publish_checks_patterns_say_what_the_parsers_read() {
        let reserved = crate::names::reserved_package_names();
        let name = |n: &str| !reserved.iter().any(|r| r == n) && crate::names::PackageName::new(n).is_ok();
        agree(PACKAGE_NAME_PATTERN, 0, usize::MAX, |n| name(n) || reserved.iter().any(|r| r == n));
        let key = |k: &str| crate::types::KeyId::parse(k).is_some();
        let mut keys: Vec<String> = samples();
        let id = crate::types::KeyId([7; 32]).to_string();
        keys.extend([
            id.clone(),
            id.replace('=', ""),
            format!("{}B=", &id[..42]),
            format!("{id}="),
            id.replace('H', "-"),
        ]);
        let re = regex::Regex::new(KEY_ID_PATTERN).unwrap();
        for k in &keys {
            assert_eq!(re.is_match(k), key(k), "{KEY_ID_PATTERN} and KeyId::parse disagree on {k:?}");
        }
        // The pattern is the parser's grammar with numbers cut at 16 digits.
        let re = regex::Regex::new(VERSION_PATTERN).unwrap();
        let versions = [
            "1.0.0",
            "0.0.0",
            "1.2.3-alpha.1",
            "1.2.3-0.a",
            "1.0.0+build.7",
            "1.0.0-rc.1+x",
            "1.0.0-x-y.-",
            "9999999999999999.0.0",
            "01.0.0",
            "1.0",
            "1.0.0-",
            "1.0.0-01",
            "1.0.0+",
            "1.0.0-a..b",
            " 1.0.0",
            "v1.0.0",
            "1.0.0-ä",
            "1.0.0+a+b",
        ];
        for v in versions.iter().map(|v| v.to_string()).chain(samples()) {
            let parsed = semver::Version::parse(&v).is_ok();
            assert!(!re.is_match(&v) || parsed, "{VERSION_PATTERN} matches {v:?}, which the parser refuses");
            assert_eq!(re.is_match(&v), parsed, "{VERSION_PATTERN} and semver disagree on {v:?}");
        }
        assert!(!re.is_match("10000000000000000.0.0") && semver::Version::parse("10000000000000000.0.0").is_ok());
    }

    #[test]
    fn a_pem_public_key_matches_and_other_text_does_not() {
        let re = regex::Regex::new(PEM_PUBLIC_KEY_PATTERN).unwrap();
        let pem = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEx9bVZeJ3b1hWqXq2g8U3h0x3Yw5b\nV1Rk5b5Q2w==\n-----END PUBLIC KEY-----\n";
        assert!(re.is_match(pem));
        assert!(re.is_match(&pem.replace('\n', "\r\n")));
        for bad in [
            "",
            "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
            "MFkw",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ] {
            assert!(!re.is_match(bad), "{bad:?}");
        }
    }
}
