<?php
/**
 * The Queuety handler that runs a workflow's PHP compensations and cancel
 * callback for queuety-go (see ../queuety-go-bridge.php).
 *
 * @package QueuetyGo
 */

declare(strict_types=1);

namespace QueuetyGo;

use Queuety\Config;
use Queuety\Enums\LogEvent;
use Queuety\Enums\Priority;
use Queuety\Handler;
use Queuety\Queuety;

/**
 * Runs one compensation or cancel callback of a workflow a queuety-go
 * worker failed or cancelled, the way Queuety's Workflow would have run
 * it, and moves the compensations on the way queuety-go does.
 *
 * Payload (written by queuety-go): {"kind": "compensation", "workflow_id",
 * "index", "reason", "handler", "bridge_queue"}, {"kind": "cancel",
 * "workflow_id", "handler", "bridge_queue"}, or {"kind": "ended",
 * "workflow_id", "bridge_queue"} for a workflow Queuety PHP failed or
 * cancelled (see ended()).
 *
 * - A compensation runs while the workflow state's _compensation_next is
 *   its index (else it already ran and the chain moved on): the class of
 *   _compensation_stack[index] gets handle($snapshot) or
 *   handle($snapshot, $payload), as Workflow::run_compensations calls it;
 *   an error is logged (compensation_failed) and ignored. Then, under the
 *   workflow row's lock, _compensation_next moves to the next older entry
 *   and its job is enqueued; after the last one the state gets
 *   _compensated and _compensation_cause, and for a cancel the cancel
 *   callback is enqueued.
 * - A cancel callback: the class of _on_cancel gets handle($public_state)
 *   or handle($public_state, $payload), as Workflow::cancel calls it; an
 *   error is logged (cancel_handler_failed) and ignored.
 * - A name that is not a class here is a queuety-go handler: the job a Go
 *   engine enqueues for it is written instead (named after the handler,
 *   with queuety-go's __queuety_callback marker), and the Go worker that
 *   has it moves the compensations on when it ends.
 *
 * Each next step is enqueued as a job of this class when its name is a
 * class here, else as that Go job. The handler never fails; its attempts
 * are for a worker that dies while running it.
 */
final class WorkflowCallback implements Handler {

	/** The payload key of queuety-go's callback marker. */
	private const MARKER = '__queuety_callback';

	/** The payload key of Queuety's per-job runtime options. */
	private const RUNTIME = '__queuety_runtime';

	/**
	 * Run the callback the payload describes.
	 *
	 * @param array<string, mixed> $payload Job payload written by queuety-go.
	 */
	public function handle( array $payload ): void {
		$workflow_id = is_numeric( $payload['workflow_id'] ?? null ) ? (int) $payload['workflow_id'] : 0;
		$queue       = is_string( $payload['bridge_queue'] ?? null ) && '' !== $payload['bridge_queue'] ? $payload['bridge_queue'] : 'default';
		if ( $workflow_id <= 0 ) {
			return;
		}
		$kind = $payload['kind'] ?? '';
		if ( 'compensation' === $kind && is_numeric( $payload['index'] ?? null ) ) {
			$reason = is_string( $payload['reason'] ?? null ) ? $payload['reason'] : 'failure';
			self::compensation( $workflow_id, (int) $payload['index'], $reason, $queue );
		} elseif ( 'cancel' === $kind ) {
			self::cancel( $workflow_id );
		} elseif ( 'ended' === $kind ) {
			self::ended( $workflow_id );
		}
	}

	/**
	 * Start the Go handlers of a workflow Queuety PHP failed or cancelled:
	 * PHP ran the compensation and on_cancel classes it has and skipped the
	 * other names. Those names, newest first, become the jobs queuety-go
	 * enqueues for Go handlers, one at a time: the first now (with
	 * _compensation_next), and the rest, then the cancel callback, listed
	 * in its marker for the Go worker that moves the chain on.
	 *
	 * @param int $workflow_id Workflow ID.
	 */
	private static function ended( int $workflow_id ): void {
		$conn = Queuety::connection();
		$pdo  = $conn->pdo();
		$tbl  = $conn->table( Config::table_workflows() );
		$pdo->beginTransaction();
		try {
			$stmt = $pdo->prepare( "SELECT status, state FROM {$tbl} WHERE id = :id FOR UPDATE" );
			$stmt->execute( array( 'id' => $workflow_id ) );
			$row = $stmt->fetch( \PDO::FETCH_ASSOC );
			if ( is_array( $row ) ) {
				$state = json_decode( (string) $row['state'], true );
				$state = is_array( $state ) ? $state : array();
				$next  = self::start_go_chain( $workflow_id, $state, 'cancelled' === $row['status'] );
				if ( null !== $next ) {
					$upd = $pdo->prepare( "UPDATE {$tbl} SET state = :state WHERE id = :id" );
					$upd->execute(
						array(
							'state' => json_encode( $next, JSON_THROW_ON_ERROR ),
							'id'    => $workflow_id,
						)
					);
				}
			}
			$pdo->commit();
		} catch ( \Throwable $e ) {
			if ( $pdo->inTransaction() ) {
				$pdo->rollBack();
			}
			throw $e;
		}
	}

