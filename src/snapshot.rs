//! Snapshots (the `serde` feature): a tree serialises as its format version, its kind and its
//! ranges with their entries, in index order; deserialising rebuilds it in one streaming pass
//! (each range stored as it is read, no intermediate buffer) and checks every range against
//! the ones before it, so that no input, however made, yields a tree that fails
//! [`validate`](crate::MapleTree::validate).
//!
//! The format, in serde's data model:
//!
//! ```text
//! struct MapleTree {
//!     version: u32,                  // SNAPSHOT_VERSION; others are refused
//!     kind: enum { Range, Alloc },   // MapleTree::new() or MapleTree::new_alloc()
//!     ranges: seq of (u64, u64, E),  // (first, last, entry), in index order
//! }
//! ```
//!
//! An entry serialises as its borrowed form does (`Box<T>` and `Arc<T>` as `T`, [`Value`] as
//! its integer), so the same bytes restore into any owner of the same data.
//!
//! What is checked while reading, each answered by its [`SnapshotError`] (through the format's
//! own error type, as serde's `Error::custom`): the version, the kind, `first <= last`, ranges
//! in ascending order and not overlapping, and each entry accepted by the tree (no reserved
//! word, [`Error::Reserved`](crate::Error::Reserved)). Missing or repeated fields are the
//! format's usual errors.

use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::entry::{Entry, Value};
use crate::tree::{MapleTree, Options, WriteGuard};

/// The snapshot format this crate writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Why a snapshot was refused while it was read (the rest of the input is not read).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A format version this crate does not read.
    Version(u32),
    /// A range whose first index is above its last.
    Inverted {
        /// The range's first index.
        first: u64,
        /// The range's last index.
        last: u64,
    },
    /// A range that starts at or below the end of the range before it, and after its start.
    Overlap {
        /// The range before.
        prev: (u64, u64),
        /// The range read.
        range: (u64, u64),
    },
    /// A range that starts at or before the start of the range before it.
    Unordered {
        /// The range before.
        prev: (u64, u64),
        /// The range read.
        range: (u64, u64),
    },
    /// An entry the tree refuses (its word is reserved).
    Entry {
        /// The range it was read for.
        range: (u64, u64),
        /// The tree's answer.
        error: crate::Error,
    },
    /// The `ranges` field came before `kind` (a format that keeps fields in order always
    /// writes `kind` first).
    KindAfterRanges,
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Version(v) => write!(
                f,
                "maple tree snapshot: version {v} (this crate reads version {SNAPSHOT_VERSION})"
            ),
            SnapshotError::Inverted { first, last } => {
                write!(f, "maple tree snapshot: inverted range [{first}, {last}]")
            }
            SnapshotError::Overlap { prev, range } => write!(
                f,
                "maple tree snapshot: range [{}, {}] overlaps [{}, {}]",
                range.0, range.1, prev.0, prev.1
            ),
            SnapshotError::Unordered { prev, range } => write!(
                f,
                "maple tree snapshot: range [{}, {}] out of order after [{}, {}]",
                range.0, range.1, prev.0, prev.1
            ),
            SnapshotError::Entry { range, error } => write!(
                f,
                "maple tree snapshot: entry of [{}, {}] refused: {error}",
                range.0, range.1
            ),
            SnapshotError::KindAfterRanges => {
                write!(
                    f,
                    "maple tree snapshot: field `kind` must come before `ranges`"
                )
            }
        }
    }
}

impl core::error::Error for SnapshotError {}

/// The tree's kind as a snapshot names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Kind {
    /// [`MapleTree::new`].
    Range,
    /// [`MapleTree::new_alloc`].
    Alloc,
}

/// Serialises the tree under its writer lock, so that the snapshot is one state of the tree
/// (writers wait meanwhile; lock-free readers do not).
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tree = MapleTree::new_alloc();
/// tree.store_range(0x1000..=0x1fff, Value::new(7))?;
/// let json = serde_json::to_string(&tree)?;
/// assert_eq!(json, r#"{"version":1,"kind":"Alloc","ranges":[[4096,8191,7]]}"#);
/// let back: MapleTree<Value> = serde_json::from_str(&json)?;
/// assert!(back.is_alloc());
/// assert_eq!(back.get(0x1800), Some(Value::new(7)));
/// # Ok(())
/// # }
/// ```
impl<E: Entry> Serialize for MapleTree<E>
where
    for<'a> E::Borrowed<'a>: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let kind = if self.is_alloc() {
            Kind::Alloc
        } else {
            Kind::Range
        };
        let w = self.lock();
        let mut s = serializer.serialize_struct("MapleTree", 3)?;
        s.serialize_field("version", &SNAPSHOT_VERSION)?;
        s.serialize_field("kind", &kind)?;
        s.serialize_field("ranges", &Ranges(&w))?;
        s.end()
    }
}

