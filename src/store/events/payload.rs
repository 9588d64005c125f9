//! How a stored event payload is held once read: as a [`Value`] tree (what
//! the daemon's followers inspect) or as its stored text, checked but not
//! decoded ([`RawPayload`], what the HTTP event routes pass on). A tree
//! costs many times its text (a map node, a key and a value allocation per
//! small member): a megabyte of action arguments read as a tree weighs tens
//! of megabytes, read as text one.
//!
//! Both accept exactly the same payloads: the text is checked by the same
//! parser walk that builds a tree (the recursion limit, number range and
//! string escapes included), building nothing, so an event one reader
//! calls unreadable is unreadable to the other too. And both write the
//! same bytes: [`AsTree`] writes stored text as its tree would be written.

use std::collections::BTreeMap;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A payload as its stored JSON text, checked to decode.
pub type RawPayload = Box<RawValue>;

/// What an event's payload is read into.
pub trait Payload: Sized {
    /// The stored text `text` as a payload, or why it does not decode.
    fn decode(text: String) -> Result<Self, String>;
    /// A payload made in memory (the stand-in of an unreadable one).
    fn from_value(v: Value) -> Self;
}

impl Payload for Value {
    fn decode(text: String) -> Result<Self, String> {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    fn from_value(v: Value) -> Self {
        v
    }
}

impl Payload for RawPayload {
    fn decode(text: String) -> Result<Self, String> {
        serde_json::from_str::<Checked>(&text).map_err(|e| e.to_string())?;
        // Why no copy: the text is reused as is unless it has surrounding
        // whitespace or spare capacity (a decoded column has neither).
        RawValue::from_string(text).map_err(|e| e.to_string())
    }

    fn from_value(v: Value) -> Self {
        // A `Value` always serializes to JSON text that reads back.
        RawValue::from_string(v.to_string()).expect("a Value's text is JSON")
    }
}

/// Stored JSON text written exactly as its [`Value`] tree would be: an
/// object's members in key order (a `Value` map is sorted; stored text
/// need not be: a trigger appends its keys last), each scalar read and
/// written again. Without the tree: one level at a time, each object or
/// array is split into its members' text (borrowed, not copied), so what
/// is held at once is the members of the objects and arrays on one path.
pub struct AsTree<'a>(pub &'a RawValue);

impl Serialize for AsTree<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = self.0.get();
        match text.trim_start().as_bytes().first() {
            Some(b'{') => {
                // Duplicate keys: the last wins, as in a `Value` map.
                let members: BTreeMap<String, &RawValue> =
                    serde_json::from_str(text).map_err(S::Error::custom)?;
                let mut map = s.serialize_map(Some(members.len()))?;
                for (key, value) in &members {
                    map.serialize_entry(key, &AsTree(value))?;
                }
                map.end()
            }
            Some(b'[') => {
                let items: Vec<&RawValue> = serde_json::from_str(text).map_err(S::Error::custom)?;
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in &items {
                    seq.serialize_element(&AsTree(item))?;
                }
                seq.end()
            }
            _ => serde_json::from_str::<Value>(text)
                .map_err(S::Error::custom)?
                .serialize(s),
        }
    }
}

/// Any JSON, walked as [`Value`]'s `Deserialize` walks it (through
/// `deserialize_any`, so numbers and strings are read, not skipped) but
/// keeping nothing.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two readers agree on what decodes, and the text is kept as stored.
    #[test]
    fn raw_and_tree_accept_the_same_payloads() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let cases = [
            r#"{"a":1,"b":[true,null,"x"]}"#,
            r#"{"z":1,"a":{"k":"v"}}"#,
            r#"{"n":1e400}"#,
            r#"{"s":"\ud800"}"#,
            r#"{"s":"\ud83d\ude00"}"#,
            r#"{"a":1"#,
            r#"{"a":1} x"#,
            "not json",
            "",
            deep.as_str(),
        ];
        for text in cases {
            let tree = <Value as Payload>::decode(text.to_string());
            let raw = <RawPayload as Payload>::decode(text.to_string());
            assert_eq!(tree.is_ok(), raw.is_ok(), "{text:?}: {tree:?} / {raw:?}");
            if let (Err(t), Err(r)) = (&tree, &raw) {
                assert_eq!(t, r, "{text:?}: the same explanation");
            }
            if let Ok(raw) = raw {
                assert_eq!(raw.get(), text, "kept as stored");
            }
        }
    }

    /// Stored text is written byte for byte as its tree is.
    #[test]
    fn as_tree_writes_what_the_tree_writes() {
        for text in [
            r#"{"z":1,"a":{"y":[3,{"q":null,"b":"\u00e9\n\/"}],"x":1.50},"m":true}"#,
            r#"{"k":1,"k":2}"#,
            r#"[ 1e2 , -0.0, 12345678901234567890, 1.7976931348623157e308 ]"#,
            r#""a \"quoted\" string""#,
            r#"{}"#,
            r#"[]"#,
            r#"null"#,
        ] {
            let tree: Value = serde_json::from_str(text).unwrap();
            let raw = <RawPayload as Payload>::decode(text.to_string()).unwrap();
            assert_eq!(
                serde_json::to_string(&AsTree(&raw)).unwrap(),
                serde_json::to_string(&tree).unwrap(),
                "{text}"
            );
        }
    }
}
