//! The processes of a recorded run and the signals that touch them, read off a cassette's
//! records: [`Procs`] takes each `spawn`, `reap` and `client_signal` and the ending, and
//! gives every process as a bar ([`Proc`]: the CLI, its wrapper or relaunch parent, each
//! tool and the process the tool started) with how it ends, and every signal as an arrow
//! ([`Arrow`]) with what it did, or, at a hang, what each signal a caller may send would do
//! (the header's `process` answers, as fake-pi plays them). Bounded: a cassette holds at
//! most 1024 `spawn` records (the reader refuses more).

use pi_cassette::{Header, SignalAction, Spawn};
use pi_grammar::agents::{Parent, ParentSignal};

use super::model::{Arrow, Proc};
use super::text::Mask;
use crate::show::action_text;

/// The processes and signals of one run, as its records come.
#[derive(Debug)]
pub struct Procs {
    procs: Vec<Proc>,
    /// The process the tools run under (the CLI, or its native or relaunched child).
    session: usize,
    /// The CLI's own processes (indices), the top one first.
    cli: Vec<usize>,
    /// Per tool: (its index, its grandchild's index, whether it leads its own group, when it
    /// ends by itself).
    tools: Vec<Tool>,
    arrows: Vec<Arrow>,
    /// The parent the caller starts, when another process runs the session (its row's).
    parent: Option<Parent>,
    process: pi_cassette::ProcessBehaviour,
    name: &'static str,
}

#[derive(Debug)]
struct Tool {
    id: String,
    index: usize,
    grandchild: Option<(usize, bool)>,
    own_group: bool,
    ends_by_itself: Option<f64>,
}

/// How the record ends, for [`Procs::finish`].
#[derive(Debug, Clone)]
pub enum End {
    /// `exit N`.
    Exit(i32),
    /// Death by this signal.
    Signal(String),
    /// A hang until a signal.
    Hang,
}

impl Procs {
    /// The CLI's processes for the header's agent, as its row's process shape says: one
    /// process (pi, Claude Code), or a parent and the child that runs the session (Codex's
    /// node wrapper and native binary, Gemini CLI's relaunch parent and child), one process
    /// again when the call must set a variable the row names for that
    /// (`GEMINI_CLI_NO_RELAUNCH`).
    pub fn new(header: &Header) -> Procs {
        let agent = header.agent();
        let spec = agent.spec();
        let one_process = header
            .expect
            .env
            .iter()
            .find(|e| spec.process.one_process.contains(&e.as_str()));
        let parent = spec.process.parent.filter(|_| one_process.is_none());
        let names: Vec<(String, Vec<String>)> = match (parent, one_process) {
            (Some(p), _) => vec![
                (
                    format!("{} ({})", spec.name, p.role),
                    vec![parent_signals(&p)],
                ),
                (
                    format!("{} ({})", spec.name, p.child_role),
                    vec!["runs the session and its tools".into()],
                ),
            ],
            (None, Some(var)) => vec![(format!("{} ({var}: one process)", spec.name), Vec::new())],
            (None, None) => vec![(spec.name.to_string(), Vec::new())],
        };
        let procs: Vec<Proc> = names
            .into_iter()
            .enumerate()
            .map(|(i, (name, attrs))| Proc {
                name,
                parent: i.checked_sub(1),
                argv: None,
                start: 0.0,
                end: None,
                how: String::new(),
                state: "running",
                attrs,
                lines: Vec::new(),
            })
            .collect();
        Procs {
            session: procs.len() - 1,
            cli: (0..procs.len()).collect(),
            procs,
            tools: Vec::new(),
            arrows: Vec::new(),
            parent,
            process: header.process.clone(),
            name: spec.name,
        }
    }

