<?php
/**
 * queuety-go's driver for real Queuety PHP: dispatches the interop
 * scenarios with Queuety's own builder, works them with Queuety's own
 * worker, and prints rows, all as JSON on stdout.
 *
 *   QUEUETY_SRC=<queuety tree> php interop/php/driver.php <command> [options]
 *
 * Commands:
 *   dispatch SCENARIO [--payload=JSON] [--count=N]
 *                           dispatch N (default 1) workflows of a scenario; prints {"workflow_ids":[...]}
 *                           (--payload replaces the scenario's default initial state)
 *   work [--queue=Q] [--max-jobs=N]
 *                           without --max-jobs: Queuety::flush_queue(Q), i.e. Worker::flush(), until
 *                           nothing is claimable; with it: claim and process at most N jobs. {"processed":n}
 *   work-once [--queue=Q]   claim and process at most one job; {"processed":0|1}
 *   check-deadlines         Queuety::workflow_manager()->check_deadlines(); {"expired":n}
 *   status WF_ID            Queuety::workflow_status(WF_ID) as JSON
 *   dump [--workflow=ID]    rows of queuety_jobs, queuety_workflows, queuety_logs, queuety_workflow_events,
 *                           queuety_workflow_dependencies, queuety_signals (JSON columns decoded)
 *   stats                   {"jobs":{status:n},"workflows":{status:n}}
 *   bench-fanout --workflows=W --items=I [--queue=Q]
 *                           dispatch W workflows of for_each(items, DoubleItem)->then(Finish) with I items
 *                           each, drain them with the PHP worker (`work` passes in fresh processes until
 *                           one processes nothing), print timings
 *   scenarios               the scenario names, default payloads and shapes
 *   truncate                empty the 16 <prefix>queuety_* tables
 *   drop                    drop the 16 <prefix>queuety_* tables
 *   help                    this text
 *
 * --queue defaults to 'default' (several queues: comma-separated, in priority order).
 *
 * Environment: QUEUETY_SRC (required), QUEUETY_DB_HOST (127.0.0.1:3306),
 * QUEUETY_DB_NAME (test), QUEUETY_DB_USER (root), QUEUETY_DB_PASS (empty),
 * QUEUETY_DB_PREFIX (wp_). Every command except help and scenarios first runs
 * Queuety::init() and Queuety::ensure_schema().
 *
 * Errors go to stderr with exit status 1.
 */

declare(strict_types=1);

namespace QueuetyGoInterop;

use Queuety\Connection;
use Queuety\Queuety;

require __DIR__ . '/lib.php';

/**
 * Split arguments into positionals and --key=value / --flag options.
 *
 * @param array<int, string> $args Arguments after the command.
 * @return array{0: array<int, string>, 1: array<string, string|true>}
 */
function parse_args( array $args ): array {
	$pos  = array();
	$opts = array();
	foreach ( $args as $a ) {
		if ( str_starts_with( $a, '--' ) ) {
			$kv             = explode( '=', substr( $a, 2 ), 2 );
			$opts[ $kv[0] ] = $kv[1] ?? true;
		} else {
			$pos[] = $a;
		}
	}
	return array( $pos, $opts );
}

/** A positive integer option, or $default when absent. */
function int_option( array $opts, string $name, ?int $default ): ?int {
	if ( ! array_key_exists( $name, $opts ) ) {
		return $default;
	}
	$v = $opts[ $name ];
	if ( ! is_string( $v ) || ! ctype_digit( $v ) || (int) $v < 1 ) {
		throw new UsageError( "--{$name} needs a positive integer" );
	}
	return (int) $v;
}

/** A string option, or $default when absent. */
function string_option( array $opts, string $name, string $default ): string {
	$v = $opts[ $name ] ?? $default;
	if ( ! is_string( $v ) || '' === $v ) {
		throw new UsageError( "--{$name} needs a value" );
	}
	return $v;
}

/** Queue list from --queue (comma-separated, priority order). */
function queues( array $opts ): array {
	return array_values( array_filter( array_map( 'trim', explode( ',', string_option( $opts, 'queue', 'default' ) ) ) ) );
}

function out( mixed $data, bool $pretty = false ): void {
	$flags = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR | JSON_PRESERVE_ZERO_FRACTION;
	echo json_encode( $data, $pretty ? $flags | JSON_PRETTY_PRINT : $flags ) . "\n";
}

/**
 * Dispatch $count workflows of a scenario.
 *
 * @return array<string, mixed>
 */
