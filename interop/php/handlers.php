<?php
/**
 * Step handlers of the queuety-go interop scenarios.
 *
 * Queuety stores a handler's class name verbatim (jobs.handler,
 * state._steps[i].class, reducer_class, condition_class), so these exact
 * strings are what a Go worker registers its handlers under, for example
 * "QueuetyGoInterop\\DoubleItem". Every handler is deterministic: its result
 * depends only on the state or item it is given.
 *
 * Load after Queuety's autoloader (lib.php boot()).
 */

declare(strict_types=1);

namespace QueuetyGoInterop;

use Queuety\Contracts\Compensation;
use Queuety\Contracts\ForEachHandler;
use Queuety\Contracts\ForEachReducer;
use Queuety\Contracts\RepeatCondition;
use Queuety\Contracts\StreamingStep;
use Queuety\Step;

/** Integer value of a state key, or $default when it is missing or not numeric. */
function int_key( array $state, string $key, int $default ): int {
	$v = $state[ $key ] ?? null;
	return is_numeric( $v ) ? (int) $v : $default;
}

/**
 * Step: plans the for_each items.
 * Returns {"items":[{"n":1},...,{"n":count}]} with count = state.count (default 3).
 * An item listed in state.fail_items (1-based n values) gets "fail":true.
 */
final class PlanItems implements Step {
	public function handle( array $state ): array {
		$count = int_key( $state, 'count', 3 );
		$fail  = is_array( $state['fail_items'] ?? null ) ? $state['fail_items'] : array();
		$items = array();
		for ( $n = 1; $n <= $count; $n++ ) {
			$item = array( 'n' => $n );
			if ( in_array( $n, $fail, true ) ) {
				$item['fail'] = true;
			}
			$items[] = $item;
		}
		return array( 'items' => $items );
	}

	public function config(): array {
		return array();
	}
}

/**
 * for_each branch handler: returns {"value": item.n * 2, "index": index};
 * throws \RuntimeException("item <n> failed") when item.fail is true.
 * config() sets max_attempts 2, which Queuety bakes into every branch job
 * (jobs.max_attempts and payload.__queuety_runtime.max_attempts).
 */
final class DoubleItem implements ForEachHandler {
	public function handle_item( array $state, mixed $item, int $index ): array {
		$n = is_array( $item ) && is_numeric( $item['n'] ?? null ) ? (int) $item['n'] : 0;
		if ( is_array( $item ) && ! empty( $item['fail'] ) ) {
			throw new \RuntimeException( "item {$n} failed" );
		}
		return array(
			'value' => $n * 2,
			'index' => $index,
		);
	}

	public function config(): array {
		return array( 'max_attempts' => 2 );
	}
}

/**
 * for_each reducer: returns {"sum": sum of output.value over the aggregate's
 * results (successful branches), "count": number of results}.
 */
final class SumReducer implements ForEachReducer {
	public function reduce( array $state, array $for_each ): array {
		$results = is_array( $for_each['results'] ?? null ) ? $for_each['results'] : array();
		$sum     = 0;
		foreach ( $results as $entry ) {
			$value = is_array( $entry ) && is_array( $entry['output'] ?? null ) ? ( $entry['output']['value'] ?? 0 ) : 0;
			$sum  += is_numeric( $value ) ? (int) $value : 0;
		}
		return array(
			'sum'   => $sum,
			'count' => count( $results ),
		);
	}
}

/** Step: returns {"counter": (state.counter ?? 0) + 1}. */
final class Increment implements Step {
	public function handle( array $state ): array {
		return array( 'counter' => int_key( $state, 'counter', 0 ) + 1 );
	}

	public function config(): array {
		return array();
	}
}

/** Repeat condition: matches when state.counter >= state.limit (limit default 3). */
final class CounterReached implements RepeatCondition {
	public function matches( array $state ): bool {
		return int_key( $state, 'counter', 0 ) >= int_key( $state, 'limit', 3 );
	}
}

/** Step: returns {"child_value": (state.n ?? 0) * 10, "child_done": true}. */
final class ChildWork implements Step {
	public function handle( array $state ): array {
		return array(
			'child_value' => int_key( $state, 'n', 0 ) * 10,
			'child_done'  => true,
		);
	}

	public function config(): array {
		return array();
	}
}

/** Step: always throws \RuntimeException('child failed'); config() sets max_attempts 1. */
final class FailStep implements Step {
	public function handle( array $state ): array {
		throw new \RuntimeException( 'child failed' );
	}