    /// A `spawn` at `t` (record `line`): the tool and, when it forks one, its child.
    pub fn spawn(&mut self, t: f64, s: &Spawn, line: usize, mask: &Mask) {
        let argv = s
            .argv
            .as_ref()
            .map(|a| a.iter().map(|w| mask.apply(w)).collect::<Vec<_>>());
        let mut attrs = Vec::new();
        attrs.push(if s.own_session {
            "own session".to_string()
        } else {
            format!("in {}'s process group", self.name)
        });
        if s.ignore_sigterm {
            attrs.push("ignores SIGTERM".into());
        }
        if s.hold_stdout {
            attrs.push(format!("holds {}'s stdout open", self.name));
        }
        if let Some(ms) = s.lifetime_ms {
            attrs.push(format!("exits by itself after {ms} ms"));
        }
        let index = self.procs.len();
        self.procs.push(Proc {
            name: mask.apply(&s.id),
            parent: Some(self.session),
            argv: argv.clone(),
            start: t,
            end: None,
            how: String::new(),
            state: "running",
            attrs,
            lines: vec![line],
        });
        let grandchild = s.grandchild.as_ref().map(|g| {
            let mut attrs = vec![if g.own_session {
                "own session (escapes its parent's group)".to_string()
            } else {
                "in its parent's process group".to_string()
            }];
            if g.ignore_sigterm {
                attrs.push("ignores SIGTERM".into());
            }
            if g.hold_stdout {
                attrs.push("holds stdout open".into());
            }
            self.procs.push(Proc {
                name: format!("{}'s child", mask.apply(&s.id)),
                parent: Some(index),
                argv: g
                    .argv
                    .as_ref()
                    .map(|a| a.iter().map(|w| mask.apply(w)).collect())
                    .or(argv),
                start: t,
                end: None,
                how: String::new(),
                state: "running",
                attrs,
                lines: vec![line],
            });
            (index + 1, g.own_session)
        });
        self.tools.push(Tool {
            id: s.id.clone(),
            index,
            grandchild,
            own_group: s.own_session,
            ends_by_itself: s.lifetime_ms.map(|ms| t + ms as f64),
        });
    }

    /// A `reap` at `t`: the latest tool with this id is gone, its group killed if still there.
    pub fn reap(&mut self, t: f64, id: &str, line: usize) {
        let Some(tool) = self.tools.iter().rev().find(|tool| tool.id == id) else {
            return;
        };
        let (index, grandchild, own_group) = (tool.index, tool.grandchild, tool.own_group);
        let name = self.name;
        let p = &mut self.procs[index];
        p.lines.push(line);
        if p.end.is_none() {
            close(p, t, "reaped", format!("gone at {t:.1} ms: the tool ended or {name} killed it (its process group SIGKILLed if still there)"));
        }
        if let Some((g, own_session)) = grandchild {
            if own_group && !own_session {
                let g = &mut self.procs[g];
                if g.end.is_none() {
                    close(
                        g,
                        t,
                        "killed",
                        "ended with its parent's process group".into(),
                    );
                }
            }
        }
    }

    /// A `client_signal` at `t`: the client sends `sig`; the records after it show what
    /// followed, as recorded.
    pub fn client_signal(&mut self, t: f64, sig: &str, line: usize) {
        let what = match self.answer(sig) {
            Some(a) => format!(
                "the client sends {sig}; what follows is as recorded ({} answers {sig}: {})",
                self.name,
                action_text(a, sig)
            ),
            None => format!("the client sends {sig}; what follows is as recorded"),
        };
        self.arrows.push(Arrow {
            t,
            signal: sig.to_string(),
            from: "client",
            line: Some(line),
            what,
            hits: vec![(self.cli[0], "receives it".into())],
        });
    }

    /// The header's answer to `sig`, for the signals a cassette answers.
    fn answer(&self, sig: &str) -> Option<&SignalAction> {
        match sig {
            "SIGTERM" => Some(&self.process.on_sigterm),
            "SIGINT" => Some(&self.process.on_sigint),
            "SIGHUP" => Some(&self.process.on_sighup),
            _ => None,
        }
    }

    /// The ending at `t` (record `line`): every process closed as it ends, or left running;
    /// the processes and the arrows.
    pub fn finish(mut self, t: f64, end: &End, line: usize) -> (Vec<Proc>, Vec<Arrow>) {
        self.by_themselves(t);
        let name = self.name;
        match end {
            End::Exit(code) => {
                for &i in &self.cli.clone() {
                    self.procs[i].lines.push(line);
                    close(
                        &mut self.procs[i],
                        t,
                        "exited",
                        format!("exits {code} at {t:.1} ms"),
                    );
                }
                self.orphan_tools(t, &format!("{name} exited"));
            }
            End::Signal(sig) => {
                for &i in &self.cli.clone() {
                    self.procs[i].lines.push(line);
                    close(
                        &mut self.procs[i],
                        t,
                        "died",
                        format!("dies by {sig} at {t:.1} ms"),
                    );
                }
                let hits = self.orphan_tools(t, &format!("{name} died by {sig}"));
                self.arrows.push(Arrow {
                    t,
                    signal: sig.clone(),
                    from: "ending",
                    line: Some(line),
                    what: format!("{name} dies by {sig}; the processes it started are left alone"),
                    hits,
                });
            }
            End::Hang => {
                for &i in &self.cli.clone() {
                    let p = &mut self.procs[i];
                    p.lines.push(line);
                    p.how = format!("hangs from {t:.1} ms: alive and silent, stdout open, until a signal ends it (the arrows say what each does)");
                }
                for sig in ["SIGTERM", "SIGINT", "SIGHUP"] {
                    let arrow = self.if_sent(t, sig);
                    self.arrows.push(arrow);
                }
                for tool in &self.tools {
                    for i in std::iter::once(tool.index).chain(tool.grandchild.map(|g| g.0)) {
                        let p = &mut self.procs[i];
                        if p.end.is_none() {
                            p.how = format!("still running when {name} hangs: a signal to {name} decides (the arrows)");
                        }
                    }
                }
            }
        }
        (self.procs, self.arrows)
    }

