//! Target `snapshot`: arbitrary bytes fed to the snapshot readers (feature `serde`), as postcard
//! and as JSON. Neither may panic; whatever either accepts must be a tree that validates, whose
//! ranges are ordered and disjoint, and that survives a round trip through both formats
//! unchanged.

use maple_tree::{MapleTree, Value};

/// The ranges of `t` with their entries' integers, in order.
fn ranges(t: &MapleTree<Value>) -> Vec<(u64, u64, u64)> {
    let guard = t.pin();
    t.iter(&guard)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect()
}

/// Checks an accepted tree.
fn check(t: &MapleTree<Value>) {
    t.validate().expect("an accepted snapshot validates");
    let rs = ranges(t);
    assert_eq!(rs.len(), t.len(), "len counts the ranges");
    for w in rs.windows(2) {
        assert!(w[0].1 < w[1].0, "ranges ordered and disjoint: {w:?}");
    }
    let bytes = postcard::to_allocvec(t).expect("serialise");
    let back: MapleTree<Value> = postcard::from_bytes(&bytes).expect("own postcard reads back");
    assert_eq!(ranges(&back), rs, "postcard round trip");
    assert_eq!(back.is_alloc(), t.is_alloc());
    let json = serde_json::to_vec(t).expect("serialise");
    let back: MapleTree<Value> = serde_json::from_slice(&json).expect("own JSON reads back");
    assert_eq!(ranges(&back), rs, "JSON round trip");
}

/// What the input decodes to in each format.
pub fn describe(data: &[u8]) -> String {
    let show = |r: Result<MapleTree<Value>, String>| match r {
        Ok(t) => format!("kind alloc={} ranges {:?}", t.is_alloc(), ranges(&t)),
        Err(e) => format!("refused: {e}"),
    };
    format!(
        "postcard: {}\njson: {}",
        show(postcard::from_bytes(data).map_err(|e| e.to_string())),
        show(serde_json::from_slice(data).map_err(|e| e.to_string())),
    )
}

/// Runs one input.
pub fn run(data: &[u8]) {
    if let Ok(t) = postcard::from_bytes::<MapleTree<Value>>(data) {
        check(&t);
    }
    if let Ok(t) = serde_json::from_slice::<MapleTree<Value>>(data) {
        check(&t);
    }
}
