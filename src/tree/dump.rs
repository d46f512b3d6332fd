//! Text (`mt_dump`) and Graphviz DOT dumps.

use alloc::{
    format,
    string::{String, ToString},
    vec::Vec,
};
use core::fmt::Write;

use crate::entry::{Entry, ZERO_WORD};

use super::node::{node_word, Kind, NodeRef, Slot};
use super::write::WriteGuard;

fn word_text(w: usize) -> String {
    if w == 0 {
        "(nil)".to_string()
    } else if w == ZERO_WORD {
        "zero (257)".to_string()
    } else if w & 1 == 1 {
        format!("value {} ({:#x}) [{:#x}]", w >> 1, w >> 1, w)
    } else {
        format!("{w:#x}")
    }
}

impl<E: Entry> WriteGuard<'_, E> {
    /// A text dump of every node, depth first, in the spirit of the kernel's `mt_dump`.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// assert!(w.dump().starts_with("maple_tree flags alloc, height 1"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let root = self.view().node();
        let _ = writeln!(
            out,
            "maple_tree flags {}, height {} root {:#x}",
            if self.internal == Kind::ARange {
                "alloc"
            } else {
                "range"
            },
            self.state().height,
            root.map_or(0, node_word)
        );
        if let Some(r) = root {
            self.dump_node(&mut out, r.view().unbranded(), 0, u64::MAX, 0);
        }
        out
    }

    fn dump_node(&self, out: &mut String, n: NodeRef<'_>, min: u64, max: u64, depth: usize) {
        let pad = "  ".repeat(depth);
        let (paddr, poff) = n.parent_info();
        let _ = writeln!(
            out,
            "{pad}{:#x}-{:#x}: node {:#x} depth {depth} type {} parent {:#x} slot {poff}",
            min,
            max,
            n.addr(),
            n.kind().name(),
            paddr
        );
        for (i, (lo, hi, s)) in n.slots(min, max, self.internal).enumerate() {
            match s {
                Slot::Entry(w) => {
                    let _ = writeln!(out, "{pad}  {lo:#x}-{hi:#x}: {}", word_text(w));
                }
                Slot::Child(c) => {
                    if n.kind() == Kind::ARange {
                        let _ = writeln!(out, "{pad}  [{i}] gap {}", n.gap(i));
                    }
                    self.dump_node(out, c, lo, hi, depth + 1);
                }
            }
        }
    }

    /// The tree as a Graphviz DOT graph (one record per node, slot ranges as fields).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// assert!(w.dump_dot().starts_with("digraph"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dump_dot(&self) -> String {
        let mut out = String::from("digraph maple {\n  node [shape=record, fontname=monospace];\n");
        if let Some(r) = self.view().node() {
            self.dot_node(&mut out, r.view().unbranded(), 0, u64::MAX);
        }
        out.push_str("}\n");
        out
    }

    fn dot_node(&self, out: &mut String, n: NodeRef<'_>, min: u64, max: u64) {
        let id = n.addr();
        let mut fields = Vec::new();
        let mut children = Vec::new();
        for (i, (lo, hi, s)) in n.slots(min, max, self.internal).enumerate() {
            if let Slot::Entry(w) = s {
                let label = if w == 0 {
                    "-".to_string()
                } else {
                    word_text(w)
                };
                fields.push(format!(
                    "<s{i}> {lo:#x}-{hi:#x}\\n{}",
                    label.replace(['<', '>', '{', '}', '|'], "_")
                ));
            } else {
                let gap = if n.kind() == Kind::ARange {
                    format!(" gap {}", n.gap(i))
                } else {
                    String::new()
                };
                fields.push(format!("<s{i}> {lo:#x}-{hi:#x}{gap}"));
                children.push((i, s.child(), lo, hi));
            }
        }
        let _ = writeln!(out, "  n{id:x} [label=\"{}\"];", fields.join("|"));
        for (i, c, lo, hi) in children {
            let _ = writeln!(out, "  n{id:x}:s{i} -> n{:x};", c.addr());
            self.dot_node(out, c, lo, hi);
        }
    }
}
