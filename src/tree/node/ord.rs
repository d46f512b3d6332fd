//! The orderings of the publication protocol (the table in the parent module's docs), one
//! constant per row and side, in one place: the shipping build and the loom build both read
//! these. A loom model therefore checks the very ordering that ships, and weakening one of these
//! constants (`scripts/ordering-mutants.sh` does, one at a time) makes the loom models fail.
//!
//! Under `cfg(loom)` a switch of `crate::loom_knobs` may *override* a row for a broken twin
//! (the `mutants` models); it never supplies the ordering otherwise. Outside loom every accessor
//! below is the constant itself (`#[inline(always)]`, no branch).
//!
//! Only the Release and Acquire rows are here: the Relaxed rows (P2, P4, P6–P8, P13, P15, P17,
//! and P12's loads off the right edge) cannot be weakened, and keep their literal `Ordering::Relaxed` next to their
//! `// ORDERING: Pn` comment. P18 (the seal lift) lives in `tree::seal`.

use crate::sync::Ordering;

/// P1 (and P16), writer side: the store of the root word that publishes a new root, or the
/// empty tree.
pub(super) const P1_PUBLISH_ROOT: Ordering = Ordering::Release;
/// P1, reader side: the load of the root word (pairs with [`P1_PUBLISH_ROOT`]).
pub(super) const P1_LOAD_ROOT: Ordering = Ordering::Acquire;
/// P3/P5, writer side: the in-place store of a slot readers can already reach (a child replaced
/// in place, an exact fit's entry).
pub(super) const P3_P5_PUBLISH_SLOT: Ordering = Ordering::Release;
/// P3/P5, reader side: the load of a slot (pairs with [`P3_P5_PUBLISH_SLOT`]; the slots an
/// append wrote beyond the end, P6, are exposed by the pivot loaded before, P9).
pub(super) const P3_P5_LOAD_SLOT: Ordering = Ordering::Acquire;
/// P9, writer side: the single store of the lowered end pivot that publishes an in-place append.
pub(super) const P9_PUBLISH_PIVOT: Ordering = Ordering::Release;
/// P9, reader side: the load of a pivot, before the slots and pivots it exposes (pairs with
/// [`P9_PUBLISH_PIVOT`]).
pub(super) const P9_LOAD_PIVOT: Ordering = Ordering::Acquire;
/// P12, writer side: the store of a recorded gap (a hint, but a gap lowered for a range that
/// shrank is stored after the store that shrank it, and must carry it to the reader).
pub(super) const P12_STORE_GAP: Ordering = Ordering::Release;
/// P12, reader side: the load of the gap of a right-edge slot before the search prunes by it
/// (pairs with [`P12_STORE_GAP`]); the other gap loads are Relaxed.
pub(super) const P12_LOAD_EDGE_GAP: Ordering = Ordering::Acquire;
/// P14, writer side: the store of the dead bit into the parent word of a replaced node.
pub(super) const P14_MARK_DEAD: Ordering = Ordering::Release;
/// P14, reader side: the load of the dead bit (pairs with [`P14_MARK_DEAD`]).
pub(super) const P14_LOAD_DEAD: Ordering = Ordering::Acquire;

/// [`P1_PUBLISH_ROOT`] for a new root (under loom: `Relaxed` if
/// `loom_knobs::set_relaxed_root_publish` is on).
#[inline(always)]
pub(super) fn p1_publish_root() -> Ordering {
    #[cfg(loom)]
    if let Some(o) = crate::loom_knobs::root_publish_override() {
        return o;
    }
    P1_PUBLISH_ROOT
}

/// [`P3_P5_PUBLISH_SLOT`] (under loom: `Relaxed` if
/// `loom_knobs::set_relaxed_slot_publish` is on).
#[inline(always)]
pub(super) fn p3_p5_publish_slot() -> Ordering {
    #[cfg(loom)]
    if let Some(o) = crate::loom_knobs::slot_publish_override() {
        return o;
    }
    P3_P5_PUBLISH_SLOT
}

/// [`P9_PUBLISH_PIVOT`] (under loom: `Relaxed` if
/// `loom_knobs::set_relaxed_publish` is on).
#[inline(always)]
pub(super) fn p9_publish_pivot() -> Ordering {
    #[cfg(loom)]
    if let Some(o) = crate::loom_knobs::publish_override() {
        return o;
    }
    P9_PUBLISH_PIVOT
}

/// [`P9_LOAD_PIVOT`] (under loom: `Relaxed` if
/// `loom_knobs::set_relaxed_reader` is on).
#[inline(always)]
pub(super) fn p9_load_pivot() -> Ordering {
    #[cfg(loom)]
    if let Some(o) = crate::loom_knobs::reader_pivot_override() {
        return o;
    }
    P9_LOAD_PIVOT
}
