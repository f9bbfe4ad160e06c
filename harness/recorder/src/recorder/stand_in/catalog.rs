//! pi's built-in providers per pinned version and the API(s) their models speak, as data:
//! measured from each version's own model catalog (`models.generated.js` of `pi-ai` in
//! 0.73.1 and 0.87.1; the catalog chunk of 1.5.2's bundle), every `api` of every model of
//! the provider, joined by `,` when they differ.

/// APIs of classifier models, not chat models: pi 1.5.2 lists `openai`'s classifiers
/// (`gpt-6-luna`, type `classifier`, api `openai-decisions`) beside its chat models, which
/// all speak `openai-responses`; a recording's chat never goes to them.
pub(super) const CLASSIFIER_APIS: &[&str] = &["openai-decisions"];

/// The catalog of the pinned version `version` names (`0.73.1`, `0.87.1`, `1.5.2`).
pub(super) fn for_pinned(version: &str) -> &'static [(&'static str, &'static str)] {
    match version {
        "0.73.1" => PI_0_73_1,
        "0.87.1" => PI_0_87_1,
        _ => PI_1_5_2,
    }
}

/// pi 0.73.1's built-in providers and the API(s) their models speak.
const PI_0_73_1: &[(&str, &str)] = &[
    ("amazon-bedrock", "bedrock-converse-stream"),
    ("anthropic", "anthropic-messages"),
    ("azure-openai-responses", "azure-openai-responses"),
    ("cerebras", "openai-completions"),
    (
        "cloudflare-ai-gateway",
        "anthropic-messages,openai-responses,openai-completions",
    ),
    ("cloudflare-workers-ai", "openai-completions"),
    ("deepseek", "openai-completions"),
    ("fireworks", "anthropic-messages"),
    (
        "github-copilot",
        "anthropic-messages,openai-completions,openai-responses",
    ),
    ("google", "google-generative-ai"),
    ("google-vertex", "google-vertex"),
    ("groq", "openai-completions"),
    ("huggingface", "openai-completions"),
    ("kimi-coding", "anthropic-messages"),
    ("minimax", "anthropic-messages"),
    ("minimax-cn", "anthropic-messages"),
    ("mistral", "mistral-conversations"),
    ("moonshotai", "openai-completions"),
    ("moonshotai-cn", "openai-completions"),
    ("openai", "openai-responses"),
    ("openai-codex", "openai-codex-responses"),
    (
        "opencode",
        "openai-completions,anthropic-messages,google-generative-ai,openai-responses",
    ),
    ("opencode-go", "openai-completions"),
    ("openrouter", "openai-completions"),
    ("vercel-ai-gateway", "anthropic-messages"),
    ("xai", "openai-completions"),
    ("xiaomi", "anthropic-messages"),
    ("xiaomi-token-plan-ams", "anthropic-messages"),
    ("xiaomi-token-plan-cn", "anthropic-messages"),
    ("xiaomi-token-plan-sgp", "anthropic-messages"),
    ("zai", "openai-completions"),
];

