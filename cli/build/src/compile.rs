//! The clang command for one unit, and running it.
//!
//! clang runs in the package root with the source given relative to it, so its
//! messages read `src/tb.bpf.c:12:3: error: …`. `-ffile-prefix-map=<root>=.`
//! rewrites the root in debug info and `__FILE__` to `.`: objects do not depend
//! on where the package was unpacked (which is why the cache key can leave the
//! root out), and the BTF line info names `./src/tb.bpf.c`, whose last component
//! is what the verifier prints (`; return x; @ tb.bpf.c:12`). clang copies each
//! line's text into the BTF while compiling, reading the file by that relative
//! name from its working directory, so the text is there too. The SDK and
//! vmlinux.h directories are left unmapped for the same reason: the verifier can
//! then quote lines of the VM's code in `vm.h`.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use ebpkg_spec::types::Hook;

/// One compiler argument, with the location-dependent ones kept symbolic so the
/// same list serves the cache key and the real command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    Text(String),
    /// `-ffile-prefix-map=<root>=.`
    PrefixMapRoot,
    /// The SDK's include directory.
    Sdk,
    /// The directory holding `vmlinux.h`.
    Vmlinux,
    /// `-ffile-prefix-map=<the SDK's cache directory>=/hike-sdk`: objects that
    /// name no path of the machine that built them (shipped ones), at the cost of
    /// the VM's line text in verifier messages (clang reads it under the mapped name).
    PrefixMapSdk,
}

/// The arguments before `-c <source> -o <object>`.
///
/// - `-O2`: the verifier accepts optimized code far more readily (bounds checks
///   survive, stack use is small), and every BPF toolchain uses it.
/// - `-g`: BTF and BTF line info, needed for CO-RE relocations, for the SDK's
///   signature decl tags, and for verifier messages that quote source lines.
/// - `-target bpf`: the host's byte order (`bpfel` on every supported host).
/// - `-D__TARGET_ARCH_<arch>`: libbpf's `bpf_tracing.h` picks register layouts by it.
/// - `-Wall`, not `-Werror`: warnings in someone's package must not break an
///   install; they are reported instead. Except calls to undeclared functions and
///   integers used as pointers, which clang 14 only warns about: in BPF they are
///   always bugs (a missing helper header, a misspelt SDK macro) that would
///   otherwise surface later as an unreadable load failure. Newer clangs make them
///   errors anyway.
/// - `-DHIKE_HOOK_TC` for tc units: the SDK's headers switch context types and verdicts.
/// - `-fno-color-diagnostics`: the messages end up in errors and logs, not on a tty.
pub fn args(arch: &str, hook: Hook, extra: &[String]) -> Vec<Arg> {
    let mut out: Vec<Arg> = hike_sdk_headers::CFLAGS.map(|s| Arg::Text(s.to_owned())).into();
    out.push(Arg::Text(format!("-D__TARGET_ARCH_{arch}")));
    out.push(Arg::Text("-Wall".to_owned()));
    out.push(Arg::Text("-Werror=implicit-function-declaration".to_owned()));
    out.push(Arg::Text("-Werror=int-conversion".to_owned()));
    out.push(Arg::Text("-fno-color-diagnostics".to_owned()));
    out.push(Arg::PrefixMapRoot);
    if hook == Hook::Tc {
        out.push(Arg::Text("-DHIKE_HOOK_TC".to_owned()));
    }
    out.push(Arg::Text("-I".to_owned()));
    out.push(Arg::Sdk);
    out.push(Arg::Text("-I".to_owned()));
    out.push(Arg::Vmlinux);
    out.extend(extra.iter().cloned().map(Arg::Text));
    out
}

/// The arguments as the cache key sees them: placeholders for paths.
pub fn key_flags(args: &[Arg]) -> Vec<String> {
    args.iter()
        .map(|a| match a {
            Arg::Text(s) => s.clone(),
            Arg::PrefixMapRoot => "-ffile-prefix-map=<root>=.".to_owned(),
            Arg::Sdk => "<sdk>".to_owned(),
            Arg::Vmlinux => "<vmlinux>".to_owned(),
            Arg::PrefixMapSdk => format!("-ffile-prefix-map=<sdk-dir>={SHIPPED_SDK_DIR}"),
        })
        .collect()
}