	public function config(): array {
		return array( 'max_attempts' => 1 );
	}
}

/** Step: returns {"finished": true}. */
final class Finish implements Step {
	public function handle( array $state ): array {
		return array( 'finished' => true );
	}

	public function config(): array {
		return array();
	}
}

/**
 * Step: starts a workflow from the template named state.template with
 * Queuety::run_workflow( name, {"n": state.n} ) and returns
 * {"template_workflow_id": id}. The template may be one queuety-go defined
 * (loaded with QueuetyGo\WorkflowTemplates at boot).
 */
final class StartTemplate implements Step {
	public function handle( array $state ): array {
		$id = \Queuety\Queuety::run_workflow( (string) ( $state['template'] ?? '' ), array( 'n' => $state['n'] ?? 0 ) );
		return array( 'template_workflow_id' => $id );
	}

	public function config(): array {
		return array();
	}
}

/**
 * Compensation: undoes a step. Appends {"undo":<class>,"state":<state>} as
 * one JSON line to the file named by QUEUETY_INTEROP_MARKER, when set, so a
 * test can see which compensations ran, in which order, with which state.
 */
class UndoStep implements Compensation {
	public function handle( array $state ): void {
		$file = getenv( 'QUEUETY_INTEROP_MARKER' );
		if ( is_string( $file ) && '' !== $file ) {
			file_put_contents( $file, json_encode( array( 'undo' => static::class, 'state' => $state ) ) . "\n", FILE_APPEND | LOCK_EX );
		}
	}
}

/** Compensation: the second undo of a saga (same behaviour, its own name). */
final class UndoOther extends UndoStep {
}

/**
 * Cancel handler: what Queuety PHP's cancel() calls in-process with the
 * workflow's public state (not a Handler or Step). Appends
 * {"cancel":<class>,"state":<state>} as one JSON line to the file named by
 * QUEUETY_INTEROP_MARKER, when set.
 */
final class NoteCancel {
	public function handle( array $state ): void {
		mark(
			array(
				'cancel' => static::class,
				'state'  => $state,
			)
		);
	}
}

/**
 * Deadline handler: what Queuety PHP's check_deadlines calls in-process
 * with the workflow's public state (it is not a Handler or Step, so no
 * worker can run it as a job). Appends {"deadline":<class>,"state":<state>}
 * as one JSON line to the file named by QUEUETY_INTEROP_MARKER, when set.
 */
final class Escalate {
	public function handle( array $state ): void {
		$file = getenv( 'QUEUETY_INTEROP_MARKER' );
		if ( is_string( $file ) && '' !== $file ) {
			file_put_contents( $file, json_encode( array( 'deadline' => static::class, 'state' => $state ) ) . "\n", FILE_APPEND | LOCK_EX );
		}
	}
}

/**
 * Step: stores two artifacts for its workflow with put_current_artifact:
 * "plan" (kind json, {"steps":["research","write"],"title":"Ünïcode",
 * "url":"https://example.com/a/b"}, metadata {"model":"m/1","source":"planner"})
 * and "draft" (kind markdown, "# Pricing\n\nSee https://example.com/x.").
 * Returns {"planned": true}.
 */
final class StoreArtifacts implements Step {
	public function handle( array $state ): array {
		\Queuety\Queuety::put_current_artifact(
			'plan',
			array(
				'steps' => array( 'research', 'write' ),
				'title' => 'Ünïcode',
				'url'   => 'https://example.com/a/b',
			),
			'json',
			array(
				'model'  => 'm/1',
				'source' => 'planner',
			)
		);
		\Queuety\Queuety::put_current_artifact( 'draft', "# Pricing\n\nSee https://example.com/x.", 'markdown' );
		return array( 'planned' => true );
	}

	public function config(): array {
		return array();
	}
}

/**
 * Streaming step: streams the words of state.words (space-separated), one
 * chunk each ("word "), after the chunks an earlier attempt stored. When
 * QUEUETY_INTEROP_STREAM_FAIL_AFTER is set to n, an attempt throws
 * RuntimeException('stream interrupted') before streaming chunk n (counted
 * from 0 over the whole stream). on_complete returns {"text": the chunks
 * joined}.
 */
final class StreamWords implements StreamingStep {
	public function stream( array $state, array $existing_chunks = array() ): \Generator {
		$words = preg_split( '/\s+/', trim( (string) ( $state['words'] ?? '' ) ) );
		$fail  = getenv( 'QUEUETY_INTEROP_STREAM_FAIL_AFTER' );
		for ( $i = count( $existing_chunks ); $i < count( $words ); $i++ ) {
			if ( false !== $fail && '' !== $fail && (int) $fail === $i ) {
				throw new \RuntimeException( 'stream interrupted' );
			}
			yield $words[ $i ] . ' ';
		}
	}

