<?php
/**
 * queuety-go's fixture generator: runs unmodified Queuety PHP through short
 * scripted scenarios (fixtures-scenarios.php) and writes every row of its 16
 * tables after each step, as exact stored strings, to
 * testdata/queuety-php/<scenario>.json.
 *
 *   QUEUETY_SRC=<queuety tree> QUEUETY_DB_PREFIX=<scratch prefix> php interop/php/fixtures.php <command>
 *
 * QUEUETY_DB_PREFIX is required here (no wp_ default): every command empties
 * or drops the 16 tables of that prefix.
 *
 * Commands:
 *   list                 scenario names
 *   run NAME [NAME...]   run scenarios in this process (each starts from empty tables)
 *   all                  every scenario, each in its own PHP process, then empty the tables
 *   schema               write schema.sql (SHOW CREATE TABLE of the 16 tables, table names with wp_)
 *   truncate | drop      empty | drop the 16 <prefix>queuety_* tables
 *   help                 this text
 *
 * Environment: as driver.php (QUEUETY_SRC, QUEUETY_DB_*), plus
 * QUEUETY_FIXTURES_OUT (output folder, default testdata/queuety-php of this
 * repository) and QUEUETY_COMMIT (Queuety commit recorded in the files,
 * optional).
 *
 * The tables may live under any prefix: the files always name them
 * wp_queuety_* (nothing Queuety stores depends on the prefix), and a step's
 * SQL is written with wp_queuety_* and run with the real prefix.
 *
 * A scenario is a list of steps. A step may run SQL first (only to move a
 * timestamp into the past instead of waiting), then PHP code, then the
 * snapshot is taken. The code is run with eval() exactly as written into the
 * file's "php" field, after the PRELUDE's use statements, so the recorded
 * calls are the ones that produced the rows. The generator sleeps one second
 * between steps so NOW() values of different steps differ.
 *
 * Values are copied as stored (NULL stays null, JSON text undecoded). The
 * only rewrite: file paths in error traces become {queuety} (the Queuety
 * tree) and {app} (this folder), raw and JSON-escaped.
 */

declare(strict_types=1);

namespace QueuetyGoInterop\Fixtures;

use Queuety\Connection;
use QueuetyGoInterop\UsageError;

use function QueuetyGoInterop\boot;
use function QueuetyGoInterop\drop_all;
use function QueuetyGoInterop\env;
use function QueuetyGoInterop\rows;
use function QueuetyGoInterop\tables;
use function QueuetyGoInterop\truncate_all;

require __DIR__ . '/lib.php';

/** The table prefix the files use. */
const FILE_PREFIX = 'wp_';

/** Prepended to every step's code before eval(), and to the file's "php" field. */
const PRELUDE = "use Queuety\\Queuety;\n"
	. "use Queuety\\Enums\\ForEachMode;\n"
	. "use Queuety\\Enums\\WaitMode;\n"
	. "use QueuetyGoInterop\\{PlanItems, DoubleItem, SumReducer, Increment, CounterReached, ChildWork, FailStep, Finish, UndoStep, UndoOther, StoreArtifacts};\n"
	. "use QueuetyGoInterop\\{OkJob, FailJob, BatchThen, BatchCatch, BatchFinally, ChainCaught};\n";

/** Full table name under the files' wp_ prefix. */
function file_table( Connection $conn, string $name ): string {
	return FILE_PREFIX . substr( $name, strlen( $conn->table( '' ) ) );
}

/** A step's SQL with wp_queuety_ replaced by the real prefix. */
function real_sql( Connection $conn, string $sql ): string {
	return str_replace( FILE_PREFIX . 'queuety_', $conn->table( 'queuety_' ), $sql );
}

/**
 * Path prefixes hidden in stored traces => placeholder.
 *
 * @return array<string, string>
 */
function redactions(): array {
	$out = array();
	foreach ( array( '{queuety}' => realpath( env( 'QUEUETY_SRC', '' ) ), '{app}' => realpath( __DIR__ ) ) as $placeholder => $path ) {
		if ( false !== $path && '' !== $path ) {
			$out[ $path ]                            = $placeholder;
			$out[ str_replace( '/', '\\/', $path ) ] = $placeholder; // inside PHP-encoded JSON.
		}
	}
	return $out;
}

