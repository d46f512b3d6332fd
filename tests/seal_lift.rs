//! A seal lifts one grace period after the store that made it, never earlier — on
//! crossbeam's default collector, alone in its test binary (one test), so that no other
//! thread's guard moves or holds back the process-wide epoch.
//!
//! A `+1` append (`mas_wr_append`) lowers the end pivot of a leaf in place and seals the slot
//! that pivot bounds: a reader that loaded the old pivot (the leaf's max) may load the slot at
//! any later time, and if an exact fit (`mas_wr_exact_fit`) had re-pointed it meanwhile, it
//! would pair the old bound with the new entry, a range that never held it. The seal makes
//! that exact fit copy the leaf instead (counted as `sealed_repoint`) until every guard pinned
//! before the append is gone.
//!
//! The writer lifts seals in batches: at the start of a write it defers (on its guard, as
//! `call_rcu` would) a closure that marks every generation up to `g` lifted, and seals made
//! after that belong to the next generation. A reader pinned after the deferral does not hold
//! that lift back — and it may still have loaded, before a later append, the pivot that append
//! lowers. So the seal of that append must survive the lift. The test drives exactly that:
//!
//! 1. an append seals a pivot (generation 1); the next write schedules its lift;
//! 2. the epoch advances once (a flush from the writer thread, which holds nothing), so the
//!    reader thread then pins in a later epoch than the lift's deferral;
//! 3. the reader loads the range of the leaf's last slot, `[30, MAX]`, and stays pinned;
//! 4. an append into that slot lowers its pivot to 39 and seals it;
//! 5. the epoch is advanced again, as far as the pinned reader lets it: the lift of step 1
//!    runs;
//! 6. the exact fit of `[30, 39]`, with the reader still pinned, must be `sealed_repoint`,
//!    not an in-place `exact_fit`.
//!
//! If the lift scheduled in step 1 also covered the seals of later writes (a generation
//! counter bumped before the lift's generation is taken rather than after), step 6 would
//! re-point the slot in place under the reader. The unit test
//! `a_lift_scheduled_before_a_seal_does_not_lift_it` (`src/tree/tests.rs`) drives the same
//! sequence on a tree with its own collector and checks what the reader then reads.

use std::sync::mpsc;
use std::thread;

use maple_tree::{MapleTree, Value};

/// Advances the default collector's epoch by one step if no other guard holds it back (and
/// hands this thread's deferred closures to the collector first).
fn advance() {
    crossbeam_epoch::pin().flush();
}

#[test]
fn seal_of_an_append_outlives_a_lift_scheduled_before_it() {
    let mut t = MapleTree::<Value>::new();
    {
        // Exclusive mode: no seal yet.
        let mut g = t.exclusive();
        g.store_range(0..=9, Value::new(1)).unwrap();
        g.store_range(10..=19, Value::new(2)).unwrap();
        g.store_range(20..=u64::MAX, Value::new(3)).unwrap();
    }
    let t = &t;
    let (to_reader, pin_now) = mpsc::channel::<()>();
    let (to_writer, pinned) = mpsc::channel::<(u64, u64, u64)>();
    thread::scope(|s| {
        s.spawn(move || {
            pin_now.recv().unwrap();
            let guard = t.pin();
            let (r, v) = t.load_range(35, &guard).unwrap();
            to_writer.send((*r.start(), *r.end(), v.get())).unwrap();
            // Pinned until the writer is done.
            pin_now.recv().unwrap();
            drop(guard);
        });

        // 1. A +1 append seals pivot 2 (generation 1); the next write schedules its lift.
        let s0 = t.stats();
        t.store_range(30..=u64::MAX, Value::new(4)).unwrap();
        t.store_range(0..=9, Value::new(11)).unwrap();
        let s1 = t.stats();
        assert_eq!(s1.append_end, s0.append_end + 1, "{s1:?}");
        // 2. One advance before the reader pins.
        advance();
        // 3. The reader loads [30, MAX] and stays pinned.
        to_reader.send(()).unwrap();
        assert_eq!(pinned.recv().unwrap(), (30, u64::MAX, 4));
        // 4. An append into the reader's slot: pivot 3 lowered to 39, sealed.
        t.store_range(40..=u64::MAX, Value::new(5)).unwrap();
        let s2 = t.stats();
        assert_eq!(s2.append_end, s1.append_end + 1, "{s2:?}");
        // 5. The epoch advances as far as the reader lets it; the lift of step 1 runs.
        for _ in 0..4 {
            advance();
        }
        // 6. The exact fit of the sealed slot, under the reader.
        t.store_range(30..=39, Value::new(6)).unwrap();
        let s3 = t.stats();
        to_reader.send(()).unwrap();
        assert_eq!(
            (s3.sealed_repoint, s3.exact_fit),
            (s2.sealed_repoint + 1, s2.exact_fit),
            "the exact fit re-pointed a slot sealed by an append made after the lift was \
             scheduled, under a reader that loaded the old bound: {s3:?}"
        );
    });
    t.validate().unwrap();
    let g = t.pin();
    let now: Vec<_> = t
        .iter(&g)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect();
    assert_eq!(
        now,
        [
            (0, 9, 11),
            (10, 19, 2),
            (20, 29, 3),
            (30, 39, 6),
            (40, u64::MAX, 5)
        ]
    );
}