/// pi 0.87.1's built-in providers and the API(s) their models speak.
const PI_0_87_1: &[(&str, &str)] = &[
    ("amazon-bedrock", "bedrock-converse-stream"),
    ("ant-ling", "openai-completions"),
    ("anthropic", "anthropic-messages"),
    ("azure-openai-responses", "azure-openai-responses"),
    ("baseten", "openai-completions"),
    ("cerebras", "openai-completions"),
    (
        "cloudflare-ai-gateway",
        "anthropic-messages,openai-completions,openai-responses",
    ),
    ("cloudflare-workers-ai", "openai-completions"),
    ("deepseek", "openai-completions"),
    ("fireworks", "anthropic-messages,openai-completions"),
    (
        "github-copilot",
        "anthropic-messages,openai-completions,openai-responses",
    ),
    ("google", "google-generative-ai"),
    ("google-vertex", "google-vertex"),
    ("groq", "openai-completions"),
    ("huggingface", "openai-completions"),
    ("kimi-coding", "anthropic-messages"),
    ("meta", "openai-responses"),
    ("minimax", "anthropic-messages"),
    ("minimax-cn", "anthropic-messages"),
    ("mistral", "mistral-conversations"),
    ("moonshotai", "openai-completions"),
    ("moonshotai-cn", "openai-completions"),
    ("nvidia", "openai-completions"),
    ("openai", "openai-responses"),
    ("openai-codex", "openai-codex-responses"),
    (
        "opencode",
        "anthropic-messages,google-generative-ai,openai-completions,openai-responses",
    ),
    (
        "opencode-go",
        "anthropic-messages,openai-completions,openai-responses",
    ),
    ("openrouter", "anthropic-messages,openai-completions"),
    ("qwen-token-plan", "openai-completions"),
    ("qwen-token-plan-cn", "openai-completions"),
    ("qwen-token-plan-individual", "openai-completions"),
    ("radius", "pi-messages"),
    ("together", "openai-completions"),
    ("vercel-ai-gateway", "anthropic-messages"),
    ("xai", "openai-responses"),
    ("xiaomi", "openai-completions"),
    ("xiaomi-token-plan-ams", "openai-completions"),
    ("xiaomi-token-plan-cn", "openai-completions"),
    ("xiaomi-token-plan-sgp", "openai-completions"),
    ("zai", "openai-completions"),
    ("zai-coding-cn", "openai-completions"),
];

/// pi 1.5.2's built-in providers and the API(s) their models speak.
const PI_1_5_2: &[(&str, &str)] = &[
    ("amazon-bedrock", "bedrock-converse-stream"),
    ("anthropic", "anthropic-messages"),
    ("azure", "azure-openai-responses"),
    ("baseten", "openai-completions"),
    ("cerebras", "openai-completions"),
    ("cloudflare-ai-gateway", "anthropic-messages,openai-completions,openai-responses"),
    ("cloudflare-workers-ai", "cloudflare-workers-ai-system-one,openai-completions"),
    ("fireworks", "anthropic-messages,openai-completions"),
    ("github-copilot", "anthropic-messages,openai-completions,openai-responses,typesafe-system-one"),
    ("google", "google-generative-ai"),
    ("google-vertex", "google-vertex"),
    ("groq", "openai-completions"),
    ("huggingface", "openai-completions"),
    ("kimi-coding", "openai-completions"),
    ("meta", "openai-responses"),
    ("minimax", "anthropic-messages"),
    ("minimax-cn", "anthropic-messages"),
    ("mistral", "mistral-conversations"),
    ("moonshotai", "openai-completions"),
    ("moonshotai-cn", "openai-completions"),
    ("nvidia", "openai-completions"),
    ("openai", "openai-decisions,openai-responses"),
    ("openai-codex", "openai-codex-responses"),
    ("opencode", "anthropic-messages,google-generative-ai,openai-completions,openai-responses,typesafe-system-one"),
    ("opencode-go", "anthropic-messages,google-generative-ai,openai-completions,openai-responses"),
    ("openrouter", "openai-completions,openrouter-images,typesafe-system-one"),
    ("qwen-token-plan", "openai-completions"),
    ("qwen-token-plan-cn", "openai-completions"),
    ("qwen-token-plan-individual", "openai-completions"),
    ("qwen-token-plan-individual-cn", "openai-completions"),
    ("radius", "pi-messages"),
    ("together", "openai-completions"),
    ("typesafe", "typesafe-system-one"),
    ("vercel-ai-gateway", "typesafe-system-one"),
    ("xai", "openai-responses"),
    ("xiaomi", "openai-completions"),
    ("xiaomi-token-plan-ams", "openai-completions"),
    ("xiaomi-token-plan-cn", "openai-completions"),
    ("xiaomi-token-plan-sgp", "openai-completions"),
    ("zai", "openai-completions"),
    ("zai-coding-cn", "openai-completions"),
];
