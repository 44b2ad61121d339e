//! Agents' JSON settings files, edited without disturbing the user's own
//! settings: keys keep their order (serde_json's map sorts them), values
//! outbox does not touch are kept as they were, and the file is written
//! back pretty-printed with two spaces.
//!
//! A small ordered tree, read through serde (so every JSON serde_json
//! accepts is accepted) and written through serde_json's pretty printer.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// A JSON value whose objects keep their keys in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// Anything but an object or an array, as serde_json reads it.
    Leaf(Value),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn object() -> Json {
        Json::Object(Vec::new())
    }

    pub fn string(s: &str) -> Json {
        Json::Leaf(Value::String(s.to_string()))
    }

    /// Parses `text`; an empty (or all-blank) file is an empty object.
    pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
        if text.trim().is_empty() {
            return Ok(Json::object());
        }
        serde_json::from_str(text)
    }

    /// Pretty-printed, two spaces, with a final newline.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a JSON tree serialises");
        s.push('\n');
        s
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The object member `key`, created as `default` when missing. None when
    /// `self` is not an object.
    pub fn entry(&mut self, key: &str, default: Json) -> Option<&mut Json> {
        let Json::Object(m) = self else { return None };
        let i = match m.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                m.push((key.to_string(), default));
                m.len() - 1
            }
        };
        Some(&mut m[i].1)
    }

    /// Sets member `key` (kept in place when it exists).
    #[cfg(test)]
    pub fn set(&mut self, key: &str, value: Json) {
        if let Some(slot) = self.entry(key, Json::Leaf(Value::Null)) {
            *slot = value;
        }
    }

    /// Removes member `key`.
    pub fn remove(&mut self, key: &str) {
        if let Json::Object(m) = self {
            m.retain(|(k, _)| k != key);
        }
    }

    /// Whether any string inside satisfies `f`.
    pub fn any_string(&self, f: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Json::Leaf(Value::String(s)) => f(s),
            Json::Leaf(_) => false,
            Json::Array(a) => a.iter().any(|v| v.any_string(f)),
            Json::Object(m) => m.iter().any(|(_, v)| v.any_string(f)),
        }
    }

    pub fn is_empty_container(&self) -> bool {
        match self {
            Json::Array(a) => a.is_empty(),
            Json::Object(m) => m.is_empty(),
            Json::Leaf(_) => false,
        }
    }
}

impl From<Value> for Json {
    fn from(v: Value) -> Json {
        match v {
            Value::Array(a) => Json::Array(a.into_iter().map(Json::from).collect()),
            // serde_json's map is sorted: build literal objects with `obj`.
            Value::Object(m) => Json::Object(m.into_iter().map(|(k, v)| (k, Json::from(v))).collect()),
            leaf => Json::Leaf(leaf),
        }
    }
}

/// An object with its members in the order given.
pub fn obj(members: &[(&str, Json)]) -> Json {
    Json::Object(members.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Leaf(v) => v.serialize(s),
            Json::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Json::Object(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Leaf(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Leaf(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Leaf(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Leaf(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Leaf(Value::String(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::Leaf(Value::String(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Leaf(Value::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Leaf(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Json::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut m: Vec<(String, Json)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            // A repeated key: the last one wins, as in serde_json.
            m.retain(|(old, _)| *old != k);
            m.push((k, v));
        }
        Ok(Json::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_values_their_form() {
        let text = r#"{"zeta": 1, "alpha": {"b": [1, 2.5, "x", null, true], "a": {}}, "mid": "é"}"#;
        let v = Json::parse(text).unwrap();
        let out = v.to_text();
        assert!(out.find("zeta").unwrap() < out.find("alpha").unwrap());
        assert!(out.find("\"b\"").unwrap() < out.find("\"a\"").unwrap());
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(Json::parse(&out).unwrap(), v, "stable");
        assert_eq!(Json::parse("  \n").unwrap(), Json::object());
        assert!(Json::parse("{").is_err());
    }

    #[test]
    fn entries() {
        let mut v = Json::parse(r#"{"a": 1}"#).unwrap();
        v.entry("hooks", Json::object()).unwrap().set("x", Json::string("y"));
        v.set("a", Json::string("z"));
        assert_eq!(v.to_text(), "{\n  \"a\": \"z\",\n  \"hooks\": {\n    \"x\": \"y\"\n  }\n}\n");
        assert!(v.any_string(&|s| s == "y"));
        v.remove("hooks");
        assert!(!v.any_string(&|s| s == "y"));
    }
}
