-- Queuety 0.22's sixteen tables, as Queuety's Schema::install creates them.
-- {prefix} is replaced by the table prefix (for example wp_). Every
-- statement is CREATE TABLE IF NOT EXISTS, so tables that Queuety PHP
-- created are accepted as they are.

CREATE TABLE IF NOT EXISTS `{prefix}queuety_jobs` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `queue` varchar(64) NOT NULL DEFAULT 'default',
  `handler` varchar(255) NOT NULL,
  `payload` longtext NOT NULL,
  `payload_hash` varchar(64) DEFAULT NULL,
  `priority` tinyint(4) NOT NULL DEFAULT 0,
  `status` enum('pending','processing','completed','failed','buried') NOT NULL DEFAULT 'pending',
  `attempts` tinyint(3) unsigned NOT NULL DEFAULT 0,
  `max_attempts` tinyint(3) unsigned NOT NULL DEFAULT 3,
  `available_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `reserved_at` datetime DEFAULT NULL,
  `completed_at` datetime DEFAULT NULL,
  `failed_at` datetime DEFAULT NULL,
  `error_message` text DEFAULT NULL,
  `workflow_id` bigint(20) unsigned DEFAULT NULL,
  `step_index` tinyint(3) unsigned DEFAULT NULL,
  `depends_on` bigint(20) unsigned DEFAULT NULL,
  `batch_id` bigint(20) unsigned DEFAULT NULL,
  `concurrency_group` varchar(191) DEFAULT NULL,
  `concurrency_limit` smallint(5) unsigned DEFAULT NULL,
  `cost_units` int(10) unsigned NOT NULL DEFAULT 1,
  `heartbeat_data` json DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_queue_status_available` (`queue`,`status`,`available_at`,`priority`),
  KEY `idx_queue_claim` (`queue`,`status`,`priority`,`id`,`available_at`),
  KEY `idx_status` (`status`),
  KEY `idx_status_completed` (`status`,`completed_at`),
  KEY `idx_reserved` (`status`,`reserved_at`),
  KEY `idx_handler_status` (`handler`,`status`),
  KEY `idx_group_status` (`concurrency_group`,`status`),
  KEY `idx_workflow` (`workflow_id`,`step_index`),
  KEY `idx_unique` (`handler`,`payload_hash`,`status`),
  KEY `idx_depends` (`depends_on`),
  KEY `idx_batch` (`batch_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_workflows` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `name` varchar(255) NOT NULL,
  `status` enum('running','completed','failed','paused','waiting_for_signal','waiting_for_workflows','cancelled') NOT NULL DEFAULT 'running',
  `state` longtext NOT NULL,
  `current_step` tinyint(3) unsigned NOT NULL DEFAULT 0,
  `total_steps` tinyint(3) unsigned NOT NULL,
  `parent_workflow_id` bigint(20) unsigned DEFAULT NULL,
  `parent_step_index` tinyint(3) unsigned DEFAULT NULL,
  `started_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `completed_at` datetime DEFAULT NULL,
  `failed_at` datetime DEFAULT NULL,
  `error_message` text DEFAULT NULL,
  `deadline_at` datetime DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `idx_status` (`status`),
  KEY `idx_status_completed` (`status`,`completed_at`),
  KEY `idx_parent` (`parent_workflow_id`),
  KEY `idx_deadline` (`status`,`deadline_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_logs` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `job_id` bigint(20) unsigned DEFAULT NULL,
  `workflow_id` bigint(20) unsigned DEFAULT NULL,
  `step_index` tinyint(3) unsigned DEFAULT NULL,
  `handler` varchar(255) NOT NULL,
  `queue` varchar(64) NOT NULL DEFAULT 'default',
  `event` enum('started','completed','failed','buried','retried','workflow_started','workflow_completed','workflow_failed','workflow_paused','workflow_resumed','workflow_cancelled','workflow_rewound','workflow_forked','workflow_deadline_exceeded','debug') NOT NULL,
  `attempt` tinyint(3) unsigned DEFAULT NULL,
  `duration_ms` int(10) unsigned DEFAULT NULL,
  `memory_peak_kb` int(10) unsigned DEFAULT NULL,
  `error_message` text DEFAULT NULL,
  `error_class` varchar(255) DEFAULT NULL,
  `error_trace` text DEFAULT NULL,
  `context` json DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_job` (`job_id`),
  KEY `idx_workflow` (`workflow_id`),
  KEY `idx_handler` (`handler`),
  KEY `idx_event` (`event`),
  KEY `idx_created` (`created_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_schedules` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `handler` varchar(255) NOT NULL,
  `payload` longtext NOT NULL,
  `queue` varchar(64) NOT NULL DEFAULT 'default',
  `expression` varchar(255) NOT NULL,
  `expression_type` enum('interval','cron') NOT NULL,
  `last_run` datetime DEFAULT NULL,
  `next_run` datetime NOT NULL,
  `overlap_policy` enum('allow','skip','buffer') NOT NULL DEFAULT 'allow',
  `enabled` tinyint(1) NOT NULL DEFAULT 1,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  UNIQUE KEY `idx_handler` (`handler`),
  KEY `idx_next_run` (`enabled`,`next_run`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_queue_states` (
  `queue` varchar(64) NOT NULL,
  `paused` tinyint(1) NOT NULL DEFAULT 0,
  `paused_at` datetime DEFAULT NULL,
  PRIMARY KEY (`queue`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_webhooks` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `event` varchar(64) NOT NULL,
  `url` varchar(2048) NOT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_event` (`event`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_signals` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `workflow_id` bigint(20) unsigned NOT NULL,
  `signal_name` varchar(255) NOT NULL,
  `payload` longtext NOT NULL,
  `received_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_workflow_signal` (`workflow_id`,`signal_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_workflow_dependencies` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `waiting_workflow_id` bigint(20) unsigned NOT NULL,
  `step_index` tinyint(3) unsigned NOT NULL,
  `dependency_workflow_id` bigint(20) unsigned NOT NULL,
  `satisfied_at` datetime DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  UNIQUE KEY `idx_waiting_dependency` (`waiting_workflow_id`,`step_index`,`dependency_workflow_id`),
  KEY `idx_dependency` (`dependency_workflow_id`,`satisfied_at`),
  KEY `idx_waiting` (`waiting_workflow_id`,`step_index`,`satisfied_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_workflow_dispatch_keys` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `dispatch_key` varchar(191) NOT NULL,
  `workflow_id` bigint(20) unsigned NOT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  UNIQUE KEY `idx_dispatch_key` (`dispatch_key`),
  UNIQUE KEY `idx_workflow_id` (`workflow_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_locks` (
  `lock_key` varchar(255) NOT NULL,
  `owner` varchar(64) NOT NULL,
  `acquired_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `expires_at` datetime DEFAULT NULL,
  PRIMARY KEY (`lock_key`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_batches` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `name` varchar(255) DEFAULT NULL,
  `total_jobs` int(10) unsigned NOT NULL DEFAULT 0,
  `pending_jobs` int(10) unsigned NOT NULL DEFAULT 0,
  `failed_jobs` int(10) unsigned NOT NULL DEFAULT 0,
  `failed_job_ids` longtext NOT NULL,
  `options` longtext NOT NULL,
  `cancelled_at` datetime DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `finished_at` datetime DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `idx_finished` (`finished_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_chunks` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `job_id` bigint(20) unsigned NOT NULL,
  `workflow_id` bigint(20) unsigned DEFAULT NULL,
  `step_index` tinyint(3) unsigned DEFAULT NULL,
  `chunk_index` int(10) unsigned NOT NULL,
  `content` longtext NOT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_job` (`job_id`,`chunk_index`),
  KEY `idx_workflow_step` (`workflow_id`,`step_index`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_workflow_events` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `workflow_id` bigint(20) unsigned NOT NULL,
  `job_id` bigint(20) unsigned DEFAULT NULL,
  `parent_event_id` bigint(20) unsigned DEFAULT NULL,
  `step_index` tinyint(3) unsigned NOT NULL,
  `step_name` varchar(191) DEFAULT NULL,
  `step_type` varchar(64) DEFAULT NULL,
  `handler` varchar(255) NOT NULL,
  `event` enum('step_started','step_completed','step_failed','step_branch_completed','step_item_completed','step_item_failed','workflow_rewound','workflow_forked','workflow_deadline_exceeded','workflow_waiting','workflow_resumed','workflow_replayed') NOT NULL,
  `queue` varchar(64) DEFAULT NULL,
  `attempt` tinyint(3) unsigned DEFAULT NULL,
  `input` longtext DEFAULT NULL,
  `output` longtext DEFAULT NULL,
  `state_before` longtext DEFAULT NULL,
  `state_after` longtext DEFAULT NULL,
  `context` longtext DEFAULT NULL,
  `artifacts` longtext DEFAULT NULL,
  `chunks` longtext DEFAULT NULL,
  `error` longtext DEFAULT NULL,
  `duration_ms` int(10) unsigned DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_workflow` (`workflow_id`,`step_index`),
  KEY `idx_timeline` (`workflow_id`,`id`),
  KEY `idx_job` (`job_id`),
  KEY `idx_step_name` (`workflow_id`,`step_name`),
  KEY `idx_created` (`created_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_artifacts` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `workflow_id` bigint(20) unsigned NOT NULL,
  `artifact_key` varchar(191) NOT NULL,
  `kind` varchar(32) NOT NULL DEFAULT 'json',
  `content` longtext NOT NULL,
  `metadata` json DEFAULT NULL,
  `step_index` tinyint(3) unsigned DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `updated_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  UNIQUE KEY `idx_workflow_key` (`workflow_id`,`artifact_key`),
  KEY `idx_workflow_step` (`workflow_id`,`step_index`),
  KEY `idx_workflow_kind` (`workflow_id`,`kind`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_state_machines` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `name` varchar(255) NOT NULL,
  `status` enum('running','waiting_event','completed','failed','paused','cancelled') NOT NULL DEFAULT 'running',
  `current_state` varchar(191) NOT NULL,
  `state` longtext NOT NULL,
  `definition` longtext NOT NULL,
  `definition_hash` varchar(64) DEFAULT NULL,
  `definition_version` varchar(64) DEFAULT NULL,
  `idempotency_key` varchar(191) DEFAULT NULL,
  `started_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `updated_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  `completed_at` datetime DEFAULT NULL,
  `failed_at` datetime DEFAULT NULL,
  `error_message` text DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `idx_dispatch_key` (`idempotency_key`),
  KEY `idx_status_state` (`status`,`current_state`),
  KEY `idx_name_status` (`name`,`status`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS `{prefix}queuety_state_machine_events` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `machine_id` bigint(20) unsigned NOT NULL,
  `job_id` bigint(20) unsigned DEFAULT NULL,
  `state_name` varchar(191) NOT NULL,
  `handler` varchar(255) DEFAULT NULL,
  `event` enum('machine_started','machine_waiting','event_received','event_rejected','transitioned','action_enqueued','action_started','action_completed','action_failed','guard_started','guard_completed','guard_failed','machine_completed','machine_failed','machine_paused','machine_resumed','machine_cancelled','machine_replayed') NOT NULL,
  `event_name` varchar(191) DEFAULT NULL,
  `transition_name` varchar(191) DEFAULT NULL,
  `queue` varchar(64) DEFAULT NULL,
  `attempt` tinyint(3) unsigned DEFAULT NULL,
  `input` longtext DEFAULT NULL,
  `output` longtext DEFAULT NULL,
  `state_before` longtext DEFAULT NULL,
  `state_after` longtext DEFAULT NULL,
  `context` longtext DEFAULT NULL,
  `artifacts` longtext DEFAULT NULL,
  `chunks` longtext DEFAULT NULL,
  `error` longtext DEFAULT NULL,
  `duration_ms` int(10) unsigned DEFAULT NULL,
  `created_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  KEY `idx_machine` (`machine_id`,`id`),
  KEY `idx_machine_event` (`machine_id`,`event`),
  KEY `idx_job` (`job_id`),
  KEY `idx_state` (`machine_id`,`state_name`),
  KEY `idx_created` (`created_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
