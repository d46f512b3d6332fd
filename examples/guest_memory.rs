//! A VMM's guest-physical address allocator: where each RAM slot of a virtual machine goes.
//!
//! An allocation tree (`MapleTree::new_alloc`) covers the guest's 64 GiB physical address space.
//! Fixed holes (the legacy low megabyte, PCI MMIO, the local/IO APIC page) are reserved with
//! `insert_range`; RAM slots are then placed at the lowest free 2 MiB-aligned address with
//! `alloc_range_aligned`, so the host can back each with huge pages. One slot is unplugged
//! (`erase`) and a smaller one lands in the hole it left. Finally the map is printed.
//!
//! `cargo run --release --example guest_memory`

use maple_tree::{Error, MapleTree};
use std::sync::Arc;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const HUGE: u64 = 2 * MIB; // alignment of every RAM slot
const GUEST_END: u64 = 64 * GIB - 1; // last guest-physical address

/// What a range of guest-physical addresses is used for (the tree's entry: `Arc<Region>`).
enum Region {
    Reserved(&'static str),
    Ram(&'static str),
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Region::Reserved(name) => write!(f, "reserved  {name}"),
            Region::Ram(name) => write!(f, "RAM       {name}"),
        }
    }
}

/// Places a RAM slot of `size` bytes at the lowest free 2 MiB-aligned address.
fn plug(tree: &MapleTree<Arc<Region>>, name: &'static str, size: u64) -> Result<u64, Error> {
    // Note the argument order: entry, size, align, then the window [min, max].
    tree.alloc_range_aligned(Arc::new(Region::Ram(name)), size, HUGE, 0, GUEST_END)
}

fn print_map(tree: &MapleTree<Arc<Region>>) {
    let guard = tree.pin();
    for (first, last, region) in tree.iter(&guard) {
        let size = last - first + 1;
        println!(
            "  {first:#011x}..={last:#011x} {:>6} MiB  {region}",
            size / MIB
        );
    }
}

fn main() -> Result<(), Error> {
    let tree = MapleTree::<Arc<Region>>::new_alloc();

    // Fixed holes: `insert_range` fails with `Error::Occupied` rather than overwrite anything.
    let holes = [
        (0..=MIB - 1, "legacy BIOS / VGA"),
        (0xC000_0000..=0xFEBF_FFFF, "PCI MMIO"),
        (0xFEC0_0000..=0xFEFF_FFFF, "IOAPIC / LAPIC"),
    ];
    for (range, name) in holes.clone() {
        tree.insert_range(range, Arc::new(Region::Reserved(name)))?;
    }
    let overlap = tree.insert_range(0xFEE0_0000..=0xFEE0_0FFF, Arc::new(Region::Reserved("x")));
    assert_eq!(overlap, Err(Error::Occupied));

    // Where would 1 GiB go? `empty_area_aligned` only looks (window first, then size, align).
    let probe = tree.empty_area_aligned(0, GUEST_END, GIB, HUGE)?;
    assert_eq!(probe, 2 * MIB); // the first 2 MiB boundary past the legacy megabyte

    let boot = plug(&tree, "boot RAM", 2 * GIB)?;
    let dimm0 = plug(&tree, "dimm0", GIB)?; // no room left below PCI MMIO: goes past the APICs
    let dimm1 = plug(&tree, "dimm1", 512 * MIB)?;
    let virtio = plug(&tree, "virtio-mem", 4 * GIB)?;
    println!("after plugging four slots:");
    print_map(&tree);

    assert_eq!(boot, probe);
    assert!(
        dimm0 > 0xFEFF_FFFF,
        "dimm0 at {dimm0:#x} is not past the holes"
    );
    for start in [boot, dimm0, dimm1, virtio] {
        assert_eq!(start % HUGE, 0, "{start:#x} is not 2 MiB-aligned");
    }
    for (range, _) in &holes {
        assert!(matches!(
            tree.get(*range.start()).as_deref(),
            Some(Region::Reserved(_))
        ));
    }

    // Unplug dimm0: `erase` removes the whole range containing the index and returns it.
    assert_eq!(tree.erase(dimm0 + 123), Some((dimm0, dimm0 + GIB - 1)));
    assert!(tree.get(dimm0).is_none());

    // 768 MiB does not fit in the 510 MiB left below PCI MMIO, so it takes dimm0's old place.
    let dimm2 = plug(&tree, "dimm2", 768 * MIB)?;
    assert_eq!(dimm2, dimm0);
    println!("after unplugging dimm0 and plugging dimm2 (768 MiB):");
    print_map(&tree);

    // Free space left, as ranges (`gaps` yields `RangeInclusive<u64>`), and a too-large request.
    let guard = tree.pin();
    let free: u64 = tree
        .gaps(0..=GUEST_END, &guard)?
        .map(|r| r.end() - r.start() + 1)
        .sum();
    let used: u64 = tree.iter(&guard).map(|(a, b, _)| b - a + 1).sum();
    assert_eq!(free + used, GUEST_END + 1);
    println!("free: {} MiB of {} GiB", free / MIB, (GUEST_END + 1) / GIB);

    // Which region does a guest access to the local APIC's page hit? `load_range` gives the
    // whole range and borrows the entry for as long as the guard lives.
    let (first, last, region) = tree.load_range(0xFEE0_0300, &guard).expect("mapped");
    println!("0xfee00300 is in {first:#x}..={last:#x}: {region}");
    assert!(matches!(region, Region::Reserved("IOAPIC / LAPIC")));
    assert_eq!(plug(&tree, "too big", 64 * GIB), Err(Error::NoRoom));
    assert_eq!(tree.count(), holes.len() + 4);
    Ok(())
}
