//! The split of a level (`mas_split`, and the kernel's bulk/rightmost packing): a level's items
//! that overflow one node are partitioned into node-sized parts, each written into a fresh node.

use smallvec::SmallVec;

use crate::entry::Entry;

use super::big_node::{Item, Items};
use super::node::Kind;
use super::node::Mode;
use super::rebuild::Rebuild;
use super::write::Writer;

impl<'t, E: Entry, M: Mode> Writer<'t, E, M> {
    /// Partitions the level's items into fresh nodes (a split if more than one); pushes them
    /// onto `new_items` (empty), the items of the parent level's run.
    pub(crate) fn split_level(&mut self, rb: &mut Rebuild<'t, '_>, new_items: &mut Items<'t>) {
        let parts = partition(
            rb.items,
            rb.kind,
            rb.run_max == u64::MAX,
            rb.entry_pos,
            rb.level == rb.leaf_level,
        );
        if parts.len() > 1 {
            rb.split = true;
        }
        let mut lo = rb.run_min;
        for &(a, b) in &parts {
            let hi = rb.items.get(b - 1).hi;
            let n = self.alloc_node(rb.kind);
            let part = &rb.items.as_slice()[a..b];
            self.write_items(&n, part, hi);
            let g = self.items_gap(rb.kind, part, lo);
            new_items.push(Item::fresh(hi, n, g));
            lo = hi.wrapping_add(1);
        }
    }
}

/// Item ranges `(start, end)` of the nodes a level is partitioned into.
type Parts = SmallVec<[(usize, usize); 8]>;

/// Splits `items` into node-sized parts `[a, b)`. Parts other than the last get at least the
/// minimum occupancy; leaves never end a non-last part on a NULL. When the run is on the right
/// edge and the write lands at its end (in-order appends), parts are packed full from the left,
/// as the kernel's bulk mode did; otherwise they are balanced. If moving a boundary off a NULL
/// would overfill a part, one more part is used.
pub(crate) fn partition(
    items: &Items<'_>,
    kind: Kind,
    right_edge: bool,
    entry_pos: usize,
    leaf: bool,
) -> Parts {
    let n = items.len();
    let cap = kind.slots();
    let min = kind.min_end() + 1;
    let null_at = |b: usize| leaf && items.get(b - 1).is_null();
    let valid = |bounds: &[usize]| {
        bounds.windows(2).enumerate().all(|(j, w)| {
            let len = w[1] - w[0];
            let last = j + 2 == bounds.len();
            len >= 1 && len <= cap && (last || (len >= min && !null_at(w[1])))
        })
    };
    let to_parts =
        |bounds: &[usize]| -> Parts { bounds.windows(2).map(|w| (w[0], w[1])).collect() };
    if right_edge && entry_pos + 2 >= n {
        let bounds = packed_bounds(n, cap, null_at);
        if valid(&bounds) {
            return to_parts(&bounds);
        }
    }
    let mut k = n.div_ceil(cap);
    loop {
        let bounds = balanced_bounds(n, k, cap, min, null_at);
        if valid(&bounds) {
            return to_parts(&bounds);
        }
        k += 1;
        assert!(k <= n, "maple tree: cannot partition {n} items");
    }
}

/// Part boundaries of `n` items packed full from the left (`cap` per part), a boundary that
/// would end a part on a NULL moved one left (the kernel's bulk/rightmost packing).
fn packed_bounds(n: usize, cap: usize, null_at: impl Fn(usize) -> bool) -> Bounds {
    let mut bounds: Bounds = smallvec::smallvec![0];
    let mut b = 0;
    while n - b > cap {
        let mut nb = b + cap;
        if null_at(nb) {
            nb -= 1;
        }
        bounds.push(nb);
        b = nb;
    }
    bounds.push(n);
    bounds
}

/// Part boundaries of `n` items in `k` balanced parts, boundaries moved off NULLs: right if the
/// right part can spare one, else left.
fn balanced_bounds(
    n: usize,
    k: usize,
    cap: usize,
    min: usize,
    null_at: impl Fn(usize) -> bool,
) -> Bounds {
    let (base, extra) = (n / k, n % k);
    let mut bounds: Bounds = smallvec::smallvec![0];
    let mut b = 0;
    for j in 0..k - 1 {
        b += base + usize::from(j < extra);
        bounds.push(b);
    }
    bounds.push(n);
    for j in 1..k {
        if null_at(bounds[j]) {
            let left = bounds[j] - bounds[j - 1];
            let right = bounds[j + 1] - bounds[j];
            if left < cap && right > min {
                bounds[j] += 1;
            } else {
                bounds[j] -= 1;
            }
        }
    }
    bounds
}

/// Boundaries `0 = b0 < b1 < ... < n` of the parts of a level.
type Bounds = SmallVec<[usize; 8]>;
