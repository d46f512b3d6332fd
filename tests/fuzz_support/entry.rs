//! The tracked entry type: every value knows its serial number, and a shared ledger records
//! creations and drops, so a harness can check that each entry that went into a tree is dropped
//! exactly once, and no earlier than the model says it left the tree.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Creation and drop bookkeeping shared by every [`Tracked`] of one run.
#[derive(Default)]
pub struct Ledger {
    next_serial: AtomicU64,
    created: AtomicU64,
    dropped: AtomicU64,
    live: Mutex<BTreeSet<u64>>,
}

impl Ledger {
    /// A fresh ledger.
    pub fn new() -> Arc<Self> {
        Arc::new(Ledger::default())
    }

    /// Entries created so far (clones included).
    pub fn created(&self) -> u64 {
        self.created.load(Ordering::SeqCst)
    }

    /// Entries dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst)
    }

    /// The serial the next entry will get.
    pub fn next_serial(&self) -> u64 {
        self.next_serial.load(Ordering::SeqCst)
    }

    /// Serials of the entries not dropped yet.
    pub fn live(&self) -> BTreeSet<u64> {
        self.live.lock().unwrap().clone()
    }

    fn register(&self) -> u64 {
        let s = self.next_serial.fetch_add(1, Ordering::SeqCst);
        self.created.fetch_add(1, Ordering::SeqCst);
        assert!(self.live.lock().unwrap().insert(s), "serial {s} reused");
        s
    }
}

/// A value with a serial number; dropping it is recorded in its [`Ledger`].
pub struct Tracked {
    /// The value chosen by the input (what the model compares besides the serial).
    pub val: u64,
    /// Unique per created value (clones get new serials).
    pub serial: u64,
    ledger: Arc<Ledger>,
}

/// The entry type the targets store.
pub type E = Box<Tracked>;

impl Tracked {
    /// A new boxed entry registered in `ledger`.
    pub fn new_entry(ledger: &Arc<Ledger>, val: u64) -> E {
        let serial = ledger.register();
        Box::new(Tracked {
            val,
            serial,
            ledger: Arc::clone(ledger),
        })
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        let serial = self.ledger.register();
        Tracked {
            val: self.val,
            serial,
            ledger: Arc::clone(&self.ledger),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let was_live = self.ledger.live.lock().unwrap().remove(&self.serial);
        self.ledger.dropped.fetch_add(1, Ordering::SeqCst);
        assert!(
            was_live,
            "entry serial {} (val {}) dropped twice",
            self.serial, self.val
        );
    }
}
