//! Property test: any argv, for every known pi version, goes through the whole grammar
//! (parse, validation, runtime errors, help and version streams, the effective call with
//! and without stdin) without a panic, and a parse either succeeds or names an error with
//! pi's exit code (never 0).

use pi_grammar::{stdin_content, AgentSettings, AppMode, Grammar, KNOWN_VERSIONS};
use proptest::prelude::*;

/// Arguments that mean something to some pi, and arbitrary ones.
fn arg() -> impl Strategy<Value = String> {
    let known: Vec<String> = KNOWN_VERSIONS
        .iter()
        .flat_map(|v| {
            let g = Grammar::for_version(v).expect("a known version");
            g.flags().map(|f| f.long.to_string()).collect::<Vec<_>>()
        })
        .chain(
            [
                "-p",
                "-c",
                "-r",
                "-e",
                "--",
                "-",
                "json",
                "rpc",
                "text",
                "*",
                "+bash",
                "-read",
                "openai/gpt-4o:high",
                "builtin:bash",
                "mcp",
                "auth",
                "install",
                "@file.md",
                "--model=",
                "--tools=read,bash",
                "--mode=json",
                "-pc",
                "",
            ]
            .map(String::from),
        )
        .collect();
    prop_oneof![
        3 => proptest::sample::select(known),
        1 => any::<String>(),
        1 => "--[a-z-]{0,12}(=[a-z,*+-]{0,8})?",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn any_argv_is_read_without_a_panic(
        args in proptest::collection::vec(arg(), 0..10),
        stdin in proptest::option::of(any::<Vec<u8>>()),
        tty in any::<(bool, bool)>(),
    ) {
        for version in KNOWN_VERSIONS {
            let g = Grammar::for_version(version).expect("a known version");
            let _ = g.command(&args);
            match g.parse(&args) {
                Ok(parsed) => {
                    let mode = parsed.app_mode(tty.0, tty.1, &g);
                    let _ = parsed.validate();
                    let _ = parsed.unknown_flags_error();
                    let _ = parsed.warnings_text();
                    let _ = g.runtime_errors(&parsed);
                    let _ = g.help_stream(&parsed, mode);
                    let _ = g.version_stream(mode);
                    let prompt = stdin.as_deref().and_then(stdin_content);
                    let settings = AgentSettings::default();
                    let _ = g.effective_tools(&parsed, &settings);
                    let _ = g.effective(&parsed, mode, prompt.as_deref(), &settings);
                    let _ = g.effective(&parsed, AppMode::Print, None, &settings);
                }
                Err(e) => prop_assert_ne!(e.exit_code, 0, "{}: {:?}", version, e),
            }
        }
    }
}
