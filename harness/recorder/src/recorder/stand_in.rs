//! Which provider and model the scripted LLM server stands in for (pure).
//!
//! A recording runs pi under the provider and model its caller uses in production: pi's
//! own `--provider`/`--model` (or `--model provider/id`), else the ones `record --provider
//! --model` names, which go into the throwaway agent dir's `settings.json` as
//! `defaultProvider`/`defaultModel` (for a wrapper that passes no model flags), else the
//! fake names `fake`/`fake-model`. The agent dir's `models.json` then routes that provider
//! to the server, with a model of that id: pi 0.73.1, 0.87.1 and 1.5.2 all let `models.json`
//! override a built-in provider's `baseUrl`, `api` and key and upsert a model by id
//! (measured with each real pi).
//!
//! The server speaks three wires: Anthropic messages, OpenAI chat completions and the
//! OpenAI Responses API. A built-in provider is stood in for with its own wire, read from
//! pi's model catalog ([`catalog`]): only when every chat model of the provider speaks one
//! wire the server serves (`openai`'s classifier models, 1.5.2's `openai-decisions`, are
//! not chat models and do not count). A provider that speaks another (`google`,
//! `amazon-bedrock`, `azure-openai-responses`, ...) is not stood in for: recording it would
//! write a cassette of another wire than production's. A provider pi does not know
//! (`fake`, your company's `models.json` entry) speaks the wire `record --api` names.

mod catalog;

use serde_json::Value;

use crate::llm_script::Api;

/// The provider and model id pi is named in production (`record --provider P --model M`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelName {
    /// The provider (`anthropic`).
    pub provider: String,
    /// The model id (`claude-sonnet-4-5`).
    pub id: String,
}

/// The provider of the fake names.
pub const FAKE_PROVIDER: &str = "fake";
/// The model of the fake names.
pub const FAKE_MODEL: &str = "fake-model";

/// What the recording's agent dir says, and what the server stands in for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandIn {
    /// The provider pi calls.
    pub provider: String,
    /// The model id pi calls.
    pub model: String,
    /// The wire pi speaks to that provider, or why the server cannot stand in for it.
    pub wire: Wire,
    /// The choice is `settings.json`'s `defaultProvider`/`defaultModel` (pi's command
    /// line names no model).
    pub in_settings: bool,
}

/// The wire of a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wire {
    /// One the server speaks.
    Served(Api),
    /// pi speaks these APIs (`openai-responses`, ...) to the provider; the server none of them.
    NotServed(String),
}

/// Which provider and model a recording of pi `version` with `pi_args` runs under: pi's
/// flags, else `named` (written to settings.json), else the fake names (in settings.json
/// when `fake_in_settings`). `api` is the wire of a provider pi does not know. An error
/// when `named` and pi's flags disagree.
pub fn resolve(
    version: &str,
    pi_args: &[String],
    named: Option<&ModelName>,
    fake_in_settings: bool,
    api: Api,
) -> Result<StandIn, String> {
    let grammar = pi_grammar::Grammar::nearest(version);
    // A command line pi refuses is recorded as pi refuses it: no model from it.
    let (flag_provider, flag_model) = match grammar.parse(pi_args) {
        Ok(parsed) => {
            let mode = parsed.app_mode(false, false, &grammar);
            let e = grammar.effective(&parsed, mode, None, &pi_grammar::AgentSettings::default());
            (e.provider, e.model)
        }
        Err(_) => (None, None),
    };
    if let (Some(m), Some(n)) = (&flag_model, named) {
        if *m != n.id || flag_provider.as_ref().is_some_and(|p| *p != n.provider) {
            return Err(format!(
                "record --provider {} --model {}: pi's command line names {}/{m}; name the model once (pi's flags, or record's for a wrapper that passes none)",
                n.provider,
                n.id,
                flag_provider.as_deref().unwrap_or(&n.provider)
            ));
        }
    }
    let (provider, model, in_settings) = match (flag_provider, flag_model, named) {
        (p, Some(m), named) => {
            // `--model id` alone: the provider named to the recorder, else the fake one.
            let p = p
                .or_else(|| named.map(|n| n.provider.clone()))
                .unwrap_or_else(|| FAKE_PROVIDER.to_string());
            (p, m, false)
        }
        (_, None, Some(n)) => (n.provider.clone(), n.id.clone(), true),
        (_, None, None) => (FAKE_PROVIDER.into(), FAKE_MODEL.into(), fake_in_settings),
    };
    let wire = wire_of(grammar.version(), &provider, api);
    Ok(StandIn {
        provider,
        model,
        wire,
        in_settings,
    })
}

