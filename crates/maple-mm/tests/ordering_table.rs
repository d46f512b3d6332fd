//! Every `Release`, `Acquire`, `AcqRel` or `SeqCst` access in `maple-mm` and `maple-poll` cites a
//! row of the ordering table in `src/sync.rs` (`// ORDERING: Mn` on the statement or just above
//! it), and every row cited exists.

use std::collections::BTreeSet;
use std::path::Path;

/// Lines above an ordering that the citation may sit on (a statement split over lines).
const WINDOW: usize = 6;

fn rows(table: &str) -> BTreeSet<String> {
    table
        .lines()
        .filter_map(|l| l.strip_prefix("//! | M"))
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| format!("M{n}"))
        .collect()
}

#[test]
fn every_ordering_site_cites_a_row() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = std::fs::read_to_string(root.join("src/sync.rs")).unwrap();
    let known = rows(&table);
    assert!(
        known.contains("M1") && known.len() >= 10,
        "table rows: {known:?}"
    );
    let mut missing = Vec::new();
    let mut cited = 0;
    // maple-poll's sources are next door in the repository, not in a packaged maple-mm.
    let poll = root.join("../maple-poll/src");
    for dir in std::iter::once(root.join("src")).chain(poll.is_dir().then_some(poll)) {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".rs") || name == "sync.rs" || name == "loom_knobs.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                for r in l.split("ORDERING: ").skip(1) {
                    for m in r.split(|c: char| c == ',' || c.is_whitespace()) {
                        if m.starts_with('M') {
                            let m = m.trim_end_matches(|c: char| !c.is_ascii_digit());
                            assert!(known.contains(m), "{name}:{}: unknown row {m}", i + 1);
                        }
                    }
                }
                let code = l.split("//").next().unwrap();
                let strong = ["Acquire", "Release", "AcqRel", "SeqCst"]
                    .iter()
                    .any(|o| code.contains(&format!("Ordering::{o}")));
                if !strong {
                    continue;
                }
                let from = i.saturating_sub(WINDOW);
                if lines[from..=i].iter().any(|x| x.contains("ORDERING: M")) {
                    cited += 1;
                } else {
                    missing.push(format!("{name}:{}: {}", i + 1, l.trim()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ordering sites without a citation:\n{}",
        missing.join("\n")
    );
    assert!(cited > 25, "only {cited} sites found: the scan is broken");
}
