//! The streamed import writes exactly the cassette the in-memory import builds.

use std::path::Path;

use super::*;
use crate::import::{import, Ending, SpawnAtTool};

fn opts(ending: Ending) -> ImportOptions {
    let mut o = ImportOptions::new("0.87.1", "t", "test", ending);
    o.source = Some("raw.jsonl".into());
    o
}

#[test]
fn the_streamed_import_writes_the_in_memory_import() {
    let dir = tempfile::tempdir().unwrap();
    let tool = "{\"type\":\"tool_execution_start\",\"toolCallId\":\"call_1\",\"toolName\":\"bash\",\"args\":{\"command\":\"ls\"}}";
    let cases: Vec<(Vec<u8>, ImportOptions)> = vec![
        (
            b"{\"type\":\"session\"}\n{\"type\":\"agent_end\"}\n".to_vec(),
            opts(Ending::Exit(0)),
        ),
        // Text, bytes that are not UTF-8, an empty line, a last line without `\n`.
        (
            b"{\"type\":\"session\"}\nnot json\n\xff\xfe\n\n{\"type\":\"agent_end\"}".to_vec(),
            opts(Ending::Signal("SIGKILL".into())),
        ),
        (
            format!("{{\"type\":\"session\"}}\n{tool}\n{{\"type\":\"x\"}}\n").into_bytes(),
            {
                let mut o = opts(Ending::Hang);
                o.spawn_at_tool = Some(SpawnAtTool::default());
                o.stderr = Some(b"warn\n\xff".to_vec());
                o
            },
        ),
    ];
    for (n, (raw, o)) in cases.iter().enumerate() {
        let input = dir.path().join(format!("raw{n}.jsonl"));
        std::fs::write(&input, raw).unwrap();
        let want = import(Path::new("raw.jsonl"), raw, o).unwrap();
        for name in [
            "out.cassette.jsonl",
            "out.cassette.jsonl.gz",
            "out.cassette.jsonl.zst",
        ] {
            let out = dir.path().join(format!("{n}-{name}"));
            let got = import_file(&input, &out, o).unwrap();
            assert_eq!(got, Imported::of(&want), "{n} {name}");
            let back = Cassette::load(&out).unwrap();
            assert_eq!(back.to_jsonl(), want.to_jsonl(), "{n} {name}");
            assert_eq!(back.stdout_bytes(), raw.as_slice());
        }
    }
}

#[test]
fn an_import_that_fails_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("raw.jsonl");
    std::fs::write(&input, "{\"type\":\"session\",\"key\":\"s3cr3t-value\"}\n").unwrap();
    let out = dir.path().join("out.cassette.jsonl");
    let mut o = opts(Ending::Exit(0));
    o.secret_values = vec![("KEY".into(), "s3cr3t-value".into())];
    let e = import_file(&input, &out, &o).unwrap_err().to_string();
    assert!(
        e.contains("holds the value of $KEY (--secret-env), which would be line 2"),
        "{e}"
    );
    let mut o = opts(Ending::Exit(0));
    o.spawn_at_tool = Some(SpawnAtTool::default());
    let e = import_file(&input, &out, &o).unwrap_err().to_string();
    assert!(e.contains("--spawn-at-tool: no line"), "{e}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["raw.jsonl"]);
}
