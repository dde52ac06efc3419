package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/sqlite"
)

// TestSerializeIntoAnotherMemoryStore copies a migrated database with a
// job into a fresh in-memory store opened without migrating.
func TestSerializeIntoAnotherMemoryStore(t *testing.T) {
	ctx := context.Background()
	src, err := queuety.Open(ctx, "sqlite://:memory:")
	require.NoError(t, err)
	defer src.Close()
	_, err = src.Dispatch(ctx, "copied", nil)
	require.NoError(t, err)
	b, err := clientseam.StoreOf(src).(*sqlite.Store).Serialize(ctx)
	require.NoError(t, err)

	dst, err := queuety.Open(ctx, "sqlite://:memory:", queuety.SkipMigrate())
	require.NoError(t, err)
	defer dst.Close()
	require.NoError(t, clientseam.StoreOf(dst).(*sqlite.Store).Deserialize(ctx, b))
	require.NoError(t, clientseam.StoreOf(dst).Migrate(ctx), "the copy is fully migrated")
	jobs, err := dst.ListJobs(ctx, driver.JobFilter{})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "copied", jobs[0].Handler)

	_, err = dst.Dispatch(ctx, "after", nil)
	require.NoError(t, err)
	jobs, err = src.ListJobs(ctx, driver.JobFilter{})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "the copy is independent of its source")
}

func TestDeserializeRefusesAFile(t *testing.T) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	defer c.Close()
	b, err := clientseam.StoreOf(c).(*sqlite.Store).Serialize(ctx)
	require.NoError(t, err)
	require.ErrorContains(t, clientseam.StoreOf(c).(*sqlite.Store).Deserialize(ctx, b), "only an in-memory database can be replaced")
}
