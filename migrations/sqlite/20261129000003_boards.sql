-- Boards: named checklists of a project whose blocked rows wait on a person.
-- `revision` is exposed as `board_version`: every write to the board or any of
-- its rows bumps it, and writers pass the version they read (CAS).
CREATE TABLE boards (
    id            TEXT    PRIMARY KEY,
    project       TEXT    NOT NULL,
    title         TEXT    NOT NULL,
    revision      INTEGER NOT NULL DEFAULT 1,    -- board_version
    archived_at   INTEGER,                       -- NULL = active
    auto_archived INTEGER NOT NULL DEFAULT 0,    -- 1 = archived because progress reached 100 %
    agent         TEXT    NOT NULL DEFAULT '',   -- the agent that owns the board
    session       TEXT    NOT NULL DEFAULT '',   -- its session, for wake-ups
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (project, title)
);
CREATE INDEX boards_active ON boards(project, archived_at);

-- One row of a board. The agent writes the step fields (status … outcome);
-- a human writes the response fields (annotation*, handled*); delivery to an
-- agent is recorded in *_seen_at, which is not an acknowledgement: only a
-- status change (or an outcome) acknowledges.
CREATE TABLE board_rows (
    id                 TEXT    PRIMARY KEY,
    board_id           TEXT    NOT NULL REFERENCES boards(id) ON DELETE CASCADE,
    label              TEXT    NOT NULL,
    status             TEXT    NOT NULL DEFAULT 'tracked'
        CHECK (status IN ('tracked', 'partial', 'missing', 'na', 'done', 'blocked')),
    note               TEXT    NOT NULL DEFAULT '',
    next_step          TEXT    NOT NULL DEFAULT '',
    owner              TEXT    NOT NULL DEFAULT ''
        CHECK (owner IN ('', 'decision', 'task', 'approval')),
    impact             TEXT    NOT NULL DEFAULT '',
    options            TEXT    NOT NULL DEFAULT '[]',   -- JSON array of {label, detail, recommended}
    context            TEXT    NOT NULL DEFAULT '',
    outcome            TEXT    NOT NULL DEFAULT '',
    outcome_at         INTEGER,
    revision           INTEGER NOT NULL DEFAULT 1,      -- the row's CAS token
    action_version     INTEGER NOT NULL DEFAULT 1,      -- which step; bumped by board_advance
    action_started_at  INTEGER NOT NULL,
    history            TEXT    NOT NULL DEFAULT '[]',   -- JSON array of archived steps
    annotation         TEXT,
    annotation_kind    TEXT CHECK (annotation_kind IS NULL OR annotation_kind IN ('answer', 'clarify', 'decline')),
    annotation_source  TEXT CHECK (annotation_source IS NULL OR annotation_source IN ('inbox', 'chat')),
    annotated_by       TEXT,
    annotated_at       INTEGER,
    annotation_seen_at INTEGER,
    handled_at         INTEGER,
    handled_by         TEXT,
    handled_seen_at    INTEGER,
    position           INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    UNIQUE (board_id, label)
);
CREATE INDEX board_rows_board ON board_rows(board_id, position);
CREATE INDEX board_rows_handoffs ON board_rows(handled_at) WHERE handled_at IS NOT NULL AND outcome = '';

-- Every annotation ever written on a row (including clears), append-only.
CREATE TABLE board_row_annotations (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    row_id         TEXT    NOT NULL,
    board_id       TEXT    NOT NULL,
    action_version INTEGER NOT NULL,
    annotation     TEXT,                            -- NULL = a clear
    kind           TEXT,
    source         TEXT    NOT NULL,
    by             TEXT    NOT NULL DEFAULT '',
    at             INTEGER NOT NULL
);
CREATE INDEX board_row_annotations_row ON board_row_annotations(row_id, seq);

CREATE TRIGGER board_row_annotations_no_update BEFORE UPDATE ON board_row_annotations
BEGIN SELECT RAISE(ABORT, 'annotation history is append-only'); END;
CREATE TRIGGER board_row_annotations_no_delete BEFORE DELETE ON board_row_annotations
BEGIN SELECT RAISE(ABORT, 'annotation history is append-only'); END;
