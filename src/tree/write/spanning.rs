//! The spanning store (`mas_wr_spanning_store`): a write whose range crosses leaves. Both
//! paths (to the leaves holding `first` and `last`) are consumed by one rebuild (`rebuild`).

use crate::entry::{Entry, Word};

use super::path::Path;
use super::WriteMode;
use super::Writer;
use crate::tree::node::Write;
use crate::tree::walk::Walker;

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// Stores `entry` over `[first, last]`, which crosses the leaf of `lw` (positioned on
    /// `first`); returns the range written (a NULL store widens).
    pub(crate) fn spanning_store(
        &mut self,
        lw: &Walker<'t, Write>,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> (u64, u64) {
        let mut rw = self.walker();
        rw.walk(last).expect("non-empty tree");
        let r = self.rebuild(
            Path::from_walker(lw),
            Some(Path::from_walker(&rw)),
            first,
            last,
            entry,
        );
        (r.first, r.last)
    }
}