/// What reproducible objects call the SDK's directory.
pub const SHIPPED_SDK_DIR: &str = "/hike-sdk";

/// Where the symbolic arguments point for one compile.
pub struct Dirs<'a> {
    /// The package root, canonical (clang compares it with its real working directory).
    pub root: &'a Path,
    pub sdk: &'a Path,
    pub vmlinux: &'a Path,
}

/// The arguments with real paths.
pub fn resolve(args: &[Arg], dirs: &Dirs<'_>) -> Vec<OsString> {
    args.iter()
        .map(|a| match a {
            Arg::Text(s) => OsString::from(s),
            Arg::PrefixMapRoot => {
                // clang splits the value at its first `=`; a root containing `=`
                // is merely left unmapped.
                let mut s = OsString::from("-ffile-prefix-map=");
                s.push(dirs.root);
                s.push("=.");
                s
            }
            Arg::Sdk => dirs.sdk.as_os_str().to_owned(),
            Arg::Vmlinux => dirs.vmlinux.as_os_str().to_owned(),
            Arg::PrefixMapSdk => {
                // <cache>/sdk/<digest>, holding include/ and reference/.
                let mut s = OsString::from("-ffile-prefix-map=");
                s.push(dirs.sdk.parent().unwrap_or(dirs.sdk));
                s.push(format!("={SHIPPED_SDK_DIR}"));
                s
            }
        })
        .collect()
}

/// Runs `clang <args> -c <source> -o <out>` in `root`.
pub fn run(clang: &Path, args: &[OsString], root: &Path, source: &str, out: &Path) -> std::io::Result<Output> {
    Command::new(clang)
        .args(args)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(out)
        .current_dir(root)
        // LLVM takes the compilation directory from $PWD when it names the working
        // directory; the inherited one names the parent's, so set it to match.
        .env("PWD", root)
        .stdin(Stdio::null())
        .output()
}

/// The command as a person would type it in the package directory, writing the
/// object next to the source's name (`src/tb.bpf.c` → `tb.bpf.o`).
pub fn display_command(clang: &Path, args: &[OsString], source: &str) -> String {
    let stem = Path::new(source).file_stem().map(OsStr::to_os_string).unwrap_or_else(|| "out".into());
    let mut object = stem;
    object.push(".o");
    let mut words = vec![quote(clang.as_os_str())];
    words.extend(args.iter().map(|a| quote(a)));
    words.extend(["-c".to_owned(), quote(OsStr::new(source)), "-o".to_owned(), quote(&object)]);
    words.join(" ")
}

/// Shell-quotes a word when it needs it.
fn quote(word: &OsStr) -> String {
    let s = word.to_string_lossy();
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=+,:@%".contains(c));
    if plain { s.into_owned() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_units_define_the_hook() {
        let xdp = key_flags(&args("x86", Hook::Xdp, &[]));
        let tc = key_flags(&args("x86", Hook::Tc, &[]));
        assert!(!xdp.iter().any(|f| f == "-DHIKE_HOOK_TC"));
        assert!(tc.iter().any(|f| f == "-DHIKE_HOOK_TC"));
        assert!(xdp.iter().any(|f| f == "-D__TARGET_ARCH_x86"));
        assert!(!xdp.iter().any(|f| f == "-Werror"));
    }

    #[test]
    fn commands_are_copyable() {
        let dirs = Dirs { root: Path::new("/p/my pkg"), sdk: Path::new("/c/sdk"), vmlinux: Path::new("/c/v") };
        let args = resolve(&args("x86", Hook::Xdp, &[]), &dirs);
        let cmd = display_command(Path::new("/usr/bin/clang"), &args, "src/tb.bpf.c");
        assert!(cmd.starts_with("/usr/bin/clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall"), "{cmd}");
        assert!(cmd.contains("'-ffile-prefix-map=/p/my pkg=.'"), "{cmd}");
        assert!(cmd.ends_with("-I /c/sdk -I /c/v -c src/tb.bpf.c -o tb.bpf.o"), "{cmd}");
    }
}