	/**
	 * Enqueue the first Go handler of an ended workflow (see ended()) and
	 * return the state to write, or null when it does not change.
	 *
	 * @param int                  $workflow_id Workflow ID.
	 * @param array<string, mixed> $state       Locked workflow state.
	 * @param bool                 $cancelled   Whether it was cancelled.
	 * @return array<string, mixed>|null
	 */
	private static function start_go_chain( int $workflow_id, array $state, bool $cancelled ): ?array {
		if ( array_key_exists( '_compensation_next', $state ) ) {
			return null; // started already
		}
		$plan = array();
		if ( ! empty( $state['_compensated'] ) ) {
			$stack = is_array( $state['_compensation_stack'] ?? null ) ? array_values( $state['_compensation_stack'] ) : array();
			for ( $i = count( $stack ) - 1; $i >= 0; --$i ) {
				$class = is_array( $stack[ $i ] ) && is_string( $stack[ $i ]['handler'] ?? null ) ? trim( $stack[ $i ]['handler'] ) : '';
				if ( '' !== $class && ! class_exists( $class ) ) {
					$plan[] = $i;
				}
			}
		}
		$def    = $cancelled ? self::handler_definition( $state['_on_cancel'] ?? null ) : null;
		$cancel = null !== $def && ! class_exists( $def['class'] );
		if ( empty( $plan ) ) {
			if ( $cancel ) {
				self::enqueue_go_cancel( $workflow_id, $state, $def );
			}
			return null;
		}
		$first                       = array_shift( $plan );
		$state['_compensation_next'] = $first;
		$reason                      = is_string( $state['_compensation_cause'] ?? null ) ? $state['_compensation_cause'] : ( $cancelled ? 'cancel' : 'failure' );
		self::enqueue_go_compensation(
			$workflow_id,
			$state,
			$first,
			$reason,
			array(
				'plan'        => $plan,
				'then_cancel' => $cancel,
			)
		);
		return $state;
	}

	/**
	 * Run compensation $index of the workflow and move on to the next one.
	 *
	 * @param int    $workflow_id Workflow ID.
	 * @param int    $index       Index on the compensation stack.
	 * @param string $reason      failure, deadline or cancel.
	 * @param string $queue       The bridge queue.
	 */
	private static function compensation( int $workflow_id, int $index, string $reason, string $queue ): void {
		$state = self::state( $workflow_id, false );
		if ( null === $state || ! self::running( $state, $index ) ) {
			return;
		}
		$stack = is_array( $state['_compensation_stack'] ?? null ) ? array_values( $state['_compensation_stack'] ) : array();
		$entry = is_array( $stack[ $index ] ?? null ) ? $stack[ $index ] : array();
		$class = is_string( $entry['handler'] ?? null ) ? trim( $entry['handler'] ) : '';
		if ( '' !== $class && ! class_exists( $class ) ) {
			self::locked(
				$workflow_id,
				static function ( array $state ) use ( $workflow_id, $index, $reason ): ?array {
					if ( self::running( $state, $index ) ) {
						self::enqueue_go_compensation( $workflow_id, $state, $index, $reason );
					}
					return null;
				}
			);
			return;
		}
		if ( '' !== $class ) {
			$payload  = is_array( $entry['payload'] ?? null ) ? $entry['payload'] : array();
			$snapshot = is_array( $entry['state'] ?? null ) ? $entry['state'] : array();
			try {
				$instance = new $class();
				if ( $instance instanceof \Queuety\Contracts\Compensation || method_exists( $instance, 'handle' ) ) {
					self::call( $instance, $snapshot, $payload );
				}
			} catch ( \Throwable $e ) {
				self::log_failure( $workflow_id, $class, $e, $state, array( 'type' => 'compensation_failed', 'reason' => $reason ) );
			}
		}
		self::locked(
			$workflow_id,
			static function ( array $state ) use ( $workflow_id, $index, $reason, $queue ): ?array {
				if ( ! self::running( $state, $index ) ) {
					return null;
				}
				return self::advance( $workflow_id, $state, $index, $reason, $queue );
			}
		);
	}

