package wpconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/stretchr/testify/require"
)

// FuzzParse checks that Parse never panics and that whatever it accepts has a
// valid table prefix and a DSN the parser's own values can be read back from.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"wp-config-sample.php", "wp-config-production.php"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(src)
	}
	f.Add([]byte("<?php define(\"DB_NAME\", \"a{$b['}']}\\u{1F600}\\x41\\101\"); $h = <<<'X'\n'\nX;\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := Parse(src)
		if err != nil {
			return
		}
		require.NoError(t, driver.ValidatePrefix(cfg.TablePrefix), "accepted an invalid prefix")
		if cfg.Socket == "" {
			require.GreaterOrEqual(t, cfg.Port, 1, "accepted port %d", cfg.Port)
			require.LessOrEqual(t, cfg.Port, 65535, "accepted port %d", cfg.Port)
		}
		_ = cfg.DSN()
	})
}
