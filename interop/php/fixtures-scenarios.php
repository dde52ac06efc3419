<?php
/**
 * Scenarios of fixtures.php.
 *
 * name => [
 *   'handlers' => [stored handler string => what it is and does],
 *   'notes'    => [what to observe in the rows],
 *   'steps'    => [[
 *       'label'   => snapshot label (unique, also as a prefix),
 *       'sql'     => [statements run first, outside Queuety, written with wp_queuety_*] (optional),
 *       'php'     => code run with eval() after fixtures.php's PRELUDE,
 *       'observe' => code whose returned array is recorded as "observed" (optional, not part of "php"),
 *   ], ...],
 * ]
 */

declare(strict_types=1);

$h = array(
	'QueuetyGoInterop\\PlanItems'      => 'Queuety\\Step; returns {"items":[{"n":1},...,{"n":<state.count, default 3>}]}; an item whose n is listed in state.fail_items gets "fail":true',
	'QueuetyGoInterop\\DoubleItem'     => 'Queuety\\Contracts\\ForEachHandler; handle_item(state, item, index) returns {"value":<item.n * 2>,"index":<index>}, throws \\RuntimeException("item <n> failed") when item.fail is true; config() returns {"max_attempts":2}',
	'QueuetyGoInterop\\SumReducer'     => 'Queuety\\Contracts\\ForEachReducer; reduce(state, aggregate) returns {"sum":<sum of results[].output.value>,"count":<number of results>}',
	'QueuetyGoInterop\\Increment'      => 'Queuety\\Step; returns {"counter":<(state.counter ?? 0) + 1>}',
	'QueuetyGoInterop\\CounterReached' => 'Queuety\\Contracts\\RepeatCondition; matches(state) is true when state.counter >= state.limit (limit default 3)',
	'QueuetyGoInterop\\ChildWork'      => 'Queuety\\Step; returns {"child_value":<(state.n ?? 0) * 10>,"child_done":true}',
	'QueuetyGoInterop\\FailStep'       => 'Queuety\\Step; always throws \\RuntimeException("child failed"); config() returns {"max_attempts":1}',
	'QueuetyGoInterop\\Finish'         => 'Queuety\\Step; returns {"finished":true}',
	'QueuetyGoInterop\\UndoStep'       => 'Queuety\\Contracts\\Compensation; handle(state) returns nothing; appends {"undo":<class>,"state":<state>} to the file named by env QUEUETY_INTEROP_MARKER when set (unset here: it does nothing)',
	'QueuetyGoInterop\\UndoOther'      => 'Queuety\\Contracts\\Compensation; extends UndoStep, same behaviour under its own name',
	'QueuetyGoInterop\\StoreArtifacts' => 'Queuety\\Step; Queuety::put_current_artifact("plan", {"steps":["research","write"],"title":"Ünïcode","url":"https://example.com/a/b"}, "json", {"model":"m/1","source":"planner"}) and put_current_artifact("draft", "# Pricing\\n\\nSee https://example.com/x.", "markdown"); returns {"planned":true}',
	'__queuety_for_each'               => 'Queuety internal placeholder of a for_each step: expands the items into branch jobs',
	'__queuety_repeat'                 => 'Queuety internal placeholder of a repeat step: evaluates the condition and jumps back or goes on',
	'__queuety_run_workflow'           => 'Queuety internal placeholder of a run_workflow step: dispatches the child workflow',
	'__queuety_start_workflows'        => 'Queuety internal placeholder of a start_workflows step: dispatches one top-level workflow per item',
	'__queuety_wait_for_workflows'     => 'Queuety internal placeholder of a wait_for_workflows / wait_for_workflow_group step',
);

/**
 * The handler descriptions named in $names.
 *
 * @param array<int, string> $names Stored handler strings.
 * @return array<string, string>
 */
$pick = static function ( array $names ) use ( $h ): array {
	$out = array();
	foreach ( $names as $n ) {
		$out[ $n ] = $h[ $n ];
	}
	return $out;
};

$once = "Queuety::run_worker('default', true);";

