package wpconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDSN(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "tcp",
			cfg:  Config{DBName: "wordpress", DBUser: "wp", DBPassword: "secret", Host: "db", Port: 3307, TablePrefix: "wp_"},
			want: "wp:secret@tcp(db:3307)/wordpress?prefix=wp_",
		},
		{
			name: "no password",
			cfg:  Config{DBName: "wordpress", DBUser: "root", Host: "127.0.0.1", Port: 3306, TablePrefix: "wp_"},
			want: "root@tcp(127.0.0.1:3306)/wordpress?prefix=wp_",
		},
		{
			name: "ipv6",
			cfg:  Config{DBName: "wordpress", DBUser: "wp", DBPassword: "pw", Host: "fe80::1", Port: 3306, TablePrefix: "wp_"},
			want: "wp:pw@tcp([fe80::1]:3306)/wordpress?prefix=wp_",
		},
		{
			name: "socket",
			cfg:  Config{DBName: "wordpress", DBUser: "wp", DBPassword: "pw", Socket: "/run/mysqld/mysqld.sock", Port: 3306, TablePrefix: "blog_"},
			want: "wp:pw@unix(/run/mysqld/mysqld.sock)/wordpress?prefix=blog_",
		},
		{
			name: "zero host and port",
			cfg:  Config{DBName: "wordpress", DBUser: "wp"},
			want: "wp@tcp(localhost:3306)/wordpress?prefix=",
		},
		{
			name: "database name is path-escaped",
			cfg:  Config{DBName: "my/db?x", DBUser: "wp", Host: "db", Port: 3306, TablePrefix: "wp_"},
			want: "wp@tcp(db:3306)/my%2Fdb%3Fx?prefix=wp_",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.cfg.DSN())
		})
	}
}

// TestDSNRoundTrip proves that the values DSN writes come back unchanged from
// go-sql-driver's own parser, including passwords with '@', ':' and '/'.
func TestDSNRoundTrip(t *testing.T) {
	var printable strings.Builder
	for c := byte(' '); c <= '~'; c++ {
		printable.WriteByte(c)
	}
	passwords := []string{
		"secret",
		"p@ss:w/rd",
		"@:/",
		"a/b/c@d@e:f",
		"q?x=1&prefix=evil",
		"tcp(evil:1)/other",
		"ümlaut €",
		printable.String(),
	}
	users := []string{"wp", "us@er", "wp-user.name"}
	addrs := []struct{ host, socket string }{
		{host: "db.internal"},
		{host: "::1"},
		{socket: "/run/mysqld/mysqld.sock"},
	}
	names := []string{"wordpress", "wp-site_1", "my/db?x%y", "db name"}

	for _, password := range passwords {
		for _, user := range users {
			for _, addr := range addrs {
				for _, name := range names {
					cfg := Config{DBName: name, DBUser: user, DBPassword: password,
						Host: addr.host, Port: 3307, Socket: addr.socket, TablePrefix: "wp_2_"}
					t.Run(fmt.Sprintf("%s/%s/%s/%s", user, password, addr.host+addr.socket, name), func(t *testing.T) {
						dsn := cfg.DSN()
						got, err := mysql.ParseDSN(dsn)
						require.NoError(t, err, "ParseDSN(%q)", dsn)
						wantNet, wantAddr := "tcp", fmt.Sprintf("[%s]:3307", addr.host)
						if !strings.Contains(addr.host, ":") {
							wantAddr = addr.host + ":3307"
						}
						if addr.socket != "" {
							wantNet, wantAddr = "unix", addr.socket
						}
						assert.Equal(t, user, got.User, "user from ParseDSN(%q)", dsn)
						assert.Equal(t, password, got.Passwd, "password from ParseDSN(%q)", dsn)
						assert.Equal(t, wantNet, got.Net, "network from ParseDSN(%q)", dsn)
						assert.Equal(t, wantAddr, got.Addr, "address from ParseDSN(%q)", dsn)
						assert.Equal(t, name, got.DBName, "database from ParseDSN(%q)", dsn)
						assert.Equal(t, "wp_2_", got.Params["prefix"], "prefix from ParseDSN(%q)", dsn)
					})
				}
			}
		}
	}
}

// TestDSNPrefixIsNotADriverOption shows what a store does with the DSN: the
// prefix parameter must be taken out before the driver connects, or
// go-sql-driver would send it to the server as a session variable.
func TestDSNPrefixIsNotADriverOption(t *testing.T) {
	cfg := Config{DBName: "wordpress", DBUser: "wp", DBPassword: "p@ss/word", Host: "db", Port: 3306, TablePrefix: "wp_"}
	mc, err := mysql.ParseDSN(cfg.DSN())
	require.NoError(t, err)
	prefix := mc.Params["prefix"]
	delete(mc.Params, "prefix")
	assert.Equal(t, "wp_", prefix, "prefix")
	assert.Empty(t, mc.Params, "remaining params")
	assert.Equal(t, "wp:p@ss/word@tcp(db:3306)/wordpress", mc.FormatDSN())
}
