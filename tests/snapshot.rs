//! Snapshots (feature `serde`): round trips in a text and a binary format against the trees
//! they came from and a `BTreeMap` model, and one test per class of bad input, each refused
//! with its error and without a tree that fails `validate`.
#![cfg(feature = "serde")]

use std::collections::BTreeMap;
use std::sync::Arc;

use maple_tree::snapshot::SNAPSHOT_VERSION;
use maple_tree::{Entry, MapleTree, Value};
use proptest::prelude::*;

/// Every range with its entry's integer, in order.
fn ranges(tree: &MapleTree<Value>) -> Vec<(u64, u64, u64)> {
    let guard = tree.pin();
    tree.iter(&guard)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect()
}

/// `n` ranges of varied lengths with gaps between some of them.
fn sample(n: u64, alloc: bool) -> MapleTree<Value> {
    let mut tree = if alloc {
        MapleTree::new_alloc()
    } else {
        MapleTree::new()
    };
    let mut w = tree.exclusive();
    let mut at = 0u64;
    for i in 0..n {
        let len = 1 + (i * 7919) % 13;
        w.store_range(at..=at + len - 1, Value::new(i * 3)).unwrap();
        at += len + (i % 3);
    }
    drop(w);
    tree
}

#[test]
fn json_round_trip_keeps_kind_ranges_and_entries() {
    for alloc in [false, true] {
        for n in [0, 1, 17, 1_000, 100_000] {
            let tree = sample(n, alloc);
            let text = serde_json::to_string(&tree).unwrap();
            let back: MapleTree<Value> = serde_json::from_str(&text).unwrap();
            assert_eq!(back.is_alloc(), alloc);
            assert_eq!(ranges(&back), ranges(&tree), "n = {n}");
            assert_eq!(back.len(), tree.len());
            back.validate().unwrap();
        }
    }
}

#[test]
fn postcard_round_trip_of_a_million_ranges() {
    // The debug profile checks the same path on fewer ranges.
    let n = if cfg!(debug_assertions) {
        50_000
    } else {
        1_000_000
    };
    for alloc in [false, true] {
        let tree = sample(n, alloc);
        let bytes = postcard::to_allocvec(&tree).unwrap();
        let back: MapleTree<Value> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.is_alloc(), alloc);
        assert_eq!(back.len(), n as usize);
        assert_eq!(ranges(&back), ranges(&tree));
        back.validate().unwrap();
    }
}

#[test]
fn owners_share_a_format() {
    let tree = MapleTree::<Box<String>>::new();
    tree.store_range(10..=19, Box::new("text".into())).unwrap();
    tree.store_range(40..=49, Box::new("data".into())).unwrap();
    let text = serde_json::to_string(&tree).unwrap();
    assert_eq!(
        text,
        format!(
            r#"{{"version":{SNAPSHOT_VERSION},"kind":"Range","ranges":[[10,19,"text"],[40,49,"data"]]}}"#
        )
    );
    // The same bytes restore into another owner of the same data.
    let arcs: MapleTree<Arc<String>> = serde_json::from_str(&text).unwrap();
    assert_eq!(arcs.get(45).as_deref().map(String::as_str), Some("data"));
    let bytes = postcard::to_allocvec(&tree).unwrap();
    let boxes: MapleTree<Box<String>> = postcard::from_bytes(&bytes).unwrap();
    let guard = boxes.pin();
    assert_eq!(boxes.load(12, &guard).map(|s| s.as_str()), Some("text"));
}

