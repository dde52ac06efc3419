package testdb

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// StatementProxy is a loopback TCP proxy in front of a MySQL/MariaDB or
// PostgreSQL server that counts the statements its clients send, on every
// connection through it: MySQL's COM_QUERY and COM_STMT_EXECUTE commands,
// PostgreSQL's simple Query and extended-protocol Execute messages.
// Transaction statements count (BEGIN and COMMIT are statements too).
// Tests point a process's DSN at Addr to count what it alone costs the
// server, whatever connections it opens.
type StatementProxy struct {
	// Addr is the proxy's host:port.
	Addr string

	ln       net.Listener
	target   string
	postgres bool
	n        atomic.Int64
	mu       sync.Mutex
	texts    []string // the statement texts seen, when keeping them
	keep     bool
	conns    []net.Conn
	drop     *dropRule // the MySQL reply to drop, when set
}

// dropRule is DropReply's and CutBefore's: the first statement matching
// match loses its reply, and fired receives whether that reply was an OK
// packet. With hold, the statement goes to the server only once hold is
// closed, after the client's connection was closed.
type dropRule struct {
	match func(text string) bool
	used  atomic.Bool
	fired chan bool
	hold  chan struct{}
}

// NewStatementProxy starts a proxy to target (host:port), speaking
// PostgreSQL's protocol when postgres is set and MySQL's otherwise; the
// test's cleanup stops it.
func NewStatementProxy(t testing.TB, target string, postgres bool) *StatementProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testdb: statement proxy: %v", err)
	}
	p := &StatementProxy{Addr: ln.Addr().String(), ln: ln, target: target, postgres: postgres}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Count is the number of statements sent through the proxy so far.
func (p *StatementProxy) Count() int64 { return p.n.Load() }

// KeepTexts makes the proxy keep the text of each statement it counts
// (the start of it; "" for a MySQL prepared statement), for a failing test
// to show what was sent.
func (p *StatementProxy) KeepTexts() {
	p.mu.Lock()
	p.keep = true
	p.mu.Unlock()
}

// Texts returns the statement texts kept since KeepTexts, and forgets
// them.
func (p *StatementProxy) Texts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.texts
	p.texts = nil
	return out
}

// keepText keeps the start of a statement's text after KeepTexts.
func (p *StatementProxy) keepText(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keep {
		p.texts = append(p.texts, strings.Join(strings.Fields(text[:min(len(text), 160)]), " "))
	}
}

// DropReply makes the proxy (MySQL only) forward the first statement
// whose text (COM_QUERY) match accepts and then, when the server's reply
// to it arrives, drop that reply and close the connection: the server ran
// the statement (and, in autocommit, committed it) while the client sees
// its connection lost. The channel receives, once the reply was dropped,
// whether it was an OK packet. It applies to connections opened after
// the call.
func (p *StatementProxy) DropReply(match func(text string) bool) <-chan bool {
	r := &dropRule{match: match, fired: make(chan bool, 1)}
	p.mu.Lock()
	p.drop = r
	p.mu.Unlock()
	return r.fired
}

// CutBefore is DropReply for a statement that is late: the proxy closes
// the client's connection as soon as the statement arrives, before the
// server has it, and sends it on to the server only when release is
// called (the client, having seen its connection lost, has moved on).
// The test's cleanup releases it.
func (p *StatementProxy) CutBefore(t testing.TB, match func(text string) bool) (release func(), replied <-chan bool) {
	r := &dropRule{match: match, fired: make(chan bool, 1), hold: make(chan struct{})}
	p.mu.Lock()
	p.drop = r
	p.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(r.hold) }) }
	t.Cleanup(release)
	return release, r.fired
}

// dropState is one connection's part of a dropRule: armed is set, before
// the matching statement goes to the server, for the server's next
// packet; replied is closed once mysqlServer has returned.
type dropState struct {
	rule    *dropRule
	armed   atomic.Bool
	replied chan struct{}
}

// mysqlServer forwards the server's packets to the client until the
// packet after an armed statement, which it drops, closing both ends.
func mysqlServer(c, s net.Conn, d *dropState) {
	defer close(d.replied)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(s, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		body := make([]byte, n)
		if _, err := io.ReadFull(s, body); err != nil {
			return
		}
		if d.armed.Load() {
			_ = c.Close()
			_ = s.Close()
			d.rule.fired <- n > 0 && body[0] == 0x00
			return
		}
		if _, err := c.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

func (p *StatementProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *StatementProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		var d *dropState
		if p.drop != nil && !p.postgres {
			d = &dropState{rule: p.drop, replied: make(chan struct{})}
		}
		p.mu.Unlock()
		go func() {
			if d != nil {
				mysqlServer(c, s, d)
			} else {
				_, _ = io.Copy(c, s)
			}
			_ = c.Close()
		}()
		go func() {
			if p.postgres {
				p.pgClient(c, s)
			} else {
				p.mysqlClient(c, s, d)
			}
			_ = s.Close()
		}()
	}
}

// mysqlClient forwards the client's packets to the server, counting the
// commands that run a statement. Each packet is a 3-byte length, a
// sequence number and the payload; a command is a packet with sequence 0.
// With d, the first statement d's rule matches arms d before it goes on.
func (p *StatementProxy) mysqlClient(c, s net.Conn, d *dropState) {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if hdr[3] == 0 && n > 0 && (body[0] == 0x03 || body[0] == 0x17) { // COM_QUERY, COM_STMT_EXECUTE
			p.n.Add(1)
			if body[0] == 0x03 {
				p.keepText(string(body[1:]))
				if d != nil && d.rule.match(string(body[1:])) && d.rule.used.CompareAndSwap(false, true) {
					d.armed.Store(true)
					if d.rule.hold != nil {
						_ = c.Close()
						<-d.rule.hold
						if _, err := s.Write(append(hdr[:], body...)); err == nil {
							<-d.replied
						}
						return
					}
				}
			}
		}
		if _, err := s.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

// pgClient forwards the client's messages to the server, counting Query
// ('Q') and Execute ('E') messages. The first messages (SSLRequest,
// StartupMessage) have no type byte.
func (p *StatementProxy) pgClient(c, s net.Conn) {
	started := false
	named := map[string]string{} // prepared statement texts by name
	bound := ""                  // the text of the statement last bound
	cstr := func(b []byte) (string, []byte) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return string(b), nil
		}
		return string(b[:i]), b[i+1:]
	}
	for {
		var typ [1]byte
		if started {
			if _, err := io.ReadFull(c, typ[:]); err != nil {
				return
			}
		}
		var l [4]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(l[:])) - 4
		if n < 0 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		var out []byte
		if started {
			out = append(out, typ[0])
			switch typ[0] {
			case 'P':
				name, rest := cstr(body)
				named[name], _ = cstr(rest)
			case 'B':
				_, rest := cstr(body)
				stmt, _ := cstr(rest)
				bound = named[stmt]
			case 'Q', 'E':
				p.n.Add(1)
				text := bound
				if typ[0] == 'Q' {
					text, _ = cstr(body)
				}
				p.keepText(text)
			}
		} else if n >= 4 && binary.BigEndian.Uint32(body[:4]) == 196608 { // the StartupMessage; an SSLRequest keeps started false
			started = true
		}
		out = append(append(out, l[:]...), body...)
		if _, err := s.Write(out); err != nil {
			return
		}
	}
}
