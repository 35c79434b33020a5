import type Database from 'better-sqlite3';
import { fillTallies } from './tallies.js';

/**
 * The state database schema, as ordered migrations. `PRAGMA user_version`
 * holds the number of migrations applied; each runs once, in its own
 * transaction, and a released migration is never edited (add a new one).
 */

/** One schema step; `version` is the user_version after it ran. */
export interface Migration {
  version: number;
  description: string;
  sql: string;
  /** Run after `sql` in the same transaction: what SQL alone cannot compute (migration 15's value-guard bases). */
  fill?: (conn: Database.Database) => void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'datasets, snapshot records, rebuild staging, plans and journal',
    sql: `
      -- One row per dataset: what the server confirmed, the last source, a held draft.
      CREATE TABLE datasets (
        dataset            TEXT PRIMARY KEY,
        active_version     INTEGER,
        etag               TEXT,
        confirmed_at       INTEGER,
        source_hash        TEXT,
        source_rows        INTEGER,
        source_at          INTEGER,
        last_job_ms        INTEGER,
        last_job_records   INTEGER,
        last_outcome       TEXT,
        last_outcome_detail TEXT,
        last_outcome_at    INTEGER,
        held_kind          TEXT,
        held_version       INTEGER,
        held_reason        TEXT,
        held_plan_id       TEXT,
        held_summary       TEXT,
        held_since         INTEGER,
        rebuilt_at         INTEGER
      ) STRICT;

      -- The published records as last confirmed, in record_id byte order (BINARY).
      CREATE TABLE records (
        dataset        TEXT NOT NULL,
        record_id      TEXT NOT NULL COLLATE BINARY,
        json           TEXT NOT NULL,
        hash           TEXT NOT NULL,
        owned          INTEGER NOT NULL DEFAULT 0,
        foreign_fields TEXT,
        foreign_at     INTEGER,
        PRIMARY KEY (dataset, record_id)
      ) STRICT, WITHOUT ROWID;

      -- Records read from the server during a rebuild, swapped in on commit.
      CREATE TABLE rebuild_records (
        dataset   TEXT NOT NULL,
        record_id TEXT NOT NULL COLLATE BINARY,
        json      TEXT NOT NULL,
        hash      TEXT NOT NULL,
        PRIMARY KEY (dataset, record_id)
      ) STRICT, WITHOUT ROWID;

      -- One row per executed plan; at most one open per dataset.
      CREATE TABLE plans (
        plan_id    TEXT PRIMARY KEY,
        dataset    TEXT NOT NULL,
        path       TEXT NOT NULL,
        summary    TEXT,
        status     TEXT NOT NULL CHECK (status IN ('open', 'finished')),
        outcome    TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX plans_one_open ON plans (dataset) WHERE status = 'open';

      -- Intent recorded before each request, then its result.
      CREATE TABLE journal (
        id              INTEGER PRIMARY KEY,
        plan_id         TEXT NOT NULL REFERENCES plans (plan_id),
        step            INTEGER NOT NULL,
        kind            TEXT NOT NULL,
        intent          TEXT,
        idempotency_key TEXT,
        body_hash       TEXT,
        draft_version   INTEGER,
        job_id          TEXT,
        status          TEXT NOT NULL CHECK (status IN ('intent', 'done', 'failed')),
        result          TEXT,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        UNIQUE (plan_id, step)
      ) STRICT;
    `,
  },
  {
    version: 2,
    description: 'remember that the dataset key publishes writes at once (a legacy key, A12)',
    sql: `
      -- When a write asked to stage came back published; NULL while the key is not known to do that.
      ALTER TABLE datasets ADD COLUMN key_publishes_at INTEGER;
    `,
  },
  {
    version: 3,
    description: 'per-dataset locks shared by every process using the state database',
    sql: `
      -- Who works on a dataset now (sync, resume, reconcile, approve, discard, plan): one row while held.
      -- A lease that is not refreshed runs out, so a process that died is taken over.
      CREATE TABLE locks (
        dataset     TEXT PRIMARY KEY,
        owner_id    TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        host        TEXT NOT NULL,
        label       TEXT NOT NULL,
        purpose     TEXT NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 4,
    description: "the holder's boot id in a dataset lock, so a lock left from before a reboot is stale at once",
    sql: `
      -- /proc/sys/kernel/random/boot_id of the holder's boot; NULL where it cannot be read (then pid and lease decide).
      ALTER TABLE locks ADD COLUMN boot_id TEXT;
    `,
  },
  {
    version: 5,
    description: "the holder's machine id in a dataset lock, so a lock decides 'this machine' by machine, not by hostname",
    sql: `
      -- /etc/machine-id of the holder's machine; NULL where it cannot be read (then only the lease decides).
      ALTER TABLE locks ADD COLUMN machine_id TEXT;
    `,
  },
  {
    version: 6,
    description: 'the last re-apply of an export after drift: its hash, the drift answered, and its status',
    sql: `
      -- Set with source_hash = NULL when a reconcile has the last export applied again (src/daemon/drift-repair.ts):
      -- the same drift after the same export was applied again is not repaired twice (a server that normalises a field),
      -- and a re-queued export that had not run at a crash (status pending) is queued again at start.
      -- reapply_status: pending (queued, not run), done, repeated (the same drift came back: not applied again).
      ALTER TABLE datasets ADD COLUMN reapply_hash TEXT;
      ALTER TABLE datasets ADD COLUMN reapply_drift TEXT;
      ALTER TABLE datasets ADD COLUMN reapply_status TEXT;
    `,
  },
  {
    version: 7,
    description: 'the rolling request window per API key, shared by every process using the state database (A24)',
    sql: `
      -- One row per request sent (retries and refused ones included) in the last 60 s, by any process of this
      -- state database: the daemon and every CLI command share the server's per-key budget (src/snapshot/rate-window.ts).
      -- key_fp is a fingerprint of the key (a truncated SHA-256), never the key; at is when the slot was taken, then
      -- when its request was answered. Rows older than the window are deleted.
      CREATE TABLE rate_slots (
        slot   INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: an answer restamps its own slot only
        key_fp TEXT NOT NULL,
        at     INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX rate_slots_by_key ON rate_slots (key_fp, at);
    `,
  },
  {
    version: 8,
    description: 'what each key has shown about staging (a staged write or job answered as a draft, or published at once, A12), per dataset and key',
    sql: `
      -- Issue 11: a change a guard holds, or one to stage only, is sent only through a key that has shown that it stages.
      -- key_id: Secret.fingerprint() of the key (a hash, never the key), so a reissued key has to show it again.
      -- channel: records (POST/PATCH/DELETE ?publish=false) or jobs (PUT /records, POST /imports with options.publish false):
      -- a server may honour publish=false on one and not the other for a legacy key.
      -- datasets.key_publishes_at (migration 2) is no longer read: it did not say which key.
      CREATE TABLE key_staging (
        dataset  TEXT NOT NULL,
        key_id   TEXT NOT NULL,
        channel  TEXT NOT NULL CHECK (channel IN ('records', 'jobs')),
        shown    TEXT NOT NULL CHECK (shown IN ('stages', 'publishes')),
        shown_at INTEGER NOT NULL,
        PRIMARY KEY (dataset, key_id, channel)
      ) STRICT;
    `,
  },
  {
    version: 9,
    description: 'when the dataset last ended a sync published or unchanged, for the metric that survives a restart',
    sql: `
      -- Set with last_outcome when that outcome is published or unchanged (src/snapshot/dataset-state.ts);
      -- the daemon gives it to dataset_connector_last_success_timestamp_seconds at start.
      ALTER TABLE datasets ADD COLUMN last_success_at INTEGER;
    `,
  },
  {
    version: 10,
    description: 'history of what the connector published: one row per version, per-record deltas in chunks; paused datasets',
    sql: `
      -- Issue 14 (src/history/). One row per change that moved the snapshot (a sync, a restore, a write published
      -- at once, or a rebuild that found the server's records changed), in the same transaction as the snapshot.
      -- seq: this database's own order (several rows may share a server version); kind: base (the state when history
      -- began), sync, restore, server. detail: JSON (counts, the delete guard's ratio, held guards approved).
      CREATE TABLE history_versions (
        dataset   TEXT NOT NULL,
        seq       INTEGER NOT NULL,
        version   INTEGER,
        at        INTEGER NOT NULL,
        kind      TEXT NOT NULL,
        plan_id   TEXT,
        file      TEXT,
        file_hash TEXT,
        detail    TEXT,
        PRIMARY KEY (dataset, seq)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX history_versions_by_version ON history_versions (dataset, version);

      -- Per record, its changes as entries (src/snapshot/history-codec.ts), in chunks: the newest chunk is text and grows by
      -- appending; a full one is deflated. An entry holds what is needed to undo it (a field's old value, a deleted
      -- record whole), so the state at any kept seq is the snapshot with later entries undone.
      CREATE TABLE history_records (
        dataset   TEXT NOT NULL,
        record_id TEXT NOT NULL COLLATE BINARY,
        first_seq INTEGER NOT NULL,
        last_seq  INTEGER NOT NULL,
        entries   INTEGER NOT NULL,
        data      ANY NOT NULL,
        PRIMARY KEY (dataset, record_id, first_seq)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX history_records_by_last ON history_records (dataset, last_seq);

      -- The oldest seq whose state history can still give (pruning moves it); NULL: everything since history began.
      ALTER TABLE datasets ADD COLUMN history_from_seq INTEGER;
      -- confirm() reads the records with foreign-edited fields on every call: without this it scans the whole
      -- snapshot each time, which a history of thousands of small confirms (5-minute stock updates) pays for.
      CREATE INDEX records_foreign ON records (dataset) WHERE foreign_fields IS NOT NULL;
      -- pause: exports are not taken for the dataset (files wait in the folder) until resume; JSON {at, by, feed}.
      ALTER TABLE datasets ADD COLUMN paused TEXT;
    `,
  },
  {
    version: 11,
    description: 'feed state: each feed\'s last published value per record and field, and its last file',
    sql: `
      -- Issue 13 (src/feeds/state.ts). Written only by the ledger's published transition, in the same transaction as
      -- the snapshot's confirmation: a held, discarded or refused change never lands here. A full feed's export
      -- takes the fields other feeds own from here (a catalogue without stock keeps the stock the stock feed set).
      -- value: canonical JSON; at: the file's time (ms), which precedence: newest compares; line: 1-based in file.
      CREATE TABLE feed_values (
        dataset   TEXT NOT NULL,
        record_id TEXT NOT NULL COLLATE BINARY,
        field     TEXT NOT NULL,
        feed      TEXT NOT NULL,
        value     TEXT NOT NULL,
        file      TEXT,
        sha256    TEXT,
        line      INTEGER NOT NULL,
        at        INTEGER NOT NULL,
        PRIMARY KEY (dataset, record_id, field, feed)
      ) STRICT, WITHOUT ROWID;

      -- The last file each feed published (status).
      CREATE TABLE feed_files (
        dataset      TEXT NOT NULL,
        feed         TEXT NOT NULL,
        file         TEXT,
        sha256       TEXT,
        at           INTEGER NOT NULL,
        published_at INTEGER NOT NULL,
        PRIMARY KEY (dataset, feed)
      ) STRICT;
    `,
  },
  {
    version: 12,
    description: 'fan-out: the last file of a shared export each taking feed is done with',
    sql: `
      -- Issue 13's fan-out (src/snapshot/export-takers.ts): one file of an export goes to several datasets. Once a
      -- dataset is done with it (published, unchanged, held for a person) its sha256 is kept here, so a retry of the
      -- file (another dataset failed) or a restart between datasets runs only the datasets not done, and never sends
      -- an older file's values again over what a dataset published since. The last file per taker only: the same
      -- content coming back later (stock went back) is a new export.
      CREATE TABLE export_takers (
        export  TEXT NOT NULL,
        dataset TEXT NOT NULL,
        feed    TEXT NOT NULL,
        sha256  TEXT NOT NULL,
        result  TEXT NOT NULL,
        at      INTEGER NOT NULL,
        PRIMARY KEY (export, dataset, feed)
      ) STRICT;
    `,
  },
  {
    version: 13,
    description: 'paused feeds: one feed of a dataset stops taking exports until resume --feed',
    sql: `
      -- Issue 14 with feeds (src/snapshot/feed-pauses.ts): while a row is here the feed's files wait in its folder,
      -- its schedules skip and sync --feed refuses (FEED_PAUSED); the dataset's other feeds go on. at: ms; by: who.
      CREATE TABLE feed_pauses (
        dataset TEXT NOT NULL,
        feed    TEXT NOT NULL,
        at      INTEGER NOT NULL,
        by      TEXT NOT NULL,
        PRIMARY KEY (dataset, feed)
      ) STRICT;
    `,
  },
  {
    version: 14,
    description: 'keys refused publish: plan says a person publishes until the key publishes again',
    sql: `
      -- Issue 12 (src/snapshot/dataset-state.ts publishDenied): the API does not show a key's roles, so a key that
      -- refused a publish (PUBLISH_REQUIRED, FORBIDDEN) is remembered here and planned without the publish role; a
      -- publish it is later allowed removes the row. denied_at: ms.
      CREATE TABLE key_publish (
        dataset   TEXT NOT NULL,
        key_id    TEXT NOT NULL,
        denied_at INTEGER NOT NULL,
        PRIMARY KEY (dataset, key_id)
      ) STRICT;
    `,
  },
  {
    version: 15,
    description: 'record counts and value-guard bases kept per dataset, for the indexed merge',
    sql: `
      -- Issue 13's speed (src/snapshot/tallies.ts): what an indexed merge of a small feed file needs of the records
      -- it does not read, kept instead of counted: the dataset's records and owned records, and per field
      -- (display_name, api_value, aliases, active, attributes.<key>) how many owned records have a value that could
      -- be zeroed and how many a non-zero number (the value guards' bases). Changed in the transaction of every write
      -- of records; a dataset without a row here is counted from its records. The fill counts existing datasets.
      CREATE TABLE record_tallies (
        dataset TEXT PRIMARY KEY,
        records INTEGER NOT NULL,
        owned   INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE value_bases (
        dataset  TEXT NOT NULL,
        field    TEXT NOT NULL,
        zeroable INTEGER NOT NULL,
        nonzero  INTEGER NOT NULL,
        PRIMARY KEY (dataset, field)
      ) STRICT, WITHOUT ROWID;
    `,
    fill: fillTallies,
  },
  {
    version: 16,
    description: 'fan-out: each taking feed\'s progress through a shared export, file by file',
    sql: `
      -- Issue 13's fan-out (src/snapshot/export-takers.ts): each dataset taking an export goes through its files on
      -- its own, oldest first, so one paused or retrying dataset holds back only itself. A row says what became of
      -- one file (path and modification time, as the folder shows it) for one taker: done (published, unchanged,
      -- held for a person), rejected (its reject file beside the export), superseded (a full feed went on to a newer
      -- file) or kept (it must try again: result paused, failed or waiting; overwritten when it ends). The file is
      -- archived once every taker is done with it, and its rows go with it. export_takers (migration 12) stays: the
      -- last content each taker is done with, so the same content again (a hand copy, the file of a build before
      -- this table) is not sent twice. mtime_ms: the file's mtimeMs (fractional ms); message: why it was refused
      -- (the archive's log line says it once every taker is done); at: ms (a kept row: since when).
      CREATE TABLE export_files (
        export   TEXT NOT NULL,
        file     TEXT NOT NULL,
        mtime_ms REAL NOT NULL,
        dataset  TEXT NOT NULL,
        feed     TEXT NOT NULL,
        sha256   TEXT,
        outcome  TEXT NOT NULL CHECK (outcome IN ('done', 'rejected', 'superseded', 'kept')),
        result   TEXT NOT NULL,
        code     TEXT,
        message  TEXT,
        at       INTEGER NOT NULL,
        PRIMARY KEY (export, file, mtime_ms, dataset, feed)
      ) STRICT;
      -- status: what a dataset keeps, without reading every export's rows.
      CREATE INDEX export_files_taker ON export_files (dataset, outcome);
    `,
  },
  {
    version: 17,
    description: 'a generation counter per dataset, bumped by every write of its records',
    sql: `
      -- Issue 18's unchanged-rows path (src/sync/unchanged/): rows equal to the last published export's are taken
      -- as unchanged only while the records are exactly what that publish left. Triggers bump the dataset's
      -- generation in the transaction of every insert, update or delete of its records, whichever path writes
      -- them (confirm, adopt, rebuild, restore, a feed, a portal edit noted), so no writer can forget to.
      CREATE TABLE record_generations (
        dataset    TEXT PRIMARY KEY,
        generation INTEGER NOT NULL
      ) STRICT;
      CREATE TRIGGER records_generation_insert AFTER INSERT ON records BEGIN
        INSERT INTO record_generations (dataset, generation) VALUES (NEW.dataset, 1)
          ON CONFLICT (dataset) DO UPDATE SET generation = generation + 1;
      END;
      CREATE TRIGGER records_generation_update AFTER UPDATE ON records BEGIN
        INSERT INTO record_generations (dataset, generation) VALUES (OLD.dataset, 1)
          ON CONFLICT (dataset) DO UPDATE SET generation = generation + 1;
        INSERT INTO record_generations (dataset, generation) VALUES (NEW.dataset, 1)
          ON CONFLICT (dataset) DO UPDATE SET generation = generation + 1;
      END;
      CREATE TRIGGER records_generation_delete AFTER DELETE ON records BEGIN
        INSERT INTO record_generations (dataset, generation) VALUES (OLD.dataset, 1)
          ON CONFLICT (dataset) DO UPDATE SET generation = generation + 1;
      END;
    `,
  },
  {
    version: 18,
    description: 'files of a dataset\'s own feeds kept while their sync waits for a person (status shows them)',
    sql: `
      -- D7 of issue 13 (src/snapshot/waiting-files.ts): a file of the dataset's own folder (or a schedule's) whose
      -- sync ended waiting: a change of another feed held for a person (HELD_OTHER_FEED), a draft the connector did
      -- not make (DRAFT_PENDING, DRAFT_MIXED). The daemon keeps it and takes it once approve or discard ran; status
      -- reads this table to say which file waits, since when and why (message: the sync's, with the command that
      -- ends the wait). The row goes when the file is synced again, superseded by a newer file, or gone.
      -- since: ms (the first wait of that file; a later wait of it keeps it).
      CREATE TABLE waiting_files (
        dataset TEXT NOT NULL,
        file    TEXT NOT NULL,
        feed    TEXT NOT NULL,
        code    TEXT NOT NULL,
        message TEXT,
        since   INTEGER NOT NULL,
        PRIMARY KEY (dataset, file)
      ) STRICT;
    `,
  },
  {
    version: 19,
    description: 'a random identity of the state database, and the mark of the records a stamp of kept rows names',
    sql: `
      -- Issue 18's kept rows (src/sync/unchanged/kept-rows.ts) are trusted only for the very records their stamp
      -- names. A generation number alone does not name them: a state.db deleted and made again, or one copied from
      -- another machine, counts its own generations, and a backup of this one restored counts again from an older
      -- number, so either may reach the stamp's number with other records. The identity is made once per database
      -- (here, for a new one and an existing one alike) and never changed; copying the file copies it, which is
      -- why the stamp names a mark too. stamp_mark: a random value set when kept rows are stamped, in the
      -- transaction that checks the generation is still the stamped one; no other state holds it, and generations
      -- only grow, so a database holding it at the stamped generation holds the stamped records (a backup taken
      -- before the stamp never holds it; one taken after holds it at that generation only if no record was
      -- written since). Set at a stamp, not by the triggers, so that a write of a record costs nothing more.
      CREATE TABLE state_identity (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        id   TEXT NOT NULL
      ) STRICT;
      INSERT INTO state_identity (one, id) VALUES (1, lower(hex(randomblob(16))));
      ALTER TABLE record_generations ADD COLUMN stamp_mark TEXT;
    `,
  },
  {
    version: 20,
    description: 'which server dataset each snapshot mirrors (base URL and dataset id)',
    sql: `
      -- D7 of review rv18b: a dataset's settings pointed at another server dataset whose active version has the
      -- snapshot's number would keep the old dataset's snapshot (reconcile compared the number only). reconcile
      -- rebuilds the snapshot when the identity differs; a dataset without a row (an install before this migration)
      -- takes the current one without a rebuild. base_url: as the settings name it, trailing slashes dropped.
      CREATE TABLE dataset_servers (
        dataset    TEXT PRIMARY KEY,
        base_url   TEXT NOT NULL,
        dataset_id TEXT NOT NULL
      ) STRICT;
    `,
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
