package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
)

// TestNotifyWakesAnotherProcess: a job dispatched through one client
// wakes the idle workers of another. The clients' DSNs differ, so they
// share no in-process wake-up: only the store's NOTIFY, heard by the
// other engine's LISTEN, reaches its subscribers.
func TestNotifyWakesAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, _ := testdb.PostgresDSN(t)
	workerSide, err := queuety.Open(ctx, dsn+"&application_name=worker", quiet())
	require.NoError(t, err)
	defer workerSide.Close()
	dispatchSide, err := queuety.Open(ctx, dsn+"&application_name=dispatcher", quiet())
	require.NoError(t, err)
	defer dispatchSide.Close()

	wake, unsubscribe := clientseam.Engine(workerSide).SubscribeWake()
	defer unsubscribe()
	// The listener wakes its subscribers once when it starts listening:
	// what was committed before it sent nothing it heard.
	waitWake(t, ctx, wake, "the listener's first wake-up")
	_, err = dispatchSide.Dispatch(ctx, "ping", nil)
	require.NoError(t, err)
	waitWake(t, ctx, wake, "the wake-up of a job dispatched by another client")
}

func waitWake(t *testing.T, ctx context.Context, wake <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not come within 30 s", what)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}