function dispatch( string $name, array $opts ): array {
	$known = scenarios();
	if ( ! isset( $known[ $name ] ) ) {
		scenario_builder( $name ); // throws the usage error naming the known scenarios.
	}
	$count   = int_option( $opts, 'count', 1 );
	$payload = $known[ $name ]['payload'];
	if ( isset( $opts['payload'] ) ) {
		if ( ! is_string( $opts['payload'] ) ) {
			throw new UsageError( '--payload needs a JSON object' );
		}
		$payload = json_decode( $opts['payload'], true, 512, JSON_THROW_ON_ERROR );
		if ( ! is_array( $payload ) ) {
			throw new UsageError( '--payload needs a JSON object' );
		}
	}
	$out = array();
	if ( 'wait_ids' === $name && ! array_key_exists( 'dep_ids', $payload ) ) {
		$deps = array();
		for ( $i = 1; $i <= 2; $i++ ) {
			$deps[] = scenario_builder( 'wait_dep' )->dispatch( array( 'n' => $i ) );
		}
		$payload['dep_ids']    = $deps;
		$out['dependency_ids'] = $deps;
	}
	$ids = array();
	for ( $i = 0; $i < $count; $i++ ) {
		$ids[] = scenario_builder( $name )->dispatch( $payload );
	}
	return array( 'workflow_ids' => $ids ) + $out;
}

/**
 * Claim and process up to $max jobs from the queues, in Worker::flush()'s
 * order (queues in the given order, paused queues skipped). Without $max:
 * Queuety::flush_queue() itself.
 */
function work( array $queues, ?int $max ): int {
	if ( null === $max ) {
		return Queuety::flush_queue( $queues );
	}
	$queue  = Queuety::queue();
	$worker = Queuety::worker();
	$done   = 0;
	while ( $done < $max ) {
		$job = null;
		foreach ( $queues as $q ) {
			if ( ! $queue->is_queue_paused( $q ) ) {
				$job = $queue->claim( $q );
				if ( null !== $job ) {
					break;
				}
			}
		}
		if ( null === $job ) {
			break;
		}
		$worker->process_job( $job );
		++$done;
	}
	return $done;
}

/**
 * Queuety::workflow_status() as a plain array (enums as their values).
 *
 * @return array<string, mixed>
 */
function status( int $id ): array {
	$st = Queuety::workflow_status( $id );
	if ( null === $st ) {
		throw new UsageError( "workflow {$id} not found" );
	}
	$out = array();
	foreach ( get_object_vars( $st ) as $k => $v ) {
		$out[ $k ] = $v instanceof \BackedEnum ? $v->value : $v;
	}
	return $out;
}

/**
 * Rows of the workflow tables, optionally only those of one workflow.
 *
 * @return array<string, array<int, array<string, mixed>>>
 */
function dump( Connection $conn, ?int $wf ): array {
	$filters = array(
		'jobs'                  => 'workflow_id = :wf',
		'workflows'             => 'id = :wf',
		'logs'                  => 'workflow_id = :wf',
		'workflow_events'       => 'workflow_id = :wf',
		'workflow_dependencies' => '(waiting_workflow_id = :wf OR dependency_workflow_id = :wf2)',
		'signals'               => 'workflow_id = :wf',
	);
	$tables  = tables( $conn );
	$doc     = array();
	foreach ( $filters as $short => $where ) {
		$args = array();
		if ( null === $wf ) {
			$where = '';
		} else {
			$args = array( 'wf' => $wf );
			if ( str_contains( $where, ':wf2' ) ) {
				$args['wf2'] = $wf;
			}
		}
		$doc[ $tables[ $short ][0] ] = decode_json_columns( $short, rows( $conn, $short, $where, $args ) );
	}
	return $doc;
}

/**
 * Job and workflow counts by status.
 *
 * @return array{jobs: array<string, int>, workflows: array<string, int>}
 */
function stats( Connection $conn ): array {
	$out = array();
	foreach ( array( 'jobs', 'workflows' ) as $short ) {
		$name   = tables( $conn )[ $short ][0];
		$counts = array();
		foreach ( $conn->pdo()->query( "SELECT status, COUNT(*) AS c FROM {$name} GROUP BY status ORDER BY status" )->fetchAll( \PDO::FETCH_ASSOC ) as $r ) {
			$counts[ (string) $r['status'] ] = (int) $r['c'];
		}
		$out[ $short ] = (object) $counts;
	}
	return $out;
}

/**
 * Dispatch W fan-out workflows of I items each and drain them with the PHP
 * worker.
 *
 * The drain runs `work` (Queuety::flush_queue) in a fresh PHP process, again
 * and again until a pass processes nothing. One pass is not always enough:
 * Worker::flush() gives up when resource admission turns the same job away
 * twice, which it does once the process's memory plus the largest
 * memory_peak_kb logged for the handler plus 16 MB exceed the worker memory
 * limit (128 MB by default). A long-running PHP worker exits at that limit and
 * its supervisor starts a new one; the passes stand for those restarts.
 *
 * @return array<string, mixed>
 */