/// The wire pi `pinned` speaks to `provider`: its catalog's, else `api` (a provider pi
/// does not know).
fn wire_of(pinned: &str, provider: &str, api: Api) -> Wire {
    let Some((_, apis)) = catalog::for_pinned(pinned)
        .iter()
        .find(|(p, _)| *p == provider)
    else {
        return Wire::Served(api);
    };
    let chat: Vec<&str> = apis
        .split(',')
        .filter(|a| !catalog::CLASSIFIER_APIS.contains(a))
        .collect();
    match chat[..] {
        ["anthropic-messages"] => Wire::Served(Api::Anthropic),
        ["openai-completions"] => Wire::Served(Api::OpenAi),
        ["openai-responses"] => Wire::Served(Api::Responses),
        _ => Wire::NotServed(apis.replace(',', ", ")),
    }
}

/// The built-in providers of pi `version` the server stands in for, with their wire (for
/// messages and docs).
pub fn served_providers(version: &str) -> Vec<(&'static str, Api)> {
    let pinned = pi_grammar::Grammar::nearest(version).version();
    catalog::for_pinned(pinned)
        .iter()
        .filter_map(|(p, _)| match wire_of(pinned, p, Api::OpenAi) {
            Wire::Served(api) => Some((*p, api)),
            Wire::NotServed(_) => None,
        })
        .collect()
}

/// The `models.json` routing the stand-in's provider, with a model of its id, to the
/// server at `base_url` with `key` (pure). `None` when the server cannot stand in for it.
pub fn models_json_for(stand_in: &StandIn, base_url: &str, key: &str) -> Option<Value> {
    let Wire::Served(api) = stand_in.wire else {
        return None;
    };
    Some(models_json_one(
        &stand_in.provider,
        &stand_in.model,
        api,
        base_url,
        key,
    ))
}