	/**
	 * Move the compensations on past $index: the next older one is
	 * enqueued, or the state is marked compensated (and for a cancel the
	 * cancel callback is enqueued). Returns the state to write.
	 *
	 * @param int                  $workflow_id Workflow ID.
	 * @param array<string, mixed> $state       Locked workflow state.
	 * @param int                  $index       The compensation that ended.
	 * @param string               $reason      failure, deadline or cancel.
	 * @param string               $queue       The bridge queue.
	 * @return array<string, mixed>
	 */
	private static function advance( int $workflow_id, array $state, int $index, string $reason, string $queue ): array {
		$stack = is_array( $state['_compensation_stack'] ?? null ) ? array_values( $state['_compensation_stack'] ) : array();
		for ( $next = $index - 1; $next >= 0; --$next ) {
			$entry = is_array( $stack[ $next ] ?? null ) ? $stack[ $next ] : array();
			$class = is_string( $entry['handler'] ?? null ) ? trim( $entry['handler'] ) : '';
			if ( '' === $class ) {
				continue; // nothing to run, as queuety-go moves past it
			}
			$state['_compensation_next'] = $next;
			if ( class_exists( $class ) ) {
				self::dispatch(
					'QueuetyGo\\WorkflowCallback',
					self::bridge_payload( $workflow_id, 'compensation', $class, $next, $reason, $queue ),
					$queue,
					0,
					3
				);
			} else {
				self::enqueue_go_compensation( $workflow_id, $state, $next, $reason );
			}
			return $state;
		}
		unset( $state['_compensation_next'] );
		$state['_compensated']        = true;
		$state['_compensation_cause'] = $reason;
		if ( 'cancel' === $reason ) {
			$def = self::handler_definition( $state['_on_cancel'] ?? null );
			if ( null !== $def ) {
				if ( class_exists( $def['class'] ) ) {
					self::dispatch( 'QueuetyGo\\WorkflowCallback', self::bridge_payload( $workflow_id, 'cancel', $def['class'], 0, '', $queue ), $queue, 0, 3 );
				} else {
					self::enqueue_go_cancel( $workflow_id, $state, $def );
				}
			}
		}
		return $state;
	}

	/**
	 * Run the workflow's cancel callback.
	 *
	 * @param int $workflow_id Workflow ID.
	 */
	private static function cancel( int $workflow_id ): void {
		$state = self::state( $workflow_id, false );
		if ( null === $state ) {
			return;
		}
		$def = self::handler_definition( $state['_on_cancel'] ?? null );
		if ( null === $def ) {
			return;
		}
		if ( ! class_exists( $def['class'] ) ) {
			self::enqueue_go_cancel( $workflow_id, $state, $def );
			return;
		}
		try {
			self::call( new $def['class'](), self::public_state( $state ), $def['payload'] );
		} catch ( \Throwable $e ) {
			self::log_failure( $workflow_id, $def['class'], $e, $state, array( 'type' => 'cancel_handler_failed' ) );
		}
	}

	/**
	 * Enqueue compensation $index as the job queuety-go enqueues for a Go
	 * handler: the step's state snapshot with the handler's payload merged
	 * in, and the engine's marker, on the workflow's queue.
	 *
	 * @param int                  $workflow_id Workflow ID.
	 * @param array<string, mixed> $state       Workflow state.
	 * @param int                  $index       Index on the compensation stack.
	 * @param string               $reason      failure, deadline or cancel.
	 * @param array<string, mixed> $extra       More marker keys (the plan of a chain ended() starts).
	 */
	private static function enqueue_go_compensation( int $workflow_id, array $state, int $index, string $reason, array $extra = array() ): void {
		$stack   = is_array( $state['_compensation_stack'] ?? null ) ? array_values( $state['_compensation_stack'] ) : array();
		$entry   = is_array( $stack[ $index ] ?? null ) ? $stack[ $index ] : array();
		$payload = is_array( $entry['state'] ?? null ) ? $entry['state'] : array();
		foreach ( ( is_array( $entry['payload'] ?? null ) ? $entry['payload'] : array() ) as $k => $v ) {
			if ( ! str_starts_with( (string) $k, '_' ) ) {
				$payload[ $k ] = $v;
			}
		}
		$payload[ self::MARKER ] = array(
			'kind'        => 'compensation',
			'workflow_id' => $workflow_id,
			'index'       => $index,
			'reason'      => $reason,
		) + $extra;
		$max = is_numeric( $state['_max_attempts'] ?? null ) ? min( (int) $state['_max_attempts'], 255 ) : 0;
		self::dispatch( trim( (string) $entry['handler'] ), $payload, self::state_queue( $state ), self::state_priority( $state ), $max > 0 ? $max : 3 );
	}

