use super::*;

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn first_line(a: &[&str]) -> (i32, String) {
    let s = Gemini::latest().parse(&argv(a)).unwrap_err();
    let text = if s.code == 0 { s.stdout } else { s.stderr };
    (s.code, text.lines().next().unwrap_or_default().to_string())
}

#[test]
fn the_options_come_from_the_help_text() {
    let o = Gemini::latest().options();
    let model = o.iter().find(|o| o.long == "model").unwrap();
    assert_eq!((model.short, model.kind), (Some('m'), Kind::String));
    let fmt = o.iter().find(|o| o.long == "output-format").unwrap();
    assert_eq!(fmt.choices, ["text", "json", "stream-json"]);
    assert!(o
        .iter()
        .any(|o| o.long == "yolo" && o.kind == Kind::Boolean));
    assert!(o
        .iter()
        .any(|o| o.long == "policy" && o.kind == Kind::Array));
}

#[test]
fn the_errors_and_answers_are_the_measured_ones_in_their_order() {
    assert_eq!(first_line(&["--version"]), (0, "0.61.0".into()));
    assert_eq!(first_line(&["--bogus", "--help"]).0, 0);
    assert_eq!(
        first_line(&["--bogus"]),
        (1, "Unknown argument: bogus".into())
    );
    assert_eq!(
        first_line(&["--bogus", "--other"]),
        (1, "Unknown arguments: bogus, other".into())
    );
    assert_eq!(first_line(&["-yz"]), (1, "Unknown argument: z".into()));
    assert_eq!(
        first_line(&["--bogus", "-m"]),
        (1, "Not enough arguments following: m".into())
    );
    assert_eq!(
        first_line(&["-mfoo"]),
        (1, "Not enough arguments following: o".into())
    );
    assert_eq!(
        first_line(&["-o", "xx", "--bogus"]).1,
        "Unknown argument: bogus"
    );
    assert_eq!(first_line(&["-o", "xx"]).1, "Invalid values:");
    assert!(first_line(&["-y", "--approval-mode", "plan"])
        .1
        .starts_with("Cannot use both --yolo"));
    assert!(first_line(&["-p", "a", "b"])
        .1
        .starts_with("Cannot use both a positional"));
    let s = Gemini::latest().parse(&argv(&["--zz"])).unwrap_err();
    assert_eq!(
        s.stderr,
        format!("Unknown argument: zz\n{}", Gemini::latest().help())
    );
}

#[test]
fn the_effective_values_take_flag_then_env_then_settings_then_default() {
    let g = Gemini::latest();
    let user = Layer {
        name: "user".into(),
        values: [
            ("model.name", "S"),
            ("general.maxAttempts", "2"),
            ("general.defaultApprovalMode", "auto_edit"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    let p = g.parse(&argv(&["-p", "hi", "-m", "F"])).unwrap();
    let e = effective(&p, Some("E"), std::slice::from_ref(&user));
    assert_eq!(e.model.value.as_deref(), Some("F"));
    assert_eq!(e.approval.value.as_deref(), Some("auto_edit"));
    assert_eq!(e.max_attempts.value.as_deref(), Some("2"));
    let p = g.parse(&argv(&["-p", "hi", "-y"])).unwrap();
    let e = effective(&p, Some("E"), std::slice::from_ref(&user));
    assert_eq!(
        (
            e.model.value.as_deref(),
            e.model.source.to_string().as_str()
        ),
        (Some("E"), "env GEMINI_MODEL")
    );
    assert_eq!(e.approval.value.as_deref(), Some("yolo"));
    let e = effective(&p, None, &[user]);
    assert_eq!(e.model.value.as_deref(), Some("S"));
    let e = effective(&g.parse(&argv(&["hi"])).unwrap(), None, &[]);
    assert_eq!(
        (
            e.model.value.as_deref(),
            e.approval.value.as_deref(),
            e.max_attempts.value.as_deref(),
            e.mode.as_str()
        ),
        (Some("auto"), Some("default"), Some("10"), "text")
    );
}

#[test]
fn the_prompt_joins_stdin_first() {
    let g = Gemini::latest();
    let p = g.parse(&argv(&["say", "hi", "-o", "stream-json"])).unwrap();
    assert_eq!(p.prompt_arg().as_deref(), Some("say hi"));
    assert_eq!(
        join_prompt(Some("q"), Some("in")).as_deref(),
        Some("in\n\nq")
    );
    assert_eq!(join_prompt(Some("q"), Some("")).as_deref(), Some("q"));
    assert_eq!(join_prompt(None, None), None);
}

/// Every release of Gemini CLI's row in the registry has its texts, in the row's order.
#[test]
fn each_pinned_release_has_its_texts() {
    assert_eq!(super::TEXTS.len(), super::RELEASES.len());
    for (t, r) in super::TEXTS.iter().zip(super::RELEASES) {
        assert_eq!(t.version.trim(), *r);
    }
}
