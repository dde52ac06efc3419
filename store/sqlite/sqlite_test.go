package sqlite_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/store/storetest"
)

// harness gives every case a fresh database file, a copy of a migrated
// template. SQLite serialises writers: every transaction begins
// IMMEDIATE.
var harness = storetest.Harness{
	DSN: func(tb testing.TB) string {
		tb.Helper()
		src, err := template()
		require.NoError(tb, err, "migrate the template database")
		path := filepath.Join(tb.TempDir(), "queuety.db")
		require.NoError(tb, copyFile(path, src), "copy the template database")
		return "sqlite://" + path
	},
	SerialWriters: true,
}

func TestDriver(t *testing.T) {
	t.Parallel()
	storetest.RunDriver(t, harness)
}

func TestAcceptance(t *testing.T) {
	t.Parallel()
	storetest.RunAcceptance(t, harness)
}

// BenchmarkDriver runs the twin benchmarks of storetest.Bench, the same
// operations on both stores.
func BenchmarkDriver(b *testing.B) { storetest.Bench(b, harness) }

// templateDir holds the template database; TestMain removes it.
var templateDir string

// template migrates a database file once per test binary and returns its
// path. Copying it is an order of magnitude faster than migrating every
// case's database from scratch. The store is closed before the file is
// copied, so its write-ahead log has been folded into it.
var template = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "queuety-sqlite-template-")
	if err != nil {
		return "", err
	}
	templateDir = dir
	path := filepath.Join(dir, "template.db")
	ctx := context.Background()
	s, err := driver.Open(ctx, "sqlite://"+path)
	if err != nil {
		return "", err
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return "", err
	}
	return path, s.Close()
})

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if templateDir != "" {
		os.RemoveAll(templateDir)
	}
	os.Exit(code)
}