	/**
	 * Enqueue the cancel callback as the job queuety-go enqueues for a Go
	 * handler: the public state with the handler's payload merged in, and
	 * the engine's marker, on the workflow's queue.
	 *
	 * @param int                                            $workflow_id Workflow ID.
	 * @param array<string, mixed>                           $state       Workflow state.
	 * @param array{class: string, payload: array<mixed>} $def         The cancel handler.
	 */
	private static function enqueue_go_cancel( int $workflow_id, array $state, array $def ): void {
		$payload = self::public_state( $state );
		foreach ( $def['payload'] as $k => $v ) {
			if ( ! str_starts_with( (string) $k, '_' ) ) {
				$payload[ $k ] = $v;
			}
		}
		$payload[ self::MARKER ] = array(
			'kind'        => 'cancel',
			'workflow_id' => $workflow_id,
		);
		self::dispatch( $def['class'], $payload, self::state_queue( $state ), self::state_priority( $state ), 3 );
	}

	/**
	 * The payload of a job of this class.
	 *
	 * @param int    $workflow_id Workflow ID.
	 * @param string $kind        compensation or cancel.
	 * @param string $handler     The class it runs.
	 * @param int    $index       Index on the compensation stack.
	 * @param string $reason      failure, deadline or cancel.
	 * @param string $queue       The bridge queue.
	 * @return array<string, mixed>
	 */
	private static function bridge_payload( int $workflow_id, string $kind, string $handler, int $index, string $reason, string $queue ): array {
		$payload = array(
			'kind'        => $kind,
			'workflow_id' => $workflow_id,
			'handler'     => $handler,
		);
		$marker  = array(
			'kind'        => $kind,
			'workflow_id' => $workflow_id,
		);
		if ( 'compensation' === $kind ) {
			$payload['index']  = $index;
			$payload['reason'] = $reason;
			$marker['index']   = $index;
			$marker['reason']  = $reason;
		}
		$payload['bridge_queue'] = $queue;
		$payload[ self::MARKER ] = $marker;
		$payload[ self::RUNTIME ] = array(
			'max_attempts' => 3,
			'backoff'      => array( 0 ),
		);
		return $payload;
	}

	/**
	 * Insert a pending job (in the caller's transaction).
	 *
	 * @param string               $handler      Handler name.
	 * @param array<string, mixed> $payload      Payload.
	 * @param string               $queue        Queue.
	 * @param int                  $priority     Priority, 0 to 3.
	 * @param int                  $max_attempts Attempts.
	 */
	private static function dispatch( string $handler, array $payload, string $queue, int $priority, int $max_attempts ): void {
		Queuety::queue()->dispatch( $handler, $payload, $queue, Priority::tryFrom( $priority ) ?? Priority::Low, 0, $max_attempts );
	}

	/**
	 * Whether compensation $index is the one running.
	 *
	 * @param array<string, mixed> $state Workflow state.
	 * @param int                  $index Index on the compensation stack.
	 */
	private static function running( array $state, int $index ): bool {
		return is_numeric( $state['_compensation_next'] ?? null ) && (int) $state['_compensation_next'] === $index;
	}

	/**
	 * Read a workflow's decoded state, optionally locking its row.
	 *
	 * @param int  $workflow_id Workflow ID.
	 * @param bool $lock        SELECT ... FOR UPDATE.
	 * @return array<string, mixed>|null
	 */
	private static function state( int $workflow_id, bool $lock ): ?array {
		$conn = Queuety::connection();
		$tbl  = $conn->table( Config::table_workflows() );
		$stmt = $conn->pdo()->prepare( "SELECT state FROM {$tbl} WHERE id = :id" . ( $lock ? ' FOR UPDATE' : '' ) );
		$stmt->execute( array( 'id' => $workflow_id ) );
		$raw = $stmt->fetchColumn();
		if ( ! is_string( $raw ) ) {
			return null;
		}
		$state = json_decode( $raw, true );
		return is_array( $state ) ? $state : array();
	}

