//! The committed RPC corpus (`cassettes/rpc/`, manifest `cassettes/scripts/rpc-corpus.json`):
//! every scenario recorded on every pinned version it applies to, and what each cassette
//! proves from its own records: the client's lines and pi's answers tied together, the
//! model requests, pi's tool processes.

use pi_cassette::{Action, Cassette, OriginKind};
use pi_recorder::corpus::{cassette_name, Manifest};
use serde_json::Value;

use crate::util::root;

fn corpus() -> Vec<(String, Cassette, pi_recorder::corpus::ScenarioSpec)> {
    let manifest = Manifest::load(&root().join("cassettes/scripts/rpc-corpus.json")).unwrap();
    let mut out = Vec::new();
    for s in &manifest.scenarios {
        assert!(
            s.client.is_some(),
            "{}: an RPC scenario has a client",
            s.name
        );
        for release in pi_grammar::Agent::Pi.spec().releases {
            let (version, tag) = (&release.version, release.tag);
            if !s.applies_to(version) {
                continue;
            }
            let name = cassette_name(&s.name, tag);
            let path = root().join("cassettes/rpc").join(&name);
            let c = Cassette::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(c.header.pi.version, *version, "{name}");
            assert_eq!(c.header.mode.as_deref(), Some("rpc"), "{name}");
            assert_eq!(c.header.origin.kind, OriginKind::Recorded, "{name}");
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(c.to_jsonl(), text, "{name}: written back byte for byte");
            out.push((name, c, s.clone()));
        }
    }
    out
}

/// The user texts of a `request` record's messages.
fn user_texts(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(parts) => out.extend(
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    out
}

fn requests(c: &Cassette) -> Vec<Value> {
    c.records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Request(json) => Some(serde_json::from_str(json).unwrap()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_rpc_scenario_is_recorded_on_0_87_1_and_later() {
    let all = corpus();
    let versions: std::collections::BTreeSet<&str> = all
        .iter()
        .map(|(_, c, _)| c.header.pi.version.as_str())
        .collect();
    assert_eq!(
        versions.into_iter().collect::<Vec<_>>(),
        ["0.87.1", "1.5.2"]
    );
    assert!(all.len() >= 22, "{} RPC cassettes", all.len());
}

/// The delivery proof, from the cassette alone: the text a steer, follow-up or second
/// prompt carried is a user message of the model request the manifest names, and of no
/// request before it.
#[test]
fn delivered_texts_are_in_the_recorded_model_requests() {
    let mut proofs = 0;
    for (name, c, s) in corpus() {
        let requests = requests(&c);
        for d in &s.delivered {
            let req = requests
                .get(d.request - 1)
                .unwrap_or_else(|| panic!("{name}: no request {}", d.request));
            assert!(
                user_texts(req).iter().any(|t| t == &d.text),
                "{name}: request {} does not carry {:?} as a user message",
                d.request,
                d.text
            );
            for (i, earlier) in requests[..d.request - 1].iter().enumerate() {
                assert!(
                    !user_texts(earlier).iter().any(|t| t == &d.text),
                    "{name}: {:?} is in request {} already",
                    d.text,
                    i + 1
                );
            }
            proofs += 1;
        }
    }
    assert!(proofs >= 6, "{proofs} delivery proofs");
}

/// The steer of `rpc_steer` is in the second request, after the first answer: the
/// delivery proof the RPC issue asks for, spelled out on one cassette.
#[test]
fn a_steer_reaches_the_model_in_its_second_request() {
    let c = Cassette::load(&root().join("cassettes/rpc/rpc_steer.pi152.cassette.jsonl")).unwrap();
    let steer = c
        .records
        .iter()
        .find_map(|r| match &r.action {
            Action::Stdin(l) => {
                let v: Value = serde_json::from_str(&l.json).unwrap();
                (v["type"] == "steer").then(|| v["message"].as_str().unwrap().to_string())
            }
            _ => None,
        })
        .expect("the client steers");
    let requests = requests(&c);
    assert_eq!(requests.len(), 2);
    assert!(!user_texts(&requests[0]).contains(&steer));
    let second = user_texts(&requests[1]);
    assert_eq!(
        second.last(),
        Some(&steer),
        "the steer is the last user message"
    );
}

/// Every `reply` ties a response to the client line it answers: same `command` as the
/// line's `type`, and the line's `id` when it had one.
#[test]
fn replies_answer_the_line_they_name() {
    let mut replies = 0;
    for (name, c, _) in corpus() {
        let mut lines: Vec<Option<Value>> = Vec::new();
        for r in &c.records {
            match &r.action {
                Action::Stdin(l) => lines.push(serde_json::from_str(&l.json).ok()),
                Action::StdinText(_) => lines.push(None),
                Action::Stdout(b) if r.reply.is_some() => {
                    let k = r.reply.unwrap() as usize;
                    let resp: Value = serde_json::from_slice(&b.data).unwrap();
                    let line = lines[k].as_ref().expect("a reply answers a JSON line");
                    if let Some(ty) = line.get("type") {
                        assert_eq!(&resp["command"], ty, "{name}:{}", r.line);
                    }
                    assert_eq!(resp.get("id"), line.get("id"), "{name}:{}", r.line);
                    replies += 1;
                }
                _ => {}
            }
        }
    }
    assert!(replies >= 40, "{replies} replies");
}

/// pi's bash tool process is modelled: spawned at the tool's start, reaped when the abort
/// ends it.
#[test]
fn an_aborted_tool_is_spawned_then_reaped() {
    for tag in ["pi87", "pi152"] {
        let c = Cassette::load(
            &root().join(format!("cassettes/rpc/rpc_abort_tool.{tag}.cassette.jsonl")),
        )
        .unwrap();
        let keys: Vec<&str> = c
            .records
            .iter()
            .map(|r| r.action.key())
            .filter(|k| ["spawn", "reap", "stdin"].contains(k))
            .collect();
        assert_eq!(keys, ["stdin", "spawn", "stdin", "reap"], "{tag}");
    }
}
