// Package egress guards the outbound HTTP requests whose URLs users
// supply (webhook POSTs): by default they may not reach the machine
// itself, its private networks or a cloud metadata service, and they never
// follow redirects. The address is checked when the connection is made,
// on the address actually dialled, so a host name that resolved to a
// public address when it was registered and resolves to 127.0.0.1 now
// (DNS rebinding) is refused. An explicit allow-list opts in to private
// receivers.
//
// It also renders such URLs for logs and errors without their
// credentials or query strings (Redact).
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrDenied is wrapped by every refusal of an address.
var ErrDenied = errors.New("egress: address not allowed")

// DeniedError is a refused connection: the address (or host name) and why.
type DeniedError struct {
	Host   string     // the URL's host, when known
	Addr   netip.Addr // the dialled address; invalid when the name itself was refused
	Reason string     // "loopback", "private", ...
}

func (e *DeniedError) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("%s is %s: refused (allow it explicitly to send there)", e.Host, e.Reason)
	}
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("%s resolves to %s, a %s address: refused (allow it explicitly to send there)", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s is a %s address: refused (allow it explicitly to send there)", e.Addr, e.Reason)
}

// Unwrap makes a DeniedError match ErrDenied.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// metadataHosts are the names of cloud metadata services. Their addresses
// are link-local or unique-local, and refused as such; the names are
// refused before they are even resolved.
var metadataHosts = map[string]bool{
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"metadata":                   true,
	"instance-data":              true,
	"instance-data.ec2.internal": true,
}

// reserved are the ranges refused beyond what netip classifies
// (loopback, private, link-local, multicast, unspecified).
var reserved = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
}

// embedding are the IPv6 ranges that carry an IPv4 address, which is
// checked in turn: NAT64 (last 32 bits), 6to4 (bits 16 to 48) and the
// deprecated IPv4-compatible form (last 32 bits).
var embedding = []struct {
	prefix netip.Prefix
	at     int // byte offset of the IPv4 address
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},
	{netip.MustParsePrefix("2002::/16"), 2},
	{netip.MustParsePrefix("::/96"), 12},
}

// Classify returns why an address is refused by default ("loopback",
// "private", ...), or "" when it is public. IPv4-mapped and
// IPv4-embedding IPv6 forms are judged by their IPv4 address.
func Classify(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsPrivate() && a.Is6():
		return "unique-local"
	case a.IsPrivate():
		return "private"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, r := range reserved {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	if a.Is6() {
		b := a.As16()
		for _, e := range embedding {
			if e.prefix.Contains(a) {
				if r := Classify(netip.AddrFrom4([4]byte(b[e.at : e.at+4]))); r != "" {
					return r + " (embedded in IPv6)"
				}
			}
		}
	}
	return ""
}

// Policy decides which addresses outbound requests may reach: every
// public address, and the refused ones an allow-list names. A nil
// *Policy refuses every address Classify refuses. It is safe for
// concurrent use.
type Policy struct {
	hosts map[string]bool // host names allowed whatever they resolve to
	nets  []netip.Prefix  // refused addresses allowed all the same
	// resolver resolves host names (nil: net.DefaultResolver); tests set
	// one.
	resolver *net.Resolver
}

// NewPolicy returns the policy that also allows what allow names. Each
// entry is an IP address ("127.0.0.1", "::1"), a CIDR prefix
// ("10.0.0.0/8") or a host name ("hooks.internal", "localhost"): a name
// is allowed whatever it resolves to, an address or prefix whatever name
// led to it. Empty entries are ignored; anything else (a URL, a port, a
// wildcard) is an error.
func NewPolicy(allow []string) (*Policy, error) {
	p := &Policy{hosts: map[string]bool{}}
	for _, raw := range allow {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(e); err == nil {
			if pfx.Addr().Is4In6() {
				pfx = netip.PrefixFrom(pfx.Addr().Unmap(), max(pfx.Bits()-96, 0))
			}
			p.nets = append(p.nets, pfx.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")); err == nil {
			a = a.Unmap().WithZone("")
			p.nets = append(p.nets, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		name := normalHost(e)
		if !validHostName(name) {
			return nil, fmt.Errorf("egress: allow-list entry %q is not an IP address, a CIDR prefix or a host name", e)
		}
		p.hosts[name] = true
	}
	return p, nil
}

// normalHost lower-cases a host name and drops a trailing dot.
func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// validHostName reports whether s is made of DNS labels.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// allowed reports whether the allow-list names address a.
func (p *Policy) allowed(a netip.Addr) bool {
	if p == nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, n := range p.nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// DialContext dials addr ("host:port") as net.Dialer does, refusing a
// metadata service's name and, after resolution, every address Classify
// refuses that the allow-list does not name, unless the allow-list names
// the host itself. The check runs on each address as it is dialled.
// Refusals wrap ErrDenied.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	name := normalHost(host)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if p != nil {
		d.Resolver = p.resolver
		if p.hosts[name] {
			return d.DialContext(ctx, network, addr)
		}
	}
	if metadataHosts[name] {
		return nil, &DeniedError{Host: host, Reason: "a cloud metadata service"}
	}
	d.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &DeniedError{Host: host, Reason: "unparsable (" + address + ")"}
		}
		if r := Classify(ap.Addr()); r != "" && !p.allowed(ap.Addr()) {
			return &DeniedError{Host: host, Addr: ap.Addr().Unmap().WithZone(""), Reason: r}
		}
		return nil
	}
	return d.DialContext(ctx, network, addr)
}

// errRedirect stops the client at a redirect, which it returns as the
// response.
var errRedirect = http.ErrUseLastResponse

// NewClient returns an HTTP client whose connections go through
// p.DialContext, never through a proxy from the environment (the guard
// must see the receiver's own address), and which does not follow
// redirects: a 3xx is returned as the response, so a receiver cannot
// send the request (and its body) on to an address the guard would
// refuse. timeout bounds each request (0: no bound).
func NewClient(p *Policy, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           p.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

// Redact renders a URL for a log line or an error: scheme, host and path,
// with "***" in place of any user info and query string, and no fragment.
// A URL that does not parse is not shown at all.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme)
		b.WriteString(":")
	}
	if u.Opaque != "" {
		b.WriteString("***")
		return b.String()
	}
	if u.Host != "" || u.User != nil {
		b.WriteString("//")
		if u.User != nil {
			b.WriteString("***@")
		}
		b.WriteString(u.Host)
	}
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?***")
	}
	return b.String()
}

// RedactError returns a copy of a *url.Error (what an http.Client
// returns) with its URL redacted; other errors are returned as they are.
func RedactError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: Redact(ue.URL), Err: ue.Err}
	}
	return err
}
