<?php
/**
 * Shared code of the queuety-go PHP driver (driver.php) and fixture
 * generator (fixtures.php): boot unmodified Queuety PHP standalone, list its
 * tables, read rows, and build the named interop scenarios.
 *
 * Environment:
 *   QUEUETY_SRC        (required) root of a Queuety tree (the folder holding src/)
 *   QUEUETY_DB_HOST    default 127.0.0.1:3306 (WordPress style: host, host:port or a socket path)
 *   QUEUETY_DB_NAME    default test
 *   QUEUETY_DB_USER    default root
 *   QUEUETY_DB_PASS    default '' (empty)
 *   QUEUETY_DB_PREFIX  default wp_ (tables are <prefix>queuety_*)
 *
 * No WordPress is loaded: Queuety guards every WordPress call with
 * function_exists(), so standalone use needs only a Connection.
 */

declare(strict_types=1);

namespace QueuetyGoInterop;

use Queuety\Config;
use Queuety\Connection;
use Queuety\Enums\ForEachMode;
use Queuety\Enums\WaitMode;
use Queuety\Queuety;
use Queuety\WorkflowBuilder;

/** Raised for bad command lines and unknown names; the driver prints it on stderr. */
final class UsageError extends \RuntimeException {
}

/**
 * Read an environment variable with a default ('' counts as set).
 */
function env( string $name, string $default ): string {
	$v = getenv( $name );
	return false === $v ? $default : $v;
}

/**
 * Register a PSR-4 autoloader for the Queuety tree named by QUEUETY_SRC
 * (Queuety\CLI\ => cli/, Queuety\ => src/, as in Queuety's composer.json).
 *
 * @return string The tree's root, without trailing slash.
 */
function register_queuety_autoloader(): string {
	$src = rtrim( env( 'QUEUETY_SRC', '' ), '/' );
	if ( '' === $src ) {
		throw new \RuntimeException( 'QUEUETY_SRC is not set: point it at the root of a Queuety tree (the folder holding src/).' );
	}
	if ( ! is_file( $src . '/src/Queuety.php' ) ) {
		throw new \RuntimeException( "QUEUETY_SRC={$src} is not a Queuety tree: src/Queuety.php is missing." );
	}
	$prefixes = array(
		'Queuety\\CLI\\' => $src . '/cli/',
		'Queuety\\'      => $src . '/src/',
	);
	spl_autoload_register(
		static function ( string $class ) use ( $prefixes ): void {
			foreach ( $prefixes as $prefix => $dir ) {
				if ( str_starts_with( $class, $prefix ) ) {
					$file = $dir . str_replace( '\\', '/', substr( $class, strlen( $prefix ) ) ) . '.php';
					if ( is_file( $file ) ) {
						require $file;
					}
					return;
				}
			}
		}
	);
	return $src;
}

/**
 * Database settings from the environment.
 *
 * @return array{host: string, name: string, user: string, pass: string, prefix: string}
 */
function db_settings(): array {
	return array(
		'host'   => env( 'QUEUETY_DB_HOST', '127.0.0.1:3306' ),
		'name'   => env( 'QUEUETY_DB_NAME', 'test' ),
		'user'   => env( 'QUEUETY_DB_USER', 'root' ),
		'pass'   => env( 'QUEUETY_DB_PASS', '' ),
		'prefix' => env( 'QUEUETY_DB_PREFIX', 'wp_' ),
	);
}

/**
 * Load Queuety and the interop handlers, connect, run Queuety::init() and
 * Queuety::ensure_schema() (CREATE TABLE IF NOT EXISTS for its 16 tables).
 */
function boot(): Connection {
	register_queuety_autoloader();
	require_once __DIR__ . '/handlers.php';
	require_once __DIR__ . '/machine-handlers.php';
	require_once dirname( __DIR__, 2 ) . '/php/queuety-go-bridge.php'; // QueuetyGo\BatchCallback, as a site installs it
	$s    = db_settings();
	$conn = new Connection( $s['host'], $s['name'], $s['user'], $s['pass'], $s['prefix'] );
	Queuety::init( $conn );
	Queuety::ensure_schema();
	$templates = getenv( 'QUEUETY_INTEROP_TEMPLATES' );
	if ( is_string( $templates ) && '' !== $templates ) {
		\QueuetyGo\WorkflowTemplates::load( $templates ); // as a site registers its templates on init
	}
	return $conn;
}

/**
 * Queuety's 16 tables in Schema::install() order: short name => [full name, primary key].
 *
 * @return array<string, array{0: string, 1: string}>
 */
