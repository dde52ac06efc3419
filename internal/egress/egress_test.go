package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":            "loopback",
		"127.8.9.10":           "loopback",
		"::1":                  "loopback",
		"::ffff:127.0.0.1":     "loopback",
		"0.0.0.0":              "unspecified",
		"::":                   "unspecified",
		"0.1.2.3":              "this-network",
		"169.254.169.254":      "link-local",
		"fe80::1":              "link-local",
		"fe80::1%eth0":         "link-local",
		"10.1.2.3":             "private",
		"172.16.0.1":           "private",
		"172.31.255.255":       "private",
		"192.168.1.1":          "private",
		"::ffff:192.168.1.1":   "private",
		"fc00::1":              "unique-local",
		"fd00:ec2::254":        "unique-local",
		"100.64.0.1":           "shared (carrier-grade NAT)",
		"100.100.100.200":      "shared (carrier-grade NAT)",
		"224.0.0.1":            "multicast",
		"ff02::1":              "multicast",
		"ff05::1":              "multicast",
		"255.255.255.255":      "broadcast",
		"240.0.0.1":            "reserved",
		"198.18.0.1":           "benchmarking",
		"192.0.0.8":            "IETF protocol assignment",
		"fec0::1":              "site-local",
		"64:ff9b::7f00:1":      "loopback (embedded in IPv6)",
		"64:ff9b::a9fe:a9fe":   "link-local (embedded in IPv6)",
		"2002:c0a8:0101::1":    "private (embedded in IPv6)",
		"::127.0.0.1":          "loopback (embedded in IPv6)",
		"64:ff9b:1::1":         "local-use NAT64",
		"93.184.216.34":        "",
		"8.8.8.8":              "",
		"172.32.0.1":           "",
		"100.128.0.1":          "",
		"2606:4700:4700::1111": "",
		"64:ff9b::808:808":     "",
		"2002:0808:0808::1":    "",
		"198.51.100.7":         "",
		"::ffff:93.184.216.34": "",
		"2001:4860:4860::8888": "",
	} {
		assert.Equal(t, want, Classify(netip.MustParseAddr(addr)), addr)
	}
	assert.Equal(t, "invalid", Classify(netip.Addr{}))
}

func TestNewPolicyEntries(t *testing.T) {
	p, err := NewPolicy([]string{" 127.0.0.1 ", "10.0.0.0/8", "[::1]", "::ffff:192.168.0.0/112", "Hooks.Internal.", "localhost", ""})
	require.NoError(t, err)
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": false, "10.200.0.1": true, "::1": true, "::ffff:10.0.0.1": true,
		"192.168.3.4": true, "192.169.0.1": false, "169.254.169.254": false,
	} {
		assert.Equal(t, want, p.allowed(netip.MustParseAddr(addr)), addr)
	}
	assert.Equal(t, map[string]bool{"hooks.internal": true, "localhost": true}, p.hosts)
	for _, bad := range []string{"http://localhost", "localhost:8080", "*.example.com", "10.0.0.0/33", "a b", "-x.example"} {
		_, err := NewPolicy([]string{bad})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "is not an IP address, a CIDR prefix or a host name", bad)
	}
	var none *Policy
	assert.False(t, none.allowed(netip.MustParseAddr("127.0.0.1")), "a nil policy allows nothing extra")
}

// server is a test endpoint that counts the requests it gets.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func post(c *http.Client, u string) (*http.Response, error) {
	resp, err := c.Post(u, "application/json", strings.NewReader(`{"event":"job.buried"}`))
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// TestClientRefusesInternalAddresses: by default the client reaches none of
// the loopback, unspecified, link-local, metadata or IPv4-mapped loopback
// addresses, by address or by a name resolving to one; the allow-list
// opens exactly what it names.
func TestClientRefusesInternalAddresses(t *testing.T) {
	srv, hits := server(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	at := func(host string) string { return "http://" + net.JoinHostPort(host, itoa(port)) + "/hook" }
	c := NewClient(nil, 5*time.Second)
	for _, u := range []string{srv.URL, at("localhost"), at("0.0.0.0"), at("::ffff:127.0.0.1"), at("169.254.169.254"),
		"http://metadata.google.internal/computeMetadata/v1/", "http://METADATA.google.internal./x"} {
		_, err := post(c, u)
		require.Error(t, err, u)
		assert.ErrorIs(t, err, ErrDenied, u)
		var de *DeniedError
		require.True(t, errors.As(err, &de), u)
	}
	assert.Zero(t, hits.Load(), "no request reached the loopback server")
	_, err := post(c, at("localhost"))
	assert.Contains(t, err.Error(), "localhost resolves to 127.0.0.1, a loopback address: refused")
	_, err = post(c, "http://metadata.google.internal/x")
	assert.Contains(t, err.Error(), "metadata.google.internal is a cloud metadata service: refused")

	byAddr, err := NewPolicy([]string{"127.0.0.1"})
	require.NoError(t, err)
	c = NewClient(byAddr, 5*time.Second)
	for _, u := range []string{srv.URL, at("localhost")} {
		resp, err := post(c, u)
		require.NoError(t, err, u)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.EqualValues(t, 2, hits.Load(), "an allowed address is reached, by any name")
	_, err = post(c, at("169.254.169.254"))
	assert.ErrorIs(t, err, ErrDenied, "other addresses stay refused")

	byName, err := NewPolicy([]string{"localhost"})
	require.NoError(t, err)
	c = NewClient(byName, 5*time.Second)
	_, err = post(c, at("localhost"))
	require.NoError(t, err, "an allowed name is reached whatever it resolves to")
	_, err = post(c, srv.URL)
	assert.ErrorIs(t, err, ErrDenied, "the name does not allow the address itself")
	assert.EqualValues(t, 3, hits.Load())
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestClientFollowsNoRedirect: a 307 from the receiver is the response;
// the request is not sent on (not even to an allowed address), and no
// request carries a Referer.
func TestClientFollowsNoRedirect(t *testing.T) {
	target, targetHits := server(t, nil)
	var referers atomic.Int64
	redirector, hits := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Referer") != "" {
			referers.Add(1)
		}
		http.Redirect(w, r, target.URL+"/stolen", http.StatusTemporaryRedirect)
	})
	p, err := NewPolicy([]string{"127.0.0.1"})
	require.NoError(t, err)
	resp, err := post(NewClient(p, 5*time.Second), redirector.URL+"/hook?token=s3cret")
	require.NoError(t, err)
	assert.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	assert.EqualValues(t, 1, hits.Load())
	assert.Zero(t, targetHits.Load(), "the redirect is not followed")
	assert.Zero(t, referers.Load())
}

