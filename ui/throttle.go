package ui

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Login throttling. A client (an IPv4 address, or an IPv6 /64) has
// freeFailures failed credential checks; each failure after those locks
// it out for twice as long as the one before, from one second up to
// maxLockout. A lockout refuses that client's credential checks with 429,
// right or wrong, and ends on its own; a success clears the client's
// count. Lockouts are per client, so an attacker locks out only the
// addresses it uses, never an operator elsewhere.
//
// Failures across all clients also drain a global allowance of
// globalFailures a minute. While it is empty every credential check is
// slowed by globalDelay, at most maxSlowed at a time (more get 429 for a
// second): a guess costs an attacker with many addresses time, and an
// operator still gets in, a second later. A valid session cookie is never
// throttled.
const (
	freeFailures   = 5
	maxLockout     = 15 * time.Minute
	globalFailures = 30
	globalDelay    = time.Second
	maxSlowed      = 8
	// maxClients bounds the clients the throttle remembers; past it, the
	// ones whose lockout is long over are dropped first.
	maxClients = 10000
)

// clientFailures is what the throttle remembers of one client.
type clientFailures struct {
	failures int
	until    time.Time // locked out until
	last     time.Time // the last failure
}

// throttle counts failed credential checks per client and overall.
type throttle struct {
	now   func() time.Time
	delay time.Duration // globalDelay; tests shorten it

	mu      sync.Mutex
	clients map[string]*clientFailures
	tokens  float64 // the global allowance left
	refill  time.Time
	slowed  chan struct{}
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, delay: globalDelay, clients: map[string]*clientFailures{}, tokens: globalFailures,
		refill: now(), slowed: make(chan struct{}, maxSlowed)}
}

// lockedOut returns how long the client is still locked out (0: not).
func (t *throttle) lockedOut(client string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.clients[client]; c != nil {
		if d := c.until.Sub(t.now()); d > 0 {
			return d
		}
	}
	return 0
}

// underAttack reports whether the global allowance of failures is spent.
func (t *throttle) underAttack() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refillLocked()
	return t.tokens < 1
}

func (t *throttle) refillLocked() {
	now := t.now()
	if el := now.Sub(t.refill); el > 0 {
		t.tokens = min(globalFailures, t.tokens+el.Minutes()*globalFailures)
		t.refill = now
	}
}

// slow waits globalDelay before a credential check while the throttle is
// under attack. It returns false when too many checks are waiting already
// or the request ended: the caller answers 429.
func (t *throttle) slow(ctx context.Context) bool {
	if !t.underAttack() {
		return true
	}
	select {
	case t.slowed <- struct{}{}:
	default:
		return false
	}
	defer func() { <-t.slowed }()
	timer := time.NewTimer(t.delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fail records a failed check by client and returns its failures in a
// row and the lockout it now has (0: none).
func (t *throttle) fail(client string) (int, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.refillLocked()
	t.tokens = max(t.tokens-1, 0)
	c := t.clients[client]
	if c != nil && now.Sub(c.until) > maxLockout && now.Sub(c.last) > maxLockout {
		c = nil // quiet for long enough: start over
	}
	if c == nil {
		if len(t.clients) >= maxClients {
			t.pruneLocked(now)
		}
		c = &clientFailures{}
		t.clients[client] = c
	}
	c.failures++
	c.last = now
	var lock time.Duration
	if n := c.failures - freeFailures; n > 0 {
		lock = maxLockout
		if n <= 20 {
			lock = min(time.Second<<(n-1), maxLockout)
		}
		c.until = now.Add(lock)
	}
	return c.failures, lock
}

// succeed forgets the client's failures.
func (t *throttle) succeed(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.clients, client)
}

// pruneLocked drops the clients whose lockout ended maxLockout ago or
// more; when none has, it drops any tenth of them, so the map stays
// bounded whatever the number of addresses.
func (t *throttle) pruneLocked(now time.Time) {
	for k, c := range t.clients {
		if now.Sub(c.until) > maxLockout && now.Sub(c.last) > maxLockout {
			delete(t.clients, k)
		}
	}
	for k := range t.clients {
		if len(t.clients) < maxClients*9/10 {
			break
		}
		delete(t.clients, k)
	}
}

// clientKey names the client of a request for throttling: its address,
// or for IPv6 its /64 (one host commonly holds a whole /64). The remote
// address is used unless it is one of Options.TrustedProxies; then the
// nearest address in X-Forwarded-For that is not a trusted proxy.
func (s *server) clientKey(r *http.Request) string {
	addr := remoteIP(r)
	if addr.IsValid() && s.trustedProxy(addr) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			addr = hop.Unmap()
			if !s.trustedProxy(addr) {
				break
			}
		}
	}
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func (s *server) trustedProxy(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// remoteIP is the IP address of the request's remote end (invalid when
// it is not an IP address, as on a Unix socket).
func remoteIP(r *http.Request) netip.Addr {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
