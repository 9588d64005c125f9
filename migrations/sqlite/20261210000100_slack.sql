-- Slack: one message per item per channel (`ts` is Slack's message id in
-- that channel; `drawn` the hash of what it shows, so an unchanged view is
-- never sent again); the items whose message is owed a draw, marked before
-- the `slack` cursor moves past their change so a crash never loses one;
-- and the taps and thread replies taken from Socket Mode, claimed by their
-- key before they are applied so a redelivered envelope is applied once
-- (`done_at` set once applied).
CREATE TABLE slack_messages (
    item_kind TEXT NOT NULL,
    item_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    ts TEXT NOT NULL,
    drawn TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (item_kind, item_id, channel)
);
CREATE INDEX slack_messages_ts ON slack_messages (channel, ts);
CREATE TABLE slack_owed (
    item_kind TEXT NOT NULL,
    item_id TEXT NOT NULL,
    PRIMARY KEY (item_kind, item_id)
);
CREATE TABLE slack_inputs (
    input_key TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    taken_at INTEGER NOT NULL,
    done_at INTEGER
);
