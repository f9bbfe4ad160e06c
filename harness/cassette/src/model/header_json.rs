//! The header's JSON: its fields in their order, the CLI's section under the key of the agent
//! it imitates (the registry's [`AgentSpec::header_key`](pi_grammar::AgentSpec::header_key):
//! `pi`, `claude`, `codex`, `gemini`). Written under the key of [`Header::agent`]; read
//! under any registered key, exactly one, unknown keys refused. Whether the key read is the
//! one its dialect names is `parse::header`'s check, with a message naming both.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use pi_grammar::Agent;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::header::{Expect, Header, Origin, PiSource, ProcessBehaviour, Scenario};

/// The header's keys, the agents' sections among them (for serde's unknown-field message).
fn fields() -> &'static [&'static str] {
    static FIELDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    FIELDS.get_or_init(|| {
        let mut f = vec!["format", "version", "mode"];
        f.extend(Agent::ALL.map(|a| a.spec().header_key));
        f.extend(["scenario", "expect", "process", "redactions", "origin"]);
        f
    })
}

impl Serialize for Header {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mode = self.mode.as_ref();
        let expect = (!self.expect.is_empty()).then_some(&self.expect);
        let process = (!self.process.is_pi_default()).then_some(&self.process);
        let redactions = (!self.redactions.is_empty()).then_some(&self.redactions);
        let optional = [
            mode.is_some(),
            expect.is_some(),
            process.is_some(),
            redactions.is_some(),
        ];
        let len = 5 + optional.iter().filter(|o| **o).count();
        let mut st = s.serialize_struct("Header", len)?;
        st.serialize_field("format", &self.format)?;
        st.serialize_field("version", &self.version)?;
        if let Some(m) = mode {
            st.serialize_field("mode", m)?;
        }
        st.serialize_field(self.agent().spec().header_key, &self.pi)?;
        st.serialize_field("scenario", &self.scenario)?;
        if let Some(e) = expect {
            st.serialize_field("expect", e)?;
        }
        if let Some(p) = process {
            st.serialize_field("process", p)?;
        }
        if let Some(r) = redactions {
            st.serialize_field("redactions", r)?;
        }
        st.serialize_field("origin", &self.origin)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("Header", fields(), HeaderVisitor)
    }
}

struct HeaderVisitor;

/// `slot` set to the next value, unless it was set already.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a cassette header")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut format: Option<String> = None;
        let mut version: Option<u32> = None;
        let mut mode: Option<Option<String>> = None;
        let mut source: Option<(Agent, PiSource)> = None;
        let mut scenario: Option<Scenario> = None;
        let mut expect: Option<Expect> = None;
        let mut process: Option<ProcessBehaviour> = None;
        let mut redactions: Option<BTreeMap<String, String>> = None;
        let mut origin: Option<Origin> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => once(&mut map, &mut format, "format")?,
                "version" => once(&mut map, &mut version, "version")?,
                "mode" => once(&mut map, &mut mode, "mode")?,
                "scenario" => once(&mut map, &mut scenario, "scenario")?,
                "expect" => once(&mut map, &mut expect, "expect")?,
                "process" => once(&mut map, &mut process, "process")?,
                "redactions" => once(&mut map, &mut redactions, "redactions")?,
                "origin" => once(&mut map, &mut origin, "origin")?,
                other => {
                    let Some(agent) = Agent::from_header_key(other) else {
                        return Err(de::Error::unknown_field(other, fields()));
                    };
                    if let Some((first, _)) = source {
                        return Err(de::Error::custom(format!(
                            "two agents' sections, `{}` and `{other}`: a cassette imitates one CLI",
                            first.spec().header_key
                        )));
                    }
                    source = Some((agent, map.next_value()?));
                }
            }
        }
        let missing = de::Error::missing_field;
        Ok(Header {
            format: format.ok_or_else(|| missing("format"))?,
            version: version.ok_or_else(|| missing("version"))?,
            mode: mode.flatten(),
            // The default agent's key is the one a header without any is told it lacks.
            pi: source
                .map(|(_, s)| s)
                .ok_or_else(|| missing(Agent::default().spec().header_key))?,
            scenario: scenario.ok_or_else(|| missing("scenario"))?,
            expect: expect.unwrap_or_default(),
            process: process.unwrap_or_default(),
            redactions: redactions.unwrap_or_default(),
            origin: origin.ok_or_else(|| missing("origin"))?,
        })
    }
}
