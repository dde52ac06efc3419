package wpconfig

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorsNeverQuoteThePassword: an error about DB_PASSWORD, or about a
// constant the password is made of (however indirectly, and even when
// another setting reads it first), names the setting and the line but
// never quotes its source, which holds the password or the way to get it.
func TestErrorsNeverQuoteThePassword(t *testing.T) {
	const secret = "Hunter2sekrit"
	for name, src := range map[string][]byte{
		"unknown function": withSetting("DB_PASSWORD", `define('DB_PASSWORD', vault('`+secret+`'));`),
		"interpolation":    withSetting("DB_PASSWORD", `define("DB_PASSWORD", "`+secret+`$x");`),
		"stray literal":    withSetting("DB_PASSWORD", `define('DB_PASSWORD', 'a' '`+secret+`');`),
		"stray name":       withSetting("DB_PASSWORD", `define('DB_PASSWORD', 'a' `+secret+`);`),
		"ternary":          withSetting("DB_PASSWORD", `define('DB_PASSWORD', getenv('X') ? '`+secret+`' : 'b');`),
		"via a constant": withSetting("DB_PASSWORD",
			`define('PW', vault('`+secret+`'));`, `define('DB_PASSWORD', PW);`),
		"via two constants": withSetting("DB_PASSWORD",
			`define('INNER', "`+secret+`{$x}");`, `define('OUTER', 'p' . INNER);`, `define('DB_PASSWORD', OUTER ?: 'x');`),
		"a constant DB_NAME reads first": withSetting("DB_PASSWORD",
			`define('SHARED', vault('`+secret+`'));`, `define('DB_PASSWORD', SHARED);`,
			`define('DB_NAME', 'db' . SHARED);`),
	} {
		_, err := Parse(src)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrUnsupported, name)
		assert.NotContains(t, err.Error(), secret, name)
		assert.Contains(t, err.Error(), "not shown", "%s: the error says why the text is missing", name)
	}

	// Settings other than the password still quote their source.
	_, err := Parse(withSetting("DB_NAME", `define('DB_NAME', vault('site'));`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "vault('site')")
	assert.False(t, strings.Contains(err.Error(), "not shown"))
}
