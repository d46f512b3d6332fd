//! Test-only switches that break the publication protocol on purpose, so that loom models can
//! show they catch a wrong ordering (a model that cannot fail proves nothing).

use std::sync::atomic::{AtomicBool, Ordering as StdOrdering};

static RELAXED_PUBLISH: AtomicBool = AtomicBool::new(false);

/// Publish in-place changes with `Relaxed` instead of `Release` (a deliberate bug).
pub fn set_relaxed_publish(on: bool) {
    RELAXED_PUBLISH.store(on, StdOrdering::SeqCst);
}

pub(crate) fn publish_ordering() -> crate::sync::Ordering {
    if RELAXED_PUBLISH.load(StdOrdering::SeqCst) {
        crate::sync::Ordering::Relaxed
    } else {
        crate::sync::Ordering::Release
    }
}
