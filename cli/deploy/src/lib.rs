//! Deployments: what one `ebpkg install` puts on a host for one project, installed
//! all or nothing, replaced atomically, removed completely.
//!
//! A [`DeployPlan`] arrives fully prepared (packages fetched and built, chain
//! scripts compiled). [`Deployer::install`] registers programs with the HIKe
//! runtime, links and installs chains, loads and configures loader instances
//! beside the running deployment, then switches interfaces over and commits a
//! [`DeploymentRecord`] to the state directory. A journal written ahead of every
//! kernel change lets the next run undo an install killed before its commit, or
//! finish one killed after it ([`Deployer::recover`]).

pub mod audit;
mod deployer;
mod error;
pub mod generations;
mod install;
pub mod journal;
mod maps;
mod native;
mod netns;
mod plan;
pub mod record;
mod safety;
pub mod signatures;
mod source;
pub mod state;
mod status;
mod store;
mod undo;

pub use audit::{Finding, Fix};
pub use deployer::{Attached, CRASH_POINTS, Deployer, Event};
pub use error::{DeployError, Result, VerifierError};
pub use install::InstallOutcome;
pub use maps::{MapDump, MapEntryView, MapView};
pub use native::{NativeBuild, NativeCompiler, NativeRequest, Tier, tier_up};
pub use plan::{ChainMode, DeployPlan, PlannedObject, PlannedPackage, PlannedScript};
pub use record::{DeploymentRecord, RecordedObject, RecordedPackage};
pub use record::{Fate, MapState};
pub use source::PackageSource;
pub use status::DeploymentStatus;
pub use store::{DEFAULT_STATE_DIR, Store};