return array(

	// -----------------------------------------------------------------------
	'l_for_each_all' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\PlanItems', '__queuety_for_each', 'QueuetyGoInterop\\DoubleItem', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[1] is {"type":"for_each","name":"double","items_key":"items","class":"QueuetyGoInterop\\\\DoubleItem","result_key":"doubled","mode":"all","quorum":null,"reducer_class":null,"compensation":null}. The single steps around it have no "compensation" key.',
			'When step 0 completes, one placeholder job is inserted for step 1: handler \'__queuety_for_each\', payload {"step_index":1,"__queuety_runtime":{"max_attempts":3}}, step_index 1, cost_units 0, max_attempts 3 (the workflow\'s).',
			'Processing the placeholder reads state.items and, in one transaction: writes _for_each_steps {"1":{"initialized":true,"items":[...],"results":[],"failures":[],"winner_index":null}} (keyed by step index; PHP writes an object here because the key is 1, it would write a list [{...}] for step 0); inserts one branch job per item, in item order; marks the placeholder completed. current_step stays 1.',
			'Branch jobs: handler = the for_each class \'QueuetyGoInterop\\DoubleItem\', payload {"__for_each":{"item_index":<i>,"item":<item>},"__queuety_runtime":{"max_attempts":2}}, max_attempts 2 (from DoubleItem::config(), in the column and in __queuety_runtime), cost_units 1, step_index 1, the workflow\'s queue and priority, available at once.',
			'The placeholder writes logs \'started\' (attempt 1) and \'completed\' (attempt NULL), and only a \'step_started\' event (input {"state":<public state>,"definition":<the for_each step>}, context \'[]\'); there is no step_completed for it.',
			'A branch that does not settle the step: results[i] = {"index":i,"item":<item>,"output":<handler return>,"job_id":<branch job id>}, winner_index = the first finisher\'s index, and "settled":false is added; public state is unchanged. Logs \'started\' (attempt 1) and \'completed\' (attempt NULL). Events \'step_started\' (input {"state","item","item_index"}, context {"item","item_index"}) and \'step_item_completed\' (the same input, output = handler return, state_before = state_after = public state, context {"item_index","item"} in that order).',
			'results and failures are PHP arrays keyed by item index: JSON lists while the keys are 0..n-1 in order (here), objects with string keys otherwise (see m_*, m2_*, m3_*).',
			'The last branch sets "settled":true and writes \'step_item_completed\', then \'step_completed\' (handler and job_id of that branch, input = state_before = public state before, output {"doubled":<aggregate>}). Aggregate: {"mode":"all","quorum":null,"total":3,"succeeded":3,"failed":0,"settled":true,"winner":<results entry of winner_index>,"results":[entries sorted by index],"failures":[]}. Then the Finish job is inserted and current_step becomes 2.',
			'_for_each_steps stays in the final state (settled true) next to the public aggregate under result_key "doubled".',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('fe_all')
    ->then(PlanItems::class)
    ->for_each('items', DoubleItem::class, result_key: 'doubled', name: 'double')
    ->then(Finish::class)
    ->dispatch(['count' => 3]);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'branches dispatched (PlanItems and the for_each placeholder processed, two Queuety::run_worker once)',
				'php'   => $once . "\n" . $once,
			),
			array(
				'label' => 'after the first branch (Queuety::run_worker once)',
				'php'   => $once,
			),
			array(
				'label' => 'completed',
				'php'   => 'Queuety::flush_queue();',
			),
		),
	),

	// -----------------------------------------------------------------------
	'm_for_each_quorum_reducer' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\PlanItems', '__queuety_for_each', 'QueuetyGoInterop\\DoubleItem', 'QueuetyGoInterop\\SumReducer', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[1] is {"type":"for_each","name":"double","items_key":"items","class":"QueuetyGoInterop\\\\DoubleItem","result_key":"summary","mode":"quorum","quorum":2,"reducer_class":"QueuetyGoInterop\\\\SumReducer","compensation":null}. fail_items [1] makes item 0 {"n":1,"fail":true}, which always throws.',
			'Attempt 1 of item 0 fails like any step attempt: job back to \'pending\', attempts 1, reserved_at NULL, available_at = failure time + 60 s; logs \'started\', \'failed\' (error_message \'item 1 failed\', error_class \'RuntimeException\'), \'retried\'; event \'step_failed\' (input {"state","item","item_index"}, context {"item","item_index"}, error {"message","class","trace"}). _for_each_steps is not touched.',
			'Before attempt 2, SQL set available_at = NOW() on that job (instead of waiting 60 s).',
			'Attempt 2 reaches max_attempts 2: the job is buried by the for_each failure path (status \'buried\', failed_at = NOW(), error_message \'item 1 failed\'; reserved_at kept); logs \'started\' and \'buried\' (no \'failed\'/\'retried\'); event \'step_failed\'. The runtime gets failures [{"index":0,"item":{"n":1,"fail":true},"error_message":"item 1 failed","job_id":3}] and "settled":false. The workflow stays \'running\': 0 successes + 2 items left can still reach quorum 2. No workflow_failed log.',
			'Items 1 and 2 succeed: results is stored as an object {"1":{...},"2":{...}} (keys not 0..n-1), winner_index 1. The second success reaches the quorum and settles the step.',
			'Aggregate under "summary": {"mode":"quorum","quorum":2,"total":3,"succeeded":2,"failed":1,"settled":true,"winner":<entry of item 1>,"results":[entries of items 1, 2],"failures":[entry of item 0]}.',
			'The reducer gets the public state with the aggregate and the aggregate; its return {"sum":10,"count":2} is merged into the step output after the result key: step_completed.output = {"summary":...,"sum":10,"count":2}.',
			'The merge is shallow: the reducer\'s "count" overwrote the initial "count":3 in its original position, so the final state has "count":2.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('fe_quorum_reduce')
    ->then(PlanItems::class)
    ->for_each('items', DoubleItem::class, result_key: 'summary', mode: ForEachMode::Quorum, quorum: 2, reducer_class: SumReducer::class, name: 'double')
    ->then(Finish::class)
    ->dispatch(['count' => 3, 'fail_items' => [1]]);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'branches dispatched (PlanItems and the for_each placeholder processed, two Queuety::run_worker once)',
				'php'   => $once . "\n" . $once,
			),
			array(
				'label' => 'item 0 attempt 1 failed, retry scheduled (Queuety::run_worker once)',
				'php'   => $once,
			),
			array(
				'label' => 'item 0 failed for good at attempt 2 (Queuety::run_worker once)',
				'sql'   => array( "UPDATE wp_queuety_jobs SET available_at = NOW() WHERE status = 'pending' AND attempts > 0" ),
				'php'   => $once,
			),
			array(
				'label' => 'completed (two successes reach the quorum, reducer ran)',
				'php'   => 'Queuety::flush_queue();',
			),
		),
	),

	// -----------------------------------------------------------------------
	'm2_for_each_first_success' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\PlanItems', '__queuety_for_each', 'QueuetyGoInterop\\DoubleItem', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[1] has "mode":"first_success","quorum":null,"reducer_class":null. Item 0 always throws; its attempt 1 fails and is retried in 60 s (job pending, attempts 1).',
			'Item 1 succeeds and settles the step at once: results {"1":{...}} (an object), winner_index 1, "settled":true. In the same transaction every other pending or processing job of step 1 is buried with error_message \'For-each completion settled early.\' and failed_at = NOW(): job 3 (the waiting retry: attempts 1, reserved_at NULL, its future available_at unchanged) and job 5 (never ran, attempts 0). No log or event rows are written for the buried jobs.',
			'The settling branch writes \'step_item_completed\' and \'step_completed\' (output {"doubled":{"mode":"first_success","quorum":null,"total":3,"succeeded":1,"failed":0,...}}), then the Finish job is inserted. The item still being retried is not counted as failed: "failures":[].',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('fe_first')
    ->then(PlanItems::class)
    ->for_each('items', DoubleItem::class, result_key: 'doubled', mode: ForEachMode::FirstSuccess, name: 'double')
    ->then(Finish::class)
    ->dispatch(['count' => 3, 'fail_items' => [1]]);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'branches dispatched (PlanItems and the for_each placeholder processed, two Queuety::run_worker once)',
				'php'   => $once . "\n" . $once,
			),
			array(
				'label' => 'item 0 attempt 1 failed, retry scheduled (Queuety::run_worker once)',
				'php'   => $once,
			),
			array(
				'label' => 'item 1 succeeded: settled, other branches buried, next step enqueued (Queuety::run_worker once)',
				'php'   => $once,
			),
			array(
				'label' => 'completed',
				'php'   => 'Queuety::flush_queue();',
			),
		),
	),

	// -----------------------------------------------------------------------
	'm3_for_each_all_failure' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\PlanItems', '__queuety_for_each', 'QueuetyGoInterop\\DoubleItem', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'Mode all with item 1 ({"n":2,"fail":true}) failing. The first flush completes items 0 and 2 (results stored as an object {"0":{...},"2":{...}}) and fails item 1\'s attempt 1 (retry in 60 s).',
			'Before the second flush, SQL set available_at = NOW() on the retrying job.',
			'Attempt 2 is terminal: the branch is buried (error_message \'item 2 failed\'), failures becomes {"1":{"index":1,"item":{"n":2,"fail":true},"error_message":"item 2 failed","job_id":4}}, and mode all can no longer be satisfied, so the workflow fails in the same transaction: status \'failed\', failed_at = NOW(), error_message = the branch\'s message \'item 2 failed\', current_step 1.',
			'Logs: \'buried\' for the branch, then \'workflow_failed\' (job_id = the branch job, handler \'\', error_message). Events: \'step_failed\' only; no step_completed, and no aggregate in state. _for_each_steps is saved with the failure and "settled":false.',
		),
		'steps'    => array(
			array(
				'label'   => 'after item 1 attempt 1 failed (dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('fe_all_fail')
    ->then(PlanItems::class)
    ->for_each('items', DoubleItem::class, result_key: 'doubled', name: 'double')
    ->then(Finish::class)
    ->dispatch(['count' => 3, 'fail_items' => [2]]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'failed (item 1 failed for good at attempt 2)',
				'sql'   => array( "UPDATE wp_queuety_jobs SET available_at = NOW() WHERE status = 'pending' AND attempts > 0" ),
				'php'   => 'Queuety::flush_queue();',
			),
		),
	),

	// -----------------------------------------------------------------------
	'n_repeat' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\Increment', '__queuety_repeat', 'QueuetyGoInterop\\CounterReached', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[1] of A is {"type":"repeat","name":"repeat_until_1","repeat_mode":"until","target_step":"inc","state_key":"counter","expected":3,"condition_class":null,"max_iterations":null,"compensation":null}. The default name is repeat_<mode>_<index>.',
			'A repeat step runs as a placeholder job: handler \'__queuety_repeat\', payload {"step_index":1,"__queuety_runtime":{"max_attempts":3}}, cost_units 0, inserted when the step before it completes.',
			'Continue: the placeholder\'s output is {"_next_step":"inc","_repeat_steps":{"1":{"iterations":1}}}. The engine stores _repeat_steps (an object keyed by the repeat step index), does not store _next_step, sets current_step to the index of step \'inc\' (0) and inserts a new Increment job (a new row, step_index 0).',
			'Stop: the output is {"_repeat_steps":{"1":{"iterations":2}}} (count unchanged) and the workflow goes on to step 2. iterations counts the jumps back taken: A jumped twice, counter ended at 3.',
			'Each repeat job: logs \'started\' and one \'completed\' (attempt NULL); events \'step_started\' (input {"state":<public state>,"definition":<the repeat step>}) and \'step_completed\' with the raw output (_next_step and _repeat_steps) and state_before = state_after.',
			'A workflow dispatched without initial state shows \'[]\' as its public state in events (input, state_before).',
			'B (repeat_while keep_going == true, max_iterations 2): the third evaluation would be jump 3 > 2, so handle_repeat_step throws WorkflowConstraintViolationException. The repeat job is buried at attempt 1 (max_attempts 3 ignored) with error_message "Workflow 2: repeat step \'repeat_while_1\' exceeded max_iterations of 2."; logs \'buried\' (error_class \'Queuety\\Exceptions\\WorkflowConstraintViolationException\') and \'workflow_failed\'; event \'step_failed\'. The workflow is \'failed\' at current_step 1 with counter 3 and _repeat_steps iterations 2.',
			'C: repeat_until with condition_class: the step has "state_key":null,"expected":true,"condition_class":"QueuetyGoInterop\\\\CounterReached","max_iterations":5. CounterReached::matches() gets the public state. Same rows as A.',
		),
		'steps'    => array(
			array(
				'label'   => 'A dispatched (repeat_until counter == 3)',
				'php'     => <<<'PHP'
$a = Queuety::workflow('repeat_until')
    ->then(Increment::class, 'inc')
    ->repeat_until('inc', 'counter', 3)
    ->then(Finish::class)
    ->dispatch();
PHP,
				'observe' => 'return ["workflow id" => $a];',
			),
			array(
				'label' => 'A after inc and the first repeat evaluation: jumped back to inc (two Queuety::run_worker once)',
				'php'   => $once . "\n" . $once,
			),
			array(
				'label' => 'A completed',
				'php'   => 'Queuety::flush_queue();',
			),
			array(
				'label'   => 'B failed at max_iterations (repeat_while keep_going == true, max_iterations 2; dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$b = Queuety::workflow('repeat_max')
    ->then(Increment::class, 'inc')
    ->repeat_while('inc', 'keep_going', true, max_iterations: 2)
    ->then(Finish::class)
    ->dispatch(['keep_going' => true]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["workflow id" => $b];',
			),
			array(
				'label'   => 'C completed (repeat_until with condition_class CounterReached, max_iterations 5; dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$c = Queuety::workflow('repeat_while_cond')
    ->then(Increment::class, 'inc')
    ->repeat_until('inc', condition_class: CounterReached::class, max_iterations: 5)
    ->then(Finish::class)
    ->dispatch(['limit' => 3]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["workflow id" => $c];',
			),
		),
	),

	// -----------------------------------------------------------------------
	'o_run_workflow' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\PlanItems', '__queuety_run_workflow', 'QueuetyGoInterop\\ChildWork', 'QueuetyGoInterop\\FailStep', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[1] is {"type":"run_workflow","name":"1","workflow_name":"child_wf","workflow_steps":[{"type":"single","name":"0","class":"QueuetyGoInterop\\\\ChildWork"}],"workflow_queue":"default","workflow_priority":0,"workflow_max_attempts":3,"compensation":null}. run_workflow() takes no name: it is always the index.',
			'The placeholder job: handler \'__queuety_run_workflow\', payload {"step_index":1,"__queuety_runtime":{"max_attempts":3}}, cost_units 0.',
			'Processing it inserts the child: workflows row 2 \'child_wf\', status \'running\', parent_workflow_id 1, parent_step_index 1, total_steps 1; child state = the parent\'s public state (n, items) followed by _steps, _queue, _priority, _max_attempts and no _definition_hash; the child\'s first job; a \'workflow_started\' log for the child, written before the placeholder\'s \'completed\' log. The placeholder is completed. The parent stays \'running\' at current_step 1 with no job of its own pending. Parent events for step 1: \'step_started\' only.',
			'When the child\'s last step completes, the same transaction completes the child (\'workflow_completed\' log), locks the parent, copies the child\'s public keys over the parent state (n and items get the same values again, child_value and child_done are added), sets current_step 2 and inserts the parent\'s Finish job. No log or event row records the parent\'s resume: no step_completed for step 1, no workflow_resumed.',
			'Finish\'s step_started input and state_before lack child_value and child_done although the row had them; its step_completed state_before has them. The parent\'s state was still in Queuety\'s 2 s in-process cache from the placeholder, and the child\'s completion does not invalidate the parent\'s cache entry. The Finish handler got that stale state too.',
			'Failing child (workflows 3 and 4): FailStep\'s config() gives its job max_attempts 1 (column and __queuety_runtime); the job is buried at attempt 1 with \'child failed\'; the child is \'failed\' (logs \'buried\', \'workflow_failed\'). The parent is not told: it stays \'running\' at current_step 1 with no pending job and no log row, and would wait forever.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('child')
    ->then(PlanItems::class)
    ->run_workflow('child_wf', Queuety::workflow('child_wf')->then(ChildWork::class))
    ->then(Finish::class)
    ->dispatch(['n' => 4]);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'child dispatched, parent parked at the run_workflow step (two Queuety::run_worker once)',
				'php'   => $once . "\n" . $once,
			),
			array(
				'label' => 'completed (child ran, parent resumed with the child state and finished)',
				'php'   => 'Queuety::flush_queue();',
			),
			array(
				'label'   => 'failing child: child failed, parent stays running at the run_workflow step (dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$wf2 = Queuety::workflow('child_fail')
    ->then(PlanItems::class)
    ->run_workflow('child_fail_wf', Queuety::workflow('child_fail_wf')->then(FailStep::class))
    ->then(Finish::class)
    ->dispatch(['n' => 4]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["workflow id" => $wf2];',
			),
		),
	),

	// -----------------------------------------------------------------------
	'p_start_workflows_group' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\PlanItems', '__queuety_start_workflows', '__queuety_wait_for_workflows', 'QueuetyGoInterop\\ChildWork', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[1] is {"type":"start_workflows","name":"start_workflows_1","items_key":"items","result_key":"child_ids","payload_key":"item","inherit_state":true,"group_key":"kids","workflow_definition":{"name":"kid","steps":[...],"queue":"kids","priority":0,"max_attempts":3,"cancel_handler":null,"prune_after":null,"deadline_seconds":null,"deadline_handler":null,"definition_version":null,"definition_hash":"<sha256>","workflow_budget":[],"compensate_on_failure":false},"compensation":null}.',
			'_steps[2] is {"type":"wait_for_workflows","name":"wait_for_workflow_group_2","workflow_ids":null,"workflow_id_key":null,"workflow_group_key":"kids","wait_mode":"all","quorum":null,"result_key":"kid_results","compensation":null}.',
			'The children run on queue \'kids\' (the child builder\'s on_queue) so the parent\'s wait can be seen before they finish; the parent uses \'default\'.',
			'The placeholder \'__queuety_start_workflows\' (payload {"step_index":1,...}, cost_units 0) inserts one top-level workflow per item: parent_workflow_id and parent_step_index NULL; state = parent public state without items_key and result_key (here {"count":3}) + the item\'s keys ({"n":i}) + "start_item_index":<0-based>, then _steps, _queue "kids", _priority, _max_attempts, _definition_hash (from the bundle), _started_by_workflow_id 1, _started_by_step_index 1. Each child gets its first job and a \'workflow_started\' log.',
			'Then the placeholder completes like a step with output {"child_ids":[2,3,4],"_workflow_groups":{"kids":[2,3,4]},"_workflow_budget_delta":{"started_workflows":3}} (step_completed.output): state gains child_ids and _workflow_groups; _workflow_budget_delta is not stored. The placeholder job gets two \'completed\' log rows. current_step 2 and the \'__queuety_wait_for_workflows\' job (payload {"step_index":2,...}, cost_units 0) is inserted.',
			'The wait placeholder finds the children running: it completes its job (one \'completed\' log), inserts one workflow_dependencies row per child (waiting_workflow_id 1, step_index 2, dependency_workflow_id, satisfied_at NULL), sets status \'waiting_for_workflows\' (current_step stays 2) and state _wait {"type":"workflow","step_index":2,"wait_mode":"all","result_key":"kid_results","waiting_for":["2","3","4"],"step_name":"wait_for_workflow_group_2","group_key":"kids"} (null details left out). Events: \'step_started\' and \'workflow_waiting\' (job_id, attempt, queue NULL; input = state_before = state_after = public state; output {"wait_type":"workflow","waiting_for":["2","3","4"],"wait_mode":"all","step_name":...,"group_key":"kids","quorum":null,"result_key":"kid_results"}; context {"wait_type":"workflow"}).',
			'The first child\'s completion sets satisfied_at = NOW() on its dependency row; the parent is re-evaluated, still pending, and not changed.',
			'The last child\'s completion resumes the parent (after the child\'s own commit, in the same process): the dependency rows are deleted, _wait removed, status \'running\', current_step 3, kid_results = {"<child id>":<child public state>, ...}, a \'workflow_resumed\' event (job_id NULL, handler \'__queuety_wait_for_workflows\', input = state_before, output {"kid_results":...}, context NULL), and the Finish job. No log row records the resume.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('start_group')
    ->then(PlanItems::class)
    ->start_workflows('items', Queuety::workflow('kid')->on_queue('kids')->then(ChildWork::class), result_key: 'child_ids', group_key: 'kids')
    ->wait_for_workflow_group('kids', WaitMode::All, result_key: 'kid_results')
    ->then(Finish::class)
    ->dispatch(['count' => 3]);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'children started (PlanItems and start_workflows processed, two Queuety::run_worker once)',
				'php'   => $once . "\n" . $once,
			),
			array(
				'label' => 'parent waiting for the group (wait placeholder processed, Queuety::run_worker once)',
				'php'   => $once,
			),
			array(
				'label' => "after the first child (Queuety::run_worker('kids', true))",
				'php'   => "Queuety::run_worker('kids', true);",
			),
			array(
				'label' => "parent resumed (other children done, Queuety::flush_queue('kids'))",
				'php'   => "Queuety::flush_queue('kids');",
			),
			array(
				'label' => 'completed',
				'php'   => 'Queuety::flush_queue();',
			),
		),
	),

	// -----------------------------------------------------------------------
	'q_wait_for_workflows' => array(
		'handlers' => $pick( array( '__queuety_wait_for_workflows', 'QueuetyGoInterop\\ChildWork', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'_steps[0] of the waiter is {"type":"wait_for_workflows","name":"wait_for_workflows_0","workflow_ids":null,"workflow_id_key":"dep_ids","workflow_group_key":null,"wait_mode":"any","quorum":null,"result_key":"winner","compensation":null}. The dependencies run on queue \'deps\' so the wait can be seen.',
			'A wait as the first step: dispatch inserts the \'__queuety_wait_for_workflows\' job (payload {"step_index":0,...}, cost_units 0).',
			'Waiting: two workflow_dependencies rows (waiting 3, step 0, dependencies 1 and 2), status \'waiting_for_workflows\', _wait {"type":"workflow","step_index":0,"wait_mode":"any","result_key":"winner","waiting_for":["1","2"],"step_name":"wait_for_workflows_0"}, events \'step_started\' and \'workflow_waiting\' (output with "group_key":null,"quorum":null).',
			'The first dependency\'s completion resumes the waiter right after its commit: satisfied_at is set and the rows are deleted in the same transaction (the snapshot shows them gone), status \'running\', current_step 1, winner = {"1":<public state of workflow 1>} (keyed by id because the wait has two ids; mode any keeps only the first completed), \'workflow_resumed\' event, Finish job inserted.',
			'The second dependency completes later with no effect on the waiter.',
			'Waiter 4 waits on [1], already completed: its placeholder settles at once. No dependency rows, no \'waiting_for_workflows\' status, \'workflow_resumed\' right after \'step_started\'. With one id and one result the value is not keyed: winner = {"n":1,"child_value":10,"child_done":true}.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched (two dependencies on queue deps, then the waiter)',
				'php'     => <<<'PHP'
$d1 = Queuety::workflow('wait_dep')->on_queue('deps')->then(ChildWork::class)->dispatch(['n' => 1]);
$d2 = Queuety::workflow('wait_dep')->on_queue('deps')->then(ChildWork::class)->dispatch(['n' => 2]);
$wf = Queuety::workflow('wait_ids')
    ->wait_for_workflows('dep_ids', WaitMode::Any, result_key: 'winner')
    ->then(Finish::class)
    ->dispatch(['dep_ids' => [$d1, $d2]]);
PHP,
				'observe' => 'return ["dependency ids" => [$d1, $d2], "waiter id" => $wf];',
			),
			array(
				'label' => 'waiter waiting (wait placeholder processed, Queuety::run_worker once)',
				'php'   => $once,
			),
			array(
				'label' => "waiter resumed by the first dependency's completion (Queuety::run_worker('deps', true))",
				'php'   => "Queuety::run_worker('deps', true);",
			),
			array(
				'label' => "completed (Queuety::flush_queue(['default', 'deps']))",
				'php'   => "Queuety::flush_queue(['default', 'deps']);",
			),
			array(
				'label'   => 'waiter on an already completed workflow: settled when its placeholder ran (dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$wf2 = Queuety::workflow('wait_ids')
    ->wait_for_workflows('dep_ids', WaitMode::Any, result_key: 'winner')
    ->then(Finish::class)
    ->dispatch(['dep_ids' => [$d1]]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["waiter id" => $wf2];',
			),
		),
	),

	// -----------------------------------------------------------------------
	'r_compensation' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\Increment', 'QueuetyGoInterop\\FailStep', 'QueuetyGoInterop\\Finish', 'QueuetyGoInterop\\UndoStep', 'QueuetyGoInterop\\UndoOther' ) ),
		'notes'    => array(
			'_steps[0] and _steps[1] carry "compensation":"QueuetyGoInterop\\UndoStep" / "QueuetyGoInterop\\UndoOther" (single steps without compensate_with have no "compensation" key); compensate_on_failure() adds "_compensate_on_failure":true to the state after _definition_hash (and to the hash input).',
			'Each completed step with a compensation appends an entry to _compensation_stack: {"step_index":i,"handler":<compensation class>,"payload":[],"state":<public state right after the step>}; the stack is in step order (oldest first). The key is placed where it was first added (after the first step\'s output).',
			'FailStep::config() gives its job max_attempts 1 (column and __queuety_runtime), so attempt 1 is terminal: job buried (error_message \'child failed\'), logs \'buried\' and \'workflow_failed\' (job_id 3, handler \'\'), event \'step_failed\', workflow \'failed\' with error_message \'child failed\', current_step 2.',
			'In the same failure path Queuety runs the compensations inline, newest first (UndoOther with {"order":7,"counter":2}, then UndoStep with {"order":7,"counter":1}; QUEUETY_INTEROP_MARKER is unset so they do nothing), keeps _compensation_stack, and appends "_compensated":true,"_compensation_cause":"failure". No job, log or event row records a compensation.',
			'The second workflow completes step 0 (stack entry {"step_index":0,"handler":"QueuetyGoInterop\\UndoStep","payload":[],"state":{"order":8,"counter":1}}), then its __queuety_wait_for_signal placeholder parks it: status \'waiting_for_signal\', _wait {"type":"signal","step_index":1,...,"waiting_for":["go"],"step_name":"wait_for_go","match_payload":[]}, event \'workflow_waiting\'.',
			'Queuety::cancel_workflow() on it: status \'cancelled\', completed_at = NOW() (Queuety sets completed_at on cancel), _wait kept, UndoStep run inline, "_compensated":true,"_compensation_cause":"cancel" appended; one \'workflow_cancelled\' log row (job_id NULL, handler = workflow name); no event row, no job row.',
			'A Go engine runs each compensation as a durable job instead (handler = compensation class, payload = the entry\'s state plus "__queuety_callback"); interop/fixtures_saga_test.go adds those rows to the expected snapshot.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('saga')
    ->then(Increment::class)->compensate_with(UndoStep::class)
    ->then(Increment::class)->compensate_with(UndoOther::class)
    ->then(FailStep::class)
    ->then(Finish::class)
    ->compensate_on_failure()
    ->dispatch(['order' => 7]);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'failed and compensated (Queuety::flush_queue)',
				'php'   => 'Queuety::flush_queue();',
			),
			array(
				'label'   => 'second workflow waiting for signal go (dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$wf2 = Queuety::workflow('saga_cancel')
    ->then(Increment::class)->compensate_with(UndoStep::class)
    ->wait_for_signal('go')
    ->then(Finish::class)
    ->dispatch(['order' => 8]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["workflow id" => $wf2];',
			),
			array(
				'label' => 'cancelled and compensated (Queuety::cancel_workflow)',
				'php'   => 'Queuety::cancel_workflow($wf2);',
			),
		),
	),

	// -----------------------------------------------------------------------
	's_signal_family' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'Each wait is the first step, so dispatch inserts its \'__queuety_wait_for_signal\' job (payload {"step_index":0,...}, cost_units 0) and a \'workflow_started\' log.',
			'_steps[0] definitions: wait_for_signals(["legal","finance"], any, "first") is {"type":"wait_for_signal","name":"wait_for_signals_0","signal_name":"legal","signal_names":["legal","finance"],"wait_mode":"any","result_key":"first",...,"human_wait":null,"decision_map":null}; wait_for_approval(): name "wait_for_approval", signal "approval", mode all, result_key "approval", human_wait "approval"; wait_for_decision(): name "wait_for_decision", signals ["approved","rejected"], mode any, result_key "decision", human_wait "decision", decision_map {"approved":"approved","rejected":"rejected"}; wait_for_input(): name "wait_for_input", signal "input", result_key "input", human_wait "input".',
			'Waiting: status \'waiting_for_signal\', current_step 0, _wait {"type":"signal","step_index":0,"wait_mode","result_key","waiting_for","step_name"[,"human_wait"],"match_payload":[]} (human_wait only for the human waits, between step_name and match_payload); events \'step_started\' and \'workflow_waiting\' (output with "human_wait", null for the plain wait).',
			'Answers: Queuety::signal(1, "finance", ...), approve_workflow (signal "approval"), reject_workflow (signal "rejected"), submit_workflow_input (signal "input"): each inserts a signals row and settles the wait inline: _wait removed, status \'running\', current_step 1, the Finish job inserted, a \'workflow_resumed\' event (job_id NULL); no log row.',
			'Result shapes: any-mode signals -> first = {"finance":{"ok":true}} (keyed by signal name); approval -> approval = the payload {"by":"ann"}; decision -> decision = {"outcome":"rejected","signal":"rejected","data":{"reason":"no"}}; input -> input = the payload {"text":"hello"}.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$any = Queuety::workflow('sig_any')->wait_for_signals(['legal', 'finance'], WaitMode::Any, 'first')->then(Finish::class)->dispatch(['n' => 1]);
