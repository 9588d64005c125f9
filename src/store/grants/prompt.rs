//! Which actions are agents' permission prompts, and what a prompt says:
//! its agent, tool and working directory, and the grant approving it would save.

use super::pattern;
use crate::store::actions::Action;

/// The agent whose prompts are `claude.<Tool>` actions.
pub const CLAUDE: &str = "claude";

/// The agent whose prompts are `codex.<Tool>` actions.
pub const CODEX: &str = "codex";

/// The agents whose permission prompts become `<agent>.<Tool>` actions.
pub const AGENTS: [&str; 2] = [CLAUDE, CODEX];

/// The agent and tool of an agent's permission prompt (`codex.Bash` →
/// (`codex`, `Bash`)); `None` for any other action.
pub fn prompt_of(a: &Action) -> Option<(&'static str, &str)> {
    AGENTS.iter().find_map(|agent| {
        a.kind
            .strip_prefix(agent)
            .and_then(|rest| rest.strip_prefix('.'))
            .filter(|tool| !tool.is_empty())
            .map(|tool| (*agent, tool))
    })
}

/// The tool of an agent's permission prompt (`claude.Bash` → `Bash`).
pub fn prompt_tool(a: &Action) -> Option<&str> {
    prompt_of(a).map(|(_, tool)| tool)
}

/// The grant a "for this session" / "always" approval of `a` would save:
/// (tool, pattern); `None` when none is offered.
pub fn offer(a: &Action) -> Option<(String, String)> {
    let tool = prompt_tool(a)?;
    let p = pattern::derive(tool, &a.effective_args)?;
    Some((tool.to_string(), p))
}

/// The working directory of an agent's permission prompt, as its hook
/// wrote it into the summary (`Claude Code wants to use Bash (in
/// /home/dev/shop): npm test`); `None` when the summary names none (or a
/// cut summary lost its end).
pub fn prompt_cwd(a: &Action) -> Option<&str> {
    prompt_of(a)?;
    let (_, rest) = a.summary.split_once(" (in ")?;
    let cwd = match rest.find("): ") {
        Some(i) => &rest[..i],
        None => rest.strip_suffix(')')?,
    };
    let cwd = cwd.strip_prefix('/').map(|_| cwd)?;
    (!cwd.contains('\n')).then_some(cwd)
}
