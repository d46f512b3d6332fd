//! The userfaultfd-context model (uffd-poll.md Part A).
//!
//! This module starts as the type that a VMA's context slot holds; the full model (features,
//! queues, register/unregister, faults, fork) builds on it.

use std::sync::atomic::{AtomicU32, Ordering};

/// A userfaultfd context (`struct userfaultfd_ctx`). VMAs hold it in an
/// `arc_swap::ArcSwapOption`; two VMAs may merge only if they hold the same `Arc`.
#[derive(Debug, Default)]
pub struct UffdCtx {
    features: AtomicU32,
}

impl UffdCtx {
    /// A context whose API handshake installed `features`.
    pub fn with_features(features: u32) -> Self {
        UffdCtx {
            features: AtomicU32::new(features),
        }
    }

    /// The installed features (0 before the API handshake).
    pub fn features(&self) -> u32 {
        self.features.load(Ordering::Acquire)
    }
}
