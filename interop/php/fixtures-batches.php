<?php
/**
 * Batch and chain scenarios of fixtures.php (same shape as
 * fixtures-scenarios.php). The batch callbacks and the chain catch handler
 * write what Queuety passes them to a marker file; each scenario's last
 * step records the file's lines as "observed".
 */

declare(strict_types=1);

$h = array(
	'QueuetyGoInterop\\OkJob'        => 'Queuety\\Handler; handle(payload) records the payload; config() returns []',
	'QueuetyGoInterop\\FailJob'      => 'Queuety\\Handler; handle(payload) throws \\RuntimeException("job <payload.n> failed"); config() returns {"max_attempts":1}',
	'QueuetyGoInterop\\BatchThen'    => 'batch callback (a plain class, not a Handler): handle(Queuety\\Batch) records the batch as BatchManager::fire_callback passes it',
	'QueuetyGoInterop\\BatchCatch'   => 'batch callback, as BatchThen',
	'QueuetyGoInterop\\BatchFinally' => 'batch callback, as BatchThen',
	'QueuetyGoInterop\\ChainCaught'  => 'chain catch handler (a plain class): handle(Queuety\\Job, Throwable) records the job id, handler and message',
);

$marker = <<<'PHP'
$marker = sys_get_temp_dir() . '/queuety-fixture-marker-' . getmypid() . '.jsonl';
@unlink($marker);
putenv("QUEUETY_INTEROP_MARKER={$marker}");
PHP;

$observe_marker = 'return ["marker lines" => array_map(fn ($l) => json_decode($l, true), is_file($marker) ? file($marker, FILE_IGNORE_NEW_LINES) : [])];';

