<?php
/**
 * The Queuety handler that runs PHP batch callbacks and chain catch
 * handlers for queuety-go (see ../queuety-go-bridge.php).
 *
 * @package QueuetyGo
 */

declare(strict_types=1);

namespace QueuetyGo;

use Queuety\Batch;
use Queuety\Handler;
use Queuety\Queuety;

/**
 * Runs one callback a queuety-go worker handed to PHP, the way Queuety
 * itself would have run it:
 *
 * - a batch callback ({"batch_id", "type": then|catch|finally, "callback",
 *   "batch": the row right after the transition}) is called as
 *   BatchManager::fire_callback does: the class named in the batch's
 *   options under type, if it exists, gets handle(Batch); its errors are
 *   ignored;
 * - a chain catch handler ({"chain_catch": class, "job_id",
 *   "error_message"}) is called as Worker::call_chain_catch does:
 *   handle(), handle($job) or handle($job, $exception), by arity; its
 *   errors are ignored.
 *
 * It never fails, as Queuety calls each callback once and swallows its
 * errors, so its attempts (config(), and the __queuety_runtime options
 * queuety-go writes into the payload) are for a worker that dies while
 * running it: stale recovery hands the job back and the callback runs
 * again, on the next worker.
 */
final class BatchCallback implements Handler {

	/**
	 * Run the callback the payload describes.
	 *
	 * @param array<string, mixed> $payload Job payload written by queuety-go.
	 */
	public function handle( array $payload ): void {
		if ( isset( $payload['chain_catch'] ) ) {
			self::chain_catch( $payload );
			return;
		}
		$type = is_string( $payload['type'] ?? null ) ? $payload['type'] : '';
		if ( ! in_array( $type, array( 'then', 'catch', 'finally' ), true ) ) {
			return;
		}
		$batch = null;
		if ( is_array( $payload['batch'] ?? null ) ) {
			try {
				$batch = Batch::from_row( $payload['batch'] );
			} catch ( \Throwable ) {
				$batch = null;
			}
		}
		if ( null === $batch && is_numeric( $payload['batch_id'] ?? null ) ) {
			$batch = Queuety::find_batch( (int) $payload['batch_id'] );
		}
		if ( null === $batch ) {
			return;
		}
		$class = $batch->options[ $type ] ?? null;
		if ( ! is_string( $class ) || ! class_exists( $class ) ) {
			return;
		}
		try {
			$handler = new $class();
			if ( method_exists( $handler, 'handle' ) ) {
				$handler->handle( $batch );
			}
		} catch ( \Throwable ) { // phpcs:ignore Generic.CodeAnalysis.EmptyStatement.DetectedCatch -- Callback failures are non-fatal, as in Queuety.
		}
	}

	/**
	 * Call a chain's catch handler for the buried job.
	 *
	 * @param array<string, mixed> $payload Job payload written by queuety-go.
	 */
	private static function chain_catch( array $payload ): void {
		$class = $payload['chain_catch'];
		if ( ! is_string( $class ) || ! class_exists( $class ) || ! is_numeric( $payload['job_id'] ?? null ) ) {
			return;
		}
		$job = Queuety::queue()->find( (int) $payload['job_id'] );
		if ( null === $job ) {
			return;
		}
		$message   = is_string( $payload['error_message'] ?? null ) ? $payload['error_message'] : '';
		$exception = new \RuntimeException( $message );
		try {
			$handler = new $class();
			if ( ! method_exists( $handler, 'handle' ) ) {
				return;
			}
			$arity = ( new \ReflectionMethod( $handler, 'handle' ) )->getNumberOfParameters();
			if ( 0 === $arity ) {
				$handler->handle();
			} elseif ( 1 === $arity ) {
				$handler->handle( $job );
			} else {
				$handler->handle( $job, $exception );
			}
		} catch ( \Throwable ) { // phpcs:ignore Generic.CodeAnalysis.EmptyStatement.DetectedCatch -- Chain catch handlers are best-effort, as in Queuety.
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
