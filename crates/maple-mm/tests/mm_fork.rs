//! Replaying real layouts: `/proc/PID/maps` captures (and the running process's own maps)
//! parse and render back byte for byte, fork both ways gives the child the parent's text minus
//! `DONTCOPY` VMAs, and parent and child are independent afterwards.

use maple_mm::{
    Advice, DupMode, MapFlags, MapSource, Mm, MmConfig, NoHook, Prot, VmFlags, PAGE_SIZE,
};

fn captures() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/maps");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("data/maps")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "maps"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 3, "expected the committed captures");
    if let Ok(live) = std::fs::read_to_string("/proc/self/maps") {
        out.push(("/proc/self/maps".into(), live));
    }
    out
}

#[test]
fn real_maps_round_trip() {
    for (name, text) in captures() {
        let mm =
            Mm::from_maps(&text, MmConfig::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        mm.validate().unwrap();
        assert_eq!(mm.render_maps(), text, "{name}");
        let lines = text.lines().count();
        assert_eq!(
            mm.map_count() + usize::from(mm.gate().is_some()),
            lines,
            "{name}"
        );
    }
}

/// Forks every captured layout with every `dontcopy_every`-th VMA marked `DONTCOPY` (0: none)
/// and checks the child's text, then that parent and child are independent.
fn fork_real_layouts(mode: DupMode, dontcopy_every: usize) {
    for (name, text) in captures() {
        let parent = Mm::from_maps(&text, MmConfig::default()).unwrap();
        // Mark VMAs DONTCOPY (as MADV_DONTFORK would).
        let marked: Vec<(u64, u64)> = parent
            .snapshot()
            .iter()
            .enumerate()
            .filter(|(i, _)| dontcopy_every != 0 && i % dontcopy_every == 3)
            .map(|(_, v)| (v.start, v.end))
            .collect();
        for &(s, e) in &marked {
            parent.madvise(s, e - s, Advice::DontFork).unwrap();
        }
        assert_eq!(
            parent.render_maps(),
            text,
            "{name}: madvise changed the visible layout"
        );
        let expect: String = text
            .lines()
            .filter(|l| {
                let start = u64::from_str_radix(l.split('-').next().unwrap(), 16).unwrap();
                !marked.iter().any(|&(s, _)| s == start)
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let child = parent.fork_with(mode, &mut NoHook).unwrap();
        child
            .validate()
            .unwrap_or_else(|e| panic!("{name} {mode:?}: {e}"));
        assert_eq!(child.render_maps(), expect, "{name} {mode:?}");
        assert!(child
            .snapshot()
            .iter()
            .all(|v| !v.desc.flags.contains(VmFlags::DONTCOPY)));
        // Independent afterwards: changes on either side stay there.
        let first = child.snapshot()[0].clone();
        child.munmap(first.start, first.end - first.start).unwrap();
        let hole = parent
            .mmap(
                0,
                16 * PAGE_SIZE,
                Prot::READ | Prot::WRITE,
                MapFlags::PRIVATE,
                MapSource::Anon,
            )
            .unwrap();
        assert_eq!(
            parent.vma_lookup(first.start).map(|v| v.start),
            Some(first.start)
        );
        assert!(child.vma_lookup(hole).is_none());
        parent.munmap(hole, 16 * PAGE_SIZE).unwrap();
        assert_eq!(
            parent.render_maps(),
            text,
            "{name}: parent changed by the child"
        );
        parent.validate().unwrap();
        drop(child);
        parent.validate().unwrap();
    }
}

#[test]
fn fork_of_real_layouts_old_way_minus_dontcopy() {
    fork_real_layouts(DupMode::Append, 7);
}

#[test]
fn fork_of_real_layouts_new_way() {
    fork_real_layouts(DupMode::Dup, 0);
}

#[test]
fn fork_of_real_layouts_new_way_minus_dontcopy() {
    fork_real_layouts(DupMode::Dup, 7);
}

#[test]
fn both_ways_build_the_same_tree_content() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/maps/python3-threads.maps"
    ))
    .unwrap();
    let parent = Mm::from_maps(&text, MmConfig::default()).unwrap();
    let a = parent.fork_with(DupMode::Append, &mut NoHook).unwrap();
    let b = parent.fork_with(DupMode::Dup, &mut NoHook).unwrap();
    // The dup way keeps the parent's tree shape: every store was an exact fit.
    let stats = b.tree().stats();
    assert_eq!(stats.exact_fit as usize, parent.map_count());
    assert_eq!(
        (
            stats.node_store,
            stats.split,
            stats.rebalance,
            stats.spanning_store
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(b.tree().height(), parent.tree().height());
    assert!(a.tree().stats().append_three_way + a.tree().stats().append_end > 0);
    assert_eq!(a.render_maps(), b.render_maps());
    assert_eq!(a.exit(), parent.map_count());
}
