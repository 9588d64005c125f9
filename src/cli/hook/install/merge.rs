//! The merge itself: the agent's JSON read into a tree that keeps key order,
//! handoff's hook groups added where they are missing, Codex's feature flag
//! set in config.toml through `toml_edit`, and the unified diff shown before
//! a write.

use std::path::Path;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Agent, HOOK_TIMEOUT_SECS, LATER_TIMEOUT_SECS, command, events};
use crate::cli::{exit, fail};

/// A JSON value that keeps its objects' key order (serde_json's map sorts).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum J {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<J, E> {
                Ok(J::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<J, E> {
                Ok(J::Num(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<J, E> {
                Ok(J::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<J, E> {
                serde_json::Number::from_f64(n)
                    .map(J::Num)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, s: &str) -> Result<J, E> {
                Ok(J::Str(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<J, E> {
                Ok(J::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(J::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, J>()? {
                    v.push((k, x));
                }
                Ok(J::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl J {
    fn get_mut(&mut self, key: &str) -> Option<&mut J> {
        match self {
            J::Obj(kv) => kv.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Pretty-printed with two-space indents, as agents write their settings.
    fn write(&self, out: &mut String, indent: usize) {
        let pad = |n: usize| "  ".repeat(n);
        let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(&b.to_string()),
            J::Num(n) => out.push_str(&n.to_string()),
            J::Str(s) => out.push_str(&quote(s)),
            J::Arr(v) if v.is_empty() => out.push_str("[]"),
            J::Obj(v) if v.is_empty() => out.push_str("{}"),
            J::Arr(v) => {
                out.push_str("[\n");
                for (i, x) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    x.write(out, indent + 1);
                    out.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            J::Obj(v) => {
                out.push_str("{\n");
                for (i, (k, x)) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    out.push_str(&quote(k));
                    out.push_str(": ");
                    x.write(out, indent + 1);
                    out.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
        }
    }

    pub(super) fn pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }
}

/// The matcher group to add under `hooks.<event>`. Claude Code matches
/// every tool with `*` (its Stop and UserPromptSubmit groups take no
/// matcher); Codex matchers are regular expressions, and a group without
/// one matches every tool.
fn group(agent: Agent, event: &str) -> J {
    let timeout = if event == "PermissionRequest" {
        HOOK_TIMEOUT_SECS
    } else {
        LATER_TIMEOUT_SECS
    };
    let hook = J::Obj(vec![
        ("type".into(), J::Str("command".into())),
        ("command".into(), J::Str(command(agent).into())),
        ("timeout".into(), J::Num(timeout.into())),
    ]);
    let mut g = Vec::new();
    if agent == Agent::Claude && matches!(event, "PermissionRequest" | "PostToolUse") {
        g.push(("matcher".into(), J::Str("*".into())));
    }
    g.push(("hooks".into(), J::Arr(vec![hook])));
    J::Obj(g)
}

/// The whole entry, as it would stand in an empty file.
pub(super) fn snippet(agent: Agent) -> J {
    let events = events(agent)
        .iter()
        .map(|e| (e.to_string(), J::Arr(vec![group(agent, e)])))
        .collect();
    J::Obj(vec![("hooks".into(), J::Obj(events))])
}

/// Whether a matcher group already runs `cmd`.
fn runs(group: &J, cmd: &str) -> bool {
    let J::Obj(kv) = group else { return false };
    kv.iter().any(|(k, v)| {
        k == "hooks"
            && matches!(v, J::Arr(hs) if hs.iter().any(|h| matches!(h,
                J::Obj(f) if f.iter().any(|(k, c)| k == "command"
                    && matches!(c, J::Str(s) if s.trim() == cmd || s.trim().starts_with(&format!("{cmd} ")))))))
    })
}

/// `text` (the file, or `None` when it does not exist) with the entry
/// merged in; `Ok(None)` when it is there already.
pub(super) fn merge_json(
    agent: Agent,
    path: &Path,
    text: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let shown = path.display();
    let mut root = match text {
        None => J::Obj(Vec::new()),
        Some(t) if t.trim().is_empty() => J::Obj(Vec::new()),
        Some(t) => serde_json::from_str::<J>(t).map_err(|e| {
            fail(
                exit::INVALID,
                format!("{shown} is not valid JSON ({e}): fix it first; nothing was written"),
            )
        })?,
    };
    let shape = |what: &str| {
        fail(
            exit::INVALID,
            format!(
                "{shown}: {what}, not the shape the agent reads: fix it first; nothing was written"
            ),
        )
    };
    let J::Obj(top) = &mut root else {
        return Err(shape("the file is not a JSON object"));
    };
    if !top.iter().any(|(k, _)| k == "hooks") {
        top.push(("hooks".into(), J::Obj(Vec::new())));
    }
    let Some(J::Obj(events)) = root.get_mut("hooks") else {
        return Err(shape("`hooks` is not an object"));
    };
    let mut changed = false;
    for event in self::events(agent) {
        if !events.iter().any(|(k, _)| k == event) {
            events.push((event.to_string(), J::Arr(Vec::new())));
        }
        let Some((_, J::Arr(groups))) = events.iter_mut().find(|(k, _)| k == event) else {
            return Err(shape(&format!("`hooks.{event}` is not a list")));
        };
        if !groups.iter().any(|g| runs(g, command(agent))) {
            groups.push(group(agent, event));
            changed = true;
        }
    }
    Ok(changed.then(|| root.pretty()))
}

/// Codex's `config.toml` with hooks turned on; `Ok(None)` when they are.
pub(super) fn merge_toml(path: &Path, text: Option<&str>) -> anyhow::Result<Option<String>> {
    let shown = path.display();
    let mut doc = text
        .unwrap_or("")
        .parse::<toml_edit::DocumentMut>()
        .map_err(|e| {
            let e = e.to_string();
            let first = e.lines().next().unwrap_or("").to_string();
            fail(
                exit::INVALID,
                format!("{shown} is not valid TOML ({first}): fix it first; nothing was written"),
            )
        })?;
    let features = doc
        .entry("features")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(features) = features.as_table_like_mut() else {
        return Err(fail(
            exit::INVALID,
            format!("{shown}: `features` is not a table: fix it first; nothing was written"),
        ));
    };
    // `hooks` is the canonical name of the flag, `codex_hooks` its
    // deprecated older one: either set to false is the person's choice.
    let flag = |k: &str| features.get(k).and_then(|v| v.as_bool());
    if let Some(k) = ["hooks", "codex_hooks"]
        .into_iter()
        .find(|k| flag(k) == Some(false))
    {
        return Err(fail(
            exit::REFUSED,
            format!(
                "{shown} turns hooks off (`[features] {k} = false`): set it to true yourself if you want handoff's hook; nothing was written"
            ),
        ));
    }
    if flag("hooks") == Some(true) {
        return Ok(None);
    }
    features.insert("hooks", toml_edit::value(true));
    Ok(Some(doc.to_string()))
}

/// A unified diff of `old` → `new` (three lines of context).
pub(super) fn diff(path: &Path, old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = crate::ops::claude::preview::align(&a, &b);
    let p = path.display();
    let mut out = if old.is_empty() {
        format!("--- /dev/null\n+++ {p}\n")
    } else {
        format!("--- {p}\n+++ {p}\n")
    };
    // Line numbers before each op, in a and in b.
    let (mut ia, mut ib) = (0usize, 0usize);
    let mut at = Vec::with_capacity(ops.len());
    for (tag, _) in &ops {
        at.push((ia, ib));
        match tag {
            '-' => ia += 1,
            '+' => ib += 1,
            _ => {
                ia += 1;
                ib += 1;
            }
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != ' ').collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(3);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 7 {
            end = changed[i];
            i += 1;
        }
        let end = (end + 3).min(ops.len() - 1);
        let span = &ops[start..=end];
        let na = span.iter().filter(|(t, _)| *t != '+').count();
        let nb = span.iter().filter(|(t, _)| *t != '-').count();
        let (sa, sb) = at[start];
        let from = |s: usize, n: usize| if n == 0 { s } else { s + 1 };
        out.push_str(&format!(
            "@@ -{},{na} +{},{nb} @@\n",
            from(sa, na),
            from(sb, nb)
        ));
        for (t, l) in span {
            out.push(*t);
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_merge_keeps_order_and_is_idempotent() {
        let p = Path::new("s.json");
        let old = "{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"Notification\": []\n  },\n  \"env\": {}\n}\n";
        let new = merge_json(Agent::Claude, p, Some(old)).unwrap().unwrap();
        assert!(new.starts_with("{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"Notification\": [],\n    \"PermissionRequest\": ["), "{new}");
        assert!(new.ends_with("  \"env\": {}\n}\n"), "{new}");
        assert_eq!(merge_json(Agent::Claude, p, Some(&new)).unwrap(), None);
        let d = diff(p, old, &new);
        assert!(d.starts_with("--- s.json\n+++ s.json\n@@ -1,"), "{d}");
        assert!(
            d.contains("-    \"Notification\": []\n+    \"Notification\": [],\n"),
            "{d}"
        );
    }

    #[test]
    fn toml_merge_keeps_comments_and_refuses_a_disabled_flag() {
        let p = Path::new("c.toml");
        let old = "# mine\nmodel = \"o3\"\n\n[features]\nweb = true\n";
        let new = merge_toml(p, Some(old)).unwrap().unwrap();
        assert_eq!(
            new,
            "# mine\nmodel = \"o3\"\n\n[features]\nweb = true\nhooks = true\n"
        );
        assert_eq!(merge_toml(p, Some(&new)).unwrap(), None);
        assert!(merge_toml(p, Some("[features]\nhooks = false\n")).is_err());
        assert!(merge_toml(p, Some("[features]\ncodex_hooks = false\n")).is_err());
        // The deprecated key alone: the canonical one is added beside it.
        assert_eq!(
            merge_toml(p, Some("[features]\ncodex_hooks = true\n"))
                .unwrap()
                .unwrap(),
            "[features]\ncodex_hooks = true\nhooks = true\n"
        );
        assert!(merge_toml(p, Some("[features\n")).is_err());
    }
}
