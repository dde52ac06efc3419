package wpconfig

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envOptions returns Options that read environment variables from env only.
func envOptions(env map[string]string) Options {
	return Options{LookupEnv: func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}}
}

// withSetting returns a wp-config.php whose define (or $table_prefix
// assignment) of setting is replaced by line; the other settings are literal.
func withSetting(setting string, extra ...string) []byte {
	lines := []string{
		"define( 'DB_NAME', 'wordpress' );",
		"define( 'DB_USER', 'wp' );",
		"define( 'DB_PASSWORD', 'secret' );",
		"define( 'DB_HOST', 'localhost' );",
	}
	var out []string
	for _, l := range lines {
		if !strings.Contains(l, "'"+setting+"'") {
			out = append(out, l)
		}
	}
	return php(append(extra, out...)...)
}

func settingOf(cfg Config, setting string) string {
	switch setting {
	case "DB_NAME":
		return cfg.DBName
	case "DB_USER":
		return cfg.DBUser
	case "DB_PASSWORD":
		return cfg.DBPassword
	case "DB_HOST":
		return cfg.DBHost
	}
	return cfg.TablePrefix
}

func TestParseExpressions(t *testing.T) {
	env := map[string]string{
		"WORDPRESS_DB_NAME": "from_env",
		"EMPTY":             "",
		"ZERO":              "0",
		"SUFFIX":            "blog2_",
		"DB_HOST":           "db.internal:3307",
		"KEY":               "SUFFIX",
	}
	tests := []struct {
		name    string
		setting string
		lines   []string
		want    string
	}{
		{"getenv_docker set", "DB_NAME", []string{`define( 'DB_NAME', getenv_docker('WORDPRESS_DB_NAME', 'wordpress') );`}, "from_env"},
		{"getenv_docker default", "DB_USER", []string{`define( 'DB_USER', getenv_docker('WORDPRESS_DB_USER', 'example username') );`}, "example username"},
		{"getenv_docker set but empty", "DB_PASSWORD", []string{`define( 'DB_PASSWORD', getenv_docker('EMPTY', 'default') );`}, ""},
		{"getenv", "DB_HOST", []string{`define('DB_HOST', getenv('DB_HOST'));`}, "db.internal:3307"},
		{"getenv unset is false, an empty string", "DB_PASSWORD", []string{`define('DB_PASSWORD', getenv('NOPE'));`}, ""},
		{"getenv upper case and namespaced", "DB_HOST", []string{`define('DB_HOST', \GETENV("DB_HOST"));`}, "db.internal:3307"},
		{"elvis with unset", "DB_HOST", []string{`define('DB_HOST', getenv('NOPE') ?: 'localhost');`}, "localhost"},
		{"elvis with empty", "DB_HOST", []string{`define('DB_HOST', getenv('EMPTY') ?: 'localhost');`}, "localhost"},
		{"elvis with zero", "DB_HOST", []string{`define('DB_HOST', getenv('ZERO') ?: 'localhost');`}, "localhost"},
		{"elvis with set", "DB_HOST", []string{`define('DB_HOST', getenv('DB_HOST') ?: 'localhost');`}, "db.internal:3307"},
		{"elvis spaced and chained", "DB_HOST", []string{`define('DB_HOST', getenv('NOPE') ? : getenv('EMPTY') ?: 'last');`}, "last"},
		{"coalesce $_ENV unset", "DB_USER", []string{`define('DB_USER', $_ENV['NOPE'] ?? 'wp_user');`}, "wp_user"},
		{"coalesce $_ENV set", "DB_NAME", []string{`define('DB_NAME', $_ENV['WORDPRESS_DB_NAME'] ?? 'wordpress');`}, "from_env"},
		{"coalesce keeps empty", "DB_PASSWORD", []string{`define('DB_PASSWORD', $_ENV['EMPTY'] ?? 'default');`}, ""},
		{"coalesce keeps getenv false", "DB_PASSWORD", []string{`define('DB_PASSWORD', getenv('NOPE') ?? 'default');`}, ""},
		{"coalesce $_SERVER", "DB_HOST", []string{`define('DB_HOST', $_SERVER["DB_HOST"] ?? 'localhost');`}, "db.internal:3307"},
		{"$_ENV alone", "DB_NAME", []string{`define('DB_NAME', $_ENV['WORDPRESS_DB_NAME']);`}, "from_env"},
		{"$_ENV alone unset", "DB_PASSWORD", []string{`define('DB_PASSWORD', $_ENV['NOPE']);`}, ""},
		{"computed key", "DB_NAME", []string{`define('DB_NAME', $_ENV[getenv('KEY')]);`}, "blog2_"},
		{"earlier constant", "DB_NAME", []string{`define('MY_DB', 'shop');`, `define('DB_NAME', MY_DB);`}, "shop"},
		{"constant chain with env", "DB_NAME", []string{`define('BASE', getenv('SUFFIX') ?: 'x');`, `define('MY_DB', 'db_' . BASE);`, `define('DB_NAME', MY_DB);`}, "db_blog2_"},
		{"first define of a constant wins", "DB_NAME", []string{`define('MY_DB', 'one');`, `define('MY_DB', 'two');`, `define('DB_NAME', MY_DB);`}, "one"},
		{"concatenation", "DB_HOST", []string{`define('DB_HOST', 'db' . '.internal' . ":" . '3307');`}, "db.internal:3307"},
		{"concatenation binds tighter than elvis", "DB_NAME", []string{`define('DB_NAME', 'a' . getenv('NOPE') ?: 'b');`}, "a"},
		{"coalesce binds tighter than elvis", "DB_NAME", []string{`define('DB_NAME', getenv('EMPTY') ?: $_ENV['NOPE'] ?? 'c');`}, "c"},
		{"parentheses", "DB_NAME", []string{`define('DB_NAME', ('a' . (getenv('NOPE') ?: 'b')) . 'c');`}, "abc"},
		{"double quotes without interpolation", "DB_PASSWORD", []string{`define("DB_PASSWORD", "pa\$\$" . "\x41");`}, "pa$$A"},
		{"prefix with concatenation", "$table_prefix", []string{`$table_prefix = 'wp_' . getenv('SUFFIX');`}, "wp_blog2_"},
		{"prefix from env with fallback", "$table_prefix", []string{`$table_prefix = getenv('NOPE') ?: 'wp_';`}, "wp_"},
		{"prefix from a constant", "$table_prefix", []string{`define('PFX', 'site_');`, `$table_prefix = PFX;`}, "site_"},
		{"trailing comma and multiple lines", "DB_NAME", []string{"define(\n  'DB_NAME',\n  getenv_docker(\n    'WORDPRESS_DB_NAME',\n    'x',\n  ),\n);"}, "from_env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := envOptions(env).Parse(withSetting(tt.setting, tt.lines...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, settingOf(cfg, tt.setting), tt.setting)
		})
	}
}

