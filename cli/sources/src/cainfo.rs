//! Extra CA certificates for HTTPS (cargo's `http.cainfo`): a registry behind a
//! load balancer whose certificate an organisation's own CA issued is trusted
//! by giving that CA's certificate in a PEM file. The certificates are added to
//! the system's roots, never instead of them (a mirror or a CDN with a public
//! certificate keeps working).

use std::path::PathBuf;

use rustls::CertificateError;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Names a PEM file of extra CA certificates for every registry; wins over the
/// config file's `[http] cainfo`, not over a registry's own `cainfo`.
pub const CAINFO_ENV: &str = "EBPKG_HTTP_CAINFO";

/// Largest CA file read: a system's whole bundle (about 150 roots) is a quarter of it.
pub const MAX_CAINFO_BYTES: u64 = 1024 * 1024;

/// Where a CA file was named, for the messages about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaInfoSetting {
    /// [`CAINFO_ENV`].
    Env,
    /// `[http] cainfo` in this config file.
    Http { file: PathBuf },
    /// `[registries.<name>] cainfo` in this config file.
    Registry { name: String, file: PathBuf },
}

impl std::fmt::Display for CaInfoSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaInfoSetting::Env => write!(f, "${CAINFO_ENV}"),
            CaInfoSetting::Http { file } => write!(f, "[http] cainfo in {}", file.display()),
            CaInfoSetting::Registry { name, file } => write!(f, "[registries.{name}] cainfo in {}", file.display()),
        }
    }
}

/// A PEM file of CA certificates to trust besides the system's, and the setting
/// that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaInfo {
    pub path: PathBuf,
    pub setting: CaInfoSetting,
}

/// A CA file that cannot be used; nothing was sent.
#[derive(Debug, thiserror::Error)]
#[error(
    "the CA certificates file {} ({setting}) {problem}; it must be a PEM file of CA certificates \
     (`-----BEGIN CERTIFICATE-----` blocks, as your organisation hands its CA out): fix the file or the setting",
    path.display()
)]
pub struct CaInfoError {
    pub path: PathBuf,
    pub setting: CaInfoSetting,
    /// What is wrong with it, as the end of a sentence: "does not exist".
    pub problem: String,
}

impl CaInfo {
    /// The certificates of the file, each checked to be usable as a root.
    pub fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, CaInfoError> {
        let refuse = |problem: String| CaInfoError { path: self.path.clone(), setting: self.setting.clone(), problem };
        let bytes = ebpkg_fs::read(&self.path, MAX_CAINFO_BYTES).map_err(|e| {
            refuse(match e {
                ebpkg_fs::ReadError::NotFound { .. } => "does not exist".to_owned(),
                ebpkg_fs::ReadError::NotRegular { kind, .. } => format!("is a {kind}, not a regular file"),
                ebpkg_fs::ReadError::TooLarge { size, max, .. } => {
                    format!("is {size} bytes, more than the {max} bytes a CA file may have")
                }
                ebpkg_fs::ReadError::Io { cause, .. } => format!("cannot be read: {cause}"),
            })
        })?;
        let mut certificates = Vec::new();
        for (n, parsed) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
            let der = parsed.map_err(|e| refuse(format!("is not PEM: certificate {} of it: {e}", n + 1)))?;
            // What the verifier would refuse later, refused now with its number.
            rustls::RootCertStore::empty()
                .add(der.clone())
                .map_err(|e| refuse(format!("holds a certificate (the {}.) that cannot be a CA: {e}", n + 1)))?;
            certificates.push(der);
        }
        if certificates.is_empty() {
            return Err(refuse("holds no certificate".to_owned()));
        }
        Ok(certificates)
    }
}

