package postgres_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/store/postgres"
)

// FuzzParseDSNPassword builds DSNs around a password with a marker at
// each end and checks that a DSN that does not parse never shows either
// marker in its error (a password cut in two would still show one), and
// that one that parses gives the password back.
func FuzzParseDSNPassword(f *testing.F) {
	for _, s := range [][3]string{
		{"root", "secret", "127.0.0.1:5432"},
		{"root", "a%zzb", "127.0.0.1:99x"},
		{"root", "a://b", "[::1"},
		{"root", "a@b@c", "h:1"},
		{"app", "p?a/s&s=1", "db.local"},
		{"u", "x#y", "[fe80::1%25eth0]:5432"},
		{"u", "%41%", "h:0"},
		{"u:v", "w", "h"},
		{"root", "a,b", "h1:5432,h2:5433"},
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
		for _, tail := range []string{"/db", "/db?sslmode=disable", "/db?unknown=" + pass} {
			dsn := "postgres://" + user + ":" + pw + "@" + host + tail
			c, err := postgres.ParseDSN(dsn)
			if err != nil {
				msg := strings.ToLower(err.Error())
				if strings.Contains(msg, strings.ToLower(front)) || strings.Contains(msg, strings.ToLower(back)) {
					t.Fatalf("ParseDSN(%q) shows the password: %v", dsn, err)
				}
				continue
			}
			if strings.ContainsAny(user, ":@%") || strings.ContainsAny(host, "@/?#") || strings.Contains(tail, "@") {
				continue // the structure itself changed
			}
			want := pw
			if dec, err := url.PathUnescape(pw); err == nil {
				want = dec
			}
			if c.Password != want {
				t.Fatalf("ParseDSN(%q): password %q, want %q", dsn, c.Password, want)
			}
		}
	})
}
