<?php
/**
 * Workflow templates shared between Queuety PHP and queuety-go (see
 * ../queuety-go-bridge.php).
 *
 * @package QueuetyGo
 */

declare(strict_types=1);

namespace QueuetyGo;

use Queuety\Enums\Priority;
use Queuety\Queuety;
use Queuety\WorkflowTemplate;

/**
 * Queuety keeps workflow templates in the PHP process
 * (Queuety::workflow_templates(), filled by register_workflow_template()
 * and load_workflows()), and queuety-go keeps them in its process
 * (queuety.Client.RegisterWorkflowTemplate): neither is in the database.
 * A template is shared as its runtime definition bundle, the array
 * WorkflowBuilder::build_runtime_definition() returns, written as JSON:
 *
 * - load() registers bundle files in Queuety's registry, so
 *   Queuety::run_workflow( $name ) dispatches a template defined in Go. The
 *   rows name the Go handlers as step classes; a queuety-go worker that has
 *   them runs the steps.
 * - export() writes the templates registered in PHP as bundle files, which
 *   queuety.Client.LoadWorkflowTemplates and `queuety-worker workflow run
 *   --templates` read.
 *
 * Both sides dispatch a bundle the way Queuety's
 * dispatch_workflow_definition() does, so the rows are the same whichever
 * side runs the template.
 */
final class WorkflowTemplates {

	/**
	 * Register the template bundles in $path, one JSON file or every *.json
	 * file directly in a directory (in name order), in Queuety's registry.
	 *
	 * @param string $path File or directory.
	 * @return int Number of templates registered.
	 * @throws \RuntimeException If $path or a bundle cannot be read.
	 */
	public static function load( string $path ): int {
		if ( is_dir( $path ) ) {
			$files = glob( rtrim( $path, '/' ) . '/*.json' );
			$files = false === $files ? array() : $files;
			sort( $files );
		} elseif ( is_file( $path ) ) {
			$files = array( $path );
		} else {
			throw new \RuntimeException( "Workflow template path '{$path}' does not exist." );
		}
		foreach ( $files as $file ) {
			$raw = file_get_contents( $file );
			if ( false === $raw ) {
				throw new \RuntimeException( "Cannot read workflow template {$file}." );
			}
			$bundle = json_decode( $raw, true, 512, JSON_THROW_ON_ERROR );
			if ( ! is_array( $bundle ) ) {
				throw new \RuntimeException( "Workflow template {$file} is not a JSON object." );
			}
			self::register( $bundle );
		}
		return count( $files );
	}

	/**
	 * Register one runtime definition bundle under its name.
	 *
	 * @param array<string, mixed> $bundle Runtime definition bundle.
	 * @return string The template name.
	 * @throws \RuntimeException If the bundle has no name or no steps.
	 */
	public static function register( array $bundle ): string {
		$name = is_string( $bundle['name'] ?? null ) ? trim( $bundle['name'] ) : '';
		if ( '' === $name ) {
			throw new \RuntimeException( 'Workflow template bundle has no name.' );
		}
		if ( empty( $bundle['steps'] ) || ! is_array( $bundle['steps'] ) ) {
			throw new \RuntimeException( "Workflow template '{$name}' has no steps." );
		}
		Queuety::workflow_templates()->register(
			$name,
			new WorkflowTemplate(
				name: $name,
				steps: $bundle['steps'],
				queue: is_string( $bundle['queue'] ?? null ) ? $bundle['queue'] : 'default',
				priority: Priority::tryFrom( (int) ( $bundle['priority'] ?? 0 ) ) ?? Priority::Low,
				max_attempts: max( 1, (int) ( $bundle['max_attempts'] ?? 3 ) ),
				definition: $bundle,
			)
		);
		return $name;
	}

	/**
	 * Write every template registered in Queuety's registry (or only those
	 * named) to $dir as <name>.json, the name's characters other than
	 * letters, digits, dot, dash and underscore replaced by underscores.
	 *
	 * @param string             $dir   Directory to write to; created if missing.
	 * @param array<int, string> $names Templates to write; all when empty.
	 * @return int Number of files written.
	 * @throws \RuntimeException If a file cannot be written or a name is unknown.
	 */
	public static function export( string $dir, array $names = array() ): int {
		if ( ! is_dir( $dir ) && ! mkdir( $dir, 0755, true ) && ! is_dir( $dir ) ) {
			throw new \RuntimeException( "Cannot create {$dir}." );
		}
		$registry  = Queuety::workflow_templates();
		$templates = $registry->all();
		if ( ! empty( $names ) ) {
			$templates = array();
			foreach ( $names as $name ) {
				$template = $registry->get( $name );
				if ( null === $template ) {
					throw new \RuntimeException( "Workflow template '{$name}' is not registered." );
				}
				$templates[ $name ] = $template;
			}
		}
		foreach ( $templates as $name => $template ) {
			$file = rtrim( $dir, '/' ) . '/' . preg_replace( '/[^A-Za-z0-9._-]/', '_', (string) $name ) . '.json';
			if ( false === file_put_contents( $file, json_encode( $template->definition, JSON_THROW_ON_ERROR ) ) ) {
				throw new \RuntimeException( "Cannot write {$file}." );
			}
		}
		return count( $templates );
	}
}
