//! Loom model of the userfaultfd event handshake: a generator (`mremap` with a context that has
//! `UFFD_FEATURE_EVENT_REMAP`) preps the event (`mmap_changing += 1` under `map_changing_lock`),
//! makes its change, posts the message and waits until the monitor has read it, then drops
//! `mmap_changing`; the monitor (a blocking reader) first tries a fill ioctl — which must either
//! finish before the event's prep or fail with `EAGAIN` — then reads the event.
//!
//! Checked in every interleaving: a fill that got through the `mmap_changing` gate saw the
//! layout from before the event (and its access is ordered with the generator's change: the
//! layout is a loom `UnsafeCell`); the message read is the one posted, whole; after reading it
//! the monitor sees the change; a second event (a fork's, carrying the child's context) comes
//! next and its context is seen as made; the generator sees its event read and leaves `mmap_changing` at
//! 0; nobody sleeps forever (loom reports a deadlock otherwise).
//!
//! The broken twins must fail: one checks `mmap_changing` without `map_changing_lock` (the race
//! kernel commit 5e4c24a57b0c, "userfaultfd: protect mmap_changing with rw_sem in
//! userfaulfd_ctx", closed); the other completes an event without waiting for it to be read
//! (`mmap_changing` drops while the event is unread).
//!
//! Run: `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p maple-mm --test
//! loom_uffd_event`.
#![cfg(loom)]

mod loom_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use loom::cell::UnsafeCell;
use maple_mm::uffd::{feature, UffdCtx, UffdMsg, UFFD_API, UFFD_USER_MODE_ONLY};
use maple_mm::{loom_knobs, Mm, MmError};

use loom_support::{count_execution, explore, explore_twin, Defuse, Knob};

/// The address-space layout the event changes (0 before, 1 after), as the monitor's fill and
/// the generator's change touch it.
struct Layout(UnsafeCell<u64>);

// SAFETY: accessed only through loom's `UnsafeCell` checks, which report unordered accesses.
unsafe impl Sync for Layout {}

const FROM: u64 = 0x1000_0000;
const TO: u64 = 0x2000_0000;
const LEN: u64 = 0x3000;
/// The features the fork event's child context is created with.
const CHILD_FEATURES: u64 = feature::EVENT_REMAP | feature::EVENT_FORK;

/// Fills over the exploration that got through the gate, and that got `EAGAIN`.
static FILLED: AtomicUsize = AtomicUsize::new(0);
static AGAIN: AtomicUsize = AtomicUsize::new(0);

fn model() {
    count_execution();
    let mm = Defuse::new(Mm::new());
    // A blocking context (no O_NONBLOCK): the monitor's read sleeps on the context's wait queue.
    let ctx = Defuse::new(UffdCtx::new(&mm, UFFD_USER_MODE_ONLY, false).expect("userfaultfd"));
    ctx.api(UFFD_API, feature::EVENT_REMAP).expect("UFFDIO_API");
    let layout = Defuse::new(Arc::new(Layout(UnsafeCell::new(0))));

    let monitor = {
        let (ctx, layout) = (Arc::clone(&ctx), Arc::clone(&layout));
        loom::thread::spawn(move || {
            let (ctx, layout) = (Defuse::new(ctx), Defuse::new(layout));
            // SAFETY: a read behind the fill gate (loom checks it is ordered with the change).
            match ctx.loom_fill(|| layout.0.with(|p| unsafe { *p })) {
                Ok(seen) => {
                    assert_eq!(
                        seen, 0,
                        "a fill ran on the changed layout before the event was read"
                    );
                    FILLED.fetch_add(1, Ordering::Relaxed);
                }
                Err(MmError::Again) => {
                    AGAIN.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("fill: {e}"),
            }
            let msg = Defuse::new(ctx.read(false).expect("read"));
            match *msg {
                UffdMsg::Remap { from, to, len } => {
                    assert_eq!((from, to, len), (FROM, TO, LEN), "a torn message");
                }
                ref m => panic!("unexpected message {m:?}"),
            }
            // SAFETY: after the event was read (loom checks the read is ordered after the change).
            let now = layout.0.with(|p| unsafe { *p });
            assert_eq!(now, 1, "the event was read but its change is not visible");
            // The second event (FIFO): a fork's, carrying the child's context, which must be
            // seen as the generator made it.
            let msg = Defuse::new(ctx.read(false).expect("read"));
            match &*msg {
                UffdMsg::Fork { ctx: child } => {
                    assert!(
                        child.is_initialized(),
                        "the child's context seen uninitialised"
                    );
                    assert_eq!(
                        child.features() & CHILD_FEATURES,
                        CHILD_FEATURES,
                        "a torn context"
                    );
                }
                m => panic!("unexpected message {m:?}"),
            }
        })
    };

    // The generator: mremap_userfaultfd_prep, the move, mremap_userfaultfd_complete.
    ctx.loom_event_prep();
    // SAFETY: the event's change (loom checks it is ordered with every fill that got through).
    layout.0.with_mut(|p| unsafe { *p = 1 });
    let read = ctx.loom_event_complete(UffdMsg::Remap {
        from: FROM,
        to: TO,
        len: LEN,
    });
    assert!(read, "the generator returned before its event was read");
    // dup_userfaultfd / dup_userfaultfd_complete: a fork event with the child's new context.
    ctx.loom_event_prep();
    let child = UffdCtx::with_features(&mm, CHILD_FEATURES);
    let read = ctx.loom_event_complete(UffdMsg::Fork { ctx: child });
    assert!(
        read,
        "the generator returned before its fork event was read"
    );
    assert_eq!(ctx.mmap_changing(), 0, "mmap_changing left raised");
    monitor.join().expect("monitor");
}

#[test]
fn a_fill_never_runs_on_a_layout_an_unread_event_changed() {
    let _k = Knob::none();
    FILLED.store(0, Ordering::Relaxed);
    AGAIN.store(0, Ordering::Relaxed);
    let (n, d) = explore("event handshake vs fill", model);
    let (filled, again) = (
        FILLED.load(Ordering::Relaxed),
        AGAIN.load(Ordering::Relaxed),
    );
    eprintln!("    outcomes: fill before the event {filled}, EAGAIN {again}");
    assert!(filled > 0 && again > 0, "both outcomes must occur");
    assert!(d.as_secs() < 60, "{n} executions took {d:?}");
}

#[test]
fn twin_not_waiting_for_the_read_fails() {
    let msg = explore_twin(
        "event completion without waiting for the read",
        loom_knobs::set_event_no_wait,
        model,
    );
    assert!(
        msg.contains("changed layout") || msg.contains("before its"),
        "unexpected failure: {msg}"
    );
}

#[test]
fn twin_checking_mmap_changing_without_the_lock_fails() {
    let msg = explore_twin(
        "fill gate without map_changing_lock",
        loom_knobs::set_fill_without_lock,
        model,
    );
    assert!(
        msg.contains("Causality violation") || msg.contains("changed layout"),
        "unexpected failure: {msg}"
    );
}