function tables( Connection $conn ): array {
	$defs = array(
		'jobs'                   => array( Config::table_jobs(), 'id' ),
		'workflows'              => array( Config::table_workflows(), 'id' ),
		'logs'                   => array( Config::table_logs(), 'id' ),
		'schedules'              => array( Config::table_schedules(), 'id' ),
		'queue_states'           => array( Config::table_queue_states(), 'queue' ),
		'webhooks'               => array( Config::table_webhooks(), 'id' ),
		'signals'                => array( Config::table_signals(), 'id' ),
		'workflow_dependencies'  => array( Config::table_workflow_dependencies(), 'id' ),
		'workflow_dispatch_keys' => array( Config::table_workflow_dispatch_keys(), 'id' ),
		'locks'                  => array( Config::table_locks(), 'lock_key' ),
		'batches'                => array( Config::table_batches(), 'id' ),
		'chunks'                 => array( Config::table_chunks(), 'id' ),
		'workflow_events'        => array( Config::table_workflow_events(), 'id' ),
		'artifacts'              => array( Config::table_artifacts(), 'id' ),
		'state_machines'         => array( Config::table_state_machines(), 'id' ),
		'state_machine_events'   => array( Config::table_state_machine_events(), 'id' ),
	);
	$out  = array();
	foreach ( $defs as $short => $def ) {
		$out[ $short ] = array( $conn->table( $def[0] ), $def[1] );
	}
	return $out;
}

/** Empty all 16 tables (ids restart at 1). */
function truncate_all( Connection $conn ): void {
	foreach ( tables( $conn ) as $t ) {
		$conn->pdo()->exec( "TRUNCATE TABLE {$t[0]}" );
	}
}

/** Drop all 16 tables of this prefix. */
function drop_all( Connection $conn ): void {
	foreach ( tables( $conn ) as $t ) {
		$conn->pdo()->exec( "DROP TABLE IF EXISTS {$t[0]}" );
	}
}

/** Columns holding JSON text, by table short name. */
const JSON_COLUMNS = array(
	'jobs'            => array( 'payload', 'heartbeat_data' ),
	'workflows'       => array( 'state' ),
	'logs'            => array( 'context' ),
	'signals'         => array( 'payload' ),
	'workflow_events' => array( 'input', 'output', 'state_before', 'state_after', 'context', 'artifacts', 'chunks', 'error' ),
);

/**
 * Rows of one table, ordered by primary key, every value as its stored
 * string (NULL as null).
 *
 * @param string               $where SQL condition (without WHERE) or ''.
 * @param array<string, mixed> $args  Bound parameters of $where.
 * @return array<int, array<string, ?string>>
 */
function rows( Connection $conn, string $short, string $where = '', array $args = array() ): array {
	[ $name, $pk ] = tables( $conn )[ $short ];
	$sql           = "SELECT * FROM {$name}" . ( '' === $where ? '' : " WHERE {$where}" ) . " ORDER BY {$pk} ASC";
	$stmt          = $conn->pdo()->prepare( $sql );
	$stmt->execute( $args );
	$out = array();
	foreach ( $stmt->fetchAll( \PDO::FETCH_ASSOC ) as $row ) {
		$clean = array();
		foreach ( $row as $col => $val ) {
			$clean[ (string) $col ] = null === $val ? null : (string) $val;
		}
		$out[] = $clean;
	}
	return $out;
}

/**
 * Decode the JSON text columns of rows of one table (values that are not
 * valid JSON stay strings).
 *
 * @param array<int, array<string, ?string>> $rows Rows from rows().
 * @return array<int, array<string, mixed>>
 */
function decode_json_columns( string $short, array $rows ): array {
	foreach ( $rows as &$row ) {
		foreach ( JSON_COLUMNS[ $short ] ?? array() as $col ) {
			if ( isset( $row[ $col ] ) && is_string( $row[ $col ] ) ) {
				try {
					$row[ $col ] = json_decode( $row[ $col ], true, 512, JSON_THROW_ON_ERROR );
				} catch ( \JsonException ) {
					// Not JSON: keep the stored text.
				}
			}
		}
	}
	unset( $row );
	return $rows;
}

// ---------------------------------------------------------------------------
// Scenarios: named workflows built with Queuety's own builder.

/**
 * The scenario names, each with its default initial state and a one-line description.
 *
 * @return array<string, array{payload: array<string, mixed>, about: string}>
 */
