//! memsync-core: the memory format, the `MEMORY.md` index and its per-entry merge, the path
//! rules, content hashing and the wire types shared by the server and the client.
//!
//! Everything here is pure: no I/O, no clock, no network. Both sides validate with the same code.

pub mod feedback;
pub mod feedback_judge;
pub mod guard;
pub mod index;
pub mod memory;
pub mod merge;
pub mod path;
pub mod policy;
pub mod project;
pub mod refs;
pub mod scan;
pub mod sha;
pub mod text;
pub mod tree;
pub mod wire;

pub use index::{Index, IndexEntry, IndexItem};
pub use memory::{MemoryDoc, MemoryType};
pub use path::MemoryPath;
pub use project::ProjectId;
pub use sha::Sha256;
#[cfg(feature = "judge-http")]
pub mod judge_http;
