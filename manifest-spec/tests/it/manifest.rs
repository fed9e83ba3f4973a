//! The manifest rules of SPEC.md, one test per rule with its exact error text.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly on purpose

use ebpkg_spec::Manifest;
use ebpkg_spec::manifest::ManifestError;

/// The "every section" example of SPEC.md §4.10.
fn full() -> &'static str {
    const SPEC: &str = include_str!("../../SPEC.md");
    let start = SPEC.find("# ebpkg.toml — every section").expect("SPEC.md has the every-section example");
    let len = SPEC[start..].find("```").expect("the example ends");
    &SPEC[start..start + len]
}

const HEAD: &str = "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n";

/// All diagnostics for `text`, one per line, in the one-line form.
fn errors(text: &str) -> String {
    match Manifest::parse(text, "ebpkg.toml") {
        Ok(m) => panic!("expected an error, got {m:#?}"),
        Err(d) => d.to_string(),
    }
}

/// `HEAD` followed by `rest`.
fn with_head(rest: &str) -> String {
    format!("{HEAD}{rest}")
}

#[test]
fn full_manifest_parses_with_every_section() {
    let m = Manifest::parse(full(), "ebpkg.toml").unwrap();
    assert_eq!(m.package.name.as_str(), "ddos-guard");
    assert_eq!(m.package.version.to_string(), "1.4.0");
    assert_eq!(m.package.license.as_deref(), Some("MIT OR Apache-2.0"));
    assert_eq!(m.package.kernel.min.unwrap().to_string(), "5.15");
    assert_eq!(m.package.kernel.helpers, ["bpf_fib_lookup", "bpf_ktime_get_ns"]);
    assert_eq!(m.dependencies.len(), 2);
    assert_eq!(m.dependencies["meter"].version.to_string(), "~1.2.3");
    assert_eq!(m.dependencies["meter"].registry.as_ref().map(|r| r.as_str()), Some("https://registry.example.org/"));
    assert_eq!(m.reexports["meter"][0].as_str(), "ip6_dst_tbmon");
    assert_eq!(m.programs.len(), 2);
    let tb = &m.programs[0];
    assert_eq!(tb.args.len(), 2);
    assert_eq!(tb.args[1].name.as_str(), "burst");
    assert_eq!(tb.maps[0].key.as_ref().unwrap().len(), 2);
    assert!(m.programs[1].prebuilt.is_some() && m.programs[1].source.is_none());
    assert_eq!(m.loaders[0].maps[0].key[0].ty.name(), "ipv6-prefix");
    assert_eq!(m.chains[0].source.as_str(), "chains/ddos.eclat");
}

#[test]
fn canonical_text_round_trips() {
    let m = Manifest::parse(full(), "ebpkg.toml").unwrap();
    let text = m.to_toml_string();
    let again = Manifest::parse(&text, "ebpkg.toml").unwrap();
    assert_eq!(again, m);
    assert_eq!(again.to_toml_string(), text, "canonical text is a fixed point");
}

#[test]
fn minimal_manifest() {
    let m = Manifest::parse(HEAD, "ebpkg.toml").unwrap();
    assert!(m.programs.is_empty() && m.dependencies.is_empty());
    assert_eq!(m.to_toml_string(), HEAD);
}

#[test]
fn version_must_be_semver() {
    assert_eq!(
        errors("[package]\nname = \"demo\"\nversion = \"1.2\"\n"),
        "ebpkg.toml:3:11: version \"1.2\" is not semver; write \"1.2.0\""
    );
    assert_eq!(
        errors("[package]\nname = \"demo\"\nversion = \"v2.0.1\"\n"),
        "ebpkg.toml:3:11: version \"v2.0.1\" is not semver; write \"2.0.1\""
    );
}

