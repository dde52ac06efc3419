<?php
/**
 * Plugin Name: Queuety Go bridge
 * Description: Runs the Queuety batch callbacks, chain catch handlers, compensations and cancel callbacks that queuety-go workers hand to PHP.
 * Version: 1.0.0
 * License: GPL-2.0-or-later
 *
 * Queuety calls a batch's then/catch/finally class, and a chain's catch
 * class, in the PHP process that recorded the job's end. When a queuety-go
 * worker records it instead, it cannot call a PHP class: with
 * queuety.WithPHPBatchCallbacks(queue) it enqueues a job for the handler
 * QueuetyGo\BatchCallback on that queue, and a Queuety PHP worker polling
 * the queue runs it (see src/BatchCallback.php). Likewise a workflow's
 * compensation and on_cancel classes: with queuety.WithPHPCallbacks(queue)
 * a Go worker that fails or cancels the workflow enqueues jobs for
 * QueuetyGo\WorkflowCallback (see src/WorkflowCallback.php). Workflow
 * templates defined on either side are shared as JSON bundles with
 * QueuetyGo\WorkflowTemplates (see src/WorkflowTemplates.php).
 *
 * Install: copy this folder to wp-content/mu-plugins/queuety-go-bridge/ and
 * load this file from a one-line mu-plugin
 * (<?php require __DIR__ . '/queuety-go-bridge/queuety-go-bridge.php';), or
 * require it from any plugin. It only registers an autoloader, so it may be
 * loaded before Queuety: the class is defined when Queuety's worker first
 * looks it up.
 */

declare(strict_types=1);

spl_autoload_register(
	static function ( string $class ): void {
		if ( 'QueuetyGo\\BatchCallback' === $class ) {
			require __DIR__ . '/src/BatchCallback.php';
		} elseif ( 'QueuetyGo\\WorkflowCallback' === $class ) {
			require __DIR__ . '/src/WorkflowCallback.php';
		} elseif ( 'QueuetyGo\\WorkflowTemplates' === $class ) {
			require __DIR__ . '/src/WorkflowTemplates.php';
		}
	}
);