/// The ranges of a locked tree, as a sequence of known length.
struct Ranges<'a, 't, E: Entry>(&'a WriteGuard<'t, E>);

impl<E: Entry> Serialize for Ranges<'_, '_, E>
where
    for<'a> E::Borrowed<'a>: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (r, e) in self.0 {
            seq.serialize_element(&(*r.start(), *r.end(), e))?;
        }
        seq.end()
    }
}

/// Rebuilds a tree from its snapshot, checking every range (see the [module](self) docs);
/// the tree gets the default [`Options`] of its kind.
impl<'de, E: Entry + Deserialize<'de>> Deserialize<'de> for MapleTree<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct("MapleTree", FIELDS, TreeVisitor(PhantomData))
    }
}

const FIELDS: &[&str] = &["version", "kind", "ranges"];

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Version,
    Kind,
    Ranges,
}

struct TreeVisitor<E>(PhantomData<E>);

impl<E: Entry> TreeVisitor<E> {
    fn new_tree(kind: Kind) -> MapleTree<E> {
        MapleTree::with_options(Options::new().alloc(kind == Kind::Alloc))
    }
}

fn check_version<Er: de::Error>(v: u32) -> Result<(), Er> {
    if v == SNAPSHOT_VERSION {
        Ok(())
    } else {
        Err(Er::custom(SnapshotError::Version(v)))
    }
}

impl<'de, E: Entry + Deserialize<'de>> Visitor<'de> for TreeVisitor<E> {
    type Value = MapleTree<E>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a maple tree snapshot (version, kind, ranges)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let version: u32 = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        check_version::<A::Error>(version)?;
        let kind: Kind = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        let mut tree = Self::new_tree(kind);
        seq.next_element_seed(RangesSeed(&mut tree))?
            .ok_or_else(|| de::Error::invalid_length(2, &self))?;
        Ok(tree)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut version = None;
        let mut tree: Option<MapleTree<E>> = None;
        let mut ranges = false;
        while let Some(key) = map.next_key()? {
            match key {
                Field::Version => {
                    if version.is_some() {
                        return Err(de::Error::duplicate_field("version"));
                    }
                    let v: u32 = map.next_value()?;
                    check_version::<A::Error>(v)?;
                    version = Some(v);
                }
                Field::Kind => {
                    if tree.is_some() {
                        return Err(de::Error::duplicate_field("kind"));
                    }
                    tree = Some(Self::new_tree(map.next_value()?));
                }
                Field::Ranges => {
                    if ranges {
                        return Err(de::Error::duplicate_field("ranges"));
                    }
                    let Some(t) = tree.as_mut() else {
                        return Err(de::Error::custom(SnapshotError::KindAfterRanges));
                    };
                    map.next_value_seed(RangesSeed(t))?;
                    ranges = true;
                }
            }
        }
        if version.is_none() {
            return Err(de::Error::missing_field("version"));
        }
        let tree = tree.ok_or_else(|| de::Error::missing_field("kind"))?;
        if !ranges {
            return Err(de::Error::missing_field("ranges"));
        }
        Ok(tree)
    }
}

/// Reads the `ranges` sequence straight into the tree being built.
struct RangesSeed<'a, E: Entry>(&'a mut MapleTree<E>);

impl<'de, E: Entry + Deserialize<'de>> DeserializeSeed<'de> for RangesSeed<'_, E> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, E: Entry + Deserialize<'de>> Visitor<'de> for RangesSeed<'_, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence of (first, last, entry) in index order")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut w = self.0.exclusive();
        let mut prev: Option<(u64, u64)> = None;
        while let Some((first, last, entry)) = seq.next_element::<(u64, u64, E)>()? {
            let range = (first, last);
            let refuse = if first > last {
                Some(SnapshotError::Inverted { first, last })
            } else {
                match prev {
                    Some(p) if first <= p.0 => Some(SnapshotError::Unordered { prev: p, range }),
                    Some(p) if first <= p.1 => Some(SnapshotError::Overlap { prev: p, range }),
                    _ => None,
                }
            };
            if let Some(e) = refuse {
                return Err(de::Error::custom(e));
            }
            if let Err(error) = w.store_range(first..=last, entry) {
                return Err(de::Error::custom(SnapshotError::Entry { range, error }));
            }
            prev = Some(range);
        }
        Ok(())
    }
}

/// A [`Value`] serialises as its integer.
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.get())
    }
}

/// A [`Value`] deserialises from an integer up to [`Value::MAX`]; a larger one is an error.
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = u64::deserialize(deserializer)?;
        Value::try_new(v).ok_or_else(|| {
            de::Error::invalid_value(de::Unexpected::Unsigned(v), &"an integer up to Value::MAX")
        })
    }
}
