//! The blob store: package archives, named by their SHA-256, through
//! `object_store` (a local directory, fsynced, or an S3-compatible bucket).
//!
//! Content addressing makes a publish that crashed between writing the archive and
//! committing the version harmless: the orphan is exactly the bytes a later publish
//! of the same archive writes again, and nothing names it until then.

use std::sync::Arc;

use bytes::Bytes;
use ebpkg_spec::types::Sha256Digest;
use futures_util::stream::BoxStream;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as BlobPath;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::config::StorageUrl;
use crate::error::ConfigError;

#[derive(Clone, Debug)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
}

/// An archive being read from the store.
pub struct ArchiveStream {
    pub size: u64,
    pub stream: BoxStream<'static, object_store::Result<Bytes>>,
}

impl Blobs {
    pub fn open(url: &StorageUrl) -> Result<Blobs, ConfigError> {
        let bad = |why: String| ConfigError::Invalid { setting: "storage", value: url.to_string(), why };
        let store: Arc<dyn ObjectStore> = match url {
            StorageUrl::Dir(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create the directory: {e}")))?;
                // fsync: a version is listed only once its archive is durable.
                let local = LocalFileSystem::new_with_prefix(dir).map_err(|e| bad(e.to_string()))?.with_fsync(true);
                Arc::new(local)
            }
            StorageUrl::S3 { bucket, prefix, options } => {
                let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
                for (key, value) in options {
                    let key = key.parse::<AmazonS3ConfigKey>().map_err(|e| bad(format!("`{key}`: {e}")))?;
                    builder = builder.with_config(key, value);
                }
                let s3 = builder
                    .build()
                    .map_err(|e| bad(format!("{e} (set AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, and AWS_ENDPOINT for a server other than AWS)")))?;
                if prefix.is_empty() { Arc::new(s3) } else { Arc::new(PrefixStore::new(s3, prefix.as_str())) }
            }
        };
        Ok(Blobs { store })
    }

    /// Where an archive lives in the store (also what `--dl-template` points at).
    pub fn archive_key(cksum: &Sha256Digest) -> BlobPath {
        BlobPath::from(format!("archives/{cksum}.tar.gz"))
    }

    /// Stores an archive durably; returns once the store says it is there.
    pub async fn put_archive(&self, cksum: &Sha256Digest, bytes: Bytes) -> object_store::Result<()> {
        self.store.put(&Self::archive_key(cksum), PutPayload::from_bytes(bytes)).await?;
        Ok(())
    }

    /// The archive with this digest, `None` when the store does not have it.
    pub async fn archive(&self, cksum: &Sha256Digest) -> object_store::Result<Option<ArchiveStream>> {
        match self.store.get(&Self::archive_key(cksum)).await {
            Ok(got) => Ok(Some(ArchiveStream { size: got.meta.size, stream: got.into_stream() })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the store answers (a missing object is an answer).
    pub async fn check(&self) -> object_store::Result<()> {
        match self.store.head(&BlobPath::from("readiness-probe")).await {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
