-- The SQLite schema: Queuety's tables with the same names, columns and
-- indexes, plus the Go engine's columns and tables, as one version.
-- Enumerated columns carry CHECK constraints so they accept exactly the
-- values MySQL's ENUM columns accept. Times are TEXT in UTC
-- ("YYYY-MM-DD HH:MM:SS", with six fractional digits in the Go columns),
-- which sorts and compares correctly as text.

CREATE TABLE IF NOT EXISTS {prefix}queuety_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL DEFAULT 'default',
  handler TEXT NOT NULL,
  payload TEXT NOT NULL,
  payload_hash TEXT DEFAULT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','processing','completed','failed','buried')),
  attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts BETWEEN 0 AND 255),
  max_attempts INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 0 AND 255),
  available_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  reserved_at TEXT DEFAULT NULL,
  completed_at TEXT DEFAULT NULL,
  failed_at TEXT DEFAULT NULL,
  error_message TEXT DEFAULT NULL,
  workflow_id INTEGER DEFAULT NULL,
  step_index INTEGER DEFAULT NULL,
  depends_on INTEGER DEFAULT NULL,
  batch_id INTEGER DEFAULT NULL,
  concurrency_group TEXT DEFAULT NULL,
  concurrency_limit INTEGER DEFAULT NULL,
  cost_units INTEGER NOT NULL DEFAULT 1,
  heartbeat_data TEXT DEFAULT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  claim_token INTEGER DEFAULT NULL,
  schedule_to_start_at TEXT DEFAULT NULL,
  start_to_close_at TEXT DEFAULT NULL,
  schedule_to_close_at TEXT DEFAULT NULL,
  heartbeat_deadline_at TEXT DEFAULT NULL,
  last_heartbeat_at TEXT DEFAULT NULL
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_queue_status_available ON {prefix}queuety_jobs (queue, status, available_at, priority);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_queue_claim ON {prefix}queuety_jobs (queue, status, priority, id, available_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_status ON {prefix}queuety_jobs (status);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_status_completed ON {prefix}queuety_jobs (status, completed_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_reserved ON {prefix}queuety_jobs (status, reserved_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_handler_status ON {prefix}queuety_jobs (handler, status);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_group_status ON {prefix}queuety_jobs (concurrency_group, status);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_workflow ON {prefix}queuety_jobs (workflow_id, step_index);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_unique ON {prefix}queuety_jobs (handler, payload_hash, status);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_depends ON {prefix}queuety_jobs (depends_on);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_batch ON {prefix}queuety_jobs (batch_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_go_claim ON {prefix}queuety_jobs (queue, status, priority DESC, available_at, id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_go_schedule_to_start ON {prefix}queuety_jobs (schedule_to_start_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_go_start_to_close ON {prefix}queuety_jobs (start_to_close_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_go_schedule_to_close ON {prefix}queuety_jobs (schedule_to_close_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_jobs_idx_go_heartbeat ON {prefix}queuety_jobs (heartbeat_deadline_at);

CREATE TABLE IF NOT EXISTS {prefix}queuety_workflows (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running','completed','failed','paused','waiting_for_signal','waiting_for_workflows','cancelled')),
  state TEXT NOT NULL,
  current_step INTEGER NOT NULL DEFAULT 0 CHECK (current_step BETWEEN 0 AND 255),
  total_steps INTEGER NOT NULL CHECK (total_steps BETWEEN 0 AND 255),
  parent_workflow_id INTEGER DEFAULT NULL,
  parent_step_index INTEGER DEFAULT NULL,
  started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  completed_at TEXT DEFAULT NULL,
  failed_at TEXT DEFAULT NULL,
  error_message TEXT DEFAULT NULL,
  deadline_at TEXT DEFAULT NULL,
  run_number INTEGER DEFAULT NULL,
  run_started_at TEXT DEFAULT NULL,
  run_deadline_at TEXT DEFAULT NULL,
  wait_deadline_at TEXT DEFAULT NULL
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflows_idx_status ON {prefix}queuety_workflows (status);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflows_idx_status_completed ON {prefix}queuety_workflows (status, completed_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflows_idx_parent ON {prefix}queuety_workflows (parent_workflow_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflows_idx_deadline ON {prefix}queuety_workflows (status, deadline_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflows_idx_go_run_deadline ON {prefix}queuety_workflows (status, run_deadline_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflows_idx_go_wait_deadline ON {prefix}queuety_workflows (status, wait_deadline_at);

CREATE TABLE IF NOT EXISTS {prefix}queuety_logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER DEFAULT NULL,
  workflow_id INTEGER DEFAULT NULL,
  step_index INTEGER DEFAULT NULL,
  handler TEXT NOT NULL,
  queue TEXT NOT NULL DEFAULT 'default',
  event TEXT NOT NULL CHECK (event IN ('started','completed','failed','buried','retried','workflow_started','workflow_completed','workflow_failed','workflow_paused','workflow_resumed','workflow_cancelled','workflow_rewound','workflow_forked','workflow_deadline_exceeded','debug')),
  attempt INTEGER DEFAULT NULL,
  duration_ms INTEGER DEFAULT NULL,
  memory_peak_kb INTEGER DEFAULT NULL,
  error_message TEXT DEFAULT NULL,
  error_class TEXT DEFAULT NULL,
  error_trace TEXT DEFAULT NULL,
  context TEXT DEFAULT NULL CHECK (context IS NULL OR json_valid(context)),
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_logs_idx_job ON {prefix}queuety_logs (job_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_logs_idx_workflow ON {prefix}queuety_logs (workflow_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_logs_idx_handler ON {prefix}queuety_logs (handler);
CREATE INDEX IF NOT EXISTS {prefix}queuety_logs_idx_event ON {prefix}queuety_logs (event);
CREATE INDEX IF NOT EXISTS {prefix}queuety_logs_idx_created ON {prefix}queuety_logs (created_at);

CREATE TABLE IF NOT EXISTS {prefix}queuety_schedules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  handler TEXT NOT NULL,
  payload TEXT NOT NULL,
  queue TEXT NOT NULL DEFAULT 'default',
  expression TEXT NOT NULL,
  expression_type TEXT NOT NULL CHECK (expression_type IN ('interval','cron')),
  last_run TEXT DEFAULT NULL,
  next_run TEXT NOT NULL,
  overlap_policy TEXT NOT NULL DEFAULT 'allow' CHECK (overlap_policy IN ('allow','skip','buffer')),
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX IF NOT EXISTS {prefix}queuety_schedules_idx_handler ON {prefix}queuety_schedules (handler);
CREATE INDEX IF NOT EXISTS {prefix}queuety_schedules_idx_next_run ON {prefix}queuety_schedules (enabled, next_run);

CREATE TABLE IF NOT EXISTS {prefix}queuety_queue_states (
  queue TEXT NOT NULL PRIMARY KEY,
  paused INTEGER NOT NULL DEFAULT 0,
  paused_at TEXT DEFAULT NULL
);

CREATE TABLE IF NOT EXISTS {prefix}queuety_webhooks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event TEXT NOT NULL,
  url TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_webhooks_idx_event ON {prefix}queuety_webhooks (event);

CREATE TABLE IF NOT EXISTS {prefix}queuety_signals (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id INTEGER NOT NULL,
  signal_name TEXT NOT NULL,
  payload TEXT NOT NULL,
  received_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_signals_idx_workflow_signal ON {prefix}queuety_signals (workflow_id, signal_name);

CREATE TABLE IF NOT EXISTS {prefix}queuety_workflow_dependencies (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  waiting_workflow_id INTEGER NOT NULL,
  step_index INTEGER NOT NULL,
  dependency_workflow_id INTEGER NOT NULL,
  satisfied_at TEXT DEFAULT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX IF NOT EXISTS {prefix}queuety_workflow_dependencies_idx_waiting_dependency ON {prefix}queuety_workflow_dependencies (waiting_workflow_id, step_index, dependency_workflow_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_dependencies_idx_dependency ON {prefix}queuety_workflow_dependencies (dependency_workflow_id, satisfied_at);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_dependencies_idx_waiting ON {prefix}queuety_workflow_dependencies (waiting_workflow_id, step_index, satisfied_at);

CREATE TABLE IF NOT EXISTS {prefix}queuety_workflow_dispatch_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  dispatch_key TEXT NOT NULL,
  workflow_id INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX IF NOT EXISTS {prefix}queuety_workflow_dispatch_keys_idx_dispatch_key ON {prefix}queuety_workflow_dispatch_keys (dispatch_key);
CREATE UNIQUE INDEX IF NOT EXISTS {prefix}queuety_workflow_dispatch_keys_idx_workflow_id ON {prefix}queuety_workflow_dispatch_keys (workflow_id);

CREATE TABLE IF NOT EXISTS {prefix}queuety_locks (
  lock_key TEXT NOT NULL PRIMARY KEY,
  owner TEXT NOT NULL,
  acquired_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  expires_at TEXT DEFAULT NULL
);

CREATE TABLE IF NOT EXISTS {prefix}queuety_batches (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT DEFAULT NULL,
  total_jobs INTEGER NOT NULL DEFAULT 0,
  pending_jobs INTEGER NOT NULL DEFAULT 0,
  failed_jobs INTEGER NOT NULL DEFAULT 0,
  failed_job_ids TEXT NOT NULL,
  options TEXT NOT NULL,
  cancelled_at TEXT DEFAULT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  finished_at TEXT DEFAULT NULL
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_batches_idx_finished ON {prefix}queuety_batches (finished_at);

CREATE TABLE IF NOT EXISTS {prefix}queuety_chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,
  workflow_id INTEGER DEFAULT NULL,
  step_index INTEGER DEFAULT NULL,
  chunk_index INTEGER NOT NULL,
  content TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_chunks_idx_job ON {prefix}queuety_chunks (job_id, chunk_index);
CREATE INDEX IF NOT EXISTS {prefix}queuety_chunks_idx_workflow_step ON {prefix}queuety_chunks (workflow_id, step_index);

CREATE TABLE IF NOT EXISTS {prefix}queuety_workflow_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id INTEGER NOT NULL,
  job_id INTEGER DEFAULT NULL,
  parent_event_id INTEGER DEFAULT NULL,
  step_index INTEGER NOT NULL,
  step_name TEXT DEFAULT NULL,
  step_type TEXT DEFAULT NULL,
  handler TEXT NOT NULL,
  event TEXT NOT NULL CHECK (event IN ('step_started','step_completed','step_failed','step_branch_completed','step_item_completed','step_item_failed','workflow_rewound','workflow_forked','workflow_deadline_exceeded','workflow_waiting','workflow_resumed','workflow_replayed')),
  queue TEXT DEFAULT NULL,
  attempt INTEGER DEFAULT NULL,
  input TEXT DEFAULT NULL,
  output TEXT DEFAULT NULL,
  state_before TEXT DEFAULT NULL,
  state_after TEXT DEFAULT NULL,
  context TEXT DEFAULT NULL,
  artifacts TEXT DEFAULT NULL,
  chunks TEXT DEFAULT NULL,
  error TEXT DEFAULT NULL,
  duration_ms INTEGER DEFAULT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_events_idx_workflow ON {prefix}queuety_workflow_events (workflow_id, step_index);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_events_idx_timeline ON {prefix}queuety_workflow_events (workflow_id, id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_events_idx_job ON {prefix}queuety_workflow_events (job_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_events_idx_step_name ON {prefix}queuety_workflow_events (workflow_id, step_name);
CREATE INDEX IF NOT EXISTS {prefix}queuety_workflow_events_idx_created ON {prefix}queuety_workflow_events (created_at);

CREATE TABLE IF NOT EXISTS {prefix}queuety_artifacts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id INTEGER NOT NULL,
  artifact_key TEXT NOT NULL,
  kind TEXT NOT NULL DEFAULT 'json',
  content TEXT NOT NULL,
  metadata TEXT DEFAULT NULL,
  step_index INTEGER DEFAULT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX IF NOT EXISTS {prefix}queuety_artifacts_idx_workflow_key ON {prefix}queuety_artifacts (workflow_id, artifact_key);
CREATE INDEX IF NOT EXISTS {prefix}queuety_artifacts_idx_workflow_step ON {prefix}queuety_artifacts (workflow_id, step_index);
CREATE INDEX IF NOT EXISTS {prefix}queuety_artifacts_idx_workflow_kind ON {prefix}queuety_artifacts (workflow_id, kind);

CREATE TABLE IF NOT EXISTS {prefix}queuety_state_machines (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running','waiting_event','completed','failed','paused','cancelled')),
  current_state TEXT NOT NULL,
  state TEXT NOT NULL,
  definition TEXT NOT NULL,
  definition_hash TEXT DEFAULT NULL,
  definition_version TEXT DEFAULT NULL,
  idempotency_key TEXT DEFAULT NULL,
  started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  completed_at TEXT DEFAULT NULL,
  failed_at TEXT DEFAULT NULL,
  error_message TEXT DEFAULT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS {prefix}queuety_state_machines_idx_dispatch_key ON {prefix}queuety_state_machines (idempotency_key);
CREATE INDEX IF NOT EXISTS {prefix}queuety_state_machines_idx_status_state ON {prefix}queuety_state_machines (status, current_state);
CREATE INDEX IF NOT EXISTS {prefix}queuety_state_machines_idx_name_status ON {prefix}queuety_state_machines (name, status);

CREATE TABLE IF NOT EXISTS {prefix}queuety_state_machine_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  machine_id INTEGER NOT NULL,
  job_id INTEGER DEFAULT NULL,
  state_name TEXT NOT NULL,
  handler TEXT DEFAULT NULL,
  event TEXT NOT NULL,
  event_name TEXT DEFAULT NULL,
  transition_name TEXT DEFAULT NULL,
  queue TEXT DEFAULT NULL,
  attempt INTEGER DEFAULT NULL,
  input TEXT DEFAULT NULL,
  output TEXT DEFAULT NULL,
  state_before TEXT DEFAULT NULL,
  state_after TEXT DEFAULT NULL,
  context TEXT DEFAULT NULL,
  artifacts TEXT DEFAULT NULL,
  chunks TEXT DEFAULT NULL,
  error TEXT DEFAULT NULL,
  duration_ms INTEGER DEFAULT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_state_machine_events_idx_machine ON {prefix}queuety_state_machine_events (machine_id, id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_state_machine_events_idx_job ON {prefix}queuety_state_machine_events (job_id);

CREATE TABLE IF NOT EXISTS {prefix}queuety_go_failures (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id INTEGER DEFAULT NULL,
  job_id INTEGER DEFAULT NULL,
  step_index INTEGER DEFAULT NULL,
  attempt INTEGER DEFAULT NULL,
  run_number INTEGER DEFAULT NULL,
  category TEXT NOT NULL,
  timeout_kind TEXT DEFAULT NULL,
  non_retryable INTEGER NOT NULL DEFAULT 0,
  message TEXT NOT NULL,
  error_class TEXT DEFAULT NULL,
  deadline_at TEXT DEFAULT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {prefix}queuety_go_failures_idx_workflow ON {prefix}queuety_go_failures (workflow_id, id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_go_failures_idx_job ON {prefix}queuety_go_failures (job_id);
CREATE INDEX IF NOT EXISTS {prefix}queuety_go_failures_idx_category ON {prefix}queuety_go_failures (category, created_at);
