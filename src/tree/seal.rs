//! Seals: the in-place writes that a reader holding an older pivot could misread, held back
//! until a grace period has passed.
//!
//! Two in-place writes of RCU mode leave readers behind with a value the writer no longer has:
//!
//! * **A lowered pivot** (`+1` and three-way appends lower `pivot[end]` of a leaf; the append
//!   split's climb lowers `pivot[o]` of the first ancestor with room). A reader that loaded the
//!   old pivot before the store may load the slot it bounds at any later time. If the writer
//!   then re-points that slot (an exact fit, or a child replaced by copy-on-write), the reader
//!   pairs the old bound with the new word: an entry over a range that never held it, or a new
//!   node read with a maximum it never had (its words beyond the end are zero: an empty internal
//!   slot).
//! * **A shrunk node** (the append split keeps the full leaf — and full ancestors — and lowers
//!   the pivot above them). A reader that read the old maximum keeps reading the node up to it,
//!   beyond the node's new end. If the writer then appends into the node, those words change
//!   under that reader.
//!
//! So each such store **seals** what it left behind: a lowered pivot seals re-pointing the slot
//! it bounds (the node's last slot is bounded by its max, never by a lowered pivot), a shrunk
//! node seals every in-place write beyond its end (appends). A sealed write is done by copy-on-write instead, which readers see
//! whole or not at all (see [`super::node`]'s publication protocol, rows P10–P11).
//!
//! A seal lifts when every guard that was pinned at the sealing store is gone: seals carry a
//! generation; the writer defers (crossbeam `Guard::defer`, the same grace period that frees
//! retired nodes) a closure that publishes "every generation up to `g` is lifted". One lift is
//! outstanding at a time; seals made meanwhile get the next generation. A reader pinned after the
//! lift sees the lowered pivots and the new maximum (the epoch's fences order the sealing stores
//! before the deferral), so it cannot misread anything the writer does next.
//!
//! Exclusive mode (`&mut` tree) has no readers: it neither seals nor checks, and starting it
//! drops every seal. Seals are writer-private (behind the writer lock); a stale seal of a node
//! that was freed, whose address a new node reuses, only makes that node copy-on-write for a
//! while — never the other way round.

use alloc::sync::Arc;
use core::cell::Cell;
#[cfg(feature = "std")]
use core::hash::{BuildHasherDefault, Hasher};

use crossbeam_epoch::Guard;

use super::node::Live;
use super::pending::Pending;
use crate::sync::Ordering;

/// What is sealed in one node.
#[derive(Clone, Copy, Debug)]
struct Seal {
    /// Offsets whose pivot was lowered in place (bit `i`: `pivot[i]`).
    lowered: u16,
    /// The node's maximum shrank in place.
    shrunk: bool,
    /// Generation of the latest sealing store.
    gen: u64,
}

impl Seal {
    const fn new(gen: u64) -> Self {
        Seal {
            lowered: 0,
            shrunk: false,
            gen,
        }
    }

    fn merge(&mut self, older: Seal) {
        self.lowered |= older.lowered;
        self.shrunk |= older.shrunk;
    }
}

/// The seals by node address: a hash map with std; without std (core and alloc have no hash
/// map) a `BTreeMap`, which the writer keeps small (see `lift`).
#[cfg(feature = "std")]
type ByNode = std::collections::HashMap<usize, Seal, BuildHasherDefault<AddrHasher>>;
#[cfg(not(feature = "std"))]
type ByNode = alloc::collections::BTreeMap<usize, Seal>;

/// Hashes a node address: nodes are at least 8-byte aligned, so the low bits carry nothing.
#[cfg(feature = "std")]
#[derive(Default)]
struct AddrHasher(u64);

#[cfg(feature = "std")]
impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        let x = (n as u64 >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 29);
    }
}

/// The writer's seals (see the module docs).
pub(crate) struct Seals {
    by_node: ByNode,
    /// The node sealed last and its seal, not yet merged into `by_node` (consecutive appends
    /// into one leaf seal the same node again and again).
    last: Option<(usize, Seal)>,
    /// Generation of seals made now.
    gen: u64,
    /// A seal of generation `gen` exists that no scheduled lift covers yet.
    dirty: bool,
    /// The generation the outstanding lift will release.
    pending: Option<u64>,
    /// The writer's last reading of `lifted`. Checks use it rather than the atomic: it only
    /// lags, which keeps seals in force longer, never shorter.
    lifted_seen: u64,
    /// Generation of the latest shrunk seal (`may_extend` needs no lookup when it is lifted).
    shrunk_gen: u64,
    /// A write was turned into copy-on-write by a seal since the last lift was scheduled: the
    /// next lift is handed to the collector at once (`Guard::flush`) instead of with the local
    /// bag, which in-order builds, whose seals block nothing, never pay for.
    wanted: Cell<bool>,
}

impl Seals {
    pub(crate) fn new() -> Self {
        Seals {
            by_node: ByNode::default(),
            last: None,
            gen: 1,
            dirty: false,
            pending: None,
            lifted_seen: 0,
            shrunk_gen: 0,
            wanted: Cell::new(false),
        }
    }

    /// Drops every seal: no reader can exist (exclusive mode started).
    pub(crate) fn clear(&mut self) {
        self.by_node.clear();
        self.last = None;
    }

    fn live(&self, n: Live<'_>) -> Option<Seal> {
        let key = n.addr();
        let s = match self.last {
            Some((k, s)) if k == key => s,
            _ if self.by_node.is_empty() => return None,
            _ => *self.by_node.get(&key)?,
        };
        (s.gen > self.lifted_seen).then_some(s)
    }