    /// Tools whose own lifetime ends before `t` exit by themselves.
    fn by_themselves(&mut self, t: f64) {
        for tool in &self.tools {
            if let Some(e) = tool.ends_by_itself.filter(|e| *e <= t) {
                let p = &mut self.procs[tool.index];
                if p.end.is_none() {
                    close(p, e, "exited", format!("exits by itself at {e:.1} ms"));
                }
            }
        }
    }

    /// Every tool and tool's child still running at `t` is orphaned: it keeps running after
    /// the CLI (until its own lifetime ends, if it has one). The hits for an arrow.
    fn orphan_tools(&mut self, t: f64, why: &str) -> Vec<(usize, String)> {
        let mut hits = Vec::new();
        for tool in &self.tools {
            let own_end = tool.ends_by_itself.filter(|e| *e > t);
            for i in std::iter::once(tool.index).chain(tool.grandchild.map(|g| g.0)) {
                let p = &mut self.procs[i];
                if p.end.is_some() {
                    continue;
                }
                p.state = "orphaned";
                p.how = match (i == tool.index, own_end) {
                    (true, Some(e)) => {
                        p.end = Some(e);
                        format!("orphaned at {t:.1} ms ({why}); exits by itself at {e:.1} ms")
                    }
                    _ => format!("orphaned at {t:.1} ms ({why}): still running, a leftover unless the caller kills it"),
                };
                hits.push((i, "orphaned: keeps running".to_string()));
            }
        }
        hits
    }

    /// What `sig` would do if a caller sent it at the hang (`t`).
    fn if_sent(&self, t: f64, sig: &str) -> Arrow {
        let name = self.name;
        let action = self.answer(sig).cloned().unwrap_or(SignalAction::Die);
        let mut what = format!("if sent now: {name} {}", action_text(&action, sig));
        if let Some(p) = self.parent {
            match parent_answer(&p, sig) {
                Some(ParentSignal::Ignore) => {
                    what = format!(
                        "to the {} alone: ignored; to the process group or the child: {name} {}",
                        p.role,
                        action_text(&action, sig)
                    );
                }
                Some(ParentSignal::Forward) => what.push_str(&format!(
                    " (the {} forwards it to the {} and ends as it ends)",
                    p.role, p.child_role
                )),
                Some(ParentSignal::Die) | None => {}
            }
        }
        let mut hits: Vec<(usize, String)> = Vec::new();
        if action != SignalAction::Ignore {
            hits.extend(self.cli.iter().map(|&i| (i, "ends".to_string())));
        }
        for tool in &self.tools {
            if self.procs[tool.index].end.is_some() {
                continue;
            }
            let (child, grandchild) = match action {
                SignalAction::Ignore => continue,
                SignalAction::Die | SignalAction::Exit { .. } => {
                    ("orphaned: keeps running", "orphaned: keeps running")
                }
                SignalAction::KillChildrenDie => ("SIGKILLed", "orphaned: keeps running"),
                SignalAction::CleanupExit { .. } | SignalAction::CleanupDie => {
                    match tool.grandchild {
                        Some((_, false)) if tool.own_group => (
                            "SIGKILLed with its group",
                            "SIGKILLed with its parent's group",
                        ),
                        _ if tool.own_group => (
                            "SIGKILLed with its group",
                            "escaped the group: orphaned, keeps running",
                        ),
                        _ => ("SIGKILLed", "orphaned: keeps running"),
                    }
                }
            };
            hits.push((tool.index, child.to_string()));
            if let Some((g, _)) = tool.grandchild {
                if self.procs[g].end.is_none() {
                    hits.push((g, grandchild.to_string()));
                }
            }
        }
        Arrow {
            t,
            signal: sig.to_string(),
            from: "if sent",
            line: None,
            what,
            hits,
        }
    }
}

/// End the bar of `p` at `t`.
fn close(p: &mut Proc, t: f64, state: &'static str, how: String) {
    p.end = Some(t);
    p.state = state;
    p.how = how;
}

/// What the parent `p` does with `sig` (`SIGTERM`, `SIGINT`, `SIGHUP`), as its row says.
fn parent_answer(p: &Parent, sig: &str) -> Option<ParentSignal> {
    match sig {
        "SIGTERM" => Some(p.on_sigterm),
        "SIGINT" => Some(p.on_sigint),
        "SIGHUP" => Some(p.on_sighup),
        _ => None,
    }
}

