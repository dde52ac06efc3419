<?php
/**
 * The state machine action and guard of the machine interop tests,
 * namespace QueuetyGoInterop. The Go tests register twins under the same
 * class names.
 *
 * @package QueuetyGoInterop
 */

declare(strict_types=1);

namespace QueuetyGoInterop;

use Queuety\Contracts\StateAction;
use Queuety\Contracts\StateGuard;

/** Plans a session: stores a plan and emits 'planned'. */
class PlanAction implements StateAction {
	/**
	 * @param array<string, mixed> $state         Public machine state.
	 * @param string|null          $event         Event that led into the state.
	 * @param array<string, mixed> $event_payload That event's payload.
	 * @param array<string, mixed> $payload       The action's payload from the definition.
	 * @return array<string, mixed>|string
	 */
	public function handle( array $state, ?string $event = null, array $event_payload = array(), array $payload = array() ): array|string {
		return array(
			'_event' => 'planned',
			'plan'   => 'steps for ' . ( $state['message'] ?? '' ),
		);
	}
}

/** Allows an approval whose payload says approved. */
class ApproveGuard implements StateGuard {
	/**
	 * @param array<string, mixed> $state         Public machine state.
	 * @param array<string, mixed> $event_payload Event payload.
	 * @param string               $event         Event name.
	 * @param array<string, mixed> $payload       The guard's payload from the definition.
	 */
	public function allows( array $state, array $event_payload, string $event, array $payload = array() ): bool {
		return ! empty( $event_payload['approved'] );
	}
}
