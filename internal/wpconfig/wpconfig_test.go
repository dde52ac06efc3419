package wpconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// php builds a wp-config.php body from lines of PHP code.
func php(lines ...string) []byte {
	return []byte("<?php\n" + strings.Join(lines, "\n") + "\n")
}

// dbDefines returns the usual DB_* defines with the given DB_HOST.
func dbDefines(host string) []string {
	return []string{
		"define( 'DB_NAME', 'wordpress' );",
		"define( 'DB_USER', 'wp' );",
		"define( 'DB_PASSWORD', 'secret' );",
		"define( 'DB_HOST', '" + host + "' );",
	}
}

func TestParseFiles(t *testing.T) {
	tests := []struct {
		file string
		want Config
	}{
		{
			file: "wp-config-sample.php",
			want: Config{
				DBName: "database_name_here", DBUser: "username_here", DBPassword: "password_here",
				DBHost: "localhost", Host: "localhost", Port: 3306, TablePrefix: "wp_",
			},
		},
		{
			file: "wp-config-production.php",
			want: Config{
				DBName: "shop_wp", DBUser: "shop",
				DBPassword: `Zx9#q/*not a comment*/ // "quoted" 'single' \back`,
				DBHost:     "db-1.internal:3307", Host: "db-1.internal", Port: 3307, TablePrefix: "shop_",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseFile(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "ParseFile")
		})
	}
}

func TestParseHostForms(t *testing.T) {
	tests := []struct {
		dbHost string
		host   string
		port   int
		socket string
		dsn    string
	}{
		{"localhost", "localhost", 3306, "", "wp:secret@tcp(localhost:3306)/wordpress?prefix=wp_"},
		{"db.example.com", "db.example.com", 3306, "", "wp:secret@tcp(db.example.com:3306)/wordpress?prefix=wp_"},
		{"127.0.0.1:3307", "127.0.0.1", 3307, "", "wp:secret@tcp(127.0.0.1:3307)/wordpress?prefix=wp_"},
		{"db.example.com:", "db.example.com", 3306, "", "wp:secret@tcp(db.example.com:3306)/wordpress?prefix=wp_"},
		{":3308", "localhost", 3308, "", "wp:secret@tcp(localhost:3308)/wordpress?prefix=wp_"},
		{"", "localhost", 3306, "", "wp:secret@tcp(localhost:3306)/wordpress?prefix=wp_"},
		{"/var/run/mysqld/mysqld.sock", "", 3306, "/var/run/mysqld/mysqld.sock", "wp:secret@unix(/var/run/mysqld/mysqld.sock)/wordpress?prefix=wp_"},
		{"localhost:/tmp/mysql.sock", "", 3306, "/tmp/mysql.sock", "wp:secret@unix(/tmp/mysql.sock)/wordpress?prefix=wp_"},
		{"[::1]:3307", "::1", 3307, "", "wp:secret@tcp([::1]:3307)/wordpress?prefix=wp_"},
		{"[2001:db8::10]", "2001:db8::10", 3306, "", "wp:secret@tcp([2001:db8::10]:3306)/wordpress?prefix=wp_"},
		{"::1", "::1", 3306, "", "wp:secret@tcp([::1]:3306)/wordpress?prefix=wp_"},
		{"[::1]:/run/mysql.sock", "", 3306, "/run/mysql.sock", "wp:secret@unix(/run/mysql.sock)/wordpress?prefix=wp_"},
	}
	for _, tt := range tests {
		t.Run(tt.dbHost, func(t *testing.T) {
			cfg, err := Parse(php(dbDefines(tt.dbHost)...))
			require.NoError(t, err)
			assert.Equal(t, tt.dbHost, cfg.DBHost, "DBHost")
			assert.Equal(t, tt.host, cfg.Host, "Host")
			assert.Equal(t, tt.port, cfg.Port, "Port")
			assert.Equal(t, tt.socket, cfg.Socket, "Socket")
			assert.Equal(t, tt.dsn, cfg.DSN(), "DSN()")
		})
	}
}