$appr = Queuety::workflow('sig_approval')->wait_for_approval()->then(Finish::class)->dispatch(['n' => 2]);
$dec = Queuety::workflow('sig_decision')->wait_for_decision()->then(Finish::class)->dispatch(['n' => 3]);
$inp = Queuety::workflow('sig_input')->wait_for_input()->then(Finish::class)->dispatch(['n' => 4]);
PHP,
				'observe' => 'return ["workflow ids" => [$any, $appr, $dec, $inp]];',
			),
			array(
				'label' => 'waiting (Queuety::flush_queue)',
				'php'   => 'Queuety::flush_queue();',
			),
			array(
				'label' => 'answered (signal, approve, reject, input, then Queuety::flush_queue)',
				'php'   => <<<'PHP'
Queuety::signal($any, 'finance', ['ok' => true]);
Queuety::approve_workflow($appr, ['by' => 'ann']);
Queuety::reject_workflow($dec, ['reason' => 'no']);
Queuety::submit_workflow_input($inp, ['text' => 'hello']);
Queuety::flush_queue();
PHP,
			),
		),
	),

	// -----------------------------------------------------------------------
	't_rewind_fork' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\Increment', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'A plain three-step workflow run to completion, then Queuety::rewind_workflow(1, 0): the public state becomes the one recorded after step 0 ({"start":1,"counter":1}, from its step_completed event) followed by the runtime keys; status \'running\', current_step 1, error_message and failed_at NULL, but completed_at keeps the old completion time; a new job for step 1; a \'workflow_rewound\' log row with context {"rewound_to_step":0}; no event row.',
			'Queuety::fork_workflow(1) copies the workflow: name "rewind_me_fork_<time()>", same state and current_step, status \'running\', completed_at NULL, its own step 1 job; log rows \'workflow_forked\' on the original (context {"forked_workflow_id":2}) and on the fork (context {"forked_from_workflow_id":1}, handler = the fork name).',
			'The flush completes both from step 1 with the same inputs: the original logs a second \'workflow_completed\'; the fork writes its own events.',
		),
		'steps'    => array(
			array(
				'label'   => 'completed (dispatch, then Queuety::flush_queue)',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('rewind_me')
    ->then(Increment::class)
    ->then(Increment::class)
    ->then(Finish::class)
    ->dispatch(['start' => 1]);
Queuety::flush_queue();
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'rewound to step 0 (Queuety::rewind_workflow)',
				'php'   => 'Queuety::rewind_workflow($wf, 0);',
			),
			array(
				'label'   => 'forked (Queuety::fork_workflow)',
				'php'     => '$fork = Queuety::fork_workflow($wf);',
				'observe' => 'return ["fork id" => $fork];',
			),
			array(
				'label' => 'both completed (Queuety::flush_queue)',
				'php'   => 'Queuety::flush_queue();',
			),
		),
	),

	// -----------------------------------------------------------------------
	'u_artifacts_webhooks' => array(
		'handlers' => $pick( array( 'QueuetyGoInterop\\StoreArtifacts', 'QueuetyGoInterop\\Finish' ) ),
		'notes'    => array(
			'put_current_artifact writes one queuety_artifacts row per key: content of kind json is json_encode(JSON_UNESCAPED_SLASHES) (unicode still escaped), other kinds are stored as given; metadata is json_encode with the default flags ("[]" when empty); step_index is the running step; created_at = updated_at = NOW().',
			'The step_completed event of step 0 lists them in its artifacts column: [{"key","kind","step_index","metadata"}, ...] in put order; every other event has artifacts NULL.',
			'Queuety::put_artifact($wf, "plan", "v2", "text", null, {"by":"ops/1"}) replaces the row in place (INSERT ... ON DUPLICATE KEY UPDATE): same id and created_at, new kind, content, metadata, step_index NULL, updated_at NOW(). put_artifact($wf, "numbers", [1, 2], "list", 1) stores non-string content of a non-json kind as JSON text "[1,2]".',
			'register_webhook inserts (event, url) with created_at from the column default; remove_webhook deletes by id. Queuety does not validate the event or the URL.',
		),
		'steps'    => array(
			array(
				'label'   => 'dispatched',
				'php'     => <<<'PHP'
$wf = Queuety::workflow('artifacts')->then(StoreArtifacts::class)->then(Finish::class)->dispatch(['topic' => 'pricing']);
PHP,
				'observe' => 'return ["workflow id" => $wf];',
			),
			array(
				'label' => 'completed (Queuety::flush_queue)',
				'php'   => 'Queuety::flush_queue();',
			),
			array(
				'label' => 'artifacts put from outside (Queuety::put_artifact)',
				'php'   => <<<'PHP'
Queuety::put_artifact($wf, 'plan', 'v2', 'text', null, ['by' => 'ops/1']);
Queuety::put_artifact($wf, 'numbers', [1, 2], 'list', 1);
PHP,
			),
			array(
				'label' => 'webhooks registered (Queuety::register_webhook)',
				'php'   => <<<'PHP'
Queuety::register_webhook('job.buried', 'https://hooks.example.com/services/T0/B0');
Queuety::register_webhook('workflow.failed', 'http://127.0.0.1:8080/queuety?x=1');
PHP,
			),
			array(
				'label' => 'one webhook removed (Queuety::remove_webhook)',
				'php'   => 'Queuety::remove_webhook(1);',
			),
		),
	),
);