// fakeDNS is a resolver that answers every A query with the next address
// of answers (the last one once they run out) and every other query with
// no records. It speaks DNS over an in-memory stream.
func fakeDNS(t *testing.T, answers ...netip.Addr) (*net.Resolver, *atomic.Int64) {
	var queries atomic.Int64
	serve := func(c net.Conn) {
		defer c.Close()
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		end := 12 // the question: labels, then type and class
		for end < len(q) && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5
		qtype := binary.BigEndian.Uint16(q[end-4:])
		resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:end]...)
		if qtype == 1 { // A
			i := int(queries.Add(1)) - 1
			a := answers[min(i, len(answers)-1)].As4()
			resp[7] = 1
			resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
			resp = append(resp, a[:]...)
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		_, _ = c.Write(append(out, resp...))
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, srv := net.Pipe()
		go serve(srv)
		return client, nil
	}}
	return r, &queries
}

// TestDNSRebindingIsRefusedAtDialTime: the address is checked when the
// connection is made, on the address dialled. The name first resolves to
// a public address (a check that resolved before dialling would pass),
// then to 127.0.0.1, where the test server listens: the first request goes
// to the public address (and times out), the second is refused, and the
// server gets nothing.
func TestDNSRebindingIsRefusedAtDialTime(t *testing.T) {
	srv, hits := server(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resolver, queries := fakeDNS(t, netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("127.0.0.1"))
	p := &Policy{resolver: resolver}
	c := NewClient(p, 300*time.Millisecond)
	u := "http://rebind.example:" + itoa(port) + "/hook"

	_, err := post(c, u)
	require.Error(t, err, "the public address does not answer")
	assert.NotErrorIs(t, err, ErrDenied, "the public address itself is allowed")
	_, err = post(c, u)
	require.ErrorIs(t, err, ErrDenied)
	assert.Contains(t, err.Error(), "rebind.example resolves to 127.0.0.1, a loopback address: refused")
	assert.EqualValues(t, 2, queries.Load(), "one resolution per connection")
	assert.Zero(t, hits.Load(), "nothing reached the loopback server")

	// A resolution checked apart from the dial would have let this through:
	// the check and the connection use one resolution.
	addrs, err := resolver.LookupNetIP(context.Background(), "ip4", "rebind.example")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, addrs)
}

func TestRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.example.com/services/T0":             "https://hooks.example.com/services/T0",
		"http://user:pass@hooks.example.com:8080/q":         "http://***@hooks.example.com:8080/q",
		"http://token@hooks.example.com/q":                  "http://***@hooks.example.com/q",
		"https://hooks.example.com/q?token=s3cret&x=1#frag": "https://hooks.example.com/q?***",
		"https://hooks.example.com/q?":                      "https://hooks.example.com/q?***",
		"http://[::1]:9/a%20b":                              "http://[::1]:9/a%20b",
		"mailto:someone@example.com":                        "mailto:***",
		"http://user:p%zzss@host/":                          "(a URL that does not parse)",
		"http://user:pa ss@host:x/":                         "(a URL that does not parse)",
		"/relative?token=s3cret":                            "/relative?***",
	} {
		assert.Equal(t, want, Redact(raw), raw)
	}
	err := RedactError(&url.Error{Op: "Post", URL: "http://user:***@h.example/p?token=s3cret", Err: errors.New("boom")})
	assert.Equal(t, `Post "http://***@h.example/p?***": boom`, err.Error())
	plain := errors.New("other")
	assert.Same(t, plain, RedactError(plain))
}