	public function on_complete( array $chunks, array $state ): array {
		return array( 'text' => implode( '', $chunks ) );
	}

	public function config(): array {
		return array( 'max_attempts' => 3 );
	}
}

/**
 * Step: records runtime trace metadata with trace_input, trace_context and
 * trace_output, and returns the reserved _queuety_trace key with a context
 * value and an artifact reference.
 */
final class TraceMeta implements Step {
	public function handle( array $state ): array {
		\Queuety\Queuety::trace_input( array( 'resolved' => array( 'id' => $state['post_id'] ?? null ) ) );
		\Queuety\Queuety::trace_context( array( 'ability' => 'content/load-post' ) );
		\Queuety\Queuety::trace_output( array( 'post' => 'Hello' ) );
		return array(
			'result'         => 'done',
			'_queuety_trace' => array(
				'context'   => array( 'node_id' => 'loadPost' ),
				'artifacts' => array( array( 'key' => 'brief', 'kind' => 'markdown' ), 'not an array', array( 'a list' ) ),
			),
		);
	}

	public function config(): array {
		return array();
	}
}

/** Appends $record as one JSON line to the file named by QUEUETY_INTEROP_MARKER, when set. */
function mark( array $record ): void {
	$file = getenv( 'QUEUETY_INTEROP_MARKER' );
	if ( is_string( $file ) && '' !== $file ) {
		file_put_contents( $file, json_encode( $record ) . "\n", FILE_APPEND | LOCK_EX );
	}
}

/** Job handler (Queuety\Handler): records {"job":<class>,"payload":<payload>} with mark(). */
final class OkJob implements \Queuety\Handler {
	public function handle( array $payload ): void {
		mark(
			array(
				'job'     => static::class,
				'payload' => $payload,
			)
		);
	}

	public function config(): array {
		return array();
	}
}

/**
 * Job handler (Queuety\Handler): always throws \RuntimeException('job <n> failed'),
 * n = payload.n; config() sets max_attempts 1, which Queuety PHP's worker applies
 * whatever the row says (and BatchBuilder writes into the row).
 */
final class FailJob implements \Queuety\Handler {
	public function handle( array $payload ): void {
		$n = is_scalar( $payload['n'] ?? null ) ? (string) $payload['n'] : '?';
		throw new \RuntimeException( "job {$n} failed" );
	}

	public function config(): array {
		return array( 'max_attempts' => 1 );
	}
}

/**
 * Batch callback, as BatchBuilder's then()/catch()/finally() name them: a
 * plain class whose handle(Batch) BatchManager::fire_callback calls in the
 * process that recorded the job (not a Handler: no worker runs it as a job).
 * Records {"batch_callback":<class>,"batch":{...}} with mark().
 */
class BatchCallback {
	public function handle( \Queuety\Batch $batch ): void {
		mark(
			array(
				'batch_callback' => static::class,
				'batch'          => array(
					'id'             => $batch->id,
					'name'           => $batch->name,
					'total_jobs'     => $batch->total_jobs,
					'pending_jobs'   => $batch->pending_jobs,
					'failed_jobs'    => $batch->failed_jobs,
					'failed_job_ids' => $batch->failed_job_ids,
					'progress'       => $batch->progress(),
					'finished'       => $batch->finished(),
					'cancelled'      => $batch->cancelled(),
				),
			)
		);
	}
}

/** The then() callback of the batch scenarios. */
final class BatchThen extends BatchCallback {
}

/** The catch() callback of the batch scenarios. */
final class BatchCatch extends BatchCallback {
}

/** The finally() callback of the batch scenarios. */
final class BatchFinally extends BatchCallback {
}

/**
 * Chain catch handler, as ChainBuilder::catch() names it: Queuety PHP's worker
 * calls handle($job, $exception) when it buries a chain job. Records
 * {"chain_catch":<class>,"job_id":..,"handler":..,"error":..} with mark().
 */
final class ChainCaught {
	public function handle( \Queuety\Job $job, \Throwable $e ): void {
		mark(
			array(
				'chain_catch' => static::class,
				'job_id'      => $job->id,
				'handler'     => $job->handler,
				'error'       => $e->getMessage(),
			)
		);
	}
}