#[test]
fn unknown_keys_are_errors_with_did_you_mean() {
    assert_eq!(
        errors("[package]\nname = \"demo\"\nvresion = \"0.1.0\"\n"),
        "ebpkg.toml:3:1: unknown key `vresion`; did you mean `version`? (this table accepts `name`, `version`, `description`, `license`, `authors`, `repository`, `homepage`, `keywords`, `readme`, `hike-sdk`, `kernel`)"
    );
    assert_eq!(
        errors(&with_head("[dependancies]\nnet = \"1\"\n")),
        "ebpkg.toml:4:2: unknown key `dependancies`; did you mean `dependencies`? (this table accepts `package`, `dependencies`, `reexports`, `program`, `loader`, `chain`)"
    );
    assert_eq!(
        errors(&with_head("[[program]]\nname = \"p\"\nsource = \"p.c\"\nhook = \"xdp\"\ncolour = 1\n")),
        "ebpkg.toml:8:1: unknown key `colour`; this table accepts `name`, `source`, `prebuilt`, `hook`, `description`, `arg`, `returns`, `ends-packet`, `map`"
    );
}

#[test]
fn unknown_values_get_suggestions() {
    assert_eq!(
        errors(&with_head("[[program]]\nname = \"p\"\nsource = \"p.c\"\nhook = \"xpd\"\n")),
        "ebpkg.toml:7:8: unknown value \"xpd\"; did you mean \"xdp\"? (expected one of \"xdp\", \"tc\")"
    );
    assert_eq!(
        errors(&with_head(
            "[[program]]\nname = \"p\"\nsource = \"p.c\"\nhook = \"xdp\"\n[[program.arg]]\nname = \"a\"\ntype = \"u46\"\ndoc = \"d\"\n"
        )),
        "ebpkg.toml:10:8: unknown value \"u46\"; did you mean \"u64\"? (expected one of \"u8\", \"u16\", \"u32\", \"u64\", \"s8\", \"s16\", \"s32\", \"s64\")"
    );
}

#[test]
fn missing_keys_say_what_to_add() {
    assert_eq!(
        errors("[package]\nname = \"demo\"\n"),
        "ebpkg.toml:1:1: missing key `version` in table [package]; add `version = \"0.1.0\"` to this table"
    );
    assert_eq!(
        errors("[dependencies]\n"),
        "ebpkg.toml:1:1: missing key `package` in table; add `package = { name = \"my-package\", version = \"0.1.0\" }` to this table"
    );
}

#[test]
fn wrong_types_and_duplicate_keys() {
    assert_eq!(
        errors("[package]\nname = 5\nversion = \"0.1.0\"\n"),
        "ebpkg.toml:2:8: invalid type: integer `5`, expected a string; put the value in double quotes"
    );
    assert_eq!(
        errors("[package]\nname = \"a\"\nname = \"b\"\nversion = \"0.1.0\"\n"),
        "ebpkg.toml:3:1: key `name` is defined twice; remove one of the two definitions"
    );
}

#[test]
fn package_name_rules() {
    let name = |n: &str| errors(&format!("[package]\nname = \"{n}\"\nversion = \"0.1.0\"\n"));
    assert_eq!(
        name("Meter"),
        "ebpkg.toml:2:8: package name `Meter` must start with a lowercase ASCII letter; write `meter`"
    );
    assert_eq!(
        name("my pkg"),
        "ebpkg.toml:2:8: package name `my pkg` contains ` `; only lowercase ASCII letters, digits, `-` and `_` are allowed; write `my_pkg`"
    );
    assert_eq!(
        name("9lives"),
        "ebpkg.toml:2:8: package name `9lives` must start with a lowercase ASCII letter; write `lives`"
    );
    assert_eq!(
        name("prog"),
        "ebpkg.toml:2:8: package name `prog` is reserved: chain scripts use it as an import prefix (`from prog.<pkg> import …`); choose another name, e.g. `prog_pkg`"
    );
    assert!(name(&"x".repeat(65)).contains("is 65 characters long; the limit is 64"));
    assert_eq!(name(""), "ebpkg.toml:2:8: package name is empty; write a name such as `my_program`");
}