func TestParseBadHost(t *testing.T) {
	for _, host := range []string{"db:abc", "db:0", "db:65536", "db:-1", "db:+80", "[::1", "[::1]3306", "[]:3306", "[::1]:x"} {
		t.Run(host, func(t *testing.T) {
			_, err := Parse(php(dbDefines(host)...))
			assert.ErrorContains(t, err, "invalid DB_HOST", "Parse(DB_HOST=%q)", host)
		})
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name string
		src  []byte
		want Config // only DBName, DBUser, DBPassword and TablePrefix are compared
	}{
		{
			name: "double quotes and odd spacing",
			src: php(`define("DB_NAME","wordpress");`, `define (  "DB_USER"  ,  "wp"  )  ;`,
				"define(\n\t'DB_PASSWORD',\n\t'secret'\n);", `define('DB_HOST', "localhost");`),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "wp_"},
		},
		{
			name: "single-quoted escapes",
			src: php(`define('DB_NAME', 'wordpress');`, `define('DB_USER', 'o\'brien');`,
				`define('DB_PASSWORD', 'a\\b\nc\"d\'e\\\\');`, `define('DB_HOST', 'localhost');`),
			want: Config{DBName: "wordpress", DBUser: "o'brien", DBPassword: `a\b\nc\"d'e\\`, TablePrefix: "wp_"},
		},
		{
			name: "double-quoted escapes",
			src: php(`define("DB_NAME", "wordpress");`, `define("DB_USER", "say \"hi\"");`,
				`define("DB_PASSWORD", "a\\b\$c\tq\x41\101\u{e9}\q'");`, `define("DB_HOST", "localhost");`),
			want: Config{DBName: "wordpress", DBUser: `say "hi"`, DBPassword: "a\\b$c\tqAA\u00e9\\q'", TablePrefix: "wp_"},
		},
		{
			name: "empty password and missing password",
			src:  php(`define('DB_NAME', 'wordpress');`, `define('DB_USER', 'root');`, `define('DB_HOST', 'localhost');`),
			want: Config{DBName: "wordpress", DBUser: "root", TablePrefix: "wp_"},
		},
		{
			name: "commented-out defines are ignored",
			src: php(
				`// define('DB_NAME', 'line_comment');`,
				`# define('DB_NAME', 'hash_comment');`,
				`/* define('DB_NAME', 'block_comment'); */`,
				"/*\n define('DB_USER', 'multi');\n define('DB_PASSWORD', 'line');\n*/",
				`/** @var string */ define( 'DB_NAME', 'real' ); // define('DB_USER', 'trailing');`,
				`define( 'DB_USER', 'wp' ); # define('DB_PASSWORD', 'trailing');`,
				`define( 'DB_PASSWORD', 'secret' );`,
				`define( 'DB_HOST', 'localhost' );`,
				`// $table_prefix = 'commented_';`,
			),
			want: Config{DBName: "real", DBUser: "wp", DBPassword: "secret", TablePrefix: "wp_"},
		},
		{
			name: "defines inside strings and heredocs are ignored",
			src: php(
				`$help = "Write define('DB_NAME', 'from_string'); here";`,
				`$more = 'define("DB_NAME", "from_single")';`,
				"$doc = <<<EOT\nIt's define('DB_NAME', 'from_heredoc');\n  EOT;",
				"$now = <<<'EOT'\ndefine('DB_NAME', \"from_nowdoc\");\nEOT;",
				dbDefines("localhost")[0], dbDefines("localhost")[1], dbDefines("localhost")[2], dbDefines("localhost")[3],
			),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "wp_"},
		},
		{
			name: "text outside PHP tags is ignored",
			src: []byte("define('DB_NAME', 'html_before');\n" +
				"<?php // a line comment ends at ?> define('DB_NAME', 'html_after_comment');\n" +
				"<?php\n" + strings.Join(dbDefines("localhost"), "\n") + "\n?>\n" +
				"<p>$table_prefix = 'html_';</p>\n" +
				"<?php $table_prefix = 'site_' ?>\n$table_prefix = 'html_after';\n"),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "site_"},
		},
		{
			name: "the first define wins",
			src:  php(append(dbDefines("localhost"), `define('DB_NAME', 'second');`)...),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "wp_"},
		},
		{
			name: "constant names are case-sensitive, define is not",
			src: php(`define('db_name', 'lower');`, `DEFINE('DB_NAME', 'upper');`, `\define('DB_USER', 'wp');`,
				`$obj->define('DB_PASSWORD', 'method');`, `Foo::define('DB_PASSWORD', 'static');`,
				`define('DB_PASSWORD', 'secret', true);`, `define('DB_HOST', 'localhost');`),
			want: Config{DBName: "upper", DBUser: "wp", DBPassword: "secret", TablePrefix: "wp_"},
		},
		{
			name: "table prefix in double quotes, last assignment wins, comparisons ignored",
			src: php(append(dbDefines("localhost"),
				`$table_prefix = 'first_';`, `$table_prefix  =  "blog2_" ;`,
				`if ( $table_prefix == 'x' ) { $a = [ $table_prefix => 1 ]; }`)...),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "blog2_"},
		},
		{
			name: "empty table prefix",
			src:  php(append(dbDefines("localhost"), `$table_prefix = '';`)...),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: ""},
		},
		{
			name: "32-character table prefix",
			src:  php(append(dbDefines("localhost"), `$table_prefix = 'abcdefghijklmnopqrstuvwxyz_01234';`)...),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "abcdefghijklmnopqrstuvwxyz_01234"},
		},
		{
			name: "non-literal values of other constants do not matter",
			src: php(append(dbDefines("localhost"),
				`define('WP_HOME', 'https://' . $_SERVER['HTTP_HOST']);`, `define('WP_DEBUG', getenv('WP_DEBUG') === '1');`)...),
			want: Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", TablePrefix: "wp_"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.src)
			require.NoError(t, err)
			assert.Equal(t, tt.want.DBName, got.DBName, "DBName")
			assert.Equal(t, tt.want.DBUser, got.DBUser, "DBUser")
			assert.Equal(t, tt.want.DBPassword, got.DBPassword, "DBPassword")
			assert.Equal(t, tt.want.TablePrefix, got.TablePrefix, "TablePrefix")
		})
	}
}

