//! The blob store on S3: a real S3-compatible server (moto) over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use ebpkg_registry::config::StorageUrl;
use ebpkg_registry::testing::{TestRegistry, pack_with, publish_body};
use ebpkg_registry_testing::S3Server;
use ebpkg_spec::types::Sha256Digest;
use reqwest::StatusCode;

#[test]
fn archives_live_in_an_s3_bucket_and_a_lost_bucket_refuses_publishes() {
    let mut s3 = S3Server::start().unwrap();
    s3.create_bucket("ebpkg").unwrap();
    let storage = StorageUrl::parse(&s3.storage_url("ebpkg", "registry")).unwrap();
    let reg = TestRegistry::start_with(Box::new(move |c| c.storage = storage)).unwrap();
    assert_eq!(get(&reg, "readyz").status(), StatusCode::OK);
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let packed = pack_with(scratch.path(), "cloud", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&packed, "cloud", "1.0.0").unwrap()).status(), StatusCode::OK);
    // The object is in the bucket, under the prefix, named by its digest: read it
    // back with a client of its own.
    let own = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("ebpkg")
        .with_endpoint(s3.endpoint())
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .build()
        .unwrap();
    let key = object_store::path::Path::from(format!("registry/archives/{}.tar.gz", packed.sha256));
    let body =
        reg.block_on(async { object_store::ObjectStoreExt::get(&own, &key).await.unwrap().bytes().await.unwrap() });
    assert_eq!(Sha256Digest::of(&body), packed.sha256);
    let download = get(&reg, "api/v1/packages/cloud/1.0.0/download");
    assert_eq!(Sha256Digest::of(&download.bytes().unwrap()), packed.sha256);

    s3.stop();
    let lost = pack_with(scratch.path(), "cloud", "1.1.0", "", &[]).unwrap();
    let r = publish(&reg, &token, &publish_body(&lost, "cloud", "1.1.0").unwrap());
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.text().unwrap().contains("blob store"));
    assert_eq!(get(&reg, "readyz").status(), StatusCode::SERVICE_UNAVAILABLE);
    let index = get(&reg, "index/cl/ou/cloud").text().unwrap();
    assert_eq!(index.lines().count(), 1, "the refused version is not listed");
}
