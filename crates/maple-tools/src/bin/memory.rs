//! Bytes per stored range after an in-order build of ranges `[10i, 10i+5]` = `i` (the goal in
//! BENCHMARKS.md: the kernel's tree needs 34.3 B/range for this shape; 30 is the stretch).
//!
//! Each map is built in a child process of its own (so RSS figures do not mix), which reports:
//! - heap: bytes held through the global allocator after the build, counted by a counting
//!   allocator (requested sizes, so allocator overhead is not included);
//! - RSS: growth of the resident set (`/proc/self/statm`) over the build, allocator overhead and
//!   free lists included;
//! - for the maple tree also `nodes`: (`nodes_allocated - nodes_freed`) × 256.
//!
//! `cargo run --release -p maple-tools --bin memory [-- N]` (N defaults to 1,000,000).

#[path = "../../../../benches/support/btree_range.rs"]
#[allow(dead_code)]
mod btree_range;

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

use maple_tree::{MapleTree, Options, Value};

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static HEAP: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the same arguments and only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        HEAP.fetch_add(l.size() as isize, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        HEAP.fetch_add(l.size() as isize, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        HEAP.fetch_sub(l.size() as isize, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        HEAP.fetch_add(new as isize - l.size() as isize, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn rss_bytes() -> i64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: i64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

const MAPS: &[(&str, &str)] = &[
    ("maple", "allocation tree (gap tracking), exclusive writer"),
    (
        "maple-rcu",
        "allocation tree, writes through the lock (RCU mode)",
    ),
    ("maple-range", "plain range tree (16-way internal nodes)"),
    (
        "maple-huge",
        "allocation tree, exclusive writer, nodes in huge-page chunks (`Options::huge_pages`)",
    ),
    ("btreemap", "std BTreeMap<u64, (u64, u64)> as a range map"),
    ("rangemap", "rangemap::RangeInclusiveMap<u64, u64>"),
    ("scc", "scc::TreeIndex<u64, (u64, u64)>"),
    ("skiplist", "crossbeam_skiplist::SkipMap<u64, (u64, u64)>"),
];

/// Builds one map in this process and prints `heap rss nodes` (nodes: 0 for peers).
fn child(name: &str, n: u64) {
    let (h0, r0) = (HEAP.load(Relaxed), rss_bytes());
    let mut nodes = 0u64;
    let mut height = 0usize;
    let keep: Box<dyn std::any::Any> = match name {
        "maple" | "maple-range" | "maple-huge" => {
            let mut t = MapleTree::<Value>::with_options(
                Options::new()
                    .alloc(name != "maple-range")
                    .huge_pages(name == "maple-huge"),
            );
            {
                let mut w = t.exclusive();
                for i in 0..n {
                    w.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
                }
            }
            let s = t.stats();
            nodes = s.nodes_allocated - s.nodes_freed;
            height = t.height();
            assert_eq!(t.get(10 * (n - 1)), Some(Value::new(n - 1)));
            Box::new(t)
        }
        "maple-rcu" => {
            let t = MapleTree::<Value>::new_alloc();
            for i in 0..n {
                t.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
            }
            // Let the epoch collector free what the build retired.
            for _ in 0..256 {
                t.pin().flush();
            }
            let s = t.stats();
            nodes = s.nodes_allocated - s.nodes_freed;
            height = t.height();
            assert_eq!(t.get(10 * (n - 1)), Some(Value::new(n - 1)));
            Box::new(t)
        }
        "btreemap" => {
            let mut m = btree_range::BTreeRangeMap::new();
            for i in 0..n {
                m.push(10 * i, 10 * i + 5, i);
            }
            assert_eq!(m.get(10 * (n - 1)), Some(n - 1));
            Box::new(m)
        }
        "rangemap" => {
            let mut m = rangemap::RangeInclusiveMap::<u64, u64>::new();
            for i in 0..n {
                m.insert(10 * i..=10 * i + 5, i);
            }
            assert_eq!(m.get(&(10 * (n - 1))), Some(&(n - 1)));
            Box::new(m)
        }
        "scc" => {
            let m = scc::TreeIndex::<u64, (u64, u64)>::new();
            for i in 0..n {
                m.insert_sync(10 * i, (10 * i + 5, i)).unwrap();
            }
            assert_eq!(m.len() as u64, n);
            Box::new(m)
        }
        "skiplist" => {
            let m = crossbeam_skiplist::SkipMap::<u64, (u64, u64)>::new();
            for i in 0..n {
                m.insert(10 * i, (10 * i + 5, i));
            }
            assert_eq!(m.len() as u64, n);
            Box::new(m)
        }
        _ => panic!("unknown map {name}"),
    };
    let (h1, r1) = (HEAP.load(Relaxed), rss_bytes());
    println!("{} {} {} {}", h1 - h0, r1 - r0, nodes * 256, height);
    drop(keep);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "--child" {
        child(&args[2], args[3].parse().unwrap());
        return;
    }
    let n: u64 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let exe = std::env::current_exe().unwrap();
    println!("{n} ranges [10i, 10i+5] built in order; bytes per range (kernel: 34.3, goal <= 34, stretch 30)\n");
    println!("| map | heap B/range | RSS B/range | nodes × 256 B/range | height | what |");
    println!("|---|---:|---:|---:|---:|---|");
    for &(name, what) in MAPS {
        let out = Command::new(&exe)
            .args(["--child", name, &n.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Vec<f64> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let (nodes, height) = if v[2] > 0.0 {
            (format!("{:.1}", v[2] / n as f64), format!("{}", v[3]))
        } else {
            ("".into(), "".into())
        };
        println!(
            "| {name} | {:.1} | {:.1} | {nodes} | {height} | {what} |",
            v[0] / n as f64,
            v[1] / n as f64
        );
    }
}