#[test]
fn fields_in_any_order_but_kind_before_ranges() {
    let t: MapleTree<Value> =
        serde_json::from_str(r#"{"kind":"Range","ranges":[[1,2,3]],"version":1}"#).unwrap();
    assert_eq!(ranges(&t), [(1, 2, 3)]);
    let e = serde_json::from_str::<MapleTree<Value>>(r#"{"version":1,"ranges":[],"kind":"Range"}"#)
        .unwrap_err();
    assert!(
        e.to_string().contains("`kind` must come before `ranges`"),
        "{e}"
    );
}

/// Deserialises `json`, which must fail with a message containing `want`.
fn refused(json: &str, want: &str) {
    match serde_json::from_str::<MapleTree<Value>>(json) {
        Ok(t) => panic!("accepted {json}: {:?}", ranges(&t)),
        Err(e) => assert!(e.to_string().contains(want), "{json}: {e} (want {want:?})"),
    }
}

#[test]
fn refuses_another_version() {
    refused(
        r#"{"version":2,"kind":"Range","ranges":[]}"#,
        "version 2 (this crate reads version 1)",
    );
    refused(r#"[0,"Range",[]]"#, "version 0");
}

#[test]
fn refuses_an_unknown_kind() {
    refused(
        r#"{"version":1,"kind":"Sparse","ranges":[]}"#,
        "unknown variant `Sparse`",
    );
}

#[test]
fn refuses_an_inverted_range() {
    refused(
        r#"{"version":1,"kind":"Range","ranges":[[9,3,1]]}"#,
        "inverted range [9, 3]",
    );
}

#[test]
fn refuses_overlapping_ranges() {
    refused(
        r#"{"version":1,"kind":"Alloc","ranges":[[0,9,1],[5,12,2]]}"#,
        "range [5, 12] overlaps [0, 9]",
    );
    refused(
        r#"{"version":1,"kind":"Range","ranges":[[0,9,1],[9,9,2]]}"#,
        "range [9, 9] overlaps [0, 9]",
    );
}

#[test]
fn refuses_ranges_out_of_order() {
    refused(
        r#"{"version":1,"kind":"Range","ranges":[[10,19,1],[0,4,2]]}"#,
        "range [0, 4] out of order after [10, 19]",
    );
    refused(
        r#"{"version":1,"kind":"Range","ranges":[[10,19,1],[10,12,2]]}"#,
        "out of order",
    );
}

#[test]
fn refuses_a_value_too_large() {
    refused(
        &format!(
            r#"{{"version":1,"kind":"Range","ranges":[[0,0,{}]]}}"#,
            u64::MAX
        ),
        "an integer up to Value::MAX",
    );
}

#[test]
fn refuses_missing_and_repeated_fields() {
    refused(r#"{"version":1,"kind":"Range"}"#, "missing field `ranges`");
    refused(r#"{"kind":"Range","ranges":[]}"#, "missing field `version`");
    refused(
        r#"{"version":1,"ranges":[]}"#,
        "`kind` must come before `ranges`",
    );
    refused(
        r#"{"version":1,"kind":"Range","kind":"Alloc","ranges":[]}"#,
        "duplicate field `kind`",
    );
    refused(
        r#"{"version":1,"kind":"Range","ranges":[[1,2]]}"#,
        "invalid length 2",
    );
}

/// An entry whose word is whatever it was read as: a faulty `Entry` implementation, which
/// the tree must refuse where its word is reserved.
#[derive(Debug, serde::Deserialize)]
struct RawWord(usize);

// SAFETY: a test entry that owns nothing: any word converts back to the same `RawWord`, and
// its borrowed form is a copy.
unsafe impl Entry for RawWord {
    type Borrowed<'a> = usize;
    fn into_word(self) -> usize {
        self.0
    }
    unsafe fn from_word(word: usize) -> Self {
        RawWord(word)
    }
    unsafe fn borrow<'a>(word: usize) -> Self::Borrowed<'a> {
        word
    }
}

#[test]
fn refuses_a_reserved_entry_word() {
    let ok: MapleTree<RawWord> =
        serde_json::from_str(r#"{"version":1,"kind":"Range","ranges":[[0,0,4097]]}"#).unwrap();
    ok.validate().unwrap();
    let e = serde_json::from_str::<MapleTree<RawWord>>(
        r#"{"version":1,"kind":"Range","ranges":[[0,0,4097],[5,6,2]]}"#,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("entry of [5, 6] refused: reserved entry"),
        "{e}"
    );
}

proptest! {
    /// Any sequence of stores and erases, snapshotted and restored in both formats, gives the
    /// model's ranges back (the model: a BTreeMap from each index to its value, over a small
    /// index space).
    #[test]
    fn round_trip_matches_the_model(
        alloc in any::<bool>(),
        ops in prop::collection::vec((0u64..200, 0u64..20, 0u64..1000, any::<bool>()), 0..120),
    ) {
        let tree = if alloc { MapleTree::new_alloc() } else { MapleTree::new() };
        let mut model = BTreeMap::new();
        for (first, len, v, erase) in ops {
            let last = first + len;
            if erase {
                tree.erase_range(first..=last).unwrap();
                for i in first..=last { model.remove(&i); }
            } else {
                tree.store_range(first..=last, Value::new(v)).unwrap();
                for i in first..=last { model.insert(i, v); }
            }
        }
        let json: MapleTree<Value> = serde_json::from_str(&serde_json::to_string(&tree).unwrap()).unwrap();
        let bin: MapleTree<Value> = postcard::from_bytes(&postcard::to_allocvec(&tree).unwrap()).unwrap();
        for back in [&json, &bin] {
            back.validate().unwrap();
            prop_assert_eq!(back.is_alloc(), alloc);
            prop_assert_eq!(ranges(back), ranges(&tree));
            let guard = back.pin();
            let flat: BTreeMap<u64, u64> = back
                .iter(&guard)
                .flat_map(|(r, v)| r.map(move |i| (i, v.get())))
                .collect();
            prop_assert_eq!(&flat, &model);
        }
    }

    /// Arbitrary bytes never panic the binary reader, and whatever it accepts validates.
    #[test]
    fn arbitrary_bytes_are_refused_or_valid(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(t) = postcard::from_bytes::<MapleTree<Value>>(&bytes) {
            t.validate().unwrap();
        }
    }
}
