//! Test-only switches that break the publication protocol on purpose, so that loom models can
//! show they catch a wrong ordering (a model that cannot fail proves nothing).
//!
//! Compiled only under `cfg(loom)`. Every switch is off by default; a test that turns one on must
//! turn it off again (also when it panics), since the switches are process-wide and loom tests
//! run one at a time (`--test-threads=1`). [`reset`] turns them all off.

// `Ordering` is the same type in std and loom (loom re-exports std's).
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as StdOrdering};

static RELAXED_PUBLISH: AtomicBool = AtomicBool::new(false);
static RELAXED_SLOT_PUBLISH: AtomicBool = AtomicBool::new(false);
static RELAXED_READER: AtomicBool = AtomicBool::new(false);
static FREE_AT_ONCE: AtomicBool = AtomicBool::new(false);
static IGNORE_SEALS: AtomicBool = AtomicBool::new(false);
static IGNORE_REPOINT_SEALS: AtomicBool = AtomicBool::new(false);
static RELAXED_ROOT_PUBLISH: AtomicBool = AtomicBool::new(false);
static RETIRE_BATCH: AtomicUsize = AtomicUsize::new(1);
static TRUST_REWALK: AtomicBool = AtomicBool::new(false);
static TRUST_EDGE_GAP: AtomicBool = AtomicBool::new(false);
static EARLY_GAP_LOWERING: AtomicBool = AtomicBool::new(false);

/// Publish in-place appends with a `Relaxed` store of the lowered end pivot instead of `Release`
/// (a deliberate bug: a reader can see the new end but not the slots written beyond it).
pub fn set_relaxed_publish(on: bool) {
    RELAXED_PUBLISH.store(on, StdOrdering::SeqCst);
}

/// Store slots that readers can already reach (exact fit's entry, a node store's or split's new
/// child pointer) with `Relaxed` instead of `Release` (a deliberate bug: a reader can reach the new
/// entry or node without seeing its contents).
pub fn set_relaxed_slot_publish(on: bool) {
    RELAXED_SLOT_PUBLISH.store(on, StdOrdering::SeqCst);
}

/// Readers load pivots with `Relaxed` instead of `Acquire` (a deliberate bug on the reader side:
/// a lowered end pivot no longer carries the slots written beyond it). Covers the pivot loads of
/// point loads and iteration steps (`NodeRef::pivot`, `NodeRef::range_pivot`) and of the node
/// scans (`NodeRef::find_pivot`, `NodeRef::find_slot`, `NodeRef::pivot_at_or_above`).
pub fn set_relaxed_reader(on: bool) {
    RELAXED_READER.store(on, StdOrdering::SeqCst);
}

/// Retired nodes are poisoned at once instead of after the grace period (a deliberate bug: "free
/// at once instead of deferring"). The memory itself is not returned to the allocator, so the test
/// process never really reads freed memory; loom reports the race with the poisoning write.
pub fn set_free_at_once(on: bool) {
    FREE_AT_ONCE.store(on, StdOrdering::SeqCst);
}

/// Seals never hold (a deliberate bug: a slot bounded by a pivot lowered in place is re-pointed
/// in place, and a node the append split shrank is appended into in place, while readers may
/// still hold the old bound; see `tree::seal`).
pub fn set_ignore_seals(on: bool) {
    IGNORE_SEALS.store(on, StdOrdering::SeqCst);
}

/// Only the seals of lowered pivots are ignored (a deliberate bug: a child under a pivot lowered
/// in place is replaced in place, without copying its parent; shrunk nodes stay sealed).
pub fn set_ignore_repoint_seals(on: bool) {
    IGNORE_REPOINT_SEALS.store(on, StdOrdering::SeqCst);
}

/// Retired nodes an RCU-mode writer queues before it hands them to the collector (not a bug:
/// the release build's batch is 32; loom models use 1 unless they set more, so that the frees
/// of a model's few writes happen within the model). `n` must be at least 1.
pub fn set_retire_batch(n: usize) {
    RETIRE_BATCH.store(n.max(1), StdOrdering::SeqCst);
}

/// Publish a new root with a `Relaxed` store of the root word instead of `Release` (a
/// deliberate bug: a reader can reach the new root without seeing its contents, nor those of
/// the fresh nodes under it).
pub fn set_relaxed_root_publish(on: bool) {
    RELAXED_ROOT_PUBLISH.store(on, StdOrdering::SeqCst);
}