#[test]
fn license_must_be_spdx() {
    assert_eq!(
        errors(&with_head("license = \"Apache 2.0\"\n")),
        "ebpkg.toml:4:11: license \"Apache 2.0\" is not an SPDX expression: unknown term; write \"Apache-2.0\""
    );
    assert_eq!(
        errors(&with_head("license = \"MIT/Banana\"\n")),
        "ebpkg.toml:4:11: license \"MIT/Banana\" is not an SPDX expression: invalid character(s); write an SPDX expression, e.g. \"MIT OR Apache-2.0\" or \"GPL-2.0-only\""
    );
}

#[test]
fn metadata_rules() {
    assert_eq!(
        errors(&with_head("repository = \"github.com/x\"\n")),
        "ebpkg.toml:4:14: repository \"github.com/x\" is not a URL: relative URL without a base; write a full URL, e.g. \"https://github.com/me/my-package\""
    );
    assert_eq!(
        errors(&with_head("homepage = \"ftp://example.org\"\n")),
        "ebpkg.toml:4:12: homepage URL \"ftp://example.org\" has scheme `ftp`; use one of: https, http"
    );
    // Links are shown in the catalog: nothing that breaks out of an attribute,
    // only the web's schemes, a host and no credentials.
    for (url, says) in [
        (r#"https://x.example/\"><script>alert(1)</script>"#, "which a URL may not hold as written"),
        ("https://x.example/a b", "which a URL may not hold as written"),
        ("git://github.com/me/p", "has scheme `git`"),
        ("ssh://git@github.com/me/p", "has scheme `ssh`"),
        ("https://me:secret@github.com/me/p", "no user name or password"),
    ] {
        let manifest = format!("repository = {}\n", toml::Value::String(url.to_owned()));
        let text = errors(&with_head(&manifest));
        assert!(text.contains(says), "{url}: {text}");
    }
    assert!(
        errors(&with_head(&format!("homepage = \"https://x.example/{}\"\n", "a".repeat(2100))))
            .contains("at most 2048")
    );
    assert_eq!(
        errors(&with_head("keywords = [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"]\n")),
        "ebpkg.toml:4:38: too many keywords: 6 (at most 5); keep the most specific ones"
    );
    assert_eq!(
        errors(&with_head("keywords = [\"no spaces\"]\n")),
        "ebpkg.toml:4:13: keyword \"no spaces\" is not valid; keywords are 1–20 ASCII letters, digits, `-`, `_` or `+`, starting with a letter or digit"
    );
    assert_eq!(
        errors(&with_head("description = \"  \"\n")),
        "ebpkg.toml:4:15: description is empty; write one sentence or remove the key"
    );
    assert_eq!(
        errors(&with_head("authors = [\"\"]\n")),
        "ebpkg.toml:4:12: author is empty; write a name, e.g. \"Ada <ada@example.org>\""
    );
    assert_eq!(
        errors(&with_head("readme = \"../README.md\"\n")),
        "ebpkg.toml:4:10: readme path `../README.md` leaves the package directory through `..`; write a path inside the package, such as \"src/my_program.bpf.c\""
    );
    assert_eq!(
        errors(&with_head("hike-sdk = \"^one\"\n")),
        "ebpkg.toml:4:12: hike-sdk requirement \"^one\" is not a semver requirement: unexpected character 'o' while parsing major version number; write e.g. \"1.2\" (same as \"^1.2\"), \"~1.2.3\", \"1.*\" or \">=1.2, <2\""
    );
}

#[test]
fn kernel_requirements() {
    assert_eq!(
        errors(&with_head("[package.kernel]\nmin = \"5.15.0-91-generic\"\n")),
        "ebpkg.toml:5:7: kernel version \"5.15.0-91-generic\" is not like \"5.15\"; write \"5.15\""
    );
    assert_eq!(
        errors(&with_head("[package.kernel]\nprogram-types = [\"xpd\"]\n")),
        "ebpkg.toml:5:18: unknown program type \"xpd\"; did you mean \"xdp\"?"
    );
    assert_eq!(
        errors(&with_head("[package.kernel]\nhelpers = [\"fib_lookup\"]\n")),
        "ebpkg.toml:5:12: \"fib_lookup\" is not a BPF helper or kfunc name; write the function's name as the kernel spells it, e.g. \"bpf_fib_lookup\""
    );
    let m = Manifest::parse(&with_head("[package.kernel]\nprogram-types = [\"BPF_PROG_TYPE_XDP\"]\n"), "ebpkg.toml")
        .unwrap();
    assert_eq!(m.package.kernel.program_types, ["xdp"]);
}

#[test]
fn dependency_rules() {
    for (req, shown) in [("1.2", "^1.2"), ("~1.2.3", "~1.2.3"), ("1.*", "1.*"), (">=1.2, <2", ">=1.2, <2"), ("*", "*")]
    {
        let m = Manifest::parse(&with_head(&format!("[dependencies]\nnet = \"{req}\"\n")), "ebpkg.toml").unwrap();
        assert_eq!(m.dependencies["net"].version.to_string(), shown);
    }
    assert_eq!(
        errors(&with_head("[dependencies]\nnet = \"^1.x.y\"\n")),
        "ebpkg.toml:5:7: dependency `net` requirement \"^1.x.y\" is not a semver requirement: unexpected character after wildcard in version req; write e.g. \"1.2\" (same as \"^1.2\"), \"~1.2.3\", \"1.*\" or \">=1.2, <2\""
    );
    assert_eq!(
        errors(&with_head("[dependencies]\ndemo = \"1\"\n")),
        "ebpkg.toml:5:1: package `demo` depends on itself; remove this line"
    );
    assert_eq!(
        errors(&with_head("[dependencies]\nmy-dep = \"1\"\nmy_dep = \"1\"\n")),
        "ebpkg.toml:6:1: dependency `my_dep` is the same package as `my-dep`; package names differing only in case or `-`/`_` are the same package; keep one"
    );
    assert_eq!(
        errors(&with_head("[dependencies]\nnet = 1\n")),
        "ebpkg.toml:5:7: invalid type: integer `1`, expected a version requirement such as \"^1.2\", or a table such as { version = \"^1.2\" }"
    );
    assert_eq!(
        errors(&with_head("[dependencies]\nnet = { vers = \"1\" }\n")),
        "ebpkg.toml:5:9: unknown key `vers`; did you mean `version`? (this table accepts `version`, `registry`)"
    );
    assert_eq!(
        errors(&with_head("[dependencies]\nnet = { version = \"1\", registry = \"nowhere\" }\n")),
        "ebpkg.toml:5:35: dependency `net`: `nowhere` is not a registry URL: relative URL without a base; name a registry by its URL, such as `https://registry.example.org/` or `file:///srv/ebpkg-registry/`"
    );
    assert_eq!(
        errors(&with_head("[dependencies]\nNet = \"1\"\n")),
        "ebpkg.toml:5:1: package name `Net` must start with a lowercase ASCII letter; write `net`"
    );
}

/// A dependency's registry is read by the rules of every registry URL
/// (`RegistryId`): a directory registry by its file:// URL, never a path, a host
/// other installers cannot reach, or credentials.
#[test]
fn dependency_registries_follow_the_registry_url_rules() {
    let m = Manifest::parse(
        &with_head("[dependencies]\nnet = { version = \"1\", registry = \"file:///srv/./reg\" }\n"),
        "ebpkg.toml",
    )
    .unwrap();
    assert_eq!(m.dependencies["net"].registry.as_ref().map(|r| r.as_str()), Some("file:///srv/reg/"));
    for (registry, why) in [
        ("file://elsewhere/reg", "remove the host name"),
        ("/srv/reg", "relative URL without a base"),
        ("https://me:secret@r.example/", "contains credentials"),
        ("https://r.example/?x=1", "no `?query` or `#fragment`"),
        ("ssh://r.example/", "uses the scheme `ssh:`"),
    ] {
        let e =
            errors(&with_head(&format!("[dependencies]\nnet = {{ version = \"1\", registry = \"{registry}\" }}\n")));
        assert!(e.starts_with(&format!("ebpkg.toml:5:35: dependency `net`: `{registry}`")) && e.contains(why), "{e}");
    }
}

#[test]
fn reexports_must_name_dependencies() {
    assert_eq!(
        errors(&with_head("[dependencies]\nmeter = \"1\"\n[reexports]\nmetre = [\"tb\"]\n")),
        "ebpkg.toml:7:1: re-exports from `metre`, which is not a dependency; did you mean `meter`?"
    );
}

const PROG: &str = "[[program]]\nname = \"p\"\nhook = \"xdp\"\n";

#[test]
fn program_source_rules() {
    assert_eq!(
        errors(&with_head(PROG)),
        "ebpkg.toml:5:8: program `p` has neither `source` nor `prebuilt`; add `source = \"src/p.bpf.c\"`"
    );
    assert_eq!(
        errors(&with_head(&format!("{PROG}source = \"../../etc/passwd\"\n"))),
        "ebpkg.toml:7:10: source of program `p`: path `../../etc/passwd` leaves the package directory through `..`; write a path inside the package, such as \"src/my_program.bpf.c\""
    );
    assert_eq!(
        errors(&with_head(&format!("{PROG}source = \"/etc/passwd\"\n"))),
        "ebpkg.toml:7:10: source of program `p`: path `/etc/passwd` is absolute; paths in a package are relative to the directory holding ebpkg.toml; write a path inside the package, such as \"src/my_program.bpf.c\""
    );
    assert_eq!(
        errors(&with_head(&format!("{PROG}prebuilt = {{ object = \"p.o\", sha256 = \"abc\" }}\n"))),
        "ebpkg.toml:7:39: sha256 \"abc\" is not 64 hex digits; write the output of `sha256sum <object>`"
    );
}

#[test]
fn program_signature_rules() {
    let arg = |n: &str| format!("[[program.arg]]\nname = \"{n}\"\ntype = \"u64\"\ndoc = \"d\"\n");
    let five: String = ["a", "b", "c", "d", "e"].iter().map(|n| arg(n)).collect();
    assert_eq!(
        errors(&with_head(&format!("{PROG}source = \"p.c\"\n{five}"))),
        "ebpkg.toml:25:8: program `p` takes 5 arguments; HIKe programs take at most 4; pass more data through a map or the per-CPU scratch area"
    );
    assert_eq!(
        errors(&with_head(&format!("{PROG}source = \"p.c\"\n{}{}", arg("a"), arg("a")))),
        "ebpkg.toml:13:8: argument `a` is defined twice in program `p`; the first definition is on line 9; rename one of them"
    );
    assert_eq!(
        errors(&with_head(&format!(
            "{PROG}source = \"p.c\"\n[[program.arg]]\nname = \"a\"\ntype = \"u8\"\ndoc = \" \"\n"
        ))),
        "ebpkg.toml:9:8: argument `a` has an empty `doc`; say what it means: users read it in `ebpkg info` and chain errors"
    );
    assert_eq!(
        errors(&with_head(&format!(
            "{PROG}source = \"p.c\"\n[[program.arg]]\nname = \"Rate\"\ntype = \"u8\"\ndoc = \"x\"\n"
        ))),
        "ebpkg.toml:9:8: argument name `Rate` must start with a lowercase ASCII letter; write `rate`"
    );
    assert_eq!(
        errors(&with_head(&format!("{PROG}source = \"p.c\"\nreturns = {{ type = \"u64\" }}\n"))),
        "ebpkg.toml:8:11: missing key `doc` in `returns`; add `doc = \"what it means\"` to this table"
    );
}

#[test]
fn item_names_are_unique_across_sections() {
    let text = with_head(&format!(
        "{PROG}source = \"p.c\"\n[[program]]\nname = \"p\"\nsource = \"q.c\"\nhook = \"tc\"\n[[chain]]\nname = \"p\"\nsource = \"c.eclat\"\n"
    ));
    assert_eq!(
        errors(&text),
        "ebpkg.toml:9:8: program `p` is defined twice in this package; the first definition is on line 5; rename one of them\nebpkg.toml:13:8: chain `p` is defined twice in this package; the first definition is on line 5; rename one of them"
    );
    assert_eq!(
        errors(&with_head("[[program]]\nname = \"while\"\nsource = \"p.c\"\nhook = \"xdp\"\n")),
        "ebpkg.toml:5:8: program name `while` is reserved: it is a keyword of the chain language; choose another name, e.g. `while_pkg`"
    );
}

#[test]
fn map_names_starting_with_hike_are_the_vms() {
    let loader = "[[loader]]\nname = \"l\"\nsource = \"l.c\"\nhook = \"xdp\"\n";
    assert_eq!(
        errors(&with_head(&format!("{PROG}source = \"p.c\"\n[[program.map]]\nname = \"hike_stash\"\ndoc = \"d\"\n"))),
        "ebpkg.toml:9:8: map `hike_stash` of program `p` starts with `hike_`, which is reserved for the HIKe VM's maps; \
         rename the map, here and in the C code; programs use the VM's maps without declaring them"
    );
    assert_eq!(
        errors(&with_head(&format!(
            "{loader}[[loader.map]]\nname = \"hike_chains\"\ndoc = \"d\"\nkey = [{{ name = \"k\", type = \"u32\" }}]\n\
             value = [{{ name = \"v\", type = \"u32\" }}]\n"
        ))),
        "ebpkg.toml:9:8: map `hike_chains` of loader `l` starts with `hike_`, which is reserved for the HIKe VM's maps; \
         rename the map, here and in the C code; programs use the VM's maps without declaring them"
    );
    // Only the prefix is the VM's.
    let ok = with_head(&format!("{PROG}source = \"p.c\"\n[[program.map]]\nname = \"my_hike_stash\"\ndoc = \"d\"\n"));
    assert!(Manifest::parse(&ok, "ebpkg.toml").is_ok());
}

#[test]
fn loader_maps_need_layouts() {
    let loader = "[[loader]]\nname = \"l\"\nsource = \"l.c\"\nhook = \"xdp\"\n";
    assert_eq!(
        errors(&with_head(&format!(
            "{loader}[[loader.map]]\nname = \"m\"\ndoc = \"d\"\nkey = [{{ name = \"k\", type = \"u32\" }}]\n"
        ))),
        "ebpkg.toml:9:8: loader map `m` has no `value` layout; chain scripts write this map, so describe it: value = [{ name = \"id\", type = \"u32\" }]"
    );
    assert_eq!(
        errors(&with_head(&format!(
            "{loader}[[loader.map]]\nname = \"m\"\ndoc = \"d\"\nkey = []\nvalue = [{{ name = \"c\", type = \"chain\" }}]\n"
        ))),
        "ebpkg.toml:9:8: map `m` has an empty `key`; list its fields, e.g. key = [{ name = \"id\", type = \"u32\" }]"
    );
    assert_eq!(
        errors(&with_head(&format!(
            "{loader}[[loader.map]]\nname = \"m\"\ndoc = \"d\"\nkey = [{{ name = \"k\", type = \"ipv7\" }}]\nvalue = []\n"
        ))),
        "ebpkg.toml:11:29: unknown value \"ipv7\"; did you mean \"ipv4\"? (expected one of \"u8\", \"u16\", \"u32\", \"u64\", \"s8\", \"s16\", \"s32\", \"s64\", \"chain\", \"ipv4\", \"ipv6\", \"mac\", \"ipv4-prefix\", \"ipv6-prefix\")"
    );
}

#[test]
fn chain_sources_stay_inside() {
    assert_eq!(
        errors(&with_head("[[chain]]\nname = \"c\"\nsource = \"C:\\\\chains\\\\c.eclat\"\n")),
        "ebpkg.toml:6:10: source of chain `c`: path `C:\\chains\\c.eclat` contains a backslash; separate directories with `/`; write a path inside the package, such as \"src/my_program.bpf.c\""
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = "[package]\nname = \"Demo\"\nversion = \"1\"\nlicense = \"nope\"\n";
    let e = errors(text);
    assert_eq!(e.lines().count(), 3, "{e}");
    assert!(e.lines().next().unwrap().starts_with("ebpkg.toml:2:8: package name `Demo`"));
}

#[test]
fn hostile_huge_file() {
    let mut text = String::from(HEAD);
    text.push_str(&format!("description = \"{}\"\n", "x".repeat(10 * 1024 * 1024)));
    assert_eq!(
        errors(&text),
        "ebpkg.toml:1:1: file is larger than 1048576 bytes (1 MiB), the limit for such ebpkg files; this is not a file ebpkg wrote or one a person would; check that the right file is named"
    );
}

#[test]
fn hostile_deep_nesting() {
    let text = with_head(&format!("[reexports]\nx = {}{}\n", "[".repeat(100_000), "]".repeat(100_000)));
    let e = errors(&text);
    assert!(e.starts_with("ebpkg.toml:5:"), "{e}");
    assert!(e.contains("values are nested too deeply; ebpkg files need at most a few levels"), "{e}");
    let tables: String = (0..5000).map(|i| format!("[a{i}]\n")).collect();
    assert!(errors(&tables).contains("unknown key `a0`"));
    let dotted = format!("{HEAD}{} = 1\n", vec!["a"; 50_000].join("."));
    assert!(errors(&dotted).contains("values are nested too deeply"));
}

#[test]
fn hostile_non_utf8() {
    let bytes = b"[package]\nname = \"demo\"\nversion = \"0.1.0\"\ndescription = \"caf\xe9\"\n";
    let e = Manifest::parse_bytes(bytes, "ebpkg.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "ebpkg.toml:4:19: file is not valid UTF-8 (byte 0xe9 at offset 60); save the file as UTF-8"
    );
}

#[test]
fn load_reports_missing_files_and_renders_source() {
    let dir = std::env::temp_dir().join(format!("ebpkg-spec-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = Manifest::load(&dir.join("nope.toml")).unwrap_err();
    assert!(matches!(missing, ManifestError::Io(_)));
    assert!(missing.to_string().contains("nope.toml"));

    let path = dir.join("ebpkg.toml");
    std::fs::write(&path, "[package]\nname = \"demo\"\nversion = \"1.2\"\n").unwrap();
    let rendered = Manifest::load(&path).unwrap_err().render();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(rendered.contains("version \"1.2\" is not semver"), "{rendered}");
    assert!(rendered.contains("3 │ version = \"1.2\""), "{rendered}");
    assert!(rendered.contains("^^^^^"), "{rendered}");
    assert!(rendered.contains("help: write \"1.2.0\""), "{rendered}");
}

#[test]
fn program_maps_say_what_an_upgrade_does_with_their_contents() {
    let map =
        |on: &str| with_head(&format!("{PROG}source = \"p.c\"\n[[program.map]]\nname = \"m\"\ndoc = \"d\"\n{on}"));
    let parsed = |on: &str| Manifest::parse(&map(on), "ebpkg.toml").unwrap().programs[0].maps[0].on_upgrade;
    assert_eq!(parsed(""), ebpkg_spec::manifest::OnUpgrade::Keep);
    assert_eq!(parsed("on-upgrade = \"fresh\"\n"), ebpkg_spec::manifest::OnUpgrade::Fresh);
    assert_eq!(parsed("on-upgrade = \"extend\"\n"), ebpkg_spec::manifest::OnUpgrade::Extend);
    assert_eq!(
        errors(&map("on-upgrade = \"migrate\"\n")),
        "ebpkg.toml:11:14: unknown value \"migrate\"; expected one of \"keep\", \"fresh\", \"extend\""
    );
    let loader = "[[loader]]\nname = \"l\"\nsource = \"l.c\"\nhook = \"xdp\"\n";
    assert_eq!(
        errors(&with_head(&format!(
            "{loader}[[loader.map]]\nname = \"m\"\ndoc = \"d\"\nkey = [{{ name = \"k\", type = \"u32\" }}]\nvalue = [{{ name = \"v\", type = \"u32\" }}]\non-upgrade = \"keep\"\n"
        ))),
        "ebpkg.toml:13:14: loader map `m` has `on-upgrade`; chain scripts fill loader maps on every install; `on-upgrade` is for program maps"
    );
}
