-- Several daemons on one database (issue 12, item 5).
--
-- leases: a job only one daemon may do at a time (polling Telegram: the Bot
-- API allows one consumer per bot), held by `holder` until `expires_at`
-- (ms). The holder renews it; another daemon takes it only once it has
-- lapsed (a guarded upsert), so a crashed holder's job moves on within one
-- lease period and two live daemons never hold it at once.
CREATE TABLE leases (
    name       TEXT    PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    taken_at   INTEGER NOT NULL
);

-- chat_updates: the Telegram updates some daemon has taken (claimed on
-- receipt, before any write), so an update that reaches two daemons (a
-- poller taking over before the last one confirmed its offset, a webhook
-- retried to another daemon) is applied once. Pruned after a day: Telegram
-- keeps an update for at most 24 hours.
CREATE TABLE chat_updates (
    update_id  INTEGER PRIMARY KEY,
    holder     TEXT    NOT NULL,
    taken_at   INTEGER NOT NULL
);
CREATE INDEX chat_updates_taken ON chat_updates (taken_at);
