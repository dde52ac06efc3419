package sqlstore

import "time"

// SetDueReprobe sets how often MaintenanceDue looks again for missing
// tables, until the returned function restores it.
func SetDueReprobe(d time.Duration) (restore func()) {
	old := dueReprobe
	dueReprobe = d
	return func() { dueReprobe = old }
}