func TestParseDockerConfig(t *testing.T) {
	path := filepath.Join("testdata", "wp-config-docker.php")
	secret := filepath.Join(t.TempDir(), "db_password")
	require.NoError(t, os.WriteFile(secret, []byte("s3cr3t\n\r\n"), 0o600))

	tests := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{
			name: "defaults",
			want: Config{DBName: "wordpress", DBUser: "example username", DBPassword: "example password",
				DBHost: "mysql", Host: "mysql", Port: 3306, TablePrefix: "wp_"},
		},
		{
			name: "environment",
			env: map[string]string{"WORDPRESS_DB_NAME": "shop", "WORDPRESS_DB_USER": "shop_user", "WORDPRESS_DB_PASSWORD": "pw",
				"WORDPRESS_DB_HOST": "db:3307", "WORDPRESS_TABLE_PREFIX": "shop_"},
			want: Config{DBName: "shop", DBUser: "shop_user", DBPassword: "pw",
				DBHost: "db:3307", Host: "db", Port: 3307, TablePrefix: "shop_"},
		},
		{
			name: "_FILE wins over the variable and is trimmed",
			env:  map[string]string{"WORDPRESS_DB_PASSWORD_FILE": secret, "WORDPRESS_DB_PASSWORD": "ignored"},
			want: Config{DBName: "wordpress", DBUser: "example username", DBPassword: "s3cr3t",
				DBHost: "mysql", Host: "mysql", Port: 3306, TablePrefix: "wp_"},
		},
		{
			name: "empty _FILE is ignored",
			env:  map[string]string{"WORDPRESS_DB_PASSWORD_FILE": "", "WORDPRESS_DB_PASSWORD": "pw"},
			want: Config{DBName: "wordpress", DBUser: "example username", DBPassword: "pw",
				DBHost: "mysql", Host: "mysql", Port: 3306, TablePrefix: "wp_"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := envOptions(tt.env).ParseFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestParseFileWithProcessEnvironment(t *testing.T) {
	t.Setenv("WORDPRESS_DB_NAME", "process_env")
	t.Setenv("WORDPRESS_DB_HOST", "10.0.0.5")
	cfg, err := ParseFile(filepath.Join("testdata", "wp-config-docker.php"))
	require.NoError(t, err)
	assert.Equal(t, "process_env", cfg.DBName, "DBName")
	assert.Equal(t, "10.0.0.5", cfg.Host, "Host")
}

func TestParseExpressionErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     []byte
		is      error
		message string
	}{
		{"unknown function", withSetting("DB_PASSWORD", `define('DB_PASSWORD', my_secret('db'));`), ErrUnsupported,
			"wpconfig: line 2: DB_PASSWORD is set by an expression the reader does not evaluate (not shown: it makes up the password): function my_secret() is not evaluated, only getenv() and getenv_docker()"},
		{"variable", withSetting("DB_NAME", `$db = 'x';`, `define('DB_NAME', $db);`), ErrUnsupported,
			"line 3: DB_NAME is set by an expression the reader does not evaluate: $db (variable $db is not evaluated"},
		{"ternary", withSetting("DB_HOST", `define('DB_HOST', getenv('X') ? getenv('X') : 'localhost');`), ErrUnsupported,
			"line 2: DB_HOST is set by an expression the reader does not evaluate: getenv('X') ? getenv('X') : 'localhost' (the ternary operator"},
		{"undefined constant", withSetting("DB_USER", `define('DB_USER', WP_DB_USER);`), ErrUnsupported,
			"line 2: DB_USER is set by an expression the reader does not evaluate: WP_DB_USER (constant WP_DB_USER is not defined earlier in the file)"},
		{"constant defined later", withSetting("DB_USER", `define('DB_USER', LATER);`, `define('LATER', 'x');`), ErrUnsupported,
			"constant LATER is not defined earlier in the file"},
		{"bad referenced constant", withSetting("DB_NAME", `define('MY_DB', rand());`, `define('DB_NAME', MY_DB);`), ErrUnsupported,
			"line 2: MY_DB (used by DB_NAME) is set by an expression the reader does not evaluate: rand()"},
		{"getenv_docker arity", withSetting("DB_NAME", `define('DB_NAME', getenv_docker('X'));`), ErrUnsupported,
			"getenv_docker() is evaluated with 2 argument(s), not 1"},
		{"number", withSetting("DB_NAME", `define('DB_NAME', 'db' . 1);`), ErrUnsupported, "(unexpected 1)"},
		{"dangling operator", withSetting("DB_NAME", `define('DB_NAME', 'db' . );`), ErrUnsupported, "(the expression ends too early)"},
		{"superglobal without index", withSetting("DB_NAME", `define('DB_NAME', $_ENV);`), ErrUnsupported, "$_ENV is only evaluated as $_ENV['NAME']"},
		{"interpolation in a concatenation", withSetting("DB_NAME", `define('DB_NAME', 'a' . "{$x}");`), ErrUnsupported, "interpolates variables"},
		{"prefix", withSetting("", `$table_prefix = substr('wp_x', 0, 3);`), ErrUnsupported,
			"line 2: $table_prefix is set by an expression the reader does not evaluate: substr('wp_x', 0, 3)"},
		{"prefix evaluated to an invalid value", withSetting("", `$table_prefix = getenv('BAD') ?: 'wp_';`), nil,
			`line 2: invalid $table_prefix "wp-x"`},
		{"too deep", withSetting("DB_NAME", `define('DB_NAME', `+strings.Repeat("(", 100)+`'x'`+strings.Repeat(")", 100)+`);`), ErrUnsupported,
			"nested too deeply"},
		{"runaway concatenation", withSetting("DB_NAME", func() []string {
			lines := []string{`define('C0', 'xxxxxxxxxxxxxxxx');`}
			for i := 1; i <= 40; i++ {
				lines = append(lines, "define('C"+strconv.Itoa(i)+"', C"+strconv.Itoa(i-1)+" . C"+strconv.Itoa(i-1)+");")
			}
			return append(lines, `define('DB_NAME', C40);`)
		}()...), ErrUnsupported, "is longer than 65536 bytes"},
		{"long expression is shortened", withSetting("DB_NAME", `define('DB_NAME', foo('`+strings.Repeat("x", 200)+`'));`), ErrUnsupported,
			"foo('xxxxxxxx"},
	}
	env := envOptions(map[string]string{"BAD": "wp-x"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.Parse(tt.src)
			require.Error(t, err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.ErrorContains(t, err, tt.message)
			assert.Less(t, len(err.Error()), 300, "error text is too long")
		})
	}
}

func TestParseFileErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "wp-config.php")
	src := withSetting("DB_NAME", "// settings", "", `define( 'DB_NAME', strtolower('X') );`)
	require.NoError(t, os.WriteFile(path, src, 0o600))
	_, err := envOptions(nil).ParseFile(path)
	assert.EqualError(t, err, "wpconfig: "+path+":4: DB_NAME is set by an expression the reader does not evaluate: "+
		"strtolower('X') (function strtolower() is not evaluated, only getenv() and getenv_docker())")
	assert.ErrorIs(t, err, ErrUnsupported)

	missing := filepath.Join(dir, "missing")
	src = withSetting("DB_PASSWORD", `define('DB_PASSWORD', getenv_docker('PW', ''));`)
	require.NoError(t, os.WriteFile(path, src, 0o600))
	_, err = envOptions(map[string]string{"PW_FILE": missing}).ParseFile(path)
	assert.ErrorContains(t, err, "wpconfig: "+path+":2: DB_PASSWORD: getenv_docker('PW'): read PW_FILE: open "+missing)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
