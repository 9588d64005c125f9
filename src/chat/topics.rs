//! A forum topic per project or per agent session: for a
//! chat configured with `topics = "project" | "session"`, the first item of
//! a project (or session) creates its topic with `createForumTopic`, the
//! store remembers it, and every later push of that project goes there,
//! also after a restart. A fixed topic (the chat's `topic`, a route's)
//! wins. This file decides only where an item goes, not what it shows.

use teloxide::prelude::*;

use super::Bridge;
use super::view::Meta;
use crate::config::{Target, TopicsBy};

/// Telegram's longest topic name, in characters.
const MAX_NAME: usize = 128;

/// The store key and the topic name for an item, by the chat's setting.
fn key_and_name(by: TopicsBy, meta: &Meta) -> (String, String) {
    let project = if meta.project.is_empty() {
        "(no project)"
    } else {
        meta.project.as_str()
    };
    let (key, name) = match by {
        TopicsBy::Session if !meta.session.is_empty() => (
            format!("session:{}", meta.session),
            format!("{project} · {}", meta.session),
        ),
        _ => (format!("project:{}", meta.project), project.to_string()),
    };
    (key, name.chars().take(MAX_NAME).collect())
}

impl Bridge {
    /// The forum topic an item going to `target` is sent in: the target's
    /// fixed topic, else its project's (or session's) topic in a chat with
    /// `topics`, created on first use; `None` for the group's general topic.
    pub(super) async fn topic_for(&self, target: &Target, meta: &Meta) -> Option<i32> {
        if target.topic.is_some() {
            return target.topic;
        }
        let by = self
            .config
            .chat_by_id(target.chat_id)
            .and_then(|c| c.topics)?;
        let (key, name) = key_and_name(by, meta);
        // A tokio Mutex, held across createForumTopic: two items of one new
        // project pushed together must not create two topics.
        let _one = self.topics.lock().await;
        match self.ops.topic_get(target.chat_id, &key).await {
            Ok(Some(t)) => return Some(t),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(chat_id = target.chat_id, %key, error = %e, "cannot read the forum topic; sending to the general topic");
                return None;
            }
        }
        // Why fall back to the general topic on failure: where a message
        // lands matters less than that it lands (a group that is not a
        // forum, a bot without the right to manage topics).
        let created = match self
            .bot
            .create_forum_topic(ChatId(target.chat_id), name.clone())
            .await
        {
            Ok(t) => t.thread_id.0.0,
            Err(e) => {
                tracing::warn!(chat_id = target.chat_id, %key, error = %e, "cannot create a forum topic (is the group a forum, and may the bot manage topics?); sending to the general topic");
                return None;
            }
        };
        tracing::info!(chat_id = target.chat_id, %key, thread_id = created, "forum topic created");
        match self
            .ops
            .topic_save(target.chat_id, &key, &name, created)
            .await
        {
            Ok(held) => Some(held),
            Err(e) => {
                tracing::warn!(chat_id = target.chat_id, %key, error = %e, "cannot remember the forum topic; the next restart creates another");
                Some(created)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(project: &str, session: &str) -> Meta {
        Meta {
            project: project.into(),
            agent: String::new(),
            session: session.into(),
            action_kind: None,
            live: true,
            quiet: false,
        }
    }

    #[test]
    fn keys_name_the_project_or_the_session() {
        assert_eq!(
            key_and_name(TopicsBy::Project, &meta("shop", "s-1")),
            ("project:shop".into(), "shop".into())
        );
        assert_eq!(
            key_and_name(TopicsBy::Session, &meta("shop", "s-1")),
            ("session:s-1".into(), "shop · s-1".into())
        );
        // No session: the project's topic.
        assert_eq!(
            key_and_name(TopicsBy::Session, &meta("", "")),
            ("project:".into(), "(no project)".into())
        );
        let long = "x".repeat(300);
        assert_eq!(
            key_and_name(TopicsBy::Project, &meta(&long, ""))
                .1
                .chars()
                .count(),
            MAX_NAME
        );
    }
}