	/**
	 * Run $fn on the workflow's state under its row lock, in one
	 * transaction with the jobs it enqueues; a returned state is written.
	 *
	 * @param int      $workflow_id Workflow ID.
	 * @param callable $fn          function (array $state): ?array.
	 */
	private static function locked( int $workflow_id, callable $fn ): void {
		$conn = Queuety::connection();
		$pdo  = $conn->pdo();
		$pdo->beginTransaction();
		try {
			$state = self::state( $workflow_id, true );
			if ( null !== $state ) {
				$next = $fn( $state );
				if ( null !== $next ) {
					$tbl  = $conn->table( Config::table_workflows() );
					$stmt = $pdo->prepare( "UPDATE {$tbl} SET state = :state WHERE id = :id" );
					$stmt->execute(
						array(
							'state' => json_encode( $next, JSON_THROW_ON_ERROR ),
							'id'    => $workflow_id,
						)
					);
				}
			}
			$pdo->commit();
		} catch ( \Throwable $e ) {
			if ( $pdo->inTransaction() ) {
				$pdo->rollBack();
			}
			throw $e;
		}
	}

	/**
	 * Call $handler->handle($arg) or handle($arg, $payload), as Queuety's
	 * call_handler_method does.
	 *
	 * @param object               $handler Handler instance.
	 * @param array<string, mixed> $arg     Snapshot or public state.
	 * @param array<mixed>         $payload Handler payload.
	 */
	private static function call( object $handler, array $arg, array $payload ): void {
		if ( empty( $payload ) ) {
			$handler->handle( $arg );
			return;
		}
		$handler->handle( $arg, $payload );
	}

	/**
	 * Queuety's handler_definition: {class, payload} for a name or a
	 * {class|handler, payload|config} array, or null.
	 *
	 * @param mixed $definition The stored definition.
	 * @return array{class: string, payload: array<mixed>}|null
	 */
	private static function handler_definition( mixed $definition ): ?array {
		if ( is_string( $definition ) && '' !== trim( $definition ) ) {
			return array(
				'class'   => trim( $definition ),
				'payload' => array(),
			);
		}
		if ( ! is_array( $definition ) ) {
			return null;
		}
		$class = $definition['class'] ?? $definition['handler'] ?? null;
		if ( ! is_string( $class ) || '' === trim( $class ) ) {
			return null;
		}
		$payload = $definition['payload'] ?? $definition['config'] ?? array();
		return array(
			'class'   => trim( $class ),
			'payload' => is_array( $payload ) ? $payload : array(),
		);
	}

	/**
	 * The state's public keys (those not starting with "_").
	 *
	 * @param array<string, mixed> $state Workflow state.
	 * @return array<string, mixed>
	 */
	private static function public_state( array $state ): array {
		return array_filter( $state, static fn( $key ) => ! str_starts_with( (string) $key, '_' ), ARRAY_FILTER_USE_KEY );
	}

	/**
	 * The workflow's queue.
	 *
	 * @param array<string, mixed> $state Workflow state.
	 */
	private static function state_queue( array $state ): string {
		return is_string( $state['_queue'] ?? null ) && '' !== $state['_queue'] ? $state['_queue'] : 'default';
	}

	/**
	 * The workflow's priority.
	 *
	 * @param array<string, mixed> $state Workflow state.
	 */
	private static function state_priority( array $state ): int {
		$p = is_numeric( $state['_priority'] ?? null ) ? (int) $state['_priority'] : 0;
		return $p >= 0 && $p <= 3 ? $p : 0;
	}

	/**
	 * Log a failed callback as Queuety does (a debug log row).
	 *
	 * @param int                  $workflow_id Workflow ID.
	 * @param string               $class       The callback class.
	 * @param \Throwable           $e           What it threw.
	 * @param array<string, mixed> $state       Workflow state.
	 * @param array<string, mixed> $context     The log row's context.
	 */
	private static function log_failure( int $workflow_id, string $class, \Throwable $e, array $state, array $context ): void {
		try {
			Queuety::logger()->log(
				LogEvent::Debug,
				array(
					'workflow_id'   => $workflow_id,
					'handler'       => $class,
					'queue'         => self::state_queue( $state ),
					'error_message' => $e->getMessage(),
					'context'       => $context,
				)
			);
		} catch ( \Throwable ) { // phpcs:ignore Generic.CodeAnalysis.EmptyStatement.DetectedCatch -- Logging is best-effort.
		}
	}

	/**
	 * Three attempts, as queuety-go gives its callback jobs: handle() never
	 * throws for a callback's error, so a further attempt only follows a
	 * worker that died running the job.
	 *
	 * @return array<string, mixed>
	 */
	public function config(): array {
		return array( 'max_attempts' => 3 );
	}
}