/// What the parent `p` does with the signals a caller sends, in words, from its row:
/// `forwards SIGTERM, SIGINT and SIGHUP to the native binary; ends as its child ends`.
fn parent_signals(p: &Parent) -> String {
    let sigs = ["SIGTERM", "SIGINT", "SIGHUP"];
    let with = |a: ParentSignal| -> Option<String> {
        let named: Vec<&str> = sigs
            .into_iter()
            .filter(|s| parent_answer(p, s) == Some(a))
            .collect();
        match named.split_last() {
            None => None,
            Some((last, [])) => Some((*last).to_string()),
            Some((last, rest)) => Some(format!("{} and {last}", rest.join(", "))),
        }
    };
    let mut parts = Vec::new();
    if let Some(s) = with(ParentSignal::Forward) {
        parts.push(format!("forwards {s} to the {}", p.child_role));
    }
    if let Some(s) = with(ParentSignal::Ignore) {
        parts.push(format!("ignores {s}"));
    }
    if let Some(s) = with(ParentSignal::Die) {
        parts.push(format!(
            "dies by {s}, leaving the {} orphaned",
            p.child_role
        ));
    }
    parts.push("ends as its child ends".into());
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(agent: &str, expect: &str) -> Header {
        let text = format!(
            r#"{{"format":"pi-cassette","version":1,{agent},"scenario":{{"name":"s","description":"d"}},"expect":{expect},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}
{{"dt_ms":0,"hang":true}}
"#
        );
        pi_cassette::Cassette::parse(std::path::Path::new("c"), text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"))
            .header
    }

    /// The bars and what a signal at a hang would do, as each row's process shape says.
    fn drawn(h: &Header) -> (Vec<(String, Vec<String>)>, Vec<String>) {
        let (procs, arrows) = Procs::new(h).finish(1.0, &End::Hang, 2);
        (
            procs.into_iter().map(|p| (p.name, p.attrs)).collect(),
            arrows.into_iter().map(|a| a.what).collect(),
        )
    }

    /// Each agent's processes come from its row: Codex's node wrapper forwards every signal
    /// to its native binary, Gemini CLI's relaunch parent ignores SIGTERM and SIGINT and
    /// dies by SIGHUP, and is one process when the call sets a variable its row names.
    #[test]
    fn each_agents_processes_are_its_rows() {
        let codex = header(
            r#""codex":{"version":"0.169.0","dialect":"exec-json"}"#,
            "{}",
        );
        let (bars, arrows) = drawn(&codex);
        assert_eq!(
            bars,
            [
                (
                    "codex (node wrapper)".to_string(),
                    vec!["forwards SIGTERM, SIGINT and SIGHUP to the native binary; ends as its child ends".to_string()]
                ),
                (
                    "codex (native binary)".to_string(),
                    vec!["runs the session and its tools".to_string()]
                ),
            ]
        );
        assert!(
            arrows.iter().all(|a| a.ends_with(
                "(the node wrapper forwards it to the native binary and ends as it ends)"
            )),
            "{arrows:?}"
        );
        let gemini = header(
            r#""gemini":{"version":"0.61.0","dialect":"gemini-stream-json"}"#,
            "{}",
        );
        let (bars, arrows) = drawn(&gemini);
        assert_eq!(bars[0].0, "gemini (relaunch parent)");
        assert_eq!(
            bars[0].1,
            ["ignores SIGTERM and SIGINT; dies by SIGHUP, leaving the relaunched child orphaned; ends as its child ends"]
        );
        assert_eq!(bars[1].0, "gemini (relaunched child)");
        assert!(arrows[0].starts_with("to the relaunch parent alone: ignored; "));
        assert!(arrows[1].starts_with("to the relaunch parent alone: ignored; "));
        assert!(arrows[2].starts_with("if sent now: gemini "), "{arrows:?}");
        let one = header(
            r#""gemini":{"version":"0.61.0","dialect":"gemini-stream-json"}"#,
            r#"{"env":["GEMINI_CLI_NO_RELAUNCH"]}"#,
        );
        let (bars, _) = drawn(&one);
        assert_eq!(
            bars,
            [(
                "gemini (GEMINI_CLI_NO_RELAUNCH: one process)".to_string(),
                Vec::new()
            )]
        );
        let pi = header(r#""pi":{"version":"0.87.1","dialect":"delta-only"}"#, "{}");
        let (bars, arrows) = drawn(&pi);
        assert_eq!(bars, [("pi".to_string(), Vec::new())]);
        assert!(arrows.iter().all(|a| a.starts_with("if sent now: pi ")));
    }
}
