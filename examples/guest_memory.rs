//! A VMM's guest-physical address allocator: where each RAM slot of a virtual machine goes.
//!
//! An allocation tree (`MapleTree::new_alloc`) covers the guest's 64 GiB physical address space.
//! Fixed holes (the legacy low megabyte, PCI MMIO, the local/IO APIC page) are reserved with
//! `insert_range`; RAM slots are then placed at the lowest free 2 MiB-aligned address with
//! `alloc_range_aligned_with`, so the host can back each with huge pages, and each slot records
//! the range it was given. One slot is unplugged (`erase`, which hands back the slot) and a
//! smaller one lands in the hole it left. Finally the map is printed.
//!
//! `cargo run --release --example guest_memory`

use std::ops::{RangeInclusive, RangeToInclusive};
use std::sync::Arc;

use maple_tree::{Error, MapleTree};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const HUGE: u64 = 2 * MIB; // alignment of every RAM slot
const GUEST_END: u64 = 64 * GIB - 1; // last guest-physical address
/// The guest's whole physical address space, the window of every search.
const GUEST: RangeToInclusive<u64> = ..=GUEST_END;

/// What a range of guest-physical addresses is used for (the tree's entry: `Arc<Region>`).
#[derive(Debug)]
enum Region {
    Reserved(&'static str),
    /// A RAM slot, with the guest-physical range it was placed at.
    Ram {
        name: &'static str,
        gpa: RangeInclusive<u64>,
    },
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Region::Reserved(name) => write!(f, "reserved  {name}"),
            Region::Ram { name, .. } => write!(f, "RAM       {name}"),
        }
    }
}

/// Places a RAM slot of `size` bytes at the lowest free 2 MiB-aligned address and returns its
/// range. The `_with` form builds the entry from the range found, under the writer lock, so
/// the slot knows where it lives and no reader ever sees a placeholder there.
fn plug(
    tree: &MapleTree<Arc<Region>>,
    name: &'static str,
    size: u64,
) -> Result<RangeInclusive<u64>, Error> {
    // Window first, then size and alignment, then (here) the closure making the entry.
    tree.alloc_range_aligned_with(GUEST, size, HUGE, |gpa| Arc::new(Region::Ram { name, gpa }))
}

fn print_map(tree: &MapleTree<Arc<Region>>) {
    let guard = tree.pin();
    // Ranges come out as `RangeInclusive<u64>`, entries borrowed for as long as the guard lives.
    for (range, region) in tree.iter(&guard) {
        let size = range.end() - range.start() + 1;
        println!(
            "  {:#011x}..={:#011x} {:>6} MiB  {region}",
            range.start(),
            range.end(),
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

    // Where would 1 GiB go? `empty_area_aligned` only looks (window, size, alignment).
    let probe = tree.empty_area_aligned(GUEST, GIB, HUGE)?;
    assert_eq!(probe, 2 * MIB); // the first 2 MiB boundary past the legacy megabyte

    let boot = plug(&tree, "boot RAM", 2 * GIB)?;
    let dimm0 = plug(&tree, "dimm0", GIB)?; // no room left below PCI MMIO: goes past the APICs
    let dimm1 = plug(&tree, "dimm1", 512 * MIB)?;
    let virtio = plug(&tree, "virtio-mem", 4 * GIB)?;
    println!("after plugging four slots:");
    print_map(&tree);

    assert_eq!(boot, probe..=probe + 2 * GIB - 1);
    assert!(
        *dimm0.start() > 0xFEFF_FFFF,
        "dimm0 at {dimm0:#x?} is not past the holes"
    );
    for slot in [&boot, &dimm0, &dimm1, &virtio] {
        assert_eq!(slot.start() % HUGE, 0, "{slot:#x?} is not 2 MiB-aligned");
        // Each slot's entry records the very range the allocation returned.
        let region = tree.get(*slot.start()).expect("plugged");
        assert!(matches!(&*region, Region::Ram { gpa, .. } if gpa == slot));
    }
    for (range, _) in &holes {
        assert!(matches!(
            tree.get(*range.start()).as_deref(),
            Some(Region::Reserved(_))
        ));
    }

    // Unplug dimm0: `erase` removes the whole range containing the index and hands back that
    // range with its entry (borrowed here: a concurrent reader may still be looking at it).
    let unplugged = tree.erase(dimm0.start() + 123).expect("dimm0 is plugged");
    assert_eq!(unplugged.range(), dimm0);
    assert!(matches!(
        unplugged.entry(),
        Some(Region::Ram { name: "dimm0", .. })
    ));
    drop(unplugged); // the entry itself is freed once no reader can hold it
    assert!(tree.get(*dimm0.start()).is_none());

    // 768 MiB does not fit in the 510 MiB left below PCI MMIO, so it takes dimm0's old place.
    let dimm2 = plug(&tree, "dimm2", 768 * MIB)?;
    assert_eq!(dimm2.start(), dimm0.start());
    println!("after unplugging dimm0 and plugging dimm2 (768 MiB):");
    print_map(&tree);

    // Free space left, as ranges (`gaps` yields `RangeInclusive<u64>`), and a too-large request.
    let guard = tree.pin();
    let free: u64 = tree
        .gaps(GUEST, &guard)?
        .map(|r| r.end() - r.start() + 1)
        .sum();
    let used: u64 = tree
        .iter(&guard)
        .map(|(r, _)| r.end() - r.start() + 1)
        .sum();
    assert_eq!(free + used, GUEST_END + 1);
    println!("free: {} MiB of {} GiB", free / MIB, (GUEST_END + 1) / GIB);

    // Which region does a guest access to the local APIC's page hit? `load_range` gives the
    // whole range and borrows the entry for as long as the guard lives.
    let (range, region) = tree.load_range(0xFEE0_0300, &guard).expect("mapped");
    println!(
        "0xfee00300 is in {:#x}..={:#x}: {region}",
        range.start(),
        range.end()
    );
    assert_eq!(range, 0xFEC0_0000..=0xFEFF_FFFF);
    assert!(matches!(region, Region::Reserved("IOAPIC / LAPIC")));
    assert_eq!(plug(&tree, "too big", 64 * GIB), Err(Error::NoRoom));
    assert_eq!(tree.count(), holes.len() + 4);
    Ok(())
}