function bench_fanout( Connection $conn, array $opts ): array {
	$w     = int_option( $opts, 'workflows', null );
	$n     = int_option( $opts, 'items', null );
	$queue = string_option( $opts, 'queue', 'default' );
	if ( null === $w || null === $n ) {
		throw new UsageError( 'bench-fanout needs --workflows=W and --items=I' );
	}
	$items = array();
	for ( $i = 1; $i <= $n; $i++ ) {
		$items[] = array( 'n' => $i );
	}
	$t0 = hrtime( true );
	for ( $i = 0; $i < $w; $i++ ) {
		Queuety::workflow( 'bench_fanout' )
			->for_each( 'items', DoubleItem::class, result_key: 'doubled', name: 'double' )
			->then( Finish::class )
			->on_queue( $queue )
			->dispatch( array( 'items' => $items ) );
	}
	$t1        = hrtime( true );
	$processed = 0;
	$passes    = array();
	$cmd       = escapeshellarg( PHP_BINARY ) . ' ' . escapeshellarg( __FILE__ ) . ' work --queue=' . escapeshellarg( $queue );
	while ( true ) {
		$lines = array();
		exec( $cmd, $lines, $rc );
		if ( 0 !== $rc ) {
			throw new \RuntimeException( "worker pass exited with status {$rc}" );
		}
		$pass = (int) ( json_decode( (string) end( $lines ), true )['processed'] ?? 0 );
		if ( 0 === $pass ) {
			break;
		}
		$passes[]   = $pass;
		$processed += $pass;
	}
	$t2      = hrtime( true );
	$seconds = ( $t2 - $t1 ) / 1e9;
	$logs    = tables( $conn )['logs'][0];
	$failed  = (int) $conn->pdo()->query( "SELECT COUNT(*) FROM {$logs} WHERE event IN ('failed', 'buried')" )->fetchColumn();
	return array(
		'workflows'        => $w,
		'items'            => $n,
		'branches'         => $w * $n,
		'seconds'          => round( $seconds, 3 ),
		'branches_per_sec' => round( $w * $n / $seconds, 1 ),
		'dispatch_seconds' => round( ( $t1 - $t0 ) / 1e9, 3 ),
		'jobs_processed'   => $processed,
		'worker_passes'    => $passes,
		'failed_attempts'  => $failed,
		'stats'            => stats( $conn ),
	);
}

function usage(): string {
	$doc = (string) file_get_contents( __FILE__ );
	preg_match( '#/\*\*(.*?)\*/#s', $doc, $m );
	return trim( (string) preg_replace( '/^\s*\* ?/m', '', $m[1] ?? '' ) ) . "\n";
}

// ---------------------------------------------------------------------------

$args = array_slice( $argv, 1 );
$cmd  = array_shift( $args ) ?? 'help';
[ $pos, $opts ] = parse_args( $args );

try {
	if ( in_array( $cmd, array( 'help', '-h', '--help' ), true ) ) {
		echo usage();
		exit( 0 );
	}
	if ( 'scenarios' === $cmd ) {
		out( scenarios(), true );
		exit( 0 );
	}

	$known = array( 'dispatch', 'work', 'work-once', 'check-deadlines', 'status', 'dump', 'stats', 'bench-fanout', 'truncate', 'drop' );
	if ( ! in_array( $cmd, $known, true ) ) {
		throw new UsageError( "unknown command '{$cmd}'" );
	}

	$conn = boot();

	switch ( $cmd ) {
		case 'dispatch':
			if ( ! isset( $pos[0] ) ) {
				throw new UsageError( 'dispatch needs a scenario name' );
			}
			out( dispatch( $pos[0], $opts ) );
			break;

		case 'work':
			out( array( 'processed' => work( queues( $opts ), int_option( $opts, 'max-jobs', null ) ) ) );
			break;

		case 'work-once':
			out( array( 'processed' => work( queues( $opts ), 1 ) ) );
			break;

		case 'check-deadlines':
			out( array( 'expired' => Queuety::workflow_manager()->check_deadlines() ) );
			break;

		case 'status':
			if ( ! isset( $pos[0] ) || ! ctype_digit( $pos[0] ) ) {
				throw new UsageError( 'status needs a workflow id' );
			}
			out( status( (int) $pos[0] ) );
			break;

		case 'dump':
			$wf = int_option( $opts, 'workflow', null );
			out( dump( $conn, $wf ), true );
			break;

		case 'stats':
			out( stats( $conn ) );
			break;

		case 'bench-fanout':
			out( bench_fanout( $conn, $opts ) );
			break;

		case 'truncate':
			truncate_all( $conn );
			out( array( 'truncated' => count( tables( $conn ) ) ) );
			break;

		case 'drop':
			drop_all( $conn );
			out( array( 'dropped' => count( tables( $conn ) ) ) );
			break;

		default:
			throw new UsageError( "unknown command '{$cmd}'" );
	}
} catch ( UsageError $e ) {
	fwrite( STDERR, 'driver.php: ' . $e->getMessage() . "; see: php driver.php help\n" );
	exit( 1 );
} catch ( \Throwable $e ) {
	fwrite( STDERR, 'driver.php: ' . get_class( $e ) . ': ' . $e->getMessage() . "\n" );
	exit( 1 );
}