/// What to do about a server certificate the client refused: where the CA file
/// setting can help, it names it (and the file already given, if any).
pub(crate) fn certificate_hint(problem: &CertificateError, cainfo: Option<&CaInfo>) -> String {
    match problem {
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "The certificate is not for this host name: use the name it was issued for in the registry's URL, or \
             ask the registry's operator for a certificate that names this one"
                .to_owned()
        }
        CertificateError::Expired
        | CertificateError::ExpiredContext { .. }
        | CertificateError::NotValidYet
        | CertificateError::NotValidYetContext { .. } => {
            "The certificate is outside its validity period: check this machine's clock, or ask the registry's \
             operator to renew it"
                .to_owned()
        }
        _ => match cainfo {
            None => format!(
                "If your organisation's own CA issued the registry's certificate, give that CA's certificate (a PEM \
                 file) with {CAINFO_ENV}=/path/ca.pem, or in the config file with `cainfo = \"/path/ca.pem\"` under \
                 [http] (every registry) or [registries.NAME] (one)"
            ),
            Some(ca) => format!(
                "Neither the system's CA certificates nor those in {} ({}) issued it: check that the file holds the \
                 CA that signed the registry's certificate, and that the server sends its intermediate certificates",
                ca.path.display(),
                ca.setting
            ),
        },
    }
}

/// The certificate problem behind a failed request, if that is why it failed:
/// rustls' error, somewhere among the causes (inside `io::Error`s, whose
/// `source` skips the error they wrap, and which wrap each other).
pub(crate) fn certificate_problem<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a CertificateError> {
    let mut pending = vec![error];
    while let Some(e) = pending.pop() {
        if let Some(rustls::Error::InvalidCertificate(problem)) = e.downcast_ref::<rustls::Error>() {
            return Some(problem);
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref) {
            pending.push(inner);
        }
        pending.extend(e.source());
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ca(path: PathBuf) -> CaInfo {
        CaInfo { path, setting: CaInfoSetting::Registry { name: "corp".into(), file: "/home/u/config.toml".into() } }
    }

    /// A missing, empty, non-PEM, too large or non-certificate file is refused,
    /// naming the file and the setting that named it.
    #[test]
    fn a_bad_ca_file_is_refused_naming_the_file_and_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let broken = "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
        for (path, problem) in [
            (dir.path().join("missing.pem"), "does not exist"),
            (file("empty.pem", b""), "holds no certificate"),
            (file("key.pem", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "no certificate"),
            (file("garbage.pem", garbage.as_bytes()), "(the 1.) that cannot be a CA"),
            (file("broken.pem", broken.as_bytes()), "is not PEM"),
            (file("huge.pem", &vec![b'a'; MAX_CAINFO_BYTES as usize + 1]), "more than the 1048576 bytes"),
            (dir.path().to_owned(), "is a directory, not a regular file"),
        ] {
            let err = ca(path.clone()).certificates().unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()), "{err}");
            assert!(err.contains("[registries.corp] cainfo in /home/u/config.toml"), "{err}");
            assert!(err.contains(problem), "{problem}: {err}");
        }
    }

    #[test]
    fn the_hint_names_the_setting_or_the_file_given() {
        let hint = certificate_hint(&CertificateError::UnknownIssuer, None);
        assert!(hint.contains("EBPKG_HTTP_CAINFO=/path/ca.pem") && hint.contains("[http]"), "{hint}");
        let given = ca("/etc/corp.pem".into());
        let hint = certificate_hint(&CertificateError::UnknownIssuer, Some(&given));
        assert!(hint.contains("/etc/corp.pem ([registries.corp] cainfo in /home/u/config.toml)"), "{hint}");
        let hint = certificate_hint(&CertificateError::NotValidForName, None);
        assert!(hint.contains("host name") && !hint.contains("CAINFO"), "{hint}");
        assert!(certificate_hint(&CertificateError::Expired, None).contains("clock"));
        assert_eq!(CaInfoSetting::Env.to_string(), "$EBPKG_HTTP_CAINFO");
    }

    #[test]
    fn a_certificate_problem_is_found_inside_an_io_error() {
        // As hyper-rustls and hyper-util wrap it: an io::Error in an io::Error.
        let wrapped = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        ));
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let outer = Outer(wrapped);
        assert_eq!(certificate_problem(&outer), Some(&CertificateError::UnknownIssuer));
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(certificate_problem(&Outer(refused)), None);
    }
}
