//! Root-to-node paths of a write (the levels a rebuild consumes) and the nodes it retires.

use smallvec::SmallVec;

use crate::tree::node::Write;
use crate::tree::node::{Kind, Live};
use crate::tree::walk::{Level, Walker};

/// A root-to-node path (index = depth).
#[derive(Clone)]
pub(crate) struct Path<'g> {
    pub(crate) levels: Levels<'g>,
}

/// Root-to-node levels of a path (inline up to eight levels).
pub(crate) type Levels<'g> = SmallVec<[Level<'g, Write>; 8]>;

/// Nodes a write unlinked, retired at its end.
pub(crate) type Retired<'g> = SmallVec<[Live<'g>; 8]>;

impl<'g> Path<'g> {
    pub(crate) fn from_walker(w: &Walker<'g, Write>) -> Self {
        Path {
            levels: Levels::from_slice(w.path()),
        }
    }

    /// The path to the next node at the level of this path's last node, if any.
    pub(crate) fn right_neighbour(&self, internal: Kind) -> Option<Path<'g>> {
        let k = self.levels.len() - 1;
        if self.levels[k].max == u64::MAX {
            return None;
        }
        // Climb to the deepest ancestor with a child after ours.
        let mut a = k;
        loop {
            if a == 0 {
                return None;
            }
            a -= 1;
            if self.levels[a + 1].max < self.levels[a].max {
                break;
            }
        }
        let mut levels = Levels::from_slice(&self.levels[..=a]);
        let parent = levels[a];
        let off = parent.offset + 1;
        levels[a].offset = off;
        let mut min = self.levels[a + 1].max + 1;
        let mut max = parent.node.slot_max(off, parent.max);
        let mut n = parent.node.child(off, internal);
        while levels.len() <= k {
            levels.push(Level {
                node: n,
                min,
                max,
                offset: 0,
            });
            if levels.len() <= k {
                max = n.slot_max(0, max);
                n = n.child(0, internal);
                let _ = &mut min;
            }
        }
        Some(Path { levels })
    }
}
