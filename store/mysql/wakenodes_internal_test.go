package mysql

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUsableAddresses: the nodes a send reaches on connections of their
// own are the entries of wsrep_incoming_addresses but the server's own
// (wsrep_local_index) and those that name no host and port to connect to.
func TestUsableAddresses(t *testing.T) {
	assert.Equal(t, []string{"10.0.0.1:3306", "10.0.0.3:3307"},
		usableAddresses("10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3307", 1))
	assert.Equal(t, []string{"[fd00::2]:3306", "db3.example:3306"},
		usableAddresses("db1.example:3306, [fd00::2]:3306 ,db3.example:3306", 0), "names, IPv6 and spaces")
	assert.Empty(t, usableAddresses("AUTO,0.0.0.0:3306,[::]:3306,:3306,10.0.0.5,10.0.0.6:0,", 9), "nothing to connect to")
	assert.Empty(t, usableAddresses("", 0), "a server alone")
	assert.Equal(t, []string{"10.0.0.1:3306"}, usableAddresses("10.0.0.1:3306", -1), "an index out of the list leaves none out")
}

// TestUnnamedNodes: with a multi-host DSN, the nodes read from
// wsrep_incoming_addresses join the DSN's servers, less those that name
// one of them or an earlier entry by the same IP address and port; a
// server named both ways keeps the DSN's name.
func TestUnnamedNodes(t *testing.T) {
	ctx := context.Background()
	hosts := map[string][]string{
		"db1.example": {"10.0.0.1"},
		"db2.example": {"10.0.0.2", "fd00::2"},
		"DB4.example": {"10.0.0.4"},
	}
	lookup := func(_ context.Context, host string) ([]string, error) {
		if ips, ok := hosts[host]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	}
	named := []string{"db1.example:3306", "db2.example:3306"}
	assert.Equal(t, []string{"10.0.0.3:3306"},
		unnamedNodes(ctx, named, []string{"10.0.0.2:3306", "10.0.0.3:3306"}, lookup), "a node the DSN does not name")
	assert.Equal(t, []string{"10.0.0.1:3307", "10.0.0.3:3306"},
		unnamedNodes(ctx, named, []string{"10.0.0.1:3307", "[fd00::2]:3306", "10.0.0.3:3306", "10.0.0.3:3306"}, lookup),
		"another port, IPv6, an entry twice")
	assert.Equal(t, []string{"db3.example:3306"},
		unnamedNodes(ctx, []string{"10.0.0.1:3306", "10.0.0.2:3306"}, []string{"db2.example:3306", "db3.example:3306"}, lookup),
		"names in the status, addresses in the DSN; a name that does not resolve")
	assert.Empty(t, unnamedNodes(ctx, []string{"unresolved:3306", "10.0.0.4:3306"}, []string{"Unresolved:3306", "DB4.example:3306"}, lookup),
		"a name that does not resolve compares as it is, without case")
	assert.Equal(t, []string{"10.0.0.5:3306"},
		unnamedNodes(ctx, []string{"[::ffff:10.0.0.1]:3306", "10.0.0.2:3306"}, []string{"10.0.0.1:3306", "10.0.0.5:3306"}, lookup),
		"an IPv4-mapped address is the IPv4 one")
}