    /// Whether slot `offset` of `n` may be re-pointed in place. `last` says the slot is the
    /// node's last (its bound is the node's max, a pivot that was never lowered).
    pub(crate) fn may_repoint(&self, n: Live<'_>, offset: usize, last: bool) -> bool {
        if crate::sync::knobs::ignore_seals() || crate::sync::knobs::ignore_repoint_seals() {
            return true;
        }
        let ok = last || self.live(n).is_none_or(|s| s.lowered & (1 << offset) == 0);
        self.want_unless(ok)
    }

    /// Whether the writer may write beyond `n`'s end in place (append into it).
    #[inline]
    pub(crate) fn may_extend(&self, n: Live<'_>) -> bool {
        if crate::sync::knobs::ignore_seals() {
            return true;
        }
        if self.shrunk_gen <= self.lifted_seen {
            return true;
        }
        // `live`, without building its `Option<Seal>`: this runs on every append while a
        // shrink waits for its lift.
        let sealed = |s: &Seal| s.shrunk && s.gen > self.lifted_seen;
        let key = n.addr();
        let ok = match &self.last {
            Some((k, s)) if *k == key => !sealed(s),
            _ if self.by_node.is_empty() => true,
            _ => !self.by_node.get(&key).is_some_and(sealed),
        };
        self.want_unless(ok)
    }

    #[inline]
    fn want_unless(&self, ok: bool) -> bool {
        if !ok {
            self.wanted.set(true);
        }
        ok
    }

    /// Records that `pivot[offset]` of `n` was lowered in place. The lift is scheduled by the
    /// next [`schedule`](Self::schedule), which must come after the lowering store.
    #[inline]
    pub(crate) fn lowered(&mut self, n: Live<'_>, offset: usize) {
        let key = n.addr();
        self.dirty = true;
        match &mut self.last {
            // Consecutive appends into one leaf: the seal is the cached one.
            Some((k, s)) if *k == key => {
                s.lowered |= 1 << offset;
                s.gen = self.gen;
            }
            _ => self.seal(key, |s| s.lowered |= 1 << offset),
        }
    }

    /// The node at `addr` was retired: the writer never writes it again, so its seal, if it is
    /// the cached one, is dropped instead of moving into the map with the next seal (the RCU
    /// fill retires the leaf its appends sealed, every eighth append of an in-order build). A
    /// seal of a retired node left in the map would be harmless: it can only make a node that
    /// later reuses the address copy-on-write for a while.
    #[inline]
    pub(crate) fn forget(&mut self, addr: usize) {
        if matches!(self.last, Some((k, _)) if k == addr) {
            self.last = None;
        }
    }

    /// Records that `n`'s maximum shrank in place (as for [`lowered`](Self::lowered)).
    pub(crate) fn shrunk(&mut self, n: Live<'_>) {
        self.shrunk_gen = self.gen;
        self.seal(n.addr(), |s| s.shrunk = true);
    }

    fn seal(&mut self, key: usize, f: impl FnOnce(&mut Seal)) {
        let gen = self.gen;
        self.dirty = true;
        if let Some((k, s)) = &mut self.last {
            if *k == key {
                f(s);
                s.gen = gen;
                return;
            }
        }
        let lifted = self.lifted_seen;
        if let Some((k, s)) = self.last.take() {
            if s.gen > lifted {
                self.by_node.insert(k, s);
            }
        }
        let mut s = Seal::new(gen);
        if let Some(older) = self.by_node.remove(&key) {
            if older.gen > lifted {
                s.merge(older);
            }
        }
        f(&mut s);
        self.last = Some((key, s));
    }

    /// The lifted generation as the deferred lift published it in `shared` (the tree's RCU
    /// shared state, [`Pending::lifted`]; 0 before the first lift).
    #[inline]
    fn lifted_now(shared: &Pending) -> u64 {
        // ORDERING: P18 (pairs with the deferred lift's Release store below).
        shared.lifted.load(Ordering::Acquire)
    }

    /// Collects a finished lift and schedules the next one if seals wait for it. Called at the
    /// start of every RCU-mode write, so always after the stores of the seals it covers: the
    /// grace period starts after them. `shared`: the tree's RCU shared state (the same for
    /// every RCU-mode write of the tree), which holds the lifted generation.
    #[inline]
    pub(crate) fn schedule<'g>(
        &mut self,
        shared: &Arc<Pending>,
        guard: impl FnOnce() -> &'g Guard,
    ) {
        match self.pending {
            Some(p) if Self::lifted_now(shared) < p => {}
            None if !self.dirty => {}
            _ => self.schedule_slow(shared, guard()),
        }
    }

    #[inline(never)]
    fn schedule_slow(&mut self, shared: &Arc<Pending>, guard: &Guard) {
        if let Some(p) = self.pending {
            let lifted = Self::lifted_now(shared);
            self.lifted_seen = lifted;
            if lifted < p {
                return;
            }
            self.pending = None;
            self.by_node.retain(|_, s| s.gen > lifted);
            if self.last.is_some_and(|(_, s)| s.gen <= lifted) {
                self.last = None;
            }
        }
        if !self.dirty {
            return;
        }
        let g = self.gen;
        let shared = Arc::clone(shared);
        // The closure runs once every guard pinned now (so every reader that could hold a value
        // the sealing stores replaced) has been dropped.
        // ORDERING: P18 (the lift, a grace period after the sealing stores).
        guard.defer(move || shared.lifted.store(g, Ordering::Release));
        if self.wanted.replace(false) {
            // Hand the deferral to the collector now rather than when the local bag fills, so
            // the seal lifts after about two epoch advances.
            guard.flush();
        }
        self.pending = Some(g);
        self.gen += 1;
        self.dirty = false;
    }
}
