//! What serde's derives let through and the schema does not: a JSON array standing for an
//! object (serde reads a struct from a sequence), duplicate keys (a map keeps the last),
//! NUL and control characters in names that become process arguments.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::{Grandchild, Spawn};

/// Any JSON, refusing an object with the same key twice (anywhere inside).
struct NoDuplicates;

impl<'de> Deserialize<'de> for NoDuplicates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NoDuplicates;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoDuplicates, A::Error> {
                let mut seen = std::collections::HashSet::new();
                while let Some(k) = map.next_key::<String>()? {
                    if !seen.insert(k.clone()) {
                        return Err(de::Error::custom(format!("has the key {k:?} twice")));
                    }
                    map.next_value::<NoDuplicates>()?;
                }
                Ok(NoDuplicates)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NoDuplicates, A::Error> {
                while seq.next_element::<NoDuplicates>()?.is_some() {}
                Ok(NoDuplicates)
            }
            fn visit_bool<E>(self, _: bool) -> Result<NoDuplicates, E> {
                Ok(NoDuplicates)
            }
            fn visit_i64<E>(self, _: i64) -> Result<NoDuplicates, E> {
                Ok(NoDuplicates)
            }
            fn visit_u64<E>(self, _: u64) -> Result<NoDuplicates, E> {
                Ok(NoDuplicates)
            }
            fn visit_f64<E>(self, _: f64) -> Result<NoDuplicates, E> {
                Ok(NoDuplicates)
            }
            fn visit_str<E>(self, _: &str) -> Result<NoDuplicates, E> {
                Ok(NoDuplicates)
            }
            fn visit_unit<E>(self) -> Result<NoDuplicates, E> {
                Ok(NoDuplicates)
            }
        }
        d.deserialize_any(V)
    }
}

fn no_duplicates(text: &str) -> Result<(), String> {
    serde_json::from_str::<NoDuplicates>(text)
        .map(|_| ())
        .map_err(|e| {
            let s = e.to_string();
            // serde_json appends " at line 1 column N"; keep the key, drop the position.
            s.split(" at line ").next().unwrap_or(&s).to_string()
        })
}

/// `value` at `path` must be an object when present.
fn object(v: &Value, path: &str) -> Result<(), String> {
    let mut cur = v;
    for part in path.split('.') {
        match cur.get(part) {
            Some(next) => cur = next,
            None => return Ok(()),
        }
    }
    if cur.is_object() {
        Ok(())
    } else {
        Err(format!(
            "field `{path}`: expected an object, found {}",
            kind(cur)
        ))
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The header's shape, before serde reads it: an object with objects where the format
/// has them, and no key twice.
pub(crate) fn check_header(v: &Value, text: &str) -> Result<(), String> {
    if !v.is_object() {
        return Err(format!("is not a JSON object but {}", kind(v)));
    }
    no_duplicates(text)?;
    let keys = pi_grammar::Agent::ALL.map(|a| a.spec().header_key);
    for key in keys {
        object(v, key)?;
    }
    for key in keys {
        object(v, &format!("{key}.unverified"))?;
    }
    for path in [
        "scenario",
        "expect",
        "expect.flags",
        "expect.effective",
        "process",
        "process.on_sigterm",
        "process.on_sigint",
        "process.on_sighup",
        "redactions",
        "origin",
    ] {
        object(v, path)?;
    }
    Ok(())
}

fn clean_word(field: &str, s: &str) -> Result<(), String> {
    if s.chars().any(|c| c == '\0') {
        return Err(format!("record field `{field}`: contains a NUL character"));
    }
    Ok(())
}

/// A `spawn` record's value: an object (with an object `grandchild`), no key twice, an
/// id that is a name, and command lines that can be process arguments.
pub(crate) fn spawn(text: &str) -> Result<Spawn, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("record field `spawn`: {e}"))?;
    if !v.is_object() {
        return Err(format!(
            "record field `spawn`: expected an object, found {}",
            kind(&v)
        ));
    }
    no_duplicates(text).map_err(|e| format!("record field `spawn` {e}"))?;
    object(&v, "grandchild")
        .map_err(|e| format!("record {e}").replace("`grandchild`", "`spawn.grandchild`"))?;
    let s: Spawn = serde_json::from_value(v).map_err(|e| format!("record field `spawn`: {e}"))?;
    if s.id.is_empty() || s.id.chars().any(char::is_control) {
        return Err(format!(
            "record field `spawn.id`: must be a non-empty name without control characters, found {:?}",
            s.id
        ));
    }
    let argv = |field: &str, a: &Option<Vec<String>>| -> Result<(), String> {
        if let Some(a) = a {
            if a.is_empty() {
                return Err(format!("record field `{field}`: an empty command line"));
            }
            for w in a {
                clean_word(field, w)?;
            }
        }
        Ok(())
    };
    argv("spawn.argv", &s.argv)?;
    if let Some(Grandchild { argv: a, .. }) = &s.grandchild {
        argv("spawn.grandchild.argv", a)?;
    }
    Ok(s)
}
