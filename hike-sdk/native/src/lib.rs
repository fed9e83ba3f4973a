//! Native chains: a HIKe chain, the chains it calls and the bodies of the
//! programs it calls compiled together into one eBPF program, which the kernel
//! verifies once and runs instead of the VM. See `docs/NATIVE.md` in hike-sdk.
//!
//! - [`codegen`]: the chain as C (control flow, registers as locals, calls);
//! - [`analysis`]: the worst case over its paths (budget, calls), which lets the
//!   native program drop the VM's per-instruction counting;
//! - [`link`]: package sources and the chain to one object through LLVM IR.

pub mod analysis;
pub mod codegen;
pub mod error;
pub mod link;
pub mod testing;

pub use analysis::{MAX_EXPANDED_INSNS, Worst, worst};
pub use codegen::{ChainUnit, Generated, entry_name, generate};
pub use error::{NativeError, Result};
pub use link::{LinkInput, MODULE_FLAGS, Tools, compile_module, link, map_origin, prefix_module, program_symbol};