/**
 * Every row of the 16 tables, keyed by wp_ table name, values as stored.
 *
 * @return array<string, array<int, array<string, ?string>>>
 */
function snapshot_tables( Connection $conn ): array {
	static $redact = null;
	$redact        = $redact ?? redactions();
	$out           = array();
	foreach ( tables( $conn ) as $short => $t ) {
		$rows = rows( $conn, $short );
		foreach ( $rows as &$row ) {
			foreach ( $row as &$val ) {
				if ( null !== $val ) {
					$val = strtr( $val, $redact );
				}
			}
			unset( $val );
		}
		unset( $row );
		$out[ file_table( $conn, $t[0] ) ] = $rows;
	}
	return $out;
}

function db_now( Connection $conn ): string {
	return (string) $conn->pdo()->query( 'SELECT NOW()' )->fetchColumn();
}

function server_time_zone( Connection $conn ): string {
	$r         = $conn->pdo()->query( 'SELECT @@session.time_zone AS s, @@global.time_zone AS g, @@system_time_zone AS sys' )->fetch( \PDO::FETCH_ASSOC );
	$session   = (string) $r['s'];
	$effective = 'SYSTEM' === $session ? (string) $r['sys'] : $session;
	return sprintf(
		'%s (@@session.time_zone=%s, @@global.time_zone=%s, @@system_time_zone=%s; PHP date.timezone=%s)',
		$effective,
		$session,
		(string) $r['g'],
		(string) $r['sys'],
		date_default_timezone_get()
	);
}

function queuety_version(): string {
	$head = (string) @file_get_contents( rtrim( env( 'QUEUETY_SRC', '' ), '/' ) . '/queuety.php' );
	return preg_match( '/^\s*\*\s*Version:\s*(\S+)/m', $head, $m ) ? $m[1] : 'unknown';
}

function out_dir(): string {
	$dir = env( 'QUEUETY_FIXTURES_OUT', '' );
	$dir = '' === $dir ? dirname( __DIR__, 2 ) . '/testdata/queuety-php' : $dir;
	if ( ! is_dir( $dir ) && ! mkdir( $dir, 0777, true ) ) {
		throw new \RuntimeException( "cannot create {$dir}" );
	}
	return $dir;
}

function write_schema( Connection $conn ): void {
	truncate_all( $conn ); // no AUTO_INCREMENT=N clauses.
	$version = (string) $conn->pdo()->query( 'SELECT VERSION()' )->fetchColumn();
	$commit  = env( 'QUEUETY_COMMIT', '' );
	$sql     = '-- Queuety ' . queuety_version() . ( '' !== $commit ? " (commit {$commit})" : '' ) . ": the 16 tables exactly as\n"
		. "-- Queuety::ensure_schema() (Schema::install) created them with table prefix wp_,\n"
		. "-- captured with SHOW CREATE TABLE on {$version}.\n"
		. "-- Load under another prefix by replacing every `wp_` with that prefix.\n\n";
	foreach ( tables( $conn ) as $t ) {
		$create = (string) $conn->pdo()->query( "SHOW CREATE TABLE {$t[0]}" )->fetch( \PDO::FETCH_NUM )[1];
		$sql   .= str_replace( '`' . $t[0] . '`', '`' . file_table( $conn, $t[0] ) . '`', $create ) . ";\n\n";
	}
	file_put_contents( out_dir() . '/schema.sql', rtrim( $sql ) . "\n" );
	fwrite( STDERR, "wrote schema.sql\n" );
}

/**
 * Run one scenario and write its file. Step code shares this function's
 * scope, so a variable set in one step ($wf) is visible in the next; the
 * generator's own variables start with $__.
 *
 * @param array<string, mixed> $__def Scenario definition.
 */