/// A `models.json` with one provider speaking `api` at the server, with one model (pure).
pub(crate) fn models_json_one(
    provider: &str,
    model: &str,
    api: Api,
    base_url: &str,
    key: &str,
) -> Value {
    let models = serde_json::json!([{"id": model, "reasoning": true}]);
    let entry = match api {
        Api::OpenAi => serde_json::json!({
            "baseUrl": format!("{base_url}/v1"),
            "api": "openai-completions",
            "apiKey": key,
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": models
        }),
        // pi's Responses provider posts to `{baseUrl}/responses`.
        Api::Responses => serde_json::json!({
            "baseUrl": format!("{base_url}/v1"),
            "api": "openai-responses",
            "apiKey": key,
            "models": models
        }),
        // The Anthropic SDK appends `/v1/messages` itself.
        Api::Anthropic => serde_json::json!({
            "baseUrl": base_url,
            "api": "anthropic-messages",
            "apiKey": key,
            "models": models
        }),
    };
    let mut providers = serde_json::Map::new();
    providers.insert(provider.to_string(), entry);
    serde_json::json!({ "providers": providers })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn named(p: &str, m: &str) -> ModelName {
        ModelName {
            provider: p.into(),
            id: m.into(),
        }
    }

    #[test]
    fn production_names_from_flags_or_the_recorder() {
        for v in ["0.73.1", "0.87.1", "1.5.2"] {
            let flags = s(&[
                "--mode",
                "json",
                "--provider",
                "anthropic",
                "--model",
                "claude-sonnet-4-5",
                "hi",
            ]);
            let st = resolve(v, &flags, None, false, Api::OpenAi).unwrap();
            assert_eq!(
                (st.provider.as_str(), st.model.as_str()),
                ("anthropic", "claude-sonnet-4-5"),
                "{v}"
            );
            assert_eq!(
                st.wire,
                Wire::Served(Api::Anthropic),
                "{v}: anthropic speaks its own wire"
            );
            assert!(!st.in_settings);
            // The same names given to the recorder agree with the flags.
            assert!(resolve(
                v,
                &flags,
                Some(&named("anthropic", "claude-sonnet-4-5")),
                false,
                Api::OpenAi
            )
            .is_ok());
            let other =
                resolve(v, &flags, Some(&named("groq", "x")), false, Api::OpenAi).unwrap_err();
            assert!(
                other.contains("names anthropic/claude-sonnet-4-5"),
                "{other}"
            );
            // No model flags: the recorder's names, in settings.json.
            let st = resolve(
                v,
                &s(&["--mode", "json", "hi"]),
                Some(&named("groq", "llama-3.3-70b-versatile")),
                false,
                Api::Anthropic,
            )
            .unwrap();
            assert_eq!(st.provider, "groq");
            assert!(st.in_settings);
            assert_eq!(
                st.wire,
                Wire::Served(Api::OpenAi),
                "{v}: groq speaks chat completions"
            );
        }
        // `--model provider/id` names the provider too.
        let st = resolve(
            "1.5.2",
            &s(&[
                "--mode",
                "json",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "hi",
            ]),
            None,
            false,
            Api::OpenAi,
        )
        .unwrap();
        assert_eq!(
            (st.provider.as_str(), st.model.as_str()),
            ("anthropic", "claude-sonnet-4-5")
        );
    }

    #[test]
    fn fake_names_and_providers_pi_does_not_know() {
        let st = resolve(
            "0.87.1",
            &s(&["--mode", "json", "hi"]),
            None,
            true,
            Api::Anthropic,
        )
        .unwrap();
        assert_eq!(
            (st.provider.as_str(), st.model.as_str(), st.in_settings),
            ("fake", "fake-model", true)
        );
        assert_eq!(
            st.wire,
            Wire::Served(Api::Anthropic),
            "--api for a provider pi does not know"
        );
        let st = resolve(
            "0.87.1",
            &s(&[
                "--mode",
                "json",
                "--provider",
                "mycorp",
                "--model",
                "m1",
                "hi",
            ]),
            None,
            false,
            Api::OpenAi,
        )
        .unwrap();
        assert_eq!(st.wire, Wire::Served(Api::OpenAi));
        // A command line pi refuses (1.x: --provider without --model) keeps the fake names.
        let st = resolve(
            "1.5.2",
            &s(&["--mode", "json", "--provider", "fake", "hi"]),
            None,
            true,
            Api::OpenAi,
        )
        .unwrap();
        assert_eq!(st.provider, "fake");
    }

    #[test]
    fn openai_is_stood_in_for_with_the_responses_api() {
        let flags = s(&[
            "--mode",
            "json",
            "--provider",
            "openai",
            "--model",
            "gpt-4o",
            "hi",
        ]);
        for v in ["0.73.1", "0.87.1", "1.5.2"] {
            let st = resolve(v, &flags, None, false, Api::OpenAi).unwrap();
            // 1.5.2's catalog lists `openai-decisions` too: its classifier models, not chat.
            assert_eq!(st.wire, Wire::Served(Api::Responses), "{v}");
            let m = models_json_for(&st, "http://127.0.0.1:9", "k").unwrap();
            let p = &m["providers"]["openai"];
            assert_eq!(p["baseUrl"], "http://127.0.0.1:9/v1");
            assert_eq!(p["api"], "openai-responses");
            assert_eq!(p["models"][0]["id"], "gpt-4o");
            assert!(served_providers(v).contains(&("openai", Api::Responses)));
        }
        // xai moved from chat completions (0.73.1) to the Responses API (0.87.1).
        assert_eq!(
            wire_of("0.73.1", "xai", Api::Anthropic),
            Wire::Served(Api::OpenAi)
        );
        assert_eq!(
            wire_of("0.87.1", "xai", Api::OpenAi),
            Wire::Served(Api::Responses)
        );
    }

    #[test]
    fn providers_of_another_wire_are_not_stood_in_for() {
        let flags = s(&[
            "--mode",
            "json",
            "--provider",
            "google",
            "--model",
            "gemini-2.5-pro",
            "hi",
        ]);
        for v in ["0.73.1", "0.87.1", "1.5.2"] {
            let st = resolve(v, &flags, None, false, Api::OpenAi).unwrap();
            assert_eq!(
                st.wire,
                Wire::NotServed("google-generative-ai".into()),
                "{v}"
            );
            assert!(models_json_for(&st, "http://127.0.0.1:9", "k").is_none());
            // Azure's Responses variant is its own wire (deployments, api-version).
            assert!(matches!(
                wire_of(
                    v,
                    if v == "1.5.2" {
                        "azure"
                    } else {
                        "azure-openai-responses"
                    },
                    Api::OpenAi
                ),
                Wire::NotServed(_)
            ));
        }
        // A provider whose chat models speak several wires is refused, naming them all.
        assert_eq!(
            wire_of("1.5.2", "opencode-go", Api::OpenAi),
            Wire::NotServed(
                "anthropic-messages, google-generative-ai, openai-completions, openai-responses"
                    .into()
            )
        );
        assert!(served_providers("1.5.2").contains(&("anthropic", Api::Anthropic)));
        assert!(!served_providers("1.5.2")
            .iter()
            .any(|(p, _)| *p == "google"));
    }

    #[test]
    fn models_json_routes_the_provider_to_the_server() {
        let st = resolve(
            "1.5.2",
            &s(&[
                "--provider",
                "anthropic",
                "--model",
                "claude-sonnet-4-5",
                "-p",
                "hi",
            ]),
            None,
            false,
            Api::OpenAi,
        )
        .unwrap();
        let m = models_json_for(&st, "http://127.0.0.1:9", "k").unwrap();
        let p = &m["providers"]["anthropic"];
        assert_eq!(p["baseUrl"], "http://127.0.0.1:9");
        assert_eq!(p["api"], "anthropic-messages");
        assert_eq!(p["models"][0]["id"], "claude-sonnet-4-5");
        let st = resolve(
            "1.5.2",
            &s(&["--provider", "groq", "--model", "llama", "-p", "hi"]),
            None,
            false,
            Api::Anthropic,
        )
        .unwrap();
        let m = models_json_for(&st, "http://127.0.0.1:9", "k").unwrap();
        assert_eq!(m["providers"]["groq"]["baseUrl"], "http://127.0.0.1:9/v1");
        assert_eq!(m["providers"]["groq"]["api"], "openai-completions");
    }
}
