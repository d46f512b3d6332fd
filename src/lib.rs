//! # maple-tree
//!
//! The Linux kernel's maple tree in userspace: an RCU-safe B-tree over non-overlapping inclusive
//! ranges `[first, last]` of `u64` indices, each mapped to an owned, pointer-sized entry.
//!
//! - **Lock-free readers** on [crossbeam-epoch](crossbeam_epoch): loads, finds, iteration and
//!   cursors never lock and never allocate; they pin a guard and restart when they meet a node a
//!   writer replaced.
//! - **One writer at a time**, serialised by the tree's lock ([`MapleTree::lock`]) or by `&mut`
//!   ([`MapleTree::exclusive`]). Writes through the lock are RCU-safe: copy-on-write where a
//!   reader could see a half-done change, in place where the write order keeps every reader
//!   correct — including the in-place appends the kernel turned off under RCU in v6.5.
//! - **The kernel's whole API**: load, store/insert/erase of ranges, `find`/`next`/`prev`,
//!   double-ended iteration, a cursor with the `ma_state` status machine, gap search
//!   (`empty_area`, `empty_area_rev`), allocation (`alloc_range`, `alloc_rrange`,
//!   `alloc_cyclic`), structural duplication (`dup`, like `__mt_dup`), `validate` and dumps.
//!
//! ```
//! use maple_tree::{MapleTree, Value};
//! use std::sync::Arc;
//!
//! let tree = Arc::new(MapleTree::<Value>::new());
//! for i in 0..1000u64 {
//!     tree.store_range(i * 10, i * 10 + 5, Value::new(i)).unwrap();
//! }
//! // Readers on other threads while the writer keeps going.
//! let reader = {
//!     let tree = Arc::clone(&tree);
//!     std::thread::spawn(move || {
//!         let guard = tree.pin();
//!         tree.iter(&guard).filter(|(a, _, _)| a % 10 == 0).count()
//!     })
//! };
//! tree.erase_range(0, 4999).unwrap();
//! let seen = reader.join().unwrap();
//! assert!(seen >= 500 && seen <= 1000);
//! assert_eq!(tree.count(), 500);
//! tree.validate().unwrap();
//! ```

#![warn(missing_docs)]

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod entry;
mod error;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_knobs;
#[cfg(not(loom))]
pub mod mm;
#[cfg(target_os = "linux")]
pub mod poll;
mod sync;
pub mod tree;

pub use entry::{Entry, Value};
pub use error::Error;
pub use tree::{
    Cursor, CursorMut, Iter, MapleTree, Options, Stats, Status, ValidateError, WriteGuard,
};
