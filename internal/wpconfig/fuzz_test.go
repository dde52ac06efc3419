package wpconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/stretchr/testify/require"
)

// FuzzParse checks that Parse never panics, also on the expressions it
// evaluates, and that whatever it accepts has a valid table prefix and port.
// The environment is fixed and files are never read, so runs are repeatable.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"wp-config-sample.php", "wp-config-production.php", "wp-config-docker.php"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(src)
	}
	f.Add([]byte("<?php define(\"DB_NAME\", \"a{$b['}']}\\u{1F600}\\x41\\101\"); $h = <<<'X'\n'\nX;\n"))
	for _, expr := range []string{
		`getenv_docker('WORDPRESS_DB_NAME', 'wordpress')`,
		`getenv_docker('SECRET', '')`,
		`getenv('HOST') ?: 'localhost'`,
		`$_ENV['NAME'] ?? $_SERVER["NAME"] ?? 'x'`,
		`MY_DB . '_' . (getenv('EMPTY') ?: "z\x41")`,
		`\GETENV($_ENV[getenv('KEY')])`,
		`((('a')) . ('b' ?: ) ?? )`,
		`getenv('A') ? 'b' : 'c'`,
		`"pa$word" . foo()`,
	} {
		f.Add([]byte("<?php define('MY_DB', getenv('HOST'));\ndefine('DB_NAME', " + expr + ");\n" +
			"define('DB_USER', 'u'); define('DB_HOST', " + expr + ");\n$table_prefix = " + expr + ";\n"))
	}
	opts := Options{
		LookupEnv: func(name string) (string, bool) {
			v, ok := map[string]string{"HOST": "db:3307", "EMPTY": "", "KEY": "NAME", "NAME": "n", "SECRET_FILE": "/x"}[name]
			return v, ok
		},
		ReadFile: func(string) ([]byte, error) { return []byte("secret\n"), nil },
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := opts.Parse(src)
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
