//! The comparison of two normalized streams, message by message and field by field, with
//! the fields that legitimately differ between implementations ignored ([`IGNORED_FIELDS`]);
//! and of two whole documents ([`diff_documents`], for a stale expected file). Pure.

use serde::Serialize;
use serde_json::Value;

/// Fields that differ legitimately between implementations and are not compared:
/// `(message type, field)`. `invalid_lines` keep `line` and `bytes`.
pub const IGNORED_FIELDS: &[(&str, &str)] = &[
    ("terminal.failed", "message"),
    ("terminal.failed", "stderr_tail"),
    ("terminal.failed", "invalid_lines[].problem"),
    ("terminal.failed", "invalid_lines[].excerpt"),
];

/// A message with the ignored fields removed.
pub fn comparable(m: &Value) -> Value {
    let mut v = m.clone();
    let ty = m["type"].as_str().unwrap_or("").to_string();
    if let Some(obj) = v.as_object_mut() {
        for (t, field) in IGNORED_FIELDS {
            if *t != ty {
                continue;
            }
            match field.split_once("[].") {
                None => {
                    obj.remove(*field);
                }
                Some((arr, sub)) => {
                    if let Some(Value::Array(items)) = obj.get_mut(arr) {
                        for it in items {
                            if let Some(o) = it.as_object_mut() {
                                o.remove(sub);
                            }
                        }
                    }
                }
            }
        }
    }
    v
}

/// One difference: where, expected, actual (`None` = absent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    /// Where: the message's index, then the field's path (`[3].exit.code`).
    pub path: String,
    /// The expected value.
    pub expected: Option<Value>,
    /// The value found.
    pub actual: Option<Value>,
}

/// Differences found: the first `limit` kept, all counted.
struct Diffs {
    kept: Vec<FieldDiff>,
    total: usize,
    limit: usize,
}

impl Diffs {
    fn push(&mut self, path: String, e: Option<&Value>, a: Option<&Value>) {
        self.total += 1;
        if self.kept.len() < self.limit {
            self.kept.push(FieldDiff {
                path,
                expected: e.cloned(),
                actual: a.cloned(),
            });
        }
    }
}

/// Add the differences between `e` and `a`, found at `path`, to `out`.
fn diff_value(path: String, e: Option<&Value>, a: Option<&Value>, out: &mut Diffs) {
    match (e, a) {
        // Messages of different types differ as wholes, not field by field.
        (Some(Value::Object(eo)), Some(Value::Object(ao)))
            if eo.get("type").is_some() && eo.get("type") != ao.get("type") =>
        {
            out.push(path, e, a)
        }
        (Some(Value::Object(eo)), Some(Value::Object(ao))) => {
            let mut keys: Vec<&String> = eo.keys().chain(ao.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let at = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                diff_value(at, eo.get(k), ao.get(k), out);
            }
        }
        (Some(Value::Array(ea)), Some(Value::Array(aa))) => {
            for i in 0..ea.len().max(aa.len()) {
                diff_value(format!("{path}[{i}]"), ea.get(i), aa.get(i), out);
            }
        }
        // JSON has one number type: 0 and 0.0 are the same number.
        (Some(Value::Number(en)), Some(Value::Number(an))) if en.as_f64() == an.as_f64() => {}
        (e, a) if e != a => out.push(path, e, a),
        _ => {}
    }
}

/// Compare two streams (ignored fields removed); empty when they agree.
pub fn compare(expected: &[Value], actual: &[Value]) -> Vec<FieldDiff> {
    compare_bounded(expected, actual, usize::MAX).0
}

/// [`compare`], keeping the first `limit` differences; also returns how many there are in
/// all. Messages are made comparable a pair at a time, never the whole stream at once.
pub fn compare_bounded(
    expected: &[Value],
    actual: &[Value],
    limit: usize,
) -> (Vec<FieldDiff>, usize) {
    compare_each(expected, actual.len(), |i| actual[i].clone(), limit)
}

/// The comparison behind [`compare_bounded`], over `actual_len` messages read one at a time
/// by `actual` (an implementation's are kept as text, parsed only here).
pub(crate) fn compare_each(
    expected: &[Value],
    actual_len: usize,
    actual: impl Fn(usize) -> Value,
    limit: usize,
) -> (Vec<FieldDiff>, usize) {
    let mut out = Diffs {
        kept: Vec::new(),
        total: 0,
        limit,
    };
    for i in 0..expected.len().max(actual_len) {
        let e = expected.get(i).map(comparable);
        let a = (i < actual_len).then(|| comparable(&actual(i)));
        diff_value(format!("[{i}]"), e.as_ref(), a.as_ref(), &mut out);
    }
    (out.kept, out.total)
}

/// Two JSON documents compared whole, nothing ignored: the first `limit` differences, and how
/// many there are in all. Paths start at the document's fields (`messages[3].text`).
pub fn diff_documents(expected: &Value, actual: &Value, limit: usize) -> (Vec<FieldDiff>, usize) {
    let mut out = Diffs {
        kept: Vec::new(),
        total: 0,
        limit,
    };
    diff_value(String::new(), Some(expected), Some(actual), &mut out);
    (out.kept, out.total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ignored_fields_are_not_compared_but_others_are() {
        let e = vec![
            json!({"type":"terminal.failed","reason":"process_exit","message":"a","exit":{"code":1},
            "invalid_lines":[{"line":3,"bytes":4,"problem":"x","excerpt":"y"}]}),
        ];
        let a = vec![
            json!({"type":"terminal.failed","reason":"process_exit","message":"b","exit":{"code":1},
            "invalid_lines":[{"line":3,"bytes":4,"problem":"z","excerpt":"w"}]}),
        ];
        assert!(compare(&e, &a).is_empty());
        let a2 = vec![
            json!({"type":"terminal.failed","reason":"process_exit","message":"b","exit":{"code":2}}),
        ];
        let d = compare(&e, &a2);
        assert_eq!(d[0].path, "[0].exit.code");
        assert_eq!(d[0].expected, Some(json!(1)));
        assert_eq!(d[0].actual, Some(json!(2)));
        assert_eq!(d[1].path, "[0].invalid_lines");
        assert_eq!(d[1].actual, None);
    }

    #[test]
    fn numbers_compare_as_numbers() {
        let e = vec![json!({"type":"usage","cost_usd":0.0,"input_tokens":1})];
        assert!(compare(&e, &[json!({"type":"usage","cost_usd":0,"input_tokens":1})]).is_empty());
        assert_eq!(
            compare(
                &e,
                &[json!({"type":"usage","cost_usd":0.5,"input_tokens":1})]
            )
            .len(),
            1
        );
    }

    #[test]
    fn missing_messages_are_reported_by_index() {
        let e = vec![
            json!({"type":"assistant","text":"a"}),
            json!({"type":"terminal.cancelled"}),
        ];
        let a = vec![json!({"type":"assistant","text":"a"})];
        let d = compare(&e, &a);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, "[1]");
        assert_eq!(d[0].actual, None);
    }

    #[test]
    fn documents_are_compared_whole_from_their_fields() {
        let e = json!({"case":"c","messages":[{"type":"terminal.failed","message":"a"}]});
        let a = json!({"case":"c","messages":[{"type":"terminal.failed","message":"b"}],"x":1});
        let (d, total) = diff_documents(&e, &a, 1);
        assert_eq!(total, 2);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, "messages[0].message");
        assert_eq!(d[0].actual, Some(json!("b")));
        assert_eq!(diff_documents(&e, &e, 10), (Vec::new(), 0));
    }
}
