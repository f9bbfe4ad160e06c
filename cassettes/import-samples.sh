#!/usr/bin/env bash
# Re-create the imported cassettes in this directory from the captured real pi runs.
#
# Run by a person, from anywhere:  cassettes/import-samples.sh [SAMPLES_DIR]
# SAMPLES_DIR defaults to shared/samples/real-pi beside the checkout (the project's
# shared data). Tests never run this: they read the committed
# cassettes. Each command below is the exact import of one sample; expectations come
# from the samples' README (`pi --mode json --provider fake --model fake-model`) and the
# user message visible in each stream.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
if [ $# -ge 1 ]; then
  samples="$1"
else # shared/ sits beside the checkout (or beside its worktree folder)
  for samples in "$repo/../shared/samples/real-pi" "$repo/../../shared/samples/real-pi"; do
    [ -d "$samples" ] && break
  done
fi
[ -d "$samples" ] || { echo "import-samples.sh: $samples: no such directory; pass the real-pi samples directory" >&2; exit 2; }

cargo build -q -p pi-harness --manifest-path "$repo/Cargo.toml"
ph="${CARGO_TARGET_DIR:-$repo/target}/debug/pi-harness"

common=(--flag mode=json --flag provider=fake --flag model=fake-model --spacing-ms 5)

imp() { # imp SAMPLE_STEM PI_VERSION SUFFIX SCENARIO [args...]
  local stem="$1" version="$2" suffix="$3" scenario="$4"; shift 4
  "$ph" cassette import "$samples/$stem.jsonl" \
    --out "$here/$scenario.$suffix.cassette.jsonl" \
    --pi-version "$version" --scenario "$scenario" \
    --source "shared/samples/real-pi/$stem.jsonl" "${common[@]}" "$@"
}

imp tool_bash.pi73 0.73.1 pi73 tool_bash \
  --description "Thinking, text, one bash tool call (echo hi; ls /srv/demo) with streamed output, then a text answer. Exit 0." \
  --tag thinking --tag text --tag tool --tag bash \
  --prompt "list files" --exit 0

imp tool_bash.pi87 0.87.1 pi87 tool_bash \
  --description "Thinking, text, one bash tool call (echo hi; ls /srv/demo) with streamed output, then a text answer; 0.87.1 adds the system message pair and agent_settled. Exit 0." \
  --tag thinking --tag text --tag tool --tag bash \
  --prompt "list files" --exit 0

imp prompt_on_stdin.pi87 0.87.1 pi87 prompt_on_stdin \
  --description "Same script as tool_bash, but the prompt came on stdin and argv held no message. Exit 0." \
  --tag stdin-prompt --tag thinking --tag text --tag tool --tag bash \
  --prompt "list files via stdin" --argv-messages '[]' --exit 0

imp retry_then_success.pi73 0.73.1 pi73 retry_then_success \
  --description "HTTP 500 on the first attempt (the HTTP client retried twice invisibly): stopReason error, agent_end, auto_retry_start, then a second agent run that answers 'recovered' and auto_retry_end success. Exit 0." \
  --tag retry --tag auto-retry --tag error --tag text \
  --prompt "hi" --exit 0 \
  --notes "pi exits 0; the first agent_end is not the end of the run because auto_retry_start follows it."

imp auth_401.pi73 0.73.1 pi73 auth_401 \
  --description "HTTP 401 from the provider: the assistant message ends with stopReason error and errorMessage '401 invalid api key'; no retry. Exit 0." \
  --tag error --tag auth --tag exit-0-on-failure \
  --prompt "hi" --exit 0 \
  --notes "pi exits 0 although the run failed: the failure is only visible as stopReason:error plus errorMessage on the last assistant message."

imp sigterm_mid_tool.pi87 0.87.1 pi87 sigterm_mid_tool \
  --description "Text, then a bash tool call running 'sleep 300; echo done'; the stream stops after the first tool_execution_update and pi waits for the tool. Sending SIGTERM now makes pi kill the tool and exit 143 with no agent_end." \
  --tag signal --tag sigterm --tag tool --tag bash --tag child-process --tag no-agent-end \
  --prompt "go" --hang \
  --spawn-at-tool --spawn-grandchild \
  --notes "Captured run: SIGTERM was sent to pi while the bash tool ran 'sleep 300' (after the tool_execution_update line); pi wrote nothing more, killed the tool's process group and exited 143; nothing survived. Replay: the spawn stands for the tool command (own session, like bash -c 'sleep 300; echo done' with sleep as a grandchild in the same group); the cassette hangs so the caller's signal gets pi's default answer (SIGTERM: kill tracked children, exit 143)."

imp sigint_mid_tool.pi73 0.73.1 pi73 sigint_mid_tool \
  --description "Text, then a bash tool call running 'sleep 300; echo done'; the stream stops after the first tool_execution_update. Sending SIGINT now kills pi at once (no handler) and the tool's processes survive as orphans." \
  --tag signal --tag sigint --tag tool --tag bash --tag child-process --tag orphan --tag no-agent-end \
  --prompt "go" --hang \
  --spawn-at-tool --spawn-grandchild \
  --notes "Captured run: SIGINT was sent to pi while the bash tool ran 'sleep 300' (after the tool_execution_update line); pi died by signal 2 within 60 ms with no further output, and bash -c 'sleep 300; echo done' and sleep 300 survived, reparented to PID 1. Replay: the spawn stands for that tool command (own session, grandchild in the same group); the cassette hangs so the caller's SIGINT gets pi's default answer (die at once, children left running)."

imp sigterm_mid_tool.pi152 1.5.2 pi152 sigterm_mid_tool \
  --description "pi 1.5.2: text, then a bash tool call running 'sleep 300'; the stream stops after the first tool_execution_update and pi waits for the tool. Sending SIGTERM now makes pi kill the tool and exit 143 with no agent_end." \
  --tag signal --tag sigterm --tag tool --tag bash --tag child-process --tag no-agent-end \
  --prompt "go" --hang \
  --spawn-at-tool --spawn-grandchild \
  --notes "Captured run (pi 1.5.2, script: running + bash tool): SIGTERM while the bash tool ran 'sleep 300'; pi killed the tool's process group and exited 143; nothing survived. Imported without --dialect: 1.5.2's dialect (delta-only) comes from pi's grammar data."
