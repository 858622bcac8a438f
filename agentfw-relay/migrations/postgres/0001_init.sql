-- The relay's state. Times are milliseconds since the Unix epoch. No table holds message
-- text: envelopes are sealed to their recipient, and everything else is metadata.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Invites are stored as BLAKE3 hashes; the token itself is shown once.
CREATE TABLE invites (
    hash       BYTEA PRIMARY KEY,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT,
    device     TEXT,
    note       TEXT NOT NULL DEFAULT ''
);

CREATE TABLE devices (
    device        TEXT PRIMARY KEY,
    bundle        TEXT NOT NULL,
    name          TEXT NOT NULL DEFAULT '',
    enrolled_at   BIGINT NOT NULL,
    status        TEXT NOT NULL,
    status_at     BIGINT,
    superseded_by TEXT,
    rotation      TEXT
);

CREATE TABLE agents (
    agent     TEXT PRIMARY KEY,
    device    TEXT NOT NULL,
    kind      TEXT NOT NULL,
    project   TEXT NOT NULL,
    machine   TEXT NOT NULL DEFAULT '',
    live      BIGINT NOT NULL DEFAULT 1,
    last_seen BIGINT NOT NULL
);
CREATE INDEX agents_device ON agents (device);

-- Stored envelopes until their recipient acknowledges them; afterwards the row stays
-- without the frame for the replay window, so a resend is recognised.
CREATE TABLE messages (
    seq          BIGSERIAL PRIMARY KEY,
    sender       TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    digest       TEXT NOT NULL,
    frame        BYTEA,
    size         BIGINT NOT NULL,
    sent_at      BIGINT NOT NULL,
    stored_at    BIGINT NOT NULL,
    delivered_at BIGINT,
    UNIQUE (sender, message_id)
);
CREATE INDEX messages_pending ON messages (recipient, seq) WHERE delivered_at IS NULL;
CREATE INDEX messages_stored ON messages (stored_at);

-- The metadata log (AM4): who, whom, when, size, verdict, rule, reason.
CREATE TABLE audit (
    id         BIGSERIAL PRIMARY KEY,
    at         BIGINT NOT NULL,
    source     TEXT NOT NULL,
    message_id TEXT,
    stage      TEXT NOT NULL,
    from_agent TEXT NOT NULL,
    from_label TEXT NOT NULL,
    to_agent   TEXT NOT NULL,
    to_label   TEXT NOT NULL,
    size       BIGINT NOT NULL,
    hops       BIGINT,
    verdict    TEXT NOT NULL,
    code       TEXT,
    rule       TEXT,
    reason     TEXT
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_from ON audit (from_agent, at);
CREATE INDEX audit_to ON audit (to_agent, at);

-- One row per pair of agents (a < b), for the dashboard (AM1).
CREATE TABLE conversations (
    a                 TEXT NOT NULL,
    b                 TEXT NOT NULL,
    a_label           TEXT NOT NULL,
    b_label           TEXT NOT NULL,
    last_at           BIGINT NOT NULL,
    decisions         BIGINT NOT NULL,
    refusals          BIGINT NOT NULL,
    last_verdict      TEXT NOT NULL,
    last_refusal_at   BIGINT,
    last_refusal_code TEXT,
    last_refusal      TEXT,
    PRIMARY KEY (a, b)
);

-- Central policy as a log of admin actions (JSON); the state is the log applied in order.
CREATE TABLE policy_log (
    seq     BIGSERIAL PRIMARY KEY,
    at      BIGINT NOT NULL,
    origin  TEXT NOT NULL,
    actions TEXT NOT NULL
);

-- Admin sessions, stored as BLAKE3 hashes of the cookie.
CREATE TABLE sessions (
    hash       BYTEA PRIMARY KEY,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