func TestParseErrors(t *testing.T) {
	without := func(constant string) []byte {
		var lines []string
		for _, l := range dbDefines("localhost") {
			if !strings.Contains(l, "'"+constant+"'") {
				lines = append(lines, l)
			}
		}
		return php(lines...)
	}
	with := func(extra ...string) []byte {
		return php(append(extra, dbDefines("localhost")...)...)
	}
	tests := []struct {
		name    string
		src     []byte
		is      error  // wrapped sentinel, if any
		message string // substring of the error text
	}{
		{"missing DB_NAME", without("DB_NAME"), ErrNotDefined, "wpconfig: DB_NAME is not defined"},
		{"missing DB_USER", without("DB_USER"), ErrNotDefined, "wpconfig: DB_USER is not defined"},
		{"missing DB_HOST", without("DB_HOST"), ErrNotDefined, "wpconfig: DB_HOST is not defined"},
		{"empty file", nil, ErrNotDefined, "DB_NAME is not defined"},
		{"no PHP open tag", []byte(strings.Join(dbDefines("localhost"), "\n")), ErrNotDefined, "DB_NAME is not defined"},
		{"only commented out", []byte("<?php\n/*\n" + strings.Join(dbDefines("localhost"), "\n") + "\n*/\n"), ErrNotDefined, "DB_NAME is not defined"},
		{"lower-case constant name", []byte(strings.Replace(string(php(dbDefines("localhost")...)), "DB_USER", "db_user", 1)), ErrNotDefined, "DB_USER is not defined"},
		{"interpolation", with(`define("DB_PASSWORD", "pa$word");`), ErrUnsupported, `wpconfig: line 2: DB_PASSWORD is set by an expression the reader does not evaluate (not shown: it makes up the password): a double-quoted string interpolates variables`},
		{"brace interpolation", with(`define("DB_PASSWORD", "x{$cfg["pw"]}y");`), ErrUnsupported, "interpolates variables"},
		{"empty value", with(`define('DB_NAME', );`), ErrUnsupported, "line 2: DB_NAME is set by an empty value"},
		{"prefix with a dash", with(`$table_prefix = 'wp-';`), nil, `wpconfig: line 2: invalid $table_prefix "wp-": use at most 32 letters, digits and underscores`},
		{"prefix with a space", with(`$table_prefix = 'wp ';`), nil, `invalid $table_prefix "wp "`},
		{"prefix with SQL", with("$table_prefix = 'wp_`; DROP TABLE x; --';"), nil, "invalid $table_prefix"},
		{"prefix too long", with(`$table_prefix = 'abcdefghijklmnopqrstuvwxyz_012345';`), nil, "invalid $table_prefix"},
		{"unterminated string", php(`define('DB_NAME', 'wordpress);`), nil, "wpconfig: line 2: unterminated single-quoted string"},
		{"unterminated comment", php(`/* define('DB_NAME', 'wordpress');`), nil, "wpconfig: line 2: unterminated /* comment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			require.Error(t, err, "Parse succeeded, want an error")
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.ErrorContains(t, err, tt.message)
		})
	}
}

func TestParseFileErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()

	missing := filepath.Join(dir, "missing", "wp-config.php")
	_, err := ParseFile(missing)
	assert.ErrorContains(t, err, missing, "ParseFile(missing) must name the path")
	assert.ErrorIs(t, err, os.ErrNotExist, "ParseFile(missing)")

	bad := filepath.Join(dir, "wp-config.php")
	require.NoError(t, os.WriteFile(bad, php(`define('DB_NAME', 'wordpress');`), 0o600))
	_, err = ParseFile(bad)
	assert.EqualError(t, err, "wpconfig: "+bad+": DB_USER is not defined", "ParseFile(bad)")
	assert.ErrorIs(t, err, ErrNotDefined, "ParseFile(bad)")
}

func TestLexDoesNotPanicOnTruncatedInput(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "wp-config-production.php"))
	require.NoError(t, err)
	full = append(full, []byte("$s = \"\\u{1F600} \\x4 \\400 {$a['}']} ${b}\"; $h = <<<\"X\"\nx\nX;\n")...)
	for i := range full {
		_, _ = Parse(full[:i]) // must not panic; errors are expected
	}
}