function run_scenario( Connection $conn, string $__name, array $__def ): void {
	truncate_all( $conn );
	$__snapshots = array();
	$__php_all   = PRELUDE;
	foreach ( $__def['steps'] as $__i => $__step ) {
		if ( $__i > 0 ) {
			sleep( 1 );
		}
		$__snap = array( 'label' => $__step['label'] );
		if ( ! empty( $__step['sql'] ) ) {
			foreach ( $__step['sql'] as $__q ) {
				$conn->pdo()->exec( real_sql( $conn, $__q ) );
				$__php_all .= "\n// SQL (outside Queuety, instead of waiting): {$__q}\n";
			}
			$__snap['sql'] = $__step['sql'];
		}
		$__code     = trim( $__step['php'] );
		$__php_all .= "\n" . $__code . "\n";
		eval( PRELUDE . $__code );
		$__snap['php'] = $__code;
		if ( ! empty( $__step['observe'] ) ) {
			$__snap['observed'] = eval( PRELUDE . $__step['observe'] );
		}
		$__php_all        .= '// => snapshot "' . $__step['label'] . "\"\n";
		$__snap['db_now']  = db_now( $conn );
		$__snap['tables']  = snapshot_tables( $conn );
		$__snapshots[]     = $__snap;
	}

	$commit = env( 'QUEUETY_COMMIT', '' );
	$doc    = array(
		'scenario'         => $__name,
		'php'              => $__php_all,
		'notes'            => $__def['notes'],
		'handlers'         => $__def['handlers'],
		'server_time_zone' => server_time_zone( $conn ),
		'source'           => array(
			'queuety_version' => queuety_version(),
			'queuety_commit'  => '' !== $commit ? $commit : null,
			'database'        => (string) $conn->pdo()->query( 'SELECT VERSION()' )->fetchColumn(),
			'php'             => PHP_VERSION,
			'table_prefix'    => FILE_PREFIX,
			'generator'       => 'interop/php/fixtures.php',
		),
		'snapshots'        => $__snapshots,
	);
	$json = json_encode( $doc, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR );
	file_put_contents( out_dir() . '/' . $__name . '.json', $json . "\n" );
	fwrite( STDERR, "wrote {$__name}.json\n" );
}

// ---------------------------------------------------------------------------

$args = array_slice( $argv, 1 );
$cmd  = array_shift( $args ) ?? 'help';

try {
	if ( in_array( $cmd, array( 'help', '-h', '--help' ), true ) ) {
		preg_match( '#/\*\*(.*?)\*/#s', (string) file_get_contents( __FILE__ ), $m );
		echo trim( (string) preg_replace( '/^\s*\* ?/m', '', $m[1] ?? '' ) ) . "\n";
		exit( 0 );
	}

	$scenarios = ( require __DIR__ . '/fixtures-scenarios.php' ) + ( require __DIR__ . '/fixtures-batches.php' );
	if ( 'list' === $cmd ) {
		echo implode( "\n", array_keys( $scenarios ) ) . "\n";
		exit( 0 );
	}

	if ( ! in_array( $cmd, array( 'run', 'all', 'schema', 'truncate', 'drop' ), true ) ) {
		throw new UsageError( "unknown command {$cmd}" );
	}
	// Every command empties or drops tables: never fall back to the wp_ default.
	if ( '' === env( 'QUEUETY_DB_PREFIX', '' ) ) {
		throw new UsageError( 'set QUEUETY_DB_PREFIX to a scratch table prefix: the generator empties the tables it uses' );
	}

	$conn = boot();
	switch ( $cmd ) {
		case 'run':
			if ( empty( $args ) ) {
				throw new UsageError( 'run needs scenario names' );
			}
			foreach ( $args as $name ) {
				if ( ! isset( $scenarios[ $name ] ) ) {
					throw new UsageError( "unknown scenario {$name}" );
				}
				run_scenario( $conn, $name, $scenarios[ $name ] );
			}
			break;

		case 'all':
			foreach ( array_keys( $scenarios ) as $name ) {
				passthru( escapeshellarg( PHP_BINARY ) . ' ' . escapeshellarg( __FILE__ ) . ' run ' . escapeshellarg( $name ), $rc );
				if ( 0 !== $rc ) {
					throw new \RuntimeException( "scenario {$name} failed (exit {$rc})" );
				}
			}
			truncate_all( $conn );
			break;

		case 'schema':
			write_schema( $conn );
			break;

		case 'truncate':
			truncate_all( $conn );
			break;

		case 'drop':
			drop_all( $conn );
			break;

		default:
			throw new UsageError( "unknown command {$cmd}" );
	}
} catch ( \Throwable $e ) {
	fwrite( STDERR, 'fixtures.php: ' . $e->getMessage() . "\n" );
	exit( 1 );
}
