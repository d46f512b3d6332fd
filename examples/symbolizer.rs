//! An interval map for symbolization: which function does a code address belong to?
//!
//! A profiler or debugger loads a symbol table (start address, size, name) and maps each
//! function's address range to its name. Names are `Arc<String>` entries: an entry is one
//! pointer-sized word, so an unsized `Box<str>` or `Arc<str>` cannot be stored, but a sized
//! `String` behind a `Box` or an `Arc` can. Lookups: `load_range` under a guard gives the
//! function's whole range (a `RangeInclusive<u64>`) and borrows its name; `get` hands out an
//! `Arc` clone to keep. Iteration lists the functions in an address window.
//!
//! `cargo run --release --example symbolizer`

use std::ops::RangeInclusive;
use std::sync::Arc;

use maple_tree::MapleTree;

/// A small symbol table as `nm --size-sort`/`readelf -s` would give it: start, size, name.
/// Functions are padded to 16 bytes, so some addresses belong to no function.
const SYMBOLS: &[(u64, u64, &str)] = &[
    (0x401000, 0x2a, "_start"),
    (0x401030, 0x1c4, "main"),
    (0x401200, 0x88, "parse_args"),
    (0x401290, 0x300, "run_workload"),
    (0x401590, 0x45, "checksum"),
    (0x4015e0, 0x1000, "compress_block"),
    (0x4025e0, 0x60, "cleanup"),
];

/// `name+offset/size`, as the kernel prints a symbol in a stack trace.
fn symbolize(tree: &MapleTree<Arc<String>>, addr: u64) -> Option<String> {
    let guard = tree.pin();
    // The borrowed `&String` lives as long as `guard`; format it before the guard drops.
    let (range, name) = tree.load_range(addr, &guard)?;
    Some(format!(
        "{name}+{:#x}/{:#x}",
        addr - range.start(),
        range.end() - range.start() + 1
    ))
}

fn main() -> Result<(), maple_tree::Error> {
    let tree = MapleTree::<Arc<String>>::new();
    for &(start, size, name) in SYMBOLS {
        // `insert_range` refuses overlapping symbols (`Error::Occupied`); a half-open range
        // `start..start + size` works as well as an inclusive one.
        tree.insert_range(start..start + size, Arc::new(name.to_string()))?;
    }
    println!("{} functions loaded", tree.count());

    // A captured stack: each return address resolves to the function containing it.
    let stack = [0x4016f3, 0x4013a8, 0x401100, 0x40101f];
    for addr in stack {
        let sym = symbolize(&tree, addr).expect("in a function");
        println!("  {addr:#x}  {sym}");
    }
    assert_eq!(
        symbolize(&tree, 0x4016f3).as_deref(),
        Some("compress_block+0x113/0x1000")
    );
    assert_eq!(
        symbolize(&tree, 0x40101f).as_deref(),
        Some("_start+0x1f/0x2a")
    );

    // Padding between functions, and addresses outside the text, hold nothing.
    assert_eq!(symbolize(&tree, 0x40102a), None);
    assert_eq!(symbolize(&tree, 0x1234), None);

    // `get` clones the entry out (an `Arc` count bump): it outlives any guard and any later
    // change to the tree.
    let hot: Arc<String> = tree.get(0x401600).expect("compress_block");
    // Unload it: `erase` takes out the whole range containing the address and hands it back
    // with the tree's own reference to the name (dropped here). Our clone stays valid.
    let unloaded = tree.erase(0x401600).expect("loaded");
    assert_eq!(unloaded.range(), 0x4015e0..=0x4025df);
    assert_eq!(unloaded.entry().map(String::as_str), Some("compress_block"));
    drop(unloaded);
    assert_eq!(hot.as_str(), "compress_block");
    assert_eq!(tree.get(0x401600), None);
    println!("kept {hot:?} after unloading it");

    // All functions overlapping an address window, in address order: the first one starts
    // before the window, and a range iteration yields whole stored ranges, not clipped ones.
    // (`compress_block`, at 0x4015e0, is unloaded, so it is not listed.)
    let guard = tree.pin();
    let window = 0x401250..=0x4015ff;
    let found: Vec<(RangeInclusive<u64>, &str)> = tree
        .range(window.clone(), &guard)
        .map(|(r, name)| (r, name.as_str()))
        .collect();
    println!(
        "functions overlapping {:#x}..={:#x}:",
        window.start(),
        window.end()
    );
    for (r, name) in &found {
        println!("  {:#x}..={:#x}  {name}", r.start(), r.end());
    }
    assert_eq!(
        found,
        [
            (0x401200..=0x401287, "parse_args"),
            (0x401290..=0x40158f, "run_workload"),
            (0x401590..=0x4015d4, "checksum"),
        ]
    );
    Ok(())
}