/// Read paths trust the range a re-walk from the root lands on (a deliberate bug, breaking
/// README "Guarantees": past a replaced node a cursor move returns the range now holding its
/// old end + 1, which may reach back over its previous answer; `MapleTree::next`/`prev` return
/// a range holding their index; the two ends of one iterator do not stop at what the other has
/// yielded).
pub fn set_trust_rewalk(on: bool) {
    TRUST_REWALK.store(on, StdOrdering::SeqCst);
}

/// A reader's gap search prunes a right-edge child by its recorded gap without re-reading its
/// path (a deliberate bug: a reader holding a bound the append split's climb has since lowered
/// prunes the whole tail by the shrunk child's gap; see `gap::search`).
pub fn set_trust_edge_gap(on: bool) {
    TRUST_EDGE_GAP.store(on, StdOrdering::SeqCst);
}

/// The append split's climb stores the lowered gaps of the children it shrinks before the store
/// that shrinks them (a deliberate bug, the order before row P12 said otherwise: a reader still
/// holding the old bound can load the new gap, and re-reading its path finds nothing changed
/// yet; see `write::append_split`).
pub fn set_early_gap_lowering(on: bool) {
    EARLY_GAP_LOWERING.store(on, StdOrdering::SeqCst);
}

/// Turns every switch off.
pub fn reset() {
    set_trust_rewalk(false);
    set_trust_edge_gap(false);
    set_early_gap_lowering(false);
    set_relaxed_publish(false);
    set_relaxed_slot_publish(false);
    set_relaxed_reader(false);
    set_free_at_once(false);
    set_ignore_seals(false);
    set_ignore_repoint_seals(false);
    set_relaxed_root_publish(false);
    set_retire_batch(1);
}

/// Whether read paths trust a re-walk's range (see [`set_trust_rewalk`]).
pub(crate) fn trust_rewalk() -> bool {
    TRUST_REWALK.load(StdOrdering::SeqCst)
}

/// Whether a reader's gap search prunes a right-edge child without re-reading its path (see
/// [`set_trust_edge_gap`]).
pub(crate) fn trust_edge_gap() -> bool {
    TRUST_EDGE_GAP.load(StdOrdering::SeqCst)
}

/// Whether the append split's climb lowers gaps before the shrink (see
/// [`set_early_gap_lowering`]).
pub(crate) fn early_gap_lowering() -> bool {
    EARLY_GAP_LOWERING.load(StdOrdering::SeqCst)
}

/// Whether seals are ignored.
pub(crate) fn ignore_seals() -> bool {
    IGNORE_SEALS.load(StdOrdering::SeqCst)
}

/// Whether the seals of lowered pivots are ignored.
pub(crate) fn ignore_repoint_seals() -> bool {
    IGNORE_REPOINT_SEALS.load(StdOrdering::SeqCst)
}

// The ordering overrides: `Some(Relaxed)` while a switch is on, `None` (the protocol's own
// ordering, `tree::node::ord`) otherwise. They never supply an ordering of their own.

/// `Relaxed` if `set_relaxed_publish` is on (overrides P9's publishing store).
pub(crate) fn publish_override() -> Option<StdOrdering> {
    relaxed_if(&RELAXED_PUBLISH)
}

/// `Relaxed` if `set_relaxed_root_publish` is on (overrides P1's store of a new root).
pub(crate) fn root_publish_override() -> Option<StdOrdering> {
    relaxed_if(&RELAXED_ROOT_PUBLISH)
}

/// `Relaxed` if `set_relaxed_slot_publish` is on (overrides P3/P5's in-place slot store).
pub(crate) fn slot_publish_override() -> Option<StdOrdering> {
    relaxed_if(&RELAXED_SLOT_PUBLISH)
}

/// `Relaxed` if `set_relaxed_reader` is on (overrides P9's reader pivot loads).
pub(crate) fn reader_pivot_override() -> Option<StdOrdering> {
    relaxed_if(&RELAXED_READER)
}

fn relaxed_if(switch: &AtomicBool) -> Option<StdOrdering> {
    switch
        .load(StdOrdering::SeqCst)
        .then_some(StdOrdering::Relaxed)
}

/// Whether retired nodes are poisoned at once.
pub(crate) fn free_at_once() -> bool {
    FREE_AT_ONCE.load(StdOrdering::SeqCst)
}

/// Retired nodes queued before they are handed on (see [`set_retire_batch`]).
pub(crate) fn retire_batch() -> usize {
    RETIRE_BATCH.load(StdOrdering::SeqCst)
}