function scenarios(): array {
	return array(
		'fe_all'            => array(
			'payload' => array( 'count' => 3 ),
			'about'   => 'then(PlanItems)->for_each(items, DoubleItem, result_key doubled, name double)->then(Finish)',
		),
		'fe_reduce'         => array(
			'payload' => array( 'count' => 3 ),
			'about'   => 'as fe_all with reducer SumReducer and result_key summary',
		),
		'fe_first'          => array(
			'payload' => array( 'count' => 3 ),
			'about'   => 'as fe_all with mode first_success',
		),
		'fe_quorum'         => array(
			'payload' => array( 'count' => 3 ),
			'about'   => 'as fe_all with mode quorum, quorum 2',
		),
		'repeat_until'      => array(
			'payload' => array(),
			'about'   => "then(Increment, 'inc')->repeat_until('inc', 'counter', 3)->then(Finish)",
		),
		'repeat_while_cond' => array(
			'payload' => array( 'limit' => 3 ),
			'about'   => "then(Increment, 'inc')->repeat_until('inc', condition_class: CounterReached, max_iterations: 5)->then(Finish)",
		),
		'repeat_max'        => array(
			'payload' => array( 'keep_going' => true ),
			'about'   => "then(Increment, 'inc')->repeat_while('inc', 'keep_going', true, max_iterations: 2)->then(Finish); fails at the cap",
		),
		'child'             => array(
			'payload' => array( 'n' => 4 ),
			'about'   => "then(PlanItems)->run_workflow('child_wf', then(ChildWork))->then(Finish)",
		),
		'child_fail'        => array(
			'payload' => array( 'n' => 4 ),
			'about'   => "then(PlanItems)->run_workflow('child_fail_wf', then(FailStep))->then(Finish)",
		),
		'start_group'       => array(
			'payload' => array( 'count' => 3 ),
			'about'   => "then(PlanItems)->start_workflows('items', then(ChildWork), result_key child_ids, group_key kids)->wait_for_workflow_group('kids', all, result_key kid_results)->then(Finish)",
		),
		'wait_ids'          => array(
			'payload' => array(),
			'about'   => "wait_for_workflows('dep_ids', any, result_key winner)->then(Finish); without dep_ids in the payload, dispatch first starts two 'wait_dep' workflows (then(ChildWork)) and uses their ids",
		),
	);
}

/**
 * The builder of a named scenario (not yet dispatched).
 *
 * @throws UsageError For an unknown name.
 */
function scenario_builder( string $name ): WorkflowBuilder {
	$items = static fn( string $wf ): WorkflowBuilder => Queuety::workflow( $wf )->then( PlanItems::class );
	switch ( $name ) {
		case 'fe_all':
			return $items( $name )
				->for_each( 'items', DoubleItem::class, result_key: 'doubled', name: 'double' )
				->then( Finish::class );
		case 'fe_reduce':
			return $items( $name )
				->for_each( 'items', DoubleItem::class, result_key: 'summary', reducer_class: SumReducer::class, name: 'double' )
				->then( Finish::class );
		case 'fe_first':
			return $items( $name )
				->for_each( 'items', DoubleItem::class, result_key: 'doubled', mode: ForEachMode::FirstSuccess, name: 'double' )
				->then( Finish::class );
		case 'fe_quorum':
			return $items( $name )
				->for_each( 'items', DoubleItem::class, result_key: 'doubled', mode: ForEachMode::Quorum, quorum: 2, name: 'double' )
				->then( Finish::class );
		case 'repeat_until':
			return Queuety::workflow( $name )
				->then( Increment::class, 'inc' )
				->repeat_until( 'inc', 'counter', 3 )
				->then( Finish::class );
		case 'repeat_while_cond':
			return Queuety::workflow( $name )
				->then( Increment::class, 'inc' )
				->repeat_until( 'inc', condition_class: CounterReached::class, max_iterations: 5 )
				->then( Finish::class );
		case 'repeat_max':
			return Queuety::workflow( $name )
				->then( Increment::class, 'inc' )
				->repeat_while( 'inc', 'keep_going', true, max_iterations: 2 )
				->then( Finish::class );
		case 'child':
			return $items( $name )
				->run_workflow( 'child_wf', Queuety::workflow( 'child_wf' )->then( ChildWork::class ) )
				->then( Finish::class );
		case 'child_fail':
			return $items( $name )
				->run_workflow( 'child_fail_wf', Queuety::workflow( 'child_fail_wf' )->then( FailStep::class ) )
				->then( Finish::class );
		case 'start_group':
			return $items( $name )
				->start_workflows( 'items', Queuety::workflow( 'kid' )->then( ChildWork::class ), result_key: 'child_ids', group_key: 'kids' )
				->wait_for_workflow_group( 'kids', WaitMode::All, result_key: 'kid_results' )
				->then( Finish::class );
		case 'wait_ids':
			return Queuety::workflow( $name )
				->wait_for_workflows( 'dep_ids', WaitMode::Any, result_key: 'winner' )
				->then( Finish::class );
		case 'wait_dep':
			return Queuety::workflow( $name )->then( ChildWork::class );
	}
	throw new UsageError( "unknown scenario '{$name}'; known: " . implode( ', ', array_keys( scenarios() ) ) );
}
