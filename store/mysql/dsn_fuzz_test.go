package mysql_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/store/mysql"
)

// FuzzParseDSNPassword builds DSNs of both forms around a password with
// a marker at each end and checks that a DSN that does not parse never
// shows either marker in its error (a password cut in two would still
// show one), and that one that parses gives the password back.
func FuzzParseDSNPassword(f *testing.F) {
	for _, s := range [][3]string{
		{"root", "secret", "127.0.0.1:3306"},
		{"root", "a%zzb", "127.0.0.1:99x"},
		{"root", "a://b", "[::1"},
		{"root", "a@b@c", "h:1"},
		{"wp", "p?a/s&s=1", "db.local"},
		{"u", "x#y", "[fe80::1%25eth0]:3306"},
		{"u", "%41%", "h:0"},
		{"u:v", "w", "h"},
		{"root", "a/b", "tcp(127.0.0.1:3306)"},
		{"root", "a,b", "h1:3306,h2:3307"},
		{"root", "a@b", "[::1]:3306,,h2"},
		{"root", "a(b", "h1,h2:0"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	const front, back = "Zq9front", "Xk7back"
	f.Fuzz(func(t *testing.T, user, pass, host string) {
		for _, s := range []string{user, host} {
			ls := strings.ToLower(s)
			if strings.Contains(ls, "zq9") || strings.Contains(ls, "xk7") {
				return
			}
		}
		pw := front + pass + back
		plainUser := !strings.ContainsAny(user, ":@%")
		for i, dsn := range []string{
			"mysql://" + user + ":" + pw + "@" + host + "/db",
			user + ":" + pw + "@tcp(" + host + ")/db",
			user + ":" + pw + "@" + host, // any structure, or none
		} {
			c, err := mysql.ParseDSN(dsn)
			if err != nil {
				msg := strings.ToLower(err.Error())
				if strings.Contains(msg, strings.ToLower(front)) || strings.Contains(msg, strings.ToLower(back)) {
					t.Fatalf("ParseDSN(%q) shows the password: %v", dsn, err)
				}
				continue
			}
			if i == 2 || !plainUser || strings.ContainsAny(host, "@/") {
				continue // the structure itself changed
			}
			want := pw
			if strings.HasPrefix(dsn, "mysql://") {
				if dec, err := url.PathUnescape(pw); err == nil {
					want = dec
				}
			}
			if c.Driver.Passwd != want {
				t.Fatalf("ParseDSN(%q): password %q, want %q", dsn, c.Driver.Passwd, want)
			}
		}
	})
}