return array(

	// -----------------------------------------------------------------------
	'u_batch' => array(
		'handlers' => $h,
		'notes'    => array(
			'Queuety::create_batch() inserts the batch row first (name, total_jobs = pending_jobs = number of jobs, failed_jobs 0, failed_job_ids \'[]\', options = json_encode of {"then","catch","finally","allow_failures"} in that order, only the ones set: \'[]\' when none), then one job per entry with Queue::dispatch (batch_id set, the builder\'s queue, priority 0, max_attempts from the handler\'s config() or 3, cost_units 1).',
			'Batch 1 (allow_failures, all three callbacks): job 3 (FailJob, max_attempts 1) is buried; record_failure sets failed_jobs 1, failed_job_ids [3], and calls BatchCatch at once (first failure). The last job to finish sets pending_jobs 0 and finished_at = NOW(); with allow_failures BatchThen runs, then BatchFinally. Callbacks are called in-process after the batch row\'s transaction commits, with the batch re-read (find()).',
			'The worker processes jobs in id order: 1, 2, 3. So job 3 (the failure) is also the last one: record_failure with pending 0 calls catch, then then (allow_failures), then finally.',
			'Batch 2 (no allow_failures, catch and finally): job 4 fails first (catch), job 5 succeeds last: pending 0 with failed_jobs 1, so then is not called (there is none either), finally is.',
			'Batch 3 (no options): options is stored as \'[]\' (an empty PHP array); it finishes with no callback.',
			'No log rows are written for batch transitions; the jobs\' own rows are the usual \'started\'/\'completed\' and \'started\'/\'buried\'.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => $marker . "\n" . <<<'PHP'
$b1 = Queuety::create_batch([
    ['handler' => OkJob::class, 'payload' => ['n' => 1]],
    ['handler' => OkJob::class, 'payload' => ['n' => 2]],
    ['handler' => FailJob::class, 'payload' => ['n' => 3]],
])->name('import')->on_queue('batch')
    ->then(BatchThen::class)->catch(BatchCatch::class)->finally(BatchFinally::class)
    ->allow_failures()->dispatch();
$b2 = Queuety::create_batch([
    ['handler' => FailJob::class, 'payload' => ['n' => 4]],
    ['handler' => OkJob::class, 'payload' => ['n' => 5]],
])->on_queue('batch')->catch(BatchCatch::class)->finally(BatchFinally::class)->dispatch();
$b3 = Queuety::create_batch([
    ['handler' => OkJob::class, 'payload' => ['n' => 6]],
])->on_queue('batch')->dispatch();
PHP,
				'observe' => 'return ["batch ids" => [$b1->id, $b2->id, $b3->id]];',
			),
			array(
				'label' => 'after the first job (Queuety::run_worker once)',
				'php'   => "Queuety::run_worker('batch', true);",
			),
			array(
				'label'   => 'finished (Queuety::flush_queue)',
				'php'     => "Queuety::flush_queue('batch');",
				'observe' => $observe_marker,
			),
		),
	),

	// -----------------------------------------------------------------------
	'u2_batch_cancel' => array(
		'handlers' => $h,
		'notes'    => array(
			'BatchManager::cancel() sets cancelled_at = finished_at = NOW() (only while cancelled_at is NULL) and calls the finally callback; nothing else: the batch\'s pending jobs stay pending.',
			'Queuety PHP\'s worker does not look at the batch when it claims or runs a job: the cancelled batch\'s jobs run and complete as usual. record_completion then finds finished_at set and leaves the row alone: pending_jobs stays where the cancel left it (2), and no callback runs again.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => $marker . "\n" . <<<'PHP'
$b = Queuety::create_batch([
    ['handler' => OkJob::class, 'payload' => ['n' => 1]],
    ['handler' => OkJob::class, 'payload' => ['n' => 2]],
    ['handler' => OkJob::class, 'payload' => ['n' => 3]],
])->name('cancel me')->then(BatchThen::class)->finally(BatchFinally::class)->dispatch();
PHP,
				'observe' => 'return ["batch id" => $b->id];',
			),
			array(
				'label' => 'after the first job (Queuety::run_worker once)',
				'php'   => "Queuety::run_worker('default', true);",
			),
			array(
				'label' => 'cancelled (Queuety::batch_manager()->cancel)',
				'php'   => 'Queuety::batch_manager()->cancel($b->id);',
			),
			array(
				'label'   => 'rest run (Queuety::flush_queue)',
				'php'     => 'Queuety::flush_queue();',
				'observe' => $observe_marker,
			),
		),
	),

	// -----------------------------------------------------------------------
	'v_chain' => array(
		'handlers' => $h,
		'notes'    => array(
			'Queuety::chain() dispatches each job with Queue::dispatch(handler, payload, queue, depends_on: previous id): priority 0, max_attempts 3 (ChainBuilder passes none, so a handler\'s config() is not read), no batch. dispatch() returns the first job\'s id.',
			'With catch(Class), every job\'s payload gets "__chain_catch":"<Class>" appended after its own keys. Without it the payload is the job\'s own (\'[]\' when empty).',
			'A job is claimable only when the job it depends on is completed, so the chain runs in order.',
			'Chain 2: job 5 (FailJob) fails; the worker applies FailJob::config() max_attempts 1, buries it and calls ChainCaught::handle($job, $exception) in-process. Job 6 depends on a buried job and stays pending for good. The handler never sees "__chain_catch" (the worker strips it).',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => $marker . "\n" . <<<'PHP'
$c1 = Queuety::chain([
    ['handler' => OkJob::class, 'payload' => ['n' => 1]],
    ['handler' => OkJob::class, 'payload' => ['n' => 2]],
    ['handler' => OkJob::class],
])->on_queue('chain')->dispatch();
$c2 = Queuety::chain([
    ['handler' => OkJob::class, 'payload' => ['n' => 4]],
    ['handler' => FailJob::class, 'payload' => ['n' => 5]],
    ['handler' => OkJob::class, 'payload' => ['n' => 6]],
])->on_queue('chain')->catch(ChainCaught::class)->dispatch();
PHP,
				'observe' => 'return ["first job ids" => [$c1, $c2]];',
			),
			array(
				'label'   => 'run (Queuety::flush_queue)',
				'php'     => "Queuety::flush_queue('chain');",
				'observe' => $observe_marker,
			),
		),
	),
);
