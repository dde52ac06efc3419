package mysql

import (
	"errors"
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// TestRetryableErrors: the errors after which a transaction runs again,
// Galera's "node not ready" among them, and errors that are not.
func TestRetryableErrors(t *testing.T) {
	d := dialect(1)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&gomysql.MySQLError{Number: 1213, Message: "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction"}, true},
		{&gomysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction"}, true},
		{&gomysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}, true},
		{fmt.Errorf("commit: %w", &gomysql.MySQLError{Number: 1047}), true},
		{&gomysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{&gomysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}, false},
		{errors.New("1213"), false},
	} {
		if got := d.Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
